"""What the SDK and the CLI ask for when a field is left out is what the server's domain
gives it: the same defaults, field by field."""

from __future__ import annotations

import dataclasses

import typer.main

from trainyard.cli.main import app
from trainyard.client import Resources, TrainSpec
from trainyard.domain import spec as domain
from trainyard.quantities import size_mib

# The SDK's own fields, which the domain's JobSpec does not hold.
SDK_ONLY = {"client_request_id", "pipeline", "pipeline_max_parallel", "after"}
# What the server fills in from the job's algorithm, never sent.
SERVER_ONLY = {"code_hash"}
# JobSpec's dataset and algorithm are references or None; the SDK's, text or "". The SDK's
# resources are None when not given (its algorithm's, else the server's).
SPELLED_OTHERWISE = {"dataset": ("", None), "algorithm": ("", None)}


def defaults(cls: type) -> dict[str, object]:
    out: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def test_train_spec_defaults_are_the_job_spec_defaults() -> None:
    sdk, server = defaults(TrainSpec), defaults(domain.JobSpec)
    assert set(sdk) - SDK_ONLY == set(server) - SERVER_ONLY
    for name, value in server.items():
        if name in SERVER_ONLY:
            continue
        if name in SPELLED_OTHERWISE:
            assert (sdk[name], value) == SPELLED_OTHERWISE[name], name
        elif name == "resources":
            assert sdk[name] is None
            sent = TrainSpec(name="x").to_pb().resources
            assert (sent.cpus, sent.memory_mb, sent.gpus) == (0, 0, 0)  # the server's default
        else:
            assert sdk[name] == value, name


def test_resources_defaults_are_the_domain_resources() -> None:
    assert dataclasses.asdict(Resources()) == dataclasses.asdict(domain.Resources())
    assert [f.name for f in dataclasses.fields(Resources)] == \
        [f.name for f in dataclasses.fields(domain.Resources)]


def test_the_cli_submits_with_the_same_defaults() -> None:
    command = typer.main.get_command(app)
    server, res = defaults(domain.JobSpec), domain.Resources()
    expected = {"cpus": res.cpus, "memory": res.memory_mb, "gpus": res.gpus,
                "workers": server["workers"], "queue": server["queue"],
                "priority": server["priority"], "command": server["command"],
                "image": server["image"], "git_commit": server["git_commit"],
                "model_name": server["model_name"]}
    for name in ("submit", "sweep"):
        params = {p.name: p.default for p in command.commands[name].params}  # type: ignore[attr-defined]
        params["memory"] = size_mib(params["memory"])  # --memory takes a size as typed
        assert {k: params[k] for k in expected} == expected, name
