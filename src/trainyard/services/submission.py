"""Everything a job must pass before it is stored, for a submit, a sweep's trials and a
reproduced run alike: a sound spec, a queue that takes it from its caller, a pool that
could ever hold it, a dataset version that exists, and room under the policy's caps on
waiting jobs and submit rate (services.backpressure)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from trainyard.auth.policy import Identity
from trainyard.domain.algorithms import apply, conflicting_program
from trainyard.domain.errors import InvalidArgument, NotFound
from trainyard.domain.kinds import kind_for
from trainyard.domain.policy import check_submission, job_kind, with_queue_defaults
from trainyard.domain.pools import check_placement
from trainyard.domain.spec import JobSpec, SpecLimits, validate_spec
from trainyard.metadata.datasets import DatasetRegistry
from trainyard.services.backpressure import Backpressure
from trainyard.services.guard import Guard
from trainyard.services.policy import PolicyService
from trainyard.store.algorithms import AlgorithmStore


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
    algorithms: AlgorithmStore | None = None  # None: no job may name an algorithm

    def admit(self, identity: Identity, team: str, count: int = 1) -> None:
        """Hold a submit of `count` new jobs (a sweep's trials) to the caps of the policy's
        [limits]: ResourceExhausted past one."""
        if self.pressure is not None:
            self.pressure.admit(self.policy.effective().policy.limits, identity.user, team,
                                count)

    def counts_submits(self) -> bool:
        """Whether admit() counts submits now (the policy's [limits] set a cap)."""
        return self.pressure is not None and self.policy.effective().policy.limits.any

    def resolve(self, spec: JobSpec) -> JobSpec:
        """The spec with its algorithm's handle resolved, once, to the version it keeps
        (domain.algorithms.apply). A spec already pinned (a sweep's trial, a reproduced run)
        comes back as it is once its version is found to hold its image, command and code."""
        ref = spec.algorithm
        if ref is None:
            return spec
        if self.algorithms is None:
            raise InvalidArgument("algorithm", "this server keeps no registered algorithms")
        try:
            version = self.algorithms.resolve(ref, aliases=False)
        except NotFound as exc:
            known = [s.name for s in self.algorithms.list()][:10]
            hint = f"; registered: {', '.join(known)}" if known else \
                "; none is registered ('trainyard algorithms register')"
            raise InvalidArgument("algorithm", f"{exc}{hint}") from None
        if ref.version and not ref.alias and conflicting_program(spec) is not None:
            pinned = apply(replace(spec, image="", command="", code_hash=""), version)
            if (pinned.image, pinned.command, pinned.code_hash) == \
                    (spec.image, spec.command, spec.code_hash):
                return spec  # applied already: nothing more comes from the version
        return apply(spec, version)

    def accept(self, spec: JobSpec, identity: Identity) -> Accepted:
        """Check the job; return its team and kind. A refusal of the queue is audited."""
        spec = self.resolve(spec)
        validate_spec(spec, self.limits)
        view = self.policy.effective()
        kind = job_kind(view.policy, spec.queue, spec.image, bool(spec.code_hash)) \
            if view.from_file else \
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
