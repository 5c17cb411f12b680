"""Trainyard's Kubernetes backend against a real API server, in one run.

The API server is trainyard.testbed.kube_apiserver's (the apiextensions-apiserver over etcd,
with the upstream Kubeflow CRDs, on 127.0.0.1, every file in a temp dir). Trainyard is an
in-process TrainyardServer with the shipped tracker settings and a policy file with one
Kubernetes pool creating PyTorchJobs, driven over gRPC with the SDK's Client on 127.0.0.1.
No operator runs: this process writes the resources' status, as an operator would, and
nothing runs in them.

Figures:
  1. admissions per second: N jobs submitted at once, from the first submit to the N-th
     PyTorchJob seen created (a watch of this process's own);
  2. status write -> state: the Running condition written through the /status subresource,
     to the job's RUNNING in Trainyard's store (polled every millisecond), one job at a time,
     p50/p90; then Succeeded for every job, to SUCCEEDED;
  3. API calls per job over its life (create, delete once final, and the watches' lists
     and renewals amortized): the executor's own count / N.

Usage: .venv/bin/python bench/kubernetes.py [--jobs 200] [--latency-jobs 50] [--cap-s 120]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchlib import commit, goal_met, num, percentile, verdict, write_json
from rich.console import Console
from rich.table import Table

# This file's name is the Kubernetes client's package's: once benchlib is in, this folder
# leaves the import path, so that `import kubernetes` finds the client.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != _HERE]

RESULTS = Path(__file__).resolve().parent / "results" / "kubernetes.json"
NAMESPACE = "bench"
GOALS = {  # figure: (kind, target)
    "admissions_per_s": ("at_least", 50.0),
    "api_calls_per_job": ("at_most", 4.0),
    "status_to_state_p50_ms": ("at_most", 50.0),
}
console = Console()

POLICY = """
max_running = 100000
[pools.k8s]
executor = "kubernetes"
max_jobs = 100000
[pools.k8s.kubernetes]
kubeconfig = "{kubeconfig}"
namespace = "{namespace}"
token_delivery = "env"
service_address = "127.0.0.1:9"
[queues.default]
pools = ["k8s"]
"""


class Creations:
    """When each PyTorchJob of the namespace was first seen, by a watch of this process."""

    def __init__(self, api_client: Any) -> None:
        from kubernetes import client, watch

        self.api = client.CustomObjectsApi(api_client)
        self.seen: dict[str, float] = {}
        self._watch = watch.Watch()
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        stream = self._watch.stream(self.api.list_namespaced_custom_object, "kubeflow.org",
                                    "v1", NAMESPACE, "pytorchjobs", timeout_seconds=600)
        with contextlib.suppress(Exception):  # the API server stops at the end of the run
            for event in stream:
                if event["type"] == "ADDED":
                    with self._cond:
                        self.seen.setdefault(event["object"]["metadata"]["name"],
                                             time.monotonic())
                        self._cond.notify_all()

    def wait_for(self, count: int, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: len(self.seen) >= count, timeout)

    def stop(self) -> None:
        self._watch.stop()


def write_condition(api: Any, name: str, kind: str) -> None:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = [{"type": "Created", "status": "True", "reason": "PyTorchJobCreated",
                   "lastUpdateTime": now, "lastTransitionTime": now},
                  {"type": "Running", "status": "True" if kind == "Running" else "False",
                   "reason": "PyTorchJobRunning", "lastUpdateTime": now,
                   "lastTransitionTime": now}]
    if kind == "Succeeded":
        conditions.append({"type": "Succeeded", "status": "True",
                           "reason": "PyTorchJobSucceeded", "lastUpdateTime": now,
                           "lastTransitionTime": now})
    api.patch_namespaced_custom_object_status("kubeflow.org", "v1", NAMESPACE, "pytorchjobs",
                                              name, {"status": {"conditions": conditions}})


def run(args: argparse.Namespace) -> dict[str, Any]:
    from trainyard.client.sdk import Client
    from trainyard.client.spec import TrainSpec
    from trainyard.domain.states import JobState
    from trainyard.server.assembly import ServerConfig, TrainyardServer
    from trainyard.testbed.kube_apiserver import api_server, available

    why = available()
    if why:
        raise SystemExit(f"no Kubernetes API server here: {why}")
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-k8s-") as tmp_name:
        tmp = Path(tmp_name)
        with api_server(tmp / "apiserver") as kube:
            from kubernetes import client as kclient

            api_client = kube.api_client()
            custom = kclient.CustomObjectsApi(api_client)
            policy = tmp / "policy.toml"
            policy.write_text(POLICY.format(kubeconfig=kube.kubeconfig, namespace=NAMESPACE))
            srv = TrainyardServer(ServerConfig(data_dir=tmp / "data", port=0,
                                               policy_file=policy))
            srv.start()
            creations = Creations(api_client)
            try:
                sdk = Client(f"127.0.0.1:{srv.port}", token="")
                executor: Any = srv.executors["kubernetes"]
                console.log(f"1. {args.jobs} jobs submitted at once into created PyTorchJobs")
                t0 = time.monotonic()
                ids = [sdk.train(TrainSpec(name=f"k{i}", image="bench/trainer:1",
                                           command="true")).job_id for i in range(args.jobs)]
                submitted_s = time.monotonic() - t0
                created = creations.wait_for(args.jobs, args.cap_s)
                last = max(creations.seen.values()) if creations.seen else time.monotonic()
                admit_s = last - t0
                handles = {job_id: srv.jobs.get(job_id).handle for job_id in ids}

                console.log(f"2. status write -> state, {args.latency_jobs} jobs one at a time")
                latencies = []
                for job_id in ids[:args.latency_jobs]:
                    t1 = time.monotonic()
                    write_condition(custom, handles[job_id], "Running")
                    while srv.jobs.get(job_id).state is not JobState.RUNNING:
                        if time.monotonic() - t1 > 10:
                            break
                        time.sleep(0.001)
                    else:
                        latencies.append((time.monotonic() - t1) * 1000)
                for job_id in ids:
                    write_condition(custom, handles[job_id], "Succeeded")
                deadline = time.monotonic() + args.cap_s
                while time.monotonic() < deadline and any(
                        not srv.jobs.get(job_id).state.is_final() for job_id in ids):
                    time.sleep(0.05)
                succeeded = sum(srv.jobs.get(job_id).state is JobState.SUCCEEDED
                                for job_id in ids)
                time.sleep(0.5)  # the deletes of the final ones
                calls = executor.calls
                sdk.close()
            finally:
                creations.stop()
                srv.stop(grace=0)
                with contextlib.suppress(Exception):
                    api_client.close()

    figures = {
        "admissions_per_s": (len(creations.seen) / admit_s if admit_s > 0 else None, "jobs/s"),
        "submit_per_s": (args.jobs / submitted_s if submitted_s > 0 else None, "jobs/s"),
        "status_to_state_p50_ms": (percentile(sorted(latencies), 50), "ms"),
        "status_to_state_p90_ms": (percentile(sorted(latencies), 90), "ms"),
        "api_calls_per_job": (calls / args.jobs, "calls/job"),
    }
    values = {k: figures[k][0] for k in GOALS}
    return {
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "config": {"api_server": "apiextensions-apiserver over etcd (testbed.kube_apiserver)",
                   "jobs": args.jobs, "latency_jobs": args.latency_jobs, "cap_s": args.cap_s,
                   "tracker": "shipped defaults (TrackerConfig())"},
        "figures": {k: {"value": num(v, 2), "unit": u} for k, (v, u) in figures.items()},
        "goals": {k: {"kind": kind, "target": target, "value": num(values[k], 3),
                      "pass": goal_met(kind, target, values[k])}
                  for k, (kind, target) in GOALS.items()},
        "counts": {"created": len(creations.seen), "all_created": created,
                   "succeeded": succeeded, "latency_samples": len(latencies),
                   "api_calls": calls},
    }


def render(results: dict[str, Any]) -> None:
    f, g, c = results["figures"], results["goals"], results["counts"]

    def v(name: str, fmt: str = "{:,.1f}") -> str:
        value = f[name]["value"]
        return "n/a" if value is None else fmt.format(value) + " " + f[name]["unit"]

    def r(name: str) -> tuple[str, str]:
        kind, target = g[name]["kind"], g[name]["target"]
        return f"{'<=' if kind == 'at_most' else '>='} {target:,g}", verdict(g[name]["pass"])

    table = Table(title="Trainyard's Kubernetes backend against a real API server")
    for col in ("figure", "value", "goal", "met?"):
        table.add_column(col, justify="left" if col == "figure" else "right", no_wrap=True)
    jobs = results["config"]["jobs"]
    table.add_row(f"admissions, {jobs} jobs into created PyTorchJobs", v("admissions_per_s"),
                  *r("admissions_per_s"))
    table.add_row("  (submits alone)", v("submit_per_s"), "", "")
    table.add_row("status write -> job state p50", v("status_to_state_p50_ms"),
                  *r("status_to_state_p50_ms"))
    table.add_row("status write -> job state p90", v("status_to_state_p90_ms"), "", "")
    table.add_row("API calls per job over its life", v("api_calls_per_job", "{:.2f}"),
                  *r("api_calls_per_job"))
    console.print(table)
    if c["created"] < jobs or c["succeeded"] < jobs:
        console.print(f"[yellow]{c['created']} of {jobs} created, {c['succeeded']} "
                      "succeeded[/]")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--latency-jobs", type=int, default=50)
    p.add_argument("--cap-s", type=float, default=120.0, help="wall-clock cap of each phase")
    p.add_argument("--json", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if min(args.jobs, args.latency_jobs) < 1 or args.latency_jobs > args.jobs:
        p.error("--jobs and --latency-jobs must be at least 1, and latency jobs <= jobs")
    return args


def main() -> int:
    args = parse_args()
    results = run(args)
    render(results)
    write_json(results, args.json)
    console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
