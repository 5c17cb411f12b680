"""Predicted starts: the live queue rolled forward through the scheduler's own policy.

A forecast starts from what the tracker's pass sees (the running jobs with how long they
have run, the waiting jobs in their queues, the policy in force, the pools, the claims and
each queue's decayed usage) and replays it (sim.engine.Replay) with the same policy code:
the running jobs end when their drawn remaining time is up, each ending frees room, and
each pass admits what the policy admits. Every waiting job's start is recorded. It does so
`rolls` times, each with run times drawn afresh from the jobs' estimated distributions
(sim.estimates); a job's median over the rolls is its p50, the ninth tenth its p90.

A roll ends when every job has started, when the horizon is reached, or when nothing else
can happen: a job still waiting then cannot start under the policy as it stands (its queue
does not take it, no quota can ever hold it), and the policy's own reason says why.

Pure: the caller brings the snapshot and the estimates; nothing here reads the store or the
time of day (only, with a CPU budget, how much CPU the rolls have taken).
"""

from __future__ import annotations

import math
import random
import time
from bisect import insort
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from trainyard.domain import policy as cfg
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.prediction import PredictedStart
from trainyard.domain.reasons import ReasonCode
from trainyard.scheduler.backlog import queue_order
from trainyard.scheduler.fifo import FifoPolicy
from trainyard.scheduler.model import PendingJob, Policy, RunningJob, orders_by_service
from trainyard.scheduler.preemption import admissions_settle, reclaim_victim
from trainyard.scheduler.queues import QueuePolicy
from trainyard.scheduler.snapshot import Feed
from trainyard.sim.engine import Replay
from trainyard.sim.estimates import RunTimes
from trainyard.sim.policies import queue_policy_wake

DEFAULT_ROLLS = 10
MIN_ROLLS = 3  # a CPU budget never cuts a forecast to fewer
DEFAULT_HORIZON_S = 30 * 86400.0
# A pass sees the first WINDOW waiting jobs of each group of alike jobs (_Overflow): a pass
# over a whole long backlog costs its length.
DEFAULT_WINDOW = 64
MAX_REFILLS = 8  # passes at one time while whole windows start
# Events within this share of the time ahead of the forecast's start are taken in one pass:
# 2% of the wait is well inside what the run-time estimates can tell apart.
DEFAULT_RESOLUTION = 0.02
MAX_EVENTS = 200_000  # per roll: a bound on the work, whatever the queue
# Reasons that no ending of other jobs can lift: a job waiting for one of them when nothing
# else can happen cannot start.
_BLOCKED = frozenset({ReasonCode.QUEUE_ACCESS, ReasonCode.NO_POOL, ReasonCode.TEAM_QUOTA,
                      ReasonCode.POOL_UNAVAILABLE, ReasonCode.POOL_CAPACITY})


@dataclass(frozen=True)
class WaitingJob:
    job: PendingJob
    run_times: RunTimes
    held_s: float = 0.0  # seconds it already ran in earlier attempts
    arrives_at: float | None = None  # a job backing off joins the queue then


@dataclass(frozen=True)
class ActiveJob:
    run: RunningJob  # as the pass sees it
    job: PendingJob  # how it would wait again if preempted
    run_times: RunTimes
    elapsed_s: float  # seconds it has run in all, this attempt so far included


@dataclass(frozen=True)
class LiveQueue:
    """The live snapshot a forecast rolls forward."""

    now: float
    waiting: Sequence[WaitingJob]
    active: Sequence[ActiveJob]
    pools: Mapping[str, PoolCapacity]
    usage: Mapping[str, float] = field(default_factory=dict)
    reclaiming: Mapping[str, str] = field(default_factory=dict)
    unavailable: Mapping[str, str] = field(default_factory=dict)
    sweep_limits: Mapping[str, int] = field(default_factory=dict)
    sweep_titles: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Scheduling:
    """The policy in force: a declared one, or the server's FIFO under its running limit."""

    declared: cfg.Policy | None
    max_running: int = 4

    def replay(self, queue: LiveQueue) -> Replay:
        policy: Policy
        if self.declared is None:
            policy, wake, half_life = FifoPolicy(self.max_running), None, 3600.0
        else:
            policy = QueuePolicy(self.declared)
            wake = queue_policy_wake(self.declared)
            half_life = self.declared.fair_share_half_life_s
        replay = Replay(policy, queue.pools, 0, half_life=half_life,
                        fair_share=self.declared is not None, wake=wake,
                        by_service=orders_by_service(policy),
                        quiet_wakes=self.declared is not None,
                        reclaim_victim=None if self.declared is None else
                        reclaim_victim(self.declared),
                        admissions_settle=None if self.declared is None else
                        admissions_settle(self.declared),
                        unavailable=queue.unavailable, sweep_limits=queue.sweep_limits,
                        sweep_titles=queue.sweep_titles)
        replay.feed = Feed(queue.usage, queue.now, queue.reclaiming)
        return replay


def repeated(recent: Sequence[tuple[PendingJob, RunTimes]], now: float, window_s: float,
             first_seq: int) -> list[WaitingJob]:
    """What the next `window_s` is expected to bring: the jobs submitted in the last one,
    each again as long after `now` as it came after the window's start. They wait as new
    submits do (numbered from `first_seq`, after every real job), so the jobs they would
    go ahead of see them; they get no prediction themselves."""
    start = now - window_s
    out = []
    for index, (job, run_times) in enumerate(
            sorted((item for item in recent if item[0].submitted_at >= start),
                   key=lambda item: item[0].seq)):
        at = now + (job.submitted_at - start)
        out.append(WaitingJob(replace(job, job_id=f"{EXPECTED}{job.job_id}",
                                      seq=first_seq + index, submitted_at=at, attained=0.0),
                              run_times, arrives_at=at))
    return out


EXPECTED = "~"  # the id prefix of an expected submit: no real job's id has it


@dataclass(frozen=True)
class Forecast:
    predictions: dict[str, PredictedStart]
    rolls: int
    events: int  # over all rolls
    passes: int


def forecast(queue: LiveQueue, scheduling: Scheduling, *, rolls: int = DEFAULT_ROLLS,
             horizon_s: float = DEFAULT_HORIZON_S, window: int = DEFAULT_WINDOW,
             resolution: float = DEFAULT_RESOLUTION, seed: int = 0,
             cpu_budget_s: float | None = None,
             halt: Callable[[], bool] = lambda: False) -> Forecast:
    """Every waiting job's predicted start (see the module's text). With `cpu_budget_s`,
    rolls stop once this thread has spent that much CPU on them and MIN_ROLLS are done:
    a queue too long for all of them in time gets a coarser bound sooner. `halt` true stops
    them after the roll under way."""
    if rolls < 1:
        raise ValueError("a forecast needs at least one roll")
    began = time.thread_time()
    starts: dict[str, list[float]] = {w.job.job_id: [] for w in queue.waiting
                                      if not w.job.job_id.startswith(EXPECTED)}
    blocked: dict[str, str] = {}
    events = passes = 0
    done = 0
    for roll in range(rolls):
        if roll and halt() or cpu_budget_s is not None and roll >= MIN_ROLLS and \
                time.thread_time() - began >= cpu_budget_s:
            break  # halted (after one roll: a forecast always has one), or over budget
        done += 1
        rng = random.Random(seed * 1_000_003 + roll)  # each roll its own: see _roll's draws
        started, stuck, roll_events, roll_passes = _roll(queue, scheduling, rng, horizon_s,
                                                         window, resolution)
        events += roll_events
        passes += roll_passes
        for job_id, at in started.items():
            if job_id in starts:
                starts[job_id].append(at)
        for job_id, why in stuck.items():
            blocked.setdefault(job_id, why)
    predictions = {}
    for job_id, times in starts.items():
        times.sort()
        if len(times) * 2 <= done and job_id in blocked:
            predictions[job_id] = PredictedStart(queue.now, cannot_start=blocked[job_id],
                                                 horizon_s=horizon_s)
            continue
        # The bound's rank is that of a prediction interval: a start drawn as the rolls are
        # falls at or below the k-th of n rolls with chance k / (n + 1).
        predictions[job_id] = PredictedStart(
            queue.now, _rank(times, 0.5, done), _rank(times, 0.9 * (done + 1) / done, done),
            horizon_s=horizon_s)
    return Forecast(predictions, done, events, passes)


def _rank(times: Sequence[float], share: float, rolls: int) -> float | None:
    """The nearest-rank percentile over all rolls, those in which the job never started
    counting as later than any; None when it falls among them."""
    index = min(rolls, math.ceil(share * rolls)) - 1
    return times[index] if index < len(times) else None


def _roll(queue: LiveQueue, scheduling: Scheduling, rng: random.Random, horizon_s: float,
          window: int, resolution: float) -> tuple[dict[str, float], dict[str, str], int, int]:
    """One roll-forward: when each waiting job started, and why those that never can
    wait."""
    now = start = queue.now
    replay = scheduling.replay(queue)
    for active in queue.active:
        replay.resume(active.run, active.job,
                      active.run_times.draw_remaining(rng, active.elapsed_s), now,
                      team=active.run.team)
    arrivals: list[tuple[float, int, WaitingJob]] = []
    # Every job's draw made up front, real jobs first, so that one job's run time in a roll
    # does not depend on which others were expected or how far the roll got.
    draws = {w.job.job_id: _draw(w, rng) for w in
             sorted(queue.waiting, key=lambda w: (w.job.job_id.startswith(EXPECTED),
                                                  w.job.seq))}
    overflow = _Overflow(replay, draws, window)
    for waiting in sorted(queue.waiting, key=lambda w: queue_order(w.job)):
        if waiting.arrives_at is not None and waiting.arrives_at > now:
            arrivals.append((waiting.arrives_at, waiting.job.seq, waiting))
        else:
            overflow.add(waiting)
    arrivals.sort(key=lambda item: item[:2])
    horizon = now + horizon_s
    index, events = 0, 0
    # The roll is over once every job it predicts for has started.
    unstarted = {w.job.job_id for w in queue.waiting if not w.job.job_id.startswith(EXPECTED)}
    seen = 0
    _pass(replay, overflow, now)
    while events < MAX_EVENTS:
        firsts = replay.first_starts
        unstarted.difference_update(firsts[seen:])
        seen = len(firsts)
        if not unstarted or not (replay.backlog or index < len(arrivals)):
            break
        at = replay.next_event(now, arrivals[index][0] if index < len(arrivals) else None)
        if at is None or at > horizon:
            break
        # Far ahead, what happens within a small share of the time ahead is taken together.
        now = max(at, min(now + resolution * (now - start), horizon))
        events += 1
        replay.account_usage(now)
        replay.finish_due(now)
        while index < len(arrivals) and arrivals[index][0] <= now:
            overflow.add(arrivals[index][2])
            index += 1
        _pass(replay, overflow, now)
    started = {job_id: state.first_start for job_id, state in replay.states.items()
               if state.first_start is not None}
    stuck: dict[str, str] = {}
    if unstarted and index == len(arrivals) and not overflow and \
            replay.next_event(now, None) is None:
        for job in replay.backlog:
            reason = replay.last_pending.get(job.job_id)
            if reason is not None and reason.code in _BLOCKED:
                stuck[job.job_id] = reason.message
    return started, stuck, events, replay.passes


def _pass(replay: Replay, overflow: _Overflow, now: float) -> None:
    """The passes at one time, again while a group's whole window started in one."""
    for _ in range(MAX_REFILLS):
        overflow.top_up()
        replay.schedule(now)
        if not overflow.top_up():
            return
    replay.schedule(now)


class _Overflow:
    """The waiting jobs behind the first `window` of each group of alike jobs, in their
    queue's order. A group is the jobs of one queue, kind, team, sweep and request: the
    policy tells them apart by nothing else, so a job of a group starts only once those of
    its group ahead of it have (or all fit), and a pass need not see the others. A job
    joins the window as those ahead of it start; one that comes back behind the window
    (preempted, with the service it attained) leaves it again, keeping what it has left
    to run."""

    def __init__(self, replay: Replay, draws: Mapping[str, float], window: int) -> None:
        self.replay, self.draws, self.window = replay, draws, window
        # Each group's, last in line first, so the next is pop()ped: a job not yet in the
        # replay (a WaitingJob), or one that was (its PendingJob).
        self.groups: dict[_Group, list[tuple[_Key, WaitingJob | PendingJob]]] = \
            defaultdict(list)

    def add(self, waiting: WaitingJob) -> None:
        self._put(waiting.job, waiting)

    def _put(self, job: PendingJob, entry: WaitingJob | PendingJob) -> None:
        listed = self.groups[_group(job)]
        key = _reversed(queue_order(job))
        if not listed or listed[0][0] > key:
            listed.insert(0, (key, entry))  # the usual case: added in order, last in line
        else:
            insort(listed, (key, entry), key=_first)

    def top_up(self) -> bool:
        """Each group's window holds its first `window` jobs, and no more. True if a group
        whose window had emptied got jobs (a pass may then start more at once)."""
        replay = self.replay
        inside: dict[_Group, list[PendingJob]] = defaultdict(list)
        for waiting in replay.backlog.queues.values():
            for job in waiting:
                inside[_group(job)].append(job)  # in the queue's order
        refilled = False
        for jobs in inside.values():
            for job in jobs[self.window:]:
                replay.withdraw(job.job_id)
                self._put(job, job)
            del jobs[self.window:]
        for group, listed in self.groups.items():
            jobs = inside.get(group, [])
            refilled = refilled or (not jobs and bool(listed))
            room = self.window - len(jobs)
            while room > 0 and listed:
                self._enter(listed.pop()[1])
                room -= 1
            # A job that arrived behind the window but goes before its last changes places.
            while listed and jobs and listed[-1][0] > _reversed(queue_order(jobs[-1])):
                last = jobs.pop()
                self._enter(listed.pop()[1])
                replay.withdraw(last.job_id)
                self._put(last, last)
        return refilled

    def _enter(self, entry: WaitingJob | PendingJob) -> None:
        if isinstance(entry, WaitingJob):
            self.replay.submit(entry.job, self.draws[entry.job.job_id], team=entry.job.team)
        else:
            self.replay.rejoin(entry)

    def __bool__(self) -> bool:
        return any(self.groups.values())


_Group = tuple[str, str, str, float, int, int, str]


def _group(job: PendingJob) -> _Group:
    need = job.resources
    return (job.queue, job.kind, job.team, need.cpus, need.memory_mb, need.gpus, job.sweep)


_Key = tuple[int, ...]


def _first(item: tuple[_Key, object]) -> _Key:
    return item[0]


def _reversed(key: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(-part for part in key)


def _draw(waiting: WaitingJob, rng: random.Random) -> float:
    """What a waiting job will run in this roll: what is left, if it ran before."""
    if waiting.held_s:
        return waiting.run_times.draw_remaining(rng, waiting.held_s)
    return waiting.run_times.draw(rng)
