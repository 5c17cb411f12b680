"""Runs, model aliases and dataset deletion in the store, on both dialects."""

import threading

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, select, text

from trainyard.domain.errors import NotFound
from trainyard.domain.runs import ModelRef, parse_threshold
from trainyard.domain.spec import DatasetRef, JobSpec
from trainyard.domain.states import JobState
from trainyard.store.datasets import DatasetStore
from trainyard.store.db import MIGRATIONS_DIR, Database, make_engine
from trainyard.store.jobs import JobStore
from trainyard.store.metrics import MetricStore
from trainyard.store.model_registry import ModelStore
from trainyard.store.records import DatasetRecord, MetricPoint
from trainyard.store.runs import RunFilter, RunStore
from trainyard.store.schema import run_final_metrics, runs

W, L, R, S, F, P = (JobState.WAITING, JobState.LAUNCHING, JobState.RUNNING,
                    JobState.SUCCEEDED, JobState.FAILED, JobState.PREEMPTED)
VERSION = "ab" * 32


def launch(store: JobStore, job_id: str, attempt: int, image_id: str = "") -> None:
    store.transition(job_id, W, L, reason="admitted", attempt=attempt, executor="local",
                     pool="local", handle=f"h-{job_id}-{attempt}", gpu_ids="0")
    if image_id:
        store.set_image_id(job_id, attempt, image_id)
    store.transition(job_id, L, R, reason="started", started_at=10.0)


def finished(db: Database, spec: JobSpec, metrics: dict[str, float] | None = None,
             state: JobState = S, owner: str = "ann", image_id: str = "") -> str:
    store = JobStore(db)
    job_id, _ = store.create(spec, owner=owner)
    launch(store, job_id, 1, image_id)
    if metrics:
        MetricStore(db).ingest(job_id, 1, from_offset=0, to_offset=1, malformed=0, points=[
            MetricPoint(1, {k: v / 2 for k, v in metrics.items()}),
            MetricPoint(2, metrics)])
    store.transition(job_id, R, state, reason="ended", exit_code=0 if state is S else 3,
                     message="done")
    return job_id


def test_runs_follow_their_jobs_transitions_attempt_by_attempt(db: Database) -> None:
    store, found = JobStore(db), RunStore(db)
    job_id, _ = store.create(JobSpec(name="p", command="true"), owner="ann")
    assert found.get(job_id) is None  # no run before its first launch
    launch(store, job_id, 1)
    first = found.get(job_id, 1)
    assert first is not None and first.state is R and first.gpu_ids == ("0",)
    assert first.started_at == 10.0 and first.ended_at is None
    store.transition(job_id, R, P, reason="preempted", preempt_requested=False)
    store.transition(job_id, P, W, reason="requeued")
    launch(store, job_id, 2)
    store.transition(job_id, R, S, reason="ok", exit_code=0, message="exited with code 0")
    one, two = found.get(job_id, 1), found.get(job_id)
    assert one is not None and two is not None
    assert (one.state, one.attempt, one.ended_at is not None) == (P, 1, True)
    assert (two.state, two.attempt, two.exit_code, two.message) == (S, 2, 0,
                                                                    "exited with code 0")
    assert [r.id for r in found.page(RunFilter(job_id=job_id), limit=10)[0]] == \
        [f"{job_id}-2", f"{job_id}-1"]


def test_a_jobs_time_in_ended_attempts_adds_up(db: Database) -> None:
    store = JobStore(db)
    job_id, _ = store.create(JobSpec(name="p", command="true"), owner="ann")
    launch(store, job_id, 1)  # started at 10
    assert store.get(job_id).held_s == 0.0  # the attempt still runs
    store.transition(job_id, R, P, reason="preempted", now=25.0, preempt_requested=False)
    assert store.get(job_id).held_s == 15.0
    assert store.queued() == [] and store.get(job_id).state is P
    store.transition(job_id, P, W, reason="requeued", now=26.0)
    assert store.queued()[0].held_s == 15.0  # what admission sees
    launch(store, job_id, 2)  # started at 10 again, by the helper's clock
    store.transition(job_id, R, S, reason="ended", now=12.5, exit_code=0, message="done")
    assert store.get(job_id).held_s == 17.5
    # An attempt that ended before it ran adds nothing, nor does a clock that went back.
    other, _ = store.create(JobSpec(name="q", command="true"), owner="ann")
    store.transition(other, W, L, reason="admitted", attempt=1, executor="local",
                     pool="local", handle="h", gpu_ids="")
    store.transition(other, L, JobState.FAILED, reason="no", now=30.0, exit_code=1,
                     message="launch failed")
    assert store.get(other).held_s == 0.0


def test_filters_sorting_and_paging(db: Database) -> None:
    ds = DatasetRef("digits", VERSION)
    a = finished(db, JobSpec(name="mlp-1", command="t", dataset=ds, labels={"team": "red"}),
                 {"accuracy": 0.95, "loss": 0.1})
    b = finished(db, JobSpec(name="mlp-2", command="t", dataset=ds), {"accuracy": 0.80})
    c = finished(db, JobSpec(name="svm", image="trainyard/x", labels={"algorithm": "mlp"}),
                 {"loss": 0.3}, state=F, owner="bob", image_id="sha256:" + "c" * 64)
    d = finished(db, JobSpec(name="mlp_x-1", command="t"))  # '_' is no wildcard
    found = RunStore(db)

    def ids(flt: RunFilter, **kw: object) -> list[str]:
        return [r.job.id for r in found.page(flt, limit=50, **kw)[0]]  # type: ignore[arg-type]

    assert ids(RunFilter()) == [d, c, b, a]  # newest first
    assert ids(RunFilter(dataset_name="digits")) == [b, a]
    assert ids(RunFilter(dataset_name="digits", dataset_version="abab")) == [b, a]
    assert ids(RunFilter(dataset_name="digits", dataset_version="ff")) == []
    assert ids(RunFilter(algorithm="mlp")) == [c, b, a]  # label, or the name's prefix
    assert ids(RunFilter(image="trainyard/x")) == [c]
    assert ids(RunFilter(image="c" * 12)) == [c] and ids(RunFilter(image="c" * 11)) == []
    assert ids(RunFilter(labels={"team": "red"})) == [a]
    assert ids(RunFilter(states=[F])) == [c]
    assert ids(RunFilter(owners=frozenset({"bob"}))) == [c]
    assert ids(RunFilter(thresholds=[parse_threshold("accuracy>=0.9")])) == [a]
    assert ids(RunFilter(thresholds=[parse_threshold("accuracy>0.5"),
                                     parse_threshold("loss<0.2")])) == [a]
    # Sorted by a metric's last value; runs without it come last, newest first.
    assert ids(RunFilter(), sort_metric="accuracy") == [b, a, d, c]
    assert ids(RunFilter(), sort_metric="accuracy", descending=True) == [a, b, d, c]
    page, more = found.page(RunFilter(), limit=3, sort_metric="loss")
    assert [r.job.id for r in page] == [a, c, d] and more
    page, more = found.page(RunFilter(), limit=3, offset=3, sort_metric="loss")
    assert [r.job.id for r in page] == [b] and not more
    final = found.final_metrics([(a, 1), (b, 1)])
    assert final[(a, 1)] == {"accuracy": (0.95, 2), "loss": (0.1, 2)}
    series, cut = found.series(a, 1)
    assert [(s, v) for s, v, _ in series["accuracy"]] == [(1, 0.475), (2, 0.95)] and not cut
    assert found.dataset_usage()[("digits", VERSION)] == [f"{a}-1", f"{b}-1"]


def test_a_metric_sort_reads_each_runs_last_value_page_by_page(db: Database) -> None:
    store, metrics, found = JobStore(db), MetricStore(db), RunStore(db)
    spec = JobSpec(name="m", command="t")

    def run_of(values: list[dict[str, float]], attempt: int = 1, job_id: str = "") -> str:
        """A run ingesting these points, one ingest each (the last of a key counts)."""
        job_id = job_id or store.create(spec, owner="ann")[0]
        launch(store, job_id, attempt)
        offset = store.get(job_id).metrics_offset
        for n, point in enumerate(values):
            assert metrics.ingest(job_id, attempt, from_offset=offset + n,
                                  to_offset=offset + n + 1, malformed=0,
                                  points=[MetricPoint(n, point)])
        return job_id

    rose = run_of([{"acc": 0.1}, {"acc": 0.7}])
    fell = run_of([{"acc": 0.9, "loss": 1.0}, {"loss": 0.5}, {"acc": 0.2}])
    tied = run_of([{"acc": 0.7}])  # ties rose: the newer run first
    none = run_of([{"loss": 0.3}])
    again = run_of([{"acc": 0.95}])
    store.requeue(again, preempted="preempted", requeued="requeued", pending=("", ""))
    run_of([{"loss": 0.1}], attempt=2, job_id=again)  # its second run has no acc
    bare = run_of([])
    by_value = [(rose, 1), (tied, 1), (fell, 1), (again, 1)]  # 0.7, 0.7, 0.2, 0.95
    ascending = [(fell, 1), (tied, 1), (rose, 1), (again, 1)]
    without = [(bare, 1), (again, 2), (none, 1)]  # newest first
    expected = {False: ascending + without,
                True: [(again, 1), (tied, 1), (rose, 1), (fell, 1)] + without}
    assert sorted(by_value) == sorted(ascending)
    for descending, order in expected.items():
        for size in (1, 2, 3, 10):
            for offset in range(len(order) + 1):
                page, more = found.page(RunFilter(), limit=size, offset=offset,
                                        sort_metric="acc", descending=descending)
                assert [(r.job.id, r.attempt) for r in page] == order[offset:offset + size]
                assert more == (offset + size < len(order))
    page, _ = found.page(RunFilter(thresholds=[parse_threshold("acc>=0.7")]), limit=9,
                         sort_metric="loss")
    assert [(r.job.id, r.attempt) for r in page] == [(again, 1), (tied, 1), (rose, 1)]
    assert found.final_metrics([(fell, 1), (again, 2)]) == {
        (fell, 1): {"acc": (0.2, 2), "loss": (0.5, 1)}, (again, 2): {"loss": (0.1, 0)}}


def migrations_on(conn: Connection) -> Config:
    """Alembic's configuration for upgrading the store on this connection step by step."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = conn
    return cfg


def test_the_migration_keeps_each_runs_last_value_of_the_points_before_it(
        database_url: str) -> None:
    engine = make_engine(database_url)
    with engine.begin() as conn:
        cfg = migrations_on(conn)
        command.upgrade(cfg, "0023")
        conn.execute(text(
            "INSERT INTO jobs (id, owner, name, command, image, hyperparameters, labels, cpus, "
            "memory_mb, gpus, queue, priority, state, attempt, message, cancel_requested, "
            "pending_code, pending_message, executor, handle, metrics_offset, "
            "malformed_metric_lines, submitted_at, updated_at) VALUES ('old', 'ann', 'old', "
            "'t', '', '{}', '{}', 1.0, 1, 0, 'default', 0, 'SUCCEEDED', 2, '', false, '', "
            "'', 'local', 'h', 0, 0, 1.0, 9.0)"))
        for attempt, step, key, value in ((1, 1, "acc", 0.5), (1, 2, "acc", 0.4),
                                          (2, 1, "acc", 0.8), (2, None, "loss", 0.3),
                                          (2, 2, "acc", 0.6)):
            conn.execute(text("INSERT INTO metrics (job_id, attempt, step, key, value, time) "
                              "VALUES ('old', :a, :s, :k, :v, 1.0)"),
                         {"a": attempt, "s": step, "k": key, "v": value})
        command.upgrade(cfg, "head")
        rows = conn.execute(select(run_final_metrics).order_by(
            run_final_metrics.c.attempt, run_final_metrics.c.key)).all()
    engine.dispose()
    assert [tuple(r) for r in rows] == [("old", 1, "acc", 0.4, 2), ("old", 2, "acc", 0.6, 2),
                                        ("old", 2, "loss", 0.3, None)]


def model_of(db: Database, name: str = "m") -> tuple[ModelStore, str]:
    job_id = finished(db, JobSpec(name=name, command="t"))
    models, job = ModelStore(db), JobStore(db).get(job_id)
    for i in range(2):
        models.add_version(name, job if i == 0 else JobStore(db).get(
            finished(db, JobSpec(name=name, command="t"))), content_hash=str(i) * 64,
            uri="file:///x", size_bytes=1, file_count=1)
    return models, name


def test_moving_an_alias_is_atomic_and_kept_in_its_history(db: Database) -> None:
    models, name = model_of(db)
    assert models.set_alias(name, "production", 1, "ann", now=1.0) is None
    assert models.set_alias(name, "production", 2, "bob", now=2.0) == 1
    assert models.aliases(name) == {"production": 2}
    with pytest.raises(NotFound):
        models.set_alias(name, "production", 7, "bob")  # no such version: nothing moves
    assert models.aliases(name) == {"production": 2}
    history = [(c.from_version, c.to_version, c.actor) for c in models.alias_history(name)]
    assert history == [(None, 1, "ann"), (1, 2, "bob")]
    assert models.resolve(ModelRef(name, alias="production")).version == 2
    assert models.resolve(ModelRef(name)).aliases == ("production",)
    with pytest.raises(NotFound):
        models.resolve(ModelRef(name, alias="staging"))


def test_concurrent_alias_moves_leave_one_consistent_history(db: Database) -> None:
    models, name = model_of(db, "race")
    barrier = threading.Barrier(6)

    def move(i: int) -> None:
        barrier.wait()
        models.set_alias(name, "live", 1 + i % 2, f"user{i}")

    threads = [threading.Thread(target=move, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    history = models.alias_history(name)
    assert len(history) == 6 and history[0].from_version is None
    for before, after in zip(history, history[1:], strict=False):
        assert after.from_version == before.to_version  # each move saw the one before
    assert models.aliases(name) == {"live": history[-1].to_version}


def test_a_dataset_version_that_jobs_name_is_not_deleted(db: Database) -> None:
    datasets = DatasetStore(db)
    record = DatasetRecord("digits", VERSION, 10, 1, "/x", 0.0)
    datasets.add(record)
    datasets.add(DatasetRecord("copy", VERSION, 10, 1, "/x", 0.0))  # same content
    used = finished(db, JobSpec(name="j", command="t", dataset=DatasetRef("digits", VERSION)))
    waiting, _ = JobStore(db).create(JobSpec(name="w", command="t",
                                             dataset=DatasetRef("digits", VERSION)))
    users, _ = datasets.delete_unreferenced("digits", VERSION)
    assert users == [(used, 1), (waiting, 0)]
    assert datasets.get("digits", VERSION) is not None
    assert datasets.delete_unreferenced("copy", VERSION) == ([], True)  # digits still has it
    assert datasets.get("copy", VERSION) is None


def test_the_migration_makes_runs_of_jobs_launched_before_it(database_url: str) -> None:
    engine = make_engine(database_url)
    columns = {"seq": 1, "id": "old", "owner": "ann", "name": "old", "command": "t",
               "image": "", "hyperparameters": "{}", "labels": "{}", "cpus": 1.0,
               "memory_mb": 1, "gpus": 0, "workers": 1, "queue": "default", "priority": 0,
               "state": "SUCCEEDED", "attempt": 2, "message": "ok", "exit_code": 0,
               "cancel_requested": False, "pending_code": "", "pending_message": "",
               "executor": "local", "handle": "h", "gpu_ids": "", "team": "", "pool": "local",
               "preempt_requested": False, "started_at": 5.0, "sweep_id": "",
               "metrics_offset": 0, "malformed_metric_lines": 0, "submitted_at": 1.0,
               "updated_at": 9.0}
    with engine.begin() as conn:
        cfg = migrations_on(conn)
        command.upgrade(cfg, "0008")
        conn.execute(text(f"INSERT INTO jobs ({', '.join(columns)}) VALUES "
                          f"({', '.join(':' + c for c in columns)})"), columns)
        command.upgrade(cfg, "head")
        row = conn.execute(select(runs)).one()
        held = conn.execute(text("SELECT held_s FROM jobs WHERE id = 'old'")).scalar_one()
    engine.dispose()
    assert (row.job_id, row.attempt, row.state, row.exit_code, row.ended_at) == \
        ("old", 2, "SUCCEEDED", 0, 9.0)
    assert held == row.ended_at - row.started_at  # 0010 counts the runs 0009 made
