"""The admission pass, one pass at a time, on both dialects."""

from tests.tracker.passes import run_to_end, step
from trainyard.auth.policy import LOCAL
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.scheduler import Decisions, FifoPolicy, Snapshot
from trainyard.server.assembly import TrainyardServer


def test_one_slot_admits_the_oldest_and_explains_the_rest(stack: TrainyardServer) -> None:
    ids = [stack.service.train(LOCAL, JobSpec(name=f"j{i}", command="sleep 5"))[0]
           for i in range(3)]
    step(stack)
    states = [stack.jobs.get(i).state for i in ids]
    assert states == [JobState.RUNNING, JobState.WAITING, JobState.WAITING]
    second = stack.service.status(LOCAL, ids[1])
    assert second.queue_position == 1
    assert second.job.pending_code == ReasonCode.GLOBAL_CONCURRENCY_LIMIT
    assert "the only job slot is in use" in second.job.pending_message
    assert stack.service.status(LOCAL, ids[2]).queue_position == 2
    for job_id in ids:
        stack.service.cancel(LOCAL, job_id)
    assert run_to_end(stack, ids[0]) is JobState.CANCELLED


class CountingPolicy(FifoPolicy):
    def __init__(self, max_running: int) -> None:
        super().__init__(max_running)
        self.passes = 0

    def schedule(self, snapshot: Snapshot) -> Decisions:
        self.passes += 1
        return super().schedule(snapshot)


def test_submits_to_a_saturated_queue_are_explained_without_a_full_pass(
    stack: TrainyardServer,
) -> None:
    policy = CountingPolicy(stack.tracker.config.max_concurrent)
    stack.tracker.policy = policy
    first, _ = stack.service.train(LOCAL, JobSpec(name="first", command="sleep 30"))
    step(stack)
    assert policy.passes == 1 and stack.jobs.get(first).state is JobState.RUNNING
    later = [stack.service.train(LOCAL, JobSpec(name=f"later{i}", command="true"))[0]
             for i in range(3)]
    stack.tracker.run_once(reconcile=False)  # what a submit-only wake-up runs
    assert policy.passes == 1
    for job_id in later:
        job = stack.jobs.get(job_id)
        assert job.state is JobState.WAITING
        assert job.pending_code == ReasonCode.GLOBAL_CONCURRENCY_LIMIT
    stack.service.cancel(LOCAL, first)
    assert run_to_end(stack, first) is JobState.CANCELLED
    assert policy.passes > 1
    assert run_to_end(stack, later[0]) is JobState.SUCCEEDED


def test_a_job_cancelled_before_its_launch_is_not_launched(stack: TrainyardServer) -> None:
    job_id, _ = stack.service.train(LOCAL, JobSpec(name="gone", command="true"))
    job = stack.jobs.get(job_id)
    stack.service.cancel(LOCAL, job_id)
    assert not stack.tracker.admission.launch(job, (), "")
    assert stack.tracker.wait_for_launches()
    assert stack.jobs.get(job_id).state is JobState.CANCELLED and \
        stack.jobs.get(job_id).attempt == 0


def test_a_launch_records_its_attempt_pool_and_handle_first(stack: TrainyardServer) -> None:
    job_id, _ = stack.service.train(LOCAL, JobSpec(name="one", command="sleep 30"))
    assert stack.tracker.admission.launch(stack.jobs.get(job_id), ("0",), "")
    launching = next(e for e in stack.jobs.events(job_id) if e.to_state is JobState.LAUNCHING)
    assert launching.reason == "admitted to pool local"  # no pool chosen: its kind's
    assert stack.tracker.wait_for_launches()
    job = stack.jobs.get(job_id)
    assert (job.attempt, job.executor, job.pool, job.gpu_ids) == (1, "local", "local", ("0",))
    assert job.handle == stack.executors["local"].handle_for(job_id, 1)
    assert job.state is JobState.RUNNING
    stack.service.cancel(LOCAL, job_id)
    assert run_to_end(stack, job_id) is JobState.CANCELLED


class PreemptOnce:
    """Asks, on its first pass, that one job stop for another."""

    def __init__(self, victim: str) -> None:
        self.victim = victim
        self.passes = 0

    def schedule(self, snapshot: Snapshot) -> Decisions:
        self.passes += 1
        if self.passes == 1:
            return Decisions(admit=(), pending={}, preempt={self.victim: "for a test"})
        return FifoPolicy(4).schedule(snapshot)


def test_a_victim_is_asked_to_stop_with_why(stack: TrainyardServer) -> None:
    job_id, _ = stack.service.train(LOCAL, JobSpec(name="victim", command="sleep 30"))
    step(stack)
    assert stack.jobs.get(job_id).state is JobState.RUNNING
    newcomer, _ = stack.service.train(LOCAL, JobSpec(name="newcomer", command="true"))
    stack.tracker.policy = PreemptOnce(job_id)
    stack.tracker.admission.run()  # the admission pass alone: nothing is stopped yet
    asked = stack.jobs.get(job_id)
    assert asked.state is JobState.RUNNING
    assert asked.preempt_requested and asked.message == "for a test"
    assert stack.jobs.get(newcomer).state is JobState.WAITING
    stack.service.cancel(LOCAL, job_id)
    assert run_to_end(stack, job_id) is JobState.CANCELLED
    assert run_to_end(stack, newcomer) is JobState.SUCCEEDED
