"""The sample training service's contract (`training.TrainingService`) over Trainyard's own
submit and status: a request names a registered algorithm (its `production` alias, else its
latest version), a registered dataset version and the hyperparameters; the job it becomes is
numbered with a 32-bit id for good. The same access, validation and audit as `Train` and
`GetTrainingStatus`, every refusal naming the sample's own field."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum

from trainyard.auth.policy import Access, Identity
from trainyard.domain.algorithms import PRODUCTION_ALIAS, UNSET_RESOURCES, algorithm_ref
from trainyard.domain.early_stopping import STOPPED_EARLY
from trainyard.domain.errors import InvalidArgument, NotFound
from trainyard.domain.spec import HASH_RE, NAME_RE, AlgorithmRef, DatasetRef, JobSpec
from trainyard.domain.states import JobState
from trainyard.services.jobs import JobService, JobStatus
from trainyard.store.algorithms import AlgorithmStore
from trainyard.store.datasets import DatasetStore
from trainyard.store.sample_ids import SampleIdStore


class SampleState(IntEnum):
    """The contract's `TrainingStatus`, by its numbers."""

    QUEUING = 0
    LAUNCH = 1
    RUNNING = 2
    SUCCEED = 3
    FAILURE = 4


@dataclass(frozen=True)
class SampleMetadata:
    """`TrainingJobMetadata`: what a request names, and what a status echoes."""

    algorithm: str = ""
    dataset_id: str = ""
    name: str = ""
    train_data_version_hash: str = ""
    parameters: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SampleStatus:
    state: SampleState
    job_id: int
    message: str
    metadata: SampleMetadata
    position: int  # in its queue while it waits (1: next), else 0


# Trainyard's request fields as the sample's: a refusal names what its client sent.
_FIELDS = {"name": "metadata.name", "algorithm": "metadata.algorithm",
           "dataset": "metadata.dataset_id", "dataset.name": "metadata.dataset_id",
           "dataset.version": "metadata.train_data_version_hash",
           "hyperparameters": "metadata.parameters"}
_STATES = {JobState.WAITING: SampleState.QUEUING, JobState.LAUNCHING: SampleState.LAUNCH,
           JobState.RUNNING: SampleState.RUNNING, JobState.SUCCEEDED: SampleState.SUCCEED,
           JobState.FAILED: SampleState.FAILURE, JobState.CANCELLED: SampleState.FAILURE,
           # Stopped to be requeued: it waits to run again.
           JobState.PREEMPTED: SampleState.QUEUING}


def sample_field(name: str) -> str:
    """The sample's name for one of Trainyard's request fields ("hyperparameters.lr" is
    "metadata.parameters.lr")."""
    head, dot, rest = name.partition(".")
    if name in _FIELDS:
        return _FIELDS[name]
    if head in _FIELDS and dot:
        return f"{_FIELDS[head]}.{rest}"
    return f"metadata.{name}"


@dataclass
class SampleService:
    jobs: JobService
    algorithms: AlgorithmStore
    datasets: DatasetStore
    ids: SampleIdStore = field(init=False)

    def __post_init__(self) -> None:
        self.ids = SampleIdStore(self.jobs.jobs.db)

    def train(self, identity: Identity, metadata: SampleMetadata | None) -> int:
        """Submit the request as a Trainyard job; return its 32-bit number."""
        self.jobs.guard.require(identity, Access.WRITE, "Train")
        if metadata is None:
            raise InvalidArgument("metadata", "must be given: the algorithm, dataset and "
                                  "parameters to train with")
        spec = JobSpec(name=metadata.name or metadata.algorithm,
                       algorithm=self._version(metadata.algorithm),
                       dataset=self._dataset(metadata), hyperparameters=dict(
                           metadata.parameters), resources=UNSET_RESOURCES)
        if not NAME_RE.match(spec.name):
            raise InvalidArgument("metadata.name", f"{spec.name[:130]!r} is not a valid job "
                                  "name (a letter or digit, then letters, digits, '.', '_' "
                                  "or '-'; at most 128)")
        job_id = self._submit(identity, spec)
        number = self.ids.number_of(job_id)
        assert number is not None  # made with the job, in its transaction
        return number

    def _submit(self, identity: Identity, spec: JobSpec) -> str:
        """The job stored by Trainyard's own submit, which resolves its algorithm: its
        production alias first, else (no such alias) its latest version."""
        assert spec.algorithm is not None
        latest = spec.algorithm
        for handle in (AlgorithmRef(latest.name, 0, PRODUCTION_ALIAS), latest):
            try:
                job_id, _ = self.jobs.train(identity, replace(spec, algorithm=handle),
                                            sample_id=True)
                return job_id
            except InvalidArgument as exc:
                if exc.field == "algorithm" and handle.alias:
                    continue  # no production alias: the latest version
                if exc.field == "dataset" and spec.dataset is not None:
                    raise self._unknown_dataset(spec.dataset) from None
                raise InvalidArgument(sample_field(exc.field), exc.problem) from None
        raise AssertionError("the latest version's submit returns or raises")

    def status(self, identity: Identity, number: int) -> SampleStatus:
        """The job's state in the contract's words. An unknown number, and a job the caller
        may not see, are NOT_FOUND alike."""
        self.jobs.guard.require(identity, Access.READ, "GetTrainingStatus")
        job_id = self.ids.job_of(number)
        if job_id is None:
            raise NotFound("job", str(number))
        status = self.jobs.status(identity, job_id)
        job = status.job
        spec = job.spec
        echoed = SampleMetadata(
            algorithm=spec.algorithm.name if spec.algorithm else "",
            dataset_id=spec.dataset.name if spec.dataset else "", name=spec.name,
            train_data_version_hash=spec.dataset.version if spec.dataset else "",
            parameters=dict(spec.hyperparameters))
        return SampleStatus(_STATES[job.state], number, message_of(status), echoed,
                            status.queue_position)

    @staticmethod
    def _version(name: str) -> AlgorithmRef:
        """The algorithm a request names (its version is chosen at submit)."""
        try:
            return algorithm_ref(name)
        except InvalidArgument as exc:
            raise InvalidArgument("metadata.algorithm", exc.problem) from None

    def _dataset(self, metadata: SampleMetadata) -> DatasetRef:
        """The dataset version a request names, by its form; whether it is registered the
        submit checks (SubmitCheck.accept), and `_unknown_dataset` says which part is not."""
        name, version = metadata.dataset_id, metadata.train_data_version_hash
        if not name or not NAME_RE.match(name):
            raise InvalidArgument("metadata.dataset_id", f"{name[:130]!r} is not a dataset "
                                  "name")
        if not HASH_RE.match(version):
            raise InvalidArgument("metadata.train_data_version_hash", "must be the "
                                  "64-character hash of a registered version of the dataset")
        return DatasetRef(name, version)

    def _unknown_dataset(self, ref: DatasetRef) -> InvalidArgument:
        if not self.datasets.list(ref.name):
            return InvalidArgument("metadata.dataset_id", f"{ref.name!r} is not a registered "
                                   "dataset")
        return InvalidArgument("metadata.train_data_version_hash", f"{ref.version[:12]} is "
                               f"not a registered version of dataset {ref.name!r}")


def message_of(status: JobStatus) -> str:
    """What the contract's coarser states leave unsaid: why it waits, that it was cancelled
    or stopped early (a failure there), or preempted (queuing again)."""
    job = status.job
    said = job.message
    if job.state is JobState.CANCELLED:
        what = "stopped early" if job.end_reason == STOPPED_EARLY else "cancelled"
        return said if said.lower().startswith(what) else \
            f"{what}: {said}" if said else what
    if job.state is JobState.PREEMPTED:
        return f"preempted: {said}; it waits to run again" if said else \
            "preempted; it waits to run again"
    if job.state is JobState.WAITING:
        waiting = status.pending_message
        if job.attempt > 0:
            again = (f"preempted {job.preemptions} time(s)" if job.preemptions
                     else f"retried after attempt {job.attempt}")
            return f"{again}; waits to run again" + (f": {waiting}" if waiting else "")
        return waiting
    return said
