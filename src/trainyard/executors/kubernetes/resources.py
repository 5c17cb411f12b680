"""The Kubeflow custom resources a Kubernetes pool may create: where each is served, and
what its replicas and container are called."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResourceKind:
    kind: str
    group: str
    version: str
    plural: str
    container: str  # the container the operator treats as the framework's ("" : TrainJob)
    installs: str  # what serves it, for a cluster that does not

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


PYTORCH_JOB = ResourceKind("PyTorchJob", "kubeflow.org", "v1", "pytorchjobs", "pytorch",
                           "the Kubeflow training operator")
TF_JOB = ResourceKind("TFJob", "kubeflow.org", "v1", "tfjobs", "tensorflow",
                      "the Kubeflow training operator")
TRAIN_JOB = ResourceKind("TrainJob", "trainer.kubeflow.org", "v1alpha1", "trainjobs", "",
                         "Kubeflow Trainer v2")
RESOURCES: dict[str, ResourceKind] = {r.kind: r for r in (PYTORCH_JOB, TF_JOB, TRAIN_JOB)}

# The labels every resource carries: who manages it, whose it is, which attempt of which job.
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "trainyard"
INSTANCE = "trainyard.io/instance"
JOB_ID = "trainyard.io/job-id"
ATTEMPT = "trainyard.io/attempt"
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
TOKEN_KEY = "token"  # the key of the attempt's Secret that holds its job token


def selector(instance: str) -> str:
    """The label selector of this service's resources."""
    return f"{MANAGED_BY}={MANAGER},{INSTANCE}={instance}"
