"""The HTTP port: uvicorn serving the app on its own thread and event loop, in the same
process as the gRPC server, bound where gRPC is (127.0.0.1 by default)."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import uvicorn
from fastapi import FastAPI

log = logging.getLogger(__name__)
START_TIMEOUT_S = 10.0


class HttpServer:
    def __init__(self, app: FastAPI, *, tls_cert: Path | None = None,
                 tls_key: Path | None = None, grace_s: float = 5.0,
                 before_stop: Callable[[], None] = lambda: None) -> None:
        self.app = app
        self.before_stop = before_stop  # tells open streams to end
        self.tls_cert = tls_cert
        self.tls_key = tls_key
        self.grace_s = grace_s
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self.port = 0

    @property
    def scheme(self) -> str:
        return "https" if self.tls_cert is not None else "http"

    def bind(self, host: str, port: int) -> int:
        """Listen on host:port (0: a free port); the bound port. OSError if it cannot."""
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP named, so that asyncio sets TCP_NODELAY on each connection it accepts
        # (it does only for sockets that say TCP): else a keep-alive client waits out its
        # delayed ACK (~40 ms) for the body written after the headers.
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            sock.close()
            raise OSError(f"cannot listen for HTTP on {host}:{port}: {exc.strerror}") from None
        sock.listen(1024)
        sock.set_inheritable(True)
        self._socket = sock
        self.port = int(sock.getsockname()[1])
        return self.port

    def start(self) -> None:
        assert self._socket is not None, "bind first"
        config = uvicorn.Config(
            self.app, log_config=None, access_log=False, lifespan="off",
            ssl_certfile=str(self.tls_cert) if self.tls_cert else None,
            ssl_keyfile=str(self.tls_key) if self.tls_key else None,
            timeout_graceful_shutdown=max(1, int(self.grace_s)), server_header=False)
        server = uvicorn.Server(config)
        sock = self._socket

        def serve() -> None:
            asyncio.run(server.serve(sockets=[sock]))

        self._server = server
        self._thread = threading.Thread(target=serve, name="http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not server.started and self._thread.is_alive():
            if time.monotonic() > deadline:
                raise RuntimeError("the HTTP server did not start")
            time.sleep(0.01)
        if not server.started:
            raise RuntimeError("the HTTP server stopped as it started; see the log")
        log.info("serving HTTP on %s://%s", self.scheme, sock.getsockname()[:2])

    def stop(self) -> None:
        self.before_stop()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(self.grace_s + 5)
        if self._socket is not None:
            self._socket.close()
            self._socket = None
