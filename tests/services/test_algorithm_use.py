"""Jobs of registered algorithms on both store dialects: a handle resolved once, at submit, to
the version the job keeps (by number, alias or latest), its defaults under the job's own, an
algorithm beside the job's own image or command refused, a moved alias leaving queued and
finished jobs pinned, a reproduction of the same version, a sweep of one version, runs found
by the registered algorithm exactly, and a model's lineage back to its version."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.algorithm_code import register_code
from tests.services.conftest import World, populate
from trainyard.api import convert
from trainyard.domain.algorithms import UNSET_RESOURCES, DefaultResources
from trainyard.domain.errors import InvalidArgument
from trainyard.domain.runs import ModelRef
from trainyard.domain.spec import AlgorithmRef, JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.domain.sweep import Parameter
from trainyard.metadata.artifacts import ArtifactCollector
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.services.runs import RunQuery
from trainyard.store.jobs import JobFilter
from trainyard.v1 import training_pb2 as pb


@pytest.fixture
def world(tmp_path: Path, database_url: str) -> Iterator[World]:
    srv = TrainyardServer(ServerConfig(data_dir=tmp_path / "data", port=0,
                                       database_url=database_url))
    yield populate(srv)
    srv.stop(grace=0)


def submit(world: World, handle: str, **fields: object) -> str:
    """A job of the algorithm by handle, as a request that names no resources carries it."""
    spec = convert.spec_from_request(pb.TrainRequest(name="run", algorithm=handle,
                                                     **fields))  # type: ignore[arg-type]
    job_id, _ = world.services.jobs.train(world.who["member"], spec)
    return job_id


def finish(world: World, job_id: str, tmp_path: Path) -> None:
    """Run it to success as the tracker would (none runs here), with a model saved."""
    jobs = world.server.jobs
    jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="test",
                    executor="local", pool="local", attempt=jobs.get(job_id).attempt + 1)
    jobs.mark_running(job_id, reason="test", now=1.0)
    jobs.transition(job_id, JobState.RUNNING, JobState.SUCCEEDED, reason="test")
    model = tmp_path / f"model-{job_id}"
    model.mkdir()
    (model / "w.txt").write_text(job_id)
    ArtifactCollector(world.server.models.models,
                      world.server.workspace.artifacts_dir).collect(jobs.get(job_id), model)


def test_a_handle_is_resolved_at_submit_to_the_version_the_job_keeps(world: World) -> None:
    v1 = register_code(world.server, "mlp", "1")
    v2 = register_code(world.server, "mlp", "2", hyperparameters={"EPOCHS": "5"})
    world.services.algorithms.set_alias(world.who["member"], "mlp", "production", 1)
    jobs = world.server.jobs
    by_version, by_alias, latest = (jobs.get(submit(world, h)) for h in
                                    ("mlp:1", "mlp@production", "mlp"))
    assert by_version.spec.algorithm == AlgorithmRef("mlp", 1)
    assert by_alias.spec.algorithm == AlgorithmRef("mlp", 1)
    assert latest.spec.algorithm == AlgorithmRef("mlp", 2)
    assert (latest.spec.command, latest.spec.code_hash) == ("python3 train.py", v2.code_hash)
    assert by_alias.spec.code_hash == v1.code_hash != v2.code_hash
    assert latest.spec.hyperparameters == {"EPOCHS": "5"}
    assert latest.kind == "local"  # a code directory without an image runs as a command


@pytest.mark.parametrize(("handle", "problem"), [
    ("nope", "algorithm 'nope' not found"),
    ("mlp:9", "algorithm version 'mlp:9' not found"),
    ("mlp@staging", "algorithm alias 'mlp@staging' not found"),
])
def test_an_unknown_algorithm_version_or_alias_is_refused_naming_algorithm(
        world: World, handle: str, problem: str) -> None:
    register_code(world.server, "mlp")
    with pytest.raises(InvalidArgument) as refused:
        submit(world, handle)
    assert refused.value.field == "algorithm" and problem in refused.value.problem
    assert world.server.jobs.list(JobFilter(), page_size=10)[0] == []  # nothing stored


def test_an_algorithm_with_the_jobs_own_image_or_command_is_refused_naming_both(
        world: World) -> None:
    register_code(world.server, "mlp")
    for extra, named in (({"command": "python3 other.py"}, "command"),
                         ({"image": "trainyard/base:latest"}, "image")):
        with pytest.raises(InvalidArgument) as refused:
            submit(world, "mlp", **extra)
        assert refused.value.field == named
        assert f"--algorithm or --{named}, not both" in refused.value.problem


def test_defaults_apply_under_the_jobs_own_hyperparameters_and_resources(
        world: World) -> None:
    register_code(world.server, "mlp", hyperparameters={"LR": "0.1", "EPOCHS": "3"},
                  resources=DefaultResources(cpus=2.0, memory_mb=2048, gpus=0))
    own = world.server.jobs.get(submit(world, "mlp", hyperparameters={"LR": "0.5"},
                                       resources=pb.Resources(cpus=0.5)))
    assert own.spec.hyperparameters == {"LR": "0.5", "EPOCHS": "3"}
    assert own.spec.resources == Resources(cpus=0.5, memory_mb=2048, gpus=0)
    left = world.server.jobs.get(submit(world, "mlp"))
    assert left.spec.resources == Resources(cpus=2.0, memory_mb=2048, gpus=0)
    # Without an algorithm, a request that names no resources gets the server's.
    plain = convert.spec_from_request(pb.TrainRequest(name="p", command="true"))
    assert plain.resources == Resources() and Resources() != UNSET_RESOURCES


def test_a_moved_alias_leaves_queued_and_finished_jobs_pinned_and_a_reproduction_too(
        world: World, tmp_path: Path) -> None:
    v1 = register_code(world.server, "mlp", "1")
    register_code(world.server, "mlp", "2")
    member = world.who["member"]
    world.services.algorithms.set_alias(member, "mlp", "production", 1)
    finished, queued = submit(world, "mlp@production"), submit(world, "mlp@production")
    finish(world, finished, tmp_path)
    world.services.algorithms.set_alias(member, "mlp", "production", 2)
    jobs = world.server.jobs
    for job_id in (finished, queued):
        assert jobs.get(job_id).spec.algorithm == AlgorithmRef("mlp", 1)
        assert jobs.get(job_id).spec.code_hash == v1.code_hash
    again, _, spec, _ = world.services.runs.reproduce(member, f"{finished}-1")
    assert spec.algorithm == AlgorithmRef("mlp", 1)
    assert jobs.get(again).spec.code_hash == v1.code_hash
    assert jobs.get(again).reproduced_from == f"{finished}-1"


def test_a_sweeps_trials_all_run_one_version(world: World) -> None:
    register_code(world.server, "mlp", "1")
    world.services.algorithms.set_alias(world.who["member"], "mlp", "production", 1)
    template = JobSpec(name="lr", algorithm=AlgorithmRef("mlp", 0, "production"),
                       resources=UNSET_RESOURCES)
    _, job_ids = world.services.sweeps.submit(
        world.who["member"], template, [Parameter("LR", ("0.1", "0.2", "0.3"))],
        search="grid", trials=0, seed=0, max_parallel=0)
    pins = {world.server.jobs.get(j).spec.algorithm for j in job_ids}
    assert pins == {AlgorithmRef("mlp", 1)} and len(job_ids) == 3


def test_runs_are_found_by_the_registered_algorithm_exactly(world: World,
                                                            tmp_path: Path) -> None:
    register_code(world.server, "mlp")
    ours = submit(world, "mlp")
    finish(world, ours, tmp_path)
    # A job of no algorithm named as if it were one is not a run of the registered one...
    lookalike, _ = world.services.jobs.train(world.who["member"],
                                             JobSpec(name="mlp-3", command="true"))
    finish(world, lookalike, tmp_path)
    # ...nor is a job pinned to another algorithm whose name starts the same way.
    register_code(world.server, "mlp-big")
    other = submit(world, "mlp-big")
    finish(world, other, tmp_path)
    member = world.who["member"]
    views, _ = world.services.runs.list_runs(member, RunQuery(algorithm="mlp"))
    found = {v.run.job.id for v in views}
    assert ours in found and other not in found
    # The runs of jobs pinned to none keep today's rule: label, else the name's start.
    assert lookalike in found  # its name is mlp-3, and it is pinned to no algorithm


def test_a_models_lineage_names_its_algorithm_version(world: World, tmp_path: Path) -> None:
    version = register_code(world.server, "mlp")
    job_id = submit(world, "mlp")
    finish(world, job_id, tmp_path)
    model = world.server.models.models.for_job(job_id)
    assert model is not None
    lineage = world.services.models.lineage(world.who["member"],
                                            ModelRef(model.model_name, model.version))
    assert lineage.algorithm is not None
    assert (lineage.algorithm.name, lineage.algorithm.version) == ("mlp", version.version)
    assert lineage.run.spec.code_hash == version.code_hash
    # And from the algorithm to the run and the model it made.
    detail = world.services.algorithms.get(world.who["member"], "mlp")
    runs = detail.versions[0].runs
    assert [r.run_id for r in runs] == [f"{job_id}-1"]
    assert runs[0].model is not None and runs[0].model.content_hash == model.content_hash
