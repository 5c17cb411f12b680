"""Backpressure the policy file declares (its `[limits]` table): how many jobs one user or
one team may have waiting, and how many submits each may make a minute. None: no cap."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SubmitLimits:
    max_waiting_per_user: int | None = None
    max_waiting_per_team: int | None = None
    submits_per_minute_per_user: int | None = None
    submits_per_minute_per_team: int | None = None

    @property
    def waiting_capped(self) -> bool:
        return self.max_waiting_per_user is not None or self.max_waiting_per_team is not None

    @property
    def any(self) -> bool:
        """Whether any cap is set: a submit is then counted."""
        return self.waiting_capped or self.submits_per_minute_per_user is not None or \
            self.submits_per_minute_per_team is not None
