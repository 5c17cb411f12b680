"""Values at and beyond the limits of each kind of field: integers at the edges of their width,
floats that are not numbers, strings of every Unicode class, empty and long, and names the
world already holds (so some requests reach past validation)."""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
UINT64 = (0, 2**64 - 1)

# One sample of each Unicode class a name or a label may meet, and some that are trouble.
UNICODE = (
    "é", "ß", "Ω", "Ж", "中文", "日本語", "한국어", "עברית", "العربية", "हिन्दी", "ไทย",
    "🚂", "👩‍🔬", "🏳️‍🌈", "\u200b", "\u200d", "\u202e", "\ufeff", "\u00a0", "\u3000",
    "\x00", "\x07", "\x1b[31m", "\t", "\n", "\r\n", "\x7f", "\u0085", "\u2028",
    "\U0010ffff", "\ufffd", "e\u0301", "ﬁ", "Ⅻ", "𝔘𝔫𝔦", "İ", "ǅ",
)
TRICKY = ("", " ", "-", "--", ".", "..", "../../etc/passwd", "/", "%s%n", "{}", "[]",
          "null", "None", "true", "0", "-1", "'; DROP TABLE jobs; --", "<script>x</script>",
          "a" * 129, "a" * 1025, "*", "?", "#", "%2F", "a/b", "a:b", "a=b", "a,b", "=", ",")
# Commands a generated request may run if accepted: harmless, however they are mangled.
SAFE_COMMANDS = ("true", "false", "exit 3", "echo fuzz", "", "true # é 🚂 \u202e", "sleep 0.2",
                 "true " + "#" * 2000)
HUGE_STRING_BYTES = 1_000_000
# How often each caller makes a request: mostly ones who may, so requests get past the door.
CALLER_WEIGHTS = {"admin": 25, "alice": 25, "bob": 15, "alice-read-only": 10, "revoked": 5,
                  "expired": 5, "made-up": 5, "none": 10}


@dataclass
class Pools:
    """What the world holds, by the kind of name a field takes."""

    job_ids: list[str] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    teams: list[str] = field(default_factory=list)
    # Not "default": a request that closed it to others would refuse the rest their submits.
    queues: list[str] = field(default_factory=lambda: ["fuzz-q", "other-q"])
    datasets: list[str] = field(default_factory=list)  # "name:version"
    dataset_paths: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    token_ids: list[str] = field(default_factory=list)  # ones that may be revoked
    dest_dirs: list[str] = field(default_factory=list)


class Values:
    def __init__(self, rng: random.Random, pools: Pools) -> None:
        self.rng = rng
        self.pools = pools

    def caller(self, names: list[str]) -> str:
        return self.rng.choices(names, [CALLER_WEIGHTS.get(n, 5) for n in names])[0]

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def integer(self, low: int, high: int) -> int:
        """Mostly at or next to an edge; sometimes beyond it (the caller decides whether the
        field can hold it)."""
        r = self.rng
        return r.choice((0, 1, -1, 2, low, high, low + 1, high - 1, r.randint(-100, 100),
                         r.randint(low, high), 10**9, -(10**9), 99, 100, 1000, 1001))

    def huge_integer(self) -> int:
        return self.rng.choice((2**31, -(2**31) - 1, 2**63, -(2**63) - 1, 2**64,
                                10**20, -(10**20), 99999999999999999999))

    def real(self) -> float:
        return self.rng.choice((0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, -1e-300, 1e308, -1e308,
                                float("inf"), float("-inf"), float("nan"), 3.4e38, 1e-45,
                                self.rng.uniform(-1e6, 1e6)))

    def text(self, hint: str = "") -> str:
        """A string for a field named `hint`: a known name of that kind, or something
        strange."""
        r = self.rng
        known = self._known(hint)
        if known and r.random() < 0.45:
            value = r.choice(known)
            return value + r.choice(UNICODE) if r.random() < 0.1 else value
        roll = r.random()
        if roll < 0.25:
            return r.choice(TRICKY)
        if roll < 0.5:
            return "".join(r.choice(UNICODE) for _ in range(r.randint(1, 6)))
        if roll < 0.53:
            return r.choice(("x", "é", "🚂")) * r.randint(HUGE_STRING_BYTES // 4,
                                                         HUGE_STRING_BYTES)
        if roll < 0.6:
            return "".join(r.choice(string.printable) for _ in range(r.randint(1, 300)))
        return "".join(r.choice(string.ascii_lowercase + string.digits + "-_.")
                       for _ in range(r.randint(1, 40)))

    def _known(self, hint: str) -> list[str]:
        p = self.pools
        name = hint.lower()
        if name in ("command",):
            return list(SAFE_COMMANDS)
        if name in ("path",):
            return p.dataset_paths
        if name in ("dest",):
            return p.dest_dirs
        table = (
            ("run_id", p.run_ids), ("job_id", p.job_ids), ("job", p.job_ids),
            ("user", p.users), ("owner", p.users), ("principal", p.users + p.teams),
            ("team", p.teams), ("queue", p.queues), ("dataset", p.datasets),
            ("model", p.models), ("token_id", p.token_ids), ("id", p.token_ids + p.job_ids),
            ("name", p.users + p.teams + p.models + [d.split(":")[0] for d in p.datasets]),
            ("version", [d.split(":")[-1] for d in p.datasets] + ["1", "2"]),
            ("alias", ["prod", "staging", "latest"]), ("image", ["trainyard/base:latest"]),
            ("framework", ["pytorch", "tensorflow", "none"]),
            ("git_commit", ["0123456789abcdef", "deadbeef"]),
        )
        for key, pool in table:
            if name == key or name.endswith("_" + key):
                return pool
        return []

    def safe_command(self) -> str:
        return self.rng.choice(SAFE_COMMANDS)
