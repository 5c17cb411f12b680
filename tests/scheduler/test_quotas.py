"""Team quotas and borrowing: a team uses what it owns, then borrows what others leave
idle, within its limit; the running sums decide as adding up team by team does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.scheduler.builders import job, quota_policy, run
from trainyard.domain.policy import Policy, Pool, Queue, Quota, Team
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import Resources
from trainyard.scheduler.model import PendingJob, RunningJob, Snapshot
from trainyard.scheduler.queues import QueuePolicy
from trainyard.scheduler.quotas import NO_QUOTA, NO_TEAM


def test_a_team_uses_its_quota_then_borrows_what_others_leave_idle() -> None:
    decided = run(quota_policy(), [job(i, gpus=2, team="vision") for i in range(1, 6)])
    assert len(decided.admit) == 4  # 4 of its own GPUs and 4 borrowed from idle nlp
    assert decided.pending["j5"].code == ReasonCode.TEAM_QUOTA
    assert "team 'vision' has used its 4 GPUs of quota in pool 'gpu'" in \
        decided.pending["j5"].message


def test_no_borrowing_beyond_the_limit_or_from_quota_in_use() -> None:
    nlp_busy = [RunningJob("r", "a", Resources(1, 1024, 4), "gpu", ("g0", "g1", "g2", "g3"),
                           team="nlp")]
    decided = run(quota_policy(), [job(1, gpus=4, team="vision"),
                                   job(2, gpus=1, team="vision")], nlp_busy)
    assert decided.admit == ("j1",)
    assert "no idle quota can be borrowed" in decided.pending["j2"].message
    limited = run(quota_policy(), [job(1, gpus=5, team="nlp")])
    assert limited.pending["j1"].code == ReasonCode.TEAM_QUOTA


def borrowable(quotas: dict[str, Quota], use: dict[str, float], team: str,
               need: float) -> bool:
    """The borrowing rule for CPUs in a pool that counts nothing else, team by team."""
    mine = quotas.get(team, NO_TEAM if not team else NO_QUOTA)
    over = max(0.0, (use.get(team, 0.0) + need) - mine.cpus) if mine.cpus is not None else 0.0
    if over == 0.0:
        return True
    if over > mine.borrow_cpus:
        return False
    idle, borrowed = 0.0, 0.0
    for other, quota in quotas.items():
        if other != team:
            idle += max(0.0, (quota.cpus or 0.0) - use.get(other, 0.0))
            borrowed += max(0.0, use.get(other, 0.0) - quota.cpus) \
                if quota.cpus is not None else 0.0
    return not over > (idle - borrowed) + 1e-9


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.none() | st.integers(0, 30), st.integers(0, 40)), min_size=1,
                max_size=12),
       st.lists(st.tuples(st.integers(0, 13), st.integers(1, 30)), max_size=30),
       st.lists(st.tuples(st.integers(0, 13), st.integers(1, 30), st.integers(0, 2)),
                max_size=30))
def test_borrowing_among_many_teams_is_decided_as_adding_them_up(
        raw_quotas: list[tuple[int | None, int]], raw_running: list[tuple[int, int]],
        raw_pending: list[tuple[int, int, int]]) -> None:
    # CPUs in tenths, whose float sums round: the running sums must decide as the rule does.
    teams = [f"t{i}" for i in range(len(raw_quotas))]
    quotas = {t: Quota(cpus=None if c is None else c / 10, borrow_cpus=b / 10)
              for t, (c, b) in zip(teams, raw_quotas, strict=True)}

    def team(index: int) -> str:  # past the teams: a team without quota, then none
        return teams[index] if index < len(teams) else ("other" if index % 2 else "")

    pool = Pool(PoolCapacity("cpu", max_jobs=1000))  # counts neither CPUs nor memory
    p = Policy(pools={"cpu": pool}, queues={"a": Queue("a", pools=("cpu",))},
               teams={t: Team(t, quotas={"cpu": q}) for t, q in quotas.items()},
               max_running=1000)
    running = [RunningJob(f"r{i}", "a", Resources(c / 10, 0, 0), "cpu", team=team(t))
               for i, (t, c) in enumerate(raw_running)]
    pending = [PendingJob(f"j{i}", "a", prio, i, Resources(c / 10, 0, 0), team=team(t))
               for i, (t, c, prio) in enumerate(raw_pending)]
    decided = QueuePolicy(p).schedule(Snapshot(pending, running, now=0.0))
    use: dict[str, float] = {}
    for r in running:
        if r.team:
            use[r.team] = use.get(r.team, 0.0) + r.resources.cpus
    admitted = []
    for j in sorted(pending, key=lambda j: (-j.priority, j.seq)):
        if borrowable(quotas, use, j.team, j.resources.cpus):
            admitted.append(j.job_id)
            use[j.team] = use.get(j.team, 0.0) + j.resources.cpus
        else:
            assert decided.pending[j.job_id].code == ReasonCode.TEAM_QUOTA
    assert decided.admit == tuple(admitted)


def test_a_borrowing_tie_is_settled_as_adding_up_team_by_team() -> None:
    # The job goes beyond its quota by just what the other teams leave free, plus the 1e-9
    # of slack, as adding up team by team rounds it; adding up in another order rounds the
    # other way, and would hold it.
    teams = {f"t{i}": Team(f"t{i}", quotas={"cpu": Quota(cpus=cpus, borrow_cpus=100.0)})
             for i, cpus in enumerate((2.6, 3.0, 2.8, 0.2))}
    p = Policy(pools={"cpu": Pool(PoolCapacity("cpu", max_jobs=100))},
               queues={"a": Queue("a", pools=("cpu",))}, teams=teams, max_running=100)
    running = [RunningJob(f"r{i}", "a", Resources(cpus, 0, 0), "cpu", team=f"t{i}")
               for i, cpus in enumerate((1.3, 1.5, 3.2, 0.3))]
    pending = [PendingJob("j", "a", 0, 0, Resources(2.300000001, 0, 0), team="t0")]
    decided = QueuePolicy(p).schedule(Snapshot(pending, running, now=0.0))
    assert decided.admit == ("j",)
