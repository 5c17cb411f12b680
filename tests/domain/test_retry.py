"""The sentences and the back-off of retries."""

import pytest

from trainyard.domain.retry import Backoff, RetryState, waiting_to_retry


def test_a_back_off_is_said_in_whole_seconds() -> None:
    said = waiting_to_retry(RetryState(3), 7.75671, 1, "was lost: node n2 failed")
    assert said == "attempt 2 of 3 starts after a 8 s back-off; attempt 1 was lost: node n2 " \
                   "failed"


def test_a_run_numbered_otherwise_by_preemptions_is_named() -> None:
    said = waiting_to_retry(RetryState(3), 40, 2, "failed: exited with code 1")
    assert said.endswith("back-off; attempt 1 (run 2) failed: exited with code 1")


def test_the_back_off_doubles_up_to_its_cap_with_jitter_below_it() -> None:
    backoff = Backoff(base_s=10, cap_s=60)
    assert [backoff.delay(n, 0.999999) for n in (1, 2, 3, 4, 5)] == \
        pytest.approx([10, 20, 40, 60, 60], rel=1e-5)
    assert backoff.delay(3, 0.0) == 20  # half of it at the least
