from dataclasses import replace

import pytest

from trainyard.domain.errors import InvalidArgument
from trainyard.domain.kinds import JobKind, kind_for
from trainyard.domain.policy import Policy, Pool, Queue, check_submission
from trainyard.domain.pools import PoolCapacity, allocate_gpus
from trainyard.domain.pools import check_placement as check_kind_placement
from trainyard.domain.spec import JobSpec, Resources

POOLS = {
    JobKind.LOCAL: PoolCapacity(JobKind.LOCAL, max_jobs=4),
    JobKind.DOCKER: PoolCapacity(JobKind.DOCKER, max_jobs=2, cpus=4, memory_mb=2048,
                              gpu_ids=("0", "1")),
}
def check_placement(spec: JobSpec, pools: dict[str, PoolCapacity]) -> None:
    """As a submit checks it: the job's kind from its image."""
    check_kind_placement(spec, kind_for(spec.image), pools)


IMAGE_JOB = JobSpec(name="c", image="trainyard/demo-trainer")


def test_jobs_that_some_pool_can_hold_are_placed() -> None:
    check_placement(JobSpec(name="p", command="true"), POOLS)
    check_placement(replace(IMAGE_JOB, resources=Resources(4, 2048, 2)), POOLS)
    check_placement(replace(IMAGE_JOB, command="train", workers=2,
                            resources=Resources(2, 1024, 1)), POOLS)  # exactly the pool
    three = PoolCapacity(JobKind.DOCKER, max_jobs=1, cpus=0.3)  # one job slot holds a gang
    check_placement(replace(IMAGE_JOB, command="t", workers=3, resources=Resources(cpus=0.1)),
                    {JobKind.DOCKER: three})


def test_under_a_policy_a_gang_no_pool_of_its_queue_holds_is_refused() -> None:
    small = PoolCapacity("small", max_jobs=4, cpus=2)
    policy = Policy(pools={"small": Pool(small)}, queues={"q": Queue("q", pools=("small",))})
    gang = JobSpec(name="g", command="train", queue="q", workers=3)
    with pytest.raises(InvalidArgument) as info:
        check_submission(policy, gang, "ann", kind_for(gang.image))
    assert info.value.field == "workers"
    assert info.value.problem.startswith("3 workers × 1 CPUs (resources.cpus) = 3 CPUs is more "
                                         "than the 2 CPUs of pool 'small'; no pool of queue 'q'")
    check_submission(policy, replace(gang, workers=2), "ann", kind_for(gang.image))


@pytest.mark.parametrize(("spec", "pools", "field", "words"), [
    (IMAGE_JOB, {JobKind.LOCAL: POOLS[JobKind.LOCAL]}, "image", "--docker"),
    (replace(IMAGE_JOB, resources=Resources(cpus=4.5)), POOLS, "resources.cpus",
     "4.5 is more than the 4 CPUs of pool 'docker'"),
    (replace(IMAGE_JOB, resources=Resources(memory_mb=4096)), POOLS, "resources.memory_mb",
     "4096 MiB is more than the 2048 MiB"),
    (replace(IMAGE_JOB, resources=Resources(gpus=3)), POOLS, "resources.gpus",
     "3 is more than the 2 GPUs"),
    (JobSpec(name="p", command="true", resources=Resources(gpus=1)), POOLS, "resources.gpus",
     "of pool 'local'"),
    # A gang needs all its workers' resources at once.
    (replace(IMAGE_JOB, command="train", workers=3, resources=Resources(cpus=2)), POOLS,
     "workers", "3 workers × 2 CPUs (resources.cpus) = 6 CPUs is more than the 4 CPUs of "
     "pool 'docker'"),
    (replace(IMAGE_JOB, command="train", workers=3, resources=Resources(memory_mb=1024)),
     POOLS, "workers", "3 workers × 1024 MiB (resources.memory_mb) = 3072 MiB is more than "
     "the 2048 MiB of pool 'docker'"),
    (replace(IMAGE_JOB, command="train", workers=2, resources=Resources(gpus=2)), POOLS,
     "workers", "2 workers × 2 GPUs (resources.gpus) = 4 GPUs is more than the 2 GPUs"),
    # One worker alone already too large: that is the field to fix.
    (replace(IMAGE_JOB, command="train", workers=2, resources=Resources(cpus=5)), POOLS,
     "resources.cpus", "5 is more than the 4 CPUs of pool 'docker'"),
])
def test_a_job_no_pool_could_run_is_refused_naming_the_field(
        spec: JobSpec, pools: dict[str, PoolCapacity], field: str, words: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        check_placement(spec, pools)
    assert info.value.field == field and words in info.value.problem


def test_gpus_are_allocated_in_declared_order_from_the_free_ones() -> None:
    pool = PoolCapacity("p", max_jobs=9, gpu_ids=("a", "b", "c"))
    assert allocate_gpus(pool, {"a"}, 2) == ("b", "c")
    assert allocate_gpus(pool, {"a", "b"}, 2) is None
    assert allocate_gpus(pool, set(), 0) == ()
