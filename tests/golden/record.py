"""Write the golden record: `.venv/bin/python -m tests.golden.record`. Run it only when a
change is meant to change decisions, and say so in the change."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from tests.golden import replays, snapshots

HERE = Path(__file__).resolve().parent
DECISIONS = HERE / "decisions.json.gz"
REPLAYS = HERE / "replays.json.gz"
CASES = 3000


def write(path: Path, data: Any) -> None:
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as file:
        json.dump(data, file, sort_keys=True, separators=(",", ":"))


def read(path: Path) -> Any:
    with gzip.open(path, "rt", encoding="utf-8") as file:
        return json.load(file)


def normal(data: Any) -> Any:
    """The data as it reads back from the file (tuples as lists, keys as strings)."""
    return json.loads(json.dumps(data, sort_keys=True))


if __name__ == "__main__":
    write(DECISIONS, normal(list(snapshots.cases(CASES))))
    write(REPLAYS, normal(replays.all_replays()))
    print(f"wrote {DECISIONS.name} and {REPLAYS.name}")
