"""Every route of the JSON API, and the RPC it stands for. A route is that RPC transcoded:
the request message is built from the path, the query and the body; authorization is the
RPC's entry in api/permissions.py; the reply is the RPC's message as JSON. One table, so
no route can need less than its RPC."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from trainyard.api.permissions import ADMIN, TRAINING

PREFIX = "/api/v1"


class Reply(Enum):
    JSON = "json"  # the response message
    EVENTS = "events"  # a stream of messages as server-sent events
    TAR = "tar"  # a stream of file chunks as one tar archive


@dataclass(frozen=True)
class Route:
    method: str  # GET, POST, PUT, DELETE
    path: str  # below PREFIX; each {field} fills that field of the request
    rpc: str  # the RPC's full method name, as api/permissions.py keys it
    summary: str
    tag: str
    reply: Reply = Reply.JSON
    # The request field the path and query fill, when not the request itself
    # ("model": DownloadModelRequest.model).
    within: str = ""

    @property
    def name(self) -> str:
        return self.rpc.rsplit("/", 1)[-1]

    @property
    def takes_body(self) -> bool:
        return self.method in ("POST", "PUT")

    @property
    def url(self) -> str:
        return PREFIX + self.path


def _t(method: str, path: str, rpc: str, summary: str, tag: str,
       reply: Reply = Reply.JSON, within: str = "") -> Route:
    return Route(method, path, TRAINING + rpc, summary, tag, reply, within)


def _a(method: str, path: str, rpc: str, summary: str) -> Route:
    return Route(method, path, ADMIN + rpc, summary, "admin")


# The RPCs of the users' services with no route: a client-streaming upload (a code
# directory's files after the spec) is spoken over gRPC, by the SDK and the CLI.
GRPC_ONLY: frozenset[str] = frozenset({TRAINING + "RegisterAlgorithm"})

# Fixed paths before the ones with a variable in the same place ("/runs/compare" before
# "/runs/{run_id}"): the first route that matches serves.
ROUTES: tuple[Route, ...] = (
    _t("POST", "/jobs", "Train", "Submit a training job (a client_request_id makes a "
       "retried submit return the same job)", "jobs"),
    _t("GET", "/jobs", "ListJobs", "List jobs, newest first, with the CLI's filters",
       "jobs"),
    _t("GET", "/jobs/{job_id}", "GetTrainingStatus", "A job's status: its state, every "
       "transition, its queue position and why it waits", "jobs"),
    _t("POST", "/jobs/{job_id}/cancel", "CancelJob", "Cancel a waiting or running job",
       "jobs"),
    _t("GET", "/jobs/{job_id}/events", "WatchJob", "Every state change of a job, as "
       "server-sent events, until it ends", "jobs", Reply.EVENTS),
    _t("GET", "/jobs/{job_id}/logs", "StreamLogs", "A job's log as server-sent events "
       "(follow=true: until it ends)", "jobs", Reply.EVENTS),
    _t("POST", "/sweeps", "SubmitSweep", "Submit a hyperparameter sweep", "sweeps"),
    _t("GET", "/sweeps", "ListSweeps", "List sweeps, newest first: state, trials by state, "
       "stopped early, what they used", "sweeps"),
    _t("GET", "/sweeps/{sweep_id}", "GetSweep", "A sweep with every trial's state, "
       "hyperparameters and latest metrics, and the best trial so far", "sweeps"),
    _t("POST", "/sweeps/{sweep_id}/cancel", "CancelSweep", "Cancel every trial of a sweep",
       "sweeps"),
    _t("POST", "/sweeps/{sweep_id}/pause", "PauseSweep", "Launch no new trial; the running "
       "ones go on", "sweeps"),
    _t("POST", "/sweeps/{sweep_id}/resume", "ResumeSweep", "Launch a paused sweep's trials "
       "again", "sweeps"),
    _t("GET", "/queues", "GetQueues", "The queues, pools and teams: what waits, runs and "
       "is held", "queues"),
    _t("GET", "/whoami", "WhoAmI", "The caller's identity", "queues"),
    _t("GET", "/runs", "ListRuns", "List runs; filter by dataset, algorithm, image, "
       "labels, state and metric thresholds (metrics=accuracy>=0.9); sort by a metric",
       "runs"),
    _t("GET", "/runs/compare", "CompareRuns", "Compare runs: what differs, and their "
       "curves with include_series=true", "runs"),
    _t("GET", "/runs/{run_id}", "GetRun", "One run", "runs"),
    _t("POST", "/runs/{run_id}/reproduce", "ReproduceRun", "Submit a run's pinned spec "
       "again", "runs"),
    _t("GET", "/models", "ListModels", "List models", "models"),
    _t("GET", "/models/{name}", "GetModel", "A model's versions and aliases with their "
       "history", "models"),
    _t("PUT", "/models/{name}/aliases/{alias}", "SetModelAlias", "Point an alias at a "
       "version", "models"),
    _t("GET", "/models/{name}/lineage", "GetModelLineage", "Where a model version came "
       "from: its run, dataset version, code and hyperparameters (version=N or alias=A; "
       "the latest without)", "models", within="model"),
    _t("GET", "/models/{name}/download", "DownloadModel", "A model version's files as a "
       "tar archive (version=N or alias=A; the latest without)", "models", Reply.TAR,
       within="model"),
    _t("GET", "/algorithms", "ListAlgorithms", "List registered algorithms: versions, the "
       "latest, aliases", "algorithms"),
    _t("GET", "/algorithms/{name}", "GetAlgorithm", "An algorithm's versions, each with its "
       "runs and the models they made, its aliases and their history", "algorithms"),
    _t("PUT", "/algorithms/{name}/aliases/{alias}", "SetAlgorithmAlias", "Point an alias "
       "at a version", "algorithms"),
    _t("DELETE", "/algorithms/{name}/versions/{version}", "DeleteAlgorithm", "Delete a "
       "version no job is pinned to", "algorithms"),
    _t("GET", "/datasets", "ListDatasets", "List dataset versions", "datasets"),
    _t("POST", "/datasets", "RegisterDataset", "Register a dataset version from a path on "
       "the server (admins)", "datasets"),
    _t("GET", "/datasets/{name}/versions/{version}/lineage", "GetDatasetLineage",
       "The runs and models a dataset version fed", "datasets"),
    _t("DELETE", "/datasets/{name}/versions/{version}", "DeleteDataset", "Delete a dataset "
       "version no run uses (admins)", "datasets"),
    _a("POST", "/admin/users", "CreateUser", "Create a user"),
    _a("GET", "/admin/users", "ListUsers", "List users"),
    _a("POST", "/admin/teams", "CreateTeam", "Create a team"),
    _a("GET", "/admin/teams", "ListTeams", "List teams"),
    _a("POST", "/admin/teams/{team}/members", "AddTeamMember", "Add a user to a team"),
    _a("POST", "/admin/tokens", "CreateToken", "Create a token for a user"),
    _a("GET", "/admin/tokens", "ListTokens", "List tokens"),
    _a("POST", "/admin/tokens/{id}/revoke", "RevokeToken", "Revoke a token"),
    _a("PUT", "/admin/queues/{queue}/access", "SetQueueAccess", "Set who may submit to "
       "a queue"),
    _a("GET", "/admin/queues/access", "ListQueueAccess", "Who may submit to each queue"),
    _a("GET", "/admin/audit", "ListAudit", "The audit log, newest first"),
    _a("GET", "/admin/history", "ExportHistory", "The finished jobs that ran, a page at a "
       "time, and the policy in force"),
)
