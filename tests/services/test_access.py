"""Users, teams and tokens as the access use cases keep them, and the offline first admin."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.services.conftest import ROOT, World, assemble, identity_of
from trainyard.auth.policy import Identity
from trainyard.domain.errors import InvalidArgument, PermissionDenied
from trainyard.domain.spec import JobSpec


def test_team_changes_reach_identities_and_the_policy_view(world: World) -> None:
    access = world.services.access
    access.create_user(ROOT, "newcomer", admin=False)
    access.add_member(ROOT, "blue", "newcomer")
    assert world.services.policy.effective().policy.teams_of("newcomer") == {"blue"}
    token = access.create_token(ROOT, "newcomer", expires_in=0, read_only=True).token
    who = identity_of(world.server, token)
    assert who.teams == {"blue"} and who.teammates == {"otto"} and who.read_only
    with pytest.raises(InvalidArgument, match="is reserved"):
        access.create_user(ROOT, "local", admin=False)


TEAM_POLICY = """
[pools.cpu]
cpus = 4
max_jobs = 4

[queues.vision-q]
pools = ["cpu"]
teams = ["vision"]

[teams.vision]
members = [{members}]
[teams.vision.quota.cpu]
cpus = 2
"""


def test_members_of_a_policy_file_team_see_each_others_jobs(tmp_path: Path) -> None:
    """Teammates come from the same merged view as queue access and quotas: the file's
    members, the store's members of the file's teams, and the store's own teams."""
    srv = assemble(tmp_path, TEAM_POLICY.format(members='"ann", "cal"'))
    try:
        access, jobs = srv.access, srv.service
        access.bootstrap("root")
        for name in ("ann", "cal", "bob", "dan"):
            access.create_user(ROOT, name, admin=False)
        access.create_team(ROOT, "vision")
        access.add_member(ROOT, "vision", "bob")  # a store member of the file's team

        def who(user: str) -> Identity:
            return identity_of(srv, access.create_token(ROOT, user, expires_in=0,
                                                        read_only=False).token)

        ann, cal, bob, dan = who("ann"), who("cal"), who("bob"), who("dan")
        assert ann.teams == {"vision"} and ann.teammates == {"cal", "bob"}
        assert bob.teams == {"vision"} and bob.teammates == {"ann", "cal"}
        assert dan.teams == frozenset() and dan.teammates == frozenset()
        spec = JobSpec(name="t", command="true", queue="vision-q")
        job_id, _ = jobs.train(cal, spec)
        assert srv.jobs.get(job_id).team == "vision"  # the quota it draws on
        for teammate in (ann, bob):
            assert jobs.status(teammate, job_id).job.owner == "cal"
            listed = jobs.list_page(teammate).records
            assert job_id in {j.id for j in listed}
        with pytest.raises(PermissionDenied, match="may not see job"):
            jobs.status(dan, job_id)
        # The file changes: cal leaves the team, and no longer shares ann's jobs.
        (tmp_path / "policy.toml").write_text(TEAM_POLICY.format(members='"ann"'))
        srv.policy.reload()
        cal = who("cal")
        assert cal.teams == frozenset() and cal.teammates == frozenset()
        assert who("ann").teammates == {"bob"}
        mine, _ = jobs.train(ann, spec)
        with pytest.raises(PermissionDenied, match="may not see job"):
            jobs.status(cal, mine)
    finally:
        srv.stop(grace=0)
