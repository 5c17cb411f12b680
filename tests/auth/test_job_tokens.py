"""Job tokens: minted for one attempt, parsed strictly, and good only while that attempt is
the job's current, active one."""

from __future__ import annotations

import pytest

from trainyard.auth import job_tokens
from trainyard.domain.errors import Unauthenticated
from trainyard.domain.states import JobState


def test_a_minted_token_names_its_attempt_and_checks_against_its_hash() -> None:
    minted = job_tokens.mint("18f3a2b4c5d6e7f8", 3)
    assert minted.token.startswith("tyjob_18f3a2b4c5d6e7f8_3_")
    claimed = job_tokens.parse(minted.token)
    assert (claimed.job_id, claimed.attempt) == ("18f3a2b4c5d6e7f8", 3)
    assert len(claimed.secret) == 43 and claimed.secret not in repr(claimed)
    assert minted.secret_hash != claimed.secret and len(minted.secret_hash) == 64
    job_tokens.check(claimed, minted.secret_hash, 3, JobState.RUNNING)
    job_tokens.check(claimed, minted.secret_hash, 3, JobState.LAUNCHING)
    assert job_tokens.is_job_token(minted.token) and not job_tokens.is_job_token("ty_abc")
    assert job_tokens.mint("18f3a2b4c5d6e7f8", 3).token != minted.token


@pytest.mark.parametrize("value", [
    "tyjob_abc_1", "tyjob_ABC_1_" + "a" * 43, "tyjob_abc_0_" + "a" * 43,
    "tyjob_abc_1_" + "a" * 42, "tyjob_abc_1_" + "a" * 44, "tyjob_abc_1_" + "a" * 42 + "!",
    "tyjob_abc_x_" + "a" * 43, "tyjob_" + "a" * 33 + "_1_" + "b" * 43,
    "tyjob_abc_1_" + "a" * 43 + "\n", "tyjob_abc_1_" + "s" * 500,
])
def test_malformed_or_overlong_values_are_refused_without_being_repeated(value: str) -> None:
    with pytest.raises(Unauthenticated) as refused:
        job_tokens.parse(value)
    assert value not in str(refused.value) and "aaaa" not in str(refused.value)


def test_a_token_is_good_only_for_its_current_active_attempt() -> None:
    minted = job_tokens.mint("abc123", 2)
    claimed = job_tokens.parse(minted.token)
    forged = job_tokens.parse(job_tokens.mint("abc123", 2).token)
    cases = [
        (forged, minted.secret_hash, 2, JobState.RUNNING, "not valid"),
        (claimed, None, 2, JobState.RUNNING, "not valid"),  # no row: never minted, or ended
        (claimed, minted.secret_hash, 3, JobState.RUNNING, "expired"),  # a later attempt
        (claimed, minted.secret_hash, 2, JobState.SUCCEEDED, "expired"),
        (claimed, minted.secret_hash, 2, JobState.PREEMPTED, "expired"),
        (claimed, minted.secret_hash, 2, JobState.WAITING, "expired"),
    ]
    for credential, stored, attempt, state, why in cases:
        with pytest.raises(Unauthenticated, match=why) as refused:
            job_tokens.check(credential, stored, attempt, state)
        assert credential.secret not in str(refused.value)
        assert "abc123-2" in str(refused.value)


def test_no_token_is_minted_for_an_id_no_job_can_have() -> None:
    with pytest.raises(ValueError):
        job_tokens.mint("Not_An_Id", 1)
    with pytest.raises(ValueError):
        job_tokens.mint("abc", 0)
