"""One HTTP request as one RPC: the request message built from the path, the query and the
body, the gRPC servicer's method called as the caller, and its abort or its reply turned
back into HTTP terms. The servicers stay the one adapter over the use cases; this module
only changes the envelope."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from trainyard.domain.errors import InvalidArgument
from trainyard.domain.runs import parse_threshold
from trainyard.v1 import training_pb2 as pb

_SERVICES = {s.full_name: s for s in pb.DESCRIPTOR.services_by_name.values()}
_INTS = frozenset({
    FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED32,
    FieldDescriptor.TYPE_SFIXED64,
})
_FLOATS = frozenset({FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT})
_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no"})


class Aborted(Exception):
    """What a servicer's context.abort said: a gRPC status code and its sentence."""

    def __init__(self, code: grpc.StatusCode, details: str,
                 trailing: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(details)
        self.code = code
        self.details = details
        self.trailing = trailing  # the trailing metadata the servicer set first


class HttpCall:
    """The part of grpc.ServicerContext the servicers use, for a call that came over HTTP."""

    def __init__(self, metadata: Iterable[tuple[str, str]],
                 is_active: Callable[[], bool] = lambda: True) -> None:
        self._metadata = tuple(metadata)
        self._is_active = is_active
        self._trailing: tuple[tuple[str, str], ...] = ()

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise Aborted(code, details, self._trailing)

    def is_active(self) -> bool:
        return self._is_active()

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def set_trailing_metadata(self, metadata: Any) -> None:
        # Kept for the error an abort makes of it (Retry-After); HTTP sends no trailers.
        self._trailing = tuple((str(k), str(v)) for k, v in metadata)


def method_descriptor(rpc: str) -> MethodDescriptor:
    """The descriptor of '/trainyard.v1.Service/Method'."""
    service, name = rpc.strip("/").split("/")
    return _SERVICES[service].methods_by_name[name]


def request_class(rpc: str) -> type[Message]:
    return GetMessageClass(method_descriptor(rpc).input_type)  # type: ignore[no-any-return]


def _field(descriptor: Descriptor, dotted: str) -> tuple[list[str], FieldDescriptor]:
    """The path and descriptor of a (dotted) field of a message; InvalidArgument if none."""
    parts = dotted.split(".")
    current: Descriptor | None = descriptor
    fd: FieldDescriptor | None = None
    for i, part in enumerate(parts):
        fd = current.fields_by_name.get(part) if current is not None else None
        if fd is None or (i < len(parts) - 1 and (fd.message_type is None or fd.is_repeated)):
            raise InvalidArgument(dotted, "is not a parameter this route takes")
        current = fd.message_type
    assert fd is not None
    return parts, fd


def _scalar(fd: FieldDescriptor, name: str, text: str) -> Any:
    if fd.enum_type is not None:
        if text not in fd.enum_type.values_by_name or text.endswith("_UNSPECIFIED"):
            names = [v.name for v in fd.enum_type.values if not v.name.endswith("UNSPECIFIED")]
            raise InvalidArgument(name, f"{text[:40]!r} is not one of {', '.join(names)}")
        return text
    if fd.type == FieldDescriptor.TYPE_BOOL:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise InvalidArgument(name, f"{text[:40]!r} is not true or false")
    if fd.type in _INTS:
        try:
            return int(text)
        except ValueError:
            raise InvalidArgument(name, f"{text[:40]!r} is not an integer") from None
    if fd.type in _FLOATS:
        try:
            value = float(text)
        except ValueError:
            raise InvalidArgument(name, f"{text[:40]!r} is not a number") from None
        if not math.isfinite(value):
            raise InvalidArgument(name, "must be a finite number")
        return value
    return text


def _threshold(text: str, name: str) -> dict[str, Any]:
    t = parse_threshold(text, name)
    return {"key": t.key, "op": t.op.value, "value": t.value}


# Repeated messages a query can carry, each in a text form.
_TEXT_FORMS: dict[str, Callable[[str, str], dict[str, Any]]] = {
    "trainyard.v1.MetricThreshold": _threshold,
}


def _put(into: dict[str, Any], parts: list[str], value: Any) -> None:
    for part in parts[:-1]:
        into = into.setdefault(part, {})
    into[parts[-1]] = value


def query_fields(descriptor: Descriptor, items: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """The request's fields from a query string: a field by its (dotted) name, a repeated
    one repeated (states=RUNNING&states=WAITING), a map as KEY=VALUE (labels=team=nlp), a
    metric threshold as text (metrics=accuracy>=0.9)."""
    grouped: dict[str, list[str]] = {}
    for key, value in items:
        grouped.setdefault(key, []).append(value)
    out: dict[str, Any] = {}
    for name, values in grouped.items():
        parts, fd = _field(descriptor, name)
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            pairs: dict[str, str] = {}
            for text in values:
                key, sep, value = text.partition("=")
                if not sep or not key:
                    raise InvalidArgument(name, f"{text[:80]!r} is not KEY=VALUE")
                pairs[key] = value
            _put(out, parts, pairs)
        elif fd.message_type is not None:
            form = _TEXT_FORMS.get(fd.message_type.full_name)
            if form is None:
                raise InvalidArgument(name, "is not a parameter this route takes")
            _put(out, parts, [form(text, name) for text in values])
        elif fd.is_repeated:
            _put(out, parts, [_scalar(fd, name, text) for text in values])
        elif len(values) > 1:
            raise InvalidArgument(name, "was given more than once")
        else:
            _put(out, parts, _scalar(fd, name, values[0]))
    return out


def path_fields(descriptor: Descriptor, params: Mapping[str, str],
                into: dict[str, Any]) -> dict[str, Any]:
    """The fields the path names, set in `into`; a body that says otherwise is refused."""
    for name, text in params.items():
        parts, fd = _field(descriptor, name)
        value = _scalar(fd, name, text)
        at: Any = into
        for part in parts[:-1]:
            at = at.get(part) if isinstance(at, dict) else None
        given = at.get(parts[-1]) if isinstance(at, dict) else None
        if given not in (None, "", value):
            raise InvalidArgument(name, f"the body says {str(given)[:40]!r} but the path "
                                  f"says {text[:40]!r}")
        _put(into, parts, value)
    return into


def request_message(rpc: str, fields: Mapping[str, Any]) -> Message:
    message = request_class(rpc)()
    try:
        json_format.ParseDict(dict(fields), message)
    except json_format.ParseError as exc:
        raise InvalidArgument("body", str(exc)) from None
    return message
