"""The one view of queue access: the policy file's or FIFO's queues merged with the store's
queue rules and teams, read by submit and by admission alike."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.services.conftest import ROOT, assemble, identity_of
from trainyard.domain.access import QueueAccess
from trainyard.domain.errors import FailedPrecondition, PermissionDenied
from trainyard.domain.kinds import JobKind
from trainyard.domain.policy import Policy, Pool, Queue, Team
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import JobSpec
from trainyard.services.policy import merged_policy

POLICY = """
max_running = 4

[pools.cpu]
cpus = 4
max_jobs = 4

[queues.vision-q]
pools = ["cpu"]
teams = ["vision"]

[queues.open]
pools = ["cpu"]

[teams.vision]
members = ["ann"]
[teams.vision.quota.cpu]
cpus = 2
"""

POOLS = {JobKind.LOCAL: PoolCapacity(JobKind.LOCAL, max_jobs=2)}
DECLARED = Policy(
    pools={"cpu": Pool(PoolCapacity("cpu", cpus=4.0, max_jobs=4))},
    queues={"vision-q": Queue("vision-q", pools=("cpu",), teams=frozenset({"vision"}))},
    teams={"vision": Team("vision", members=frozenset({"ann"}))})


def test_without_a_file_the_store_rules_are_the_queues_users_and_teams() -> None:
    rules = {"gpu": QueueAccess(frozenset({"zed"}), frozenset({"nlp"})),
             "default": QueueAccess(teams=frozenset({"vision"}))}
    view = merged_policy(None, rules, {"vision": frozenset({"bob"})}, POOLS, 3)
    assert view.max_running == 3 and set(view.pools) == {JobKind.LOCAL}
    assert view.queues["gpu"].access == rules["gpu"]
    assert view.queues["gpu"].pools == (JobKind.LOCAL,)
    assert view.queues["default"].access == rules["default"]
    assert view.teams_of("bob") == {"vision"} and view.teams_of("zed") == frozenset()


def test_under_a_file_its_rules_stand_and_team_members_are_merged() -> None:
    ignored = {"vision-q": QueueAccess(users=frozenset({"mallory"}))}
    view = merged_policy(DECLARED, ignored, {"vision": frozenset({"bob"}),
                                             "other": frozenset({"cat"})}, POOLS, 3)
    assert view.queues == DECLARED.queues and view.pools == DECLARED.pools
    assert view.teams["vision"].members == {"ann", "bob"}
    assert "other" not in view.teams  # the file names no such team: it plays no part
    unchanged = merged_policy(DECLARED, {}, {"vision": frozenset({"ann"})}, POOLS, 3)
    assert unchanged == replace(DECLARED, admins=frozenset({"local"}))
    assert merged_policy(unchanged, {}, {"vision": frozenset({"ann"})}, POOLS, 3,
                         frozenset({"local"})) is unchanged  # the store adds nothing


BOB = "bob"


def test_queues_open_to_users_or_their_teams() -> None:
    policy = merged_policy(None, {
        "team-q": QueueAccess(teams=frozenset({"vision"})),
        "user-q": QueueAccess(users=frozenset({"bob"})),
        "zed-q": QueueAccess(users=frozenset({"zed"})),
        "gpu": QueueAccess(frozenset({"zed"}), frozenset({"nlp"}))},
        {"vision": frozenset({BOB})}, POOLS, 1, admins=frozenset({"ann"}))
    policy.check_takes("any", BOB)
    policy.check_takes("team-q", BOB)
    policy.check_takes("user-q", BOB)
    policy.check_takes("zed-q", "ann")  # an admin
    policy.check_takes("zed-q", "local")  # the single-user identity
    with pytest.raises(PermissionDenied, match="not open to 'bob': it takes jobs from "
                                               "user 'zed', team 'nlp'"):
        policy.check_takes("gpu", BOB)
    with pytest.raises(PermissionDenied, match="not open to 'cat'"):
        policy.check_takes("zed-q", "cat")


def test_a_store_team_member_submits_to_a_file_queue_open_to_that_team(tmp_path: Path) -> None:
    srv = assemble(tmp_path, POLICY)
    try:
        access, jobs = srv.access, srv.service
        access.bootstrap("root")
        access.create_user(ROOT, "bob", admin=False)
        bob = identity_of(srv, access.create_token(ROOT, "bob", expires_in=0,
                                                   read_only=False).token)
        spec = JobSpec(name="t", command="true", queue="vision-q")
        with pytest.raises(PermissionDenied, match="it takes jobs from team 'vision'"):
            jobs.train(bob, spec)
        access.create_team(ROOT, "vision")
        access.add_member(ROOT, "vision", "bob")
        job_id, _ = jobs.train(bob, spec)  # seen at once: no wait for the cache
        assert srv.jobs.get(job_id).team == "vision"
        # The tracker's queue policy decides by the same view.
        current = srv.policy.for_scheduler()
        assert current is not None and current.teams_of("bob") == {"vision"}
        assert current.teams["vision"].quotas == srv.policy.declared.teams["vision"].quotas
    finally:
        srv.stop(grace=0)


def test_under_a_file_setting_queue_rules_is_refused(tmp_path: Path) -> None:
    srv = assemble(tmp_path, POLICY)
    try:
        srv.access.bootstrap("root")
        with pytest.raises(FailedPrecondition, match="queue access comes from the policy file"):
            srv.access.set_queue_access(ROOT, "open", ["root"], [])
    finally:
        srv.stop(grace=0)


def test_the_view_is_kept_until_the_store_changes(tmp_path: Path) -> None:
    srv = assemble(tmp_path)
    try:
        first = srv.policy.effective()
        assert not first.from_file and srv.policy.for_scheduler() is None
        srv.policy.changed()
        assert srv.policy.effective() is first  # read again, found equal: the same view
        srv.access.bootstrap("root")
        srv.access.set_queue_access(ROOT, "gpu", ["root"], [])
        changed = srv.policy.effective().policy
        assert changed.queues["gpu"].access == QueueAccess(users=frozenset({"root"}))
        srv.access.set_queue_access(ROOT, "gpu", [], [])  # open again
        assert "gpu" not in srv.policy.effective().policy.queues
    finally:
        srv.stop(grace=0)
