"""`trainyard admin ...`: users, teams, tokens and queue access through the server with an
admin's token; `bootstrap` and `gen-cert` work offline."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from trainyard.cli.common import ARGUMENTS, OutputOpt, ServerOpt, client_for, duration
from trainyard.cli.output import Output, console, errors, print_json

admin_app = typer.Typer(help="Users, teams, API tokens and queue access (an admin's token), "
                        "plus the offline first admin and a trial TLS certificate.",
                        no_args_is_help=True)
users_app = typer.Typer(help="Create and list users.", no_args_is_help=True)
teams_app = typer.Typer(help="Create teams and add members.", no_args_is_help=True)
tokens_app = typer.Typer(help="Issue, list and revoke API tokens.", no_args_is_help=True)
queues_app = typer.Typer(help="Who may submit to which queue.", no_args_is_help=True)
admin_app.add_typer(users_app, name="users")
admin_app.add_typer(teams_app, name="teams")
admin_app.add_typer(tokens_app, name="tokens")
admin_app.add_typer(queues_app, name="queues")

def parse_duration(text: str) -> int:
    """'90m', '12h', '30d', '2w' in whole seconds; a BadParameter naming the option
    otherwise."""
    return math.ceil(duration(text, "--expires-in"))


def _show(value: Any, output: Output, text: str) -> None:
    if output is Output.json:
        print_json(value)
    else:
        console.print(text, highlight=False)


def _listing(found: list[dict[str, Any]], output: Output, columns: list[str],
             row: Callable[[dict[str, Any]], list[str]]) -> None:
    """A list as JSON for scripts, or as a table of `row(item)` for people."""
    if output is Output.json:
        print_json(found)
        return
    table = Table(*columns)
    for item in found:
        table.add_row(*(escape(cell) for cell in row(item)))
    console.print(table)


# --- offline --------------------------------------------------------------------------------

@admin_app.command()
def bootstrap(
    name: Annotated[str, typer.Argument(help="The first admin's user name.")],
    data_dir: Annotated[Path, typer.Option(help="The server's data dir (SQLite store).")] =
        Path(".trainyard"),
    database_url: Annotated[str, typer.Option(
        envvar="TRAINYARD_DATABASE_URL", help="postgresql://... instead of SQLite.")] = "",
    output: OutputOpt = Output.text,
) -> None:
    """Create the first admin directly in the store and print their token (shown once).
    From then on the server asks every call for a token."""
    from sqlalchemy.exc import SQLAlchemyError

    from trainyard.domain.errors import TrainyardError
    from trainyard.server.offline import bootstrap_admin

    try:
        created = bootstrap_admin(data_dir, database_url, name)
    except TrainyardError as exc:
        errors.print(f"[red]error[/]: {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None
    except (OSError, SQLAlchemyError) as exc:  # the data dir or the database is not there
        where = database_url.split("@")[-1] if database_url else str(data_dir)
        errors.print(f"[red]error[/]: cannot open the store at {escape(where)}: "
                     f"{escape(str(getattr(exc, 'orig', None) or exc).splitlines()[0])}",
                     highlight=False)
        raise typer.Exit(1) from None
    if output is Output.json:
        print_json({"user": name, "token_id": created.record.id, "token": created.token})
        return
    errors.print(f"admin {name!r} created; their token (shown once, keep it secret):",
                 highlight=False)
    print(created.token)


@admin_app.command("gen-cert")
def gen_cert(
    out: Annotated[Path, typer.Option(help="Directory for server.crt and server.key.")] =
        Path(".trainyard/tls"),
    host: Annotated[list[str] | None, typer.Option(
        help="A name or address clients connect to (repeatable) [default: localhost, "
        "127.0.0.1].")] = None,
    days: Annotated[int, typer.Option(help="Validity in days.")] = 365,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing pair.")] = False,
) -> None:
    """Make a self-signed certificate and key for trials of TLS. Clients trust it with
    TRAINYARD_CA_CERT=<out>/server.crt."""
    from trainyard.auth.certs import CertError, generate_self_signed

    try:
        pair = generate_self_signed(out, tuple(host or ("localhost", "127.0.0.1")), days,
                                    overwrite=overwrite)
    except CertError as exc:
        errors.print(f"[red]error[/]: {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None
    console.print(f"certificate {pair.cert}\nkey         {pair.key} (mode 0600)\n"
                  f"serve with:  trainyard server --tls-cert {pair.cert} --tls-key {pair.key}"
                  f"\ntrust with:  export TRAINYARD_CA_CERT={pair.cert}", highlight=False)


# --- users and teams ------------------------------------------------------------------------

@users_app.command("create")
def users_create(name: str,
                 admin: Annotated[bool, typer.Option("--admin", help="An administrator.")] =
                     False,
                 server: ServerOpt = None, output: OutputOpt = Output.text) -> None:
    """Create a user (a member unless --admin)."""
    with client_for(server, ARGUMENTS) as client:
        user = client.create_user(name, admin=admin)
    _show(user, output, f"created {'admin' if admin else 'member'} {name}")


@users_app.command("list")
def users_list(server: ServerOpt = None, output: OutputOpt = Output.text) -> None:
    with client_for(server, ARGUMENTS) as client:
        found = client.list_users()
    _listing(found, output, ["USER", "ROLE", "TEAMS"], lambda u: [
        u["name"], "admin" if u["admin"] else "member", ", ".join(u["teams"])])


@teams_app.command("create")
def teams_create(name: str, server: ServerOpt = None,
                 output: OutputOpt = Output.text) -> None:
    with client_for(server, ARGUMENTS) as client:
        team = client.create_team(name)
    _show(team, output, f"created team {name}")


@teams_app.command("add-member")
def teams_add_member(team: str, user: str, server: ServerOpt = None,
                     output: OutputOpt = Output.text) -> None:
    with client_for(server, ARGUMENTS) as client:
        updated = client.add_team_member(team, user)
    _show(updated, output, f"team {team}: {', '.join(updated['members'])}")


@teams_app.command("list")
def teams_list(server: ServerOpt = None, output: OutputOpt = Output.text) -> None:
    with client_for(server, ARGUMENTS) as client:
        found = client.list_teams()
    _listing(found, output, ["TEAM", "MEMBERS"],
             lambda t: [t["name"], ", ".join(t["members"])])


# --- tokens ---------------------------------------------------------------------------------

@tokens_app.command("create")
def tokens_create(
    user: str,
    expires_in: Annotated[str | None, typer.Option(
        help="Lifetime, e.g. 12h, 30d, 2w [default: never expires].")] = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="May read, never change.")] =
        False,
    server: ServerOpt = None, output: OutputOpt = Output.text,
) -> None:
    """Issue a token for USER and print it (shown once; only its hash is stored)."""
    seconds = parse_duration(expires_in) if expires_in is not None else 0
    with client_for(server, ARGUMENTS) as client:
        created = client.create_token(user, expires_in_seconds=seconds, read_only=read_only)
    if output is Output.json:
        print_json(created)
        return
    info = created["info"]
    errors.print(f"token {info['id']} for {user}"
                 f"{' (read-only)' if read_only else ''}"
                 f"{', expires ' + info['expires_at'] if info.get('expires_at') else ''}; "
                 "shown once:", highlight=False)
    print(created["token"], file=sys.stdout)


@tokens_app.command("list")
def tokens_list(user: Annotated[str, typer.Argument(help="Only this user's tokens.")] = "",
                server: ServerOpt = None, output: OutputOpt = Output.text) -> None:
    with client_for(server, ARGUMENTS) as client:
        found = client.list_tokens(user)
    _listing(found, output, ["ID", "USER", "SCOPE", "EXPIRES", "REVOKED"], lambda t: [
        t["id"], t["user"], "read-only" if t["read_only"] else "read-write",
        t.get("expires_at") or "never", t.get("revoked_at") or ""])


@tokens_app.command("revoke")
def tokens_revoke(token_id: Annotated[str, typer.Argument(metavar="ID")],
                  server: ServerOpt = None, output: OutputOpt = Output.text) -> None:
    """Revoke a token by the id `tokens list` shows; it stops working at once."""
    with client_for(server, ARGUMENTS) as client:
        info = client.revoke_token(token_id)
    _show(info, output, f"revoked token {token_id} of {info['user']}")


# --- queues and audit -----------------------------------------------------------------------

@queues_app.command("set")
def queues_set(
    queue: str,
    user: Annotated[list[str] | None, typer.Option(help="A user who may submit "
                                                        "(repeatable).")] = None,
    team: Annotated[list[str] | None, typer.Option(help="A team whose members may submit "
                                                        "(repeatable).")] = None,
    server: ServerOpt = None, output: OutputOpt = Output.text,
) -> None:
    """Restrict QUEUE to these users and teams; with neither, open it to everyone."""
    with client_for(server, ARGUMENTS) as client:
        acl = client.set_queue_access(queue, users=user or [], teams=team or [])
    who = ", ".join([*acl["users"], *(f"team {t}" for t in acl["teams"])]) or "everyone"
    _show(acl, output, f"queue {queue} takes jobs from {who}")


@queues_app.command("list")
def queues_list(server: ServerOpt = None, output: OutputOpt = Output.text) -> None:
    """Queues with restricted access; any other queue is open to every user."""
    with client_for(server, ARGUMENTS) as client:
        found = client.list_queue_access()
    _listing(found, output, ["QUEUE", "USERS", "TEAMS"],
             lambda q: [q["queue"], ", ".join(q["users"]), ", ".join(q["teams"])])


@admin_app.command()
def audit(limit: Annotated[int, typer.Option(help="How many events, newest first.")] = 50,
          server: ServerOpt = None, output: OutputOpt = Output.text) -> None:
    """Administrative actions and refused requests."""
    with client_for(server, ARGUMENTS) as client:
        events = client.list_audit(limit)
    _listing(events, output, ["TIME", "ACTOR", "ACTION", "TARGET", "OUTCOME", "DETAIL"],
             lambda e: [e["time"][:19], e["actor"], e["action"], e["target"],
                        "done" if e["allowed"] else "refused", e["detail"]])
