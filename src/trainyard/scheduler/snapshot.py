"""The scheduler's input, built one way for the live tracker and for the replay, so that the
two feed a policy alike by construction.

A pass sees each active job as a RunningJob (active_job), and what carries over from one
pass to the next as a Feed: each queue's decayed usage for fair turns, and the claims of
the last pass (Decisions.reclaiming). Pure: the caller brings the clock and the jobs, and
each step returns a new Feed."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from trainyard.domain.budgets import BudgetScope, BudgetUse
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import Resources
from trainyard.scheduler.fair_share import decayed_usage
from trainyard.scheduler.model import Decisions, PendingJob, RunningJob, Snapshot


def active_job(job_id: str, queue: str, resources: Resources, pool: str,
               gpu_ids: tuple[str, ...], team: str, started_at: float | None, now: float, *,
               preempting: bool = False, sweep: str = "", attained: float = 0.0,
               priority: int = 0, time_limit_s: float = 0.0) -> RunningJob:
    """A job that holds its allocation, as a pass sees it. One not started yet (`started_at`
    None: still launching) counts as started now, as far as its minimum runtime and the
    service it attains go. `attained`: the service of its ended runs (for the tracker,
    scheduler.attained.held_service of the seconds they held it)."""
    return RunningJob(job_id, queue, resources, pool, gpu_ids, team,
                      now if started_at is None else started_at, preempting, sweep,
                      attained=attained, priority=priority, time_limit_s=time_limit_s)


class Feed:
    """What one pass hands the next. Never changed: each step returns a new one."""

    __slots__ = ("usage", "usage_at", "reclaiming")

    def __init__(self, usage: Mapping[str, float] | None = None, usage_at: float | None = None,
                 reclaiming: Mapping[str, str] | None = None) -> None:
        self.usage: Mapping[str, float] = {} if usage is None else usage  # queue -> decayed
        self.usage_at = usage_at  # the time usage is as of; None: never accounted
        # The last pass's Decisions.reclaiming: what comes back is held for those jobs.
        self.reclaiming: Mapping[str, str] = {} if reclaiming is None else reclaiming

    def accounted(self, running: Iterable[RunningJob], now: float, half_life: float
                  ) -> Feed:
        """Usage decayed to `now`, with what `running` used since usage_at added (nothing
        the first time, nor for a clock that went back)."""
        since = 0.0 if self.usage_at is None else max(0.0, now - self.usage_at)
        return Feed(decayed_usage(self.usage, running, since, half_life), now, self.reclaiming)

    def snapshot(self, pending: Collection[PendingJob], running: Sequence[RunningJob],
                 now: float, *, pools: Mapping[str, PoolCapacity] | None = None,
                 unavailable: Mapping[str, str] | None = None,
                 sweep_limits: Mapping[str, int] | None = None,
                 sweep_titles: Mapping[str, str] | None = None,
                 budget_use: Mapping[BudgetScope, BudgetUse] | None = None) -> Snapshot:
        """What a pass at `now` is given: the waiting and running jobs, with the usage and
        the claims this feed carries."""
        return Snapshot(pending=pending, running=running, now=now,
                        pools={} if pools is None else pools,
                        unavailable={} if unavailable is None else unavailable,
                        usage=self.usage,
                        sweep_limits={} if sweep_limits is None else sweep_limits,
                        sweep_titles={} if sweep_titles is None else sweep_titles,
                        reclaiming=self.reclaiming, budget_use=budget_use)

    def after(self, decisions: Decisions) -> Feed:
        """What the next pass is handed once the policy decided."""
        if not decisions.reclaiming and not self.reclaiming:
            return self  # no claims before or now: the usual case, and nothing to hand on
        return Feed(self.usage, self.usage_at, decisions.reclaiming)
