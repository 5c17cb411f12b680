"""Queue rules: the pools of each kind of job, and who a queue takes jobs from, by the
rule submit uses."""

from __future__ import annotations

from dataclasses import replace

from tests.scheduler.builders import TEAMS, job, policy, run
from trainyard.domain.policy import Queue, Team
from trainyard.domain.reasons import ReasonCode
from trainyard.scheduler.queue_rules import Owners, QueueRules


def test_a_queues_pools_by_kind_in_its_order() -> None:
    p = policy(queues={"mixed": Queue("mixed", pools=("box", "cpu", "gone", "gpu"))})
    rules = QueueRules.of(p, "mixed")
    assert rules.pools == {"docker": ("box",), "local": ("cpu", "gpu")}  # none of "gone"
    assert not rules.restricted and rules.access.open


def test_owners_are_admitted_by_name_or_by_a_team_the_policy_lists_them_in() -> None:
    p = policy(queues={"a": Queue("a", pools=("cpu",), users=frozenset({"cat"}),
                                  teams=frozenset({"vision"}))}, teams=TEAMS)
    rules, owners = QueueRules.of(p, "a"), Owners(p)
    assert rules.restricted
    assert owners.admitted(rules, "cat") and owners.admitted(rules, "ann")
    assert not owners.admitted(rules, "bob") and not owners.admitted(rules, "zed")
    assert Owners(p).admitted(QueueRules.of(policy(), "a"), "zed")  # an open queue


def test_changed_access_rules_stop_jobs_already_queued() -> None:
    p = policy(queues={**policy().queues, "a": Queue("a", pools=("cpu",),
                                                     teams=frozenset({"vision"}))},
               teams=TEAMS)
    decided = run(p, [job(1, owner="bob", team="nlp"), job(2, owner="ann", team="vision")])
    assert decided.admit == ("j2",)
    assert decided.pending["j1"].code == ReasonCode.QUEUE_ACCESS
    assert decided.pending["j1"].message == "queue 'a' no longer takes jobs from 'bob'"


def test_access_is_the_owners_as_at_submit_not_the_team_a_job_draws_on() -> None:
    # The rule submit uses: the owner, or a team the policy lists the owner in. A job
    # drawing on no team (or on another) is still its owner's; and ann no longer in team
    # vision may no longer run there.
    p = policy(queues={**policy().queues, "a": Queue("a", pools=("cpu",),
                                                     users=frozenset({"cat"}),
                                                     teams=frozenset({"vision"}))},
               teams=TEAMS)
    decided = run(p, [job(1, owner="ann"), job(2, owner="cat", team="nlp"),
                      job(3, owner="bob", team="vision")])
    assert sorted(decided.admit) == ["j1", "j2"]
    assert decided.pending["j3"].code == ReasonCode.QUEUE_ACCESS
    moved = replace(p, teams={"vision": Team("vision", frozenset({"bob"})),
                              "nlp": Team("nlp", frozenset({"ann"}))})
    again = run(moved, [job(1, owner="ann", team="vision"), job(3, owner="bob", team="nlp")])
    assert again.admit == ("j3",) and again.pending["j1"].code == ReasonCode.QUEUE_ACCESS


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
