"""The checks every scenario ends with, once all is quiet: no acknowledged submit missing, no
job still on its way (stuck), each job in the final state its command decides (its EXPECT
label), and each attempt the store says ran executed exactly once (the job's marker files).

Also the retrying a client does across a server's crashes: a call that got no answer is
repeated (a submit with its request id) until the server answers or a deadline passes."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from chaos.workload import EXPECT, MARKER, RAN
from trainyard.client import Client, TrainSpec
from trainyard.client.errors import TrainyardError
from trainyard.client.messages import JobSummary

FINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
ON_THE_WAY = ["WAITING", "LAUNCHING", "RUNNING", "PREEMPTED"]
# No answer: the server is down or restarting. Anything else is its answer.
NO_ANSWER = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED"})
MAX_PROBLEMS = 20  # described in the report; the counts cover all

T = TypeVar("T")


class GaveUp(RuntimeError):
    """The server gave no answer before the deadline."""


def retried(call: Callable[[], T], *, deadline_s: float = 120.0, pause_s: float = 0.2,
            refused: list[str] | None = None) -> T:
    """`call()` until it answers; each unanswered try's code is appended to `refused`."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return call()
        except TrainyardError as exc:
            if exc.code not in NO_ANSWER:
                raise
            if refused is not None:
                refused.append(exc.code)
            if time.monotonic() > deadline:
                raise GaveUp(f"no answer within {deadline_s:.0f} s: {exc}") from exc
            time.sleep(pause_s)


def cancel(client: Client, job_id: str,
           call: Callable[[Callable[[], str]], str] | None = None) -> None:
    """Cancel it, through `call` (retried, by default): a retry whose first try was done
    before its answer was lost finds the job CANCELLED already."""
    try:
        (call or retried)(lambda: client.cancel(job_id))
    except TrainyardError as exc:
        if not (exc.code == "FAILED_PRECONDITION" and "already CANCELLED" in exc.message):
            raise


def submit(client: Client, spec: TrainSpec, **retry: object) -> str:
    """The job's id, once acknowledged; the same request id across retries."""
    assert spec.client_request_id, "a retried submit needs a request id"
    return retried(lambda: client.train(spec).job_id, **retry)  # type: ignore[arg-type]


def all_jobs(client: Client, states: list[str] | None = None) -> list[JobSummary]:
    jobs: list[JobSummary] = []
    token = ""
    for _ in range(100_000):  # bounded: a page per call
        page, token = client.list_jobs(states=states, page_size=500, page_token=token)
        jobs += page
        if not token:
            break
    return jobs


def wait_quiet(client: Client, timeout_s: float) -> float:
    """Until no job is on its way, or `timeout_s`; returns the seconds it took."""
    began = time.monotonic()
    while time.monotonic() - began < timeout_s:
        if not retried(lambda: all_jobs(client, ON_THE_WAY)):
            break
        time.sleep(0.5)
    return time.monotonic() - began


def _lines(path: Path) -> int:
    try:
        return len(path.read_text().splitlines())
    except FileNotFoundError:
        return 0


@dataclass
class Verdict:
    """What the checks found, as counts, with the first problems described."""

    jobs: int = 0
    lost: int = 0  # acknowledged, yet not in the store
    duplicated: int = 0  # an attempt executed twice, or executions the store never recorded
    stuck: int = 0  # still on its way when all should be quiet
    wrong_state: int = 0  # final, but not as its command decides
    unexecuted: int = 0  # the store says an attempt ran; it left no trace
    attempts: int = 0  # that ran, by the store
    executions: int = 0  # by the markers
    preemptions: int = 0  # attempts stopped and requeued (PREEMPTED), by the store
    problems: list[str] = field(default_factory=list)

    def problem(self, text: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)

    def add(self, other: Verdict) -> None:
        for name in ("jobs", "lost", "duplicated", "stuck", "wrong_state", "unexecuted",
                     "attempts", "executions", "preemptions"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for text in other.problems:
            self.problem(text)

    def figures(self) -> dict[str, object]:
        return {"jobs": self.jobs, "lost": self.lost, "duplicated": self.duplicated,
                "stuck": self.stuck, "wrong_state": self.wrong_state,
                "unexecuted": self.unexecuted, "attempts": self.attempts,
                "executions": self.executions, "preemptions": self.preemptions,
                "problems": self.problems}


def verify(client: Client, data_dir: Path, acknowledged: Iterable[str],
           expected: dict[str, str] | None = None) -> Verdict:
    """Check every job in the store. `expected` overrides a job's EXPECT label."""
    verdict = Verdict()
    jobs = retried(lambda: all_jobs(client))
    present = {job.job_id for job in jobs}
    for job_id in sorted(set(acknowledged) - present):
        verdict.lost += 1
        verdict.problem(f"{job_id}: acknowledged, not in the store")
    runs = data_dir / "runs"
    for job in jobs:
        verdict.jobs += 1
        status = retried(lambda job_id=job.job_id: client.status(job_id))  # type: ignore[misc]
        if status.state not in FINAL:
            verdict.stuck += 1
            verdict.problem(f"{job.job_id}: still {status.state} ({status.message})")
            continue
        want = (expected or {}).get(job.job_id) or job.labels.get(EXPECT, "")
        if want and status.state != want:
            verdict.wrong_state += 1
            verdict.problem(f"{job.job_id}: {status.state}, not {want} ({status.message})")
        ran = sum(1 for t in status.transitions if t.to_state == "RUNNING")
        verdict.preemptions += sum(1 for t in status.transitions if t.to_state == "PREEMPTED")
        executions = _lines(runs / job.job_id / "checkpoint" / MARKER)
        verdict.attempts += ran
        verdict.executions += executions
        twice = [n for n in range(1, status.attempt + 1)
                 if _lines(runs / job.job_id / f"attempt-{n}" / "work" / RAN) > 1]
        if twice or executions > ran:
            verdict.duplicated += 1
            verdict.problem(f"{job.job_id}: {executions} executions for {ran} attempts run"
                            + (f"; attempt(s) {twice} ran twice" if twice else ""))
        elif executions < ran:
            verdict.unexecuted += 1
            verdict.problem(f"{job.job_id}: {ran} attempts run by the store, "
                            f"{executions} executions")
    return verdict
