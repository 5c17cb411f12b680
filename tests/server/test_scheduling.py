"""The tracker's scheduler follows the policy view: FIFO without a file, the queue policy
under one, rebuilt only when the view changes (a reload, or a change of the store's teams)."""

from __future__ import annotations

from pathlib import Path

from tests.services.conftest import ROOT, assemble
from tests.services.test_policy import POLICY
from trainyard.domain.spec import Resources
from trainyard.scheduler import FifoPolicy, Snapshot
from trainyard.scheduler.model import PendingJob
from trainyard.server.scheduling import ActivePolicy


def snapshot(*pending: PendingJob) -> Snapshot:
    return Snapshot(pending=list(pending), running=[], now=0.0)


def test_without_a_file_fifo_decides(tmp_path: Path) -> None:
    srv = assemble(tmp_path)
    try:
        active = ActivePolicy(srv.policy, 4)
        job = PendingJob("j1", "default", 0, 1, Resources(), owner="ann")
        decided = active.schedule(snapshot(job))
        assert decided.admit == FifoPolicy(4).schedule(snapshot(job)).admit == ("j1",)
        assert not active.orders_by_service
    finally:
        srv.stop(grace=0)


def test_a_store_team_change_is_seen_at_the_next_admission_pass(tmp_path: Path) -> None:
    srv = assemble(tmp_path, POLICY)
    try:
        active = ActivePolicy(srv.policy, 4)
        job = PendingJob("j1", "vision-q", 0, 1, Resources(1.0, 100, 0), kind="local",
                         owner="bob", team="vision")
        active.schedule(snapshot(job))
        before = active._queues
        assert before is not None and before.policy is srv.policy.for_scheduler()
        active.schedule(snapshot(job))
        assert active._queues is before  # an unchanged view keeps the pass's indexes
        srv.access.bootstrap("root")
        srv.access.create_user(ROOT, "bob", admin=False)
        srv.access.create_team(ROOT, "vision")
        srv.access.add_member(ROOT, "vision", "bob")
        decided = active.schedule(snapshot(job))
        after = active._queues
        assert after is not None and after is not before
        assert after.policy.teams_of("bob") == {"vision"}
        assert decided.admit == ("j1",)
    finally:
        srv.stop(grace=0)
