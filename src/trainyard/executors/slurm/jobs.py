"""What the controller says of jobs: `scontrol show job -o` parsed into one record per job,
and what a record means for Trainyard (an Observation). Pure."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from trainyard.executors.base import Observation, Phase, describe_exit

_FIELD = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z/:_]*)=(\S*)")
_HOSTS = re.compile(r"([^,\[]+)(?:\[([^\]]+)\])?,?")

STARTING = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
                      "RESIZING", "SUSPENDED"})
RUNNING = frozenset({"RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING"})
# Pending reasons under which Slurm will never start the job as it was submitted.
NEVER_STARTS = frozenset({
    "BadConstraints", "InvalidAccount", "InvalidQOS", "AccountNotAllowed", "PartitionConfig",
    "PartitionTimeLimit", "PartitionNodeLimit", "QOSMaxWallDurationPerJobLimit",
    "DependencyNeverSatisfied",
})
CANCELLED_OUTSIDE = "cancelled outside Trainyard (scancel by an administrator)"


@dataclass(frozen=True)
class SlurmJob:
    job_id: str
    name: str
    state: str  # JobState, without a "+" suffix
    reason: str
    exit_code: int | None  # 128+signal for a signal; None while it runs
    comment: str
    nodes: tuple[str, ...]  # the allocation's nodes, expanded
    batch_host: str

    @property
    def ended(self) -> bool:
        return self.state not in STARTING and self.state not in RUNNING


def parse_jobs(text: str) -> list[SlurmJob]:
    """The jobs of `scontrol show job -o` (one line each; "No jobs in the system" is none)."""
    found = []
    for line in text.splitlines():
        fields = dict(_FIELD.findall(line))
        if "JobId" not in fields:
            continue
        found.append(SlurmJob(
            job_id=fields["JobId"], name=fields.get("JobName", ""),
            state=fields.get("JobState", "").split("+")[0], reason=fields.get("Reason", ""),
            exit_code=exit_status(fields.get("ExitCode", "")),
            comment=fields.get("Comment", ""),
            nodes=expand_hosts(fields.get("NodeList", "")),
            batch_host=fields.get("BatchHost", "")))
    return found


def exit_status(value: str) -> int | None:
    """Slurm's "code:signal" as a shell would report it (128+signal for a signal)."""
    code, _, sig = value.partition(":")
    if not code.isdigit():
        return None
    if sig.isdigit() and int(sig) > 0:
        return 128 + int(sig)
    return int(code)


def expand_hosts(hostlist: str) -> tuple[str, ...]:
    """"n[1-3,5],gpu7" as its names; "(null)" or "" as none."""
    if not hostlist or hostlist.startswith("("):
        return ()
    names: list[str] = []
    for prefix, ranges in _HOSTS.findall(hostlist):
        if not ranges:
            names.append(prefix)
            continue
        for part in ranges.split(","):
            low, _, high = part.partition("-")
            for number in range(int(low), int(high or low) + 1):
                names.append(f"{prefix}{number:0{len(low)}d}")
    return tuple(names)


def killed_by_signal(job: SlurmJob) -> bool:
    """Failed by a signal: what a task shows when its node dies under it, before the
    controller has marked the node down."""
    return job.state == "FAILED" and (job.exit_code or 0) > 128


def observe(job: SlurmJob, *, cancelled_by_us: bool, failed_nodes: Collection[str] = ()
            ) -> Observation:
    """What the job's state means for its attempt."""
    state = job.state
    if state == "PENDING" and job.reason in NEVER_STARTS:
        return Observation(Phase.LOST, message=f"Slurm will not start it: {job.reason}")
    if state in STARTING:
        return Observation(Phase.STARTING)
    if state in RUNNING:
        return Observation(Phase.RUNNING)
    code = job.exit_code if job.exit_code is not None else 1
    if state == "COMPLETED":
        return Observation(Phase.EXITED, 0)
    if state == "FAILED" and killed_by_signal(job) and set(job.nodes) & set(failed_nodes):
        return Observation(Phase.LOST, message=_node_failure(job, failed_nodes), retry=True)
    if state == "FAILED":
        return Observation(Phase.EXITED, code, describe_exit(code) if code else
                           f"failed: {job.reason}")
    if state == "OUT_OF_MEMORY":
        return Observation(Phase.EXITED, code or 137, "out of memory (Slurm's memory limit)")
    if state == "TIMEOUT":
        return Observation(Phase.EXITED, code or 143, "time limit reached")
    if state == "DEADLINE":
        return Observation(Phase.EXITED, code or 143, "deadline reached")
    if state in ("NODE_FAIL", "BOOT_FAIL"):
        return Observation(Phase.LOST, message=_node_failure(job, failed_nodes), retry=True)
    if state == "PREEMPTED":
        return Observation(Phase.LOST, message="preempted by Slurm", retry=True)
    if state == "CANCELLED":
        if cancelled_by_us:
            return Observation(Phase.EXITED, code or 143, "cancelled")
        return Observation(Phase.EXITED, code or 143, CANCELLED_OUTSIDE)
    return Observation(Phase.LOST, message=f"Slurm job {job.job_id} ended {state}")


def _node_failure(job: SlurmJob, failed_nodes: Collection[str]) -> str:
    names = [n for n in job.nodes if n in failed_nodes] or list(job.nodes)
    if len(names) == 1:
        return f"node {names[0]} failed"
    if names:
        return f"a node of its allocation ({', '.join(names)}) failed"
    return "its node failed"


def ours(jobs: Iterable[SlurmJob], comment: str) -> dict[str, SlurmJob]:
    """This instance's jobs by name; of several under one name, the newest."""
    mine: dict[str, SlurmJob] = {}
    for job in jobs:
        if job.comment == comment:
            seen = mine.get(job.name)
            if seen is None or _number(job.job_id) > _number(seen.job_id):
                mine[job.name] = job
    return mine


def _number(job_id: str) -> int:
    return int(job_id) if job_id.isdigit() else -1
