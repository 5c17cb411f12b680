"""Fuzzing: generated requests over every RPC of TrainingService and AdminService, every HTTP
route and every CLI command, valid and invalid, as an admin, as members of two teams, with a
read-only, a revoked, an expired, a made-up and no token. Goals: no INTERNAL or UNKNOWN
status, no HTTP 5xx, no traceback (in the CLI's output or the server's log), and no change
made by a refused request."""

from __future__ import annotations

import collections
import json
import random
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from chaos.fuzzing.cli_calls import SKIPPED, CliFuzzer, commands
from chaos.fuzzing.grpc_calls import GrpcFuzzer, Outcome
from chaos.fuzzing.live import LiveServer, wait_until
from chaos.fuzzing.rest_calls import RestFuzzer
from chaos.fuzzing.store_snapshot import StoreSnapshot
from chaos.fuzzing.values import Pools, Values
from trainyard.v1 import training_pb2 as pb

SEED = 18
SHARES = (("grpc", 0.45), ("rest", 0.30), ("cli", 0.25))
PROCESS_EVERY = 50  # one CLI run in this many is a real process
FINAL = ("SUCCEEDED", "FAILED", "CANCELLED")
SHOWN = 25  # distinct findings listed in the result


class World:
    """The server, its users and tokens, and what the fuzzers aim at."""

    def __init__(self, server: LiveServer, workdir: Path) -> None:
        self.server = server
        self.workdir = workdir
        self.pools = Pools()
        self.tokens: dict[str, str] = {"admin": server.admin_token}
        self.acknowledged: set[str] = set()

    def build(self) -> None:
        channel = self.server.channel()
        admin = self.server.admin(channel)
        train = self.server.training(channel)
        meta = self.server.metadata()
        for user in ("alice", "bob"):
            admin.CreateUser(pb.CreateUserRequest(name=user), metadata=meta, timeout=10)
        for team, user in (("red", "alice"), ("blue", "bob")):
            admin.CreateTeam(pb.CreateTeamRequest(name=team), metadata=meta, timeout=10)
            admin.AddTeamMember(pb.AddTeamMemberRequest(team=team, user=user), metadata=meta,
                                timeout=10)

        def token(user: str, **kw: Any) -> pb.CreateTokenResponse:
            made: pb.CreateTokenResponse = admin.CreateToken(
                pb.CreateTokenRequest(user=user, **kw), metadata=meta, timeout=10)
            return made

        self.tokens["alice"] = token("alice").token
        self.tokens["alice-read-only"] = token("alice", read_only=True).token
        self.tokens["bob"] = token("bob").token
        revoked = token("bob")
        admin.RevokeToken(pb.RevokeTokenRequest(id=revoked.info.id), metadata=meta, timeout=10)
        self.tokens["revoked"] = revoked.token
        self.tokens["expired"] = token("alice", expires_in_seconds=1).token
        self.tokens["made-up"] = "ty_" + "0" * 40
        self.tokens["none"] = ""
        for _ in range(3):  # tokens a fuzzed RevokeToken may revoke
            self.pools.token_ids.append(token("bob").info.id)

        data = self.workdir / "dataset"
        data.mkdir(parents=True, exist_ok=True)
        (data / "train.csv").write_text("x,y\n1,2\n")
        version = train.RegisterDataset(pb.RegisterDatasetRequest(name="fuzzdata",
                                                                  path=str(data)),
                                        metadata=meta, timeout=30)
        self.pools.datasets.append(f"fuzzdata:{version.version}")
        self.pools.dataset_paths += [str(data), str(data / "train.csv"),
                                     str(self.workdir / "missing"), "", "relative/dir"]
        self.pools.dest_dirs.append(str(self.workdir / "downloads"))
        self.pools.users += ["alice", "bob", "root"]
        self.pools.teams += ["red", "blue"]
        self.pools.models.append("fuzzmodel")
        for owner, command in (("alice", 'echo w > "$MODEL_SAVE_PATH/w.txt"'),
                               ("bob", "true"), ("alice", "exit 3")):
            job = train.Train(pb.TrainRequest(name="fuzzmodel", command=command),
                              metadata=self.server.metadata(self.tokens[owner]), timeout=10)
            self.learn_job(job.job_id)

        def finished() -> bool:
            return all(pb.JobState.Name(train.GetTrainingStatus(
                pb.GetTrainingStatusRequest(job_id=j), metadata=meta, timeout=10).state)
                in FINAL for j in self.pools.job_ids)

        wait_until(finished, 60, 0.2)
        time.sleep(1.0)  # the expired token's second is over
        channel.close()

    def learn_job(self, job_id: str) -> None:
        self.acknowledged.add(job_id)
        self.pools.job_ids.append(job_id)
        self.pools.run_ids.append(f"{job_id}-1")

    def learn(self, rpc: str, reply: Any) -> None:
        """Grow the pools from a successful call's reply."""
        if rpc == "Train":
            self.learn_job(reply.job_id)
        elif rpc == "SubmitSweep":
            for job_id in reply.job_ids:
                self.acknowledged.add(job_id)
        elif rpc == "ReproduceRun":
            job_id = getattr(reply, "job_id", "")
            if job_id:
                self.acknowledged.add(job_id)
        elif rpc == "CreateUser" and len(self.pools.users) < 50:
            self.pools.users.append(reply.name)
        elif rpc == "CreateTeam" and len(self.pools.teams) < 50:
            self.pools.teams.append(reply.name)
        elif rpc == "CreateToken":
            self.pools.token_ids.append(reply.info.id)

    def callers(self) -> dict[str, tuple[tuple[str, str], ...]]:
        return {name: self.server.metadata(tok) if tok else () for name, tok in
                self.tokens.items()}


def run(workdir: Path, quick: bool, seed: int = SEED, requests: int | None = None
        ) -> dict[str, Any]:
    total = requests or (500 if quick else 10_000)
    rng = random.Random(seed)
    server = LiveServer(workdir / "server", max_concurrent=2)
    server.start()
    try:
        world = World(server, workdir)
        world.build()
        return _fuzz(world, rng, total, seed, quick)
    finally:
        server.stop()


def _fuzz(world: World, rng: random.Random, total: int, seed: int,
          quick: bool) -> dict[str, Any]:
    server = world.server
    values = Values(rng, world.pools)
    store = StoreSnapshot(server.data_dir / "trainyard.db")
    channel = server.channel()
    fuzzers = {
        "grpc": GrpcFuzzer(channel, values, world.callers(), store, world.learn),
        "rest": RestFuzzer(server.http_port, values, dict(world.tokens), store),
        "cli": CliFuzzer(values, server.address, dict(world.tokens), world.workdir / "cli"),
    }
    cli: CliFuzzer = fuzzers["cli"]  # type: ignore[assignment]
    outcomes: list[Outcome] = []
    started = time.monotonic()
    cli_runs = 0
    for _ in range(total):
        surface = rng.choices([s for s, _ in SHARES], [w for _, w in SHARES])[0]
        if surface == "cli":
            cli_runs += 1
            outcomes.append(cli.one(as_process=cli_runs % PROCESS_EVERY == 0))
        else:
            outcomes.append(fuzzers[surface].one())  # type: ignore[attr-defined]
    elapsed = time.monotonic() - started
    fuzzers["rest"].close()  # type: ignore[attr-defined]
    channel.close()
    lost, stuck = _check_jobs(server, world.acknowledged)
    store.close()
    return _summary(outcomes, server, world, seed, quick, elapsed, lost, stuck)


def _check_jobs(server: LiveServer, acknowledged: set[str]) -> tuple[int, int]:
    """Acknowledged jobs missing from the store, and jobs left LAUNCHING or PREEMPTED once
    the queue is quiet."""
    db = server.data_dir / "trainyard.db"

    def states() -> dict[str, str]:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
            return dict(conn.execute("SELECT id, state FROM jobs").fetchall())

    wait_until(lambda: not any(s in ("LAUNCHING", "RUNNING", "PREEMPTED")
                               for s in states().values()), 60, 0.5)
    found = states()
    lost = sum(1 for j in acknowledged if j not in found)
    stuck = sum(1 for s in found.values() if s in ("LAUNCHING", "PREEMPTED"))
    return lost, stuck


def _summary(outcomes: list[Outcome], server: LiveServer, world: World, seed: int,
             quick: bool, elapsed: float, lost: int, stuck: int) -> dict[str, Any]:
    by_surface = collections.Counter(o.surface for o in outcomes)
    statuses: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for o in outcomes:
        statuses[o.surface.split("-")[0]][o.status] += 1
    # How often each RPC, route and command was tried and answered without refusal.
    tried: dict[str, list[int]] = {}
    for o in outcomes:
        counts = tried.setdefault(f"{o.surface.split('-')[0]} {o.name}", [0, 0])
        counts[0] += 1
        counts[1] += o.status in ("OK", "200", "201", "0")
    internal = [o for o in outcomes if o.internal]
    tracebacks = [o for o in outcomes if o.traceback]
    # An option's value too large for its field or for a date: range checks of the CLI answer
    # these.
    out_of_range = [o for o in tracebacks if "Value out of range" in o.traceback or
                    "OverflowError" in o.traceback]
    changes = [o for o in outcomes if o.changes]
    findings: dict[str, dict[str, Any]] = {}
    for o in internal + tracebacks + changes:
        kind = "internal" if o.internal else "traceback" if o.traceback else "change"
        last = o.traceback.strip().splitlines()[-1][:160] if o.traceback else \
            ",".join(o.changes) if o.changes else o.status
        key = f"{kind} {o.surface} {o.name}: {last}"
        entry = findings.setdefault(key, {"count": 0, "example": o.detail[:700]})
        entry["count"] += 1
    server_tracebacks = server.log_tracebacks()
    return {
        "jobs": len(world.acknowledged),
        "lost": lost,
        "duplicated": 0,  # one request id, one job: each Train reply is a job read back
        "stuck": stuck,
        "seed": seed,
        "requests": len(outcomes),
        "by_surface": dict(by_surface),
        "requests_per_s": round(len(outcomes) / elapsed, 1) if elapsed else None,
        "internal_errors": len(internal),
        "tracebacks_cli": len(tracebacks),
        "tracebacks_cli_out_of_range_values": len(out_of_range),
        "tracebacks_server_log": server_tracebacks,
        "rejected_with_changes": len(changes),
        "statuses": {s: dict(c.most_common()) for s, c in statuses.items()},
        "accepted_of_tried": {k: f"{v[1]}/{v[0]}" for k, v in sorted(tried.items())},
        "cli_commands": len(commands()),
        "cli_skipped": list(SKIPPED),
        "findings": dict(sorted(findings.items(), key=lambda kv: -kv[1]["count"])[:SHOWN]),
        "quick": quick,
    }


if __name__ == "__main__":
    import tempfile

    def flag(name: str) -> int | None:
        return next((int(a.split("=")[1]) for a in sys.argv if a.startswith(name)), None)

    count, seed = flag("--requests="), flag("--seed=")
    with tempfile.TemporaryDirectory(prefix="chaos-fuzz-") as tmp:
        print(json.dumps(run(Path(tmp), quick="--quick" in sys.argv, requests=count,
                             seed=SEED if seed is None else seed),
                         indent=2, default=str))
