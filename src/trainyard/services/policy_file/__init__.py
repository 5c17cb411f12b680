"""Reads the queueing policy (`trainyard.domain.policy.Policy`) from a TOML or YAML file.

Schema, in TOML; YAML has the same keys and nesting (see examples/policy.toml and .yaml):

    max_running = 8               # jobs running at once over all pools, int >= 1; default 4
    fair_share_half_life = "1h"   # duration ("90s", "10m", "1h", "2d", "1h30m") or a
                                  # number of seconds, > 0; default 1h
    reserve_after = "10m"         # duration, >= 0; default 10m
    min_runtime = "5m"            # a job that ran less than this is not preempted; default 5m
    service_levels = true         # order each queue's jobs of a priority by the service
                                  # they attained, and preempt a team's more-served jobs
                                  # for its less-served ones; default true

    [pools.<name>]                # at least one
    executor = "local"            # "local", "docker" or "slurm"; default "local"
    cpus = 16                     # number > 0; absent: CPUs are not counted
    memory_mb = 65536             # int >= 1; absent: memory is not counted
    gpus = 2                      # int >= 0, device ids "0".."n-1"; default 0
    # gpu_ids = ["0", "1"]        # or the device ids themselves; not both
    max_jobs = 8                  # int >= 1, required (slurm: default 1000)
    # executor = "slurm" only; its cpus, memory_mb and gpus, left out, are read from the
    # controller (the partition's nodes) at start and refreshed:
    partition = "gpu"             # the Slurm partition, required
    account = "ml"                # optional, likewise qos = "normal"
    staging = "pull"              # "pull" (the runtime fetches and pushes the files) or
                                  # "shared" (every node mounts the service's paths)
    cache_dir = "/var/tmp/trainyard/{node}"  # node-local cache; {node}: the node's name
    cache_mb = 20480              # int >= 1: the dataset cache's size cap
    python = "python3"            # the nodes' Python, for the job runtime
    service_address = ""          # host:port the jobs reach the service at; "": the server's
    spread = false                # one worker per node when possible
    grace = "30s"                 # TERM to KILL on cancel; default: the server's

    [queues.<name>]               # at least one
    pools = ["cpu"]               # declared pools, in order of preference; required
    priority = 0                  # int, higher runs first; default 0
    max_running = 4               # int >= 1; absent: only the global limit
    users = ["ann"]               # who may submit, with teams; both absent: everyone
    teams = ["vision"]            # declared teams
    weight = 1.0                  # number > 0, share among equal priorities; default 1
    preemptible = true            # its jobs may be preempted to give borrowed quota back;
                                  # default: true when priority <= 0
    max_attempts = 3              # attempts a job gets when it does not say, 1 to 100;
                                  # default 3 (lost ones are retried; failed ones when the
                                  # job asks)
    time_limit = "12h"            # each attempt's running time when the job does not say;
                                  # absent: none
    max_time_limit = "2d"         # the longest a job may ask for (and what one that asks
                                  # for none gets); absent: no maximum
    budget = { gpu_hours = 500, period = "7d" }  # what all its jobs together may use in
                                  # any rolling period (as a team's budget); absent: none
    preempt_notice = "SIGUSR1"    # what a job gets before it is preempted, besides the
                                  # notice file: "SIGUSR1", "TERM" or "none" (the file
                                  # only); default "TERM"
    preempt_grace = "90s"         # from the notice to the stop, sooner once the job reports
                                  # its checkpoint saved; default: the server's cancel grace

    [teams.<name>]
    members = ["ann", "bob"]
    budget = { gpu_hours = 1000, cpu_hours = 5000, period = "7d" }
                                  # GPU-hours and CPU-hours (numbers >= 0, at least one)
                                  # its jobs may use in any rolling period (a duration);
                                  # a job that would run past it waits (BUDGET); absent: none
    [teams.<name>.quota.<pool>]   # the team's share of a declared pool
    cpus = 1                      # number >= 0; absent: not counted
    memory_mb = 4096              # int >= 0; absent: not counted
    gpus = 0                      # int >= 0; absent: not counted
    borrow_cpus = 1               # how much more it may borrow from idle quota, likewise
                                  # borrow_memory_mb and borrow_gpus; default 0

    [limits]                      # backpressure at submit; each absent: no cap
    max_waiting_per_user = 1000   # int >= 1: jobs one user may have WAITING
    max_waiting_per_team = 5000   # int >= 1: jobs drawing on one team's quota WAITING
    submits_per_minute_per_user = 600   # int >= 1: submits a minute (a sweep: its trials)
    submits_per_minute_per_team = 3000  # int >= 1; past either, RESOURCE_EXHAUSTED

Names of pools, queues, teams, users and members follow the job name rule (NAME_RE). Unknown
keys are errors. A team's quota in a pool must fit in the pool, and so must all the teams'
quotas added up, for each resource the pool counts.

The schema is `schema.PolicyModel`. Every problem found is reported in one `PolicyError`,
each naming the file, the line when known, and the key path.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from trainyard.domain.policy import Policy
from trainyard.services.policy_file.checking import check
from trainyard.services.policy_file.problems import (
    KeyPath,
    PolicyError,
    dotted,
    line_of,
    report,
)
from trainyard.services.policy_file.reader import read_toml, read_yaml

__all__ = ["KeyPath", "PolicyDocument", "PolicyError", "load_policy", "load_policy_document",
           "parse_policy", "parse_policy_document"]


@dataclass(frozen=True)
class PolicyDocument:
    """A policy file read with extra top-level sections that other tools keep in it (the
    trace simulator's `sim`), which the policy itself ignores."""

    policy: Policy
    sections: Mapping[str, object]  # the extra sections present, as parsed
    source: str
    lines: Mapping[KeyPath, int]  # where each key path is written, for messages
    text: str = ""  # the document as read
    format: str = ""  # "toml" or "yaml"

    def where(self, path: KeyPath) -> str:
        """"FILE, line N: a.b.c" for a key path, as policy problems are reported."""
        line = line_of(self.lines, path)
        place = f"{self.source}, line {line}" if line else self.source
        return f"{place}: {dotted(path)}"


def load_policy(path: Path) -> Policy:
    return load_policy_document(path).policy


def load_policy_document(path: Path, sections: Collection[str] = ()) -> PolicyDocument:
    """The policy, and those of `sections` the file has as top-level keys."""
    fmt = {".toml": "toml", ".yaml": "yaml", ".yml": "yaml"}.get(path.suffix.lower())
    if fmt is None:
        raise PolicyError([f"{path}: unsupported policy file type {path.suffix!r}; "
                           "use .toml, .yaml or .yml"])
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError([f"{path}: cannot read: {exc}"]) from exc
    return parse_policy_document(text, fmt, source=str(path), sections=sections)


def parse_policy(text: str, fmt: str, source: str = "<policy>") -> Policy:
    """`fmt` is "toml" or "yaml"; `source` names the text in messages."""
    return parse_policy_document(text, fmt, source).policy


def parse_policy_document(text: str, fmt: str, source: str = "<policy>",
                          sections: Collection[str] = ()) -> PolicyDocument:
    try:
        return _parse(text, fmt, source, sections)
    except RecursionError:
        # The readers and the schema recurse once a level: a file nested past Python's
        # recursion limit (no policy comes near it) is refused whole.
        raise PolicyError([f"{source}: tables or arrays are nested too deeply to read (a "
                           "policy needs a few levels, not hundreds)"]) from None


def _parse(text: str, fmt: str, source: str, sections: Collection[str]) -> PolicyDocument:
    fmt = fmt.lower().lstrip(".")
    if fmt == "toml":
        reading = read_toml(text, source)
    elif fmt in ("yaml", "yml"):
        reading = read_yaml(text, source)
    else:
        raise PolicyError([f"{source}: unsupported policy format {fmt!r}; use toml or yaml"])
    checked = check(reading.data, reading.table_word, sections)
    if isinstance(checked, list) or reading.problems:
        found = reading.problems + ([] if isinstance(checked, Policy) else checked)
        # A document that is not a mapping has one problem of its own, after the reader's.
        raise PolicyError(report(found, source, reading.lines,
                                 in_file_order=isinstance(reading.data, dict)))
    assert isinstance(reading.data, dict)
    extra = {key: reading.data[key] for key in sections if key in reading.data}
    return PolicyDocument(checked, extra, source, reading.lines, text,
                          "toml" if fmt == "toml" else "yaml")
