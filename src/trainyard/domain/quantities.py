"""The server side's name for trainyard.quantities (durations and sizes as users type them)."""

from trainyard.quantities import (
    DURATION_HINT,
    MIB,
    SIZE_HINT,
    UNIT_SECONDS,
    describe_duration,
    duration_seconds,
    size_mib,
)

__all__ = ["DURATION_HINT", "MIB", "SIZE_HINT", "UNIT_SECONDS", "describe_duration",
           "duration_seconds", "size_mib"]
