"""The algorithm registry's use cases on both store dialects: versions from a code directory
(content-addressed, stored once) and from an image of the real Docker engine (pinned by id,
so a moved tag changes no version), aliases and their history, the runs and models of each
version, deletion refused while jobs are pinned, and bad input named."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.algorithm_code import TRAIN_PY, code_chunks, register_code, write_tree
from tests.dockerenv import TRAINER_IMAGE, Engine, engine
from tests.services.conftest import ROOT, World, populate
from trainyard.domain.algorithms import DefaultResources, Source, apply
from trainyard.domain.errors import FailedPrecondition, InvalidArgument, NotFound
from trainyard.domain.spec import AlgorithmRef, JobSpec
from trainyard.domain.states import JobState
from trainyard.metadata.artifacts import ArtifactCollector
from trainyard.metadata.hashing import MANIFEST, store_tree
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.services.algorithms import AlgorithmService, Registration
from trainyard.services.image_ids import engine_image_ids
from trainyard.services.images import BASE_IMAGE

__all__ = ["engine"]
MOVING_TAG = "trainyard/algorithm-test:moving"


@pytest.fixture
def world(tmp_path: Path, database_url: str) -> Iterator[World]:
    srv = TrainyardServer(ServerConfig(data_dir=tmp_path / "data", port=0,
                                       database_url=database_url))
    yield populate(srv)
    srv.stop(grace=0)


def service(world: World) -> AlgorithmService:
    return world.services.algorithms


def stored_dirs(world: World) -> list[str]:
    code_dir = world.server.workspace.code_dir
    return sorted(p.name for p in code_dir.glob("*") if not p.name.startswith("."))


def code_request(name: str, **fields: object) -> Registration:
    return replace(Registration(name=name, code=True, command="python3 train.py"),
                   **fields)  # type: ignore[arg-type]


def register_dir(world: World, root: Path, request: Registration,
                 who: str = "member") -> tuple[object, bool]:
    return service(world).register(world.who[who], request, code_chunks(root))


def finish(world: World, job_id: str, model_file: Path) -> None:
    """Run the job to success as the tracker would (none runs here), its model saved."""
    jobs = world.server.jobs
    jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="test",
                    executor="local", pool="local", attempt=1)
    jobs.mark_running(job_id, reason="test", now=1.0)
    jobs.transition(job_id, JobState.RUNNING, JobState.SUCCEEDED, reason="test")
    ArtifactCollector(world.server.models.models, world.server.workspace.artifacts_dir).collect(
        jobs.get(job_id), model_file)


# --- code directories -------------------------------------------------------------------

def test_a_code_directory_is_stored_read_only_under_its_content_hash(
        world: World, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", {"train.py": TRAIN_PY, "lib/util.py": "X = 1\n"})
    version, created = service(world).register(
        world.who["member"], code_request("digits", hyperparameters={"LR": "0.1"},
                                          resources=DefaultResources(cpus=2, memory_mb=512),
                                          description="a trainer", git_commit="abcdef1"),
        code_chunks(root))
    expected, _ = store_tree(root, tmp_path / "reference", "code")
    assert created and version.version == 1 and version.source is Source.CODE
    assert version.code_hash == expected.digest
    assert (version.code_file_count, version.code_size_bytes) == (2, expected.size_bytes)
    assert (version.created_by, version.hyperparameters, version.git_commit) == \
        ("mia", {"LR": "0.1"}, "abcdef1")
    stored = world.server.workspace.code_of(version.code_hash)
    assert (stored / "lib/util.py").read_text() == "X = 1\n"
    assert (stored / MANIFEST).is_file()
    assert not stored.stat().st_mode & stat.S_IWUSR
    assert not (stored / "train.py").stat().st_mode & stat.S_IWUSR
    assert stored_dirs(world) == [version.code_hash]  # the upload's staging is gone
    assert service(world).algorithms.resolve(AlgorithmRef("digits")) == version


def test_the_same_content_is_stored_once_and_the_same_version_is_not_made_twice(
        world: World, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", {"train.py": TRAIN_PY})
    first, created = register_dir(world, root, code_request("one"))
    again, created_again = register_dir(world, root, code_request("one"), who="teammate")
    other, created_other = register_dir(world, root, code_request("two"))
    assert created and not created_again and again == first
    assert created_other and other.code_hash == first.code_hash  # type: ignore[attr-defined]
    assert stored_dirs(world) == [first.code_hash]
    # Any field that differs makes the next version; the numbers go 1, 2, 3.
    second, _ = register_dir(world, root, code_request("one", command="python3 train.py -v"))
    third, _ = register_dir(world, root, code_request("one", description="new words"))
    assert [v.version for v in service(world).algorithms.versions("one")] == [1, 2, 3]
    assert (second.version, third.version) == (2, 3)  # type: ignore[attr-defined]
    listed = {s.name: s for s in service(world).list(world.who["read_only"])}
    assert (listed["one"].versions, listed["one"].latest_version) == (3, 3)
    assert listed["one"].description == "new words"
    assert listed["two"].versions == 1


def test_aliases_move_atomically_and_keep_their_history(world: World) -> None:
    for salt in ("a", "b"):
        register_code(world.server, "aliased", salt)
    algorithms = service(world)
    assert algorithms.set_alias(world.who["member"], "aliased", "production", 1) == (1, None)
    assert algorithms.set_alias(world.who["teammate"], "aliased", "production", 2) == (2, 1)
    detail = algorithms.get(world.who["other_team"], "aliased")
    assert detail.aliases == {"production": 2}
    assert [u.version.aliases for u in detail.versions] == [(), ("production",)]
    assert [(c.alias, c.from_version, c.to_version, c.actor) for c in detail.history] == [
        ("production", None, 1, "mia"), ("production", 1, 2, "max")]
    assert algorithms.algorithms.resolve(AlgorithmRef("aliased", alias="production")
                                         ).version == 2
    with pytest.raises(NotFound):
        algorithms.set_alias(world.who["member"], "aliased", "production", 3)
    assert algorithms.get(ROOT, "aliased").aliases == {"production": 2}


def test_each_version_lists_its_runs_the_caller_may_see_and_their_models(
        world: World, tmp_path: Path) -> None:
    v1 = register_code(world.server, "shown", "1")
    register_code(world.server, "shown", "2")
    job_id, _ = world.services.jobs.train(world.who["member"], JobSpec(
        name="shown-run", algorithm=AlgorithmRef("shown", 1)))
    waiting, _ = world.services.jobs.train(world.who["member"], JobSpec(
        name="shown-run", algorithm=AlgorithmRef("shown", 1)))
    saved = write_tree(tmp_path / "model", {"w.txt": "weights"})
    finish(world, job_id, saved)
    pinned = world.server.jobs.get(job_id).spec
    assert (pinned.algorithm, pinned.code_hash) == (AlgorithmRef("shown", 1), v1.code_hash)

    seen = service(world).get(world.who["teammate"], "shown")
    first, second = seen.versions
    assert (first.job_count, second.job_count) == (2, 0)
    assert [(r.run_id, r.state, r.owner) for r in first.runs] == [
        (f"{job_id}-1", JobState.SUCCEEDED, "mia")]  # the waiting job has no run yet
    model = first.runs[0].model
    assert model is not None and model.model_name == "shown-run" and model.version == 1
    assert waiting != job_id
    unseen = service(world).get(world.who["other_team"], "shown").versions[0]
    assert (unseen.runs, unseen.job_count) == ([], 2)


# --- deletion ---------------------------------------------------------------------------

def test_a_version_jobs_are_pinned_to_is_kept_and_an_unused_one_goes_with_its_code(
        world: World) -> None:
    used = register_code(world.server, "kept", "used")
    unused = register_code(world.server, "kept", "unused")
    twin = register_code(world.server, "twin", "used")  # the same content as `used`
    job_id, _ = world.services.jobs.train(world.who["member"], JobSpec(
        name="pinned", algorithm=AlgorithmRef("kept", 1)))
    algorithms = service(world)
    with pytest.raises(FailedPrecondition, match=rf"kept:1 is used by 1 job\(s\): {job_id} "
                                                 r"\(not run yet\)"):
        algorithms.delete(world.who["member"], "kept", 1)
    assert [v.version for v in algorithms.algorithms.versions("kept")] == [1, 2]

    algorithms.set_alias(world.who["member"], "kept", "staging", 2)
    deleted = algorithms.delete(world.who["member"], "kept", 2)
    assert deleted.code_hash == unused.code_hash
    assert stored_dirs(world) == [used.code_hash]  # its own code directory is gone
    assert algorithms.get(ROOT, "kept").aliases == {}
    with pytest.raises(NotFound):
        algorithms.delete(world.who["member"], "kept", 2)
    # A directory another version still holds stays.
    assert twin.code_hash == used.code_hash
    world.server.jobs.transition(job_id, JobState.WAITING, JobState.CANCELLED, reason="test")
    with pytest.raises(FailedPrecondition):  # a job that ended still keeps its version
        algorithms.delete(world.who["member"], "kept", 1)
    algorithms.delete(world.who["member"], "twin", 1)
    assert stored_dirs(world) == [used.code_hash]


# --- bad input --------------------------------------------------------------------------

def _refused(call: object) -> str:
    assert callable(call)
    with pytest.raises(InvalidArgument) as refused:
        call()
    return refused.value.field


def test_bad_registrations_are_refused_naming_the_field_and_change_nothing(
        world: World, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", {"train.py": TRAIN_PY})
    empty = tmp_path / "empty"
    empty.mkdir()
    algorithms, mia = service(world), world.who["member"]

    def reg(request: Registration, tree: Path | None = root) -> object:
        return lambda: algorithms.register(mia, request, code_chunks(tree) if tree else ())

    assert _refused(reg(code_request("bad name"))) == "name"
    assert _refused(reg(code_request("ok", command=" "))) == "command"
    assert _refused(reg(code_request("ok", hyperparameters={"1LR": "1"}))) == \
        "hyperparameters.1LR"
    assert _refused(reg(code_request("ok", hyperparameters={"CODE_PATH": "/x"}))) == \
        "hyperparameters.CODE_PATH"
    assert _refused(reg(code_request("ok", resources=DefaultResources(gpus=-1)))) == \
        "resources.gpus"
    assert _refused(reg(code_request("ok", git_commit="nothex"))) == "git_commit"
    assert _refused(reg(code_request("ok"), empty)) == "code"
    assert _refused(reg(Registration(name="ok"), None)) == "image"
    assert _refused(reg(Registration(name="ok", image="Not An Image"), None)) == "image"
    # An image alone takes no files (checked after the image is pinned: an engine is not
    # needed to see it, the refusal names what is wrong first).
    pinned = replace(algorithms, image_ids=lambda image: "sha256:" + "0" * 64)
    assert _refused(lambda: pinned.register(mia, Registration(name="ok", image="x:1"),
                                            code_chunks(root))) == "chunk"
    assert algorithms.list(mia) == [] and stored_dirs(world) == []

    assert _refused(lambda: algorithms.get(mia, "bad name")) == "name"
    with pytest.raises(NotFound):
        algorithms.get(mia, "nothing")
    register_code(world.server, "ok")
    assert _refused(lambda: algorithms.set_alias(mia, "ok", "123", 1)) == "alias"
    assert _refused(lambda: algorithms.set_alias(mia, "ok", "prod", 0)) == "version"
    assert _refused(lambda: algorithms.delete(mia, "ok", 0)) == "version"
    assert _refused(lambda: algorithms.delete(mia, "bad/name", 1)) == "name"
    assert algorithms.get(mia, "ok").aliases == {}


def test_an_upload_whose_bytes_do_not_match_is_refused_and_leaves_nothing(
        world: World, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "src", {"train.py": TRAIN_PY})
    chunks = [replace(c, data=c.data.upper()) for c in code_chunks(root)]
    with pytest.raises(InvalidArgument, match="sha256") as refused:
        service(world).register(world.who["member"], code_request("bad"), chunks)
    assert refused.value.field == "code"
    code_dir = world.server.workspace.code_dir
    assert [p for p in code_dir.rglob("*") if p.is_file()] == []
    assert service(world).list(ROOT) == []


# --- images of the real engine ------------------------------------------------------------

def test_an_image_is_pinned_by_its_id_and_a_moved_tag_changes_no_version(
        world: World, engine: Engine) -> None:
    base = engine.client.images.get(BASE_IMAGE)
    trainer = engine.client.images.get(TRAINER_IMAGE)
    assert base.id != trainer.id
    repository, tag = MOVING_TAG.split(":")
    algorithms, mia = service(world), world.who["member"]
    try:
        base.tag(repository, tag)
        first, created = algorithms.register(mia, Registration(name="img", image=MOVING_TAG))
        assert created and (first.source, first.image, first.image_id) == \
            (Source.IMAGE, MOVING_TAG, base.id)
        again, created_again = algorithms.register(mia, Registration(name="img",
                                                                    image=MOVING_TAG))
        assert not created_again and again.version == 1
        trainer.tag(repository, tag)  # the tag moves
        moved, created_moved = algorithms.register(mia, Registration(name="img",
                                                                    image=MOVING_TAG))
        assert created_moved and (moved.version, moved.image_id) == (2, trainer.id)
        assert [v.image_id for v in algorithms.algorithms.versions("img")] == \
            [base.id, trainer.id]
        by_id, _ = algorithms.register(mia, Registration(name="by-id", image=base.id,
                                                         command="python3 -c 1"))
        assert by_id.image_id == base.id
        # A job of version 1 runs what was pinned, not what the tag names now.
        assert apply(JobSpec(name="img-run"), first).image == base.id
    finally:
        engine.client.images.remove(MOVING_TAG, noprune=True)


def test_an_image_the_engine_lacks_or_no_engine_is_refused_naming_image(
        world: World, engine: Engine, tmp_path: Path) -> None:
    algorithms, mia = service(world), world.who["member"]
    missing = Registration(name="img", image="trainyard/never-built:1")
    with pytest.raises(InvalidArgument, match="not an image of the server") as refused:
        algorithms.register(mia, missing)
    assert refused.value.field == "image"
    unknown_id = Registration(name="img", image="sha256:" + "f" * 64)
    assert _refused(lambda: algorithms.register(mia, unknown_id)) == "image"
    away = replace(algorithms, image_ids=engine_image_ids(f"unix://{tmp_path}/none.sock"))
    with pytest.raises(FailedPrecondition, match="^image: the server's container engine"):
        away.register(mia, Registration(name="img", image=BASE_IMAGE))
    assert algorithms.list(mia) == []
