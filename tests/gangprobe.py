"""The program both ranks of a two-worker test job run: rank 0 listens on
MASTER_ADDR:MASTER_PORT, rank 1 connects, and each prints `SEEN {json}` with the worker
variables it was given and what it heard; then `then` runs."""

from __future__ import annotations

import json

WORKER_VARS = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TF_CONFIG",
               "CUDA_VISIBLE_DEVICES")


def rendezvous_probe(extra_vars: tuple[str, ...] = (), seen: str = "", then: str = "") -> str:
    """`seen`: lines that add to `env` before it is printed."""
    names = ", ".join(repr(name) for name in WORKER_VARS + extra_vars)
    return f'''
import json, os, socket, time
env = {{k: os.environ.get(k) for k in ({names})}}
rank, addr, port = int(env["RANK"]), env["MASTER_ADDR"], int(env["MASTER_PORT"])
if rank == 0:
    with socket.create_server((addr, port)) as server:
        server.settimeout(20)
        conn, _ = server.accept()
        with conn:
            heard = conn.recv(100).decode()
            conn.sendall(b"welcome, " + heard.encode())
else:
    deadline = time.monotonic() + 20
    while True:
        try:
            conn = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    with conn:
        conn.sendall(b"rank 1")
        heard = conn.recv(100).decode()
env["heard"] = heard
{seen}
print("SEEN " + json.dumps(env), flush=True)
{then}
'''


def ranks_seen(log: str) -> dict[int, dict[str, str]]:
    """What each rank printed in the job's log, checked to be the pair that met."""
    seen: dict[int, dict[str, str]] = {}
    for line in log.splitlines():
        prefix, _, rest = line.partition(" SEEN ")
        if rest:
            env = json.loads(rest)
            assert prefix == f"[rank {env['RANK']}]"
            seen[int(env["RANK"])] = env
    assert sorted(seen) == [0, 1], log
    assert seen[0]["heard"] == "rank 1" and seen[1]["heard"] == "welcome, rank 1"
    return seen
