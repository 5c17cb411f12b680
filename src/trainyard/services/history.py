"""The service's own history for a replay: the finished jobs that ran, a page at a time, and
the policy in force, for admins. `trainyard history export` and `trainyard sim --from-store`
read it (store/history.py says which jobs count)."""

from __future__ import annotations

from dataclasses import dataclass

from trainyard.auth.policy import Access, Identity
from trainyard.domain.errors import InvalidArgument
from trainyard.services.guard import Guard
from trainyard.services.policy import PolicyService
from trainyard.store.history import FinishedJob, HistoryStore, Window

DEFAULT_PAGE = 1000
MAX_PAGE = 5000


@dataclass(frozen=True)
class PoolInForce:
    name: str
    executor: str
    cpus: float | None  # None: not counted
    memory_mb: int | None
    gpu_ids: tuple[str, ...]
    max_jobs: int


@dataclass(frozen=True)
class PolicyInForce:
    """What a replay needs of the policy the history ran under: the policy file's text
    (with its pools' capacity as the scheduler counts it now, which a cluster's engine may
    have filled in), or, without a file, FIFO's limit on running jobs and its pools, one per
    executor."""

    source: str  # the file; "" for FIFO
    text: str
    format: str  # "toml" or "yaml"; "" for FIFO
    max_running: int
    pools: tuple[PoolInForce, ...]
    admins: tuple[str, ...] = ()  # whom every queue takes jobs from, whatever its rules


@dataclass(frozen=True)
class HistoryPage:
    jobs: list[FinishedJob]
    next_token: str  # "" on the last page
    policy: PolicyInForce | None  # on the first page only
    window: Window | None  # likewise


@dataclass(frozen=True)
class HistoryService:
    store: HistoryStore
    policy: PolicyService
    guard: Guard

    def export(self, identity: Identity, since: float | None, page_size: int,
               page_token: str) -> HistoryPage:
        self.guard.require(identity, Access.ADMIN_READ, "ExportHistory")
        if page_size < 0 or page_size > MAX_PAGE:
            raise InvalidArgument("page_size", f"must be between 0 and {MAX_PAGE}")
        after = _after(page_token)
        limit = page_size or DEFAULT_PAGE
        jobs = self.store.page(since, after, limit + 1)  # one more: is there a next page?
        more = len(jobs) > limit
        jobs = jobs[:limit]
        token = str(jobs[-1].seq) if more else ""
        if page_token:
            return HistoryPage(jobs, token, None, None)
        return HistoryPage(jobs, token, self.in_force(), self.store.window(since))

    def in_force(self) -> PolicyInForce:
        view = self.policy.effective()
        pools = tuple(PoolInForce(name, pool.executor, pool.capacity.cpus,
                                  pool.capacity.memory_mb, pool.capacity.gpu_ids,
                                  pool.capacity.max_jobs)
                      for name, pool in view.policy.pools.items())
        text, fmt = self.policy.file_text if view.from_file else ("", "")
        return PolicyInForce(view.source if view.from_file else "", text, fmt,
                             view.policy.max_running, pools, tuple(sorted(view.policy.admins)))


def _after(page_token: str) -> int:
    if not page_token:
        return 0
    try:
        after = int(page_token)
    except ValueError:
        raise InvalidArgument("page_token", "is not a token a page of this export "
                              "returned") from None
    if after < 0:
        raise InvalidArgument("page_token", "is not a token a page of this export returned")
    return after
