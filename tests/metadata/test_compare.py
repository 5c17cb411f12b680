"""Runs side by side, and each attempt's share of its job's history."""

from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.metadata.runs import attempt_events, compare
from trainyard.store.records import EventRecord, JobRecord, RunRecord

W, L, R, S, P = (JobState.WAITING, JobState.LAUNCHING, JobState.RUNNING, JobState.SUCCEEDED,
                 JobState.PREEMPTED)


def job(job_id: str, spec: JobSpec) -> JobRecord:
    return JobRecord(id=job_id, seq=1, spec=spec, kind="local", owner="ann", state=S, attempt=1,
                     message="", exit_code=0, cancel_requested=False, pending_code="",
                     pending_message="",
                     executor="local", handle="h", gpu_ids=(), team="", pool="local",
                     preempt_requested=False, started_at=1.0, sweep_id="", metrics_offset=0,
                     malformed_metric_lines=0, submitted_at=0.0, updated_at=2.0,
                     client_request_id=None)


def run(job_id: str, spec: JobSpec) -> RunRecord:
    return RunRecord(job=job(job_id, spec), attempt=1, state=S, executor="local", pool="local",
                     handle="h", gpu_ids=(), image_id="", exit_code=0, message="",
                     launched_at=1.0, started_at=1.0, ended_at=2.0, seq=1)


def test_keys_that_differ_are_flagged_including_keys_only_some_runs_have() -> None:
    a = run("a", JobSpec(name="a", command="t", hyperparameters={"LR": "0.1", "SEED": "0"}))
    b = run("b", JobSpec(name="b", command="t", hyperparameters={"LR": "0.2", "SEED": "0",
                                                                 "DROPOUT": "0.5"}))
    final = {("a", 1): {"acc": (0.9, 3)}, ("b", 1): {"acc": (0.9, 3), "loss": (0.1, 3)}}
    cmp = compare([a, b], final)
    params = {r.key: (r.values, r.differs) for r in cmp.hyperparameters}
    assert params == {"DROPOUT": ((None, "0.5"), True), "LR": (("0.1", "0.2"), True),
                      "SEED": (("0", "0"), False)}
    metrics = {r.key: (r.values, r.differs) for r in cmp.metrics}
    assert metrics == {"acc": ((0.9, 0.9), False), "loss": ((None, 0.1), True)}
    settings = {r.key: r.differs for r in cmp.settings}
    assert settings["command"] is False and settings["cpus"] is False


def test_each_attempt_gets_its_own_transitions() -> None:
    edges = [(None, W), (W, L), (L, R), (R, P), (P, W), (W, L), (L, R), (R, S)]
    events = [EventRecord(i, "j", a, b, float(i), "") for i, (a, b) in enumerate(edges)]
    first = [(e.from_state, e.to_state) for e in attempt_events(events, 1)]
    second = [(e.from_state, e.to_state) for e in attempt_events(events, 2)]
    assert first == [(None, W), (W, L), (L, R), (R, P)]
    assert second == [(P, W), (W, L), (L, R), (R, S)]
    assert attempt_events(events, 3) == []
