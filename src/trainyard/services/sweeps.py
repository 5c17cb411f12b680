"""Sweeps: a grid or random search over hyperparameters, submitted as one group of jobs
that shares a running limit."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from trainyard.auth.policy import Access, Identity
from trainyard.domain.errors import InvalidArgument
from trainyard.domain.spec import JobSpec
from trainyard.domain.sweep import Parameter, expand
from trainyard.services.guard import Guard
from trainyard.services.submission import SubmitCheck
from trainyard.store.jobs import JobStore, new_job_id


def _ignore() -> None:
    return None


@dataclass
class SweepService:
    jobs: JobStore
    check: SubmitCheck
    on_submit: Callable[[], None] = _ignore  # new work for the tracker

    @property
    def guard(self) -> Guard:
        return self.check.guard  # the one the submit check audits queue refusals through

    def submit(self, identity: Identity, template: JobSpec, parameters: list[Parameter], *,
               search: str, trials: int, seed: int,
               max_parallel: int) -> tuple[str, list[str]]:
        """Expand the search into jobs sharing one sweep id and its running limit. Every trial
        is checked before any is stored, so a bad one stores nothing."""
        self.guard.require(identity, Access.WRITE, "SubmitSweep")
        if max_parallel < 0:
            raise InvalidArgument("max_parallel", "must not be negative")
        specs = expand(template, parameters, search=search, trials=trials, seed=seed)
        accepted = [self.check.accept(spec, identity) for spec in specs]
        self.check.admit(identity, accepted[0].team if accepted else "", len(specs))
        sweep_id = f"sw{new_job_id()}"[:32]
        self.jobs.add_sweep(sweep_id, template.name, identity.user, max_parallel, time.time())
        job_ids = [self.jobs.create(each.spec, owner=identity.user, team=each.team,
                                    kind=each.kind, sweep_id=sweep_id)[0]
                   for each in accepted]
        self.on_submit()
        return sweep_id, job_ids
