"""The Slurm executor: one module per concern (commands, the batch script, the environment,
the controller's answer, the reconcile, capacity), assembled in `executor`."""

from trainyard.executors.slurm.executor import SlurmConfig, SlurmExecutor
from trainyard.executors.slurm.script import ShippedRuntime, runtime_runner

__all__ = ["ShippedRuntime", "SlurmConfig", "SlurmExecutor", "runtime_runner"]
