"""The job runtime over real gRPC on loopback, with the generated stubs and a job token
minted for a running attempt: its dataset pulled whole, its lines pushed exactly once, its
checkpoint and model uploaded, verified, and found where a local job's would be."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest

from tests.api.runtime_live import RuntimeWorld, bearer, chunks, received, runtime_world
from tests.services.conftest import ROOT
from tests.services.test_policy_file_notice import BASE
from trainyard.api.runtime_servicer import NEXT_SEQ_METADATA
from trainyard.domain.algorithms import AlgorithmVersion, Source
from trainyard.domain.notice import NOTICE_FILE
from trainyard.domain.spec import AlgorithmRef, JobSpec
from trainyard.domain.states import JobState
from trainyard.metadata.hashing import store_tree
from trainyard.runtime.notice import GivenNotice, write_notice
from trainyard.store.algorithms import AlgorithmStore
from trainyard.v1 import runtime_pb2 as rpb


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeWorld]:
    yield from runtime_world(tmp_path_factory.mktemp("runtime"))


def test_the_attempt_pulls_its_dataset_whole_and_no_other(world: RuntimeWorld) -> None:
    files = {"train.csv": b"1,2\n" * 100_000, "nested/dir/labels.txt": b"a\nb\n", "empty": b""}
    ref = world.dataset("digits", files)
    other = world.dataset("other", {"x": b"x"})
    job_id, token = world.running_job("pull", ref)
    attempt = world.stub.GetAttempt(rpb.GetAttemptRequest(node="n1", rank=0),
                                    metadata=bearer(token), timeout=10)
    assert (attempt.job_id, attempt.attempt) == (job_id, 1)
    assert attempt.dataset_hash == f"sha256:{ref.version}"
    assert (attempt.dataset_files, attempt.dataset_bytes) == (3, sum(map(len, files.values())))
    assert not attempt.has_checkpoint and attempt.heartbeat_interval_s > 0
    pulled = received(world.stub.PullDataset(
        rpb.PullDatasetRequest(content_hash=attempt.dataset_hash), metadata=bearer(token),
        timeout=30))
    assert pulled == files
    with pytest.raises(grpc.RpcError) as refused:
        list(world.stub.PullDataset(rpb.PullDatasetRequest(content_hash=f"sha256:{other.version}"),
                                    metadata=bearer(token), timeout=10))
    assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED
    assert f"may pull only its dataset version (its own, sha256:{ref.version})" in \
        str(refused.value.details())



def test_the_attempt_pulls_its_code_directory_whole_and_no_other(world: RuntimeWorld) -> None:
    files = {"train.py": b"print('hi')\n", "lib/util.py": b"X = 1\n" * 1000}
    src = world.tmp / "code-src"
    for rel, data in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    digest, _ = store_tree(src, world.server.workspace.code_dir, "code")
    go = world.tmp / "go-code"
    AlgorithmStore(world.server.db).add_version(AlgorithmVersion(
        name="coded", version=0, source=Source.CODE, code_hash=digest.digest,
        command=f"for i in $(seq 1200); do [ -e {go} ] && exit 0; sleep 0.05; done; exit 1"))
    job_id, _ = world.server.service.train(ROOT, JobSpec(name="code",
                                                         algorithm=AlgorithmRef("coded")))
    world.wait(job_id, {JobState.RUNNING})
    token = world.server.tracker.launcher.requests.mint(world.server.jobs.get(job_id))
    attempt = world.stub.GetAttempt(rpb.GetAttemptRequest(node="n1", rank=0),
                                    metadata=bearer(token), timeout=10)
    assert attempt.code_hash == f"sha256:{digest.digest}"
    assert (attempt.code_files, attempt.code_bytes) == (2, sum(map(len, files.values())))
    pulled = received(world.stub.PullCode(rpb.PullCodeRequest(content_hash=attempt.code_hash),
                                          metadata=bearer(token), timeout=30))
    assert pulled == files
    plain_id, plain_token = world.running_job("no-code")
    for wrong, who in ((f"sha256:{'0' * 64}", token), (attempt.code_hash, plain_token)):
        with pytest.raises(grpc.RpcError) as refused:
            list(world.stub.PullCode(rpb.PullCodeRequest(content_hash=wrong),
                                     metadata=bearer(who), timeout=10))
        assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED
        assert "may pull only its code directory" in str(refused.value.details())
    assert world.stub.GetAttempt(rpb.GetAttemptRequest(node="n1", rank=0),
                                 metadata=bearer(plain_token), timeout=10).code_hash == ""
    go.touch()
    world.wait(job_id, {JobState.SUCCEEDED})
    world.finish("no-code", plain_id)


def _push(world: RuntimeWorld, token: str, stream: str, first: int, lines: list[bytes],
          rank: int = 0) -> rpb.PushReply:
    return world.stub.Push(rpb.PushRequest(stream=stream, rank=rank, first_seq=first,
                                           lines=lines), metadata=bearer(token), timeout=10)


def _metric_lines(first: int, last: int) -> list[bytes]:
    return [json.dumps({"step": i, "loss": 1.0 / (i + 1)}).encode() for i in range(first, last)]


def test_pushed_metrics_and_log_lines_arrive_exactly_once(world: RuntimeWorld) -> None:
    job_id, token = world.running_job("push")
    paths = world.server.workspace.attempt(job_id, 1)
    assert _push(world, token, "metrics", 0, _metric_lines(0, 10)).next_seq == 10
    assert _push(world, token, "metrics", 0, _metric_lines(0, 10)).next_seq == 10  # a retry
    assert _push(world, token, "metrics", 5, _metric_lines(5, 20)).next_seq == 20
    with pytest.raises(grpc.RpcError) as gap:
        _push(world, token, "metrics", 30, _metric_lines(30, 35))
    assert gap.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert dict(gap.value.trailing_metadata())[NEXT_SEQ_METADATA] == "20"
    assert "next_seq 20" in str(gap.value.details())
    assert paths.metrics_path.read_bytes() == b"".join(
        line + b"\n" for line in _metric_lines(0, 20))
    log = [b"[rank 0] epoch 1", b"[rank 0] epoch 2"]
    assert _push(world, token, "log", 0, log).next_seq == 2
    assert _push(world, token, "log", 1, log[1:] + [b"[rank 0] done"]).next_seq == 3
    assert paths.log_path.read_bytes() == b"[rank 0] epoch 1\n[rank 0] epoch 2\n[rank 0] done\n"
    beat = _push(world, token, "heartbeat", 0, [])
    assert not beat.stop_requested
    assert world.server.services.runtime.last_heartbeat(job_id, 1) is not None
    deadline = time.monotonic() + 15
    series = world.server.tracker.metrics.series
    while len(series(job_id, "loss")) < 20:
        assert time.monotonic() < deadline, series(job_id, "loss")
        time.sleep(0.05)
    assert [step for step, _ in series(job_id, "loss")] == list(range(20))
    world.server.service.cancel(ROOT, job_id)
    reply = None
    while True:  # asked to stop: the next replies say so, until the attempt has ended
        try:
            reply = _push(world, token, "heartbeat", 0, [])
        except grpc.RpcError as ended:
            assert ended.code() is grpc.StatusCode.UNAUTHENTICATED
            break
        if reply.stop_requested:
            break
    assert reply is None or reply.stop_requested


# A notice that does not stop the job, and graces longer than the test: a stop is the
# checkpoint's doing, and the job, which ignores TERM, stays RUNNING (its KILL far off).
NOTICED = BASE.replace("[queues.train]", "[queues.default]") + \
    'preempt_notice = "SIGUSR1"\npreempt_grace = "10m"\n'


def test_a_noticed_attempt_hears_its_notice_then_its_stop_once_it_saved(
        tmp_path: Path) -> None:
    with contextmanager(runtime_world)(tmp_path, policy=NOTICED, cancel_grace=600.0) as world:
        job_id, token = world.running_job("noticed", ignoring_term=True)
        notice = world.server.workspace.attempt(job_id, 1).workdir / NOTICE_FILE
        beat = _push(world, token, "heartbeat", 0, [])
        assert not beat.preempt_notice and not beat.stop_requested
        # As the tracker gives a remote job notice (tracker/notice.py): the file on this
        # host, then notice_at; its agent is told in each reply, with the queue's signal.
        write_notice(notice, GivenNotice("SIGUSR1", 600.0))
        assert world.server.jobs.update_fields(job_id, JobState.RUNNING,
                                               preempt_requested=True, notice_at=time.time())
        beat = _push(world, token, "heartbeat", 0, [])
        assert (beat.preempt_notice, beat.notice_signal, beat.notice_grace_s) == (
            True, "SIGUSR1", 600.0)
        assert not beat.stop_requested  # within its grace: it goes on, to save
        assert _push(world, token, "log", 0, [b"saving"]).preempt_notice  # every reply
        world.stub.PushCheckpoint(chunks({"step": b"7"}), metadata=bearer(token), timeout=30)
        beat = _push(world, token, "heartbeat", 0, [])
        assert beat.preempt_notice and beat.stop_requested  # saved since: stop now
        notice.unlink()  # a notice this host cannot read: stopped at once, as before notices
        beat = _push(world, token, "heartbeat", 0, [])
        assert beat.stop_requested and not beat.preempt_notice
        (world.tmp / "go-noticed").touch()  # it ends (and so does a next attempt)
        world.wait(job_id, {JobState.SUCCEEDED})


def test_a_checkpoint_goes_up_and_comes_back_and_a_bad_upload_changes_nothing(
        world: RuntimeWorld) -> None:
    job_id, token = world.running_job("ckpt")
    files = {"step-100/weights.bin": bytes(range(256)) * 2000, "step-100/meta.json": b"{}",
             "latest": b"step-100"}
    reply = world.stub.PushCheckpoint(chunks(files), metadata=bearer(token), timeout=30)
    assert (reply.files, reply.bytes) == (3, sum(map(len, files.values())))
    checkpoint = world.server.workspace.attempt(job_id, 1).checkpoint_dir
    # Noted as the attempt's last checkpoint: a preemption's work lost counts from it.
    noted = world.server.jobs.get(job_id)
    assert noted.checkpoints == 1 and noted.checkpoint_at is not None
    assert received(world.stub.PullCheckpoint(rpb.PullCheckpointRequest(),
                                              metadata=bearer(token), timeout=30)) == files
    assert world.stub.GetAttempt(rpb.GetAttemptRequest(), metadata=bearer(token),
                                 timeout=10).has_checkpoint
    bad = list(chunks({"latest": b"step-200"}))
    bad[0].sha256 = hashlib.sha256(b"something else").hexdigest()
    for upload in (bad, list(chunks({"../../escape": b"x"})), list(chunks({"/abs": b"x"})),
                   list(chunks({"ok": b"fine"})) + list(chunks({"ok": b"again"}))):
        with pytest.raises(grpc.RpcError) as refused:
            world.stub.PushCheckpoint(iter(upload), metadata=bearer(token), timeout=30)
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert received(world.stub.PullCheckpoint(rpb.PullCheckpointRequest(),
                                                  metadata=bearer(token), timeout=30)) == files
    job_dir = checkpoint.parent
    assert sorted(p.name for p in job_dir.iterdir()) == ["attempt-1", "checkpoint"]
    assert not (job_dir.parent / "escape").exists() and not Path("/abs").exists()


def test_a_pushed_model_becomes_the_version_the_same_bytes_make_locally(
        world: RuntimeWorld) -> None:
    job_id, token = world.running_job("model")
    files = {"model.pt": b"\x00weights" * 50_000, "config/params.json": b'{"lr": 0.1}'}
    reply = world.stub.PushModel(chunks(files), metadata=bearer(token), timeout=30)
    assert reply.files == 2
    world.finish("model", job_id)
    status = world.server.service.status(ROOT, job_id)
    assert status.model is not None
    local = world.tmp / "local-model"
    for rel, data in files.items():
        (local / rel).parent.mkdir(parents=True, exist_ok=True)
        (local / rel).write_bytes(data)
    digest, _ = store_tree(local, world.tmp / "local-objects", "model")
    assert status.model.content_hash == digest.digest


def test_an_upload_whose_attempt_ended_while_it_arrived_keeps_nothing(
        world: RuntimeWorld) -> None:
    job_id, token = world.running_job("late")
    checkpoint = world.server.workspace.attempt(job_id, 1).checkpoint_dir

    def upload() -> Iterator[rpb.FileChunk]:
        stream = chunks({"weights.bin": b"w" * 300_000})
        yield next(stream)  # the call is authenticated; then its attempt ends
        world.finish("late", job_id)
        yield from stream

    with pytest.raises(grpc.RpcError) as refused:
        world.stub.PushCheckpoint(upload(), metadata=bearer(token), timeout=60)
    assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert "ended while its upload arrived" in (refused.value.details() or "")
    assert not checkpoint.exists() or not any(checkpoint.iterdir())
