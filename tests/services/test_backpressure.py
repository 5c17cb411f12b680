"""The policy's [limits] at submit, on a real store: caps on each user's and team's waiting
jobs and on their submit rate, refused with ResourceExhausted and a sentence; a retried
submit is not counted; a sweep counts its trials; nothing is stored past a cap."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services.conftest import assemble
from trainyard.auth.policy import Identity
from trainyard.domain.errors import ResourceExhausted
from trainyard.domain.limits import SubmitLimits
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.domain.sweep import Parameter
from trainyard.server.assembly import TrainyardServer
from trainyard.services.backpressure import Backpressure, TokenBucket

POLICY = """
[pools.cpu]
max_jobs = 2
[queues.default]
pools = ["cpu"]
[teams.red]
members = ["ana", "bo"]
[limits]
{limits}
"""
ANA, BO, CY = Identity("ana"), Identity("bo"), Identity("cy")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def make(tmp_path: Path) -> Iterator[object]:
    made: list[TrainyardServer] = []

    def server(limits: str) -> tuple[TrainyardServer, Clock]:
        where = tmp_path / str(len(made))
        where.mkdir()
        srv = assemble(where, POLICY.format(limits=limits))
        made.append(srv)
        clock = Clock()
        pressure = srv.services.jobs.check.pressure
        assert pressure is not None
        pressure.clock = clock
        return srv, clock
    yield server
    for srv in made:
        srv.db.close()


def submit(srv: TrainyardServer, who: Identity, request_id: str = "") -> str:
    return srv.services.jobs.train(who, JobSpec(name="j", command="true"),
                                   client_request_id=request_id)[0]


def waiting(srv: TrainyardServer) -> int:
    return len(srv.jobs.in_states([JobState.WAITING]))


def test_a_users_waiting_jobs_are_capped(make) -> None:  # type: ignore[no-untyped-def]
    srv, _ = make("max_waiting_per_user = 2")
    submit(srv, ANA)
    submit(srv, ANA)
    with pytest.raises(ResourceExhausted) as refused:
        submit(srv, ANA)
    assert str(refused.value) == (
        "user 'ana' has 2 waiting jobs, the most the policy allows "
        "(limits.max_waiting_per_user); submit again when some have started or been "
        "cancelled")
    assert refused.value.retry_after is None
    assert waiting(srv) == 2  # nothing stored
    submit(srv, BO)  # another user's jobs are their own
    srv.services.jobs.cancel(ANA, srv.jobs.in_states([JobState.WAITING])[0].id)
    submit(srv, ANA)  # room again


def test_a_teams_waiting_jobs_are_capped_and_users_of_no_team_are_not(make) -> None:  # type: ignore[no-untyped-def]
    srv, _ = make("max_waiting_per_team = 3")
    for who in (ANA, BO, ANA):
        submit(srv, who)
    with pytest.raises(ResourceExhausted, match="team 'red' has 3 waiting jobs, the most"):
        submit(srv, BO)
    for _ in range(4):
        submit(srv, CY)  # in no team


def test_a_known_request_id_is_not_counted(make) -> None:  # type: ignore[no-untyped-def]
    srv, _ = make("max_waiting_per_user = 1\nsubmits_per_minute_per_user = 1")
    first = submit(srv, ANA, "req-1")
    assert submit(srv, ANA, "req-1") == first  # at both caps, the retry gets its job
    with pytest.raises(ResourceExhausted):
        submit(srv, ANA, "req-2")


def test_the_submit_rate_refills_and_says_when_to_retry(make) -> None:  # type: ignore[no-untyped-def]
    srv, clock = make("submits_per_minute_per_user = 3\nsubmits_per_minute_per_team = 4")
    for _ in range(3):
        submit(srv, ANA)
    with pytest.raises(ResourceExhausted) as refused:
        submit(srv, ANA)
    assert str(refused.value) == (
        "user 'ana' has submitted 3 jobs in the last minute, the most the policy allows "
        "(limits.submits_per_minute_per_user); try again in 20 s")
    assert refused.value.retry_after == pytest.approx(20)
    submit(srv, BO)  # the team's fourth
    with pytest.raises(ResourceExhausted, match="team 'red' has submitted 4 jobs"):
        submit(srv, BO)
    clock.now += 20
    submit(srv, ANA)  # a token back for ana, and for the team
    assert waiting(srv) == 5


def test_a_sweep_counts_its_trials(make) -> None:  # type: ignore[no-untyped-def]
    srv, _ = make("max_waiting_per_user = 6\nsubmits_per_minute_per_user = 4")
    sweeps = srv.services.sweeps

    def sweep(who: Identity, values: tuple[str, ...]) -> list[str]:
        return sweeps.submit(who, JobSpec(name="s", command="true"),
                             [Parameter("lr", values=values)], search="grid", trials=0,
                             seed=0, max_parallel=0)[1]
    with pytest.raises(ResourceExhausted, match="may submit 4 jobs a minute .*fewer than "
                                                "the 6 of this request"):
        sweep(ANA, tuple("abcdef"))
    assert len(sweep(ANA, tuple("abc"))) == 3
    with pytest.raises(ResourceExhausted, match="submitted 4 jobs in the last minute"):
        sweep(ANA, tuple("ab"))
    assert waiting(srv) == 3


def test_a_sweep_past_the_waiting_cap_says_how_many_it_adds(make) -> None:  # type: ignore[no-untyped-def]
    srv, _ = make("max_waiting_per_user = 4")
    submit(srv, ANA)
    with pytest.raises(ResourceExhausted, match="has 1 waiting jobs and this request adds 4, "
                                                "more than the 4 the policy allows"):
        srv.services.sweeps.submit(ANA, JobSpec(name="s", command="true"),
                                   [Parameter("lr", values=tuple("abcd"))], search="grid",
                                   trials=0, seed=0, max_parallel=0)
    assert waiting(srv) == 1


def test_a_policy_without_limits_caps_nothing(make) -> None:  # type: ignore[no-untyped-def]
    srv, _ = make("")
    for _ in range(30):
        submit(srv, ANA)


def test_a_bucket_holds_at_most_a_minutes_worth() -> None:
    bucket = TokenBucket(per_minute=60, tokens=0.0, at=0.0)
    assert bucket.wait_for(1, 0.0) == pytest.approx(1.0)
    assert bucket.wait_for(60, 3600.0) == 0  # a quiet hour gives a minute's worth, no more
    assert bucket.tokens == 60
    assert bucket.wait_for(61, 3600.0) == pytest.approx(1.0)


def test_a_changed_rate_takes_effect_at_once(tmp_path: Path) -> None:
    srv = assemble(tmp_path)
    try:
        clock = Clock()
        pressure = Backpressure(srv.jobs, clock)
        pressure.admit(SubmitLimits(submits_per_minute_per_user=10), "ana", "", 5)
        lower = SubmitLimits(submits_per_minute_per_user=2)
        pressure.admit(lower, "ana", "", 2)  # 5 left, of which the lower cap keeps 2
        with pytest.raises(ResourceExhausted, match="submitted 2 jobs"):
            pressure.admit(lower, "ana", "", 1)
        clock.now += 30
        pressure.admit(lower, "ana", "", 1)  # refilled at the lower rate
    finally:
        srv.db.close()
