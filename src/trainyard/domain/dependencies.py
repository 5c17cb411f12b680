"""Jobs that wait for jobs (`--after JOB_ID[:succeeded|:finished]`): what a dependency is,
the checks of a submit's list, the check that the graph has no cycle, and what a dependent
job's needs, as they stand, make of it (wait, join the queue, or be cancelled), with the
sentences that say so. Pure rules; the service and the tracker apply them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from trainyard.domain.errors import InvalidArgument
from trainyard.domain.states import JobState

FIELD = "after"
MAX_NEEDS = 64  # a job waits for at most this many jobs
MAX_JOB_ID = 32  # the width of jobs.id: a longer id could never have been issued


class Condition(StrEnum):
    SUCCEEDED = "succeeded"  # the needed job must succeed; its failure cancels the dependent
    FINISHED = "finished"  # any final state will do


DEFAULT_CONDITION = Condition.SUCCEEDED


@dataclass(frozen=True)
class Dependency:
    """One job another waits for, and how it must end."""

    job_id: str
    condition: Condition = DEFAULT_CONDITION

    def __str__(self) -> str:
        return f"{self.job_id}:{self.condition}"


@dataclass(frozen=True)
class Need:
    """A dependency as it stands: the needed job's state now, and whether it was met (a met
    need stays met: its job is final)."""

    dependency: Dependency
    state: JobState
    met: bool = False

    @property
    def job_id(self) -> str:
        return self.dependency.job_id


def parse_dependency(text: str) -> Dependency:
    """"JOB_ID", "JOB_ID:succeeded" or "JOB_ID:finished", as the CLI and SDK take it."""
    job_id, _, condition = text.strip().partition(":")
    return dependency(job_id, condition)


def dependency(job_id: str, condition: str = "") -> Dependency:
    """One dependency from its two request fields; a bad one is refused naming `after`."""
    if not job_id:
        raise InvalidArgument(FIELD, "names no job; give JOB_ID or JOB_ID:CONDITION")
    if len(job_id) > MAX_JOB_ID or not job_id.isalnum() or not job_id.isascii():
        raise InvalidArgument(FIELD, f"{job_id[:MAX_JOB_ID]!r} is not a job id")
    try:
        return Dependency(job_id, Condition(condition.strip().lower() or DEFAULT_CONDITION))
    except ValueError:
        raise InvalidArgument(FIELD, f"job {job_id}: {condition[:40]!r} is not a condition; "
                              "use 'succeeded' or 'finished'") from None


def checked(dependencies: Iterable[Dependency]) -> tuple[Dependency, ...]:
    """A submit's list with repeats collapsed, in the order given. A job named twice with
    two conditions, or more than MAX_NEEDS jobs, is refused naming `after`."""
    by_job: dict[str, Dependency] = {}
    for dep in dependencies:
        seen = by_job.get(dep.job_id)
        if seen is not None and seen.condition is not dep.condition:
            raise InvalidArgument(FIELD, f"job {dep.job_id} is named twice, as {seen} and "
                                  f"as {dep}; name it once")
        by_job[dep.job_id] = dep
    if len(by_job) > MAX_NEEDS:
        raise InvalidArgument(FIELD, f"names {len(by_job)} jobs; at most {MAX_NEEDS}")
    return tuple(by_job.values())


def find_cycle(job_id: str, needs: Iterable[str],
               edges: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A path from `job_id` back to itself if it waited for `needs`, given what the other
    jobs wait for (`edges`: job id -> the ids it waits for); None if there is none. The path
    starts and ends with `job_id`: ["a", "b", "a"] means a waits for b, which waits for a."""
    parent: dict[str, str] = {}
    stack = [(job_id, need) for need in needs]
    while stack:
        source, node = stack.pop()
        if node in parent:
            continue
        parent[node] = source
        if node == job_id:
            path = [job_id]
            step = parent[job_id]
            while step != job_id:
                path.append(step)
                step = parent[step]
            path.append(job_id)
            return path[::-1]
        stack.extend((node, nxt) for nxt in edges.get(node, ()))
    return None


def cycle_sentence(path: Sequence[str]) -> str:
    chain = " -> ".join(path)
    if len(path) <= 2:
        return f"job {path[0]} would wait for itself; a job cannot wait for itself"
    return f"would make a cycle ({chain}, each waiting for the next); jobs cannot wait in " \
           "a circle"


def met(dependency: Dependency, state: JobState) -> bool:
    """Whether a needed job in `state` is done as the dependency asks."""
    if dependency.condition is Condition.FINISHED:
        return state.is_final()
    return state is JobState.SUCCEEDED


def never_met(dependency: Dependency, state: JobState) -> bool:
    """Whether the needed job ended in a way the dependency can never accept. A FAILED job
    that will be retried is back in WAITING before anyone reads FAILED (one transaction), so
    a FAILED read here is final."""
    return dependency.condition is Condition.SUCCEEDED and state.is_final() and \
        state is not JobState.SUCCEEDED


@dataclass(frozen=True)
class Verdict:
    """What a dependent job's needs make of it now: `cancel` (why) when one can never be
    met, else `waiting` (the needs still open; none: it joins the queue) and `newly_met`
    (needs met since they were last marked)."""

    waiting: tuple[Need, ...] = ()
    newly_met: tuple[str, ...] = ()
    cancel: str = ""

    @property
    def ready(self) -> bool:
        return not self.cancel and not self.waiting


def judge(needs: Iterable[Need]) -> Verdict:
    """The verdict on one waiting dependent job, from all its needs as they stand."""
    waiting: list[Need] = []
    newly: list[str] = []
    for need in needs:
        if need.met:
            continue
        if never_met(need.dependency, need.state):
            return Verdict(cancel=cancelled_sentence(need.job_id, need.state))
        if met(need.dependency, need.state):
            newly.append(need.job_id)
        else:
            waiting.append(need)
    return Verdict(tuple(waiting), tuple(newly))


def cancelled_sentence(job_id: str, state: JobState) -> str:
    """The reason and message of a dependent cancelled because a job it needed ended so."""
    return f"cancelled: job {job_id} it waits for ended {state}"


def never_sentence(job_id: str, state: JobState) -> str:
    """A submit refused because a job it would need to succeed has already ended so."""
    return (f"job {job_id} already ended {state}, so this job would never run; use "
            f"{job_id}:{Condition.FINISHED} to run it after that job anyway")


def waiting_sentence(needs: Sequence[Need]) -> str:
    """The pending message of a job that waits for others, e.g. "waits for job abc123
    (RUNNING) to succeed and job def456 (WAITING) to finish"."""
    parts = [f"job {n.job_id} ({n.state}) to "
             f"{'succeed' if n.dependency.condition is Condition.SUCCEEDED else 'finish'}"
             for n in needs]
    if len(parts) > 1:
        parts[-2:] = [f"{parts[-2]} and {parts[-1]}"]
    return "waits for " + ", ".join(parts)
