"""Reading traces: the project's format with its defaults, the Alibaba openb pod list, and
bad traces refused with the line and the problem."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest

from trainyard.sim.trace import (
    TraceError,
    generate_trace,
    queue_per_team,
    read_trace,
    write_rows,
    write_trace,
)

HEADER = "job_id,submit_time,duration,num_gpus,team,user,queue,priority,name\n"
# The project's shared data: shared/ inside the checkout, or beside it. It is data, not a
# component CI installs, so a checkout without it skips the one test that reads it.
_ROOT = Path(__file__).resolve().parents[2]
PHILLY = next((path for path in (root / "shared" / "data" / "traces" / "philly-3vc.csv"
                                 for root in (_ROOT, _ROOT.parent)) if path.exists()),
              _ROOT.parent / "shared" / "data" / "traces" / "philly-3vc.csv")
ALIBABA_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                  "creation_time,deletion_time,scheduled_time\n")


def write(tmp_path: Path, text: str, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_rows_are_read_in_submit_order_with_their_fields(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, HEADER + "b,20,5.5,2,vision,ann,gpu,3,bert\n"
                             "a,10,60,1,nlp,bob,default,0,gpt\n"))
    assert trace.kind == "trainyard"
    first, second = trace.jobs
    assert (first.job_id, first.submit_time, first.duration, first.gpus) == ("a", 10, 60, 1)
    assert (second.team, second.user, second.queue, second.priority, second.name) == \
        ("vision", "ann", "gpu", 3, "bert")
    assert second.line == 2


def test_only_submit_time_duration_and_num_gpus_are_required(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, "num_gpus,duration,submit_time,extra\n1,30,0,x\n"))
    (only,) = trace.jobs
    assert (only.job_id, only.team, only.user, only.queue, only.priority) == \
        ("2", "", "", "default", 0)
    assert (only.cpus, only.memory_mb) == (0.0, 0)


@pytest.mark.parametrize(("text", "problem"), [
    ("job_id,submit_time,num_gpus\n", "line 1: the header lacks the required column duration"),
    ("job_id,team\n", "lacks the required columns submit_time, duration, num_gpus"),
    (HEADER + "a,0,10,1,t,u,q,0,n\nb,0,-5,1,t,u,q,0,n\n",
     "line 3: duration must not be negative, got -5"),
    (HEADER + "a,zero,10,1,t,u,q,0,n\n", "line 2: submit_time must be a number, got 'zero'"),
    (HEADER + "a,0,10,1.5,t,u,q,0,n\n", "line 2: num_gpus must be a whole number, got '1.5'"),
    (HEADER + "a,0,10,1\n", "line 2: expected 9 fields as in the header, got 4"),
    (HEADER + "a,0,nan,1,t,u,q,0,n\n", "line 2: duration must be a finite number"),
    (HEADER + "a,0,,1,t,u,q,0,n\n", "line 2: duration is empty"),
    (HEADER + "a,0,1,1,t,u,q,0,n\n\na,5,1,1,t,u,q,0,n\n",
     "line 4: job_id 'a' is used twice (first on line 2)"),
    ("", "empty: expected a header line"),
])
def test_bad_traces_are_refused_with_the_line_and_the_problem(
        tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(TraceError) as caught:
        read_trace(write(tmp_path, text))
    assert problem in str(caught.value)
    assert str(caught.value).startswith(str(tmp_path / "trace.csv"))


def test_a_missing_file_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot read: No such file or directory"):
        read_trace(tmp_path / "absent.csv")


ALIBABA = ALIBABA_HEADER + (
    "pod-a,12000,16384,1,1000,,LS,Running,0,500,100\n"  # ran 400 s, waited 100 s
    "pod-b,6000,12288,1,460,,BE,Succeeded,50,1050,60\n"  # a fraction of a GPU: one GPU
    "pod-c,6000,12288,8,1000,,Burstable,Failed,70,170,70\n"
    "pod-d,6000,12288,1,1000,,BE,Pending,80,200,\n"  # never scheduled
    "pod-e,6000,12288,0,0,,LS,Running,90,900,90\n"  # no GPU
    "pod-f,6000,12288,1,1000,,Guaranteed,Running,95,195,95\n")


def test_the_alibaba_pod_list_becomes_jobs_of_its_qos_queues(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, ALIBABA))
    assert trace.kind == "alibaba"
    jobs = {job.job_id: job for job in trace.jobs}
    assert sorted(jobs) == ["pod-a", "pod-b", "pod-c", "pod-f"]
    a = jobs["pod-a"]
    assert (a.submit_time, a.duration, a.gpus, a.queue, a.team) == (0, 400, 1, "ls", "ls")
    assert (a.cpus, a.memory_mb) == (12.0, 16384)
    assert (jobs["pod-b"].gpus, jobs["pod-b"].duration, jobs["pod-b"].queue) == (1, 990, "be")
    assert (jobs["pod-c"].gpus, jobs["pod-c"].queue) == (8, "burstable")
    assert jobs["pod-f"].queue == "ls"
    assert trace.skipped == {"never scheduled": 1, "no GPU": 1}


def test_the_qos_mapping_is_configurable_and_unmapped_classes_are_refused(
        tmp_path: Path) -> None:
    path = write(tmp_path, ALIBABA)
    mapped = read_trace(path, qos_queues={"LS": "online", "BE": "batch", "Burstable": "batch",
                                          "Guaranteed": "online"})
    assert {job.queue for job in mapped.jobs} == {"online", "batch"}
    with pytest.raises(TraceError, match=r"line 3: QoS class 'BE' maps to no queue"):
        read_trace(path, qos_queues={"LS": "online"})


def test_an_alibaba_pod_deleted_before_it_was_scheduled_is_refused(tmp_path: Path) -> None:
    bad = ALIBABA_HEADER + "pod-a,1,1,1,1000,,LS,Running,0,50,100\n"
    with pytest.raises(TraceError, match="line 2: a negative duration: deletion_time 50 is "
                                         "before scheduled_time 100"):
        read_trace(write(tmp_path, bad))


def test_the_shared_traces_read() -> None:
    if not PHILLY.exists():
        pytest.skip(f"the shared traces are not beside this checkout ({PHILLY.parent})")
    philly = read_trace(PHILLY)
    assert len(philly.jobs) == 1842 and {job.team for job in philly.jobs} == \
        {"0e4a51", "2869ce", "e13805"}
    alibaba = read_trace(PHILLY.with_name("alibaba-openb-2023-pods.csv"))
    assert alibaba.kind == "alibaba"
    assert len(alibaba.jobs) + sum(alibaba.skipped.values()) == 8152


def test_queue_per_team_and_generated_traces(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, HEADER + "a,0,1,1,t1,u,default,0,n\n"
                             "b,0,1,1,,u,gpu,0,n\n"))
    assert [job.queue for job in queue_per_team(trace).jobs] == ["t1", "default"]
    jobs = generate_trace(1000, 64, seed=1)
    assert len(jobs) == 1000 and all(1 <= job.gpus <= 8 for job in jobs)
    assert [job.submit_time for job in jobs] == sorted(job.submit_time for job in jobs)
    assert generate_trace(1000, 64, seed=1) == jobs


def test_a_written_trace_reads_back_as_it_was(tmp_path: Path) -> None:
    jobs = [replace(job, cpus=1.5 * (i % 3), memory_mb=512 * i, submit_time=
                    job.submit_time + 1_234_567.891)  # past what 6 digits would keep
            for i, job in enumerate(generate_trace(50, 16, seed=3))]
    write_trace(jobs, tmp_path / "out.csv")
    header = (tmp_path / "out.csv").read_text().splitlines()[0]
    assert header == HEADER.strip() + ",cpus,memory_mb"
    assert list(read_trace(tmp_path / "out.csv").jobs) == jobs
    buffer = io.StringIO(newline="")
    write_rows(jobs[:2], buffer)
    written = (tmp_path / "out.csv").read_bytes().decode().splitlines(keepends=True)
    assert buffer.getvalue() == "".join(written[:3])  # the same rows, to any text stream
