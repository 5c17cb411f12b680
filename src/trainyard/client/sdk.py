"""The Python SDK's client. The CLI is built on it; it speaks only the gRPC protocol."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from grpc_health.v1 import health_pb2, health_pb2_grpc

from trainyard.client import credentials
from trainyard.client.errors import TrainyardError, translate
from trainyard.client.failover import Channels, FailoverStub, split_addresses
from trainyard.client.history import History, read_history
from trainyard.client.messages import (
    Dataset,
    JobStatus,
    JobSummary,
    Submitted,
    Transition,
    as_dict,
    plain,
    state_name,
)
from trainyard.client.spec import Resources, TrainSpec, model_ref, states_to_pb
from trainyard.client.values import build
from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc

DEFAULT_SERVER = "127.0.0.1:50051"
SERVER_ENV = "TRAINYARD_SERVER"
REGISTER_TIMEOUT = 3600.0


class Client:
    """Talks to a Trainyard server. `server` defaults to $TRAINYARD_SERVER, then
    127.0.0.1:50051. Several servers over one database, comma-separated ("a:50051,b:50051"):
    a call that finds one UNAVAILABLE moves to the next, and the one that answered serves
    the calls after it."""

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
            tls = grpc.ssl_channel_credentials(root_certificates=root)
            self._channels = Channels(self._addresses(),
                                      lambda address: grpc.secure_channel(address, tls))
        else:
            self._channels = Channels(self._addresses(), grpc.insecure_channel)
        self._stub = FailoverStub(self._channels, pb_grpc.TrainingServiceStub)
        self._admin = FailoverStub(self._channels, pb_grpc.AdminServiceStub)

    def _addresses(self) -> list[str]:
        addresses = split_addresses(self.server)
        if not addresses:
            raise TrainyardError("INVALID_ARGUMENT", f"server: no address in {self.server!r}; "
                                 "give HOST:PORT, or several separated by commas")
        return addresses

    def close(self) -> None:
        self._channels.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: Any, request: Any, timeout: float | None = None) -> Any:
        try:
            return method(request, timeout=timeout or self.timeout, metadata=self._metadata)
        except grpc.RpcError as exc:
            raise translate(exc) from None

    def _stream(self, method: Any, request: Any) -> Iterator[Any]:
        try:
            yield from method(request, metadata=self._metadata)
        except grpc.RpcError as exc:
            raise translate(exc) from None

    # --- operations ----------------------------------------------------------------------

    def train(self, spec: TrainSpec) -> Submitted:
        """Submit a job. Without a client_request_id of the caller's, this call makes one,
        so that its own retry on another server makes one job."""
        request = spec.to_pb()
        if not request.client_request_id:
            request.client_request_id = f"sdk-{uuid.uuid4().hex}"
        resp = self._call(self._stub.Train, request)
        return Submitted(resp.job_id, resp.existing)

    def status(self, job_id: str) -> JobStatus:
        return JobStatus.from_pb(
            self._call(self._stub.GetTrainingStatus,
                       build(pb.GetTrainingStatusRequest, job_id=job_id))
        )

    def list_jobs(self, *, states: list[str] | None = None, queue: str = "",
                  labels: Mapping[str, str] | None = None, page_size: int = 0,
                  page_token: str = "") -> tuple[list[JobSummary], str]:
        try:
            state_values = [pb.JobState.Value(s.upper()) for s in states or []]
        except ValueError as exc:
            raise TrainyardError("INVALID_ARGUMENT", f"states: {exc}") from None
        resp = self._call(self._stub.ListJobs, build(pb.ListJobsRequest,
            states=state_values, queue=queue, labels=dict(labels or {}),
            page_size=page_size, page_token=page_token))
        return [JobSummary.from_pb(j) for j in resp.jobs], resp.next_page_token

    def cancel(self, job_id: str) -> str:
        resp = self._call(self._stub.CancelJob, build(pb.CancelJobRequest, job_id=job_id))
        return state_name(resp.state)

    def watch(self, job_id: str) -> Iterator[Transition]:
        for event in self._stream(self._stub.WatchJob, build(pb.WatchJobRequest, job_id=job_id)):
            yield Transition.from_pb(event.transition)

    def logs(self, job_id: str, *, follow: bool = False, offset: int = 0) -> Iterator[bytes]:
        request = build(pb.StreamLogsRequest, job_id=job_id, follow=follow, offset=offset)
        for chunk in self._stream(self._stub.StreamLogs, request):
            yield chunk.data

    def register_dataset(self, name: str, path: str) -> Dataset:
        """The server copies and hashes the directory before it answers: a large one takes
        a while, so this call waits up to REGISTER_TIMEOUT rather than the usual timeout."""
        request = build(pb.RegisterDatasetRequest, name=name,
                        path=os.path.abspath(path) if path else "")
        return Dataset.from_pb(self._call(self._stub.RegisterDataset, request,
                                          timeout=max(self.timeout, REGISTER_TIMEOUT)))

    def list_datasets(self, name: str = "") -> list[Dataset]:
        resp = self._call(self._stub.ListDatasets, build(pb.ListDatasetsRequest, name=name))
        return [Dataset.from_pb(d) for d in resp.datasets]

    def sweep(self, template: TrainSpec, *, grid: Mapping[str, list[str]] | None = None,
              ranges: Mapping[str, tuple[float, float, bool]] | None = None,
              choices: Mapping[str, list[str]] | None = None, trials: int = 0, seed: int = 0,
              max_parallel: int = 0, objective: str = "", early_stop: str = "",
              min_steps: int = 0, reduction: int = 0, max_trials: int = 0,
              max_gpu_hours: float = 0.0, max_cpu_hours: float = 0.0
              ) -> tuple[str, list[str]]:
        """A grid (`grid`) or, with `trials`, a random search over `ranges` (low, high, log)
        and `choices`. Returns the sweep id and its jobs' ids. `objective` ("METRIC:max" or
        "METRIC:min") with `early_stop` ("median" or "asha"; `min_steps`, `reduction`) stops
        losing trials; `max_trials`, `max_gpu_hours` and `max_cpu_hours` budget the whole
        sweep (0: none)."""
        parameters: list[dict[str, Any]] = [
            {"name": name, "values": list(values)}
            for name, values in {**(grid or {}), **(choices or {})}.items()]
        parameters += [{"name": name, "min": low, "max": high, "log": log}
                       for name, (low, high, log) in (ranges or {}).items()]
        request = build(pb.SweepRequest, template=template.to_pb(), trials=trials, seed=seed,
                        max_parallel=max_parallel, search="random" if trials else "grid",
                        parameters=parameters, objective=objective, early_stop=early_stop,
                        min_steps=min_steps, reduction=reduction, max_trials=max_trials,
                        max_gpu_hours=max_gpu_hours, max_cpu_hours=max_cpu_hours)
        reply = self._call(self._stub.SubmitSweep, request)
        return reply.sweep_id, list(reply.job_ids)

    # --- sweeps as one unit (plain data, as `--output json` prints it) ----------------------

    def list_sweeps(self, *, page_size: int = 0,
                    page_token: str = "") -> tuple[list[dict[str, Any]], str]:
        resp = self._call(self._stub.ListSweeps, build(pb.SweepListRequest,
                                                       page_size=page_size,
                                                       page_token=page_token))
        return [plain(s) for s in resp.sweeps], resp.next_page_token

    def get_sweep(self, sweep_id: str) -> dict[str, Any]:
        """Its state, each trial's state, hyperparameters and latest metrics, the best trial
        so far on its objective, how many were stopped early, what it used."""
        return plain(self._call(self._stub.GetSweep, build(pb.SweepGetRequest,
                                                           sweep_id=sweep_id)))

    def cancel_sweep(self, sweep_id: str) -> dict[str, Any]:
        return plain(self._call(self._stub.CancelSweep, build(pb.SweepActionRequest,
                                                              sweep_id=sweep_id)))

    def pause_sweep(self, sweep_id: str) -> dict[str, Any]:
        return plain(self._call(self._stub.PauseSweep, build(pb.SweepActionRequest,
                                                             sweep_id=sweep_id)))

    def resume_sweep(self, sweep_id: str) -> dict[str, Any]:
        return plain(self._call(self._stub.ResumeSweep, build(pb.SweepActionRequest,
                                                              sweep_id=sweep_id)))

    def queues(self) -> dict[str, Any]:
        """The policy in force with each queue's waiting and running jobs, each pool's use and
        each team's use against its quota."""
        return as_dict(self._call(self._stub.GetQueues, build(pb.GetQueuesRequest)))

    def whoami(self) -> dict[str, Any]:
        return as_dict(self._call(self._stub.WhoAmI, build(pb.WhoAmIRequest)))

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
        request = build(pb.ListRunsRequest,
            job_id=job_id, dataset=dataset, algorithm=algorithm, image=image,
            labels=dict(labels or {}), states=states_to_pb(states),
            metrics=[{"key": k, "op": op, "value": v} for k, op, v in metrics or []],
            sort_metric=sort, descending=descending, page_size=page_size,
            page_token=page_token)
        resp = self._call(self._stub.ListRuns, request)
        return [plain(r) for r in resp.runs], resp.next_page_token

    def get_run(self, run_id: str) -> dict[str, Any]:
        """One run ("JOB-ATTEMPT", or a job id for its latest) with its transitions and
        every metric point."""
        return plain(self._call(self._stub.GetRun, build(pb.GetRunRequest, run_id=run_id)))

    def compare_runs(self, run_ids: list[str], *, series: bool = False) -> dict[str, Any]:
        return plain(self._call(self._stub.CompareRuns, build(pb.CompareRunsRequest,
            run_ids=run_ids, include_series=series)))

    def reproduce_run(self, run_id: str, *, client_request_id: str = "") -> dict[str, Any]:
        """{"job_id", "existing", "spec" (pinned), "reproduces"}."""
        return plain(self._call(self._stub.ReproduceRun, build(pb.ReproduceRunRequest,
            run_id=run_id, client_request_id=client_request_id)))

    def list_models(self) -> list[dict[str, Any]]:
        return [plain(m) for m in self._call(self._stub.ListModels,
                                              build(pb.ListModelsRequest)).models]

    def get_model(self, name: str) -> dict[str, Any]:
        return plain(self._call(self._stub.GetModel, build(pb.GetModelRequest, name=name)))

    def set_model_alias(self, name: str, alias: str, version: int) -> dict[str, Any]:
        return plain(self._call(self._stub.SetModelAlias, build(pb.SetModelAliasRequest,
            name=name, alias=alias, version=version)))

    def model_lineage(self, model: str) -> dict[str, Any]:
        """NAME, NAME:VERSION or NAME@ALIAS back to its run, dataset version and code."""
        return plain(self._call(self._stub.GetModelLineage,
                                 build(pb.GetModelLineageRequest, model=model_ref(model))))

    def dataset_lineage(self, name: str, version: str) -> dict[str, Any]:
        return plain(self._call(self._stub.GetDatasetLineage,
                                 build(pb.GetDatasetLineageRequest, name=name, version=version)))

    def delete_dataset(self, name: str, version: str) -> dict[str, Any]:
        return plain(self._call(self._stub.DeleteDataset, build(pb.DeleteDatasetRequest,
            name=name, version=version)).dataset)

    # --- algorithms (plain data, as `--output json` prints it) ----------------------------

    def register_algorithm(self, name: str, *, image: str = "",
                           code_dir: str | Path | None = None, command: str = "",
                           hyperparameters: Mapping[str, str] | None = None,
                           resources: Resources | None = None, description: str = "",
                           git_commit: str = "") -> dict[str, Any]:
        """The next version of algorithm `name`: an image of the server's container engine
        (pinned by its id now), or the files of `code_dir`, uploaded (with the image they
        run in, if any, and the command that runs them in the directory). Default
        hyperparameters and resources (each one given) apply under a job's own. If the
        latest version is the same in every field it is returned, with created False."""
        from trainyard.client.uploads import UploadError, scan

        try:
            tree = scan(Path(code_dir)) if code_dir is not None else None
        except UploadError as exc:
            raise TrainyardError("INVALID_ARGUMENT", f"code: {exc}") from None
        res = resources or Resources(cpus=0, memory_mb=0)
        spec = build(pb.AlgorithmSpec, name=name, image=image, code=tree is not None,
                     command=command, hyperparameters=dict(hyperparameters or {}),
                     resources={"cpus": res.cpus, "memory_mb": res.mib(), "gpus": res.gpus},
                     description=description, git_commit=git_commit)

        def upload() -> Iterator[pb.AlgorithmUpload]:
            yield pb.AlgorithmUpload(spec=spec)
            for c in tree.chunks() if tree is not None else ():
                yield pb.AlgorithmUpload(chunk=pb.CodeChunk(
                    path=c.path, offset=c.offset, data=c.data, size=c.size, sha256=c.sha256))

        try:
            # A callable: each server tried gets the upload from its start.
            return plain(self._call(self._stub.RegisterAlgorithm, upload,
                                    timeout=max(self.timeout, REGISTER_TIMEOUT)))
        except UploadError as exc:
            raise TrainyardError("INVALID_ARGUMENT", f"code: {exc}") from None

    def list_algorithms(self) -> list[dict[str, Any]]:
        return [plain(a) for a in self._call(self._stub.ListAlgorithms,
                                              build(pb.ListAlgorithmsRequest)).algorithms]

    def get_algorithm(self, name: str) -> dict[str, Any]:
        """Its versions, oldest first, each with its runs you may see and the models they
        made, and its aliases with their history."""
        return plain(self._call(self._stub.GetAlgorithm, build(pb.GetAlgorithmRequest,
                                                               name=name)))

    def set_algorithm_alias(self, name: str, alias: str, version: int) -> dict[str, Any]:
        return plain(self._call(self._stub.SetAlgorithmAlias, build(
            pb.SetAlgorithmAliasRequest, name=name, alias=alias, version=version)))

    def delete_algorithm(self, name: str, version: int) -> dict[str, Any]:
        """Refused (FAILED_PRECONDITION, naming them) while jobs are pinned to it."""
        return plain(self._call(self._stub.DeleteAlgorithm, build(
            pb.DeleteAlgorithmRequest, name=name, version=version)).algorithm)

    def download_model(self, model: str, dest: str | Path) -> dict[str, Any]:
        """Stream a model version's files into `dest` (new, or an empty directory). Every
        file's sha256 and the version's content hash are checked first; on any mismatch
        TrainyardError("DATA_LOSS") is raised and nothing is left in `dest`."""
        from trainyard.client.downloads import DownloadError, Receiver

        try:
            receiver = Receiver(Path(dest))
        except DownloadError as exc:
            raise TrainyardError("INVALID_ARGUMENT", str(exc)) from None
        try:
            request = build(pb.DownloadModelRequest, model=model_ref(model))
            for chunk in self._stream(self._stub.DownloadModel, request):
                if chunk.HasField("model"):
                    if receiver.model is not None:
                        raise DownloadError("the server named the model version twice")
                    receiver.start(plain(chunk.model))
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
        return as_dict(self._call(self._admin.CreateUser,
                                   build(pb.CreateUserRequest, name=name, admin=admin)))

    def list_users(self) -> list[dict[str, Any]]:
        return [as_dict(u) for u in self._call(self._admin.ListUsers,
                                                build(pb.ListUsersRequest)).users]

    def create_team(self, name: str) -> dict[str, Any]:
        return as_dict(self._call(self._admin.CreateTeam, build(pb.CreateTeamRequest, name=name)))

    def list_teams(self) -> list[dict[str, Any]]:
        return [as_dict(t) for t in self._call(self._admin.ListTeams,
                                                build(pb.ListTeamsRequest)).teams]

    def add_team_member(self, team: str, user: str) -> dict[str, Any]:
        return as_dict(self._call(self._admin.AddTeamMember,
                                   build(pb.AddTeamMemberRequest, team=team, user=user)))

    def create_token(self, user: str, *, expires_in_seconds: int = 0,
                     read_only: bool = False) -> dict[str, Any]:
        """{"info": {...}, "token": "ty_..."}: the token is shown this once."""
        return as_dict(self._call(self._admin.CreateToken, build(pb.CreateTokenRequest,
            user=user, expires_in_seconds=expires_in_seconds, read_only=read_only)))

    def list_tokens(self, user: str = "") -> list[dict[str, Any]]:
        return [as_dict(t) for t in self._call(self._admin.ListTokens,
                                                build(pb.ListTokensRequest, user=user)).tokens]

    def revoke_token(self, token_id: str) -> dict[str, Any]:
        return as_dict(self._call(self._admin.RevokeToken,
                                  build(pb.RevokeTokenRequest, id=token_id)))

    def set_queue_access(self, queue: str, *, users: list[str] | None = None,
                         teams: list[str] | None = None) -> dict[str, Any]:
        return as_dict(self._call(self._admin.SetQueueAccess, build(pb.QueueAccess,
            queue=queue, users=users or [], teams=teams or [])))

    def list_queue_access(self) -> list[dict[str, Any]]:
        return [as_dict(q) for q in self._call(self._admin.ListQueueAccess,
                                                build(pb.ListQueueAccessRequest)).queues]

    def list_audit(self, limit: int = 0) -> list[dict[str, Any]]:
        return [as_dict(e) for e in self._call(self._admin.ListAudit,
                                                build(pb.ListAuditRequest, limit=limit)).events]

    def export_history(self, since: float | None = None, *, page_size: int = 0) -> History:
        """The finished jobs that ran (submitted at or after `since`, seconds since the
        epoch; None: all), read a page at a time as `History.jobs` is iterated, and the
        policy in force. For admins."""
        since_ts = None
        if since is not None:
            since_ts = Timestamp()
            since_ts.FromNanoseconds(int(since * 1e9))

        def page(token: str) -> pb.HistoryPage:
            request = pb.ExportHistoryRequest(page_size=page_size, page_token=token)
            if since_ts is not None:
                request.since.CopyFrom(since_ts)
            reply: pb.HistoryPage = self._call(self._admin.ExportHistory, request)
            return reply

        return read_history(page)

    def health(self) -> str:
        stub = FailoverStub(self._channels, health_pb2_grpc.HealthStub)
        resp = self._call(stub.Check, health_pb2.HealthCheckRequest(service=""))
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status))

    def wait(self, job_id: str) -> JobStatus:
        """Block until the job is final (following WatchJob), then return its status."""
        for _ in self.watch(job_id):
            pass
        return self.status(job_id)


