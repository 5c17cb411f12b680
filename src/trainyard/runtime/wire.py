"""The protobuf wire format of proto/trainyard/v1/runtime.proto's messages, by hand.

Cluster nodes have python3 but not necessarily the protobuf package, and the runtime must
stay one standard-library folder; its handful of flat messages need only varints,
length-delimited fields and one double. Encoding follows proto3: a field at its default
value is left out. Decoding skips fields it does not know, so the service may add some."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
_MASK64 = (1 << 64) - 1

M = TypeVar("M", bound="Message")


class WireError(ValueError):
    """Bytes that are not a valid encoding of the expected message."""


def encode_varint(value: int) -> bytes:
    value &= _MASK64  # a negative int32/int64 is its 64-bit two's complement: ten bytes
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """The unsigned value at data[pos:] and the position after it."""
    value = shift = 0
    while True:
        if pos >= len(data):
            raise WireError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value & _MASK64, pos
        shift += 7
        if shift >= 70:
            raise WireError("varint longer than ten bytes")


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


# The wire type of each kind of field.
_KINDS: dict[str, int] = {"string": LENGTH, "bytes": LENGTH, "int32": VARINT, "int64": VARINT,
                          "bool": VARINT, "double": FIXED64}


def _encode_value(kind: str, value: Any) -> bytes:
    if kind == "string":
        raw = str(value).encode()
        return encode_varint(len(raw)) + raw
    if kind == "bytes":
        return encode_varint(len(value)) + bytes(value)
    if kind == "double":
        return struct.pack("<d", float(value))
    return encode_varint(int(value))  # int32, int64, bool


def _decode_value(kind: str, raw: int | memoryview, view: bool) -> Any:
    if kind == "string":
        assert isinstance(raw, memoryview)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise WireError("a string field is not UTF-8") from exc
    if kind == "bytes":
        assert isinstance(raw, memoryview)
        return raw if view else raw.tobytes()
    if kind == "double":
        assert isinstance(raw, memoryview)
        return struct.unpack("<d", raw)[0]
    assert isinstance(raw, int)
    if kind == "bool":
        return raw != 0
    return _signed(raw, 32 if kind == "int32" else 64)


def _read_field(data: memoryview, pos: int) -> tuple[int, int, int | memoryview, int]:
    """(field number, wire type, raw value, next position) of the field at data[pos:]; a
    length-delimited value is a view of `data`, not a copy."""
    key, pos = decode_varint(data, pos)
    number, wire_type = key >> 3, key & 7
    if number == 0:
        raise WireError("field number 0")
    if wire_type == VARINT:
        value, pos = decode_varint(data, pos)
        return number, wire_type, value, pos
    if wire_type == LENGTH:
        size, pos = decode_varint(data, pos)
        end = pos + size
    elif wire_type == FIXED64:
        end = pos + 8
    elif wire_type == FIXED32:
        end = pos + 4
    else:
        raise WireError(f"unsupported wire type {wire_type}")
    if end > len(data):
        raise WireError("truncated field")
    return number, wire_type, data[pos:end], end


class Message:
    """A message of flat scalar fields: SCHEMA maps each field name to (number, kind);
    a kind "repeated bytes" is a list of byte strings."""

    SCHEMA: ClassVar[dict[str, tuple[int, str]]] = {}
    # Decoded "bytes" fields are memoryviews of the message's buffer rather than copies:
    # for file chunks, where a copy of every megabyte would cost more than its hash.
    BYTES_AS_VIEWS: ClassVar[bool] = False

    def encode(self) -> bytes:
        out = bytearray()
        for name, (number, kind) in self.SCHEMA.items():
            value = getattr(self, name)
            if kind == "repeated bytes":
                for item in value:
                    out += encode_varint(number << 3 | LENGTH) + _encode_value("bytes", item)
            elif value:  # proto3 leaves defaults out
                out += encode_varint(number << 3 | _KINDS[kind]) + _encode_value(kind, value)
        return bytes(out)

    @classmethod
    def decode(cls: type[M], message: bytes) -> M:
        by_number = {number: (name, kind) for name, (number, kind) in cls.SCHEMA.items()}
        values: dict[str, Any] = {}
        data = memoryview(message)
        pos = 0
        while pos < len(data):
            number, wire_type, raw, pos = _read_field(data, pos)
            known = by_number.get(number)
            if known is None:
                continue  # a field added after this runtime was written
            name, kind = known
            scalar = "bytes" if kind == "repeated bytes" else kind
            if wire_type != _KINDS[scalar]:
                raise WireError(f"field {name} has wire type {wire_type}")
            value = _decode_value(scalar, raw, cls.BYTES_AS_VIEWS)
            if kind == "repeated bytes":
                values.setdefault(name, []).append(value)
            else:
                values[name] = value  # the last one wins, as protobuf says
        return cls(**values)


@dataclass
class GetAttemptRequest(Message):
    SCHEMA = {"node": (1, "string"), "rank": (2, "int32")}
    node: str = ""
    rank: int = 0


@dataclass
class Attempt(Message):
    SCHEMA = {"job_id": (1, "string"), "attempt": (2, "int32"), "dataset_hash": (3, "string"),
              "dataset_bytes": (4, "int64"), "dataset_files": (5, "int32"),
              "has_checkpoint": (6, "bool"), "heartbeat_interval_s": (7, "double"),
              "code_hash": (8, "string"), "code_bytes": (9, "int64"), "code_files": (10, "int32")}
    job_id: str = ""
    attempt: int = 0
    dataset_hash: str = ""
    dataset_bytes: int = 0
    dataset_files: int = 0
    has_checkpoint: bool = False
    heartbeat_interval_s: float = 0.0
    code_hash: str = ""
    code_bytes: int = 0
    code_files: int = 0


@dataclass
class PullDatasetRequest(Message):
    SCHEMA = {"content_hash": (1, "string")}
    content_hash: str = ""


@dataclass
class PullCodeRequest(Message):
    SCHEMA = {"content_hash": (1, "string")}
    content_hash: str = ""


@dataclass
class PullCheckpointRequest(Message):
    SCHEMA = {}


def encode_file_chunk(path: str, offset: int, data: bytes | memoryview, size: int,
                      sha256: str) -> bytes:
    """FileChunk's encoding with `data` copied once, not once per step of a generic
    encoder: what the service sends for every megabyte of a pull."""
    head = bytearray()
    for number, kind, value in ((1, "string", path), (2, "int64", offset)):
        if value:
            head += encode_varint(number << 3 | _KINDS[kind]) + _encode_value(kind, value)
    if len(data):
        head += encode_varint(3 << 3 | LENGTH) + encode_varint(len(data))
    tail = bytearray()
    for number, kind, value in ((4, "int64", size), (5, "string", sha256)):
        if value:
            tail += encode_varint(number << 3 | _KINDS[kind]) + _encode_value(kind, value)
    return b"".join((head, data, tail))


@dataclass
class FileChunk(Message):
    SCHEMA = {"path": (1, "string"), "offset": (2, "int64"), "data": (3, "bytes"),
              "size": (4, "int64"), "sha256": (5, "string")}
    BYTES_AS_VIEWS = True
    path: str = ""
    offset: int = 0
    data: bytes | memoryview = b""
    size: int = 0
    sha256: str = ""

    def encode(self) -> bytes:
        return encode_file_chunk(self.path, self.offset, self.data, self.size, self.sha256)


@dataclass
class PushFilesReply(Message):
    SCHEMA = {"files": (1, "int32"), "bytes": (2, "int64")}
    files: int = 0
    bytes: int = 0


@dataclass
class PushRequest(Message):
    SCHEMA = {"stream": (1, "string"), "rank": (2, "int32"), "first_seq": (3, "int64"),
              "lines": (4, "repeated bytes"), "exit_code": (5, "int32")}
    stream: str = ""
    rank: int = 0
    first_seq: int = 0
    lines: list[bytes] = field(default_factory=list)
    exit_code: int = 0


@dataclass
class PushReply(Message):
    SCHEMA = {"next_seq": (1, "int64"), "stop_requested": (2, "bool"),
              "preempt_notice": (50, "bool"), "notice_signal": (51, "string"),
              "notice_grace_s": (52, "double")}
    next_seq: int = 0
    stop_requested: bool = False
    # Preemption with notice; a service older than it sends none of them: no notice.
    preempt_notice: bool = False
    notice_signal: str = ""
    notice_grace_s: float = 0.0
