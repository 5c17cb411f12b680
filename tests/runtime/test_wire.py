"""The hand-written codec against the generated protobuf code, both ways."""

from __future__ import annotations

import dataclasses

import pytest
from google.protobuf.message import Message as ProtoMessage

from trainyard.runtime import wire
from trainyard.v1 import runtime_pb2 as pb

SAMPLES: list[wire.Message] = [
    wire.GetAttemptRequest(node="n1", rank=3),
    wire.GetAttemptRequest(rank=-1),
    wire.Attempt(job_id="abc", attempt=2, dataset_hash="sha256:" + "f" * 64,
                 dataset_bytes=2**40, dataset_files=7, has_checkpoint=True,
                 heartbeat_interval_s=2.5, code_hash="sha256:" + "c" * 64, code_bytes=2**33,
                 code_files=3),
    wire.Attempt(attempt=-2**31, dataset_bytes=-2**63, heartbeat_interval_s=-0.125),
    wire.PullDatasetRequest(content_hash="sha256:00"),
    wire.PullCodeRequest(content_hash="sha256:0c"),
    wire.PullCheckpointRequest(),
    wire.FileChunk(path="a/b.csv", offset=2**33, data=bytes(range(256)) * 8192, size=2**34,
                   sha256="e" * 64),
    wire.FileChunk(path="empty"),
    wire.PushFilesReply(files=3, bytes=12345),
    wire.PushRequest(stream="log", rank=1, first_seq=99,
                     lines=[b"", "ünïcode".encode(), b"\x00\xff" * 70000]),
    wire.PushRequest(stream="heartbeat"),
    wire.PushReply(next_seq=2**62, stop_requested=True),
    wire.PushReply(next_seq=5, preempt_notice=True, notice_signal="SIGUSR1",
                   notice_grace_s=90.0),
    wire.PushReply(),
]


def generated(message: wire.Message) -> type[ProtoMessage]:
    cls: type[ProtoMessage] = getattr(pb, type(message).__name__)
    return cls


def as_dict(message: wire.Message) -> dict[str, object]:
    return {f.name: getattr(message, f.name) for f in dataclasses.fields(message)}  # type: ignore[arg-type]


@pytest.mark.parametrize("message", SAMPLES, ids=lambda m: type(m).__name__)
def test_what_we_encode_the_generated_code_reads_and_back(message: wire.Message) -> None:
    theirs = generated(message).FromString(message.encode())
    for name, value in as_dict(message).items():
        assert getattr(theirs, name) == value, name
    assert type(message).decode(theirs.SerializeToString()) == message
    # proto3 leaves defaults out in both: the same bytes
    assert message.encode() == theirs.SerializeToString()


def test_every_message_of_the_proto_is_coded_with_its_fields() -> None:
    names = {m.name for m in pb.DESCRIPTOR.message_types_by_name.values()}
    coded = {type(m).__name__ for m in SAMPLES}
    assert coded == names
    for message in SAMPLES:
        descriptor = generated(message).DESCRIPTOR
        proto_fields = {f.name: f.number for f in descriptor.fields}
        assert {name: number for name, (number, _) in message.SCHEMA.items()} == proto_fields
        assert set(as_dict(message)) == set(proto_fields)


def test_unknown_fields_are_skipped() -> None:
    # Fields a newer service may add: every wire type, before and after the known ones.
    extra = (wire.encode_varint(20 << 3 | wire.VARINT) + wire.encode_varint(-5)
             + wire.encode_varint(21 << 3 | wire.FIXED64) + b"\x01" * 8
             + wire.encode_varint(22 << 3 | wire.LENGTH) + wire.encode_varint(3) + b"xyz"
             + wire.encode_varint(23 << 3 | wire.FIXED32) + b"\x02" * 4)
    reply = wire.PushReply(next_seq=7, stop_requested=True)
    assert wire.PushReply.decode(extra + reply.encode() + extra) == reply


def test_a_reply_of_a_service_older_than_notices_gives_none() -> None:
    # It knows fields 1 and 2 alone: the stop stands as before, and no notice comes.
    old = pb.PushReply(next_seq=4, stop_requested=True).SerializeToString()
    reply = wire.PushReply.decode(old)
    assert reply == wire.PushReply(next_seq=4, stop_requested=True)
    assert not reply.preempt_notice and reply.notice_signal == ""


def test_an_empty_message_decodes_to_the_defaults() -> None:
    assert wire.Attempt.decode(b"") == wire.Attempt()
    assert wire.PullCheckpointRequest().encode() == b""


@pytest.mark.parametrize("data", [b"\x80", b"\x0a\x05ab", b"\x08" + b"\xff" * 11, b"\x0b",
                                  b"\x08\x01"])
def test_broken_bytes_raise_a_wire_error(data: bytes) -> None:
    # truncated varint, truncated string, an endless varint, a group, a wrong wire type
    with pytest.raises(wire.WireError):
        wire.PushRequest.decode(data)
