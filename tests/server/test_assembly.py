"""The assembled server: the use cases, the tracker and the policy view wired together."""

from __future__ import annotations

from pathlib import Path

from tests.liveserver import live_server, wait_for
from tests.services.conftest import ROOT, identity_of
from tests.services.test_policy import POLICY
from trainyard.auth.policy import LOCAL
from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import JobState


def test_a_store_team_members_job_runs_in_a_file_queue_open_to_that_team(
        tmp_path: Path) -> None:
    with live_server(tmp_path, "", POLICY) as srv:
        access = srv.access
        access.bootstrap("root")
        access.create_user(ROOT, "bob", admin=False)
        access.create_team(ROOT, "vision")
        access.add_member(ROOT, "vision", "bob")
        bob = identity_of(srv, access.create_token(ROOT, "bob", expires_in=0,
                                                   read_only=False).token)
        job_id, _ = srv.service.train(bob, JobSpec(name="t", command="true", queue="vision-q",
                                                   resources=Resources(1.0, 64, 0)))
        wait_for(srv, job_id, {JobState.SUCCEEDED})
        assert srv.jobs.get(job_id).team == "vision"
        overview = srv.services.jobs.queues(LOCAL)
        assert overview.source.endswith("policy.toml")
        assert overview.policy.teams["vision"].members == {"ann", "bob"}
