"""`trainyard whoami` and `trainyard login`: who the server takes you for, and saving the
server, token and CA certificate for later commands."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from trainyard.cli.common import OutputOpt, ServerOpt, client_for
from trainyard.cli.output import Output, console, errors, print_json


def whoami(server: ServerOpt = None, output: OutputOpt = Output.text) -> None:
    """Who the server takes you for: user, role, teams, and the token's scope."""
    with client_for(server) as client:
        who = client.whoami()
    if output is Output.json:
        print_json(who)
        return
    if who["single_user"]:
        console.print("single-user mode: no users yet, every local call acts as an admin",
                      highlight=False)
        return
    role = "admin" if who["admin"] else "member"
    scope = "read-only" if who["read_only"] else "read-write"
    teams = ", ".join(who["teams"]) or "no team"
    console.print(f"{escape(who['user'])} ({role}; {teams}; {scope} token {who['token_id']})",
                  highlight=False)


def login(
    server: ServerOpt = None,
    ca_cert: Annotated[str, typer.Option(envvar="TRAINYARD_CA_CERT",
                                         help="PEM file the server's certificate is trusted "
                                         "by (TLS).")] = "",
) -> None:
    """Save the server, a token (asked for, not echoed) and the CA certificate to
    ~/.trainyard/config.toml (mode 0600), after checking the token with the server."""
    from trainyard.client import Client, TrainyardError, credentials

    token = typer.prompt("token", hide_input=True).strip()
    try:
        with Client(server, token=token, ca_cert=ca_cert or None) as client:
            who = client.whoami()
            address = client.server
    except TrainyardError as exc:
        errors.print(f"[red]error[/] ({exc.code}): {escape(exc.message)}", highlight=False)
        raise typer.Exit(1) from None
    path = credentials.save(credentials.Credentials(server=address, token=token,
                                                    ca_cert=ca_cert))
    console.print(f"logged in to {address} as {escape(who['user'])}; saved to {path}",
                  highlight=False)
