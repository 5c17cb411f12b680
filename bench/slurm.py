"""Trainyard through Slurm beside bare `sbatch`, on one two-node cluster in one run.

The cluster is trainyard.testbed.slurm_cluster's two_nodes() (n1, n2, 2 CPUs each, every
daemon a child of this process on 127.0.0.1, every file in a temp dir). Trainyard is an
in-process TrainyardServer with the shipped tracker settings and a policy file with one
Slurm pool (pull staging, python = this interpreter), driven over gRPC with the SDK's Client
on 127.0.0.1, as a user would.

Figures, each from stamps the jobs write themselves (`date +%s.%N > file` on this host):
  1. submit -> RUNNING, one job at a time: submit call start -> the job's own stamp, p50/p90,
     Trainyard vs `sbatch --wrap` of the same command (the Trainyard job's recorded RUNNING
     transition is reported beside it);
  2. N trivial jobs end to end (submit all, then poll until none is unfinished): jobs/s;
  3. controller calls per job over (2): the Slurm executor's `calls` counter / jobs;
  4. dataset pull, in a process of its own as the agent's: the runtime's PullDataset
     stream into receive_files (what the agent's staging does), with a job token minted
     for a RUNNING job, vs `cp -r` of the same files, each timed with the sync after it,
     each pull right after a copy (--pull-repeats pairs, each figure the median);
  5. metric points accepted per second: batches of 500 lines through the runtime's
     RuntimeClient.push with that token.

Usage: .venv/bin/python bench/slurm.py [--latency-jobs 20] [--jobs 200] [--cap-s 180]
                                       [--only latency,e2e,pull,metrics]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchlib import commit, goal_met, num, percentile, verdict, write_json
from rich.console import Console
from rich.table import Table

RESULTS = Path(__file__).resolve().parent / "results" / "slurm.json"
UNFINISHED = ["WAITING", "LAUNCHING", "RUNNING"]
FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}
POLL_S = 0.1
JOB_TIMEOUT_S = 60.0  # one job of the latency loop, submit to gone
METRIC_BATCH = 500
PHASES = ("latency", "e2e", "pull", "metrics")
GOALS = {  # figure: (kind, target)
    "submit_to_running_p50_ratio": ("at_most", 1.2),
    "e2e_rate_ratio": ("at_least", 0.9),
    "controller_calls_per_job": ("at_most", 3.0),
    "dataset_pull_vs_cp": ("at_least", 0.5),
    "metric_points_per_s": ("at_least", 10_000.0),
}

console = Console(width=None if sys.stdout.isatty() else 120)


# --- pure arithmetic (tests/bench/test_slurm_bench.py) -------------------------------------


def ratio(value: float | None, base: float | None) -> float | None:
    """value / base; None where either is missing or the base is 0."""
    if value is None or base is None or base == 0:
        return None
    return value / base


def latencies_ms(submits: dict[str, float], stamps: dict[str, float]) -> list[float]:
    """Submit -> stamp in ms for every key that has both, sorted."""
    return sorted((stamps[k] - submits[k]) * 1000 for k in submits if k in stamps)


def rate(jobs: int, seconds: float) -> float:
    return jobs / seconds if seconds > 0 else 0.0


def read_stamp(path: Path) -> float | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    try:
        return float(text) if text else None
    except ValueError:
        return None


def stamp_command(path: Path) -> str:
    """The trivial job: stamp its start, and say so on its first output line."""
    return f"t=$(date +%s.%N); echo $t > {path}; echo started $t"


# --- the cluster, bare ---------------------------------------------------------------------


@dataclass
class Bare:
    env: dict[str, str]
    out: Path

    def sbatch(self, command: str, name: str) -> str:
        done = subprocess.run(
            ["sbatch", "--parsable", "--job-name", name, "--output",
             str(self.out / f"{name}.out"), "--wrap", command],
            stdin=subprocess.DEVNULL, capture_output=True, env=self.env, timeout=30,
            check=False)
        if done.returncode != 0:
            raise RuntimeError(f"sbatch: {done.stderr.decode(errors='replace')[-300:]}")
        return done.stdout.decode().strip().split(";")[0]

    def unfinished(self) -> int:
        done = subprocess.run(["squeue", "--noheader", "-t", "PD,R,CG,CF", "-o", "%i"],
                              stdin=subprocess.DEVNULL, capture_output=True, env=self.env,
                              timeout=30, check=False)
        if done.returncode != 0:
            return -1
        return len(done.stdout.split())


def wait_until(check: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(POLL_S)
    return check()


# --- phases ---------------------------------------------------------------------------------


@dataclass
class Latency:
    stamp_ms: list[float] = field(default_factory=list)
    recorded_ms: list[float] = field(default_factory=list)  # Trainyard: submit -> RUNNING event
    failures: int = 0


def bare_latency(bare: Bare, stamps: Path, jobs: int, cap_s: float) -> Latency:
    out = Latency()
    deadline = time.monotonic() + cap_s
    for i in range(jobs):
        if time.monotonic() > deadline:
            break
        stamp = stamps / f"bare-lat-{i}"
        t0 = time.time()
        bare.sbatch(stamp_command(stamp), f"bare-lat-{i}")
        if not wait_until(lambda s=stamp: read_stamp(s) is not None, JOB_TIMEOUT_S):
            out.failures += 1
            continue
        out.stamp_ms.extend(latencies_ms({"j": t0}, {"j": read_stamp(stamp) or 0.0}))
        wait_until(lambda: bare.unfinished() == 0, JOB_TIMEOUT_S)
    out.stamp_ms.sort()
    return out


def _iso_s(text: str | None) -> float | None:
    return datetime.fromisoformat(text).timestamp() if text else None


def trainyard_latency(client: Any, stamps: Path, jobs: int, cap_s: float) -> Latency:
    from trainyard.client.spec import TrainSpec

    out = Latency()
    deadline = time.monotonic() + cap_s
    for i in range(jobs):
        if time.monotonic() > deadline:
            break
        stamp = stamps / f"ty-lat-{i}"
        t0 = time.time()
        job_id = client.train(TrainSpec(name=f"ty-lat-{i}",
                                        command=stamp_command(stamp))).job_id
        ok = wait_until(lambda s=stamp: read_stamp(s) is not None, JOB_TIMEOUT_S)
        wait_until(lambda j=job_id: client.status(j).state in FINAL, JOB_TIMEOUT_S)
        if not ok:
            out.failures += 1
            continue
        out.stamp_ms.append((read_stamp(stamp) or 0.0) - t0)
        running = [_iso_s(t.time) for t in client.status(job_id).transitions
                   if t.to_state == "RUNNING"]
        if running and running[0] is not None:
            out.recorded_ms.append((running[0] - t0) * 1000)
    out.stamp_ms = sorted(v * 1000 for v in out.stamp_ms)
    out.recorded_ms.sort()
    return out


@dataclass
class Throughput:
    jobs: int
    done: int
    seconds: float
    capped: bool
    calls: int | None = None

    @property
    def per_s(self) -> float:
        return rate(self.done, self.seconds)


def bare_throughput(bare: Bare, stamps: Path, jobs: int, cap_s: float) -> Throughput:
    t0 = time.monotonic()
    for i in range(jobs):
        bare.sbatch(stamp_command(stamps / f"bare-e2e-{i}"), f"bare-e2e-{i}")
    finished = wait_until(lambda: bare.unfinished() == 0, cap_s - (time.monotonic() - t0))
    seconds = time.monotonic() - t0
    done = sum(read_stamp(stamps / f"bare-e2e-{i}") is not None for i in range(jobs))
    return Throughput(jobs, done if finished else done, seconds, not finished)


def trainyard_throughput(client: Any, executor: Any, stamps: Path, jobs: int,
                         cap_s: float) -> Throughput:
    from trainyard.client.spec import TrainSpec

    calls0 = executor.calls
    t0 = time.monotonic()
    for i in range(jobs):
        client.train(TrainSpec(name=f"ty-e2e-{i}", command=stamp_command(stamps / f"ty-e2e-{i}")))

    def none_left() -> bool:
        page, _ = client.list_jobs(states=UNFINISHED, page_size=1)
        return not page
    finished = wait_until(none_left, cap_s - (time.monotonic() - t0))
    seconds = time.monotonic() - t0
    calls = executor.calls - calls0
    done = sum(read_stamp(stamps / f"ty-e2e-{i}") is not None for i in range(jobs))
    return Throughput(jobs, done, seconds, not finished, calls)


def make_dataset(root: Path, files: int, mb: int) -> int:
    root.mkdir(parents=True)
    for i in range(files):
        (root / f"part-{i:03d}.bin").write_bytes(os.urandom(mb * 1024 * 1024))
    return files * mb * 1024 * 1024


def cp_seconds(src: Path, dest: Path) -> float:
    os.sync()  # what earlier steps left unwritten is not this copy's to write
    t0 = time.monotonic()
    subprocess.run(["cp", "-r", str(src), str(dest)], check=True, timeout=120)
    os.sync()
    return time.monotonic() - t0


# The pull runs in a process of its own, as the agent does on a node: in the benchmark's
# process it would share one interpreter lock with the server that streams to it.
_PULL = """
import json, os, sys, time
from pathlib import Path
from trainyard.runtime.channel import RuntimeClient
from trainyard.runtime.staging import receive_files
from trainyard.runtime.wire import PullDatasetRequest
address, content_hash, dest = sys.argv[1:4]
client = RuntimeClient(address, os.environ["TRAINYARD_JOB_TOKEN"], retry_for=10.0)
Path(dest).mkdir(parents=True)
t0 = time.monotonic()
got = client.pull("dataset", PullDatasetRequest(content_hash),
                  lambda stream: receive_files(stream, Path(dest), read_only=True))
os.sync()
print(json.dumps({"seconds": time.monotonic() - t0, "bytes": got.bytes}))
client.close()
"""


def pull_seconds(address: str, token: str, content_hash: str, dest: Path) -> tuple[float, int]:
    """The runtime's own pull of the version into `dest`, then sync, in a child process."""
    os.sync()  # the dataset's registration and the holder's staging are not the pull's
    done = subprocess.run([sys.executable, "-c", _PULL, address, content_hash, str(dest)],
                          env={**os.environ, "TRAINYARD_JOB_TOKEN": token},
                          capture_output=True, text=True, timeout=300, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return float(got["seconds"]), int(got["bytes"])


def metric_points_per_s(address: str, token: str, batches: int, cap_s: float) -> tuple[float, int]:
    from trainyard.runtime.channel import RuntimeClient
    from trainyard.runtime.wire import PushRequest

    client = RuntimeClient(address, token, retry_for=10.0)
    try:
        seq, t0 = 0, time.monotonic()
        for _ in range(batches):
            if time.monotonic() - t0 > cap_s:
                break
            lines = [json.dumps({"step": s, "loss": 1.0 / (s + 1)}).encode()
                     for s in range(seq, seq + METRIC_BATCH)]
            reply = client.push(PushRequest(stream="metrics", rank=0, first_seq=seq,
                                            lines=lines))
            seq = reply.next_seq
        seconds = time.monotonic() - t0
        return rate(seq, seconds), seq
    finally:
        client.close()


# --- the run --------------------------------------------------------------------------------


POLICY = """
max_running = 8
[pools.hpc]
executor = "slurm"
partition = "{partition}"
staging = "pull"
cache_dir = "{cache}/{{node}}"
python = "{python}"
spread = true
[queues.default]
pools = ["hpc"]
"""


def run(args: argparse.Namespace) -> dict[str, Any]:
    from trainyard.auth.policy import Identity
    from trainyard.client.sdk import Client
    from trainyard.client.spec import TrainSpec
    from trainyard.domain.states import JobState
    from trainyard.runtime.staging import remove_tree
    from trainyard.server.assembly import ServerConfig, TrainyardServer
    from trainyard.testbed.slurm_cluster import available, cluster, two_nodes

    why = available()
    if why:
        raise SystemExit(f"no Slurm here: {why}")
    figures: dict[str, Any] = {}
    counts: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-slurm-") as tmp_name:
        tmp = Path(tmp_name)
        stamps = tmp / "stamps"
        stamps.mkdir()
        with cluster(tmp / "cluster", two_nodes()) as slurm:
            os.environ["SLURM_CONF"] = slurm.env["SLURM_CONF"]
            bare = Bare(slurm.child_env(), tmp / "bare-out")
            bare.out.mkdir()
            policy = tmp / "policy.toml"
            policy.write_text(POLICY.format(partition=slurm.partition, cache=tmp / "nodes",
                                            python=sys.executable))
            srv = TrainyardServer(ServerConfig(data_dir=tmp / "data", port=0,
                                               policy_file=policy))
            srv.start()
            try:
                address = f"127.0.0.1:{srv.port}"
                client = Client(address, token="")
                executor = srv.executors["slurm"]

                bare_lat, ty_lat = Latency(), Latency()
                if "latency" in args.only:
                    console.log(f"1. submit->RUNNING, {args.latency_jobs} jobs one at a time")
                    bare_lat = bare_latency(bare, stamps, args.latency_jobs, args.cap_s)
                    ty_lat = trainyard_latency(client, stamps, args.latency_jobs, args.cap_s)
                bare_tp = ty_tp = Throughput(0, 0, 0.0, False)
                if "e2e" in args.only:
                    console.log(f"2. {args.jobs} trivial jobs end to end (cap {args.cap_s:g} s)")
                    bare_tp = bare_throughput(bare, stamps, args.jobs, args.cap_s)
                    ty_tp = trainyard_throughput(client, executor, stamps, args.jobs,
                                                 args.cap_s)

                console.log(f"4. dataset pull, {args.dataset_files} x {args.dataset_mb} MB")
                src = tmp / "dataset"
                size = make_dataset(src, args.dataset_files, args.dataset_mb)
                record = client.register_dataset("bench-data", str(src))
                go = tmp / "go"
                holder = client.train(TrainSpec(
                    name="bench-holder", dataset=f"bench-data:{record.version}",
                    command=f"echo up > {stamps / 'holder'}; for i in $(seq 1200); do "
                            f"[ -e {go} ] && exit 0; sleep 0.1; done; exit 1")).job_id
                try:
                    # Its own agent has pulled the dataset once its command runs.
                    if not wait_until(lambda: (stamps / "holder").exists(), 120):
                        raise RuntimeError(f"the holder job did not start: "
                                           f"{client.status(holder).message}")
                    job = srv.jobs.get(holder)
                    assert job.state is JobState.RUNNING, job.state
                    token = srv.tracker.launcher.requests.mint(job)
                    cp_runs: list[float] = []
                    pull_runs: list[float] = []
                    for _ in range(args.pull_repeats if "pull" in args.only else 0):
                        # Each pull right after a copy, so that both find the machine (its
                        # load, its free memory) alike; each result removed once measured.
                        cp_runs.append(cp_seconds(src, tmp / "cp-copy"))
                        remove_tree(tmp / "cp-copy")
                        seconds, pulled = pull_seconds(address, token,
                                                       f"sha256:{record.version}",
                                                       tmp / "pulled")
                        remove_tree(tmp / "pulled")
                        if pulled != size:
                            raise RuntimeError(f"pulled {pulled} bytes of {size}")
                        pull_runs.append(seconds)
                    pull_s = percentile(sorted(pull_runs), 50)
                    cp_s = percentile(sorted(cp_runs), 50)
                    console.log(f"   pull {[num(t, 3) for t in pull_runs]} s, "
                                f"cp -r {[num(t, 3) for t in cp_runs]} s")
                    points_s, points = float("nan"), 0
                    if "metrics" in args.only:
                        console.log("5. metric points pushed in batches of 500")
                        points_s, points = metric_points_per_s(address, token,
                                                               args.metric_batches, args.cap_s)
                finally:
                    go.touch()
                    wait_until(lambda: client.status(holder).state in FINAL, 30)
                client.close()
            finally:
                for job in srv.jobs.in_states((JobState.WAITING, JobState.LAUNCHING,
                                               JobState.RUNNING)):
                    with contextlib.suppress(Exception):  # it may have ended meanwhile
                        srv.service.cancel(Identity(user="root", admin=True), job.id)
                srv.stop(grace=0)
        os.environ.pop("SLURM_CONF", None)

    mb = size / 1e6
    figures = {
        "trainyard_submit_to_running_p50_ms": (percentile(ty_lat.stamp_ms, 50), "ms"),
        "trainyard_submit_to_running_p90_ms": (percentile(ty_lat.stamp_ms, 90), "ms"),
        "trainyard_submit_to_running_event_p50_ms": (percentile(ty_lat.recorded_ms, 50), "ms"),
        "bare_submit_to_running_p50_ms": (percentile(bare_lat.stamp_ms, 50), "ms"),
        "bare_submit_to_running_p90_ms": (percentile(bare_lat.stamp_ms, 90), "ms"),
        "trainyard_e2e_jobs_per_s": (ty_tp.per_s if "e2e" in args.only else None, "jobs/s"),
        "bare_e2e_jobs_per_s": (bare_tp.per_s if "e2e" in args.only else None, "jobs/s"),
        "controller_calls_per_job": (ratio(ty_tp.calls, ty_tp.jobs), "calls/job"),
        "dataset_pull_mb_per_s": (mb / pull_s, "MB/s"),
        "cp_mb_per_s": (mb / cp_s, "MB/s"),
        "metric_points_per_s": (points_s, "points/s"),
    }
    ratios = {
        "submit_to_running_p50_ratio": ratio(figures["trainyard_submit_to_running_p50_ms"][0],
                                             figures["bare_submit_to_running_p50_ms"][0]),
        "e2e_rate_ratio": ratio(ty_tp.per_s, bare_tp.per_s),
        "dataset_pull_vs_cp": ratio(cp_s, pull_s),
    }
    values = {**ratios, "controller_calls_per_job": figures["controller_calls_per_job"][0],
              "metric_points_per_s": points_s}
    counts = {"latency_jobs": {"trainyard": len(ty_lat.stamp_ms), "bare": len(bare_lat.stamp_ms),
                               "failures": ty_lat.failures + bare_lat.failures},
              "e2e": {"jobs": args.jobs, "trainyard_done": ty_tp.done, "bare_done": bare_tp.done,
                      "trainyard_seconds": num(ty_tp.seconds), "bare_seconds": num(bare_tp.seconds),
                      "trainyard_capped": ty_tp.capped, "bare_capped": bare_tp.capped,
                      "controller_calls": ty_tp.calls},
              "dataset": {"files": args.dataset_files, "bytes": size, "pull_s": num(pull_s, 3),
                          "cp_s": num(cp_s, 3), "pull_runs_s": [num(t, 3) for t in pull_runs],
                          "cp_runs_s": [num(t, 3) for t in cp_runs]},
              "metric_points": points}
    return {
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform(), "slurm": _slurm_version()},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "config": {"cluster": "two_nodes(): n1, n2, 2 CPUs and 2048 MB each",
                   "latency_jobs": args.latency_jobs, "jobs": args.jobs, "cap_s": args.cap_s,
                   "tracker": "shipped defaults (TrackerConfig())"},
        "figures": {k: {"value": num(v, 2), "unit": u} for k, (v, u) in figures.items()},
        "ratios": {k: num(v, 3) for k, v in ratios.items()},
        "goals": {k: {"kind": kind, "target": target, "value": num(values[k], 3),
                      "pass": goal_met(kind, target, values[k])}
                  for k, (kind, target) in GOALS.items()},
        "counts": counts,
    }


def _slurm_version() -> str | None:
    try:
        done = subprocess.run(["slurmd", "-V"], capture_output=True, text=True,
                              timeout=10, check=False)
    except OSError:
        return None
    return done.stdout.strip() or None


def render(results: dict[str, Any]) -> None:
    f, g, c = results["figures"], results["goals"], results["counts"]

    def v(name: str, fmt: str = "{:,.1f}") -> str:
        value = f[name]["value"]
        return "n/a" if value is None else fmt.format(value) + " " + f[name]["unit"]

    def r(name: str) -> tuple[str, str, str]:
        kind, target, value = g[name]["kind"], g[name]["target"], g[name]["value"]
        sign = "<=" if kind == "at_most" else ">="
        x = "x" if name in results["ratios"] else ""
        shown = "n/a" if value is None else f"{value:,.2f}{x}"
        goal = f"{sign} {target:,g}{x}"
        return shown, goal, verdict(g[name]["pass"])

    table = Table(title=f"Trainyard through Slurm beside bare sbatch "
                        f"({results['config']['cluster']})")
    for col in ("figure", "Trainyard", "bare Slurm / limit", "ratio", "goal", "met?"):
        table.add_column(col, justify="left" if col == "figure" else "right", no_wrap=True)
    table.add_row("submit->RUNNING p50 (stamps)", v("trainyard_submit_to_running_p50_ms"),
                  v("bare_submit_to_running_p50_ms"), *r("submit_to_running_p50_ratio"))
    table.add_row("submit->RUNNING p90 (stamps)", v("trainyard_submit_to_running_p90_ms"),
                  v("bare_submit_to_running_p90_ms"), "", "", "")
    table.add_row("  submit->RUNNING event p50", v("trainyard_submit_to_running_event_p50_ms"),
                  "", "", "", "")
    e2e = c["e2e"]
    table.add_row(f"{e2e['jobs']} trivial jobs end to end", v("trainyard_e2e_jobs_per_s", "{:.2f}"),
                  v("bare_e2e_jobs_per_s", "{:.2f}"), *r("e2e_rate_ratio"))
    table.add_row("controller calls per job", v("controller_calls_per_job", "{:.2f}"), "",
                  "", *r("controller_calls_per_job")[1:])
    table.add_row(f"dataset pull, {c['dataset']['bytes'] / 1e6:.0f} MB", v("dataset_pull_mb_per_s"),
                  "cp -r " + v("cp_mb_per_s"), *r("dataset_pull_vs_cp"))
    table.add_row("metric points accepted", v("metric_points_per_s", "{:,.0f}"), "",
                  "", *r("metric_points_per_s")[1:])
    console.print(table)
    notes = []
    if e2e["trainyard_capped"] or e2e["bare_capped"]:
        notes.append(f"capped at {results['config']['cap_s']:g} s: Trainyard "
                     f"{e2e['trainyard_done']}, bare {e2e['bare_done']} of {e2e['jobs']} done")
    if results["config"]["jobs"] != 200:
        notes.append(f"--jobs {results['config']['jobs']} (the goal is stated for 200)")
    if c["latency_jobs"]["failures"]:
        notes.append(f"{c['latency_jobs']['failures']} latency jobs did not stamp in time")
    for note in notes:
        console.print(f"[yellow]{note}[/]")


def _phases(text: str) -> tuple[str, ...]:
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [part for part in chosen if part not in PHASES]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"phases are {', '.join(PHASES)}, not {text!r}")
    return chosen


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--latency-jobs", type=int, default=20)
    p.add_argument("--jobs", type=int, default=200, help="trivial jobs end to end")
    p.add_argument("--cap-s", type=float, default=180.0, help="wall-clock cap of each phase")
    p.add_argument("--dataset-files", type=int, default=20)
    p.add_argument("--dataset-mb", type=int, default=10, help="size of each dataset file")
    p.add_argument("--metric-batches", type=int, default=100)
    p.add_argument("--json", type=Path, default=RESULTS)
    p.add_argument("--only", type=_phases, default=PHASES,
                   help="comma-separated phases to run (default: all of " + ",".join(PHASES) + ")")
    p.add_argument("--pull-repeats", type=int, default=3,
                   help="copy, then pull, this many times; each figure the median")
    args = p.parse_args(argv)
    if min(args.latency_jobs, args.pull_repeats, args.jobs, args.dataset_files, args.dataset_mb,
           args.metric_batches) < 1:
        p.error("every count must be at least 1")
    return args


def main() -> int:
    args = parse_args()
    signal.signal(signal.SIGTERM, lambda _sig, _frame: sys.exit(128 + signal.SIGTERM))
    if shutil.which("sbatch") is None:
        console.print("[red]sbatch not found: apt-get install slurm-wlm munge[/]")
        return 2
    results = run(args)
    render(results)
    write_json(results, args.json)
    console.print(f"results: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
