"""What every RPC needs of its caller: one table, checked by the interceptor before any
handler runs. It is the second line of defence: the use case an RPC calls requires the same
need itself (services/guard.py), and tests/api/test_permissions.py holds the two equal."""

from __future__ import annotations

from trainyard.auth.policy import Access

TRAINING = "/trainyard.v1.TrainingService/"
ADMIN = "/trainyard.v1.AdminService/"
RUNTIME = "/trainyard.v1.JobRuntime/"
SAMPLE = "/training.TrainingService/"

RPC_ACCESS: dict[str, Access] = {
    TRAINING + "Train": Access.WRITE,
    TRAINING + "GetTrainingStatus": Access.READ,
    TRAINING + "ListJobs": Access.READ,
    TRAINING + "CancelJob": Access.WRITE,
    TRAINING + "WatchJob": Access.READ,
    TRAINING + "StreamLogs": Access.READ,
    # A path on the server's own file system: only admins may have the server read one.
    TRAINING + "RegisterDataset": Access.ADMIN,
    TRAINING + "ListDatasets": Access.READ,
    TRAINING + "WhoAmI": Access.READ,
    TRAINING + "GetQueues": Access.READ,
    TRAINING + "SubmitSweep": Access.WRITE,
    TRAINING + "ListRuns": Access.READ,
    TRAINING + "GetRun": Access.READ,
    TRAINING + "CompareRuns": Access.READ,
    TRAINING + "ReproduceRun": Access.WRITE,
    TRAINING + "ListModels": Access.READ,
    TRAINING + "GetModel": Access.READ,
    TRAINING + "SetModelAlias": Access.WRITE,
    TRAINING + "DownloadModel": Access.READ,
    TRAINING + "GetModelLineage": Access.READ,
    TRAINING + "GetDatasetLineage": Access.READ,
    # Datasets are registered by admins, and deleted by them.
    TRAINING + "DeleteDataset": Access.ADMIN,
    # Sweeps as one unit; which sweeps, services/sweeps.py decides (as for jobs).
    TRAINING + "ListSweeps": Access.READ,
    TRAINING + "GetSweep": Access.READ,
    TRAINING + "CancelSweep": Access.WRITE,
    TRAINING + "PauseSweep": Access.WRITE,
    TRAINING + "ResumeSweep": Access.WRITE,
    # Algorithms are a shared catalogue, as models are: members register versions (their
    # code is uploaded, not read from the server's disk) and move aliases; deletion of an
    # unused version is also theirs. Which runs `GetAlgorithm` names, the job's visibility.
    TRAINING + "RegisterAlgorithm": Access.WRITE,
    TRAINING + "ListAlgorithms": Access.READ,
    TRAINING + "GetAlgorithm": Access.READ,
    TRAINING + "SetAlgorithmAlias": Access.WRITE,
    TRAINING + "DeleteAlgorithm": Access.WRITE,
    # The sample training service's contract (proto/trainyard/v1/sample.proto): the same
    # needs as trainyard.v1's Train and GetTrainingStatus.
    SAMPLE + "Train": Access.WRITE,
    SAMPLE + "GetTrainingStatus": Access.READ,
    ADMIN + "CreateUser": Access.ADMIN,
    ADMIN + "ListUsers": Access.ADMIN_READ,
    ADMIN + "CreateTeam": Access.ADMIN,
    ADMIN + "ListTeams": Access.ADMIN_READ,
    ADMIN + "AddTeamMember": Access.ADMIN,
    ADMIN + "CreateToken": Access.ADMIN,
    ADMIN + "ListTokens": Access.ADMIN_READ,
    ADMIN + "RevokeToken": Access.ADMIN,
    ADMIN + "SetQueueAccess": Access.ADMIN,
    ADMIN + "ListQueueAccess": Access.ADMIN_READ,
    ADMIN + "ListAudit": Access.ADMIN_READ,
    ADMIN + "ExportHistory": Access.ADMIN_READ,
    # One attempt's own data, with the token minted for it alone (auth/job_tokens.py); a
    # job token is refused everywhere else.
    RUNTIME + "GetAttempt": Access.JOB,
    RUNTIME + "PullDataset": Access.JOB,
    RUNTIME + "PullCheckpoint": Access.JOB,
    RUNTIME + "PushCheckpoint": Access.JOB,
    RUNTIME + "PushModel": Access.JOB,
    RUNTIME + "Push": Access.JOB,
    RUNTIME + "PullCode": Access.JOB,
}

# Open to anyone: load balancers probe health, and reflection describes only the API.
PUBLIC_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.v1alpha.ServerReflection/")


def access_for(method: str) -> Access | None:
    """The access a method needs; None for a method this server does not know (refused)."""
    if method.startswith(PUBLIC_PREFIXES):
        return Access.PUBLIC
    return RPC_ACCESS.get(method)
