"""Job traces: the project's CSV format, the Alibaba openb pod list, and generated traces.

The project's format, one job a row, times in seconds from the trace's start:

    job_id,submit_time,duration,num_gpus,team,user,queue,priority,name[,cpus,memory_mb]

Required columns: submit_time, duration and num_gpus. The others default: job_id to the
row's line number, team and user to "" (no team), queue to "default", priority to 0, name
to the job id, cpus to 0 and memory_mb to 0 (a pool that counts neither is not affected).
Columns not named here are ignored. A bad trace raises TraceError naming the file, the line
and the problem; nothing is replayed from it.
"""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypeVar

from trainyard.domain.spec import DEFAULT_QUEUE, Resources

T = TypeVar("T", int, float)

if TYPE_CHECKING:
    from _csv import Reader

REQUIRED = ("submit_time", "duration", "num_gpus")
COLUMNS = ("job_id", "submit_time", "duration", "num_gpus", "team", "user", "queue",
           "priority", "name", "cpus", "memory_mb")
ALIBABA_REQUIRED = ("name", "num_gpu", "qos", "creation_time", "deletion_time",
                    "scheduled_time")
# Alibaba QoS class -> queue, unless the configuration maps them otherwise.
DEFAULT_QOS_QUEUES: Mapping[str, str] = {
    "Guaranteed": "ls", "LS": "ls", "Burstable": "burstable", "BE": "be"}


class TraceError(Exception):
    """A trace that cannot be replayed: one sentence naming the file, the line and why."""


@dataclass(frozen=True)
class TraceJob:
    job_id: str
    submit_time: float  # seconds from the trace's start
    duration: float  # seconds of work when running alone, without interruption
    gpus: int
    team: str = ""
    user: str = ""
    queue: str = DEFAULT_QUEUE
    priority: int = 0
    name: str = ""
    cpus: float = 0.0
    memory_mb: int = 0
    line: int = 0  # where the trace gives it

    @property
    def resources(self) -> Resources:
        return Resources(self.cpus, self.memory_mb, self.gpus)


@dataclass(frozen=True)
class Trace:
    jobs: tuple[TraceJob, ...]  # in submit order (then trace order): a job's index is its seq
    source: str
    kind: str  # "trainyard" or "alibaba"
    skipped: Mapping[str, int]  # why rows were left out -> how many


def read_trace(path: Path, kind: str = "auto",
               qos_queues: Mapping[str, str] = DEFAULT_QOS_QUEUES) -> Trace:
    """Either format; "auto" tells them apart by the header (the openb list has `qos`)."""
    try:
        with path.open(newline="", encoding="utf-8") as file:
            rows = csv.reader(file)
            header = _header(path, rows)
            if kind == "auto":
                kind = "alibaba" if "qos" in header and "creation_time" in header \
                    else "trainyard"
            if kind == "trainyard":
                return _sorted(path, kind, _project_rows(path, header, rows), {})
            if kind == "alibaba":
                skipped: dict[str, int] = {}
                jobs = list(_alibaba_rows(path, header, rows, qos_queues, skipped))
                return _sorted(path, kind, jobs, skipped)
            raise TraceError(f"{path}: unknown trace format {kind!r}; use trainyard, alibaba "
                             "or auto")
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    except csv.Error as exc:
        raise TraceError(f"{path}: not a CSV file: {exc}") from exc


def _header(path: Path, rows: Reader) -> list[str]:
    header = next(rows, None)
    if header is None:
        raise TraceError(f"{path}: empty: expected a header line")
    return [name.strip() for name in header]


def _sorted(path: Path, kind: str, jobs: list[TraceJob], skipped: dict[str, int]) -> Trace:
    seen: dict[str, int] = {}
    for job in jobs:
        first = seen.setdefault(job.job_id, job.line)
        if first != job.line:
            raise TraceError(f"{path}, line {job.line}: job_id {job.job_id!r} is used twice "
                             f"(first on line {first})")
    ordered = sorted(jobs, key=lambda job: job.submit_time)  # stable: ties in trace order
    return Trace(tuple(ordered), str(path), kind, skipped)


class _Row:
    """One CSV row by column name, with the checks every field needs."""

    def __init__(self, path: Path, line: int, header: Sequence[str], row: Sequence[str]):
        self.where = f"{path}, line {line}"
        if len(row) != len(header):
            raise TraceError(f"{self.where}: expected {len(header)} fields as in the header, "
                             f"got {len(row)}")
        self.values = {name: value.strip() for name, value in zip(header, row, strict=True)}

    def text(self, column: str, default: str = "") -> str:
        return self.values.get(column) or default

    def number(self, column: str, default: float | None = None, *,
               minimum: float | None = 0.0) -> float:
        return self._parsed(column, default, minimum, float, "a number", finite=True)

    def integer(self, column: str, default: int | None = None, *,
                minimum: int | None = 0) -> int:
        return self._parsed(column, default, minimum, int, "a whole number")

    def _parsed(self, column: str, default: T | None, minimum: T | None,
                convert: Callable[[str], T], what: str, finite: bool = False) -> T:
        """The column's value, or `default` when empty (an error when there is none)."""
        raw = self.values.get(column, "")
        if not raw:
            if default is None:
                raise TraceError(f"{self.where}: {column} is empty")
            return default
        try:
            value = convert(raw)
        except ValueError:
            raise TraceError(f"{self.where}: {column} must be {what}, got {raw!r}") from None
        if finite and not math.isfinite(value):
            raise TraceError(f"{self.where}: {column} must be a finite number, got {raw!r}")
        if minimum is not None and value < minimum:
            raise TraceError(f"{self.where}: {column} must not be negative, got {raw}")
        return value


def _rows(path: Path, header: Sequence[str], rows: Reader) -> Iterator[_Row]:
    for row in rows:
        if not row or all(not field.strip() for field in row):
            continue  # a blank line
        yield _Row(path, rows.line_num, header, row)


def _missing(path: Path, header: Sequence[str], required: Iterable[str], kind: str) -> None:
    absent = [name for name in required if name not in header]
    if absent:
        raise TraceError(f"{path}, line 1: the header lacks the required column"
                         f"{'s' if len(absent) > 1 else ''} {', '.join(absent)} "
                         f"(a {kind} trace needs {', '.join(required)})")


def _project_rows(path: Path, header: list[str], rows: Reader) -> list[TraceJob]:
    _missing(path, header, REQUIRED, "Trainyard")
    jobs = []
    for row in _rows(path, header, rows):
        line = rows.line_num
        job_id = row.text("job_id", str(line))
        jobs.append(TraceJob(
            job_id=job_id, submit_time=row.number("submit_time"),
            duration=row.number("duration"), gpus=row.integer("num_gpus"),
            team=row.text("team"), user=row.text("user"),
            queue=row.text("queue", DEFAULT_QUEUE),
            priority=row.integer("priority", 0, minimum=None), name=row.text("name", job_id),
            cpus=row.number("cpus", 0.0), memory_mb=row.integer("memory_mb", 0), line=line))
    return jobs


def _alibaba_rows(path: Path, header: list[str], rows: Reader,
                  qos_queues: Mapping[str, str], skipped: dict[str, int]) -> Iterator[TraceJob]:
    """One job per pod that ran and asked for a GPU. Submit: creation_time. Duration:
    deletion_time - scheduled_time, the time it held its GPUs (the wait before
    scheduled_time was the original cluster's queueing, which the replay makes anew). A pod
    never scheduled (Pending, no scheduled_time) or asking for no GPU is left out and
    counted. num_gpu whole GPUs; a fraction of one (gpu_milli < 1000) takes a whole GPU."""
    _missing(path, header, ALIBABA_REQUIRED, "Alibaba openb")
    for row in _rows(path, header, rows):
        line = rows.line_num
        qos = row.text("qos")
        queue = qos_queues.get(qos)
        if queue is None:
            mapped = ", ".join(sorted(qos_queues)) or "none"
            raise TraceError(f"{row.where}: QoS class {qos!r} maps to no queue (mapped: "
                             f"{mapped}); map it in the configuration's [sim.qos]")
        created = row.number("creation_time")
        deleted = row.number("deletion_time")
        gpus = row.integer("num_gpu")
        milli = row.integer("gpu_milli", 1000)
        if milli > 1000:
            raise TraceError(f"{row.where}: gpu_milli must be at most 1000 (one whole GPU), "
                             f"got {milli}")
        if not row.text("scheduled_time"):
            skipped["never scheduled"] = skipped.get("never scheduled", 0) + 1
            continue
        scheduled = row.number("scheduled_time")
        if scheduled < created:
            raise TraceError(f"{row.where}: scheduled_time {scheduled:g} is before "
                             f"creation_time {created:g}")
        if deleted < scheduled:
            raise TraceError(f"{row.where}: a negative duration: deletion_time {deleted:g} "
                             f"is before scheduled_time {scheduled:g}")
        if gpus == 0:
            skipped["no GPU"] = skipped.get("no GPU", 0) + 1
            continue
        name = row.text("name", str(line))
        yield TraceJob(job_id=name, submit_time=created, duration=deleted - scheduled,
                       gpus=gpus, team=queue, user="", queue=queue, name=name,
                       cpus=row.number("cpu_milli", 0.0) / 1000,
                       memory_mb=row.integer("memory_mib", 0), line=line)


def write_trace(jobs: Iterable[TraceJob], path: Path) -> None:
    """In the project's format."""
    with path.open("w", newline="", encoding="utf-8") as file:
        write_rows(jobs, file)


def write_rows(jobs: Iterable[TraceJob], file: TextIO) -> None:
    """The header and one row a job, every column (read_trace reads them back as they were,
    and a reader that knows only the first nine ignores the rest)."""
    out = csv.writer(file)
    out.writerow(COLUMNS)
    for job in jobs:
        # repr: the shortest text that reads back as the same float (":g" keeps 6 digits).
        out.writerow([job.job_id, repr(float(job.submit_time)), repr(float(job.duration)),
                      job.gpus, job.team, job.user, job.queue, job.priority, job.name,
                      repr(float(job.cpus)), job.memory_mb])


def generate_trace(count: int, gpus: int, *, load: float = 0.8, teams: int = 4,
                   seed: int = 0) -> list[TraceJob]:
    """A synthetic trace like Philly's: 1, 2, 4 or 8 GPUs (40/10/25/25%), log-normal
    durations (median about 1 h, long tail), Poisson arrivals at the rate that keeps
    `gpus` GPUs `load` busy on average, teams of unequal sizes."""
    rng = random.Random(seed)
    sizes = (1, 2, 4, 8)
    weights = (0.4, 0.1, 0.25, 0.25)
    mean_gpus = sum(s * w for s, w in zip(sizes, weights, strict=True))
    mu, sigma = math.log(3600.0), 1.5
    mean_duration = math.exp(mu + sigma**2 / 2)
    rate = load * gpus / (mean_gpus * mean_duration)  # arrivals per second
    team_weights = [1.0 / (i + 1) for i in range(teams)]
    names = [f"team-{i}" for i in range(teams)]
    now = 0.0
    jobs = []
    for i in range(count):
        now += rng.expovariate(rate)
        team = rng.choices(names, team_weights)[0]
        size = rng.choices(sizes, weights)[0]
        jobs.append(TraceJob(job_id=str(i), submit_time=round(now, 3),
                             duration=round(min(rng.lognormvariate(mu, sigma), 30 * 86400), 3),
                             gpus=min(size, gpus), team=team, user=f"{team}-user",
                             name=f"job-{i}", line=i + 2))
    return jobs


def queue_per_team(trace: Trace) -> Trace:
    """The same jobs, each waiting in a queue named after its team (`default` for a job of
    no team): the trace's own queue column is set aside."""
    jobs = tuple(replace(job, queue=job.team or DEFAULT_QUEUE) for job in trace.jobs)
    return replace(trace, jobs=jobs)
