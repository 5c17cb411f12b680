"""Submit, status, list, cancel and the queues overview, called directly: who sees and may
change which job, and what a refusal leaves behind."""

from __future__ import annotations

import pytest

from tests.services.conftest import World
from trainyard.domain.errors import FailedPrecondition, PermissionDenied
from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import JobState


def mia_job(world: World, final: bool = False) -> str:
    """A job owned by mia in her team's queue; with final, cancelled."""
    jobs = world.services.jobs
    job_id, _ = jobs.train(JobSpec(name="mia-job", command="sleep 60", queue="red-q"),
                           identity=world.who["member"])
    if final:
        assert jobs.cancel(job_id, world.who["member"]) is JobState.CANCELLED
    return job_id


def test_members_list_only_what_they_may_see(world: World) -> None:
    mine = mia_job(world, final=True)
    world.services.jobs.train(JobSpec(name="otto-job", command="true"),
                              identity=world.who["other_team"])

    def listed(caller: str) -> set[str]:
        records, _ = world.services.jobs.list_jobs(page_size=1000, identity=world.who[caller])
        return {j.id for j in records}

    assert mine in listed("member") and mine in listed("admin")
    assert mine not in listed("other_team")
    owners = {world.server.jobs.get(j).owner for j in listed("other_team")}
    assert owners <= {"otto"}


def test_teammates_see_and_cancel_each_others_jobs(world: World) -> None:
    job_id = mia_job(world)
    jobs, teammate = world.services.jobs, world.who["teammate"]
    assert jobs.status(job_id, teammate).job.owner == "mia"
    jobs.cancel(job_id, teammate)
    assert world.server.jobs.get(job_id).state is JobState.CANCELLED
    with pytest.raises(PermissionDenied, match="may not see job"):
        jobs.status(job_id, world.who["other_team"])


def test_a_request_id_does_not_reach_another_users_job(world: World) -> None:
    jobs, spec = world.services.jobs, JobSpec(name="r", command="true")
    first, _ = jobs.train(spec, client_request_id="shared-1", identity=world.who["member"])
    with pytest.raises(FailedPrecondition) as info:
        jobs.train(spec, client_request_id="shared-1", identity=world.who["other_team"])
    assert first not in str(info.value)
    again, existing = jobs.train(spec, client_request_id="shared-1",
                                 identity=world.who["member"])
    assert existing and again == first


def test_a_queue_refusal_is_audited_and_stores_nothing(world: World) -> None:
    before = len(world.server.jobs.in_states([JobState.WAITING]))
    with pytest.raises(PermissionDenied, match="queue 'red-q' is not open to 'otto': it "
                                               "takes jobs from team 'red'"):
        world.services.jobs.train(JobSpec(name="t", command="true", queue="red-q"),
                                  identity=world.who["other_team"])
    assert len(world.server.jobs.in_states([JobState.WAITING])) == before
    audit = world.services.access.list_audit(10)
    assert any(e.actor == "otto" and e.action == "Train" and e.target == "red-q" and
               not e.allowed for e in audit)
    # Admins pass every queue's rules, and queues without rules are open.
    world.services.jobs.train(JobSpec(name="t", command="true", queue="red-q"),
                              identity=world.who["admin"])
    world.services.jobs.train(JobSpec(name="t", command="true", queue="elsewhere"),
                              identity=world.who["other_team"])


def test_a_sweep_with_one_refused_trial_stores_none(world: World) -> None:
    from trainyard.domain.sweep import Parameter

    before = len(world.server.jobs.in_states([JobState.WAITING]))
    template = JobSpec(name="sw", command="true", queue="red-q")
    with pytest.raises(PermissionDenied):
        world.services.sweeps.submit(template, [Parameter("LR", ("1", "2"))], search="grid",
                                     trials=0, seed=0, max_parallel=0,
                                     identity=world.who["other_team"])
    assert len(world.server.jobs.in_states([JobState.WAITING])) == before
    sweep_id, job_ids = world.services.sweeps.submit(
        template, [Parameter("LR", ("1", "2"))], search="grid", trials=0, seed=0,
        max_parallel=1, identity=world.who["member"])
    assert len(job_ids) == 2 and {world.server.jobs.get(j).sweep_id for j in job_ids} == \
        {sweep_id}


def test_the_queues_overview_is_the_one_view_with_what_runs(world: World) -> None:
    jobs = world.services.jobs
    gang = JobSpec(name="g", command="true", resources=Resources(0.5, 100, 0), workers=2)
    job_id, _ = jobs.train(gang, identity=world.who["member"])
    # A job as the tracker would leave it while it runs (no tracker runs here).
    world.server.jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="test",
                                 executor="local", pool="local")
    view = jobs.queues()
    assert view.source == "" and view.total_running == 1
    assert view.running == {"default": 1} and view.waiting == {}
    assert view.pools["local"].jobs == 1
    assert view.pools["local"].used == gang.total_resources == Resources(1.0, 200, 0)
    # Without a policy file, the store's queue rules are the queues' users and teams.
    assert view.policy.queues["red-q"].access.teams == {"red"}
    assert view.policy.teams_of("mia") == {"red"}
    assert set(view.policy.queues) == {"default", "red-q"}
