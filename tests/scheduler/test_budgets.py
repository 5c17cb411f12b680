"""The BUDGET rule in a pass of the queue policy: a job waits while it would run past its
team's or queue's GPU- or CPU-hours over the period, with the sentence that says so; the
running jobs' time limits and the pass's own admissions are counted; nothing is checked
where no usage is tracked."""

from __future__ import annotations

from dataclasses import replace

from tests.factories import running
from tests.scheduler.builders import job, policy
from trainyard.domain.budgets import QUEUE, TEAM, Budget, BudgetScope, BudgetUse
from trainyard.domain.policy import Queue, Team
from trainyard.domain.reasons import ReasonCode
from trainyard.scheduler.budgets import declared_budgets
from trainyard.scheduler.model import Decisions, PendingJob, RunningJob, Snapshot
from trainyard.scheduler.queues import QueuePolicy

HOUR = 3600.0
WEEK = 7 * 86400.0
NLP = BudgetScope(TEAM, "nlp")


def budgeted(gpu_hours: float | None = 1000, cpu_hours: float | None = None,
             queue_budget: Budget | None = None) -> QueuePolicy:
    teams = {"nlp": Team("nlp", frozenset({"u"}), budget=Budget(WEEK, gpu_hours, cpu_hours)),
             "cv": Team("cv", frozenset({"v"}))}
    queues = {**policy().queues, "a": Queue("a", pools=("gpu", "cpu"), budget=queue_budget)}
    return QueuePolicy(policy(teams=teams, queues=queues))


def nlp_job(n: int, gpus: int = 1, hours_limit: float = 0.0, cpus: float = 1.0,
            team: str = "nlp") -> PendingJob:
    return replace(job(n, "a", gpus=gpus, cpus=cpus, team=team), time_limit_s=hours_limit * HOUR)


def decide(p: QueuePolicy, pending: list[PendingJob], used: dict[BudgetScope, BudgetUse] | None,
           running_jobs: list[RunningJob] | None = None, now: float = 0.0) -> Decisions:
    return p.schedule(Snapshot(pending, running_jobs or [], now=now, budget_use=used))


def gpu_hours(value: float) -> BudgetUse:
    return BudgetUse(gpu_s=value * HOUR)


def test_a_job_past_the_remaining_budget_waits_with_the_sentence() -> None:
    decided = decide(budgeted(), [nlp_job(1, gpus=4, hours_limit=8)], {NLP: gpu_hours(982)})
    assert decided.admit == ()
    reason = decided.pending["j1"]
    assert reason.code == ReasonCode.BUDGET
    assert reason.message == (
        "team 'nlp' has used 982 of its 1,000 GPU-hours in the last 7 days; this job may use "
        "32 (4 GPUs for its 8 h time limit), more than the 18 left")


def test_a_job_that_fits_what_is_left_starts() -> None:
    decided = decide(budgeted(), [nlp_job(1, gpus=2, hours_limit=9)], {NLP: gpu_hours(982)})
    assert decided.admit == ("j1",)


def test_without_a_time_limit_a_job_starts_while_anything_is_left() -> None:
    p = budgeted()
    assert decide(p, [nlp_job(1, gpus=8)], {NLP: gpu_hours(999.9)}).admit == ("j1",)
    spent = decide(p, [nlp_job(1, gpus=8), nlp_job(2)], {NLP: gpu_hours(1000)})
    assert spent.admit == ()
    assert spent.pending["j1"].message == (
        "team 'nlp' has used 1,000 of its 1,000 GPU-hours in the last 7 days; it starts when "
        "use older than the window leaves it")
    assert spent.pending["j2"] is spent.pending["j1"]  # one reason shared


def test_running_jobs_time_limits_and_the_pass_admissions_are_counted() -> None:
    p = budgeted(gpu_hours=100)
    # A running job of 2 GPUs with 10 h of its 20 h limit to go may use 20 more GPU-hours.
    held = replace(running("r", "a", gpus=2, team="nlp", started_at=0.0),
                   time_limit_s=20 * HOUR)
    pending = [nlp_job(1, gpus=1, hours_limit=30), nlp_job(2, gpus=1, hours_limit=30),
               nlp_job(3, gpus=1, hours_limit=10)]
    decided = decide(p, pending, {NLP: gpu_hours(20)}, [held], now=10 * HOUR)
    # 100 - 20 used - 20 held: 60 left; j1 takes 30, j2 the other 30, j3 finds none.
    assert decided.admit == ("j1", "j2")
    assert decided.pending["j3"].code == ReasonCode.BUDGET
    assert decided.pending["j3"].message == (
        "team 'nlp' has used 20 of its 100 GPU-hours in the last 7 days; its running jobs may "
        "use 80 more; this job may use 10 (1 GPU for its 10 h time limit), more than the 0 "
        "left")


def test_a_gpu_budget_does_not_hold_jobs_without_gpus_and_other_teams_pass() -> None:
    decided = decide(budgeted(gpu_hours=0), [nlp_job(1, gpus=0), nlp_job(2, team="cv"),
                                             nlp_job(3)], {})
    assert decided.admit == ("j1", "j2")
    assert decided.pending["j3"].code == ReasonCode.BUDGET


def test_cpu_hours_and_a_queue_budget() -> None:
    p = budgeted(gpu_hours=None, cpu_hours=50,
                 queue_budget=Budget(86400, gpu_hours=10))
    used = {NLP: BudgetUse(cpu_s=49 * HOUR), BudgetScope(QUEUE, "a"): gpu_hours(10)}
    decided = decide(p, [nlp_job(1, gpus=0, cpus=2, hours_limit=1), nlp_job(2, team="cv")],
                     used)
    assert decided.pending["j1"].message.startswith(
        "team 'nlp' has used 49 of its 50 CPU-hours in the last 7 days; this job may use 2")
    assert decided.pending["j2"].message.startswith(
        "queue 'a' has used 10 of its 10 GPU-hours in the last day")


def test_no_usage_tracked_checks_nothing() -> None:
    assert decide(budgeted(gpu_hours=0), [nlp_job(1)], None).admit == ("j1",)


def test_budget_reasons_hold_at_the_global_limit_too() -> None:
    p = QueuePolicy(replace(budgeted().policy, max_running=1))
    decided = decide(p, [nlp_job(1, team="cv"), nlp_job(2)], {NLP: gpu_hours(1000)})
    assert decided.admit == ("j1",)
    assert decided.pending["j2"].code == ReasonCode.BUDGET


def test_the_policy_lists_its_budgets() -> None:
    p = budgeted(queue_budget=Budget(HOUR, cpu_hours=1))
    assert declared_budgets(p.policy) == {NLP: Budget(WEEK, 1000),
                                          BudgetScope(QUEUE, "a"): Budget(HOUR, cpu_hours=1)}
