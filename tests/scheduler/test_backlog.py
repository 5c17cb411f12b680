from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.factories import waiting
from trainyard.scheduler.backlog import Backlog, queue_order
from trainyard.scheduler.model import PendingJob, PendingReason, PendingReasons

job = waiting


def test_each_queue_is_kept_in_priority_then_submit_order() -> None:
    backlog = Backlog()
    for j in (job(1), job(2, "b"), job(3, priority=2), job(4), job(5, priority=2)):
        backlog.add(j)
    assert [j.job_id for j in backlog.queues["a"]] == ["j3", "j5", "j1", "j4"]
    assert [j.job_id for j in backlog.queues["b"]] == ["j2"]
    assert len(backlog) == 5 and "j4" in backlog


def test_removing_the_last_job_of_a_queue_drops_the_queue() -> None:
    backlog = Backlog.of([job(1), job(2, "b")])
    assert backlog.remove("j2") == job(2, "b")
    assert backlog.remove("j2") is None
    assert set(backlog.queues) == {"a"}


def test_adding_a_job_again_replaces_it() -> None:
    backlog = Backlog.of([job(1), job(2)])
    backlog.add(PendingJob("j1", "b", 5, 1))
    assert [j.job_id for j in backlog.queues["a"]] == ["j2"]
    assert backlog.get("j1") == PendingJob("j1", "b", 5, 1)


def test_the_heads_take_each_queue_in_turn_in_its_own_order() -> None:
    backlog = Backlog.of([job(1), job(2, "b"), job(3, priority=2), job(4), job(5, "b")])
    assert backlog.heads(3) == ["j3", "j2", "j1"]
    assert backlog.heads(10) == ["j3", "j2", "j1", "j5", "j4"]
    assert backlog.heads(0) == [] and Backlog().heads(2) == []


def test_two_jobs_of_one_id_are_refused() -> None:
    with pytest.raises(ValueError, match="share the id 'j1'"):
        Backlog.of([job(1), job(1, "b")])


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(-2, 2), st.booleans()),
                max_size=60), st.integers(0, 2**32))
def test_adds_and_removes_keep_what_grouping_at_once_gives(
        ops: list[tuple[str, int, bool]], seed: int) -> None:
    rng = random.Random(seed)
    backlog = Backlog()
    alive: dict[str, PendingJob] = {}
    for seq, (queue, priority, remove) in enumerate(ops):
        if remove and alive:
            victim = rng.choice(sorted(alive))
            backlog.remove(victim)
            del alive[victim]
        else:
            new = PendingJob(f"j{seq}", queue, priority, rng.randint(0, 1000) * 100 + seq)
            backlog.add(new)
            alive[new.job_id] = new
    expected = {q: sorted((j for j in alive.values() if j.queue == q), key=queue_order)
                for q in {j.queue for j in alive.values()}}
    assert {q: list(jobs) for q, jobs in backlog.queues.items()} == expected
    assert {j.job_id for j in backlog} == set(alive)


def test_pending_reasons_read_as_one_mapping() -> None:
    limit, quota = PendingReason("LIMIT", "full"), PendingReason("QUOTA", "used")
    reasons = PendingReasons({"j1": quota}, [([job(2), job(3)], limit), ([job(4)], quota)])
    assert len(reasons) == 4
    assert list(reasons) == ["j1", "j2", "j3", "j4"]
    assert dict(reasons.items()) == {"j1": quota, "j2": limit, "j3": limit, "j4": quota}
    assert reasons["j3"] is limit and reasons.get("j9") is None
    assert "j4" in reasons and "j9" not in reasons
