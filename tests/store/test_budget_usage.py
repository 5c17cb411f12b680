"""The budgets' usage in the store: each attempt that ran is written when it ends, a window
counts the part of each inside it and the running attempts up to now, and a reopened store
(a restart) reads the very same figures; on both dialects."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import select, text

from trainyard.domain.budgets import QUEUE, TEAM, BudgetScope, BudgetUse
from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.store.budget_usage import BudgetUsageStore
from trainyard.store.db import MIGRATIONS_DIR, Database, make_engine, open_database
from trainyard.store.jobs import JobStore
from trainyard.store.schema import budget_usage

W, L, R, S, P = (JobState.WAITING, JobState.LAUNCHING, JobState.RUNNING, JobState.SUCCEEDED,
                 JobState.PREEMPTED)
HOUR = 3600.0
NLP, TRAIN = BudgetScope(TEAM, "nlp"), BudgetScope(QUEUE, "train")


def submit(store: JobStore, gpus: int = 2, cpus: float = 4.0, workers: int = 1,
           team: str = "nlp", queue: str = "train") -> str:
    job_id, _ = store.create(JobSpec(name="j", command="true", queue=queue, workers=workers,
                                     resources=Resources(cpus=cpus, gpus=gpus)),
                             owner="ann", team=team)
    return job_id


def run(store: JobStore, job_id: str, attempt: int, start: float) -> None:
    store.transition(job_id, W, L, reason="admitted", now=start, attempt=attempt,
                     executor="local", pool="gpu", handle=f"h-{job_id}-{attempt}")
    store.mark_running(job_id, reason="started", now=start)


def test_an_ended_attempt_counts_its_part_inside_the_window(db: Database) -> None:
    store, usage = JobStore(db), BudgetUsageStore(db)
    job = submit(store)
    run(store, job, 1, start=1000.0)
    store.transition(job, R, S, reason="done", now=1000.0 + 2 * HOUR)
    periods = {NLP: 10 * HOUR, TRAIN: HOUR}
    now = 1000.0 + 3 * HOUR
    found = usage.used(periods, now)
    assert found[NLP] == BudgetUse(2 * 2 * HOUR, 4 * 2 * HOUR)  # all of it, 2 GPUs x 2 h
    assert found[TRAIN] == BudgetUse()  # ended before the last hour
    # Half an hour later, 10 h back no longer reaches its first half hour.
    later = usage.used(periods, now + 7.5 * HOUR)
    assert later[NLP].gpu_hours == pytest.approx(2 * 1.5)
    assert later[NLP].cpu_hours == pytest.approx(4 * 1.5)


def test_running_attempts_count_up_to_now_and_each_attempt_once(db: Database) -> None:
    store, usage = JobStore(db), BudgetUsageStore(db)
    gang = submit(store, gpus=1, cpus=1.0, workers=3)
    run(store, gang, 1, start=0.0)
    store.requeue(gang, preempted="stop", requeued="again", pending=("PREEMPTED", "x"),
                  now=HOUR)
    run(store, gang, 2, start=2 * HOUR)
    other_team = submit(store, gpus=4, team="vision")
    run(store, other_team, 1, start=0.0)
    launching = submit(store)
    store.transition(launching, W, L, reason="admitted", now=HOUR, attempt=1,
                     executor="local", pool="gpu", handle="h")
    found = usage.used({NLP: 100 * HOUR, TRAIN: 100 * HOUR}, 3 * HOUR)
    # The gang's first hour and its second attempt's hour so far, 3 GPUs each; nothing for
    # the job still launching; the other team's job counts for the queue alone.
    assert found[NLP].gpu_hours == pytest.approx(3 * 2)
    assert found[TRAIN].gpu_hours == pytest.approx(3 * 2 + 4 * 3)
    assert found[NLP].cpu_hours == pytest.approx(3 * 2)


def test_usage_is_kept_across_a_restart(database_url: str) -> None:
    db = open_database(database_url)
    store = JobStore(db)
    job = submit(store)
    run(store, job, 1, start=0.0)
    store.transition(job, R, S, reason="done", now=5 * HOUR)
    running = submit(store, gpus=1)
    run(store, running, 1, start=4 * HOUR)
    before = BudgetUsageStore(db).used({NLP: 24 * HOUR}, 6 * HOUR)
    db.close()
    reopened = open_database(database_url)
    try:
        after = BudgetUsageStore(reopened).used({NLP: 24 * HOUR}, 6 * HOUR)
    finally:
        reopened.close()
    assert after == before
    assert after[NLP].gpu_hours == pytest.approx(2 * 5 + 1 * 2)


def test_no_budget_reads_nothing(db: Database) -> None:
    assert BudgetUsageStore(db).used({}, 0.0) == {}


def test_the_migration_fills_in_the_attempts_that_ended_before_it(database_url: str) -> None:
    engine = make_engine(database_url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0018")
        conn.execute(text(
            "INSERT INTO jobs (seq, id, owner, name, command, image, hyperparameters, labels, "
            "cpus, memory_mb, gpus, workers, queue, priority, state, attempt, message, "
            "cancel_requested, pending_code, pending_message, executor, handle, gpu_ids, "
            "team, pool, preempt_requested, sweep_id, metrics_offset, "
            "malformed_metric_lines, submitted_at, updated_at) VALUES (1, 'old', 'ann', 'o', "
            "'t', '', '{}', '{}', 2.0, 1, 1, 2, 'train', 0, 'SUCCEEDED', 1, '', false, '', '', "
            "'local', 'h', '', 'nlp', 'gpu', false, '', 0, 0, 0.0, 9.0)"))
        conn.execute(text(
            "INSERT INTO runs (job_id, attempt, state, executor, pool, handle, gpu_ids, "
            "message, launched_at, started_at, ended_at) VALUES ('old', 1, 'SUCCEEDED', "
            "'local', 'gpu', 'h', '', '', 1.0, 2.0, 9.0)"))
        command.upgrade(cfg, "head")
        row = conn.execute(select(budget_usage)).one()
    engine.dispose()
    assert (row.job_id, row.attempt, row.team, row.queue, row.gpus, row.cpus, row.started_at,
            row.ended_at) == ("old", 1, "nlp", "train", 2, 4.0, 2.0, 9.0)
