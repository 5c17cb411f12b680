"""The agent's thread that keeps the service informed: log and metrics lines in ordered
batches every FLUSH_EVERY seconds, and a heartbeat at the attempt's interval. Its replies
say when the attempt is to stop, and when it is about to be preempted (its notice)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from trainyard.runtime.channel import RuntimeClient, ServiceError
from trainyard.runtime.notice import GivenNotice
from trainyard.runtime.pushers import FLUSH_EVERY, FileTail, Outbox, push_pending
from trainyard.runtime.wire import PushReply, PushRequest

DEFAULT_HEARTBEAT = 10.0


def is_gap(exc: Exception) -> bool:
    return isinstance(exc, ServiceError) and exc.code == "FAILED_PRECONDITION"


class Reporter:
    """Pushes what the job writes; the first error it cannot retry away is kept in `error`
    and reported through `on_failure`, and pushing stops."""

    def __init__(self, client: RuntimeClient, rank: int, metrics: Path, *, push_log: bool,
                 heartbeat_s: float, on_stop: Callable[[], None],
                 on_failure: Callable[[], None],
                 on_notice: Callable[[GivenNotice], None] = lambda _: None) -> None:
        self.client = client
        self.rank = rank
        self.log: Outbox | None = Outbox("log", rank) if push_log else None
        self.metrics = Outbox("metrics", rank)
        self.tail = FileTail(metrics)
        self.heartbeat_s = heartbeat_s if heartbeat_s > 0 else DEFAULT_HEARTBEAT
        self.on_stop = on_stop
        self.on_failure = on_failure
        self.on_notice = on_notice  # called with each reply's notice (a service that
        # gives none, as one older than notices, never calls it)
        self.error: ServiceError | None = None
        self._next_beat = 0.0  # at once: the service learns the job started
        self._done = threading.Event()
        self._lock = threading.Lock()  # one push of a stream at a time
        self._thread = threading.Thread(target=self._loop, name="trainyard-push", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def add_log(self, lines: list[bytes]) -> None:
        if self.log is not None and lines:
            self.log.add(lines)

    def finish(self) -> None:
        """Stop the thread and push everything left; raises what failed."""
        self._done.set()
        self._thread.join()
        if self.error is None:
            self._push(heartbeat=False)
        if self.error is not None:
            raise self.error

    def _send(self, request: PushRequest) -> PushReply:
        reply = self.client.push(request)
        if reply.preempt_notice:
            self.on_notice(GivenNotice(reply.notice_signal, reply.notice_grace_s))
        return reply

    def _loop(self) -> None:
        while self._push(heartbeat=True) and not self._done.wait(FLUSH_EVERY):
            pass

    def _push(self, *, heartbeat: bool) -> bool:
        with self._lock:
            try:
                self.metrics.add(self.tail.read())
                stop = False
                for outbox in (self.log, self.metrics):
                    if outbox is not None:
                        stop |= push_pending(outbox, self._send, is_gap)
                if heartbeat and time.monotonic() >= self._next_beat:
                    self._next_beat = time.monotonic() + self.heartbeat_s
                    stop |= self._send(PushRequest("heartbeat", self.rank)).stop_requested
            except ServiceError as exc:
                self.error = exc
                self.on_failure()
                return False
        if stop:
            self.on_stop()
        return True
