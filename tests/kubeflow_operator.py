"""A test-side Kubeflow operator: test equipment, not product.

It plays, against the tests' API server (which has no controllers), the part of Kubeflow's
training-operator (PyTorchJob, TFJob: kubeflow.org/v1) and of Trainer (TrainJob:
trainer.kubeflow.org/v1alpha1): it watches those objects in every namespace and runs each
replica as a local process with the variables the real operator injects
(tests/kubeflow_replicas.py), writes the operators' conditions back through the /status
subresource, and plays the garbage collector for foreground deletion (TERM, KILL after the
grace period, then the finalizer removed). `runPolicy.suspend` / `spec.suspend` hold a job
as Kueue expects. Every loop is bounded; stop() ends every process and thread it started,
and it only ever talks to the API server it was given."""

from __future__ import annotations

import logging
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, cast

from kubernetes import client
from kubernetes.watch.watch import Watch

from tests.kubeflow_replicas import (
    KINDS,
    TRAINJOB,
    Kind,
    PlanError,
    Replica,
    plan_trainjob,
    plan_v1,
)
from tests.kubeflow_status import (
    Job,
    adopted,
    mark_created,
    mark_finished,
    mark_running,
    mark_suspended,
    status_of,
)

log = logging.getLogger(__name__)
WATCH_TIMEOUT_S = 30  # the server ends each watch this soon; it is resumed from its version
RETRY_S = 0.3  # between tries while the API server is away
WRITE_GIVE_UP_S = 60.0
JOIN_TIMEOUT_S = 10.0
Key = tuple[str, str, str]  # plural, namespace, name


class KubeflowOperator:
    """Watches PyTorchJob, TFJob and TrainJob objects and runs them as local processes;
    replica working directories and outputs go under `workdir`. `python_bin_dir` comes
    first on each replica's PATH (so `python3` is this interpreter); `base_env` is the rest
    of a replica's environment (default: PATH and the PYTHONPATH of this process).

    Objects it finds at its start are adopted as the real operator would after a restart
    (their conditions kept, the ended ones left alone, the others run); with
    `ignore_existing` they are not touched at all (objects of earlier tests)."""

    def __init__(self, api_client: client.ApiClient, workdir: Path, *,
                 python_bin_dir: Path | None = None,
                 base_env: Mapping[str, str] | None = None,
                 ignore_existing: bool = False) -> None:
        self.api = client.CustomObjectsApi(api_client)
        self.workdir = workdir
        self.base_env = dict(base_env) if base_env is not None else {
            "PYTHONPATH": os.pathsep.join(_source_roots()), "LANG": "C.UTF-8"}
        bin_dir = str(python_bin_dir or Path(sys.executable).parent)
        rest = self.base_env.get("PATH") or os.environ.get("PATH", "/usr/bin:/bin")
        self.base_env["PATH"] = os.pathsep.join([bin_dir, rest])
        self._jobs: dict[Key, Job] = {}
        self._ignore_existing = ignore_existing
        self._ignored: set[str] = set()  # uids
        self._lock = threading.Condition()
        self._work: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._stopping = threading.Event()
        self._acting = threading.Event()
        self._acting.set()
        self._threads: list[threading.Thread] = []
        self._watches: list[tuple[threading.Thread, Watch]] = []

    # -- life ----------------------------------------------------------------------------

    def start(self) -> KubeflowOperator:
        """List every kind once (what exists now is what `ignore_existing` ignores), then
        watch from there: an object created once this returns is seen."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        for kind in KINDS:
            items, version = self._list(kind)
            if self._ignore_existing:
                self._ignored.update(item["metadata"]["uid"] for item in items)
            self._work.put(("sync", (kind, items)))
            self._spawn(self._watch, kind, version, name=f"watch-{kind.plural}")
        self._spawn(self._act, name="operator")
        return self

    def stop(self) -> None:
        """End the watches and the worker, then KILL every replica still running."""
        self._stopping.set()
        self._acting.set()
        for thread, stream in list(self._watches):
            # A watch not yet streaming forgets a stop: say it until the thread ends.
            deadline = time.monotonic() + JOIN_TIMEOUT_S
            while thread.is_alive() and time.monotonic() < deadline:
                stream.stop()  # type: ignore[no-untyped-call]
                thread.join(0.1)
        with self._lock:
            replicas = [r for job in self._jobs.values() for r in job.replicas]
        for replica in replicas:
            replica.signal(signal.SIGKILL)
        for replica in replicas:
            replica.wait(JOIN_TIMEOUT_S)
        joined: set[threading.Thread] = set()
        while len(joined) < len(self._threads):  # stopping threads may have started others
            for thread in [t for t in self._threads if t not in joined]:
                thread.join(JOIN_TIMEOUT_S)
                joined.add(thread)
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            raise RuntimeError(f"operator threads did not stop: {alive}")

    def __enter__(self) -> KubeflowOperator:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def pause(self) -> None:
        """Stop acting (events wait), as a slow or absent operator would."""
        self._acting.clear()

    def resume(self) -> None:
        self._acting.set()

    # -- handles for tests ---------------------------------------------------------------

    def processes(self, namespace: str, name: str) -> list[Replica]:
        """The replicas of the job as last started (pid, node_name, env, exit_code,
        output), in rank order; [] when none ran."""
        with self._lock:
            return [r for job in self._jobs.values()
                    if (job.namespace, job.name) == (namespace, name) for r in job.replicas]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 30.0,
                 what: str = "the condition") -> None:
        """Until predicate() holds (checked on every change the operator makes, and every
        0.2 s); AssertionError after timeout."""
        deadline = time.monotonic() + timeout
        while not predicate():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{what} did not hold within {timeout:g} s")
            with self._lock:
                self._lock.wait(min(left, 0.2))

    def kill_replica(self, namespace: str, name: str, replica: int | str,
                     sig: int = signal.SIGKILL) -> None:
        """Signal one replica, by rank or by name ("Worker-0", "node-1")."""
        found = [r for r in self.processes(namespace, name)
                 if replica in (r.plan.rank, r.name)]
        if not found:
            raise KeyError(f"{namespace}/{name} has no replica {replica!r}")
        found[0].signal(sig)

    # -- watching ------------------------------------------------------------------------

    def _spawn(self, target: Callable[..., None], *args: Any, name: str) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _list(self, kind: Kind) -> tuple[list[dict[str, Any]], str]:
        listing = cast(dict[str, Any], self.api.list_cluster_custom_object(
            kind.group, kind.version, kind.plural, _request_timeout=10))
        return listing["items"], listing["metadata"]["resourceVersion"]

    def _watch(self, kind: Kind, version: str) -> None:
        """Watch from `version`; list again on 410 or any failure (the API server away:
        retried until it answers), and watch from the new list's version."""
        stream = Watch()  # type: ignore[no-untyped-call]
        self._watches.append((threading.current_thread(), stream))
        while not self._stopping.is_set():
            try:
                if not version:
                    items, version = self._list(kind)
                    self._work.put(("sync", (kind, items)))
                for event in stream.stream(  # type: ignore[no-untyped-call]
                        self.api.list_cluster_custom_object, kind.group, kind.version,
                        kind.plural, resource_version=version, allow_watch_bookmarks=True,
                        timeout_seconds=WATCH_TIMEOUT_S,
                        _request_timeout=(5, WATCH_TIMEOUT_S + 10)):
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        self._work.put((event["type"].lower(), (kind, event["raw_object"])))
                    if self._stopping.is_set():
                        break
                version = stream.resource_version or version
            except Exception as error:  # 410, or the server away: list again
                version = ""
                if not self._stopping.is_set():
                    log.debug("watch %s: %s; listing again", kind.plural, error)
                    self._stopping.wait(RETRY_S)

    # -- acting --------------------------------------------------------------------------

    def _act(self) -> None:
        held: tuple[str, Any] | None = None  # taken just as a pause began
        while not self._stopping.is_set():
            if not self._acting.wait(0.2):
                continue
            if held is None:
                try:
                    held = self._work.get(timeout=0.2)
                except queue.Empty:
                    continue
            if not self._acting.is_set():
                continue
            (what, payload), held = held, None
            try:
                getattr(self, f"_on_{what}")(*payload)
            except Exception:  # the equipment keeps going; the test sees the state
                log.exception("operator: %s failed", what)
            with self._lock:
                self._lock.notify_all()

    def _on_sync(self, kind: Kind, items: list[dict[str, Any]]) -> None:
        present = {(m["namespace"], m["name"], m["uid"])
                   for m in (item["metadata"] for item in items)}
        with self._lock:
            gone = [job for job in self._jobs.values() if job.kind is kind
                    and (job.namespace, job.name, job.uid) not in present]
        for job in gone:
            self._forget(job)
        for item in items:
            self._on_modified(kind, item)

    def _on_added(self, kind: Kind, obj: dict[str, Any]) -> None:
        self._on_modified(kind, obj)

    def _on_deleted(self, kind: Kind, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        job = self._jobs.get((kind.plural, meta["namespace"], meta["name"]))
        if job is not None and job.uid == meta["uid"]:
            self._forget(job)

    def _forget(self, job: Job) -> None:
        """The object is gone: its replicas are killed at once."""
        for replica in job.replicas:
            replica.signal(signal.SIGKILL)
        with self._lock:
            self._jobs.pop((job.kind.plural, job.namespace, job.name), None)

    def _on_modified(self, kind: Kind, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        if meta["uid"] in self._ignored:
            return
        key = (kind.plural, meta["namespace"], meta["name"])
        job = self._jobs.get(key)
        if job is not None and job.uid != meta["uid"]:
            self._forget(job)  # deleted and created again between two looks
            job = None
        if job is None:
            job = adopted(Job(kind, meta["namespace"], meta["name"], meta["uid"], obj))
            with self._lock:
                self._jobs[key] = job
            mark_created(job)
        job.obj = obj
        if meta.get("deletionTimestamp"):
            if not job.deleting:
                job.deleting = True
                self._spawn(self._delete, job, name=f"delete-{job.name}")
            return
        if job.finished:
            return
        if job.suspended:
            self._suspend(job)
        elif not job.replicas:
            self._run(job)

    def _on_exit(self, job: Job, replica: Replica) -> None:
        """A replica ended: the first non-zero exit fails the job (backoffLimit 0), the
        others are stopped; all exited 0: it succeeded."""
        if job.finished or job.deleting or replica not in job.replicas:
            return
        code = replica.exit_code
        if code != 0:
            self._finish(job, False, f"replica {replica.name} exited with code {code}"
                         + (f" ({replica.start_error})" if replica.start_error else ""))
            for other in job.replicas:
                self._spawn(other.stop, other.plan.grace_s, name=f"stop-{other.name}")
        elif all(r.exit_code == 0 for r in job.replicas):
            self._finish(job, True, "")
        else:
            self._write_status(job)

    # -- the job's course ----------------------------------------------------------------

    def _run(self, job: Job) -> None:
        try:
            plans = plan_trainjob(job.obj, self._runtime(job)) if job.kind.trainer \
                else plan_v1(job.kind, job.obj)
        except PlanError as error:
            self._finish(job, False, error.message, reason=error.reason)
            return
        home = self.workdir / job.namespace / job.name
        replicas = [Replica(plan, home / plan.name, home / f"{plan.name}.log")
                    for plan in plans]
        for replica in replicas:
            replica.start(self.base_env)
        with self._lock:  # tests see replicas only once they all run
            job.replicas = replicas
        for replica in replicas:
            self._spawn(self._await_exit, job, replica, name=f"wait-{replica.name}")
        mark_running(job)
        self._write_status(job)

    def _await_exit(self, job: Job, replica: Replica) -> None:
        while not replica.wait(1.0) and not self._stopping.is_set():
            pass
        if not self._stopping.is_set():
            self._work.put(("exit", (job, replica)))

    def _suspend(self, job: Job) -> None:
        """Hold the job: nothing runs (what ran is stopped) until it is unsuspended."""
        for replica in job.replicas:  # each TERMed, KILLed after its grace period
            self._spawn(replica.stop, replica.plan.grace_s, name=f"stop-{replica.name}")
        with self._lock:
            job.replicas = []
        if mark_suspended(job):
            self._write_status(job)

    def _finish(self, job: Job, succeeded: bool, detail: str, reason: str = "") -> None:
        mark_finished(job, succeeded, detail, reason)
        self._write_status(job)

    def _runtime(self, job: Job) -> dict[str, Any]:
        ref = job.obj["spec"]["runtimeRef"]
        kind = ref.get("kind", "ClusterTrainingRuntime")
        try:
            if kind == "TrainingRuntime":
                found = self.api.get_namespaced_custom_object(
                    TRAINJOB.group, TRAINJOB.version, job.namespace, "trainingruntimes",
                    ref["name"])
            else:
                found = self.api.get_cluster_custom_object(
                    TRAINJOB.group, TRAINJOB.version, "clustertrainingruntimes", ref["name"])
        except client.ApiException as error:
            if error.status == 404:
                raise PlanError("RuntimeNotFound",
                                f"runtime not found: {kind} {ref['name']}") from None
            raise
        return cast(dict[str, Any], found)

    # -- writing back --------------------------------------------------------------------

    def _write_status(self, job: Job) -> None:
        body = {"status": status_of(job)}
        self._retry(lambda: self.api.patch_namespaced_custom_object_status(
            job.kind.group, job.kind.version, job.namespace, job.kind.plural, job.name, body,
            _content_type="application/merge-patch+json", _request_timeout=10))

    def _delete(self, job: Job) -> None:
        """Foreground deletion's garbage collection: stop the replicas (TERM, KILL after
        the grace period), then remove the finalizers deletion is waiting for."""
        grace = job.grace_s
        stoppers = [threading.Thread(target=r.stop, args=(grace,), daemon=True)
                    for r in job.replicas]
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join(grace + JOIN_TIMEOUT_S * 2)

        def release() -> None:
            current = cast(dict[str, Any], self.api.get_namespaced_custom_object(
                job.kind.group, job.kind.version, job.namespace, job.kind.plural, job.name,
                _request_timeout=10))
            if current["metadata"]["uid"] != job.uid:
                return
            kept = [f for f in current["metadata"].get("finalizers") or []
                    if f not in ("foregroundDeletion", "orphan")]
            self.api.patch_namespaced_custom_object(
                job.kind.group, job.kind.version, job.namespace, job.kind.plural, job.name,
                {"metadata": {"finalizers": kept or None,
                              "resourceVersion": current["metadata"]["resourceVersion"]}},
                _content_type="application/merge-patch+json", _request_timeout=10)
        self._retry(release)

    def _retry(self, call: Callable[[], object]) -> None:
        """Until the call is done; a 404 for the object (gone) is done too; a 409 (a stale
        version), a 404 for its resource (a restarted server not yet serving its CRD) and
        the API server away are tried again, for a bounded time."""
        deadline = time.monotonic() + WRITE_GIVE_UP_S
        while not self._stopping.is_set():
            try:
                call()
                return
            except client.ApiException as error:
                if error.status == 404 and _object_missing(error):
                    return
                if error.status not in (404, 409, 429, 500, 503, 504) and error.status:
                    log.error("operator: the API server refused a write: %s", error)
                    return
            except Exception as error:  # the server away: try again
                log.debug("operator: write failed (%s); trying again", error)
            if time.monotonic() > deadline:
                log.error("operator: gave up a write after %g s", WRITE_GIVE_UP_S)
                return
            self._stopping.wait(RETRY_S)


def _object_missing(error: client.ApiException) -> bool:
    """A 404 about the object (a Status), not about its resource (plain text)."""
    return '"kind":"Status"' in (error.body or "").replace(" ", "")


def _source_roots() -> list[str]:
    """Where this process imports trainyard and the tests from, for a replica's PYTHONPATH
    (the venv's python finds its own packages by itself)."""
    import trainyard
    roots = [str(Path(trainyard.__file__).resolve().parents[1]),
             str(Path(__file__).resolve().parents[1])]
    return roots
