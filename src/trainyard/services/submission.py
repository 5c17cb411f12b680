"""Everything a job must pass before it is stored, for a submit, a sweep's trials and a
reproduced run alike: a sound spec, a queue that takes it from its caller, a pool that
could ever hold it, a dataset version that exists, and room under the policy's caps on
waiting jobs and submit rate (services.backpressure)."""

from __future__ import annotations

from dataclasses import dataclass, field

from trainyard.auth.policy import Identity
from trainyard.domain.kinds import kind_for
from trainyard.domain.policy import check_submission, job_kind, with_queue_defaults
from trainyard.domain.pools import check_placement
from trainyard.domain.spec import JobSpec, SpecLimits, validate_spec
from trainyard.metadata.datasets import DatasetRegistry
from trainyard.services.backpressure import Backpressure
from trainyard.services.guard import Guard
from trainyard.services.policy import PolicyService


@dataclass(frozen=True)
class Accepted:
    """What a submit decides for good: the team whose quota the job draws on ("" for none)
    and its kind, the executor that will run it (domain.kinds)."""

    team: str
    kind: str
    spec: JobSpec  # with its queue's defaults (attempts, time limit) filled in


@dataclass(frozen=True)
class SubmitCheck:
    policy: PolicyService
    datasets: DatasetRegistry
    guard: Guard
    limits: SpecLimits = field(default_factory=SpecLimits)
    pressure: Backpressure | None = None  # the policy's [limits]; None: never capped

    def admit(self, identity: Identity, team: str, count: int = 1) -> None:
        """Hold a submit of `count` new jobs (a sweep's trials) to the caps of the policy's
        [limits]: ResourceExhausted past one."""
        if self.pressure is not None:
            self.pressure.admit(self.policy.effective().policy.limits, identity.user, team,
                                count)

    def accept(self, spec: JobSpec, identity: Identity) -> Accepted:
        """Check the job; return its team and kind. A refusal of the queue is audited."""
        validate_spec(spec, self.limits)
        view = self.policy.effective()
        kind = job_kind(view.policy, spec.queue, spec.image) if view.from_file else \
            kind_for(spec.image)
        user = identity.user
        team = ""
        if view.from_file:
            # The view's teams hold the store's members too: no second source of teams.
            team = self.guard.audited(identity, "Train", spec.queue, lambda: check_submission(
                view.policy, spec, user, kind))
        else:
            check_placement(spec, kind, self.policy.pools)
            self.guard.audited(identity, "Train", spec.queue,
                               lambda: view.policy.check_takes(spec.queue, user))
        if spec.dataset is not None:
            self.datasets.resolve(spec.dataset.name, spec.dataset.version)
        return Accepted(team, kind, with_queue_defaults(spec, view.policy.queues.get(spec.queue)))
