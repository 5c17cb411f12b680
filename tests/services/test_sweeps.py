"""A sweep as one unit on a real server: list, show, pause, resume, cancel, its budgets, who
may see it, and its settings checked at submit."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.liveserver import live_server, wait_until
from trainyard.auth.policy import Identity
from trainyard.domain.errors import FailedPrecondition, InvalidArgument, PermissionDenied
from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import ACTIVE_STATES, JobState
from trainyard.domain.sweep import Parameter
from trainyard.server.assembly import TrainyardServer
from trainyard.services.sweeps import SweepRules, SweepService
from trainyard.store.sweeps import SweepStore

ANN = Identity(user="ann", admin=True)
CARL = Identity(user="carl")
NO_RULES = SweepRules()
LR = [Parameter("LR", ("0.1", "0.2", "0.3", "0.4"))]


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[TrainyardServer]:
    with live_server(tmp_path, database_url, max_concurrent=4) as srv:
        yield srv


def sweeps(srv: TrainyardServer) -> SweepService:
    return srv.services.sweeps


def submit(srv: TrainyardServer, command: str, *, max_parallel: int = 0,
           rules: SweepRules = NO_RULES, parameters: list[Parameter] = LR,
           who: Identity = ANN, cpus: float = 0.5) -> tuple[str, list[str]]:
    template = JobSpec(name="lr", command=command, resources=Resources(cpus, 256, 0))
    return sweeps(srv).submit(who, template, parameters, search="grid", trials=0, seed=0,
                              max_parallel=max_parallel, rules=rules)


def states(srv: TrainyardServer, ids: list[str]) -> list[JobState]:
    return [srv.jobs.get(j).state for j in ids]


def test_pause_launches_nothing_new_and_resume_and_cancel_act_on_every_trial(
        server: TrainyardServer) -> None:
    sweep_id, ids = submit(server, "sleep 30", max_parallel=2)
    wait_until(lambda: states(server, ids[:2]) == [JobState.RUNNING] * 2, what="two running")
    paused = sweeps(server).pause(ANN, sweep_id)
    assert paused.state == "PAUSED" and paused.message == "sweep 'lr' paused by ann"
    wait_until(lambda: server.jobs.get(ids[3]).pending_code == "SWEEP_PAUSED",
               what="the waiting trials' reason")
    assert server.jobs.get(ids[2]).pending_message == (
        "sweep 'lr' is paused; it starts when the sweep is resumed (trainyard sweeps resume)")
    # The running ones go on; one that ends frees its slot, and still nothing starts.
    server.service.cancel(ANN, ids[0])
    wait_until(lambda: server.jobs.get(ids[0]).state is JobState.CANCELLED, what="cancelled")
    time.sleep(0.5)  # several passes
    assert states(server, ids) == [JobState.CANCELLED, JobState.RUNNING, JobState.WAITING,
                                   JobState.WAITING]
    with pytest.raises(FailedPrecondition):
        sweeps(server).pause(ANN, sweep_id)
    resumed = sweeps(server).resume(ANN, sweep_id)
    assert resumed.state == "RUNNING" and resumed.message == ""
    wait_until(lambda: server.jobs.get(ids[2]).state is JobState.RUNNING, what="resumed")
    # Written by the pass that launched ids[2], after it handed the launch to a launcher
    # thread, which may record RUNNING first.
    wait_until(lambda: server.jobs.get(ids[3]).pending_code == "SWEEP_LIMIT",
               what="the last trial waits for the sweep's limit again")
    cancelled = sweeps(server).cancel(ANN, sweep_id)
    assert cancelled.state == "CANCELLED" and cancelled.message == \
        "sweep 'lr' was cancelled by ann"
    assert server.jobs.get(ids[3]).state is JobState.CANCELLED
    wait_until(lambda: all(s.is_final() for s in states(server, ids)), what="all stopped")
    assert set(states(server, ids)) == {JobState.CANCELLED}
    shown = sweeps(server).show(ANN, sweep_id)
    assert shown.counts == {"CANCELLED": 4} and shown.total == 4 and shown.stopped_early == 0
    with pytest.raises(FailedPrecondition):
        sweeps(server).resume(ANN, sweep_id)


def test_max_trials_launches_that_many_and_cancels_the_rest_saying_so(
        server: TrainyardServer) -> None:
    sweep_id, ids = submit(server, "true", rules=SweepRules(max_trials=2))
    wait_until(lambda: all(s.is_final() for s in states(server, ids)), what="the end")
    assert states(server, ids) == [JobState.SUCCEEDED] * 2 + [JobState.CANCELLED] * 2
    reached = "sweep 'lr' launched 2 trials, its budget of 2"
    assert server.jobs.get(ids[3]).message == f"not launched: {reached}"
    assert server.jobs.get(ids[3]).attempt == 0  # never launched
    shown = sweeps(server).show(ANN, sweep_id)
    assert (shown.state, shown.message) == ("BUDGET", reached)
    assert shown.use.launched == 2


def test_max_cpu_hours_stops_launching_once_used(server: TrainyardServer) -> None:
    # One trial at a time of 1 CPU for about 2 s: after the first, 3 CPU-seconds are not
    # used yet; after the second they are.
    sweep_id, ids = submit(server, "sleep 2", max_parallel=1, cpus=1.0,
                           rules=SweepRules(max_cpu_hours=3 / 3600))
    wait_until(lambda: all(s.is_final() for s in states(server, ids)), timeout=60,
               what="the end")
    assert states(server, ids) == [JobState.SUCCEEDED] * 2 + [JobState.CANCELLED] * 2
    message = server.jobs.get(ids[2]).message
    assert message.startswith("not launched: sweep 'lr' used ") and \
        message.endswith(" CPU-hours, its budget of 0.000833333 CPU-hours")
    shown = sweeps(server).show(ANN, sweep_id)
    assert shown.state == "BUDGET" and shown.use.cpu_s >= 3.0


def test_list_and_show_and_who_may_act(server: TrainyardServer) -> None:
    mine, ids = submit(server, "true", parameters=[Parameter("LR", ("0.1", "0.2"))])
    theirs, _ = submit(server, "true", who=CARL, parameters=[Parameter("LR", ("0.5",))])
    wait_until(lambda: all(s.is_final() for s in states(server, ids)), what="the end")
    listed, token = sweeps(server).list(ANN)
    assert [v.sweep.id for v in listed] == [theirs, mine] and token == ""
    assert [v.sweep.id for v in sweeps(server).list(CARL)[0]] == [theirs]
    page, token = sweeps(server).list(ANN, page_size=1)
    assert [v.sweep.id for v in page] == [theirs]
    assert [v.sweep.id for v in sweeps(server).list(ANN, page_token=token)[0]] == [mine]
    shown = sweeps(server).show(ANN, mine)
    assert shown.state == "FINISHED" and shown.counts == {"SUCCEEDED": 2}
    assert [t.job.spec.hyperparameters["LR"] for t in shown.trials] == ["0.1", "0.2"]
    assert shown.best is None  # no objective
    for act in (sweeps(server).show, sweeps(server).pause, sweeps(server).cancel):
        with pytest.raises(PermissionDenied):
            act(CARL, mine)
    with pytest.raises(InvalidArgument) as refused:
        sweeps(server).list(ANN, page_token="x")
    assert refused.value.field == "page_token"


@pytest.mark.parametrize(("rules", "field"), [
    (SweepRules(objective="test_accuracy"), "objective"),
    (SweepRules(early_stop="median"), "objective"),
    (SweepRules(objective="acc:max", early_stop="hyperband"), "early_stop"),
    (SweepRules(objective="acc:max", early_stop="asha", reduction=1), "reduction"),
    (SweepRules(objective="acc:max", early_stop="asha", min_steps=-2), "min_steps"),
    (SweepRules(max_trials=-1), "max_trials"),
    (SweepRules(max_gpu_hours=-1.0), "max_gpu_hours"),
])
def test_bad_settings_are_refused_naming_the_field_and_store_nothing(
        server: TrainyardServer, rules: SweepRules, field: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        submit(server, "true", rules=rules)
    assert refused.value.field == field
    assert server.jobs.in_states((JobState.WAITING, *ACTIVE_STATES)) == []
    assert sweeps(server).list(ANN)[0] == []


def test_sweeps_made_in_one_instant_are_each_listed_once_across_pages(
        server: TrainyardServer) -> None:
    store = SweepStore(server.jobs.db)
    made = [f"swsame{i}" for i in range(5)]
    for sweep_id in made:
        store.add(sweep_id, sweep_id, "ann", 0, 1_000.0, {})  # one created_at for all
    seen: list[str] = []
    token = ""
    for _ in range(10):  # bounded: 5 sweeps in pages of 2
        page, token = sweeps(server).list(ANN, page_size=2, page_token=token)
        seen += [v.sweep.id for v in page]
        if not token:
            break
    assert seen == sorted(made, reverse=True)
