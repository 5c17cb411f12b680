"""Where a waiting job stands in its queue, in words."""

from __future__ import annotations

from dataclasses import dataclass

from trainyard.domain.reasons import BEHIND_OTHERS


@dataclass(frozen=True)
class QueuePlace:
    position: int  # 1-based among its queue's waiting jobs in admission order; 0: not waiting
    higher_priority_ahead: int = 0  # of the jobs ahead, those of a higher job priority

    @property
    def ahead(self) -> int:
        return max(0, self.position - 1)


def ahead_sentence(place: QueuePlace) -> str:
    """'3 jobs of higher priority are ahead', and the like; empty when none is."""
    ahead, higher = place.ahead, place.higher_priority_ahead
    if ahead == 0:
        return ""
    jobs = "1 job" if ahead == 1 else f"{ahead} jobs"
    verb = "is" if ahead == 1 else "are"
    if higher == ahead:
        return f"{jobs} of higher priority {verb} ahead"
    if higher == 0:
        return f"{jobs} submitted earlier {verb} ahead"
    return f"{jobs} {verb} ahead, {higher} of them of higher priority"


def explained(code: str, message: str, place: QueuePlace) -> str:
    """The pending message with how many jobs are ahead, where that is what it waits for."""
    note = ahead_sentence(place) if code in BEHIND_OTHERS else ""
    if not note:
        return message
    return f"{message.rstrip('.')}; {note}."
