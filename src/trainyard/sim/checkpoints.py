"""What a preemption costs in the replay: the work since the victim's last checkpoint.

Without a checkpoint interval the replay resumes a preempted job where it stopped (it loses
nothing), as it always has. With one, a job saves a checkpoint every `interval_s` seconds
of each run, so a preemption loses the run's time since its last one (its run time modulo
the interval); except in a queue whose `preempt_grace` is at least `checkpoint_s`, the time
a checkpoint takes: its jobs save one on notice (trainyard.runtime's preemption_requested()
and checkpoint_saved()) and lose nothing. The replay stops a victim at once either way: the
grace is not held time here, as a job that saved its checkpoint is stopped at once."""

from __future__ import annotations

from dataclasses import dataclass

from trainyard.domain import policy as cfg


@dataclass(frozen=True)
class Checkpointing:
    interval_s: float = 0.0  # 0: not modelled, a preempted job loses nothing
    on_notice: frozenset[str] = frozenset()  # queues whose jobs checkpoint on notice

    @property
    def modelled(self) -> bool:
        return self.interval_s > 0

    def lost(self, ran_s: float, queue: str) -> float:
        """The seconds of a run of `ran_s` that a preemption throws away."""
        if not self.modelled or queue in self.on_notice or ran_s <= 0:
            return 0.0
        return ran_s % self.interval_s


NO_CHECKPOINTS = Checkpointing()


def checkpointing(policy: cfg.Policy, interval_s: float,
                  checkpoint_s: float | None = None) -> Checkpointing:
    """The replay's checkpoints: every `interval_s` seconds of a run, and on notice in the
    queues whose declared grace is at least `checkpoint_s` (None: no job checkpoints on
    notice)."""
    if checkpoint_s is None:
        return Checkpointing(interval_s)
    return Checkpointing(interval_s, frozenset(
        name for name, queue in policy.queues.items()
        if queue.preempt_grace_s is not None and queue.preempt_grace_s >= checkpoint_s))
