"""A pass's accounting: what fits, and what admitting, holding, releasing and simulating the
end of running jobs do to the pools, the GPU ids and the teams' use."""

from __future__ import annotations

from functools import partial

from tests import factories
from trainyard.domain import policy as cfg
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import Resources
from trainyard.scheduler.accounting import Ledger, layout_of
from trainyard.scheduler.model import PendingJob, RunningJob, SharedReasons
from trainyard.scheduler.quotas import ZERO

POLICY = cfg.Policy(
    pools={"p": cfg.Pool(PoolCapacity("p", max_jobs=4, cpus=8.0, gpu_ids=("0", "1", "2", "3"))),
           "box": cfg.Pool(PoolCapacity("box", max_jobs=2), executor="docker")},
    queues={"a": cfg.Queue("a", pools=("p",))},
    teams={"A": cfg.Team("A", quotas={"p": cfg.Quota(gpus=2, borrow_gpus=1)}),
           "B": cfg.Team("B", quotas={"p": cfg.Quota(gpus=2)})})
ONE = Resources(1.0, 0, 1)
QUOTAS_OF_P = layout_of(POLICY)["p"][0]


def ledger(running: list[RunningJob] | None = None,
           unavailable: dict[str, str] | None = None) -> Ledger:
    return Ledger.of(POLICY, layout_of(POLICY), running or [], unavailable or {},
                     SharedReasons())


waiting = partial(factories.waiting, gpus=1, memory_mb=0)


def test_what_runs_is_counted_per_pool_team_and_queue() -> None:
    books = ledger([RunningJob("r1", "a", ONE, "p", ("1",), team="A"),
                    RunningJob("r2", "a", Resources(2.0, 0, 0), "p", team="B", preempting=True),
                    RunningJob("r3", "b", ONE, "gone", ("9",))])
    room = books.rooms["p"]
    assert (room.used, room.jobs, room.returning) == (Resources(3.0, 0, 1), 2,
                                                       Resources(2.0, 0, 0))
    assert books.running == 3 and dict(books.by_queue) == {"a": 2, "b": 1}
    assert books.gpus_taken == {"1", "9"}  # a pool the policy lacks still holds its GPUs
    assert books.team_use == {("A", "p"): ONE, ("B", "p"): Resources(2.0, 0, 0)}
    assert room.idle == Resources(8.0, 0, 0)  # the quotas promise all 4 GPUs, no CPUs


def test_admit_takes_room_gpu_ids_and_the_teams_use() -> None:
    books = ledger([RunningJob("r1", "a", ONE, "p", ("0",), team="A")])
    room, job = books.rooms["p"], waiting("w", team="A")
    assert books.fits(job, room) is None
    assert books.admit(job, room) == ("1",)  # the first free id, in the pool's order
    assert (room.used, room.jobs, books.running) == (Resources(2.0, 0, 2), 2, 2)
    assert books.team_use[("A", "p")] == Resources(2.0, 0, 2) and books.changes == 1
    # A's own 2 GPUs are in use; it may borrow one of B's idle ones, not two.
    assert books.fits(waiting("w2", team="A"), room) is None
    too_many = books.fits(waiting("w3", team="A", gpus=2), room)
    assert too_many is not None and too_many.code == ReasonCode.TEAM_QUOTA


def test_a_pool_that_is_full_or_away_says_why() -> None:
    books = ledger([RunningJob(f"r{i}", "a", ONE, "p", (str(i),)) for i in range(4)],
                   unavailable={"docker": "the Docker engine is away"})
    full = books.fits(waiting("w"), books.rooms["p"])
    assert full is not None and full.code == ReasonCode.POOL_CAPACITY
    assert "all 4 job slots of pool 'p' are in use" in full.message
    away = books.fits(PendingJob("d", "a", 0, 0, Resources(1.0, 0, 0), "docker"),
                      books.rooms["box"])
    assert away is not None and away.code == ReasonCode.POOL_UNAVAILABLE


def test_hold_keeps_room_from_others_and_release_gives_it_back() -> None:
    books = ledger([RunningJob(f"r{i}", "a", ONE, "p", (str(i),)) for i in range(2)])
    room, first, second = books.rooms["p"], waiting("w1", gpus=2), waiting("w2")
    books.hold(room, first)
    held = books.fits(second, room)
    assert held is not None and held.code == ReasonCode.RESERVED
    assert books.fits(second, room, claimant=True) is None  # a claimant passes a long hold
    books.hold(room, first, claim=True)
    claimed = books.fits(second, room, claimant=True)
    assert claimed is not None and claimed.code == ReasonCode.RESERVED  # not another claim
    books.release(room, first, claim=True)
    books.release(room, first)
    assert (room.held, room.held_jobs, room.claimed, room.claimed_jobs) == (ZERO, 0, ZERO, 0)
    assert room.held is ZERO  # exactly nothing, not a sum that rounds to it
    assert books.fits(second, room) is None
    # A long waiter's hold counts apart from changes: it only ever leaves less room.
    assert (books.changes, books.moves, books.freed) == (3, 4, 2)


def test_without_simulates_jobs_ending_and_restores_everything() -> None:
    running = [RunningJob("r0", "a", ONE, "p", ("0",), team="A"),
               RunningJob("r1", "a", ONE, "p", ("1",), team="A"),
               RunningJob("r2", "a", Resources(1.0, 0, 2), "p", ("2", "3"), team="B")]
    books = ledger(running)
    room, job = books.rooms["p"], waiting("w", team="A", gpus=2)
    assert QUOTAS_OF_P is not None
    books.sums(room, QUOTAS_OF_P)  # the borrowing sums are restored too
    before = (room.used, room.jobs, set(books.gpus_taken), dict(books.team_use),
              books.borrowing["p"].mark(["A", "B"]))
    assert books.fits(job, room) is not None
    with books.without(room, running[:2]):
        assert books.fits(job, room) is None
        assert books.gpus_taken == {"2", "3"} and books.team_use[("A", "p")] == ZERO
    after = (room.used, room.jobs, set(books.gpus_taken), dict(books.team_use),
             books.borrowing["p"].mark(["A", "B"]))
    assert after == before and books.changes == 0


def test_borrows_is_using_more_than_the_teams_own_quota() -> None:
    books = ledger([RunningJob("r0", "a", ONE, "p", ("0",), team="A")])
    room = books.rooms["p"]
    assert not books.borrows(waiting("w", team="A"), room)  # its second of two
    assert books.borrows(waiting("w", team="A", gpus=2), room)
    assert books.borrows(waiting("w", team="C"), room)  # no quota here: only ever borrows
    assert not books.borrows(waiting("w"), books.rooms["box"])  # no quotas in the pool
