"""The Python SDK: `Client` talks to a Trainyard server over gRPC, `TrainSpec` describes a
job, and responses come back as plain records. Nothing of the server is imported: the SDK
speaks only the API protocol (trainyard.v1)."""

from trainyard.client.errors import TrainyardError
from trainyard.client.messages import (
    FINAL_STATES,
    Dataset,
    Dependency,
    JobStatus,
    JobSummary,
    PredictedStart,
    Submitted,
    Transition,
)
from trainyard.client.sdk import DEFAULT_SERVER, REGISTER_TIMEOUT, SERVER_ENV, Client
from trainyard.client.spec import After, Resources, TrainSpec, model_ref

__all__ = ["DEFAULT_SERVER", "FINAL_STATES", "REGISTER_TIMEOUT", "SERVER_ENV", "After",
           "Client", "Dataset", "Dependency", "JobStatus", "JobSummary", "PredictedStart",
           "Resources", "Submitted", "TrainSpec", "Transition", "TrainyardError", "model_ref"]
