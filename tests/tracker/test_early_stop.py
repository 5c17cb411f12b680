"""Early stopping on a real sweep of the demo trainer: the losers are stopped early (CANCELLED,
STOPPED_EARLY, the rule's sentence, their metrics and model kept), the best finish."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.liveserver import live_server, wait_until
from trainyard.auth.policy import Identity
from trainyard.domain.early_stopping import STOPPED_EARLY, EarlyStop, Objective
from trainyard.domain.spec import DatasetRef, JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.domain.sweep import Parameter
from trainyard.domain.sweep_control import SweepBudget
from trainyard.server.assembly import TrainyardServer
from trainyard.services.sweeps import SweepRules
from trainyard.store.db import Database
from trainyard.store.jobs import JobStore
from trainyard.store.metrics import MetricStore
from trainyard.store.records import MetricPoint
from trainyard.store.sweeps import SweepStore, sweep_columns
from trainyard.tracker.admission import running_job
from trainyard.tracker.early_stop import EarlyStopper

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ANN = Identity(user="ann", admin=True)
# About 0.1 s an epoch: a loser's first epoch is judged long before its last would end.
TRIAL = {"EPOCHS": "25", "HIDDEN": "128,128", "BATCH_SIZE": "64", "SEED": "0",
         # One BLAS thread: the same hyperparameters give the very same curve.
         "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TrainyardServer]:
    with live_server(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite'}",
                     max_concurrent=2) as srv:
        yield srv


def digits(srv: TrainyardServer, tmp_path: Path) -> DatasetRef:
    sys.path.insert(0, str(EXAMPLES))
    try:
        from demo import write_digits
    finally:
        sys.path.remove(str(EXAMPLES))
    data = tmp_path / "digits"
    data.mkdir()
    write_digits(data)
    record, _ = srv.datasets.register(ANN, "digits", str(data))
    return DatasetRef("digits", record.version)


def run_sweep(srv: TrainyardServer, tmp_path: Path, rates: tuple[str, ...],
              rules: SweepRules) -> list[str]:
    template = JobSpec(name="lr", command=f"{shlex.quote(sys.executable)} "
                       f"{shlex.quote(str(EXAMPLES / 'trainer.py'))}",
                       dataset=digits(srv, tmp_path), hyperparameters=TRIAL,
                       resources=Resources(1, 512, 0))
    _, ids = srv.services.sweeps.submit(ANN, template, [Parameter("LR", rates)], search="grid",
                                        trials=0, seed=0, max_parallel=1, rules=rules)
    wait_until(lambda: all(srv.jobs.get(j).state.is_final() for j in ids), timeout=120,
               what="every trial's end")
    return ids


def assert_stopped_early(srv: TrainyardServer, job_id: str, tail: str) -> None:
    job = srv.jobs.get(job_id)
    assert (job.state, job.end_reason) == (JobState.CANCELLED, STOPPED_EARLY), job
    assert job.message.startswith("stopped early: test_accuracy ") and tail in job.message
    status = srv.service.status(ANN, job_id)
    assert "test_accuracy" in status.latest_metrics  # its run and metrics stay
    assert status.model is not None  # and its model, as a success's


def test_the_median_rule_stops_the_loser_and_the_best_finish(server: TrainyardServer,
                                                              tmp_path: Path) -> None:
    # Three complete (the rule waits for three); the median of 0.1, 0.1, 0.03 is the 0.1
    # curve: the last trial, the same curve, is never below it; 0.0002 is, at once.
    ids = run_sweep(server, tmp_path, ("0.1", "0.1", "0.03", "0.0002", "0.1"),
                    SweepRules(objective="test_accuracy:max", early_stop="median"))
    states = [server.jobs.get(j).state for j in ids]
    assert states == [JobState.SUCCEEDED] * 3 + [JobState.CANCELLED, JobState.SUCCEEDED]
    assert_stopped_early(server, ids[3], " at step 1, below the median ")
    shown = server.services.sweeps.show(ANN, server.jobs.get(ids[0]).sweep_id)
    assert shown.stopped_early == 1 and shown.state == "FINISHED"
    assert shown.best is not None and shown.best.job.spec.hyperparameters["LR"] == "0.1"
    assert shown.best.best == max(t.best for t in shown.trials if t.best is not None)


def test_asha_stops_the_loser_at_its_first_rung(server: TrainyardServer,
                                                tmp_path: Path) -> None:
    ids = run_sweep(server, tmp_path, ("0.1", "0.0002", "0.1"),
                    SweepRules(objective="test_accuracy:max", early_stop="asha",
                               min_steps=1, reduction=3))
    assert [server.jobs.get(j).state for j in ids] == [
        JobState.SUCCEEDED, JobState.CANCELLED, JobState.SUCCEEDED]
    assert_stopped_early(server, ids[1], " at step 1, not in the top 1/3 of the 2 trials at "
                         "that rung (they reach ")


def _trial(store: JobStore, sweep_id: str, name: str, started: float,
           points: list[tuple[int, float]]) -> str:
    job_id = store.create(JobSpec(name=name, command="true"), owner="ann", now=started - 1,
                          sweep_id=sweep_id)[0]
    store.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                     now=started, attempt=1, executor="local", pool="local",
                     handle=f"h-{job_id}")
    store.mark_running(job_id, reason="started", now=started)
    _points(store, job_id, points)
    return job_id


def _points(store: JobStore, job_id: str, points: list[tuple[int, float]]) -> None:
    offset = store.get(job_id).metrics_offset
    assert MetricStore(store.db).ingest(
        job_id, 1, from_offset=offset, to_offset=offset + len(points),
        points=[MetricPoint(step, {"acc": value}) for step, value in points], malformed=0)


def test_a_tracker_that_takes_over_judges_only_the_steps_reached_since(db: Database) -> None:
    store, sweeps = JobStore(db), SweepStore(db)
    acc = Objective("acc", "max")
    sweeps.add("swasha", "asha", "ann", 0, 900.0, sweep_columns(
        acc, EarlyStop("asha", acc, min_steps=1, reduction=3), SweepBudget()))
    for name in ("a", "b"):  # two trials that reached rungs 1 and 3 well
        _trial(store, "swasha", name, 950.0, [(1, 0.9), (3, 0.95)])
    stopper = EarlyStopper(store, clock=lambda: 1000.0)  # a tracker started at 1000
    # Started under this tracker, a poor trial is judged at once at rung 1 (not the top
    # third of three).
    fresh = _trial(store, "swasha", "fresh", 1010.0, [(1, 0.1)])
    assert stopper.judge(store.get(fresh)).end_reason == STOPPED_EARLY
    # Running since before it, the same trial's rung 1 was the earlier tracker's to judge,
    # against the trials that had reached it then: it is not judged again with more.
    taken = _trial(store, "swasha", "taken", 990.0, [(1, 0.1)])
    assert not stopper.judge(store.get(taken)).cancel_requested
    # The rungs it reaches from now on are judged as anyone's.
    _points(store, taken, [(2, 0.1), (3, 0.1)])
    judged = stopper.judge(store.get(taken))
    assert judged.end_reason == STOPPED_EARLY and " at step 3, " in judged.message


def test_an_early_stop_never_relabels_a_stop_already_asked(db: Database) -> None:
    store, sweeps = JobStore(db), SweepStore(db)
    acc = Objective("acc", "max")
    sweeps.add("swrace", "race", "ann", 0, 900.0, sweep_columns(
        acc, EarlyStop("asha", acc, min_steps=1, reduction=3), SweepBudget()))
    for name in ("a", "b"):
        _trial(store, "swrace", name, 950.0, [(1, 0.9)])
    loser = _trial(store, "swrace", "loser", 1010.0, [(1, 0.1)])
    read = store.get(loser)  # the pass read it before the user's cancel landed
    assert store.update_fields(loser, JobState.RUNNING, cancel_requested=True,
                               message="cancelled by ann")
    judged = EarlyStopper(store, clock=lambda: 1000.0).judge(read)
    assert judged.end_reason == "" and not judged.cancel_requested
    assert (store.get(loser).end_reason, store.get(loser).message) == ("", "cancelled by ann")
    # Nor does a preemption take a job being stopped, or overwrite its message.
    assert running_job(store.get(loser), 1020.0).preempting
    assert not store.update_fields(loser, JobState.RUNNING, unless_stopping=True,
                                   preempt_requested=True, message="preempted")
