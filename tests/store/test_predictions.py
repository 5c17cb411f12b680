"""Predicted starts in the store, on both dialects: the whole set replaced in one go, one
row or a page's rows read back, ten thousand rows written fast, and a fenced term's set
refused."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import insert

from trainyard.domain.prediction import PredictedStart
from trainyard.domain.spec import JobSpec
from trainyard.store.db import Database
from trainyard.store.jobs import JobStore
from trainyard.store.lease import Fenced, FencedDatabase, Lease
from trainyard.store.predictions import PredictionStore
from trainyard.store.schema import jobs

SOON = PredictedStart(as_of=1000.0, p50=3100.0, p90=4600.0, horizon_s=86400.0)
NEVER = PredictedStart(as_of=1000.0, cannot_start="queue gpu is closed to team nlp")
PAST_HORIZON = PredictedStart(as_of=1000.0, p50=2000.0, horizon_s=3600.0)


def waiting_jobs(db: Database, count: int) -> list[str]:
    """`count` waiting jobs, written in one statement (the store's create is one a call)."""
    ids = [f"j{n:06d}" for n in range(count)]
    with db.write() as conn:
        conn.execute(insert(jobs), [
            {"id": job_id, "name": job_id, "hyperparameters": {}, "labels": {}, "cpus": 1.0,
             "memory_mb": 512, "gpus": 0, "queue": "default", "priority": 0,
             "state": "WAITING", "submitted_at": 1.0, "updated_at": 1.0} for job_id in ids])
    return ids


def test_a_prediction_reads_back_as_written(db: Database) -> None:
    a, b, c = waiting_jobs(db, 3)
    store = PredictionStore(db)
    store.replace({a: SOON, b: NEVER, c: PAST_HORIZON})
    assert store.get(a) == SOON
    assert store.get(b) == NEVER
    assert store.get(c) == PAST_HORIZON
    assert store.get("j-none") is None
    assert store.many([a, b, "j-none", a]) == {a: SOON, b: NEVER}
    assert store.many([]) == {}


def test_replace_drops_the_jobs_left_out(db: Database) -> None:
    a, b = waiting_jobs(db, 2)
    store = PredictionStore(db)
    store.replace({a: SOON, b: NEVER})
    later = PredictedStart(as_of=2000.0, p50=2500.0, p90=2900.0)
    store.replace({b: later})
    assert store.get(a) is None  # it started, or left: no stale prediction stays
    assert store.get(b) == later
    store.replace({})
    assert store.many([a, b]) == {}


def test_a_failed_replace_keeps_the_set_before_it(db: Database) -> None:
    [a] = waiting_jobs(db, 1)
    store = PredictionStore(db)
    store.replace({a: SOON})
    with pytest.raises(Exception, match="(?i)foreign key"):
        store.replace({a: NEVER, "no-such-job": SOON})
    assert store.many([a, "no-such-job"]) == {a: SOON}


def test_eleven_thousand_predictions_are_written_and_read_whole(db: Database) -> None:
    # How long it takes is the benchmark's to say; here, that all of them come back.
    ids = waiting_jobs(db, 11_000)
    store = PredictionStore(db)
    predictions = {job_id: PredictedStart(as_of=1000.0, p50=1000.0 + n, p90=2000.0 + n,
                                          horizon_s=86400.0) for n, job_id in enumerate(ids)}
    store.replace(predictions)
    store.replace(predictions)  # a set replacing one as large
    page = ids[5000:6000]
    assert store.many(page) == {job_id: predictions[job_id] for job_id in page}
    assert store.many(ids) == predictions  # more than one statement's worth of ids


def test_a_fenced_terms_predictions_are_refused(pg: Database) -> None:
    [job_id] = waiting_jobs(pg, 1)
    lease = Lease(pg, "old", ttl=0.3)
    term = lease.acquire()
    assert term is not None
    old = PredictionStore(FencedDatabase(pg, lease, term))
    old.replace({job_id: SOON})  # while it leads: written
    time.sleep(0.5)
    assert Lease(pg, "new", ttl=30).acquire() is not None
    with pytest.raises(Fenced):
        old.replace({job_id: NEVER})
    assert PredictionStore(pg).get(job_id) == SOON


def test_a_job_created_by_the_store_takes_a_prediction(db: Database) -> None:
    job_id, _ = JobStore(db).create(JobSpec(name="j", command="true"))
    PredictionStore(db).replace({job_id: SOON})
    assert PredictionStore(db).get(job_id) == SOON
