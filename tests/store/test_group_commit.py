"""Group commit on both dialects: batched writers, each answered after its own commit."""

import threading

import pytest
from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError

from trainyard.domain.spec import JobSpec
from trainyard.store.db import Database
from trainyard.store.jobs import JobStore
from trainyard.store.schema import dataset_versions, job_events, jobs


def test_concurrent_submits_are_all_stored_with_their_events(db: Database) -> None:
    store = JobStore(db)
    ids: list[str] = []
    barrier = threading.Barrier(16)

    def submit(i: int) -> None:
        barrier.wait()
        for j in range(10):
            ids.append(store.create(JobSpec(name=f"j{i}-{j}", command="true"))[0])

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 160
    with db.read() as conn:
        assert conn.execute(select(func.count()).select_from(jobs)).scalar_one() == 160
        assert conn.execute(select(func.count()).select_from(job_events)).scalar_one() == 160
    assert {store.get(i).spec.name for i in ids} == {f"j{i}-{j}" for i in range(16)
                                                      for j in range(10)}


def dataset_row(name: str) -> dict[str, object]:
    return {"name": name, "version": "v" * 64, "size_bytes": 1, "file_count": 1,
            "path": "/x", "created_at": 0.0}


def test_a_failing_item_does_not_fail_its_batch(db: Database) -> None:
    statement = insert(dataset_versions)
    results: dict[int, object] = {}
    barrier = threading.Barrier(9)

    def run(i: int, name: str) -> None:
        barrier.wait()
        try:
            db.group.execute([(statement, [dataset_row(name)])])
            results[i] = "ok"
        except IntegrityError as exc:
            results[i] = exc

    names = [f"d{i}" for i in range(8)] + ["d0"]  # d0 twice: one of them must fail
    threads = [threading.Thread(target=run, args=(i, n)) for i, n in enumerate(names)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with db.read() as conn:
        stored = conn.execute(select(dataset_versions.c.name)).scalars().all()
    assert sorted(stored) == [f"d{i}" for i in range(8)]
    assert [results[i] for i in range(1, 8)] == ["ok"] * 7
    assert sum(isinstance(r, IntegrityError) for r in results.values()) == 1


def test_errors_reach_the_caller_and_write_nothing(db: Database) -> None:
    statement = insert(dataset_versions)
    with pytest.raises(IntegrityError):
        db.group.execute([(statement, [dataset_row("a"), dataset_row("a")])])
    with db.read() as conn:
        assert conn.execute(select(func.count()).select_from(dataset_versions)).scalar_one() == 0
    db.group.execute([(statement, [dataset_row("b")])])
