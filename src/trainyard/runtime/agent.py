"""`python3 -m trainyard.runtime run [options] -- COMMAND`: one worker of a remote job.

It asks the service what the attempt is, stages the dataset and the checkpoint on this node
(pull mode), runs COMMAND with the container contract's variables, pushes its output,
metrics and heartbeats while it runs, uploads the checkpoint when the job says so, on TERM
and at exit, and the model on exit 0. When a reply says the attempt is about to be
preempted, it writes the job's notice file and sends its command the notice's signal, once.
It exits with the command's code; a failure of its own is one line "[trainyard runtime] ..."
and EXIT_FAILED."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from trainyard.runtime import CHECKPOINT_SIGNAL, CODE_PATH, PREEMPT_NOTICE
from trainyard.runtime.gang import LONGEST_LINE
from trainyard.runtime.notice import GivenNotice, write_notice
from trainyard.runtime.pushers import LineSplitter
from trainyard.runtime.reporter import Reporter
from trainyard.runtime.staging import (
    CODE_FOLDER,
    DatasetCache,
    Received,
    StagedDataset,
    StagingError,
    receive_files,
    remove_tree,
    stage_checkpoint,
)
from trainyard.runtime.uploads import chunks, fingerprint
from trainyard.runtime.wire import (
    Attempt,
    FileChunk,
    PullCheckpointRequest,
    PullCodeRequest,
    PullDatasetRequest,
    PushRequest,
)
from trainyard.runtime.workers import worker_vars

TOKEN = "TRAINYARD_JOB_TOKEN"
EXIT_FAILED = 70  # EX_SOFTWARE: the runtime, not the job, failed
SAY = "[trainyard runtime] "
WATCH_EVERY = 0.2  # seconds between looks at the checkpoint signal
READER_DRAIN = 5.0  # seconds to wait for output still in the pipe after the job exited
_SAFE_NAME = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
# A notice's signal, by its name in the reply; "none" (or a name this runtime does not
# know) sends nothing: the notice file alone.
NOTICE_SIGNALS = {"SIGUSR1": signal.SIGUSR1, "TERM": signal.SIGTERM}


@dataclass(frozen=True)
class AgentOptions:
    service: str
    tls_ca: str = ""
    staging: str = "pull"  # or "shared"
    cache_dir: str = "/var/tmp/trainyard/{node}"
    cache_mb: int = 20480
    framework: str = "both"
    grace: float = 10.0
    retry_for: float = 120.0


class AgentError(Exception):
    """A failure of the runtime itself; the message is the sentence to print."""


def run(command: str, options: AgentOptions, env: Mapping[str, str] | None = None) -> int:
    try:
        return _Agent(command, options, dict(os.environ if env is None else env)).run()
    except ImportError as exc:
        say(f"grpcio is needed to reach the service ({exc}); install it with "
            "'python3 -m pip install grpcio'")
    except Exception as exc:  # every other failure of ours: one sentence, never a traceback
        say(str(exc) or type(exc).__name__)
    return EXIT_FAILED


def say(message: str) -> None:
    print(SAY + message, file=sys.stderr, flush=True)


def _offer_runtime(env: dict[str, str]) -> None:
    """Run from the shipped zip file, let the job's own code `import trainyard.runtime` from
    it too, where the node has no Trainyard installed."""
    archive = Path(__file__).resolve().parents[2]
    if archive.is_file():
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(archive), env.get("PYTHONPATH"))
                                            if p)


def node_name(env: Mapping[str, str]) -> str:
    # TRAINYARD_NODE_NAME: a pod's node, which the Kubernetes backend passes down.
    return env.get("TRAINYARD_NODE_NAME") or env.get("SLURMD_NODENAME") or socket.gethostname()


class _Agent:
    def __init__(self, command: str, options: AgentOptions, env: dict[str, str]) -> None:
        self.command = command
        self.options = options
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.reporter: Reporter | None = None
        self.dataset: StagedDataset | None = None
        self.code: StagedDataset | None = None  # its algorithm's code directory, pulled
        self.cwd: str | None = None  # the code directory, where the command runs; None: here
        self.stop_asked = threading.Event()  # TERM, or the service asked
        self.failed = threading.Event()  # the reporter gave up
        self.uploaded: tuple[tuple[str, int, int], ...] | None = None  # the last checkpoint
        self.exited = threading.Event()  # the job did: the watcher stops
        # The job got its TERM already (from a stop, a TERM notice, or a TERM or INT to the
        # agent passed on): a second could land while it exits from the first, past its
        # handler, and kill it.
        self.termed = threading.Event()
        self.noticed = threading.Event()  # its preemption notice was given

    def run(self) -> int:
        from trainyard.runtime.channel import RuntimeClient

        token = self.env.pop(TOKEN, "")
        if not token:
            raise AgentError(f"{TOKEN} is not set: the service gives each attempt its token")
        try:
            self.env.update(worker_vars(self.env, self.options.framework))
        except ValueError as exc:
            raise AgentError(str(exc)) from None
        self.rank = int(self.env.get("RANK") or 0)
        self.world = int(self.env.get("WORLD_SIZE") or 1)
        self.client = RuntimeClient(self.options.service, token, self.options.tls_ca,
                                    retry_for=self.options.retry_for)
        try:
            return self._run()
        finally:
            for staged in (self.dataset, self.code):
                if staged is not None:
                    staged.release()
            self.client.close()

    def _run(self) -> int:
        node = node_name(self.env)
        attempt = self.client.get_attempt(node, self.rank)
        if not _SAFE_NAME.match(attempt.job_id):
            raise AgentError(f"the service named the job {attempt.job_id!r}")
        cache = Path(self.options.cache_dir.replace("{node}", node))
        job_dir = cache / "jobs" / attempt.job_id
        self.rank_dir = job_dir / f"attempt-{attempt.attempt}" / f"rank-{self.rank}"
        remove_tree(self.rank_dir)  # each attempt starts from what the service holds
        self.rank_dir.mkdir(parents=True)
        self.pull = self.options.staging == "pull"
        own = {CHECKPOINT_SIGNAL: self.rank_dir / "checkpoint.signal",
               PREEMPT_NOTICE: self.rank_dir / "preempt.notice"}
        if not self.pull:  # shared: the attempt's own, where the executor says (the service
            # reads the checkpoints and writes the notice there, as for a local job)
            own = {name: Path(self.env.get(name) or path) for name, path in own.items()}
        self.signal_file, self.notice_file = own[CHECKPOINT_SIGNAL], own[PREEMPT_NOTICE]
        metrics = self.rank_dir / "metrics.jsonl"
        self.env.update({"METRICS_PATH": str(metrics), CHECKPOINT_SIGNAL: str(self.signal_file),
                         PREEMPT_NOTICE: str(self.notice_file)})
        _offer_runtime(self.env)
        if self.pull:
            self._stage(attempt, cache, job_dir)
        if attempt.code_hash:
            self._stage_code(attempt, cache)
        self.checkpoint = Path(self.env.get("CHECKPOINT_PATH") or self.rank_dir / "checkpoint")
        self.model = Path(self.env.get("MODEL_SAVE_PATH") or self.rank_dir / "model")
        self.reporter = Reporter(
            self.client, self.rank, metrics, push_log=self.pull,
            heartbeat_s=attempt.heartbeat_interval_s, on_stop=self.stop_asked.set,
            on_failure=self.failed.set, on_notice=self._on_notice)
        return self._follow()

    # --- staging --------------------------------------------------------------------------

    def _stage(self, attempt: Attempt, cache: Path, job_dir: Path) -> None:
        data = self.rank_dir / "data"
        if attempt.dataset_hash:
            store = DatasetCache(cache, self.options.cache_mb * 1024 * 1024)
            self.dataset = store.stage(attempt.dataset_hash,
                                       lambda into: self._pull_dataset(attempt, into))
            data = self.dataset.path
        else:
            data.mkdir(mode=0o555)
        pulled = stage_checkpoint(job_dir, attempt.attempt, (
            (lambda into: self.client.pull("checkpoint", PullCheckpointRequest(),
                                           _receiver(into, read_only=False)))
            if attempt.has_checkpoint else None))
        checkpoint = self.rank_dir / "checkpoint"
        shutil.copytree(pulled, checkpoint)
        model = self.rank_dir / "model"
        model.mkdir()
        self.env.update({"TRAINING_DATA_PATH": str(data), "MODEL_SAVE_PATH": str(model),
                         "CHECKPOINT_PATH": str(checkpoint)})
        self.uploaded = fingerprint(checkpoint)  # the service has this one already

    def _stage_code(self, attempt: Attempt, cache: Path) -> None:
        """The code directory the command runs in, read-only: with shared staging the
        service's own (CODE_PATH, from the executor), else pulled into this node's cache."""
        if self.pull:
            store = DatasetCache(cache, self.options.cache_mb * 1024 * 1024, CODE_FOLDER)
            self.code = store.stage(attempt.code_hash, lambda into: self._pull_code(attempt, into))
            self.env[CODE_PATH] = str(self.code.path)
        if not self.env.get(CODE_PATH):
            raise AgentError(f"the job's code directory is not on this node: {CODE_PATH} is not "
                             "set")
        self.cwd = self.env[CODE_PATH]

    def _pull_code(self, attempt: Attempt, into: Path) -> Received:
        got = self.client.pull("code", PullCodeRequest(attempt.code_hash),
                               _receiver(into, read_only=True))
        if (got.files, got.bytes) != (attempt.code_files, attempt.code_bytes):
            raise StagingError(f"the code directory arrived as {got.files} files of "
                               f"{got.bytes} bytes; the service announced {attempt.code_files} "
                               f"files of {attempt.code_bytes} bytes")
        return got

    def _pull_dataset(self, attempt: Attempt, into: Path) -> Received:
        got = self.client.pull("dataset", PullDatasetRequest(attempt.dataset_hash),
                               _receiver(into, read_only=True))
        if attempt.dataset_files and (got.files, got.bytes) != (attempt.dataset_files,
                                                                attempt.dataset_bytes):
            raise StagingError(f"the dataset arrived as {got.files} files of {got.bytes} "
                               f"bytes; the service announced {attempt.dataset_files} files "
                               f"of {attempt.dataset_bytes} bytes")
        return got

    # --- the job --------------------------------------------------------------------------

    def _follow(self) -> int:
        assert self.reporter is not None
        previous = {sig: signal.signal(sig, self._on_signal)
                    for sig in (signal.SIGTERM, signal.SIGINT)}
        # SIGUSR1, a preemption's notice, is ignored by the command's shell and so by what it
        # starts, unless that sets a handler: a job that does not listen is not ended by it.
        previous[signal.SIGUSR1] = signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        try:
            self.proc = subprocess.Popen(
                ["/bin/sh", "-c", self.command], env=self.env, cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, close_fds=True,
                process_group=0)  # its own group: a TERM reaches all it started
        except OSError as exc:
            raise AgentError(f"could not start the job: {exc}") from None
        reader = threading.Thread(target=self._read_output, name="trainyard-output",
                                  daemon=True)
        reader.start()
        self.reporter.start()
        watcher = threading.Thread(target=self._watch_checkpoints, name="trainyard-ckpt",
                                   daemon=True)
        if self.pull and self.rank == 0:
            watcher.start()
        try:
            code = self._wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        reader.join(READER_DRAIN)
        self.exited.set()
        if watcher.is_alive():
            watcher.join()
        return self._finish(code)

    def _wait(self) -> int:
        """The job's exit code, once it and every process it left in its group are gone:
        what it writes on its way out (a checkpoint on TERM) is complete before uploads."""
        assert self.proc is not None
        kill_at: float | None = None
        code: int | None = None
        while code is None or self._group_alive():
            if code is None:
                code = self.proc.poll()
            stop = self.stop_asked.is_set() or self.failed.is_set() or code is not None
            if kill_at is None and stop:
                if not self.termed.is_set() or code is not None:
                    self._signal(signal.SIGTERM)  # the job's stragglers too, once it exited
                    self.termed.set()
                kill_at = time.monotonic() + self.options.grace
            elif kill_at is not None and time.monotonic() >= kill_at:
                self._signal(signal.SIGKILL)
                if code is not None:
                    break  # what is left cannot be waited for
                kill_at = float("inf")
            time.sleep(0.05)
        return 128 - code if code < 0 else code

    def _group_alive(self) -> bool:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def _finish(self, code: int) -> int:
        assert self.reporter is not None
        if not self.failed.is_set() and self.pull and self.rank == 0:
            self._upload_checkpoint(final=True)
            if code == 0:
                try:
                    reply = self.client.push_files("model", lambda: chunks(self.model))
                except Exception as exc:
                    self._tell(f"the job succeeded but its model could not be uploaded: {exc}")
                    code = EXIT_FAILED
                else:
                    self._tell(f"model uploaded: {reply.files} files, {reply.bytes} bytes")
        self.reporter.finish()  # raises what made it give up
        self._report_exit(code)
        return code

    def _report_exit(self, code: int) -> None:
        """Everything is in: the service may end the attempt now rather than when its engine
        next says so. Only a shortcut: the engine's word stands if this is lost."""
        with contextlib.suppress(Exception):  # the engine reports the end anyway
            self.client.push_once(PushRequest("exit", self.rank, exit_code=code))

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.stop_asked.set()
        if signum != signal.SIGTERM or not self.termed.is_set():
            self._signal(signal.Signals(signum))
        self.termed.set()

    def _on_notice(self, notice: GivenNotice) -> None:
        """The attempt is about to be preempted (the reporter's thread, at each reply that
        says so): the notice file first, which a handler of the signal reads, then the
        signal, once. The stop follows as the service's or the engine's."""
        if self.noticed.is_set() or self.exited.is_set():
            return
        self.noticed.set()
        try:
            write_notice(self.notice_file, notice)
        except OSError as exc:
            self._tell(f"the preemption notice file could not be written: {exc}")
        sig = NOTICE_SIGNALS.get(notice.signal)
        if sig is signal.SIGTERM:
            self.termed.set()  # the stop that follows sends no second TERM
        if sig is not None:
            self._signal(sig)
        self._tell(f"preemption notice given ({sig.name if sig else 'the notice file only'}, "
                   f"{notice.grace_s:g} s grace)")

    def _signal(self, sig: signal.Signals) -> None:
        if self.proc is not None:
            with contextlib.suppress(OSError):  # it ended meanwhile
                os.killpg(self.proc.pid, sig)

    def _read_output(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        prefix = f"[rank {self.rank}] ".encode() if self.world > 1 else b""
        lines = LineSplitter(LONGEST_LINE)
        fd = self.proc.stdout.fileno()
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            batch = lines.feed(data) if data else lines.end()
            if batch:
                batch = [prefix + line for line in batch]
                self._echo(batch)
                if self.reporter is not None:
                    self.reporter.add_log(batch)
            if not data:
                self.proc.stdout.close()
                return

    @staticmethod
    def _echo(lines: list[bytes]) -> None:
        try:
            sys.stdout.buffer.write(b"".join(line + b"\n" for line in lines))
            sys.stdout.buffer.flush()
        except (OSError, ValueError):
            pass  # nobody reads our output; the service still gets it

    def _tell(self, message: str) -> None:
        """A line of the runtime's own, for the job's log as well."""
        say(message)
        if self.reporter is not None:
            self.reporter.add_log([(SAY + message).encode()])

    # --- checkpoints ----------------------------------------------------------------------

    def _watch_checkpoints(self) -> None:
        seen = _read(self.signal_file)
        while not self.exited.wait(WATCH_EVERY) and not self.failed.is_set():
            now = _read(self.signal_file)
            if now != seen:
                seen = now
                self._upload_checkpoint(final=False)

    def _upload_checkpoint(self, *, final: bool) -> None:
        marks = fingerprint(self.checkpoint)
        if not marks or marks == self.uploaded:
            return  # nothing new since the last upload (or since it was pulled)
        try:
            reply = self.client.push_files("checkpoint", lambda: chunks(self.checkpoint))
        except Exception as exc:
            self._tell(f"the checkpoint could not be uploaded: {exc}")
            return
        self.uploaded = marks
        when = "at exit" if final else "as the job asked"
        self._tell(f"checkpoint uploaded {when}: {reply.files} files, {reply.bytes} bytes")


def _receiver(into: Path, *, read_only: bool) -> Callable[[Iterator[FileChunk]], Received]:
    def receive(stream: Iterator[FileChunk]) -> Received:
        remove_tree(into)  # a retried stream starts again from nothing
        into.mkdir(parents=True)
        return receive_files(stream, into, read_only=read_only)
    return receive


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""
