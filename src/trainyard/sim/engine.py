"""Replay: the scheduler's own policies on a simulated clock and a simulated executor.

Event driven. The clock jumps to the next arrival, completion or wake-up (a time at which a
policy's decision may change by itself, such as a running job passing the minimum runtime
after which it may be preempted); every event at that time is applied, then one scheduling
pass runs, fed as the tracker feeds it: the waiting jobs in a Backlog kept between passes
(a job added when it arrives or is requeued, removed when admitted), the running jobs, the
clock, and each queue's decayed usage. When a pass preempts, the victims stop at once (the
simulated executor needs no grace period) and another pass runs at the same time, as the
tracker's next pass would once they stopped (at most MAX_PASSES passes at one time).

The simulated executor starts an admitted job at once. A job runs for its trace duration
in all, resuming where it stopped after a preemption (or, with `checkpoints`, from its last
checkpoint: sim/checkpoints.py), plus `restart_overhead` seconds for each restart.
"""

from __future__ import annotations

import heapq
import time
from bisect import bisect_left, insort
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import Resources
from trainyard.scheduler.attained import attained_by
from trainyard.scheduler.backlog import Backlog
from trainyard.scheduler.model import (
    Decisions,
    PendingJob,
    PendingReason,
    Policy,
    RunningJob,
    Snapshot,
)
from trainyard.scheduler.preemption import AdmissionsSettle, ReclaimVictim, service_group
from trainyard.scheduler.snapshot import Feed, active_job
from trainyard.scheduler.usage import team_use
from trainyard.sim.checkpoints import NO_CHECKPOINTS, Checkpointing

MAX_PASSES = 16  # at one time: a pass after each that preempted, at most this many in all
Key = tuple[float, ...]


class IndexedBacklog(Backlog):
    """A Backlog that also keeps its jobs sorted by one more key, for policies that take
    jobs in an order of their own (SRTF by remaining work, LAS by attained service). The
    key of a job must not change while it waits; it is computed when the job is added."""

    def __init__(self, key: Callable[[PendingJob], Key]) -> None:
        super().__init__()
        self._key = key
        self._order: list[tuple[Key, PendingJob]] = []
        self._keys: dict[str, Key] = {}

    def add(self, job: PendingJob) -> None:
        super().add(job)  # removes one of the same id first, through remove()
        key = self._key(job)
        self._keys[job.job_id] = key
        insort(self._order, (key, job), key=_first)

    def remove(self, job_id: str) -> PendingJob | None:
        job = super().remove(job_id)
        if job is not None:
            key = self._keys.pop(job_id)
            index = bisect_left(self._order, key, key=_first)
            del self._order[index]  # keys end with the unique seq
        return job

    def ordered(self) -> Sequence[tuple[Key, PendingJob]]:
        """(key, job) by key. Read only."""
        return self._order


def _first(item: tuple[Key, PendingJob]) -> Key:
    return item[0]


@dataclass
class ReplayJob:
    """One job's life in the replay."""

    pending: PendingJob  # as it waits: requeued the same after a preemption
    duration: float
    remaining: float  # seconds of running left, as of when it last stopped (or arrived)
    attained: float = 0.0  # service held before the current run (scheduler.attained.rate)
    first_start: float | None = None
    run_start: float = 0.0
    finish: float | None = None
    held: float = 0.0  # seconds it ran (held its GPUs), restart overheads included
    preemptions: int = 0
    lost: float = 0.0  # seconds of running its preemptions threw away (past checkpoints)
    epoch: int = 0  # bumped when it stops: its completion event is then stale
    team: str = ""  # whose share it counts in (the trace's team)


@dataclass(frozen=True)
class Outcome:
    """What the replay of one policy produced."""

    jobs: tuple[ReplayJob, ...]  # those that arrived, in submit order
    total_gpus: int
    teams: tuple[str, ...]  # the timeline's team order
    # After each event time's passes: (time, GPUs each team holds, GPUs each team asks for,
    # running and waiting), one entry each time either changes.
    timeline: tuple[tuple[float, tuple[int, ...], tuple[int, ...]], ...]
    preemptions: int
    passes: int
    events: int
    seconds: float  # wall-clock time the replay took
    unfinished: int  # jobs not finished: left waiting when nothing else could happen, or
    # still active when the replay stopped at its time limit
    completed: bool = True  # False: stopped at its wall-clock time limit
    until: float = 0.0  # the simulated time it reached


class Progress:
    """How far each job got, shared by the replay and the simulator-only policies, which may
    know what the service cannot: remaining work (the oracle) or attained service (LAS)."""

    def __init__(self) -> None:
        self.states: dict[str, ReplayJob] = {}
        self.running: dict[str, RunningJob] = {}

    def remaining(self, job_id: str, now: float) -> float:
        """Seconds of running it still needs (restart overheads included)."""
        state = self.states[job_id]
        if job_id in self.running:
            return state.remaining - (now - state.run_start)
        return state.remaining

    def attained(self, job_id: str, now: float) -> float:
        """The service it has held so far: GPU-seconds (CPU-seconds without GPUs)."""
        state = self.states[job_id]
        if job_id in self.running:
            return attained_by(state.attained, state.pending.resources, state.run_start, now)
        return state.attained


@dataclass
class Replay:
    """The replay's state and its steps: submit, snapshot, apply. run() drives them from
    the trace; tests drive them one at a time."""

    policy: Policy
    pools: Mapping[str, PoolCapacity]  # what the snapshot says of the pools
    total_gpus: int
    half_life: float = 3600.0
    fair_share: bool = True  # keep each queue's decayed usage for the snapshot
    restart_overhead: float = 0.0
    # What a preemption loses: nothing (the default), or the work since the last checkpoint.
    checkpoints: Checkpointing = NO_CHECKPOINTS
    # For a running job, the first time after the given one at which the policy might
    # decide otherwise about it with nothing else happening (None: never). Asked when the
    # job starts, and again at each such time while it runs.
    wake: Callable[[RunningJob, float], float | None] | None = None
    backlog_key: Callable[[PendingJob], Key] | None = None
    # Requeue jobs with the service they attained (see scheduler.model.orders_by_service).
    by_service: bool = False
    # Skip a wake-up at which QueuePolicy cannot decide otherwise (see may_matter).
    quiet_wakes: bool = False
    # For may_matter: whether a reclaim may stop the running job now (preemption's
    # reclaim_victim); None: always.
    reclaim_victim: ReclaimVictim | None = None
    # For schedule: whether a pass that admitted jobs, and did nothing else, leaves the next
    # pass nothing to decide (preemption's admissions_settle); None: never.
    admissions_settle: AdmissionsSettle | None = None
    teams: Sequence[str] = ()  # the teams whose GPUs the timeline follows
    # What the tracker's snapshot also carries: executors that launch nothing now, and the
    # limits of sweeps and pipelines (a forecast from the live queue hands them on).
    unavailable: Mapping[str, str] = field(default_factory=dict)
    sweep_limits: Mapping[str, int] = field(default_factory=dict)
    sweep_titles: Mapping[str, str] = field(default_factory=dict)
    progress: Progress = field(default_factory=Progress)
    backlog: Backlog = field(init=False)
    # Each queue's decayed usage and the last pass's claims, handed from pass to pass as
    # the tracker hands them.
    feed: Feed = field(init=False, default_factory=Feed)
    preemptions: int = field(init=False, default=0)
    passes: int = field(init=False, default=0)
    # The jobs that started for the first time, in order (a forecast stops once all it
    # predicts for have).
    first_starts: list[str] = field(init=False, default_factory=list)
    # Why each job left waiting by the last pass waits.
    last_pending: Mapping[str, PendingReason] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.backlog = Backlog() if self.backlog_key is None else \
            IndexedBacklog(self.backlog_key)
        self._completions: list[tuple[float, int, str, int]] = []  # (time, seq, id, epoch)
        self._wakes: list[tuple[float, int, str, int]] = []  # (time, seq, id, epoch)
        self.states = self.progress.states
        self.running = self.progress.running
        # The running jobs in submit order, kept so as they start and stop (with their seqs,
        # to find a job's place), as the store lists them.
        self._running_list: list[RunningJob] = []
        self._running_seqs: list[int] = []
        # What each team's running jobs hold of each pool, worked out when asked and kept
        # until a job starts or stops.
        self._team_use: dict[tuple[str, str], Resources] | None = None
        # Whether the last passes left nothing for another pass to decide (see schedule):
        # only then may a wake-up be passed over (may_matter).
        self._settled = False
        self._taken: set[str] = set()  # GPU ids held
        self._team_index = {team: i for i, team in enumerate(self.teams)}
        self._held = [0] * len(self.teams)
        self._demand = [0] * len(self.teams)
        # For may_matter: the waiting jobs by service group and level, and the GPUs the
        # waiting jobs of each team ask (for the least of them).
        self._waiting_levels: dict[str, Counter[int]] = defaultdict(Counter)
        self._waiting_gpus: dict[str, Counter[int]] = defaultdict(Counter)

    # --- the steps --------------------------------------------------------------------------

    def submit(self, job: PendingJob, duration: float, team: str = "") -> None:
        """A job arrives and waits. `team` is the one the timeline counts it for."""
        self.states[job.job_id] = ReplayJob(job, duration, duration, team=team)
        self._wait(job)
        self._team(team, demand=job.resources.gpus)

    def resume(self, run: RunningJob, job: PendingJob, remaining: float, now: float,
               team: str = "") -> None:
        """A job already running when the replay begins at `now` (a forecast from the live
        queue): it started at run.started_at, holds run.gpu_ids, and needs `remaining`
        more seconds. `job` is how it waits again if it is preempted."""
        elapsed = max(0.0, now - run.started_at)
        state = ReplayJob(job, elapsed + remaining, elapsed + remaining,
                          attained=run.attained, first_start=run.started_at,
                          run_start=run.started_at, team=team)
        self.states[run.job_id] = state
        self.running[run.job_id] = run
        self._listed(run, job.seq)
        self._taken.update(run.gpu_ids)
        heapq.heappush(self._completions, (now + remaining, job.seq, run.job_id, state.epoch))
        self._team(team, held=run.resources.gpus, demand=run.resources.gpus)
        self._ask_wake(run, now)

    def snapshot(self, now: float) -> Snapshot:
        """What the tracker would hand the policy now: the running jobs in submit order, as
        the store lists them (a policy breaks ties by their order)."""
        return self.feed.snapshot(self.backlog, self._running_list, now, pools=self.pools,
                                  unavailable=self.unavailable,
                                  sweep_limits=self.sweep_limits,
                                  sweep_titles=self.sweep_titles)

    def account_usage(self, now: float) -> None:
        """Decay each queue's usage to `now` and add what the jobs running since the last
        call used, as the tracker does before each pass (it passes every 0.5 s while jobs
        run, so the jobs it counts are those that ran in between). Without fair share the
        usage stays empty."""
        if self.fair_share:
            self.feed = self.feed.accounted(self.running.values(), now, self.half_life)

    def apply(self, decisions: Decisions, now: float) -> int:
        """Stop the jobs to preempt, then start the admitted ones. Returns the number
        preempted."""
        self.feed = self.feed.after(decisions)
        for job_id in decisions.preempt:
            self._stop(job_id, now)
        for job_id in decisions.admit:
            self._start(job_id, now, decisions.gpu_ids.get(job_id, ()),
                        decisions.pools.get(job_id, ""))
        return len(decisions.preempt)

    def schedule(self, now: float) -> None:
        """The passes at one time: one, and another after each that preempted."""
        self._settled = False
        for _ in range(MAX_PASSES):
            if not self.backlog:
                self._settled = True
                return
            self.passes += 1
            claims = self.feed.reclaiming
            decisions = self.policy.schedule(self.snapshot(now))
            self.last_pending = decisions.pending
            if not self.apply(decisions, now):
                # Nothing stopped or was claimed anew, no room was held for long waiters
                # (which the queues' turn order decides), and what started leaves the next
                # pass nothing to decide: a pass at a later time, handed the same but for
                # the clock, decides nothing either.
                if decisions.held_for_waiters:
                    self._settled = False
                elif decisions.admit:
                    self._settled = self._settles_after_admissions(decisions, claims)
                else:
                    self._settled = decisions.reclaiming == claims
                return

    def _settles_after_admissions(self, decisions: Decisions, claims: Mapping[str, str]
                                  ) -> bool:
        """Whether the pass's admissions leave the next pass nothing to decide. No job may
        have been kept out by held room alone (RESERVED): such a job tries no preemption,
        and once an admission has taken room that was not held, or a claim's room is its
        job's, it no longer fits and may preempt. No held room may have gone back to a
        pool either: a claim may end only by its job's start in the pool it claimed
        (elsewhere, the room it held, which a reclaim counted as taken, is free). And no
        admission may change which jobs a reclaim may stop (admissions_settle)."""
        if self.admissions_settle is None or decisions.held_out:
            return False
        admitted, reclaiming = decisions.admit, decisions.reclaiming
        started = set(admitted)
        if reclaiming != claims:
            if any(claims.get(job_id) != pool for job_id, pool in reclaiming.items()):
                return False
            for job_id, pool in claims.items():
                if job_id not in reclaiming and (job_id not in started or
                                                 decisions.pools.get(job_id) != pool):
                    return False  # a claim let go otherwise than by its job's start there
        runs = [self.running[job_id] for job_id in admitted]
        keys = {(run.team, run.pool) for run in runs}
        # Their teams' use before them, summed in the snapshot's order as the pass did.
        before = team_use([run for run in self._running_list if
                           (run.team, run.pool) in keys and run.job_id not in started])
        return self.admissions_settle(runs, before, self._current_team_use())

    def finish_due(self, now: float) -> int:
        """End the jobs whose work is done by `now`."""
        ended = 0
        heap = self._completions
        while heap and heap[0][0] <= now:
            _, _, job_id, epoch = heapq.heappop(heap)
            state = self.states[job_id]
            if state.epoch != epoch:
                continue  # preempted since: it was requeued
            run = self.running.pop(job_id)
            self._unlisted(state.pending.seq)
            self._release(run, state, now)
            state.remaining = 0.0
            state.finish = now
            self._team(state.team, demand=-run.resources.gpus)
            ended += 1
        return ended

    def next_event(self, now: float, arrival: float | None) -> float | None:
        """When something next happens after `now`: the next arrival (given), completion or
        wake-up that matters; None when nothing ever will."""
        completion = self.next_completion()
        others = [t for t in (arrival, completion) if t is not None]
        wake = self.next_wake(now, min(others, default=float("inf"))) \
            if self.backlog else None
        return min(others if wake is None else [*others, wake], default=None)

    def next_completion(self) -> float | None:
        heap = self._completions
        while heap and self.states[heap[0][2]].epoch != heap[0][3]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def next_wake(self, after: float, before: float = float("inf")) -> float | None:
        """The next wake-up after `after`. With quiet_wakes, those before `before` (the next
        other event, so nothing changes until them) that may_matter rules out are passed
        over, each asking its job's next one."""
        wakes = self._wakes
        while wakes:
            at, _, job_id, epoch = wakes[0]
            valid = self.states[job_id].epoch == epoch and job_id in self.running
            if at > after and valid and not (
                    self.quiet_wakes and at < before and
                    not self.may_matter(self.running[job_id], at)):
                return at
            heapq.heappop(wakes)
            if valid:
                self._ask_wake(self.running[job_id], max(at, after))
        return None

    def _ask_wake(self, run: RunningJob, after: float) -> None:
        if self.wake is None:
            return
        state = self.states[run.job_id]
        at = self.wake(run, after)
        if at is not None and after < at < state.run_start + state.remaining:
            heapq.heappush(self._wakes, (at, state.pending.seq, run.job_id, state.epoch))

    def held(self) -> tuple[int, ...]:
        return tuple(self._held)

    def demand(self) -> tuple[int, ...]:
        return tuple(self._demand)

    # --- the simulated executor -------------------------------------------------------------

    def _start(self, job_id: str, now: float, gpu_ids: tuple[str, ...], pool: str) -> None:
        job = self.withdraw(job_id)
        if job is None:
            raise RuntimeError(f"the policy admitted {job_id!r}, which is not waiting")
        if len(gpu_ids) != job.resources.gpus or not self._taken.isdisjoint(gpu_ids):
            raise RuntimeError(f"the policy gave {job_id!r} GPUs {gpu_ids} for "
                               f"{job.resources.gpus} asked, or some in use: "
                               f"{sorted(self._taken & set(gpu_ids))}")
        self._taken.update(gpu_ids)
        state = self.states[job_id]
        run = active_job(job.job_id, job.queue, job.resources, pool or job.kind, gpu_ids,
                         job.team, now, now, sweep=job.sweep, attained=state.attained,
                         priority=job.priority)
        self.running[job_id] = run
        self._listed(run, job.seq)
        state.run_start = now
        if state.first_start is None:
            state.first_start = now
            self.first_starts.append(job_id)
        heapq.heappush(self._completions, (now + state.remaining, job.seq, job_id,
                                           state.epoch))
        self._team(state.team, held=job.resources.gpus)
        self._ask_wake(run, now)

    def _stop(self, job_id: str, now: float) -> None:
        run = self.running.pop(job_id, None)
        if run is None:
            raise RuntimeError(f"the policy preempted {job_id!r}, which is not running")
        state = self.states[job_id]
        self._unlisted(state.pending.seq)
        self._release(run, state, now)
        ran = now - state.run_start
        lost = self.checkpoints.lost(ran, state.pending.queue)
        state.lost += lost
        state.remaining = max(0.0, state.remaining - (ran - lost)) + self.restart_overhead
        state.epoch += 1
        state.preemptions += 1
        self.preemptions += 1
        # Its submit order and time, as the store keeps them, and the service it attained.
        if self.by_service:
            state.pending = replace(state.pending, attained=state.attained)
        self._wait(state.pending)

    def _listed(self, run: RunningJob, seq: int) -> None:
        index = bisect_left(self._running_seqs, seq)
        self._running_seqs.insert(index, seq)
        self._running_list.insert(index, run)
        self._team_use = None

    def _unlisted(self, seq: int) -> None:
        index = bisect_left(self._running_seqs, seq)
        del self._running_seqs[index]
        del self._running_list[index]
        self._team_use = None

    def withdraw(self, job_id: str) -> PendingJob | None:
        """Take a waiting job out of the backlog, keeping what it has left to run; rejoin()
        puts it back (a forecast keeps the passes to each queue's first jobs)."""
        job = self.backlog.remove(job_id)
        if job is not None:
            self._settled = False
            self._waiting_levels[service_group(job)][job.service_level] -= 1
            gpus = self._waiting_gpus[job.team]
            gpus[job.resources.gpus] -= 1
            if not gpus[job.resources.gpus]:
                del gpus[job.resources.gpus]
        return job

    def rejoin(self, job: PendingJob) -> None:
        self._wait(job)

    def _wait(self, job: PendingJob) -> None:
        self._settled = False  # a pass has not seen the backlog as it is now
        self.backlog.add(job)
        self._waiting_levels[service_group(job)][job.service_level] += 1
        self._waiting_gpus[job.team][job.resources.gpus] += 1

    def may_matter(self, run: RunningJob, at: float) -> bool:
        """Whether QueuePolicy might decide otherwise about the running job at its wake-up,
        with nothing else happening: only if a reclaim may stop the run (it may now be
        preempted to take quota back: its team holds more than it owns in the run's pool, or
        owns nothing there, while a job of another team waits that fits within its own
        team's quota there), or a job of its service group waits at a lower level than the
        run has then (it may now be preempted for service). Nothing else a pass looks at
        changes with time alone in a way that starts or stops a job: what cannot start now
        could not at the last pass either, and which running jobs a reclaim may stop, and
        for whom, changes only as jobs start, stop and arrive. That holds once the last
        passes settled (schedule): a pass that started jobs may leave the next one more to
        decide (the jobs it admitted after a job's turn may give that job a reclaim, unless
        admissions_settle says not), and one that held room for long waiters may decide
        otherwise once fair share puts the queues' turns in another order (a job whose turn
        came after the hold then comes before it)."""
        if not self._settled:
            return True
        if self._reclaim_may_stop(run):
            return True
        levels = self._waiting_levels.get(service_group(run))
        if not levels:
            return False
        now_level = run.service_level(at)
        return any(count > 0 and waiting < now_level for waiting, count in levels.items())

    def _reclaim_may_stop(self, run: RunningJob) -> bool:
        if self.reclaim_victim is None:
            return True  # nothing known of the quotas: any run may be
        # Of each team's waiting jobs, no more than the least asks: no CPUs or memory, and
        # the fewest GPUs.
        least = {team: Resources(0.0, 0, min(gpus))
                 for team, gpus in self._waiting_gpus.items() if gpus}
        return self.reclaim_victim(run, self._current_team_use(), least)

    def _current_team_use(self) -> dict[tuple[str, str], Resources]:
        """What each team's running jobs hold of each pool now, in the snapshot's order,
        as the pass adds it up; kept until the running jobs change."""
        if self._team_use is None:
            self._team_use = team_use(self._running_list)
        return self._team_use

    def _release(self, run: RunningJob, state: ReplayJob, now: float) -> None:
        ran = now - state.run_start
        state.held += ran
        state.attained = attained_by(state.attained, run.resources, state.run_start, now)
        self._taken.difference_update(run.gpu_ids)
        self._team(state.team, held=-run.resources.gpus)

    def _team(self, team: str, held: int = 0, demand: int = 0) -> None:
        index = self._team_index.get(team)
        if index is not None:
            self._held[index] += held
            self._demand[index] += demand

    # --- the whole trace --------------------------------------------------------------------

    def run(self, jobs: Sequence[PendingJob], durations: Sequence[float],
            teams: Sequence[str], time_limit: float = 0.0,
            after_event: Callable[[float], None] | None = None) -> Outcome:
        """Replay jobs (in submit order, each with its duration and team) to the end, or
        until `time_limit` seconds of wall-clock time have passed (0: no limit).
        `after_event` is told each event's time once its passes are done (a benchmark
        looks at the queue then)."""
        started = time.perf_counter()
        deadline = started + time_limit if time_limit > 0 else float("inf")
        completed = True
        timeline: list[tuple[float, tuple[int, ...], tuple[int, ...]]] = []
        index, count, events = 0, len(jobs), 0
        last: tuple[tuple[int, ...], tuple[int, ...]] | None = None
        now = jobs[0].submitted_at if jobs else 0.0
        while True:
            arrival = jobs[index].submitted_at if index < count else None
            at = self.next_event(now, arrival)
            if at is None:
                break
            if events % 64 == 0 and time.perf_counter() > deadline:
                completed = False
                break
            now = at
            events += 1
            self.account_usage(now)
            self.finish_due(now)
            while index < count and jobs[index].submitted_at <= now:
                self.submit(jobs[index], durations[index], teams[index])
                index += 1
            self.schedule(now)
            if after_event is not None:
                after_event(now)
            state = (self.held(), self.demand())
            if state != last:
                timeline.append((now, *state))
                last = state
        return Outcome(
            jobs=tuple(self.states[job.job_id] for job in jobs[:index]),
            total_gpus=self.total_gpus,
            teams=tuple(self.teams), timeline=tuple(timeline), preemptions=self.preemptions,
            passes=self.passes, events=events, seconds=time.perf_counter() - started,
            unfinished=sum(1 for job in jobs if job.job_id in self.states and
                           self.states[job.job_id].finish is None) + len(jobs) - index,
            completed=completed, until=now)

