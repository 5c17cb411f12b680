"""Pydantic models made from the protocol's messages, so that the HTTP API's OpenAPI
document and its request checks come from the same `.proto` as gRPC. A JSON body has the
proto's field names, enums by name, 64-bit integers as numbers and times in ISO 8601 (the
form `trainyard ... --output json` prints, client/messages.py `plain`)."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any, Literal

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from pydantic import BaseModel, ConfigDict, Field, create_model

_SCALARS: dict[int, Any] = {
    FieldDescriptor.TYPE_DOUBLE: float, FieldDescriptor.TYPE_FLOAT: float,
    FieldDescriptor.TYPE_INT64: int, FieldDescriptor.TYPE_UINT64: int,
    FieldDescriptor.TYPE_INT32: int, FieldDescriptor.TYPE_UINT32: int,
    FieldDescriptor.TYPE_SINT32: int, FieldDescriptor.TYPE_SINT64: int,
    FieldDescriptor.TYPE_FIXED32: int, FieldDescriptor.TYPE_FIXED64: int,
    FieldDescriptor.TYPE_SFIXED32: int, FieldDescriptor.TYPE_SFIXED64: int,
    FieldDescriptor.TYPE_BOOL: bool, FieldDescriptor.TYPE_STRING: str,
    FieldDescriptor.TYPE_BYTES: str,  # base64 in requests; responses send text where it is
}
TIMESTAMP = "google.protobuf.Timestamp"
_STRICT = ConfigDict(extra="forbid")
_OPEN = ConfigDict(extra="allow")


def enum_names(fd: FieldDescriptor) -> tuple[str, ...]:
    """An enum field's values by name, without the UNSPECIFIED one."""
    return tuple(v.name for v in fd.enum_type.values if not v.name.endswith("_UNSPECIFIED"))


def field_type(fd: FieldDescriptor, *, request: bool) -> Any:
    """The Python type of one value of a field (its elements' type when repeated)."""
    if fd.message_type is not None:
        if fd.message_type.full_name == TIMESTAMP:
            return datetime if request else str
        return model_for(fd.message_type, request=request)
    if fd.enum_type is not None:
        return Literal[enum_names(fd)]  # type: ignore[valid-type]
    return _SCALARS[fd.type]


def _annotation(fd: FieldDescriptor, *, request: bool) -> Any:
    if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
        value = fd.message_type.fields_by_name["value"]
        return dict[str, field_type(value, request=request)]  # type: ignore[misc]
    if fd.is_repeated:
        return list[field_type(fd, request=request)]  # type: ignore[misc]
    one = field_type(fd, request=request)
    return one | None


@functools.cache
def model_for(descriptor: Descriptor, *, request: bool) -> type[BaseModel]:
    """The model of a message: every field optional (proto3 has defaults), and in a request
    no field the message lacks (a misspelt key is refused, naming it)."""
    fields: dict[str, Any] = {}
    for fd in descriptor.fields:
        fields[fd.name] = (_annotation(fd, request=request), Field(default=None))
    suffix = "" if request else "Out"
    model = create_model(  # type: ignore[call-overload]
        descriptor.name + suffix, __config__=_STRICT if request else _OPEN, **fields)
    model.__doc__ = f"The {descriptor.full_name} message."
    return model  # type: ignore[no-any-return]
