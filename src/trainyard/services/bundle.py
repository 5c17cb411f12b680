"""Every use case of one server, as the adapters (gRPC now, HTTP later) receive them."""

from __future__ import annotations

from dataclasses import dataclass

from trainyard.services.access import AccessService
from trainyard.services.algorithms import AlgorithmService
from trainyard.services.datasets import DatasetService
from trainyard.services.history import HistoryService
from trainyard.services.job_runtime import JobRuntimeService
from trainyard.services.jobs import JobService
from trainyard.services.models import ModelService
from trainyard.services.policy import PolicyService
from trainyard.services.runs import RunService
from trainyard.services.sample import SampleService
from trainyard.services.sweeps import SweepService


@dataclass(frozen=True)
class Services:
    jobs: JobService
    sweeps: SweepService
    runs: RunService
    models: ModelService
    datasets: DatasetService
    access: AccessService
    policy: PolicyService
    runtime: JobRuntimeService  # what remote attempts ask, with their job tokens
    history: HistoryService  # the finished jobs and the policy in force, for a replay
    algorithms: AlgorithmService  # registered versions of training code
    sample: SampleService  # the sample training service's contract over jobs
