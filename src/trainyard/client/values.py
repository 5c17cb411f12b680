"""Every request the SDK sends is built here, its values checked against the proto's own
field types first: a number out of its field's range, a float that is not finite, a string
with a lone surrogate, a value of the wrong type, a string past what one request carries.
Each is refused with `InvalidValue` naming the field, before anything is sent, where
protobuf would raise a bare ValueError or TypeError. What the server checks itself (a NUL
byte in a name, a name too long) is left to it: it names the field too."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from trainyard.client.errors import InvalidValue

M = TypeVar("M", bound=Message)

# The most one string of a request may hold; the server's limits are far below it, and a
# request must stay under gRPC's 4 MiB.
MAX_STRING_BYTES = 1 << 20

_INT_RANGES = {
    FieldDescriptor.CPPTYPE_INT32: (-(1 << 31), (1 << 31) - 1),
    FieldDescriptor.CPPTYPE_INT64: (-(1 << 63), (1 << 63) - 1),
    FieldDescriptor.CPPTYPE_UINT32: (0, (1 << 32) - 1),
    FieldDescriptor.CPPTYPE_UINT64: (0, (1 << 64) - 1),
}
_FLOAT32_MAX = 3.4028234663852886e38


def build(message: type[M], **fields: Any) -> M:
    """`message(**fields)`, once every value fits its field."""
    check(message.DESCRIPTOR, fields)
    return message(**fields)


def check(descriptor: Descriptor, fields: Mapping[str, Any], prefix: str = "") -> None:
    """Refuse the first value that does not fit its field of `descriptor`; a nested message
    given as a mapping is checked field by field ("resources.memory_mb")."""
    for name, value in fields.items():
        fd = descriptor.fields_by_name.get(name)
        if fd is None or value is None:
            continue  # protobuf itself names an unknown field; None leaves one unset
        where = f"{prefix}{name}"
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            _check_map(fd, value, where)
        elif fd.is_repeated:
            if isinstance(value, str | bytes) or not isinstance(value, Iterable):
                raise InvalidValue(where, "must be a list")
            for item in value:
                _check_one(fd, item, where)
        else:
            _check_one(fd, value, where)


def _check_map(fd: FieldDescriptor, value: Any, where: str) -> None:
    if not isinstance(value, Mapping):
        raise InvalidValue(where, "must be a mapping of keys to values")
    key_fd = fd.message_type.fields_by_name["key"]
    value_fd = fd.message_type.fields_by_name["value"]
    for key, item in value.items():
        _check_one(key_fd, key, f"{where} key")
        _check_one(value_fd, item, f"{where}.{str(key)[:40]}")


def _check_one(fd: FieldDescriptor, value: Any, where: str) -> None:
    kind = fd.cpp_type
    if kind == FieldDescriptor.CPPTYPE_MESSAGE:
        if isinstance(value, Mapping):
            check(fd.message_type, value, f"{where}.")
        elif not isinstance(value, Message):
            raise InvalidValue(where, f"must be a {fd.message_type.name}, "
                                      f"not {type(value).__name__}")
    elif kind in _INT_RANGES:
        _check_int(value, where, *_INT_RANGES[kind])
    elif kind in (FieldDescriptor.CPPTYPE_DOUBLE, FieldDescriptor.CPPTYPE_FLOAT):
        _check_float(value, where, kind == FieldDescriptor.CPPTYPE_FLOAT)
    elif kind == FieldDescriptor.CPPTYPE_BOOL:
        if not isinstance(value, bool):
            raise InvalidValue(where, f"must be true or false, not {_shown(value)}")
    elif kind == FieldDescriptor.CPPTYPE_ENUM:
        _check_int(value, where, *_INT_RANGES[FieldDescriptor.CPPTYPE_INT32])
        if fd.enum_type.values_by_number.get(value) is None:
            raise InvalidValue(where, f"{value} is not a {fd.enum_type.name}")
    elif fd.type == FieldDescriptor.TYPE_BYTES:
        if not isinstance(value, bytes):
            raise InvalidValue(where, f"must be bytes, not {type(value).__name__}")
    else:
        _check_text(value, where)


def _check_int(value: Any, where: str, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValue(where, f"must be a whole number, not {_shown(value)}")
    if not low <= value <= high:
        raise InvalidValue(where, f"{_shown(value)} is out of range; it must be between "
                                  f"{low:,} and {high:,}")


def _check_float(value: Any, where: str, single: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidValue(where, f"must be a number, not {_shown(value)}")
    number = float(value) if not isinstance(value, int) or abs(value) < 1 << 1000 else math.inf
    if not math.isfinite(number) or (single and abs(number) > _FLOAT32_MAX):
        raise InvalidValue(where, f"must be a finite number, not {_shown(value)}")


def _check_text(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise InvalidValue(where, f"must be text, not {type(value).__name__}")
    try:
        size = len(value.encode())
    except UnicodeEncodeError:
        raise InvalidValue(where, "is not valid Unicode (it holds a lone surrogate)") from None
    if size > MAX_STRING_BYTES:
        raise InvalidValue(where, f"is {size:,} bytes; a request's text may be at most "
                                  f"{MAX_STRING_BYTES:,} bytes")


def _shown(value: Any) -> str:
    """A value as a message may quote it: short, and never its whole length."""
    try:
        text = repr(value)
    except ValueError:  # an integer of more digits than Python prints
        return "a number of thousands of digits"
    return text if len(text) <= 40 else f"{text[:37]}..."
