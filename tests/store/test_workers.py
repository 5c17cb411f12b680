"""Multi-worker jobs in the store, on both dialects: the spec keeps its workers, admission
reads the whole gang's demand, and rows from before the column read as one worker."""

from alembic import command
from alembic.config import Config
from sqlalchemy import JSON, Column, MetaData, Table, insert

from trainyard.domain.spec import JobSpec, Resources
from trainyard.store.db import MIGRATIONS_DIR, Database, make_engine, migrate
from trainyard.store.jobs import JobStore


def test_a_gang_keeps_its_workers_and_waits_as_one_demand(db: Database) -> None:
    store = JobStore(db)
    gang = JobSpec(name="gang", command="train", workers=4,
                   resources=Resources(cpus=1.5, memory_mb=512, gpus=2))
    job_id, _ = store.create(gang)
    single, _ = store.create(JobSpec(name="one", command="train"))
    assert store.get(job_id).spec == gang
    assert store.get(single).spec.workers == 1
    queued = {job.id: job for job in store.queued()}
    assert queued[job_id].resources == Resources(cpus=6.0, memory_mb=2048, gpus=8)
    assert queued[single].resources == Resources()


def test_jobs_stored_before_workers_existed_read_as_one_worker(database_url: str) -> None:
    engine = make_engine(database_url)
    database = Database(engine)
    try:
        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "0006")
            old = Table("jobs", MetaData(), Column("hyperparameters", JSON),
                        Column("labels", JSON), autoload_with=conn)
            conn.execute(insert(old).values(
                id="old1", owner="", name="old", command="true", image="",
                hyperparameters={}, labels={}, cpus=2.0, memory_mb=100, gpus=0,
                queue="default", priority=0, state="WAITING", attempt=0, message="",
                cancel_requested=False, pending_code="", pending_message="", executor="",
                handle="", metrics_offset=0, malformed_metric_lines=0, submitted_at=1.0,
                updated_at=1.0))
        migrate(engine)
        store = JobStore(database)
        assert store.get("old1").spec.workers == 1
        assert [job.resources for job in store.queued()] == [Resources(2.0, 100, 0)]
    finally:
        database.close()
