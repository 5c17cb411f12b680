"""The tracker's background forecast: the live queue and the finished jobs read from a real
store, the predictions written back for status to read."""

from __future__ import annotations

from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.scheduler.snapshot import Feed
from trainyard.sim.forecast import Scheduling
from trainyard.store.db import Database
from trainyard.store.jobs import JobStore
from trainyard.store.predictions import PredictionStore
from trainyard.store.run_history import RunHistory
from trainyard.tracker.forecasts import ForecastConfig, Forecasts

NOW = 1_000_000.0


def ran(store: JobStore, spec: JobSpec, start: float, end: float | None,
        owner: str = "ann") -> str:
    """A job that started at `start` and, unless `end` is None, succeeded then."""
    job_id = store.create(spec, owner=owner, now=start - 5)[0]
    store.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                     now=start, attempt=1, executor="local", pool="local",
                     handle=f"h-{job_id}")
    store.mark_running(job_id, reason="started", now=start)
    if end is not None:
        store.transition(job_id, JobState.RUNNING, JobState.SUCCEEDED, reason="exit 0",
                         now=end)
    return job_id


def forecasts(db: Database, max_running: int = 1, **config: float) -> Forecasts:
    config.setdefault("arrivals_s", 0.0)
    return Forecasts(
        jobs=JobStore(db), predictions=PredictionStore(db), history=RunHistory(db),
        scheduling=lambda: Scheduling(None, max_running),
        pools={"local": PoolCapacity("local", max_jobs=max_running)}, executors_by_kind={},
        feed=Feed, clock=lambda: NOW, config=ForecastConfig(**config))


def test_a_refresh_learns_from_finished_jobs_and_writes_each_waiting_jobs_start(
        db: Database) -> None:
    store = JobStore(db)
    train = JobSpec(name="train", command="python train.py", labels={"algorithm": "mlp"})
    for i in range(4):  # the same user's algorithm ran 100 s each time
        ran(store, train, NOW - 5000 + i * 1000, NOW - 4900 + i * 1000)
    running = ran(store, train, NOW - 40, None)  # about 60 s to go
    first = store.create(train, owner="ann", now=NOW - 30)[0]
    second = store.create(train, owner="ann", now=NOW - 20)[0]
    refresh = forecasts(db).refresh()
    assert (refresh.waiting, refresh.active, refresh.history) == (2, 1, 4)
    stored = PredictionStore(db).many([first, second, running])
    assert set(stored) == {first, second}  # only waiting jobs have one
    one, two = stored[first], stored[second]
    assert one.as_of == NOW and not one.cannot_start
    assert one.p50 is not None and one.p90 is not None
    assert 60 <= one.p50 - NOW <= 90 and one.p90 >= one.p50
    # The second waits for the first's whole run of about 100 s more.
    assert two.p50 is not None and 150 <= two.p50 - NOW <= 220


def test_cancelled_jobs_teach_nothing_and_old_ones_are_forgotten(db: Database) -> None:
    store = JobStore(db)
    spec = JobSpec(name="train", command="true")
    cancelled = ran(store, spec, NOW - 500, None)
    store.transition(cancelled, JobState.RUNNING, JobState.CANCELLED, reason="asked", now=NOW)
    ran(store, spec, NOW - 10 * 86400, NOW - 10 * 86400 + 50)
    history = RunHistory(db)
    assert [row.held_s for row in history.finished(NOW - 30 * 86400, 100)] == [50.0]
    assert history.finished(NOW - 86400, 100) == []


def test_a_refresh_replaces_the_whole_set(db: Database) -> None:
    store = JobStore(db)
    job = store.create(JobSpec(name="a", command="true"), now=NOW)[0]
    forecasts(db).refresh()
    assert PredictionStore(db).get(job) is not None
    store.transition(job, JobState.WAITING, JobState.CANCELLED, reason="asked", now=NOW)
    forecasts(db).refresh()
    assert PredictionStore(db).get(job) is None


def test_expected_submits_wait_behind_and_get_no_prediction(db: Database) -> None:
    store = JobStore(db)
    spec = JobSpec(name="train", command="true")
    for i in range(3):  # the last hours brought a job an hour
        ran(store, spec, NOW - 3600 * (i + 1), NOW - 3600 * (i + 1) + 100)
    running = ran(store, spec, NOW - 40, None)
    waiting = store.create(spec, owner="ann", now=NOW - 10)[0]
    without = forecasts(db, arrivals_s=0.0).refresh()
    alone = PredictionStore(db).get(waiting)
    expecting = forecasts(db, arrivals_s=6 * 3600.0).refresh()
    assert expecting.waiting > without.waiting  # the pattern's submits joined the roll
    stored = PredictionStore(db).many([waiting, running])
    assert list(stored) == [waiting]
    with db.read() as conn:  # nothing but real jobs got a row
        from trainyard.store.schema import predicted_starts
        assert conn.execute(predicted_starts.select()).all()[0].job_id == waiting
    # Under FIFO they queue behind every real job: the waiting one starts as before.
    assert alone is not None and stored[waiting].p50 == alone.p50


def test_a_job_waiting_for_another_gets_no_prediction_and_takes_no_place(
        db: Database) -> None:
    from trainyard.domain.dependencies import Need, parse_dependency

    store = JobStore(db)
    train = JobSpec(name="train", command="python train.py")
    running = ran(store, train, NOW - 40, None)
    dependent = store.create(train, owner="ann", now=NOW - 30, needs=[
        Need(parse_dependency(running), JobState.RUNNING)])[0]
    after = store.create(train, owner="ann", now=NOW - 20)[0]
    refresh = forecasts(db).refresh()
    # Until its need is met it is not in the queue the forecast rolls forward: it could
    # not start before then, and it is not ahead of the job submitted after it.
    assert refresh.waiting == 1
    assert set(PredictionStore(db).many([dependent, after])) == {after}


def test_a_paused_sweeps_trials_get_no_prediction(db: Database) -> None:
    from trainyard.domain.sweep_control import SweepStatus
    from trainyard.store.sweeps import SweepStore

    store, sweeps = JobStore(db), SweepStore(db)
    trial = JobSpec(name="lr-1", command="python train.py")
    for sweep_id in ("swpaused", "swgoing"):
        sweeps.add(sweep_id, sweep_id, "ann", 0, NOW - 60, {})
    held = store.create(trial, owner="ann", now=NOW - 30, sweep_id="swpaused")[0]
    going = store.create(trial, owner="ann", now=NOW - 20, sweep_id="swgoing")[0]
    sweeps.set_status("swpaused", SweepStatus.PAUSED, "paused")
    refresh = forecasts(db).refresh()
    # It starts only when someone resumes its sweep; the other sweep's trial is not behind it.
    assert refresh.waiting == 1
    assert set(PredictionStore(db).many([held, going])) == {going}
    sweeps.set_status("swpaused", SweepStatus.OPEN, "")  # resumed
    assert forecasts(db).refresh().waiting == 2
