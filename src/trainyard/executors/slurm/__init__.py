"""The Slurm executor: one module per concern (commands, the batch script, the environment,
the controller's answer, the reconcile, capacity), assembled in `executor`."""

from trainyard.executors.slurm.executor import SlurmConfig, SlurmExecutor

__all__ = ["SlurmConfig", "SlurmExecutor"]
