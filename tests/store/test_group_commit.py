"""Group commit on both dialects: batched writers, each answered after its own commit."""

import threading

import pytest
from sqlalchemy import Connection, func, insert, select

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


def test_a_failing_item_does_not_fail_its_batch(db: Database) -> None:
    def add(name: str):  # type: ignore[no-untyped-def]
        def work(conn: Connection) -> str:
            conn.execute(insert(dataset_versions).values(
                name=name, version="v" * 64, size_bytes=1, file_count=1, path="/x",
                created_at=0.0))
            return name
        return work

    results: dict[str, object] = {}
    barrier = threading.Barrier(9)

    def run(name: str) -> None:
        barrier.wait()
        try:
            results[name] = db.group.run(add(name))
        except Exception as exc:
            results[name] = exc

    names = [f"d{i}" for i in range(8)] + ["d0"]  # d0 twice: one of them must fail
    threads = [threading.Thread(target=run, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with db.read() as conn:
        stored = conn.execute(select(dataset_versions.c.name)).scalars().all()
    assert sorted(stored) == [f"d{i}" for i in range(8)]
    assert all(results[f"d{i}"] == f"d{i}" for i in range(1, 8))


def test_errors_reach_the_caller(db: Database) -> None:
    def boom(conn: Connection) -> None:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        db.group.run(boom)
    assert db.group.run(lambda conn: 42) == 42
