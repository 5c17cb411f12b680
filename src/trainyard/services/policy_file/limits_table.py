"""The policy file's `[limits]` table: backpressure caps on waiting jobs and on the submit
rate, per user and per team (domain.limits.SubmitLimits)."""

from __future__ import annotations

from typing import Annotated

from trainyard.domain.limits import SubmitLimits
from trainyard.services.policy_file.fields import PositiveInt, Table, not_null

Cap = Annotated[PositiveInt | None, not_null("int_type")]


class LimitsModel(Table):
    max_waiting_per_user: Cap = None
    max_waiting_per_team: Cap = None
    submits_per_minute_per_user: Cap = None
    submits_per_minute_per_team: Cap = None

    def limits(self) -> SubmitLimits:
        return SubmitLimits(self.max_waiting_per_user, self.max_waiting_per_team,
                            self.submits_per_minute_per_user, self.submits_per_minute_per_team)
