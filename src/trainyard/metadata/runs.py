"""Runs side by side, and each run's own share of its job's history. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trainyard.domain.states import JobState
from trainyard.store.records import EventRecord, RunRecord

Metrics = Mapping[str, tuple[float, int | None]]


def attempt_events(events: Sequence[EventRecord], attempt: int) -> list[EventRecord]:
    """The transitions of one attempt: from the wait before it (the submit, or the return to
    WAITING after the last attempt ended) to how it ended."""
    current = 1
    mine: list[EventRecord] = []
    for event in events:
        if event.to_state is JobState.WAITING and event.from_state is not None:
            current += 1  # requeued: what follows is the next attempt's
        if current == attempt:
            mine.append(event)
        elif current > attempt:
            break
    return mine


@dataclass(frozen=True)
class Row:
    """One key across the runs, in their order; None where a run lacks it."""

    key: str
    values: tuple[str | None, ...]
    differs: bool


@dataclass(frozen=True)
class MetricRow:
    key: str
    values: tuple[float | None, ...]
    differs: bool


@dataclass(frozen=True)
class Comparison:
    runs: list[RunRecord]
    settings: list[Row]  # dataset, code, resources, where it ran
    hyperparameters: list[Row]
    metrics: list[MetricRow]  # final values


def settings_of(run: RunRecord) -> dict[str, str]:
    spec = run.spec
    out = {
        "dataset": f"{spec.dataset.name}:{spec.dataset.version}" if spec.dataset else "",
        "image": spec.image, "image_id": run.image_id, "command": spec.command,
        "git_commit": spec.git_commit, "cpus": f"{spec.resources.cpus:g}",
        "memory_mb": str(spec.resources.memory_mb), "gpus": str(spec.resources.gpus),
        "workers": str(spec.workers), "queue": spec.queue, "executor": run.executor,
        "pool": run.pool,
    }
    return {k: v for k, v in out.items() if v}


def _differs(values: Sequence[object]) -> bool:
    """A key differs when runs disagree on it, a run lacking it included."""
    return len(set(values)) > 1


def _rows(maps: Sequence[Mapping[str, str]], order: Sequence[str] | None = None) -> list[Row]:
    keys = list(order) if order is not None else sorted({k for m in maps for k in m})
    rows = []
    for key in keys:
        values = tuple(m.get(key) for m in maps)
        if all(v is None for v in values):
            continue
        rows.append(Row(key, values, _differs(values)))
    return rows


def compare(runs: Sequence[RunRecord], final: Mapping[tuple[str, int], Metrics]) -> Comparison:
    settings = [settings_of(r) for r in runs]
    order = list(dict.fromkeys(k for s in settings for k in s))
    params = [r.spec.hyperparameters for r in runs]
    values = [{k: v for k, (v, _) in final.get((r.job.id, r.attempt), {}).items()}
              for r in runs]
    metric_rows = []
    for key in sorted({k for m in values for k in m}):
        row = tuple(m.get(key) for m in values)
        metric_rows.append(MetricRow(key, row, _differs(row)))
    return Comparison(list(runs), _rows(settings, order), _rows(params), metric_rows)
