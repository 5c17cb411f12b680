"""The interceptor's answer when the store cannot say who calls."""

from __future__ import annotations

from typing import Any

import grpc
import psycopg
import pytest
from sqlalchemy.exc import OperationalError

from trainyard.api.auth import AuthInterceptor
from trainyard.api.errors import DATABASE_AWAY


class Aborted(Exception):
    pass


class Context:
    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise Aborted(code, details)


class Details:
    method = "/trainyard.v1.TrainingService/GetTrainingStatus"
    invocation_metadata = (("authorization", "Bearer ty_x"),)


@pytest.mark.parametrize(("error", "code"), [
    (OperationalError("SELECT ...", {}, psycopg.OperationalError("connection refused")),
     grpc.StatusCode.UNAVAILABLE),
    (KeyError("a bug"), grpc.StatusCode.INTERNAL),
])
def test_a_database_away_while_checking_credentials_is_unavailable(
        monkeypatch: pytest.MonkeyPatch, error: Exception, code: grpc.StatusCode) -> None:
    def caller(*_: Any) -> Any:
        raise error

    interceptor = AuthInterceptor(access=None, runtime=None)  # type: ignore[arg-type]
    monkeypatch.setattr(interceptor, "caller", caller)
    handler = grpc.unary_unary_rpc_method_handler(lambda request, context: None)
    refusal = interceptor.intercept_service(lambda details: handler, Details())  # type: ignore[arg-type]
    with pytest.raises(Aborted) as refused:
        refusal.unary_unary(None, Context())
    assert refused.value.args[0] is code
    if code is grpc.StatusCode.UNAVAILABLE:
        assert refused.value.args[1] == DATABASE_AWAY
