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
    executor = "local"            # "local" or "docker"; default "local"
    cpus = 16                     # number > 0; absent: CPUs are not counted
    memory_mb = 65536             # int >= 1; absent: memory is not counted
    gpus = 2                      # int >= 0, device ids "0".."n-1"; default 0
    # gpu_ids = ["0", "1"]        # or the device ids themselves; not both
    max_jobs = 8                  # int >= 1, required

    [queues.<name>]               # at least one
    pools = ["cpu"]               # declared pools, in order of preference; required
    priority = 0                  # int, higher runs first; default 0
    max_running = 4               # int >= 1; absent: only the global limit
    users = ["ann"]               # who may submit, with teams; both absent: everyone
    teams = ["vision"]            # declared teams
    weight = 1.0                  # number > 0, share among equal priorities; default 1
    preemptible = true            # its jobs may be preempted to give borrowed quota back;
                                  # default: true when priority <= 0

    [teams.<name>]
    members = ["ann", "bob"]
    [teams.<name>.quota.<pool>]   # the team's share of a declared pool
    cpus = 1                      # number >= 0; absent: not counted
    memory_mb = 4096              # int >= 0; absent: not counted
    gpus = 0                      # int >= 0; absent: not counted
    borrow_cpus = 1               # how much more it may borrow from idle quota, likewise
                                  # borrow_memory_mb and borrow_gpus; default 0

Names of pools, queues, teams, users and members follow the job name rule (NAME_RE). Unknown
keys are errors. A team's quota in a pool must fit in the pool, and so must all the teams'
quotas added up, for each resource the pool counts.

Every problem found is reported in one `PolicyError`, each naming the file, the line when
known, and the key path.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import yaml

from trainyard.domain.kinds import KINDS, JobKind
from trainyard.domain.policy import Policy, Pool, Queue, Quota, Team
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import NAME_RE

KeyPath = tuple[str | int, ...]  # keys, and indexes into lists
T = TypeVar("T")

_TOP_KEYS = ("max_running", "fair_share_half_life", "reserve_after", "min_runtime",
             "service_levels", "pools",
             "queues", "teams")
_POOL_KEYS = ("executor", "cpus", "memory_mb", "gpus", "gpu_ids", "max_jobs")
_QUEUE_KEYS = ("pools", "priority", "max_running", "users", "teams", "weight", "preemptible")
_TEAM_KEYS = ("members", "quota")
_QUOTA_KEYS = ("cpus", "memory_mb", "gpus", "borrow_cpus", "borrow_memory_mb", "borrow_gpus")

_DURATION_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhd])")
_DURATION = re.compile(rf"(?:{_DURATION_PART.pattern})+\s*")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# Device ids go into CUDA_VISIBLE_DEVICES and Docker requests: numbers, UUIDs, MIG ids.
_GPU_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:./_-]{0,127}$")

_TOML_KEY = r"""(?:"(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)"""
_TOML_HEADER = re.compile(rf"\s*\[\[?\s*({_TOML_KEY}(?:\s*\.\s*{_TOML_KEY})*)\s*\]\]?\s*(?:#.*)?$")
_TOML_ASSIGN = re.compile(rf"\s*({_TOML_KEY}(?:\s*\.\s*{_TOML_KEY})*)\s*=")
_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


class PolicyError(Exception):
    """A policy file that cannot be used; `problems` lists everything wrong with it."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class PolicyDocument:
    """A policy file read with extra top-level sections that other tools keep in it (the
    trace simulator's `sim`), which the policy itself ignores."""

    policy: Policy
    sections: Mapping[str, object]  # the extra sections present, as parsed
    source: str
    lines: Mapping[KeyPath, int]  # where each key path is written, for messages

    def where(self, path: KeyPath) -> str:
        """"FILE, line N: a.b.c" for a key path, as policy problems are reported."""
        line = None
        for end in range(len(path), 0, -1):
            line = self.lines.get(path[:end])
            if line is not None:
                break
        place = f"{self.source}, line {line}" if line else self.source
        return f"{place}: {_dotted(path)}"


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
    fmt = fmt.lower().lstrip(".")
    if fmt == "toml":
        checker = _Checker(source, "table")
        data = _read_toml(text, checker)
    elif fmt in ("yaml", "yml"):
        checker = _Checker(source, "mapping")
        data = _read_yaml(text, checker)
    else:
        raise PolicyError([f"{source}: unsupported policy format {fmt!r}; use toml or yaml"])
    policy = checker.policy(data, tuple(sections))
    assert isinstance(data, dict)  # checker.policy refused anything else
    extra = {key: data[key] for key in sections if key in data}
    return PolicyDocument(policy, extra, source, dict(checker.lines))


def _read_toml(text: str, checker: _Checker) -> object:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)  # tomllib puts the position at the end: "... (at line 3, column 9)"
        at = _TOML_AT.search(message)
        if at is None:
            raise PolicyError([f"{checker.source}: {message}"]) from exc
        raise PolicyError([f"{checker.source}, line {at[1]}: {message[:at.start()]} "
                           f"(column {at[2]})"]) from exc
    checker.lines = _toml_lines(text)
    return data


def _toml_keys(dotted: str) -> tuple[str, ...]:
    return tuple(key[1:-1] if key[0] in "\"'" else key
                 for key in re.findall(_TOML_KEY, dotted))


def _toml_lines(text: str) -> dict[KeyPath, int]:
    """Where each key path is first written. tomllib keeps no positions, so this scans for
    `[table]` headers and `key =` lines, which covers the layouts policy files use."""
    lines: dict[KeyPath, int] = {}
    table: tuple[str, ...] = ()
    in_string = False
    for number, line in enumerate(text.splitlines(), start=1):
        quotes = line.count('"""') + line.count("'''")
        if in_string:  # text inside a multi-line string may look like a key
            in_string = quotes % 2 == 0
            continue
        header = _TOML_HEADER.match(line)
        assign = None if header else _TOML_ASSIGN.match(line)
        if header:
            table = _toml_keys(header[1])
            start, path = 1, table
        elif assign:
            start, path = len(table) + 1, table + _toml_keys(assign[1])
        else:
            start, path = 1, ()
        for end in range(start, len(path) + 1):
            lines.setdefault(path[:end], number)
        in_string = quotes % 2 == 1
    return lines


def _read_yaml(text: str, checker: _Checker) -> object:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        # Walk the nodes before constructing, which flattens merge keys and hides duplicates.
        _yaml_lines(node, (), checker, set())
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        message = exc.problem or "not valid YAML"
        if exc.context:
            message += f" ({exc.context}"
            if exc.context_mark and mark and exc.context_mark.line != mark.line:
                message += f" from line {exc.context_mark.line + 1}"
            message += ")"
        where = f"{checker.source}, line {mark.line + 1}" if mark else checker.source
        raise PolicyError([f"{where}: {message}"]) from exc
    except yaml.YAMLError as exc:
        raise PolicyError([f"{checker.source}: {exc}"]) from exc
    finally:
        loader.dispose()


def _yaml_lines(node: yaml.Node, path: KeyPath, checker: _Checker, seen: set[int]) -> None:
    if id(node) in seen:  # an alias: already walked, and it may refer to itself
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        keys: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                continue
            key_path = (*path, key_node.value)
            line = key_node.start_mark.line + 1
            if key_node.value in keys:  # PyYAML would silently keep the last one
                checker.fail(key_path, f"duplicate key (first on line {checker.lines[key_path]})",
                             line=line)
                continue
            keys.add(key_node.value)
            checker.lines[key_path] = line
            _yaml_lines(value_node, key_path, checker, seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            checker.lines.setdefault((*path, index), item.start_mark.line + 1)
            _yaml_lines(item, (*path, index), checker, seen)


def _dotted(path: KeyPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else part
    return text


class _Checker:
    """Validates the parsed data and builds the Policy. A bad value is recorded as a problem
    and replaced by a harmless default, so checking goes on and reports everything."""

    def __init__(self, source: str, table_word: str) -> None:
        self.source = source
        self.table_word = table_word  # what the format calls a mapping
        self.lines: dict[KeyPath, int] = {}
        self._problems: list[tuple[int, str]] = []
        self.gpu_key: dict[str, str] = {}  # which key declared a pool's GPUs, for messages

    def line(self, path: KeyPath) -> int | None:
        # A missing key or a list item has no line of its own: use its nearest parent's.
        for end in range(len(path), 0, -1):
            if path[:end] in self.lines:
                return self.lines[path[:end]]
        return None

    def fail(self, path: KeyPath, message: str, line: int | None = None) -> None:
        line = line or self.line(path)
        where = f"{self.source}, line {line}" if line else self.source
        text = f"{where}: {_dotted(path)}: {message}" if path else f"{where}: {message}"
        self._problems.append((line or 0, text))

    def show(self, value: object) -> str:
        if isinstance(value, str):
            shown = json.dumps(value, ensure_ascii=False)
            return shown if len(shown) <= 60 else shown[:56] + '..."'
        if isinstance(value, bool):
            return "true" if value else "false"
        if value is None:
            return "nothing"
        if isinstance(value, int | float):
            return repr(value)
        if isinstance(value, list):
            return "a list"
        if isinstance(value, dict):
            return f"a {self.table_word}"
        return f"a {type(value).__name__}"

    # --- values ---

    def table(self, path: KeyPath, value: object) -> dict[object, object] | None:
        if isinstance(value, dict):
            return value
        self.fail(path, f"must be a {self.table_word}, got {self.show(value)}")
        return None

    def entries(self, path: KeyPath, table: Mapping[object, object]) -> Iterator[
            tuple[str, object]]:
        """The named entries of a section (pools, queues, ...), checking each name."""
        for name, value in table.items():
            if not isinstance(name, str) or not NAME_RE.match(name):
                self.fail((*path, str(name)), f"{self.show(name)} is not a valid name: use "
                          "letters, digits, '.', '_' and '-', starting with a letter or digit")
            if isinstance(name, str):
                yield name, value

    def keys(self, path: KeyPath, table: Mapping[object, object], allowed: tuple[str, ...]
             ) -> None:
        for key in table:
            if key not in allowed:
                self.fail((*path, str(key)), f"unknown key (expected one of: "
                          f"{', '.join(allowed)})")

    def require(self, path: KeyPath, table: Mapping[object, object], key: str) -> None:
        if key not in table:
            self.fail((*path, key), "is required")

    def boolean(self, path: KeyPath, table: Mapping[object, object], key: str,
                default: T) -> bool | T:
        if key not in table:
            return default
        value = table[key]
        if not isinstance(value, bool):
            self.fail((*path, key), f"must be true or false, got {self.show(value)}")
            return default
        return value

    def integer(self, path: KeyPath, table: Mapping[object, object], key: str, default: T,
                minimum: int | None = None) -> int | T:
        if key not in table:
            return default
        value = table[key]
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail((*path, key), f"must be an integer, got {self.show(value)}")
            return default
        if minimum is not None and value < minimum:
            self.fail((*path, key), f"must be at least {minimum}, got {value}")
            return default
        return value

    def number(self, path: KeyPath, table: Mapping[object, object], key: str, default: T,
               positive: bool) -> float | T:
        """A finite number, > 0 if `positive` else >= 0."""
        if key not in table:
            return default
        value = table[key]
        if not isinstance(value, int | float) or isinstance(value, bool):
            self.fail((*path, key), f"must be a number, got {self.show(value)}")
            return default
        if not math.isfinite(value):
            self.fail((*path, key), f"must be a finite number, got {self.show(value)}")
            return default
        if value < 0 or (positive and value == 0):
            self.fail((*path, key), f"must be {'greater than' if positive else 'at least'} 0, "
                      f"got {value!r}")
            return default
        return float(value)

    def duration(self, path: KeyPath, table: Mapping[object, object], key: str,
                 default: float, positive: bool) -> float:
        value = table.get(key)
        if isinstance(value, str):
            if not _DURATION.fullmatch(value):
                self.fail((*path, key), 'must be a duration like "90s", "10m", "1h30m" or '
                          f'"2d", or a number of seconds, got {self.show(value)}')
                return default
            seconds = sum(float(amount) * _UNIT_S[unit]
                          for amount, unit in _DURATION_PART.findall(value))
            if positive and seconds == 0:
                self.fail((*path, key), f"must be longer than 0, got {self.show(value)}")
                return default
            return seconds
        return self.number(path, table, key, default, positive)

    def names(self, path: KeyPath, table: Mapping[object, object], key: str,
              known: Collection[str] | None = None, kind: str = "") -> tuple[str, ...]:
        """A list of names, each one of `known` (names of declared `kind`s) when given."""
        if key not in table:
            return ()
        value, path = table[key], (*path, key)
        if not isinstance(value, list):
            self.fail(path, f"must be a list of names, got {self.show(value)}")
            return ()
        names: list[str] = []
        for index, name in enumerate(value):
            if not isinstance(name, str) or not NAME_RE.match(name):
                self.fail((*path, index), f"{self.show(name)} is not a valid name: use "
                          "letters, digits, '.', '_' and '-', starting with a letter or digit")
            elif name in names:
                self.fail((*path, index), f"{self.show(name)} is listed twice")
            elif known is not None and name not in known:
                declared = ", ".join(sorted(known)) or "none"
                self.fail((*path, index), f"no {kind} named {self.show(name)} is declared "
                          f"({kind}s: {declared})")
            else:
                names.append(name)
        return tuple(names)

    def section(self, root: Mapping[object, object], key: str, kind: str, required: bool
                ) -> dict[object, object]:
        if key not in root:
            table: dict[object, object] | None = {}
        else:
            table = self.table((key,), root[key])
            if table is None:
                return {}
        if required and not table:
            self.fail((key,), f"at least one {kind} must be declared")
        return table or {}

    # --- the policy ---

    def policy(self, data: object, extra: tuple[str, ...] = ()) -> Policy:
        root = self.table((), data)
        if root is None:
            raise PolicyError([problem for _, problem in self._problems])
        self.keys((), root, _TOP_KEYS + extra)
        max_running = self.integer((), root, "max_running", 4, minimum=1)
        half_life = self.duration((), root, "fair_share_half_life", 3600.0, positive=True)
        reserve_after = self.duration((), root, "reserve_after", 600.0, positive=False)
        min_runtime = self.duration((), root, "min_runtime", 300.0, positive=False)
        service_levels = self.boolean((), root, "service_levels", True)
        pool_section = self.section(root, "pools", "pool", required=True)
        team_section = self.section(root, "teams", "team", required=False)
        # Names count as declared even when their entries are broken, so one mistake does
        # not also turn up as "no such pool" wherever the name is used.
        pool_names = {name for name in pool_section if isinstance(name, str)}
        team_names = {name for name in team_section if isinstance(name, str)}
        pools = self.pools(pool_section)
        teams = self.teams(team_section, pool_names, pools)
        queues = self.queues(self.section(root, "queues", "queue", required=True),
                             pool_names, team_names)
        self.sums(pools, teams)
        if self._problems:
            # In file order, which is easier to work through than checking order.
            self._problems.sort(key=lambda problem: problem[0])
            raise PolicyError([problem for _, problem in self._problems])
        return Policy(pools=pools, queues=queues, teams=teams, max_running=max_running,
                      fair_share_half_life_s=half_life, reserve_after_s=reserve_after,
                      min_runtime_s=min_runtime, service_levels=service_levels)

    def pools(self, section: Mapping[object, object]) -> dict[str, Pool]:
        pools: dict[str, Pool] = {}
        for name, value in self.entries(("pools",), section):
            path = ("pools", name)
            table = self.table(path, value)
            if table is None:
                continue
            self.keys(path, table, _POOL_KEYS)
            executor = table.get("executor", JobKind.LOCAL)
            if executor not in KINDS:
                self.fail((*path, "executor"), f"must be one of {', '.join(KINDS)}, "
                          f"got {self.show(executor)}")
                executor = JobKind.LOCAL
            self.require(path, table, "max_jobs")
            capacity = PoolCapacity(
                name,
                max_jobs=self.integer(path, table, "max_jobs", 1, minimum=1),
                cpus=self.number(path, table, "cpus", None, positive=True),
                memory_mb=self.integer(path, table, "memory_mb", None, minimum=1),
                gpu_ids=self.gpu_ids(path, table),
            )
            self.gpu_key[name] = "gpu_ids" if "gpu_ids" in table else "gpus"
            pools[name] = Pool(capacity, executor=str(executor))
        return pools

    def gpu_ids(self, path: KeyPath, table: Mapping[object, object]) -> tuple[str, ...]:
        if "gpu_ids" not in table:
            return tuple(str(i) for i in range(self.integer(path, table, "gpus", 0, minimum=0)))
        value, path = table["gpu_ids"], (*path, "gpu_ids")
        if "gpus" in table:
            self.fail(path, "give gpus or gpu_ids, not both")
            return ()
        if not isinstance(value, list):
            self.fail(path, f"must be a list of device ids, got {self.show(value)}")
            return ()
        ids: list[str] = []
        for index, item in enumerate(value):
            # YAML users write [0, 1]; the ids are strings either way.
            gpu = str(item) if isinstance(item, int) and not isinstance(item, bool) else item
            if not isinstance(gpu, str) or not _GPU_ID.match(gpu):
                self.fail((*path, index), f"{self.show(item)} is not a valid device id")
            elif gpu in ids:
                self.fail((*path, index), f"{self.show(gpu)} is listed twice")
            else:
                ids.append(gpu)
        return tuple(ids)

    def queues(self, section: Mapping[object, object], pool_names: Collection[str],
               team_names: Collection[str]) -> dict[str, Queue]:
        queues: dict[str, Queue] = {}
        for name, value in self.entries(("queues",), section):
            path = ("queues", name)
            table = self.table(path, value)
            if table is None:
                continue
            self.keys(path, table, _QUEUE_KEYS)
            self.require(path, table, "pools")
            pools = self.names(path, table, "pools", pool_names, "pool")
            if table.get("pools") == []:
                self.fail((*path, "pools"), "must name at least one pool")
            queues[name] = Queue(
                name,
                pools=pools,
                priority=self.integer(path, table, "priority", 0),
                max_running=self.integer(path, table, "max_running", None, minimum=1),
                users=frozenset(self.names(path, table, "users")),
                teams=frozenset(self.names(path, table, "teams", team_names, "team")),
                weight=self.number(path, table, "weight", 1.0, positive=True),
                preemptible=self.boolean(path, table, "preemptible", None),
            )
        return queues

    def teams(self, section: Mapping[object, object], pool_names: Collection[str],
              pools: Mapping[str, Pool]) -> dict[str, Team]:
        teams: dict[str, Team] = {}
        for name, value in self.entries(("teams",), section):
            path = ("teams", name)
            table = self.table(path, value)
            if table is None:
                continue
            self.keys(path, table, _TEAM_KEYS)
            members = frozenset(self.names(path, table, "members"))
            quotas: dict[str, Quota] = {}
            quota_section = self.table((*path, "quota"), table.get("quota", {})) or {}
            for pool_name, quota_value in self.entries((*path, "quota"), quota_section):
                quota_path = (*path, "quota", pool_name)
                if pool_name not in pool_names:
                    declared = ", ".join(sorted(pool_names)) or "none"
                    self.fail(quota_path, f"no pool named {self.show(pool_name)} is declared "
                              f"(pools: {declared})")
                quota = self.quota(quota_path, quota_value)
                if quota is not None:
                    quotas[pool_name] = quota
                    if pool_name in pools:
                        self.fits(quota_path, quota, pools[pool_name].capacity)
            teams[name] = Team(name, members=members, quotas=quotas)
        return teams

    def quota(self, path: KeyPath, value: object) -> Quota | None:
        table = self.table(path, value)
        if table is None:
            return None
        self.keys(path, table, _QUOTA_KEYS)
        return Quota(
            cpus=self.number(path, table, "cpus", None, positive=False),
            memory_mb=self.integer(path, table, "memory_mb", None, minimum=0),
            gpus=self.integer(path, table, "gpus", None, minimum=0),
            borrow_cpus=self.number(path, table, "borrow_cpus", 0.0, positive=False),
            borrow_memory_mb=self.integer(path, table, "borrow_memory_mb", 0, minimum=0),
            borrow_gpus=self.integer(path, table, "borrow_gpus", 0, minimum=0),
        )

    def fits(self, path: KeyPath, quota: Quota, pool: PoolCapacity) -> None:
        """One team's quota must fit in the pool."""
        if pool.cpus is not None and quota.cpus is not None and quota.cpus > pool.cpus + 1e-9:
            self.fail((*path, "cpus"), f"{quota.cpus:g} is more than the {pool.cpus:g} CPUs "
                      f"of pool {self.show(pool.name)}")
        if (pool.memory_mb is not None and quota.memory_mb is not None
                and quota.memory_mb > pool.memory_mb):
            self.fail((*path, "memory_mb"), f"{quota.memory_mb} MiB is more than the "
                      f"{pool.memory_mb} MiB of pool {self.show(pool.name)}")
        if quota.gpus is not None and quota.gpus > pool.gpus:
            self.fail((*path, "gpus"), f"{quota.gpus} is more than the {pool.gpus} GPUs of "
                      f"pool {self.show(pool.name)}")

    def sums(self, pools: Mapping[str, Pool], teams: Mapping[str, Team]) -> None:
        """All teams' quotas in a pool must fit in it together. Reported at the pool, and only
        when each quota fits on its own, so one mistake reads as one problem."""
        for name, pool in pools.items():
            cap = pool.capacity
            owed = {team: t.quotas[name] for team, t in teams.items() if name in t.quotas}
            if not owed:
                continue
            checks = [("cpus", "CPUs", cap.cpus), ("memory_mb", "MiB", cap.memory_mb),
                      (self.gpu_key.get(name, "gpus"), "GPUs", cap.gpus)]
            for (key, unit, limit), field in zip(checks, ("cpus", "memory_mb", "gpus"),
                                                 strict=True):
                if limit is None:
                    continue
                amounts = {team: getattr(quota, field) for team, quota in owed.items()
                           if getattr(quota, field) is not None}
                total = sum(amounts.values())
                if total > limit + 1e-9 and all(a <= limit + 1e-9 for a in amounts.values()):
                    parts = ", ".join(f"{team} {amount:g}" for team, amount in amounts.items()
                                      if amount)
                    self.fail(("pools", name, key), f"the teams' quotas add up to {total:g} "
                              f"{unit} ({parts}), more than the pool's {limit:g}")
