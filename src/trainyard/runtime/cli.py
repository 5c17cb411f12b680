"""`python3 -m trainyard.runtime VERB`: `launch` (the gang launcher), `run` (the agent of a
remote job), and two helpers for batch scripts, `free-port` and `slurm-hosts`."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence

from trainyard.runtime import gang

PROG = "python3 -m trainyard.runtime"


def main(argv: Sequence[str] | None = None) -> int:
    """One argument after `--` is a shell command; several are quoted into one."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["launch"]:
        return gang.main(args)  # the launcher parses its own options, as when run alone
    split = args.index("--") if "--" in args else len(args)
    options, words = args[:split], args[split + 1:]
    parser = _parser()
    parsed = parser.parse_args(options)
    if parsed.verb == "free-port":
        from trainyard.runtime.slurm import free_port

        try:
            print(free_port(parsed.span))
        except (OSError, ValueError) as exc:
            print(f"[trainyard runtime] {exc}", file=sys.stderr)
            return 70
        return 0
    if parsed.verb == "slurm-hosts":
        from trainyard.runtime.slurm import SlurmError, rank_hosts

        try:
            print(",".join(rank_hosts()))
        except SlurmError as exc:
            print(f"[trainyard runtime] {exc}", file=sys.stderr)
            return 70
        return 0
    if not words:
        parser.error("give the command to run after --")
    # Several words are one simple command: the shell execs it, so that the job itself gets
    # the signals and its exit status is the job's, with no shell in between.
    command = words[0] if len(words) == 1 else "exec " + shlex.join(words)
    from trainyard.runtime.agent import AgentOptions, run

    return run(command, AgentOptions(
        service=parsed.service, tls_ca=parsed.tls_ca, staging=parsed.staging,
        cache_dir=parsed.cache_dir, cache_mb=parsed.cache_mb, framework=parsed.framework,
        grace=parsed.grace, retry_for=parsed.retry_for))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG)
    sub = parser.add_subparsers(dest="verb", required=True)
    sub.add_parser("launch", help="run COMMAND as a group of workers on this machine "
                   "(see `launch --help`)", add_help=False)
    run = sub.add_parser("run", help="run COMMAND as one worker of a remote job: stage its "
                         "files, push its output to the service")
    run.add_argument("--service", required=True, help="HOST:PORT of the Trainyard server")
    run.add_argument("--tls-ca", default="", help="PEM file of the CA that signed the "
                     "server's certificate, or env:NAME, the variable holding it (TLS when "
                     "given)")
    run.add_argument("--staging", choices=("pull", "shared"), default="pull",
                     help="pull: fetch the dataset and checkpoint into --cache-dir; shared: "
                     "use the paths the environment names, on a filesystem every node mounts")
    run.add_argument("--cache-dir", default="/var/tmp/trainyard/{node}",
                     help="node-local directory for staged files; {node} is the node's name")
    run.add_argument("--cache-mb", type=int, default=20480,
                     help="size the dataset cache is trimmed to, least recently used first")
    run.add_argument("--framework", choices=gang.FRAMEWORKS, default="both",
                     help="which framework's worker variables to set")
    run.add_argument("--grace", type=float, default=10.0,
                     help="seconds between the TERM passed to the job and its KILL")
    run.add_argument("--retry-for", type=float, default=120.0,
                     help="seconds to keep retrying while the service cannot be reached")
    port = sub.add_parser("free-port", help="print a TCP port that is free on this host")
    port.add_argument("--span", type=int, default=1,
                      help="print P such that P .. P+SPAN-1 are all free")
    sub.add_parser("slurm-hosts", help="print the address of each rank's node in this Slurm "
                   "allocation, comma-separated")
    return parser
