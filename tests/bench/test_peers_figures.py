"""The peer benchmark's arithmetic, by hand-computed cases."""

from __future__ import annotations

import math

import pytest
from peers import __main__ as peers_main
from peers import figures as fig

PROC_STAT = """cpu  100 10 50 800 40 5 5 0 7 0
cpu0 50 5 25 400 20 2 3 0 0 0
intr 12345
"""


def test_proc_stat_counts_iowait_as_idle_and_guest_once() -> None:
    sample = fig.parse_proc_stat(PROC_STAT)
    # busy: user 100 + nice 10 + system 50 + irq 5 + softirq 5 + steal 0; guest 7 is inside
    # user already. idle: 800 + iowait 40.
    assert sample == fig.CpuSample(busy=170, total=1010)


def test_proc_stat_without_a_cpu_line_is_refused() -> None:
    with pytest.raises(ValueError):
        fig.parse_proc_stat("intr 1\n")


def test_utilisation_between_samples() -> None:
    before = fig.CpuSample(busy=100, total=1000)
    after = fig.CpuSample(busy=250, total=1200)
    assert fig.utilisation(before, after) == pytest.approx(0.75)
    assert math.isnan(fig.utilisation(before, before))


def test_handoff_gaps_match_each_end_with_the_start_that_took_its_slot() -> None:
    ms = 1_000_000
    # Two slots. Jobs a, b start at 0; a ends at 100 and c starts at 110; b ends at 150 and
    # d starts at 190; c ends at 300 and e starts at 305. d and e end last: no job follows.
    starts = [0, 0, 110 * ms, 190 * ms, 305 * ms]
    ends = [100 * ms, 150 * ms, 300 * ms, 400 * ms, 500 * ms]
    assert fig.handoff_gaps_ms(starts, ends, slots=2) == [10.0, 40.0, 5.0]
    # The order the stamps were read in does not matter.
    assert fig.handoff_gaps_ms(starts[::-1], ends[::-1], slots=2) == [10.0, 40.0, 5.0]


def test_handoff_gaps_go_negative_when_more_jobs_run_than_slots() -> None:
    ms = 1_000_000
    assert fig.handoff_gaps_ms([0, 0, 50 * ms], [100 * ms, 100 * ms, 200 * ms], slots=1) == \
        [-100.0, -50.0]
    with pytest.raises(ValueError):
        fig.handoff_gaps_ms([], [], slots=0)


def test_latencies_only_for_jobs_that_started() -> None:
    submitted = {"a": 1_000_000, "b": 2_000_000}
    assert fig.latencies_ms(submitted, {"a": 4_000_000}) == [3.0]


def test_rate_and_ratio_are_nan_without_data() -> None:
    assert fig.rate(10, 2.0) == 5.0
    assert math.isnan(fig.rate(0, 2.0))
    assert math.isnan(fig.rate(3, 0.0))
    assert fig.ratio(6.0, 3.0) == 2.0
    for a, b in ((None, 1.0), (1.0, None), (1.0, 0.0), (math.nan, 1.0)):
        assert math.isnan(fig.ratio(a, b))


def test_ratios_pair_every_numeric_figure_both_sides_have() -> None:
    ty = {"submit_per_s": 1000.0, "start_p50_ms": 5.0, "e2e_capped": False, "note": "x"}
    peers = {"slurm": {"submit_per_s": 250.0, "start_p50_ms": 2000.0, "e2e_capped": True,
                       "note": "y", "only_slurm": 1.0}}
    assert fig.ratios(ty, peers) == {"submit_per_s_vs_slurm": 4.0,
                                     "start_p50_ms_vs_slurm": 0.003}


def figures_for(ty_submit: float, ty_start: float, ty_gap: float) -> list[fig.Goal]:
    return fig.goals(
        {"submit_per_s": ty_submit, "e2e_jobs_per_s": 100.0, "start_p50_ms": ty_start,
         "docker_start_p50_ms": 120.0, "idle_gap_p50_ms": ty_gap},
        {"submit_per_s": 100.0, "e2e_jobs_per_s": 5.0},
        {"submit_per_s": 20.0, "e2e_jobs_per_s": 1.0},
        {"fork_exec_start_p50_ms": 1.5, "docker_run_start_p50_ms": 100.0,
         "grpc_calls_per_s": 1800.0, "fork_exec_e2e_jobs_per_s": 250.0,
         "train_makespan_ideal_s": 100.0})


def test_goals_from_figures_of_one_run() -> None:
    goals = {g.key: g for g in figures_for(ty_submit=900.0, ty_start=23.5, ty_gap=10.0)}
    assert goals["submit_vs_slurm"].value == 9.0 and goals["submit_vs_slurm"].passed
    assert goals["submit_vs_ray"].value == 45.0 and goals["submit_vs_ray"].passed
    assert goals["e2e_vs_slurm"].value == 20.0 and goals["e2e_vs_slurm"].passed
    assert goals["e2e_vs_ray"].value == 100.0 and goals["e2e_vs_ray"].passed
    # 2 x 1.5 ms + 20 ms = 23 ms: 23.5 ms misses.
    assert goals["start_local"].target == 23.0 and goals["start_local"].passed is False
    assert goals["start_docker"].value == pytest.approx(1.2)
    assert goals["start_docker"].passed is False
    assert goals["idle_gap"].passed  # at most 10 ms: 10 passes
    # Against the machine's limits of the same run.
    assert goals["submit_vs_grpc"].value == 0.5 and goals["submit_vs_grpc"].passed
    assert goals["e2e_vs_fork_exec"].value == 0.4 and goals["e2e_vs_fork_exec"].passed is False
    assert goals["train_makespan_vs_ideal"].passed is None  # no makespan measured


def test_a_goal_without_its_figures_is_not_measured() -> None:
    goals = {g.key: g for g in fig.goals({"submit_per_s": 10.0}, {}, {"submit_per_s": 0.0},
                                         {})}
    assert goals["submit_vs_slurm"].passed is None
    assert goals["submit_vs_ray"].passed is None  # a peer at zero: no ratio
    assert goals["start_local"].passed is None
    assert goals["submit_vs_slurm"].as_json()["pass"] is None



def test_slot_cycle_from_recorded_transitions() -> None:
    # One slot: a launched at 0.000, running at 0.004, command at 0.006, final at 0.010;
    # b launched at 0.012 (2 ms after a's end), running 0.015, final 0.020.
    jobs = [{"LAUNCHING": 0.000, "RUNNING": 0.004, "stamp": 0.006, "final": 0.010},
            {"LAUNCHING": 0.012, "RUNNING": 0.015, "stamp": 0.016, "final": 0.020},
            {"LAUNCHING": 0.030}]  # never ran: left out
    out = fig.slot_cycle_ms(jobs, slots=1)
    assert out["launch_p50_ms"] == pytest.approx(3.5)
    assert out["running_to_command_p50_ms"] == pytest.approx(1.5)
    assert out["running_to_final_p50_ms"] == pytest.approx(5.5)
    assert out["final_to_next_launch_p50_ms"] == pytest.approx(2.0)
    assert out["cycle_p50_ms"] == pytest.approx(11.0)


def test_a_missed_submit_goal_says_what_it_needed_and_where_the_cpu_went() -> None:
    ty = {"submit_per_s": 1500.0, "submit_system_cpu_ms": 0.6, "submit_client_cpu_ms": 0.2}
    slurm = {"submit_per_s": 500.0}
    goal = next(g for g in fig.goals(ty, slurm, {}, {}) if g.key == "submit_vs_slurm")
    assert goal.passed is False
    why = fig.why_missed(goal, ty, {"slurm": slurm}, {"grpc_calls_per_s": 4000.0}, cpus=2)
    assert why.startswith("needs 4,000 submits/s, measured 1,500/s.")
    assert "2 CPUs allow at most 2,500/s" in why and "reaches only 4,000/s" in why


def test_a_goal_against_a_limit_says_what_the_limit_asked() -> None:
    ty = {"submit_per_s": 1500.0, "submit_system_cpu_ms": 0.6, "submit_client_cpu_ms": 0.2,
          "e2e_jobs_per_s": 90.0, "trivial_cycle_p50_ms": 20.0}
    limits = {"grpc_calls_per_s": 4000.0, "fork_exec_e2e_jobs_per_s": 600.0}
    goals = {g.key: g for g in fig.goals(ty, {}, {}, limits)}
    submit, e2e = goals["submit_vs_grpc"], goals["e2e_vs_fork_exec"]
    assert submit.value == 0.375 and submit.passed is False
    assert fig.why_missed(submit, ty, {}, limits, cpus=2).startswith(
        "needs 2,000 submits/s, measured 1,500/s.")
    assert e2e.value == 0.15 and e2e.passed is False
    assert fig.why_missed(e2e, ty, {}, limits, cpus=2).startswith(
        "needs 300.0 jobs/s, measured 90.0/s.")


def test_a_missed_makespan_says_how_slow_the_trainer_ran_under_the_service() -> None:
    ty = {"train_makespan_s": 122.0, "train_run_p50_s": 1.2, "slots_busy_pct": 97.0,
          "idle_gap_p50_ms": 30.0}
    limits = {"train_makespan_ideal_s": 100.0, "trainer_run_in_slots_s": 1.0,
              "trainer_run_s": 0.9}
    goal = next(g for g in fig.goals(ty, {}, {}, limits) if g.key == "train_makespan_vs_ideal")
    assert goal.value == pytest.approx(1.22) and goal.passed is False
    why = fig.why_missed(goal, ty, {}, limits, cpus=2)
    assert why.startswith("122.0 s against an ideal 100.0 s")
    assert "1.000 s started 2 at a time without it (1.20x," in why and "0.900 s alone" in why
    assert "busy 97%" in why and "30.0 ms (p50)" in why


def test_a_missed_idle_gap_says_what_the_kernel_took_where_it_was_measured() -> None:
    ty = {"idle_gap_p50_ms": 31.5}
    goal = next(g for g in fig.goals(ty, {}, {}, {}) if g.key == "idle_gap")
    assert goal.passed is False
    measured = fig.why_missed(goal, ty, {}, {"cap_move_p50_ms": 11.25}, cpus=2)
    assert measured.startswith("a slot idled 31.5 ms (p50)")
    assert "; joining a process cap (a pids cgroup) waits 11.2 ms in the kernel" in measured
    assert measured.endswith("only a launch that finds none ready waits for it")
    unmeasured = fig.why_missed(goal, ty, {}, {"cap_move_p50_ms": None}, cpus=2)
    assert "pids cgroup" not in unmeasured and unmeasured.endswith("its wrapper's start")


def test_a_training_workload_cut_off_at_its_cap_is_judged_only_past_the_target() -> None:
    limits = {"train_makespan_ideal_s": 239.0, "trainer_run_s": 2.39}
    capped = {"train_makespan_s": 181.0, "train_capped": True}
    goal = next(g for g in fig.goals(capped, {}, {}, limits)
                if g.key == "train_makespan_vs_ideal")
    assert goal.passed is None  # 181 s for 160 of 200 jobs is no makespan at all
    past_target = {"train_makespan_s": 358.5, "train_capped": True}  # a cap of 1.5x ideal
    goal = next(g for g in fig.goals(past_target, {}, {}, limits)
                if g.key == "train_makespan_vs_ideal")
    assert goal.passed is False and goal.value == pytest.approx(1.5)
    done = {"train_makespan_s": 260.0, "train_capped": False}
    goal = next(g for g in fig.goals(done, {}, {}, limits)
                if g.key == "train_makespan_vs_ideal")
    assert goal.passed is False and goal.value == pytest.approx(260 / 239)


def test_the_training_cap_is_never_short_of_the_ideal_makespan() -> None:
    assert peers_main.train_cap(180.0, 100.0) == 180.0
    assert peers_main.train_cap(180.0, 239.0) == pytest.approx(358.5)
    assert peers_main.train_cap(180.0, None) == 180.0
