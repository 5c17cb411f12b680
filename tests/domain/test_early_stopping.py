"""Both early-stopping rules against hand-computed curves: which trial stops at which step."""

from __future__ import annotations

import statistics

import pytest

from trainyard.domain.early_stopping import (
    ASHA,
    MEDIAN,
    EarlyStop,
    Objective,
    Verdict,
    asha_verdict,
    best_by,
    check_early_stop,
    judge,
    median_verdict,
    parse_objective,
    rungs,
)
from trainyard.domain.errors import InvalidArgument

ACC = Objective("test_accuracy", "max")
LOSS = Objective("loss", "min")

# Three completed trials. Best by step 1: .5 .4 .6 (median .5); by 2: .7 .6 .65 (median
# .65); by 3: .8 .9 .7 (median .8).
A = [(1, 0.5), (2, 0.7), (3, 0.8)]
B = [(1, 0.4), (2, 0.6), (3, 0.9)]
C = [(1, 0.6), (2, 0.65), (3, 0.7)]
DONE = [A, B, C]


def test_best_by_a_step_is_the_best_value_up_to_it() -> None:
    curve = [(1, 0.9), (2, 0.5), (3, 0.95)]
    assert best_by(curve, 2, ACC) == 0.9
    assert best_by(curve, 3, ACC) == 0.95
    assert best_by(curve, 0, ACC) is None
    assert best_by(curve, 2, LOSS) == 0.5


def test_median_stops_a_trial_below_the_median_at_the_first_step_it_is() -> None:
    x = [(1, 0.55), (2, 0.6), (3, 0.85)]  # .55 >= .5 at 1; .6 < .65 at 2
    verdict = median_verdict(x, DONE, ACC, 1)
    assert verdict == Verdict(MEDIAN, 2, 0.6, 0.65, 3)
    assert verdict.sentence(ACC) == ("stopped early: test_accuracy 0.6 at step 2, below the "
                                     "median 0.65")
    assert median_verdict([(1, 0.45)], DONE, ACC, 1) == Verdict(MEDIAN, 1, 0.45, 0.5, 3)


def test_median_judges_the_best_value_so_far_not_the_last() -> None:
    z = [(1, 0.9), (2, 0.5), (3, 0.5)]  # its best by 2 and 3 is .9
    assert median_verdict(z, DONE, ACC, 1) is None


def test_median_waits_for_min_steps_and_for_three_completed_trials() -> None:
    y = [(1, 0.45), (2, 0.66)]  # would stop at 1; from step 2 it is above .65
    assert median_verdict(y, DONE, ACC, 2) is None
    assert median_verdict([(1, 0.1), (2, 0.1)], [A, B], ACC, 1) is None
    # A completed trial counts at step s only once it reached s.
    assert median_verdict([(3, 0.1)], [A, B, [(1, 0.9)]], ACC, 1) is None


def test_median_judges_only_steps_after_those_judged_before() -> None:
    x = [(1, 0.55), (2, 0.6), (3, 0.85)]
    assert median_verdict(x, DONE, ACC, 1, after_step=2) is None  # .85 >= .8 at 3


def test_median_for_a_metric_to_minimize() -> None:
    done = [[(1, 1.0), (2, 0.5)], [(1, 2.0), (2, 0.7)], [(1, 1.5), (2, 0.6)]]
    verdict = median_verdict([(1, 1.2), (2, 0.65)], done, LOSS, 1)
    assert verdict == Verdict(MEDIAN, 2, 0.65, 0.6, 3)
    assert verdict.sentence(LOSS) == "stopped early: loss 0.65 at step 2, above the median 0.6"


def test_asha_rungs() -> None:
    assert list(rungs(1, 3, 10)) == [1, 3, 9]
    assert list(rungs(3, 3, 30)) == [3, 9, 27]
    assert list(rungs(2, 2, 1)) == []


def test_asha_keeps_the_top_third_of_each_rung_as_trials_arrive() -> None:
    # Trials reach rung 1 in this order: T1 .5, T2 .4, T3 .6, T4 .55, T5 .45.
    t1 = [(1, 0.5), (2, 0.6), (3, 0.8)]
    t2 = [(1, 0.4)]
    t3 = [(1, 0.6), (2, 0.65), (3, 0.7)]
    t4 = [(1, 0.55)]
    t5 = [(1, 0.45)]
    at_rung_1 = [c[:1] for c in (t1, t2, t3, t4)]  # what each had when the next arrived
    assert asha_verdict(t1[:1], [], ACC, 1, 3) is None  # alone: the top third of one
    # Two values: the top ceil(2/3) = 1 goes on; T2 is not it.
    assert asha_verdict(t2, at_rung_1[:1], ACC, 1, 3) == Verdict(ASHA, 1, 0.4, 0.5, 2, 3)
    assert asha_verdict(t3[:1], at_rung_1[:2], ACC, 1, 3) is None  # the best of three
    # Four values: ceil(4/3) = 2 go on; only T3 is better than T4.
    assert asha_verdict(t4, at_rung_1[:3], ACC, 1, 3) is None
    verdict = asha_verdict(t5, at_rung_1, ACC, 1, 3)  # three of five are better
    assert verdict == Verdict(ASHA, 1, 0.45, 0.55, 5, 3)
    assert verdict.sentence(ACC) == ("stopped early: test_accuracy 0.45 at step 1, not in "
                                     "the top 1/3 of the 5 trials at that rung (they reach "
                                     "0.55)")
    # Rung 3: T1 first (.8) goes on; T3 (.7) then is second of two: stopped at step 3.
    assert asha_verdict(t1, [t2, t4, t5], ACC, 1, 3, after_step=1) is None
    assert asha_verdict(t3, [t1, t2, t4, t5], ACC, 1, 3, after_step=1) == \
        Verdict(ASHA, 3, 0.7, 0.8, 2, 3)


def test_asha_judges_a_rung_once_and_only_rungs_reached() -> None:
    t = [(1, 0.1), (2, 0.1)]
    others = [[(1, 0.9)], [(1, 0.8)]]
    assert asha_verdict(t, others, ACC, 1, 3) == Verdict(ASHA, 1, 0.1, 0.9, 3, 3)
    assert asha_verdict(t, others, ACC, 1, 3, after_step=1) is None  # rung 3 not reached
    assert asha_verdict(t, others, ACC, 3, 3) is None  # its first rung is 3


def test_judge_picks_the_rule() -> None:
    x = [(1, 0.45)]
    assert judge(EarlyStop(MEDIAN, ACC), x, [], DONE) == Verdict(MEDIAN, 1, 0.45, 0.5, 3)
    assert judge(EarlyStop(ASHA, ACC), x, [[(1, 0.9)]], []) == \
        Verdict(ASHA, 1, 0.45, 0.9, 2, 3)


def test_objective_and_rule_are_checked_naming_the_field() -> None:
    assert parse_objective("test_accuracy:max") == ACC
    assert parse_objective("a:b:min") == Objective("a:b", "min")
    assert parse_objective("") is None
    for bad in ("test_accuracy", "acc:up", ":max"):
        with pytest.raises(InvalidArgument) as err:
            parse_objective(bad)
        assert err.value.field == "objective"
    assert check_early_stop("none", None, 0, 0) is None
    assert check_early_stop("asha", ACC, 0, 0) == EarlyStop(ASHA, ACC, 1, 3)
    assert check_early_stop("median", ACC, 4, 0) == EarlyStop(MEDIAN, ACC, 4, 3)
    for args, field in ((("bogus", ACC, 0, 0), "early_stop"), (("median", None, 0, 0),
                        "objective"), (("asha", ACC, -1, 0), "min_steps"),
                        (("asha", ACC, 1, 1), "reduction"), (("median", ACC, 1, 3),
                        "reduction"), (("", None, 2, 0), "min_steps")):
        with pytest.raises(InvalidArgument) as err:
            check_early_stop(*args)  # type: ignore[arg-type]
        assert err.value.field == field


def test_a_tie_made_by_rounding_stops_no_trial() -> None:
    # At step 3 the completed trials reach .45, .4, .475 and .05: the median is the mean of
    # .4 and .45, which floating point makes 0.42500000000000004; the trial's 0.85 * 3 / 6 is
    # 0.42499999999999993. A tie, not a loser, under both rules.
    done = [[(3, q * 3 / 6)] for q in (0.9, 0.8, 0.95, 0.1)]
    tied = [(3, 0.85 * 3 / 6)]
    assert statistics.median(v for [(_, v)] in done) > tied[0][1]  # the rounding is there
    assert median_verdict(tied, done, ACC, 3) is None
    assert median_verdict([(3, 0.42)], done, ACC, 3) == Verdict(
        MEDIAN, 3, 0.42, statistics.median(v for [(_, v)] in done), 4)
    # One value at the rung before it, 0.30000000000000004, against its 0.3: the top 1 of 2.
    assert asha_verdict([(1, 0.3)], [[(1, 0.1 + 0.2)]], ACC, 1, 3) is None
    assert asha_verdict([(1, 0.29)], [[(1, 0.1 + 0.2)]], ACC, 1, 3) is not None
