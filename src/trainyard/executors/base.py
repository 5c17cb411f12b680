"""The executor protocol: launch, poll, cancel, adopt. Executors know nothing of queues."""

from __future__ import annotations

import importlib.util
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

from trainyard.domain.contract import (
    CHECKPOINT_PATH,
    CODE_PATH,
    METRICS_PATH,
    MODEL_SAVE_PATH,
    TRAINING_DATA_PATH,
    contract_env,
)
from trainyard.domain.notice import (
    CHECKPOINT_SIGNAL_ENV,
    CHECKPOINT_SIGNAL_FILE,
    NOTICE_ENV,
    NOTICE_FILE,
)
from trainyard.domain.spec import Resources
from trainyard.quantities import describe_duration


# The gang launcher of multi-worker jobs: a single standard-library file, which each
# executor runs with a Python of its own choosing (the job's image's, inside a container).
def _launcher_path() -> Path:
    spec = importlib.util.find_spec("trainyard.runtime")  # found, not imported
    assert spec is not None and spec.submodule_search_locations
    return (Path(next(iter(spec.submodule_search_locations))) / "gang.py").resolve()


LAUNCHER = _launcher_path()
TOKEN_ENV = "TRAINYARD_JOB_TOKEN"  # where a remote job's runtime finds its credential
CONTRACT_PATHS = (TRAINING_DATA_PATH, MODEL_SAVE_PATH, METRICS_PATH, CHECKPOINT_PATH,
                  CODE_PATH)


@dataclass(frozen=True)
class JobFiles:
    """One attempt's files on the service's host; each executor shows them to the job in its
    own way (as they are, or mounted at fixed paths in a container)."""

    data: Path  # the dataset version, read-only
    model: Path
    metrics: Path
    checkpoint: Path
    workdir: Path
    log: Path  # written by the executor, not by the job
    # A registered algorithm's code directory, read-only (None: the job has none): the job
    # finds it at CODE_PATH and runs in it.
    code: Path | None = None


def notice_env(workdir: str) -> dict[str, str]:
    """Where a job whose working directory it sees at `workdir` finds its preemption notice
    and counts its saved checkpoints (domain.notice), for the executors that deliver notice
    on the service's host (local, Docker) and remote jobs that see its files (shared
    staging)."""
    return {NOTICE_ENV: f"{workdir}/{NOTICE_FILE}",
            CHECKPOINT_SIGNAL_ENV: f"{workdir}/{CHECKPOINT_SIGNAL_FILE}"}


@dataclass(frozen=True)
class LaunchRequest:
    job_id: str
    attempt: int
    handle: str
    command: str  # run by /bin/sh -c; with an image, empty means the image's own command
    image: str
    env: dict[str, str]  # variables beyond the contract (thread counts, unbuffered output)
    hyperparameters: dict[str, str]
    resources: Resources  # each worker's
    gpu_ids: tuple[str, ...]  # the devices allocated to this job (all its workers), exactly
    files: JobFiles
    workers: int = 1  # more than one: started together by the gang launcher
    # The attempt's own credential for the job runtime (trainyard.v1.JobRuntime), minted
    # for remote executors only; it reaches the job through TRAINYARD_JOB_TOKEN, never argv.
    job_token: str = field(default="", repr=False)  # never in a log line
    pool: str = ""  # the pool the scheduler admitted the attempt to
    framework: str = ""  # whose variables a group's workers get (domain.spec.FRAMEWORKS); "": both
    team: str = ""  # whose quota it draws on ("": none); a Kubernetes pool's namespace
    time_limit_s: float | None = None  # engines with a limit of their own are given it

    def contract(self, *, data: str, model: str, metrics: str,
                 checkpoint: str, code: str = "") -> dict[str, str]:
        """The job's environment, given where the job sees its files (`code`: its code
        directory, for a job that has one)."""
        env = dict(self.env)
        env.update(contract_env(job_id=self.job_id, data_path=data, model_path=model,
                                metrics_path=metrics, checkpoint_path=checkpoint,
                                hyperparameters=self.hyperparameters, code_path=code))
        return env

    @property
    def runs_as_command(self) -> bool:
        """Whether a command backend may run it: no image, or a code directory, which runs
        as a command on the host and in its image in a container (domain.kinds)."""
        return not self.image or self.files.code is not None

    def remote_contract(self, *, shared: bool) -> dict[str, str]:
        """The environment of a job that reaches its files through the job runtime: the
        contract without its four paths (the runtime sets them where it stages the files),
        or with the service's own paths, where every node mounts them (`shared`): then its
        notice and checkpoint files too, in the attempt's working directory, where the
        tracker writes the one and reads the other as for a local job."""
        files = self.files
        env = self.contract(data=str(files.data), model=str(files.model),
                            metrics=str(files.metrics), checkpoint=str(files.checkpoint),
                            code=str(files.code) if files.code is not None else "")
        if shared:
            env.update(notice_env(str(files.workdir)))
        else:
            for name in CONTRACT_PATHS:
                env.pop(name, None)
        return env


PoolT = TypeVar("PoolT")


def pool_of(pools: Mapping[str, PoolT], request: LaunchRequest, what: str) -> PoolT:
    """The pool an attempt was admitted to, among an executor's `what` pools (the only one
    where the request names none)."""
    if request.pool in pools:
        return pools[request.pool]
    if not request.pool and len(pools) == 1:
        return next(iter(pools.values()))
    raise LaunchError(f"pool {request.pool!r} is not a {what} pool of this server")


def gang_command(python: str, launcher: str, workers: int, gpu_ids: Sequence[str],
                 command: str, *, forward_signals: bool, framework: str = "") -> list[str]:
    """The command line that starts `command` as `workers` workers, each with its share of
    `gpu_ids` (as the workers will name them) and `framework`'s variables ("": both)."""
    argv = [python, "-I", launcher, "launch", f"--workers={workers}",
            f"--gpu-ids={','.join(gpu_ids)}"]
    if not forward_signals:
        argv.append("--no-forward")
    if framework:
        argv.append(f"--framework={framework}")
    return [*argv, "--", command]


class Phase(StrEnum):
    NOT_FOUND = "NOT_FOUND"  # the executor has nothing under this handle: never launched
    STARTING = "STARTING"  # launched, not yet confirmed alive
    RUNNING = "RUNNING"
    EXITED = "EXITED"
    LOST = "LOST"  # gone without a recorded outcome
    UNKNOWN = "UNKNOWN"  # the executor cannot tell right now (its engine is away): ask later


@dataclass(frozen=True)
class Observation:
    phase: Phase
    exit_code: int | None = None
    message: str = ""  # for EXITED, replaces the plain "exited with code N" when set
    # Ended through no fault of the job: an EXITED one its engine cut short (it restarted
    # under it), like a LOST one (its node failed, its engine preempted it, its container
    # vanished), is retried as a lost attempt, not failed. Every LOST attempt that ran is,
    # unless its executor cannot tell that it stopped (`may_still_run`: its engine is
    # unreachable): a retry then could run the job twice at once, so it fails.
    retry: bool = False
    may_still_run: bool = False


class LaunchError(Exception):
    """The executor could not start the job; the message is shown to the user."""


class EngineAway(LaunchError):
    """The executor's engine did not answer: nothing was created, and the launch is tried
    again once it answers (the job stays LAUNCHING; its poll then finds nothing)."""


class Executor(Protocol):
    name: str
    # True: its jobs run on other machines and reach this service's files only through the
    # job runtime (trainyard.v1.JobRuntime), so each attempt gets a job token.
    remote: bool
    # True: a launch that returns has started the job. False: the engine only accepted it,
    # and runs it when its own scheduler finds room (Slurm); a poll then says RUNNING.
    started_by_launch: bool
    # True: its jobs are processes of this host, which a power cut ends with the service, so
    # a launch the store forgets in such a cut has nothing left running (Launcher).
    ends_with_host: bool

    def handle_for(self, job_id: str, attempt: int) -> str:
        """A deterministic name, so a restarted service can find what it launched."""
        ...

    def launch(self, request: LaunchRequest) -> str | None:
        """Start the job. Raises LaunchError when it cannot. Returns the content id of the
        image it runs (`sha256:...`, recorded on the run), or None when it runs no image."""
        ...

    def poll(self, handle: str) -> Observation:
        """What became of a launched job. Never raises for a job that is gone."""
        ...

    def adopt(self, handle: str) -> Observation:
        """After a restart: like poll, and resume watching a job that still runs."""
        ...

    def cancel(self, handle: str, grace_seconds: float) -> bool:
        """Ask the job to stop, then force it after the grace period. Idempotent.

        True once the job was asked to stop or has already ended; False while it cannot be
        signalled yet (still starting): call again later."""
        ...

    def release(self, handle: str) -> None:
        """The job is final: free what it still holds (leftover processes). Idempotent."""
        ...

    def set_exit_listener(self, listener: Callable[[str], None]) -> None:
        """Called with the handle whenever a job's process ends."""
        ...

    def close(self) -> None:
        """The service stops: end background watching. Jobs keep running."""
        ...

    def unavailable(self) -> str | None:
        """Why nothing can be launched right now (its engine is away), or None."""
        ...

    def sweep(self, active: set[str]) -> list[str]:
        """After a restart: remove what this executor launched that belongs to none of the
        `active` handles; return a sentence for each thing removed."""
        ...


@runtime_checkable
class Signaller(Protocol):
    """An executor that can give a running job notice: a signal to every process of it
    that does not stop it by itself (SIGUSR1 before a preemption)."""

    def send_signal(self, handle: str, signum: int) -> bool:
        """Send `signum` to the job. True once sent, or when the job has ended already;
        False while it cannot be signalled yet (still starting): call again later."""
        ...


@runtime_checkable
class StartTeller(Protocol):
    """An executor that can tell when a launched job's own command has begun, past the
    start-up of what it wraps the command in."""

    def wait_command_started(self, handle: str, timeout: float) -> bool:
        """Block until the job's command has begun, at most `timeout` seconds; whether it
        has."""
        ...


def describe_exit(code: int) -> str:
    """A sentence for an exit status as a POSIX shell reports it (128+N for signal N)."""
    if code == 0:
        return "exited with code 0"
    if code > 128:
        signum = code - 128
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        hint = " (possibly out of memory)" if signum == signal.SIGKILL else ""
        return f"killed by {name}{hint}, exit code {code}"
    return f"exited with code {code}"


KILLED_CODE = 128 + signal.SIGKILL  # the status a shell reports for a KILL


def describe_forced_kill(grace_seconds: float) -> str:
    """What became of a job that outlived its grace after a TERM, rather than the plain
    exit status's hint of running out of memory."""
    return (f"it did not stop on TERM and was killed by SIGKILL after the "
            f"{describe_duration(grace_seconds)} grace period, exit code {KILLED_CODE}")
