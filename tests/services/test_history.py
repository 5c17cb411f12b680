"""The history export's use case: pages that carry on where the last stopped, the policy in
force on the first page alone (FIFO's pools and limit, or the file's text), its bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.services.conftest import ROOT, World, assemble
from tests.store.test_history import finished
from trainyard.domain.errors import InvalidArgument
from trainyard.services.history import PoolInForce

POLICY = """
max_running = 3
[pools.cpu]
cpus = 8
max_jobs = 3
[queues.default]
pools = ["cpu"]
"""


def test_pages_carry_on_and_the_first_says_the_policy(world: World) -> None:
    history, jobs = world.services.history, world.server.jobs
    ids = [finished(jobs, f"j{i}", 100.0 + i, 110.0 + i, 120.0 + i) for i in range(5)]
    first = history.export(ROOT, None, 2, "")
    assert [job.id for job in first.jobs] == ids[:2] and first.next_token
    assert first.window is not None and (first.window.jobs, first.window.first_submit) == \
        (5, 100.0)
    assert first.policy is not None
    assert (first.policy.source, first.policy.text, first.policy.format) == ("", "", "")
    assert first.policy.max_running == 4  # the server's default limit, FIFO's
    assert first.policy.pools == (PoolInForce("local", "local", None, None, (), 4),)
    second = history.export(ROOT, None, 2, first.next_token)
    assert [job.id for job in second.jobs] == ids[2:4]
    assert second.policy is None and second.window is None
    last = history.export(ROOT, None, 2, second.next_token)
    assert [job.id for job in last.jobs] == ids[4:] and last.next_token == ""
    assert [job.id for job in history.export(ROOT, 103.0, 0, "").jobs] == ids[3:]


@pytest.mark.parametrize(("size", "token", "field"), [
    (-1, "", "page_size"), (5001, "", "page_size"), (0, "x", "page_token"),
    (0, "-4", "page_token")])
def test_bounds(world: World, size: int, token: str, field: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        world.services.history.export(ROOT, None, size, token)
    assert field in str(refused.value)


def test_a_policy_file_in_force_is_sent_as_read(tmp_path: Path) -> None:
    srv = assemble(tmp_path, POLICY)
    try:
        policy = srv.services.history.in_force()
    finally:
        srv.stop(grace=0)
    assert policy.text == POLICY and policy.format == "toml"
    assert policy.source == str(tmp_path / "policy.toml")
    assert (policy.max_running, policy.pools) == (3, (PoolInForce("cpu", "local", 8.0, None,
                                                                  (), 3),))
