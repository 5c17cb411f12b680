"""The Python SDK. The CLI is built on it; it speaks only the gRPC protocol."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from grpc_health.v1 import health_pb2, health_pb2_grpc

from trainyard import credentials
from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc

DEFAULT_SERVER = "127.0.0.1:50051"
SERVER_ENV = "TRAINYARD_SERVER"
REGISTER_TIMEOUT = 3600.0
FINAL_STATES = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})


class TrainyardError(Exception):
    """A call the server refused or could not answer; `code` is the gRPC status name."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def _as_dict(message: Any) -> dict[str, Any]:
    """A response as plain data: field names as in the proto, every field present."""
    return dict(json_format.MessageToDict(message, preserving_proto_field_name=True,
                                          always_print_fields_with_no_presence=True))


def _plain(message: Message) -> dict[str, Any]:
    """A response as JSON-ready data: proto field names, every field present, 64-bit
    integers as numbers, enums by name (None for UNSPECIFIED), times as ISO 8601 (None
    when unset), and message fields that are unset as None."""
    out: dict[str, Any] = {}
    for fd in message.DESCRIPTOR.fields:
        value = getattr(message, fd.name)
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            value_fd = fd.message_type.fields_by_name["value"]
            out[fd.name] = {k: _value(value_fd, v) for k, v in value.items()}
        elif fd.is_repeated:
            out[fd.name] = [_value(fd, v) for v in value]
        elif fd.message_type is not None and not message.HasField(fd.name):
            out[fd.name] = None
        else:
            out[fd.name] = _value(fd, value)
    return out


def _value(fd: FieldDescriptor, value: Any) -> Any:
    if fd.message_type is not None:
        if fd.message_type.full_name == "google.protobuf.Timestamp":
            return _iso(value)
        return _plain(value)
    if fd.enum_type is not None:
        name = fd.enum_type.values_by_number[value].name
        return None if name.endswith("_UNSPECIFIED") else name
    return value


def _iso(ts: Timestamp) -> str | None:
    if not ts.seconds and not ts.nanos:
        return None
    return datetime.fromtimestamp(ts.seconds + ts.nanos / 1e9, UTC).isoformat()


def _state(value: int) -> str:
    return str(pb.JobState.Name(value))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Transition:
    from_state: str | None
    to_state: str
    time: str | None
    reason: str

    @classmethod
    def from_pb(cls, t: pb.StateTransition) -> Transition:
        return cls(_state(t.from_state) if t.from_state else None, _state(t.to_state),
                   _iso(t.time), t.reason)


@dataclass(frozen=True)
class JobStatus:
    job_id: str
    name: str
    state: str
    queue: str
    queue_position: int
    pending_reason: dict[str, str] | None
    message: str
    exit_code: int | None
    attempt: int
    submitted_at: str | None
    transitions: list[Transition]
    spec: dict[str, Any]
    metrics: dict[str, dict[str, float | int]]
    model: dict[str, Any] | None
    malformed_metric_lines: int
    cancel_requested: bool
    executor: str = ""
    gpu_ids: tuple[str, ...] = ()
    sweep_id: str = ""

    @property
    def is_final(self) -> bool:
        return self.state in FINAL_STATES

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_pb(cls, s: pb.TrainingStatus) -> JobStatus:
        spec = s.spec
        return cls(
            job_id=s.job_id, name=spec.name, state=_state(s.state), queue=spec.queue,
            queue_position=s.queue_position,
            pending_reason=({"code": s.pending_reason.code, "message": s.pending_reason.message}
                            if s.HasField("pending_reason") else None),
            message=s.message, exit_code=s.exit_code if s.has_exit_code else None,
            attempt=s.attempt, submitted_at=_iso(s.submitted_at),
            transitions=[Transition.from_pb(t) for t in s.transitions],
            spec={
                "name": spec.name, "command": spec.command, "image": spec.image,
                "dataset": ({"name": spec.dataset.name, "version": spec.dataset.version}
                            if spec.HasField("dataset") else None),
                "hyperparameters": dict(spec.hyperparameters),
                "resources": {"cpus": spec.resources.cpus,
                              "memory_mb": spec.resources.memory_mb,
                              "gpus": spec.resources.gpus},
                "queue": spec.queue, "priority": spec.priority, "labels": dict(spec.labels),
                "workers": spec.workers or 1, "git_commit": spec.git_commit,
                "model_name": spec.model_name,
            },
            metrics={k: {"value": v.value, "step": v.step} for k, v in s.latest_metrics.items()},
            model=({"model_name": s.model.model_name, "version": s.model.version,
                    "content_hash": s.model.content_hash, "uri": s.model.uri,
                    "size_bytes": s.model.size_bytes, "file_count": s.model.file_count}
                   if s.HasField("model") else None),
            malformed_metric_lines=s.malformed_metric_lines,
            cancel_requested=s.cancel_requested, executor=s.executor,
            gpu_ids=tuple(s.gpu_ids), sweep_id=s.sweep_id,
        )


@dataclass(frozen=True)
class JobSummary:
    job_id: str
    name: str
    state: str
    queue: str
    priority: int
    submitted_at: str | None
    updated_at: str | None
    labels: dict[str, str]
    message: str

    @classmethod
    def from_pb(cls, j: pb.JobSummary) -> JobSummary:
        return cls(j.job_id, j.name, _state(j.state), j.queue, j.priority,
                   _iso(j.submitted_at), _iso(j.updated_at), dict(j.labels), j.message)


@dataclass(frozen=True)
class Dataset:
    name: str
    version: str
    size_bytes: int
    file_count: int
    created_at: str | None
    created: bool = False
    run_count: int = 0  # the runs that used it, of those you may see
    run_ids: tuple[str, ...] = ()

    @classmethod
    def from_pb(cls, d: pb.DatasetVersion) -> Dataset:
        return cls(d.name, d.version, d.size_bytes, d.file_count, _iso(d.created_at), d.created,
                   d.run_count, tuple(d.run_ids))


@dataclass(frozen=True)
class Submitted:
    job_id: str
    existing: bool = False


@dataclass
class Resources:
    cpus: float = 0.0  # 0: the server's default
    memory_mb: int = 0
    gpus: int = 0


@dataclass
class TrainSpec:
    name: str
    command: str = ""  # with an image, empty runs the image's own command
    image: str = ""
    dataset: str = ""  # NAME:VERSION
    hyperparameters: Mapping[str, str] = field(default_factory=dict)
    resources: Resources = field(default_factory=Resources)
    queue: str = ""
    priority: int = 0
    labels: Mapping[str, str] = field(default_factory=dict)
    client_request_id: str = ""
    workers: int = 1  # started together, all or none; resources are each worker's
    pipeline: str = ""  # the caller's pipeline this job joins (made on its first job)
    pipeline_max_parallel: int = 0  # its running limit from now on; 0 keeps the limit it has
    git_commit: str = ""  # the code's version, recorded on each run
    model_name: str = ""  # the model its files become a version of; empty: the name

    def to_pb(self) -> pb.TrainRequest:
        req = pb.TrainRequest(
            name=self.name, command=self.command, image=self.image,
            hyperparameters={k: str(v) for k, v in self.hyperparameters.items()},
            resources=pb.Resources(cpus=self.resources.cpus,
                                   memory_mb=self.resources.memory_mb,
                                   gpus=self.resources.gpus),
            queue=self.queue, priority=self.priority, labels=dict(self.labels),
            client_request_id=self.client_request_id, workers=self.workers,
            pipeline=self.pipeline, pipeline_max_parallel=self.pipeline_max_parallel,
            git_commit=self.git_commit, model_name=self.model_name,
        )
        if self.dataset:
            name, _, version = self.dataset.partition(":")
            req.dataset.CopyFrom(pb.DatasetRef(name=name, version=version))
        return req


class Client:
    """Talks to a Trainyard server. `server` defaults to $TRAINYARD_SERVER, then
    127.0.0.1:50051."""

    def __init__(self, server: str | None = None, *, timeout: float = 30.0,
                 token: str | None = None, ca_cert: str | None = None) -> None:
        """The server, token and CA certificate come from the arguments, else from
        TRAINYARD_SERVER, TRAINYARD_TOKEN and TRAINYARD_CA_CERT, else from
        ~/.trainyard/config.toml (which must be private to its owner)."""
        try:
            saved = credentials.load()
        except credentials.CredentialsError as exc:
            raise TrainyardError("FAILED_PRECONDITION", str(exc)) from None
        self.server = server or saved.server or DEFAULT_SERVER
        self.timeout = timeout
        secret = token if token is not None else saved.token
        self._metadata: tuple[tuple[str, str], ...] = \
            (("authorization", f"Bearer {secret}"),) if secret else ()
        ca_path = ca_cert if ca_cert is not None else saved.ca_cert
        if ca_path:
            try:
                root = Path(ca_path).read_bytes()
            except OSError as exc:
                raise TrainyardError("FAILED_PRECONDITION", f"cannot read the CA certificate "
                                     f"{ca_path}: {exc.strerror}") from None
            self._channel = grpc.secure_channel(
                self.server, grpc.ssl_channel_credentials(root_certificates=root))
        else:
            self._channel = grpc.insecure_channel(self.server)
        self._stub = pb_grpc.TrainingServiceStub(self._channel)
        self._admin = pb_grpc.AdminServiceStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: Any, request: Any, timeout: float | None = None) -> Any:
        try:
            return method(request, timeout=timeout or self.timeout, metadata=self._metadata)
        except grpc.RpcError as exc:
            raise _translate(exc) from None

    def _stream(self, method: Any, request: Any) -> Iterator[Any]:
        try:
            yield from method(request, metadata=self._metadata)
        except grpc.RpcError as exc:
            raise _translate(exc) from None

    # --- operations ----------------------------------------------------------------------

    def train(self, spec: TrainSpec) -> Submitted:
        resp = self._call(self._stub.Train, spec.to_pb())
        return Submitted(resp.job_id, resp.existing)

    def status(self, job_id: str) -> JobStatus:
        return JobStatus.from_pb(
            self._call(self._stub.GetTrainingStatus, pb.GetTrainingStatusRequest(job_id=job_id))
        )

    def list_jobs(self, *, states: list[str] | None = None, queue: str = "",
                  labels: Mapping[str, str] | None = None, page_size: int = 0,
                  page_token: str = "") -> tuple[list[JobSummary], str]:
        try:
            state_values = [pb.JobState.Value(s.upper()) for s in states or []]
        except ValueError as exc:
            raise TrainyardError("INVALID_ARGUMENT", f"states: {exc}") from None
        resp = self._call(self._stub.ListJobs, pb.ListJobsRequest(
            states=state_values, queue=queue, labels=dict(labels or {}),
            page_size=page_size, page_token=page_token))
        return [JobSummary.from_pb(j) for j in resp.jobs], resp.next_page_token

    def cancel(self, job_id: str) -> str:
        resp = self._call(self._stub.CancelJob, pb.CancelJobRequest(job_id=job_id))
        return _state(resp.state)

    def watch(self, job_id: str) -> Iterator[Transition]:
        for event in self._stream(self._stub.WatchJob, pb.WatchJobRequest(job_id=job_id)):
            yield Transition.from_pb(event.transition)

    def logs(self, job_id: str, *, follow: bool = False, offset: int = 0) -> Iterator[bytes]:
        request = pb.StreamLogsRequest(job_id=job_id, follow=follow, offset=offset)
        for chunk in self._stream(self._stub.StreamLogs, request):
            yield chunk.data

    def register_dataset(self, name: str, path: str) -> Dataset:
        """The server copies and hashes the directory before it answers: a large one takes
        a while, so this call waits up to REGISTER_TIMEOUT rather than the usual timeout."""
        request = pb.RegisterDatasetRequest(name=name, path=os.path.abspath(path) if path else "")
        return Dataset.from_pb(self._call(self._stub.RegisterDataset, request,
                                          timeout=max(self.timeout, REGISTER_TIMEOUT)))

    def list_datasets(self, name: str = "") -> list[Dataset]:
        resp = self._call(self._stub.ListDatasets, pb.ListDatasetsRequest(name=name))
        return [Dataset.from_pb(d) for d in resp.datasets]

    def sweep(self, template: TrainSpec, *, grid: Mapping[str, list[str]] | None = None,
              ranges: Mapping[str, tuple[float, float, bool]] | None = None,
              choices: Mapping[str, list[str]] | None = None, trials: int = 0, seed: int = 0,
              max_parallel: int = 0) -> tuple[str, list[str]]:
        """A grid (`grid`) or, with `trials`, a random search over `ranges` (low, high, log)
        and `choices`. Returns the sweep id and its jobs' ids."""
        request = pb.SweepRequest(template=template.to_pb(), trials=trials, seed=seed,
                                  max_parallel=max_parallel,
                                  search="random" if trials else "grid")
        for name, values in {**(grid or {}), **(choices or {})}.items():
            request.parameters.add(name=name, values=list(values))
        for name, (low, high, log) in (ranges or {}).items():
            request.parameters.add(name=name, min=low, max=high, log=log)
        reply = self._call(self._stub.SubmitSweep, request)
        return reply.sweep_id, list(reply.job_ids)

    def queues(self) -> dict[str, Any]:
        """The policy in force with each queue's waiting and running jobs, each pool's use and
        each team's use against its quota."""
        return _as_dict(self._call(self._stub.GetQueues, pb.GetQueuesRequest()))

    def whoami(self) -> dict[str, Any]:
        return _as_dict(self._call(self._stub.WhoAmI, pb.WhoAmIRequest()))

    # --- runs, models and lineage (plain data, as `--output json` prints it) ---------------

    def list_runs(self, *, job_id: str = "", dataset: str = "", algorithm: str = "",
                  image: str = "", labels: Mapping[str, str] | None = None,
                  states: list[str] | None = None,
                  metrics: list[tuple[str, str, float]] | None = None, sort: str = "",
                  descending: bool = False, page_size: int = 0,
                  page_token: str = "") -> tuple[list[dict[str, Any]], str]:
        """Runs matching every filter given: `metrics` as (key, op, value) thresholds on
        each run's last value, e.g. ("accuracy", ">=", 0.9); sorted by `sort`'s last value
        (runs without it last), newest first otherwise."""
        request = pb.ListRunsRequest(
            job_id=job_id, dataset=dataset, algorithm=algorithm, image=image,
            labels=dict(labels or {}), states=_states(states),
            metrics=[pb.MetricThreshold(key=k, op=op, value=v) for k, op, v in metrics or []],
            sort_metric=sort, descending=descending, page_size=page_size,
            page_token=page_token)
        resp = self._call(self._stub.ListRuns, request)
        return [_plain(r) for r in resp.runs], resp.next_page_token

    def get_run(self, run_id: str) -> dict[str, Any]:
        """One run ("JOB-ATTEMPT", or a job id for its latest) with its transitions and
        every metric point."""
        return _plain(self._call(self._stub.GetRun, pb.GetRunRequest(run_id=run_id)))

    def compare_runs(self, run_ids: list[str], *, series: bool = False) -> dict[str, Any]:
        return _plain(self._call(self._stub.CompareRuns, pb.CompareRunsRequest(
            run_ids=run_ids, include_series=series)))

    def reproduce_run(self, run_id: str, *, client_request_id: str = "") -> dict[str, Any]:
        """{"job_id", "existing", "spec" (pinned), "reproduces"}."""
        return _plain(self._call(self._stub.ReproduceRun, pb.ReproduceRunRequest(
            run_id=run_id, client_request_id=client_request_id)))

    def list_models(self) -> list[dict[str, Any]]:
        return [_plain(m) for m in self._call(self._stub.ListModels,
                                              pb.ListModelsRequest()).models]

    def get_model(self, name: str) -> dict[str, Any]:
        return _plain(self._call(self._stub.GetModel, pb.GetModelRequest(name=name)))

    def set_model_alias(self, name: str, alias: str, version: int) -> dict[str, Any]:
        return _plain(self._call(self._stub.SetModelAlias, pb.SetModelAliasRequest(
            name=name, alias=alias, version=version)))

    def model_lineage(self, model: str) -> dict[str, Any]:
        """NAME, NAME:VERSION or NAME@ALIAS back to its run, dataset version and code."""
        return _plain(self._call(self._stub.GetModelLineage,
                                 pb.GetModelLineageRequest(model=model_ref(model))))

    def dataset_lineage(self, name: str, version: str) -> dict[str, Any]:
        return _plain(self._call(self._stub.GetDatasetLineage,
                                 pb.GetDatasetLineageRequest(name=name, version=version)))

    def delete_dataset(self, name: str, version: str) -> dict[str, Any]:
        return _plain(self._call(self._stub.DeleteDataset, pb.DeleteDatasetRequest(
            name=name, version=version)).dataset)

    def download_model(self, model: str, dest: str | Path) -> dict[str, Any]:
        """Stream a model version's files into `dest` (new, or an empty directory). Every
        file's sha256 and the version's content hash are checked first; on any mismatch
        TrainyardError("DATA_LOSS") is raised and nothing is left in `dest`."""
        from trainyard.downloads import DownloadError, Receiver

        try:
            receiver = Receiver(Path(dest))
        except DownloadError as exc:
            raise TrainyardError("INVALID_ARGUMENT", str(exc)) from None
        try:
            request = pb.DownloadModelRequest(model=model_ref(model))
            for chunk in self._stream(self._stub.DownloadModel, request):
                if chunk.HasField("model"):
                    if receiver.model is not None:
                        raise DownloadError("the server named the model version twice")
                    receiver.start(_plain(chunk.model))
                receiver.chunk(chunk.path, chunk.size, chunk.sha256, chunk.offset, chunk.data)
            files = receiver.finish()
        except DownloadError as exc:
            receiver.abort()
            raise TrainyardError("DATA_LOSS", str(exc)) from None
        except BaseException:
            receiver.abort()
            raise
        assert receiver.model is not None
        return {"model": receiver.model, "path": str(Path(dest)), "files": files}

    # --- administration (an admin's token) -------------------------------------------------

    def create_user(self, name: str, *, admin: bool = False) -> dict[str, Any]:
        return _as_dict(self._call(self._admin.CreateUser,
                                   pb.CreateUserRequest(name=name, admin=admin)))

    def list_users(self) -> list[dict[str, Any]]:
        return [_as_dict(u) for u in self._call(self._admin.ListUsers,
                                                pb.ListUsersRequest()).users]

    def create_team(self, name: str) -> dict[str, Any]:
        return _as_dict(self._call(self._admin.CreateTeam, pb.CreateTeamRequest(name=name)))

    def list_teams(self) -> list[dict[str, Any]]:
        return [_as_dict(t) for t in self._call(self._admin.ListTeams,
                                                pb.ListTeamsRequest()).teams]

    def add_team_member(self, team: str, user: str) -> dict[str, Any]:
        return _as_dict(self._call(self._admin.AddTeamMember,
                                   pb.AddTeamMemberRequest(team=team, user=user)))

    def create_token(self, user: str, *, expires_in_seconds: int = 0,
                     read_only: bool = False) -> dict[str, Any]:
        """{"info": {...}, "token": "ty_..."}: the token is shown this once."""
        return _as_dict(self._call(self._admin.CreateToken, pb.CreateTokenRequest(
            user=user, expires_in_seconds=expires_in_seconds, read_only=read_only)))

    def list_tokens(self, user: str = "") -> list[dict[str, Any]]:
        return [_as_dict(t) for t in self._call(self._admin.ListTokens,
                                                pb.ListTokensRequest(user=user)).tokens]

    def revoke_token(self, token_id: str) -> dict[str, Any]:
        return _as_dict(self._call(self._admin.RevokeToken, pb.RevokeTokenRequest(id=token_id)))

    def set_queue_access(self, queue: str, *, users: list[str] | None = None,
                         teams: list[str] | None = None) -> dict[str, Any]:
        return _as_dict(self._call(self._admin.SetQueueAccess, pb.QueueAccess(
            queue=queue, users=users or [], teams=teams or [])))

    def list_queue_access(self) -> list[dict[str, Any]]:
        return [_as_dict(q) for q in self._call(self._admin.ListQueueAccess,
                                                pb.ListQueueAccessRequest()).queues]

    def list_audit(self, limit: int = 0) -> list[dict[str, Any]]:
        return [_as_dict(e) for e in self._call(self._admin.ListAudit,
                                                pb.ListAuditRequest(limit=limit)).events]

    def health(self) -> str:
        stub = health_pb2_grpc.HealthStub(self._channel)
        resp = self._call(stub.Check, health_pb2.HealthCheckRequest(service=""))
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status))

    def wait(self, job_id: str) -> JobStatus:
        """Block until the job is final (following WatchJob), then return its status."""
        for _ in self.watch(job_id):
            pass
        return self.status(job_id)


def model_ref(text: str) -> pb.ModelRef:
    """NAME, NAME:VERSION or NAME@ALIAS; the server checks the parts."""
    name, at, alias = text.partition("@")
    if at:
        if not alias:
            raise TrainyardError("INVALID_ARGUMENT", "model: name the alias after '@' "
                                 "(NAME@ALIAS)")
        return pb.ModelRef(name=name, alias=alias)
    name, colon, version = text.partition(":")
    if colon:
        if not version.isdigit() or not 0 < int(version) < 2**31:
            raise TrainyardError("INVALID_ARGUMENT", f"model: {version[:20]!r} is not a "
                                 "version number (NAME:VERSION)")
        return pb.ModelRef(name=name, version=int(version))
    return pb.ModelRef(name=name)


def _states(states: list[str] | None) -> list[Any]:
    try:
        return [pb.JobState.Value(s.upper()) for s in states or []]
    except ValueError as exc:
        raise TrainyardError("INVALID_ARGUMENT", f"states: {exc}") from None


def _translate(exc: grpc.RpcError) -> TrainyardError:
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    name = code.name if code is not None else "UNKNOWN"
    if code is grpc.StatusCode.UNAVAILABLE:
        details = f"cannot reach the Trainyard server ({details})"
    return TrainyardError(name, details or name)
