"""Algorithms benchmark: what a registered algorithm costs a submit, and what registering a
code directory costs, on a real store (SQLite, or PostgreSQL with --database-url).

Measured in one run, the submit paths interleaved round by round so that they share the
machine's state, each the median over --rounds of the mean of --submits durable submits:

  plain_ms        a job of a command (JobService.train), the peer
  handle_ms       the same job by handle, `bench@production` resolved to its version
  sample_ms       the sample service's Train (training.TrainingService): the handle, the
                  dataset version and the 32-bit id in the job's transaction
  register_s      a code directory of --files files of 16 KiB uploaded as a new version
  reregister_s    the same directory again: the same version, nothing stored
  dedup_s         the same content under a new name: a new version, its files stored once

Goals: a submit by handle costs at most 1.25x a plain submit (it adds one indexed read to a
submit that commits), and one through the sample service at most 1.5x (besides, the row of
its 32-bit id in the same transaction and one indexed read of the number made).

Usage: .venv/bin/python bench/algorithms.py [--submits 300] [--rounds 5] [--files 200]
                                            [--database-url URL] [--json PATH]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import commit, goal_met, num, verdict, write_json  # noqa: E402

from trainyard.auth.policy import Identity  # noqa: E402
from trainyard.domain.algorithms import UNSET_RESOURCES  # noqa: E402
from trainyard.domain.spec import AlgorithmRef, DatasetRef, JobSpec  # noqa: E402
from trainyard.metadata.file_chunks import chunks_of, tree_entries  # noqa: E402
from trainyard.server.assembly import ServerConfig, TrainyardServer  # noqa: E402
from trainyard.services.algorithms import Registration  # noqa: E402
from trainyard.services.sample import SampleMetadata  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "algorithms.json"
GOALS = {"handle_ratio": 1.25, "sample_ratio": 1.5}
ROOT = Identity(user="root", admin=True)
FILE_BYTES = 16 * 1024


def write_code(root: Path, files: int, salt: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "train.py").write_text(f"print('training'){salt}\n")
    for i in range(files - 1):
        (root / "lib" / f"part{i // 50}").mkdir(parents=True, exist_ok=True)
        (root / "lib" / f"part{i // 50}" / f"m{i}.py").write_bytes(
            (f"# {i}\n".encode() * (FILE_BYTES // 4 + 1))[:FILE_BYTES])
    return root


def timed(step: Callable[[], object]) -> float:
    began = time.perf_counter()
    step()
    return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submits", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--database-url", default="")
    parser.add_argument("--json", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-algorithms-") as tmp:
        work = Path(tmp)
        server = TrainyardServer(ServerConfig(data_dir=work / "data", port=0,
                                              database_url=args.database_url))
        try:
            report = measure(server, work, args)
        finally:
            server.stop(grace=0)
    met = {key: goal_met("at_most", limit, float(report[key]))  # type: ignore[arg-type]
           for key, limit in GOALS.items()}
    goals = {key: {"at_most": GOALS[key], "met": met[key]} for key in GOALS}
    report.update(commit=commit(), python=platform.python_version(),
                  database="postgresql" if args.database_url else "sqlite", goals=goals)
    table = Table(title="algorithms: submit and registration costs", show_edge=False)
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("vs plain submit", justify="right")
    for key, label in (("plain_ms", "plain submit (ms)"), ("handle_ms", "by handle (ms)"),
                       ("sample_ms", "sample Train (ms)")):
        ratio = report.get(key.replace("_ms", "_ratio"))
        table.add_row(label, f"{report[key]:.3f}", "" if ratio is None else f"{ratio:.2f}x")
    for key, label in (("register_s", f"register {args.files} files (s)"),
                       ("reregister_s", "register again, same version (s)"),
                       ("dedup_s", "same content, new name (s)")):
        table.add_row(label, f"{report[key]:.3f}", "")
    for key, label in (("handle_ratio", "goal: by handle"), ("sample_ratio", "goal: sample")):
        table.add_row(f"{label} <= {GOALS[key]}x", verdict(met[key]), "")
    Console().print(table)
    write_json(report, args.json)
    return 0


def measure(server: TrainyardServer, work: Path, args: argparse.Namespace) -> dict[str, object]:
    services = server.services
    server.access.bootstrap("root")
    data = work / "rows"
    data.mkdir()
    (data / "rows.csv").write_text("1,2\n")
    dataset, _ = services.datasets.register(ROOT, "rows", str(data))
    code = write_code(work / "code", args.files)
    entries = tree_entries(code, "code")
    request = Registration(name="bench", code=True, command="python3 train.py")
    versions = []
    register_s = timed(lambda: versions.append(services.algorithms.register(
        ROOT, request, chunks_of(code, entries))))
    reregister_s = timed(lambda: versions.append(services.algorithms.register(
        ROOT, request, chunks_of(code, entries))))
    dedup_s = timed(lambda: versions.append(services.algorithms.register(
        ROOT, Registration(name="bench-copy", code=True, command="python3 train.py"),
        chunks_of(code, entries))))
    assert versions[1][1] is False and versions[2][0].code_hash == versions[0][0].code_hash
    services.algorithms.set_alias(ROOT, "bench", "production", versions[0][0].version)
    ref = DatasetRef("rows", dataset.version)
    paths: dict[str, Callable[[], object]] = {
        "plain": lambda: services.jobs.train(ROOT, JobSpec(name="plain", command="true",
                                                           dataset=ref)),
        "handle": lambda: services.jobs.train(ROOT, JobSpec(
            name="handle", algorithm=AlgorithmRef("bench", 0, "production"), dataset=ref,
            resources=UNSET_RESOURCES)),
        "sample": lambda: services.sample.train(ROOT, SampleMetadata(
            algorithm="bench", dataset_id="rows", train_data_version_hash=dataset.version,
            parameters={"lr": "0.1"})),
    }
    for step in paths.values():  # warm every path once
        step()
    means: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(args.rounds):
        for name, step in paths.items():
            total = timed(lambda step=step: [step() for _ in range(args.submits)])  # type: ignore[misc]
            means[name].append(total / args.submits * 1000)
    medians = {name: statistics.median(values) for name, values in means.items()}
    return {
        "submits": args.submits, "rounds": args.rounds, "files": args.files,
        "plain_ms": num(medians["plain"], 3), "handle_ms": num(medians["handle"], 3),
        "sample_ms": num(medians["sample"], 3),
        "handle_ratio": num(medians["handle"] / medians["plain"]),
        "sample_ratio": num(medians["sample"] / medians["plain"]),
        "register_s": num(register_s, 3), "reregister_s": num(reregister_s, 3),
        "dedup_s": num(dedup_s, 3),
    }


if __name__ == "__main__":
    sys.exit(main())
