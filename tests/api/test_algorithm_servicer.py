"""RegisterAlgorithm's stream over a real server, on both dialects: the spec first and once,
the files' bytes as their hashes say, each mistake INVALID_ARGUMENT naming its field and
nothing stored; a well-formed upload makes a version. (Chunks for an image alone:
tests/services/test_algorithms.py.)"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import grpc
import pytest

from trainyard.server.assembly import TrainyardServer
from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc

DATA = b"print('train')\n"
CODE_SPEC = pb.AlgorithmUpload(spec=pb.AlgorithmSpec(name="streamed", code=True,
                                                     command="python3 train.py"))
CHUNK = pb.AlgorithmUpload(chunk=pb.CodeChunk(path="train.py", offset=0, data=DATA,
                                              size=len(DATA),
                                              sha256=hashlib.sha256(DATA).hexdigest()))


@pytest.fixture
def stub(server: TrainyardServer) -> Iterator[pb_grpc.TrainingServiceStub]:
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        yield pb_grpc.TrainingServiceStub(channel)


def refusal(stub: pb_grpc.TrainingServiceStub, parts: list[pb.AlgorithmUpload]) -> str:
    with pytest.raises(grpc.RpcError) as refused:
        stub.RegisterAlgorithm(iter(parts), timeout=20)
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    return refused.value.details() or ""


def test_the_stream_opens_with_its_spec_once_and_chunks_only_for_code(
        stub: pb_grpc.TrainingServiceStub, server: TrainyardServer) -> None:
    assert refusal(stub, []).startswith("spec:")
    assert refusal(stub, [CHUNK, CODE_SPEC]).startswith("spec:")
    assert refusal(stub, [CODE_SPEC, CHUNK, CODE_SPEC]).startswith("spec:")
    assert refusal(stub, [CODE_SPEC]).startswith("code:")  # no files at all
    bad_hash = pb.AlgorithmUpload(chunk=pb.CodeChunk(path="train.py", offset=0, data=DATA,
                                                     size=len(DATA), sha256="0" * 64))
    assert refusal(stub, [CODE_SPEC, bad_hash]).startswith("code:")
    assert list(stub.ListAlgorithms(pb.ListAlgorithmsRequest(), timeout=20).algorithms) == []

    made = stub.RegisterAlgorithm(iter([CODE_SPEC, CHUNK]), timeout=20)
    assert (made.name, made.version, made.source, made.created) == ("streamed", 1, "code", True)
    assert made.code_file_count == 1 and made.code_size_bytes == len(DATA)
    again = stub.RegisterAlgorithm(iter([CODE_SPEC, CHUNK]), timeout=20)
    assert (again.version, again.created) == (1, False)
    stored = server.workspace.code_of(made.code_hash) / "train.py"
    assert stored.read_bytes() == DATA
