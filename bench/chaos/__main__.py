"""`python -m chaos [SCENARIO...] [--quick] [--json PATH]`: run the fault suite's scenarios
(all in chaos/scenarios/, or those named), print a table, merge into bench/results/chaos.json.
Exits 1 when a scenario misses a goal (something lost, duplicated, stuck or wrong) or fails."""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from chaos import scenarios
from chaos.report import RESULTS, console, merge, passed, table


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(scenarios.__path__))


def run_one(name: str, quick: bool) -> dict[str, Any]:
    module = importlib.import_module(f"chaos.scenarios.{name}")
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"chaos-{name}-") as tmp:
        try:
            result: dict[str, Any] = dict(module.run(Path(tmp), quick))
        except Exception as exc:  # one scenario's failure is reported, the rest still run
            console.print(traceback.format_exc())
            result = {"error": f"{type(exc).__name__}: {exc}"}
    result["quick"] = quick
    result["seconds"] = round(time.monotonic() - began, 1)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="SCENARIO",
                        help=f"of: {', '.join(available())}; default: all")
    parser.add_argument("--quick", action="store_true", help="a small version of each")
    parser.add_argument("--json", type=Path, default=RESULTS, help="the results file")
    args = parser.parse_args()
    unknown = sorted(set(args.names) - set(available()))
    if unknown:
        parser.error(f"no such scenario: {', '.join(unknown)} (of {', '.join(available())})")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    results: dict[str, dict[str, Any]] = {}
    for name in args.names or available():
        console.log(f"scenario {name}{' (quick)' if args.quick else ''}")
        results[name] = run_one(name, args.quick)
        console.log(f"{name}: {results[name]}")
    merge(results, args.json)
    console.print(table(results))
    console.print(f"results merged into {args.json}")
    return 0 if all(passed(r) for r in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
