"""Who a queue takes jobs from at admission: the rule submit uses (Policy.takes)."""

from __future__ import annotations

from tests.scheduler.builders import job, policy, run
from trainyard.domain.policy import Queue, Team
from trainyard.domain.reasons import ReasonCode
from trainyard.scheduler.queue_rules import Owners, QueueRules

CLOSED = Queue("closed", pools=("cpu",), users=frozenset({"ann"}), teams=frozenset({"nlp"}))


def test_a_restricted_queue_takes_its_users_its_teams_members_and_admins() -> None:
    p = policy(queues={"closed": CLOSED}, teams={"nlp": Team("nlp", frozenset({"bob"}))},
               admins=frozenset({"root"}))
    owners, rules = Owners(p), QueueRules.of(p, "closed")
    assert [owners.admitted(rules, who) for who in ("ann", "bob", "root", "cat")] == \
        [True, True, True, False]
    for who in ("ann", "bob", "root", "cat"):  # the very answer submit gets
        assert owners.admitted(rules, who) == p.takes(CLOSED, who)


def test_an_admins_job_is_admitted_where_a_members_job_waits_for_access() -> None:
    p = policy(queues={"closed": CLOSED}, admins=frozenset({"root"}))
    decided = run(p, [job(1, "closed", owner="root"), job(2, "closed", owner="cat")])
    assert decided.admit == ("j1",)
    assert decided.pending["j2"].code == ReasonCode.QUEUE_ACCESS
