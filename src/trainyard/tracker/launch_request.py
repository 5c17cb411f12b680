"""What an executor is asked to start for one attempt: its files, its environment beyond the
contract, the dataset version it reads, and for a remote executor the attempt's job token
(stored before the executor hears of it, so the job can use it from its first moment)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

from trainyard.auth import job_tokens
from trainyard.executors.base import JobFiles, LaunchError, LaunchRequest
from trainyard.metadata.workspace import Workspace
from trainyard.store.datasets import DatasetStore
from trainyard.store.job_tokens import JobTokenStore
from trainyard.store.records import JobRecord

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
DATA_PATHS_KEPT = 1024  # dataset versions whose paths launches remember
PREPARED_KEPT = 64  # waiting jobs whose next attempts' directories are made ahead


class LaunchRequests:
    def __init__(self, workspace: Workspace, datasets: DatasetStore,
                 tokens: JobTokenStore | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.workspace = workspace
        self.datasets = datasets
        self.tokens = tokens if tokens is not None else JobTokenStore(datasets.db)
        self.clock = clock
        # Where each dataset version a launch read lies. A version a job names is never
        # deleted (DatasetStore.delete_unreferenced), nor its row changed, so the next
        # launch of the same version needs no read of the store.
        self._data_paths: dict[tuple[str, str], str] = {}
        self._prepared: dict[str, int] = {}  # job id -> its next attempt, directories made

    def build(self, job: JobRecord, *, remote: bool = False) -> LaunchRequest:
        """The request for a LAUNCHING job's attempt, its directories made; for a remote
        executor with a fresh job token, already stored. Raises LaunchError when its
        dataset version is gone."""
        paths = self.workspace.attempt(job.id, job.attempt)
        if self._prepared.pop(job.id, None) != job.attempt or not paths.workdir.is_dir():
            paths.create()
        # Keep numeric libraries within the CPUs the job asked for.
        threads = str(max(1, math.ceil(job.spec.resources.cpus)))
        env = {var: threads for var in THREAD_VARIABLES}
        env["PYTHONUNBUFFERED"] = "1"
        files = JobFiles(data=Path(self.data_path(job)), model=paths.model_dir,
                         metrics=paths.metrics_path, checkpoint=paths.checkpoint_dir,
                         workdir=paths.workdir, log=paths.log_path, code=self.code_path(job))
        return LaunchRequest(job_id=job.id, attempt=job.attempt, handle=job.handle,
                             command=job.spec.command, image=job.spec.image, env=env,
                             hyperparameters=job.spec.hyperparameters,
                             resources=job.spec.resources, gpu_ids=job.gpu_ids, files=files,
                             workers=job.spec.workers, framework=job.spec.framework,
                             job_token=self.mint(job) if remote else "", pool=job.pool,
                             team=job.team, time_limit_s=engine_time_limit(job))

    def prepare(self, job: JobRecord) -> None:
        """Make the directories of a waiting job's next attempt ahead of its launch, which
        then need not wait for them (on a busy host, milliseconds). A job that never runs
        keeps them empty, as nothing reads them before a launch."""
        attempt = job.attempt + 1
        if self._prepared.get(job.id) == attempt:
            return
        self.workspace.attempt(job.id, attempt).create()
        if len(self._prepared) >= PREPARED_KEPT:
            self._prepared.clear()  # a bound: those launches make their directories again
        self._prepared[job.id] = attempt

    def is_prepared(self, job_id: str) -> bool:
        return job_id in self._prepared

    def mint(self, job: JobRecord) -> str:
        """A new token for the job's current attempt, replacing one minted for it before."""
        minted = job_tokens.mint(job.id, job.attempt)
        self.tokens.put(job.id, job.attempt, minted.secret_hash, now=self.clock())
        return minted.token

    def code_path(self, job: JobRecord) -> Path | None:
        """Where the job's algorithm's code directory is stored (None: it has none)."""
        if not job.spec.code_hash:
            return None
        path = self.workspace.code_of(job.spec.code_hash)
        if not path.is_dir():
            raise LaunchError(f"the code directory {job.spec.code_hash[:12]} of algorithm "
                              f"{job.spec.algorithm} is not on the server")
        return path

    def data_path(self, job: JobRecord) -> str:
        """The directory of the job's dataset version; without one, an empty read-only one."""
        ref = job.spec.dataset
        if ref is None:
            empty = self.workspace.empty_dataset_dir
            if not empty.exists():
                empty.mkdir(parents=True, exist_ok=True)
                empty.chmod(0o555)
            return str(empty)
        key = (ref.name, ref.version)
        if (known := self._data_paths.get(key)) is not None:
            return known
        record = self.datasets.get(ref.name, ref.version)
        if record is None:
            raise LaunchError(f"dataset {ref.name}:{ref.version} is no longer registered")
        if len(self._data_paths) >= DATA_PATHS_KEPT:
            self._data_paths.clear()  # a bound, not a policy: the next reads fill it again
        self._data_paths[key] = record.path
        return record.path


# An engine with a limit of its own (Slurm's --time, Kubernetes' activeDeadlineSeconds) is
# given the job's, this much later: the tracker stops the attempt at its limit and says so,
# and the engine's limit only backs it up.
ENGINE_LIMIT_SLACK_S = 60.0


def engine_time_limit(job: JobRecord) -> float | None:
    limit = job.spec.time_limit_s
    return limit + ENGINE_LIMIT_SLACK_S if limit else None
