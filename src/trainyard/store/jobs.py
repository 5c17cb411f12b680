"""Job rows: idempotent create, the one state-transition function, and queries."""

from __future__ import annotations

import functools
import heapq
import logging
import random
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from sqlalchemy import (
    CompoundSelect,
    Connection,
    Select,
    and_,
    bindparam,
    case,
    func,
    insert,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from trainyard.domain.dependencies import Need, waiting_sentence
from trainyard.domain.errors import InvalidArgument, NotFound, StaleState
from trainyard.domain.kinds import kind_for
from trainyard.domain.pipeline import PIPELINE, group_title, pipeline_id
from trainyard.domain.position import QueuePlace
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import JobSpec, Resources, total_resources
from trainyard.domain.states import ACTIVE_STATES, JobState, check_transition
from trainyard.store import dependencies, driver_reads, driver_writes, faults, prepared, sample_ids
from trainyard.store.db import Database
from trainyard.store.job_tokens import delete_for_job
from trainyard.store.records import ActiveUse, EventRecord, JobRecord, QueuedJob
from trainyard.store.runs import record_run
from trainyard.store.schema import job_events, job_labels, jobs, runs, sweeps
from trainyard.store.telemetry import JobMove

log = logging.getLogger(__name__)
MAX_JOB_ID = 32  # the width of jobs.id

# Statements built once: parameters travel separately, so SQLAlchemy's compiled cache hits.
_INSERT_JOB = insert(jobs)
_INSERT_LABEL = insert(job_labels)
_INSERT_EVENT = insert(job_events)
_SELECT_JOB = select(jobs).where(jobs.c.id == bindparam("b_id"))
_JOB_OF_REQUEST = select(jobs.c.id).where(jobs.c.client_request_id == bindparam("b_request"))
_SELECT_TIMES = select(jobs.c.queue, jobs.c.submitted_at, jobs.c.updated_at).where(
    jobs.c.id == bindparam("b_id"))
_LIVE_COUNTS = select(jobs.c.state, jobs.c.queue, func.count()).where(
    jobs.c.state.in_([s.value for s in (JobState.WAITING, *ACTIVE_STATES, JobState.PREEMPTED)])
).group_by(jobs.c.state, jobs.c.queue)
_SELECT_EVENTS = (
    select(job_events)
    .where(job_events.c.job_id == bindparam("b_id"), job_events.c.id > bindparam("b_after"))
    .order_by(job_events.c.id)
)
_HIGHER = func.sum(case((jobs.c.priority > bindparam("b_priority"), 1), else_=0))
# A job still waiting for other jobs (--after) is not in the queue yet: never ahead.
_PLACE_BY_SEQ = select(func.count(), literal(0)).select_from(jobs).where(
    jobs.c.state == JobState.WAITING.value, jobs.c.queue == bindparam("b_queue"),
    jobs.c.seq < bindparam("b_seq"), ~dependencies.held_back(),
)
_PLACE_BY_PRIORITY = select(func.count(), _HIGHER).select_from(jobs).where(
    jobs.c.state == JobState.WAITING.value, jobs.c.queue == bindparam("b_queue"),
    or_(jobs.c.priority > bindparam("b_priority"),
        and_(jobs.c.priority == bindparam("b_priority"), jobs.c.seq < bindparam("b_seq"))),
    ~dependencies.held_back(),
)
_QUEUED = select(
    jobs.c.id, jobs.c.queue, jobs.c.priority, jobs.c.seq, jobs.c.cpus, jobs.c.memory_mb,
    jobs.c.gpus, jobs.c.workers, jobs.c.kind, jobs.c.owner, jobs.c.team, jobs.c.submitted_at,
    jobs.c.sweep_id, jobs.c.held_s, jobs.c.retry_after, jobs.c.pending_timeout_s,
    jobs.c.attempt, jobs.c.time_limit_s, jobs.c.updated_at,
).where(jobs.c.state == JobState.WAITING.value, jobs.c.seq > bindparam("b_after"),
        ~dependencies.held_back()).order_by(jobs.c.seq)
# Each waiting job's id and when it began to wait, up to a submit order: what the tracker
# checks the waiting jobs it holds against, far cheaper than reading them again.
_WAITING_SINCE = select(jobs.c.id, jobs.c.updated_at).where(
    jobs.c.state == JobState.WAITING.value, jobs.c.seq <= bindparam("b_upto"),
    ~dependencies.held_back())
_SET_PENDING_REASON = (
    update(jobs)
    .where(jobs.c.id == bindparam("b_id"), jobs.c.state == JobState.WAITING.value)
    .values(pending_code=bindparam("b_code"), pending_message=bindparam("b_message"))
)


@functools.lru_cache(maxsize=8)
def _in_states(count: int, needed: bool = False) -> Select[Any]:
    """The jobs in any of `count` states, each bound on its own: the tracker reads the
    active jobs at every pass, and an expanding parameter would have each execution render
    its SQL anew. `needed`: with whether a waiting job still needs each."""
    columns = (jobs, dependencies.still_needed().label("still_needed")) if needed else (jobs,)
    return select(*columns).where(
        jobs.c.state.in_([bindparam(f"b_state_{i}") for i in range(count)])
    ).order_by(jobs.c.seq)


# Ids need uniqueness, not secrecy; Random() is seeded from os.urandom at start-up.
_random = random.Random()


def new_job_id() -> str:
    # Time-ordered prefix for readability, random suffix for uniqueness across servers.
    return f"{int(time.time() * 1000):x}{_random.getrandbits(32):08x}"


@dataclass(frozen=True)
class JobFilter:
    states: Sequence[JobState] = ()
    queue: str = ""
    labels: Mapping[str, str] | None = None
    owners: frozenset[str] | None = None  # None: anyone's jobs


def _move(conn: Connection, job_id: str, expected: JobState, target: JobState, reason: str,
          now: float, fields: Mapping[str, Any], *, unless_cancelled: bool = False,
          known: JobRecord | None = None) -> JobMove:
    """One edge inside the caller's transaction: check it, compare-and-set, append the
    event, keep the run in step. Returns the move for the telemetry, to hear once committed.
    `unless_cancelled`: refused (StaleState) once a cancel was asked of the job. `known`:
    the job as the caller read it in `expected`, whose queue and times the move reports."""
    check_transition(expected, target)
    # Read before the update: a waiting row's updated_at is when it began to wait (moves
    # set it; while it waits, only update_fields sets it too, for a cancel asked of it,
    # which tracker/waiting.py's check then sees as a change).
    before: Any = _Times(known.spec.queue, known.submitted_at, known.updated_at) \
        if known is not None else conn.execute(_SELECT_TIMES, {"b_id": job_id}).first()
    if prepared.is_plain(fields):
        matched = driver_writes.execute(conn, prepared.job_move(tuple(fields), unless_cancelled), {
            "b_id": job_id, "b_expected": expected.value, "b_target": target.value,
            "b_now": now, **prepared.values_of(fields)})
    else:
        moved = update(jobs).where(jobs.c.id == job_id, jobs.c.state == expected.value)
        if unless_cancelled:
            moved = moved.where(jobs.c.cancel_requested.is_(False))
        matched = conn.execute(moved.values(state=target.value, updated_at=now, **fields)).rowcount
    if matched != 1:
        raise StaleState(f"job {job_id} is no longer {expected}, or was asked to cancel")
    log.info("job %s: %s -> %s (%s)", job_id, expected, target, reason)
    driver_writes.execute(conn, _INSERT_EVENT, {
        "job_id": job_id, "from_state": expected.value, "to_state": target.value,
        "time": now, "reason": reason,
    })
    record_run(conn, job_id, expected, target, now, fields)
    if expected in ACTIVE_STATES and target not in ACTIVE_STATES:
        delete_for_job(conn, job_id)  # the attempt ended, and its job token with it
    assert before is not None  # the update found the row
    return JobMove(before.queue, expected, target, now, before.submitted_at, before.updated_at)


class _Times(NamedTuple):
    """_SELECT_TIMES's row, from a record the caller holds."""

    queue: str
    submitted_at: float
    updated_at: float


def pending_deadline(submitted_at: float, timeout_s: float, attempt: int) -> float | None:
    """When a waiting job is cancelled for waiting too long: its pending timeout counts from
    submit, until it first starts (a job requeued after it ran keeps its place)."""
    return submitted_at + timeout_s if timeout_s and attempt == 0 else None


def _spec_columns(spec: JobSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "command": spec.command,
        "image": spec.image,
        "dataset_name": spec.dataset.name if spec.dataset else None,
        "dataset_version": spec.dataset.version if spec.dataset else None,
        "hyperparameters": dict(spec.hyperparameters),
        "labels": dict(spec.labels),
        "cpus": spec.resources.cpus,
        "memory_mb": spec.resources.memory_mb,
        "gpus": spec.resources.gpus,
        "workers": spec.workers,
        "queue": spec.queue,
        "priority": spec.priority,
        "git_commit": spec.git_commit,
        "model_name": spec.model_name,
        "framework": spec.framework,
        "max_attempts": spec.max_attempts,
        "retry_on_failure": spec.retry_on_failure,
        "retry_exit_codes": list(spec.retry_exit_codes),
        "time_limit_s": spec.time_limit_s,
        "pending_timeout_s": spec.pending_timeout_s,
        "algorithm_name": spec.algorithm.name if spec.algorithm else None,
        "algorithm_version": spec.algorithm.version if spec.algorithm else None,
        "code_hash": spec.code_hash,
    }


class JobStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # --- writes ---------------------------------------------------------------------------

    def create(
        self, spec: JobSpec, *, owner: str = "", team: str = "",
        client_request_id: str | None = None, now: float | None = None, sweep_id: str = "",
        reproduced_from: str = "", kind: str | None = None, needs: Sequence[Need] = (),
        sample_id: bool = False, look_up_request: bool = True,
    ) -> tuple[str, bool]:
        """Store a WAITING job; return (job_id, existing). A known request id returns its job.

        `kind` is the executor that will run it, kept for good; None: the one its image
        gives it (domain.kinds). `needs`: the jobs it waits for (--after), stored with it in
        one transaction; while one is unmet it is held out of the queue, its reason
        DEPENDENCY. `sample_id`: it is numbered for the sample training service in the same
        transaction (store/sample_ids.py). `look_up_request` False: the request id is not
        looked up before the insert (the caller found no job for it, or need not know): the
        id's unique index sends a retry's insert to its stored job all the same."""
        if client_request_id and look_up_request:
            found = self._by_request_id(client_request_id)
            if found is not None:
                return self._same_request(found, spec), True
        now = time.time() if now is None else now
        job_id = new_job_id()
        unmet = [n for n in needs if not n.met]
        code, message = (ReasonCode.DEPENDENCY.value, waiting_sentence(unmet)) if unmet else \
            ("", "")
        row = {
            "id": job_id, "client_request_id": client_request_id or None, "owner": owner,
            "state": JobState.WAITING.value, "attempt": 0, "message": "", "exit_code": None,
            "cancel_requested": False, "pending_code": code, "pending_message": message,
            "executor": "", "handle": "", "gpu_ids": "", "pool": "", "team": team,
            "preempt_requested": False, "started_at": None, "sweep_id": sweep_id,
            "metrics_offset": 0,
            "malformed_metric_lines": 0, "reproduced_from": reproduced_from,
            "retries": 0, "retry_after": None,
            "submitted_at": now, "updated_at": now,
            "kind": kind_for(spec.image) if kind is None else kind, **_spec_columns(spec),
        }
        labels = [{"job_id": job_id, "key": k, "value": v} for k, v in spec.labels.items()]
        event = {"job_id": job_id, "from_state": None, "to_state": JobState.WAITING.value,
                 "time": now, "reason": "submitted"}
        try:
            self.db.group.execute([(_INSERT_JOB, [row]), (_INSERT_LABEL, labels),
                                  (_INSERT_EVENT, [event]),
                                  (dependencies.INSERT, dependencies.rows(job_id, needs)),
                                  (sample_ids.INSERT, [sample_ids.row(job_id)] if sample_id
                                   else [])])
        except IntegrityError:
            # Lost a race with a concurrent retry of the same request.
            found = self._by_request_id(client_request_id) if client_request_id else None
            if found is None:
                raise
            return self._same_request(found, spec), True
        log.debug("job %s: submitted (%s)", job_id, spec.name)
        faults.job_written(job_id)
        self.db.feed.notify(created=True)
        return job_id, False

    def _by_request_id(self, request_id: str) -> JobRecord | None:
        with self.db.read() as conn:
            row = conn.execute(select(jobs).where(jobs.c.client_request_id == request_id)).first()
        return JobRecord.from_row(row) if row else None

    @staticmethod
    def _same_request(found: JobRecord, spec: JobSpec) -> str:
        if found.spec != spec:
            raise InvalidArgument(
                "client_request_id",
                f"was already used for job {found.id} with a different spec",
            )
        return found.id

    def transition(
        self, job_id: str, expected: JobState, target: JobState, *, reason: str,
        now: float | None = None, synced: bool = True, known: JobRecord | None = None,
        **fields: Any,
    ) -> None:
        """A job changes state here (or, for a requeue's two moves, in requeue): check the
        edge, compare-and-set, append an event. `known`: the job as the caller just read it
        (in `expected`), which spares reading its queue and times again.

        Raises InvalidTransition for an edge the machine lacks, and StaleState when the row
        is no longer in `expected` (someone else moved it first).
        """
        now = time.time() if now is None else now
        with self.db.write(synced=synced) as conn:
            move = _move(conn, job_id, expected, target, reason, now, fields, known=known)
        faults.job_written(job_id)
        self.db.feed.notify()
        self.db.telemetry.job_moved(move)

    def cancel_waiting(self, reasons: Mapping[str, str], *, now: float) -> list[str]:
        """Cancel these waiting jobs, each with its reason as its event's reason and its
        message, in one transaction; those no longer waiting are left as they are. Returns
        the ids cancelled."""
        moves: list[tuple[str, JobMove]] = []
        with self.db.write() as conn:
            for job_id, why in reasons.items():
                try:
                    moves.append((job_id, _move(
                        conn, job_id, JobState.WAITING, JobState.CANCELLED, why, now,
                        {"message": why, "pending_code": "", "pending_message": ""})))
                except StaleState:
                    continue  # its update matched no row: nothing of it was written
        for job_id, move in moves:
            faults.job_written(job_id)
            self.db.telemetry.job_moved(move)
        if moves:
            self.db.feed.notify()
        return [job_id for job_id, _ in moves]

    def mark_running(self, job_id: str, *, reason: str, now: float,
                     known: JobRecord | None = None, synced: bool = False) -> None:
        """LAUNCHING -> RUNNING: its process runs (or ran) and its attempt starts now. Not
        synced to disk (Database.write) unless asked: after a power cut that undid it, the
        job is LAUNCHING again and recovery's poll of its handle sees it run. `synced`: the
        LAUNCHING before it was not (Launcher.launching_synced). `known`: as in
        transition."""
        self.transition(job_id, JobState.LAUNCHING, JobState.RUNNING, reason=reason, now=now,
                        synced=synced, known=known, started_at=now)

    def requeue(
        self, job_id: str, *, preempted: str, requeued: str, pending: tuple[str, str],
        expected: JobState = JobState.RUNNING, now: float | None = None,
        work_lost_s: float = 0.0,
    ) -> None:
        """A preempted job waits again: RUNNING -> PREEMPTED (`preempted` is the event's
        reason and the job's message) -> WAITING (`requeued`, with `pending` as its code and
        sentence), in one transaction with an event row for each move, so no crash leaves it
        PREEMPTED. From PREEMPTED (`expected`; left so by a version that wrote the two moves
        apart), the second move alone. A RUNNING job's preemption is counted, and the work it
        lost (`work_lost_s`, past its last checkpoint) added up, on the job and its run.

        Raises StaleState, writing nothing, when the row is no longer in `expected`."""
        now = time.time() if now is None else now
        stopped: dict[str, Any] = {"message": preempted, "preempt_requested": False}
        run_fields: dict[str, Any] = {}
        if expected is JobState.RUNNING:
            stopped.update(work_lost_s=jobs.c.work_lost_s + work_lost_s,
                           preemptions=jobs.c.preemptions + 1)
            run_fields["work_lost_s"] = work_lost_s
        if expected is not JobState.PREEMPTED and faults.armed(faults.REQUEUE_IN_TWO_WRITES):
            self.transition(job_id, expected, JobState.PREEMPTED, reason=preempted, now=now,
                            **stopped)
            faults.crash_at(faults.REQUEUE_IN_TWO_WRITES)
        self._wait_again(job_id, expected, JobState.PREEMPTED, preempted, stopped, requeued,
                         pending, {}, now, retry=False, run_fields=run_fields)

    def retry(
        self, job_id: str, *, ended: JobState, outcome: str, exit_code: int | None,
        requeued: str, pending: tuple[str, str], retry_after: float, now: float,
    ) -> None:
        """An attempt that was lost (`ended` PREEMPTED) or failed (FAILED) ends with
        `outcome` as its run's message, and the job waits for its next attempt until
        `retry_after`, one more of its attempts counted: both moves in one transaction, as
        a requeue's. Raises StaleState, writing nothing, when the job no longer runs."""
        stopped = {"message": outcome, "exit_code": exit_code, "preempt_requested": False}
        self._wait_again(job_id, JobState.RUNNING, ended, outcome, stopped, requeued, pending,
                         {"retry_after": retry_after, "retries": jobs.c.retries + 1}, now,
                         retry=True)

    def _wait_again(self, job_id: str, expected: JobState, via: JobState, ended: str,
                    ended_fields: Mapping[str, Any], requeued: str, pending: tuple[str, str],
                    waiting_fields: Mapping[str, Any], now: float, *, retry: bool,
                    run_fields: Mapping[str, Any] | None = None) -> None:
        """`expected` -> `via` (skipped when the job is in `via` already) -> WAITING. A job
        asked to cancel meanwhile stays: the next pass ends it CANCELLED, never runs it again.
        `run_fields`: written on the ending attempt's run too."""
        code, message = pending
        moves: list[JobMove] = []
        with self.db.write() as conn:
            if run_fields:
                current = select(jobs.c.attempt).where(jobs.c.id == job_id).scalar_subquery()
                conn.execute(update(runs).where(runs.c.job_id == job_id,
                                                runs.c.attempt == current).values(**run_fields))
            if expected is not via:
                moves.append(replace(_move(conn, job_id, expected, via, ended, now,
                                           ended_fields, unless_cancelled=True),
                                     passing=retry))
                faults.crash_at(faults.INSIDE_REQUEUE)
            moves.append(replace(_move(conn, job_id, via, JobState.WAITING, requeued, now,
                                       {"pending_code": code, "pending_message": message,
                                        **waiting_fields}), retry=retry))
        faults.job_written(job_id)
        self.db.feed.notify()
        for move in moves:
            self.db.telemetry.job_moved(move)

    def set_image_id(self, job_id: str, attempt: int, image_id: str) -> None:
        """The image id (sha256:...) an attempt's container was created from."""
        with self.db.write() as conn:
            conn.execute(update(runs).where(runs.c.job_id == job_id, runs.c.attempt == attempt)
                         .values(image_id=image_id))

    def update_fields(self, job_id: str, expected: JobState, *, unless_stopping: bool = False,
                      **fields: Any) -> bool:
        """Change non-state columns while the job is still in `expected` (and, with
        `unless_stopping`, while no one has asked it to stop: a cancel or a preemption keeps
        its own message); False if it is not."""
        query = update(jobs).where(jobs.c.id == job_id, jobs.c.state == expected.value)
        if unless_stopping:
            query = query.where(jobs.c.cancel_requested.is_(False),
                                jobs.c.preempt_requested.is_(False))
        with self.db.write() as conn:
            result = conn.execute(query.values(updated_at=time.time(), **fields))
        if result.rowcount:
            faults.job_written(job_id)
            self.db.feed.notify()
        return bool(result.rowcount)

    def set_pending_reasons(self, reasons: Mapping[str, tuple[str, str]]) -> None:
        """Record why each waiting job waits (only rows still WAITING are touched)."""
        if reasons:
            rows = [{"b_id": job_id, "b_code": code, "b_message": message}
                    for job_id, (code, message) in reasons.items()]
            self.db.group.execute([(_SET_PENDING_REASON, rows)])

    # --- reads ----------------------------------------------------------------------------

    def get(self, job_id: str, conn: Connection | None = None) -> JobRecord:
        if len(job_id) > MAX_JOB_ID or "\x00" in job_id:
            raise NotFound("job", job_id[:MAX_JOB_ID])  # could never have been issued
        with self.db.read(conn) as c:
            found = driver_reads.rows(c, _SELECT_JOB, {"b_id": job_id})
        if not found:
            raise NotFound("job", job_id)
        return JobRecord.from_row(found[0])

    def sweep_limits(self, sweep_ids: Iterable[str]) -> dict[str, int]:
        """The running-job limit of each of these sweeps or pipelines that has one."""
        return self.group_limits(sweep_ids)[0]

    def group_limits(self, group_ids: Iterable[str]) -> tuple[dict[str, int], dict[str, str]]:
        """Of these sweeps and pipelines, those that limit their running jobs: each one's
        limit, and how a sentence names it ("pipeline 'etl'", "sweep 'lr'")."""
        wanted = sorted({s for s in group_ids if s})
        if not wanted:
            return {}, {}
        with self.db.read() as conn:
            rows = conn.execute(select(sweeps.c.id, sweeps.c.max_parallel, sweeps.c.kind,
                                       sweeps.c.name).where(
                sweeps.c.id.in_(wanted), sweeps.c.max_parallel > 0)).all()
        return ({r.id: r.max_parallel for r in rows},
                {r.id: group_title(r.kind, r.name) for r in rows})

    def join_pipeline(self, owner: str, name: str, max_parallel: int, now: float) -> str:
        """The id of the owner's pipeline of this name, made on its first submit. A
        max_parallel above 0 becomes its running limit; 0 keeps the limit it has."""
        group = pipeline_id(owner, name)
        for _ in range(2):  # two first submits at once: the one that loses updates
            try:
                with self.db.write() as conn:
                    found = conn.execute(select(sweeps.c.max_parallel)
                                         .where(sweeps.c.id == group)).first()
                    if found is None:
                        conn.execute(insert(sweeps).values(
                            id=group, name=name, owner=owner, max_parallel=max_parallel,
                            created_at=now, kind=PIPELINE))
                    elif max_parallel:
                        conn.execute(update(sweeps).where(sweeps.c.id == group)
                                     .values(max_parallel=max_parallel))
                return group
            except IntegrityError:
                continue
        return group

    def waiting_by_queue(self) -> dict[str, int]:
        c = jobs.c
        with self.db.read() as conn:
            rows = conn.execute(select(c.queue, func.count()).where(
                c.state == JobState.WAITING.value).group_by(c.queue)).all()
        return {queue: count for queue, count in rows}

    def waiting_of(self, owner: str, team: str) -> tuple[int, int]:
        """How many jobs wait for `owner`, and for `team` (0 for ""). Only the WAITING rows
        of the (state, queue, seq) index are visited, never the table's history."""
        c = jobs.c
        with self.db.read() as conn:
            mine = conn.execute(select(func.count()).where(
                c.state == JobState.WAITING.value, c.owner == owner)).scalar_one()
            theirs = conn.execute(select(func.count()).where(
                c.state == JobState.WAITING.value, c.team == team)).scalar_one() if team else 0
        return int(mine), int(theirs)

    def job_for_request(self, request_id: str) -> str | None:
        """The id of the job stored for this client request id (a retried submit), if one
        was."""
        with self.db.read() as conn:
            found: str | None = conn.execute(_JOB_OF_REQUEST, {"b_request": request_id}
                                             ).scalar()
        return found

    def live_counts(self) -> dict[tuple[JobState, str], int]:
        """(state, queue) -> how many jobs are in it, for the states a job passes through
        before it ends. Read from the (state, queue, seq) index alone: finished jobs, the
        table's history, are never visited."""
        with self.db.read() as conn:
            rows = conn.execute(_LIVE_COUNTS).all()
        return {(JobState(state), queue): count for state, queue, count in rows}

    def active_use(self) -> list[ActiveUse]:
        """What each active job holds, in submit order, with only the columns that takes."""
        c = jobs.c
        with self.db.read() as conn:
            rows = conn.execute(
                select(c.queue, c.team, c.pool, c.executor, c.cpus, c.memory_mb, c.gpus,
                       c.workers)
                .where(c.state.in_([s.value for s in ACTIVE_STATES])).order_by(c.seq)
            ).all()
        return [ActiveUse(r.queue, r.team, r.pool or r.executor, total_resources(
            Resources(r.cpus, r.memory_mb, r.gpus), r.workers)) for r in rows]

    def in_states(self, states: Iterable[JobState]) -> list[JobRecord]:
        """Jobs in any of these states, in submit order."""
        return [JobRecord.from_row(r) for r in self._rows_in_states(states)]

    def active(self) -> tuple[list[JobRecord], set[str]]:
        """The active jobs in submit order, and those of them a waiting job still needs
        (--after): a tracker pass's one read."""
        rows = self._rows_in_states(ACTIVE_STATES, needed=True)
        return [JobRecord.from_row(r) for r in rows], {r.id for r in rows if r.still_needed}

    def _rows_in_states(self, states: Iterable[JobState], needed: bool = False) -> list[Any]:
        values = tuple(dict.fromkeys(s.value for s in states))
        if not values:
            return []
        with self.db.read() as conn:
            return driver_reads.rows(conn, _in_states(len(values), needed),
                                     {f"b_state_{i}": v for i, v in enumerate(values)})

    def queued(self, after_seq: int = 0) -> list[QueuedJob]:
        """The waiting jobs in submit order, with only the columns admission needs; those
        still waiting for other jobs (--after) are left out until their needs are met."""
        with self.db.read() as conn:
            rows = driver_reads.rows(conn, _QUEUED, {"b_after": after_seq})
        # A gang is admitted as one unit holding all its workers' resources, or not at all.
        # Each row unpacked by place, in _QUEUED's order: reading a row's columns by name
        # cost more than building the job (the tracker reads every new waiting job).
        return [QueuedJob(job_id, queue, priority, seq,
                          total_resources(Resources(cpus, memory_mb, gpus), workers),
                          kind, owner, team, submitted_at, sweep_id, held_s, retry_after,
                          pending_deadline(submitted_at, pending_timeout_s, attempt),
                          time_limit_s, waiting_since)
                for (job_id, queue, priority, seq, cpus, memory_mb, gpus, workers, kind, owner,
                     team, submitted_at, sweep_id, held_s, retry_after, pending_timeout_s,
                     attempt, time_limit_s, waiting_since) in rows]

    def waiting_since(self, upto_seq: int) -> dict[str, float]:
        """Each job queued() would list, of those submitted up to `upto_seq`: when it began
        to wait (its updated_at: every move and update_fields set it; a pending reason,
        which no policy reads, does not)."""
        with self.db.read() as conn:
            rows = driver_reads.rows(conn, _WAITING_SINCE, {"b_upto": upto_seq})
        return {job_id: since for job_id, since in rows}

    def events(self, job_id: str, after_id: int = 0,
               conn: Connection | None = None) -> list[EventRecord]:
        with self.db.read(conn) as c:
            rows = c.execute(_SELECT_EVENTS, {"b_id": job_id, "b_after": after_id}).all()
        return [
            EventRecord(
                id=r.id, job_id=r.job_id,
                from_state=JobState(r.from_state) if r.from_state else None,
                to_state=JobState(r.to_state), time=r.time, reason=r.reason,
            )
            for r in rows
        ]

    def queue_position(self, job: JobRecord, conn: Connection | None = None) -> int:
        """1-based place among the waiting jobs of its queue, in submit order."""
        return self.queue_place(job, by_priority=False, conn=conn).position

    def queue_place(self, job: JobRecord, *, by_priority: bool,
                    conn: Connection | None = None) -> QueuePlace:
        """Its place among the waiting jobs of its queue, in the order they are admitted: by
        job priority then submit order, or (by_priority False, as FIFO admits) by submit
        order alone, where no job is ahead for its priority."""
        if job.state is not JobState.WAITING:
            return QueuePlace(0)
        params = {"b_queue": job.spec.queue, "b_seq": job.seq, "b_priority": job.spec.priority}
        with self.db.read(conn) as c:
            ahead, higher = c.execute(_PLACE_BY_PRIORITY if by_priority else _PLACE_BY_SEQ,
                                      params).one()
        return QueuePlace(int(ahead or 0) + 1, int(higher or 0))

    def list(
        self, flt: JobFilter, *, page_size: int, after_seq: int | None = None,
        conn: Connection | None = None,
    ) -> tuple[list[JobRecord], int | None]:
        """Newest first. Returns the page and the seq to continue after, or None at the end.
        Several states are read each newest first along its own range of the (state, seq)
        or (state, queue, seq) index, only the seq of each, in one statement, and the page
        is the newest of them: one query for them all would sort every job in those states.
        The page's rows are read by a second statement, so a job that moved out of those
        states meanwhile is left off its page."""
        states = list(dict.fromkeys(flt.states))
        wanted = page_size + 1
        with self.db.read(conn) as c:
            if len(states) > 1:
                newest = heapq.nlargest(wanted, set(driver_reads.scalars(
                    c, *_newest_of_each(flt, states, wanted, after_seq))))
                page = newest[:page_size]
                rows = driver_reads.rows(c, prepared.JOBS_BY_SEQ, {
                    "b_seqs": page, "b_states": [s.value for s in states]}) if page else []
                more = len(newest) > page_size
                return ([JobRecord.from_row(r) for r in rows], page[-1] if more else None)
            rows = driver_reads.rows(c, *_listing(flt, states, wanted, after_seq))
        records = [JobRecord.from_row(r) for r in rows[:page_size]]
        more = len(rows) > page_size
        return records, (records[-1].seq if more else None)


def _listing(flt: JobFilter, states: Sequence[JobState], limit: int, after_seq: int | None,
             *, seq_only: bool = False) -> tuple[Select[Any], dict[str, Any]]:
    """The newest `limit` jobs in these states (any state when none) that pass the rest of
    the filter, newest first (their seqs alone, or every column): the statement of the
    filter's shape (prepared.job_listing) and its parameters."""
    params = _filter_params(flt, limit, after_seq)
    shape = prepared.ANY_STATE
    if len(states) == 1:
        shape, params["b_state"] = prepared.ONE_STATE, states[0].value
    elif states:
        shape, params["b_states"] = prepared.STATES, [s.value for s in states]
    query = prepared.job_listing(shape, bool(flt.queue), flt.owners is not None,
                                 len(flt.labels or {}), after_seq is not None, seq_only)
    return query, params


def _newest_of_each(flt: JobFilter, states: Sequence[JobState], limit: int,
                    after_seq: int | None) -> tuple[CompoundSelect, dict[str, Any]]:
    """The seqs of the newest `limit` jobs of each state that pass the rest of the filter
    (prepared.newest_seqs_by_state), and the statement's parameters."""
    params = _filter_params(flt, limit, after_seq)
    params.update((f"b_state_{i}", state.value) for i, state in enumerate(states))
    query = prepared.newest_seqs_by_state(len(states), bool(flt.queue), flt.owners is not None,
                                          len(flt.labels or {}), after_seq is not None)
    return query, params


def _filter_params(flt: JobFilter, limit: int, after_seq: int | None) -> dict[str, Any]:
    """A listing's parameters but its states'."""
    params: dict[str, Any] = {"b_limit": limit}
    if flt.queue:
        params["b_queue"] = flt.queue
    if flt.owners is not None:
        params["b_owners"] = sorted(flt.owners)
    for i, (key, value) in enumerate((flt.labels or {}).items()):
        params[f"b_label_key_{i}"], params[f"b_label_value_{i}"] = key, value
    if after_seq is not None:
        params["b_after"] = after_seq
    return params
