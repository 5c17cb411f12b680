"""Submit, status, list, cancel and the queues overview, called directly: who sees and may
change which job, and what a refusal leaves behind."""

from __future__ import annotations

import threading

import pytest

from tests.services.conftest import World
from trainyard.domain.errors import FailedPrecondition, PermissionDenied
from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import JobState


def mia_job(world: World, final: bool = False) -> str:
    """A job owned by mia in her team's queue; with final, cancelled."""
    jobs = world.services.jobs
    job_id, _ = jobs.train(world.who["member"],
                           JobSpec(name="mia-job", command="sleep 60", queue="red-q"))
    if final:
        assert jobs.cancel(world.who["member"], job_id) is JobState.CANCELLED
    return job_id


def test_members_list_only_what_they_may_see(world: World) -> None:
    mine = mia_job(world, final=True)
    world.services.jobs.train(world.who["other_team"], JobSpec(name="otto-job", command="true"))

    def listed(caller: str) -> set[str]:
        records = world.services.jobs.list_page(world.who[caller], page_size=1000).records
        return {j.id for j in records}

    assert mine in listed("member") and mine in listed("admin")
    assert mine not in listed("other_team")
    owners = {world.server.jobs.get(j).owner for j in listed("other_team")}
    assert owners <= {"otto"}


def test_teammates_see_and_cancel_each_others_jobs(world: World) -> None:
    job_id = mia_job(world)
    jobs, teammate = world.services.jobs, world.who["teammate"]
    assert jobs.status(teammate, job_id).job.owner == "mia"
    jobs.cancel(teammate, job_id)
    assert world.server.jobs.get(job_id).state is JobState.CANCELLED
    with pytest.raises(PermissionDenied, match="may not see job"):
        jobs.status(world.who["other_team"], job_id)


def test_a_request_id_does_not_reach_another_users_job(world: World) -> None:
    jobs, spec = world.services.jobs, JobSpec(name="r", command="true")
    first, _ = jobs.train(world.who["member"], spec, client_request_id="shared-1")
    with pytest.raises(FailedPrecondition) as info:
        jobs.train(world.who["other_team"], spec, client_request_id="shared-1")
    assert first not in str(info.value)
    again, existing = jobs.train(world.who["member"], spec, client_request_id="shared-1")
    assert existing and again == first


def test_concurrent_retries_of_one_submit_make_one_job(world: World) -> None:
    """Without limits a submit does not look its request id up first: the id's unique
    index alone must send every racing retry to the one job."""
    jobs, spec = world.services.jobs, JobSpec(name="r", command="true")
    results: list[tuple[str, bool]] = []
    barrier = threading.Barrier(6)

    def submit() -> None:
        barrier.wait()
        results.append(jobs.train(world.who["member"], spec, client_request_id="race-1"))

    threads = [threading.Thread(target=submit) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({job_id for job_id, _ in results}) == 1 and len(results) == 6
    assert sorted(existing for _, existing in results) == [False] + [True] * 5


def test_a_queue_refusal_is_audited_and_stores_nothing(world: World) -> None:
    before = len(world.server.jobs.in_states([JobState.WAITING]))
    with pytest.raises(PermissionDenied, match="queue 'red-q' is not open to 'otto': it "
                                               "takes jobs from team 'red'"):
        world.services.jobs.train(world.who["other_team"],
                                  JobSpec(name="t", command="true", queue="red-q"))
    assert len(world.server.jobs.in_states([JobState.WAITING])) == before
    audit = world.services.access.list_audit(world.who["admin"], 10)
    assert any(e.actor == "otto" and e.action == "Train" and e.target == "red-q" and
               not e.allowed for e in audit)
    # Admins pass every queue's rules, and queues without rules are open.
    world.services.jobs.train(world.who["admin"],
                              JobSpec(name="t", command="true", queue="red-q"))
    world.services.jobs.train(world.who["other_team"],
                              JobSpec(name="t", command="true", queue="elsewhere"))


def test_a_sweep_with_one_refused_trial_stores_none(world: World) -> None:
    from trainyard.domain.sweep import Parameter

    before = len(world.server.jobs.in_states([JobState.WAITING]))
    template = JobSpec(name="sw", command="true", queue="red-q")
    with pytest.raises(PermissionDenied):
        world.services.sweeps.submit(world.who["other_team"], template,
                                     [Parameter("LR", ("1", "2"))], search="grid", trials=0,
                                     seed=0, max_parallel=0)
    assert len(world.server.jobs.in_states([JobState.WAITING])) == before
    sweep_id, job_ids = world.services.sweeps.submit(
        world.who["member"], template, [Parameter("LR", ("1", "2"))], search="grid",
        trials=0, seed=0, max_parallel=1)
    assert len(job_ids) == 2 and {world.server.jobs.get(j).sweep_id for j in job_ids} == \
        {sweep_id}


def test_the_queues_overview_is_the_one_view_with_what_runs(world: World) -> None:
    jobs = world.services.jobs
    gang = JobSpec(name="g", command="true", resources=Resources(0.5, 100, 0), workers=2)
    job_id, _ = jobs.train(world.who["member"], gang)
    # A job as the tracker would leave it while it runs (no tracker runs here).
    world.server.jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="test",
                                 executor="local", pool="local")
    view = jobs.queues(world.who["member"])
    assert view.source == "" and view.total_running == 1
    assert view.running == {"default": 1} and view.waiting == {}
    assert view.pools["local"].jobs == 1
    assert view.pools["local"].used == gang.total_resources == Resources(1.0, 200, 0)
    # Without a policy file, the store's queue rules are the queues' users and teams.
    assert view.policy.queues["red-q"].access.teams == {"red"}
    assert view.policy.teams_of("mia") == {"red"}
    assert set(view.policy.queues) == {"default", "red-q"}
