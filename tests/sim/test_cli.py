"""`trainyard sim` end to end, as a user runs it: a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEADER = "job_id,submit_time,duration,num_gpus,team,user,queue,priority,name\n"
TRACE = HEADER + ("a,0,100,1,x,ann,default,0,a\n"
                  "b,0,50,1,y,bob,default,0,b\n"
                  "c,10,10,2,x,ann,default,0,c\n")
PNG = b"\x89PNG\r\n\x1a\n"


def sim(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trainyard.cli.main", "sim", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def test_a_replay_prints_the_table_and_writes_json_and_plots(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text(TRACE)
    done = sim("t.csv", "--gpus", "2", "--json", "out/report.json", "--plots", "plots",
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for name in ("fifo", "priority", "default", "srtf-oracle", "las", "mean JCT", "Jain"):
        assert name in done.stdout
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert list(report["policies"]) == ["fifo", "priority", "default", "srtf-oracle", "las"]
    fifo = report["policies"]["fifo"]
    for key in ("jobs", "mean_jct", "median_jct", "p95_jct", "p99_jct", "mean_wait",
                "makespan", "utilization", "jain", "preemptions", "teams"):
        assert key in fifo
    assert fifo["jobs"] == 3 and fifo["makespan"] == 110.0
    assert report["policies"]["srtf-oracle"]["mean_jct"] == 60.0
    assert set(fifo["teams"]) == {"x", "y"} and fifo["teams"]["y"]["mean_jct"] == 50.0
    for png in ("jct_cdf.png", "utilization.png", "team_shares.png"):
        assert (tmp_path / "plots" / png).read_bytes().startswith(PNG)


def test_a_config_file_gives_the_cluster_and_maps_alibaba_qos(tmp_path: Path) -> None:
    (tmp_path / "pods.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "p1,1000,1024,1,1000,,LS,Running,0,100,0\n"
        "p2,1000,1024,1,500,,BE,Running,0,100,0\n")
    (tmp_path / "cluster.toml").write_text(
        'max_running = 10\n[pools.gpu]\ngpus = 1\nmax_jobs = 4\n'
        '[queues.online]\npools = ["gpu"]\npriority = 5\n'
        '[queues.batch]\npools = ["gpu"]\n'
        '[sim.qos]\nLS = "online"\nBE = "batch"\n')
    done = sim("pods.csv", "--config", "cluster.toml", "--policies", "priority,fifo",
               "--json", "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["trace"]["format"] == "alibaba"
    assert report["cluster"]["queues"] == ["batch", "online"]
    assert report["policies"]["priority"]["teams"]["online"]["mean_jct"] == 100.0
    assert report["policies"]["priority"]["teams"]["batch"]["mean_jct"] == 200.0


def test_a_bad_trace_is_one_line_with_its_line_number_and_exit_1(tmp_path: Path) -> None:
    (tmp_path / "bad.csv").write_text(HEADER + "a,0,100,1,x,ann,default,0,a\n"
                                      "b,0,-3,1,x,ann,default,0,b\n")
    done = sim("bad.csv", "--gpus", "2", cwd=tmp_path)
    assert done.returncode == 1
    assert "bad.csv, line 3: duration must not be negative, got -3" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert len(done.stderr.strip().splitlines()) == 1


def test_bad_options_and_configs_are_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text(TRACE)
    (tmp_path / "bad.toml").write_text('[pools.gpu]\ngpus = 2\nmax_jobs = 1\n'
                                       '[queues.default]\npools = ["gpu"]\n'
                                       '[sim]\nqos = "LS"\n')
    cases = [
        (("t.csv",), "give either --gpus N or --config FILE"),
        (("t.csv", "--gpus", "2", "--policies", "fifo,sjf"), "unknown policy 'sjf'"),
        (("missing.csv", "--gpus", "2"), "missing.csv: cannot read"),
        (("t.csv", "--config", "bad.toml"), "bad.toml, line 7: sim.qos: must be a table"),
        (("t.csv", "--gpus", "9" * 20), "--gpus must be at most 1,000,000"),
        (("t.csv", "--gpus", "2", "--window", "1e-300"), "--window must be at least 1 second"),
        (("t.csv", "--gpus", "2", "--window", "nan"), "--window must be a number of seconds"),
    ]
    for args, message in cases:
        done = sim(*args, cwd=tmp_path)
        assert done.returncode == 1, (args, done.stdout)
        assert message in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr


def test_a_checkpoint_interval_reports_the_gpu_hours_lost_per_policy(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text(TRACE)
    done = sim("t.csv", "--gpus", "2", "--policies", "fifo,srtf-oracle",
               "--checkpoint-interval", "4s", "--json", "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "lost GPU-h" in done.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["policies"]["srtf-oracle"]["gpu_hours_lost"] == round(4 / 3600, 6)
    assert report["policies"]["fifo"]["gpu_hours_lost"] == 0.0  # it preempts nothing
    assert report["config"]["checkpoint_interval_s"] == 4.0
    plain = sim("t.csv", "--gpus", "2", "--json", "p.json", cwd=tmp_path)
    assert "lost GPU-h" not in plain.stdout
    assert "gpu_hours_lost" not in json.loads((tmp_path / "p.json").read_text())["policies"][
        "fifo"]


def test_a_bad_checkpoint_interval_is_refused_with_its_option(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text(TRACE)
    for args, said in ((("--checkpoint-interval", "soon"), "--checkpoint-interval must be"),
                       (("--checkpoint-interval", "0s"), "more than 0"),
                       (("--checkpoint-time", "1m"), "--checkpoint-time needs "
                                                     "--checkpoint-interval")):
        done = sim("t.csv", "--gpus", "2", *args, cwd=tmp_path)
        assert done.returncode == 1 and said in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
