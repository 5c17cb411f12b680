"""Entry point: `trainyard COMMAND`. Every command but `server`, `admin bootstrap`, `images`
and `sim` goes through the SDK; those import what they need inside the command, so that a
client command loads nothing of the server."""

from __future__ import annotations

import typer

from trainyard.cli import jobs, login
from trainyard.cli.admin import admin_app
from trainyard.cli.algorithms import algorithms_app
from trainyard.cli.datasets import datasets_app
from trainyard.cli.history import history_app
from trainyard.cli.images import images_app
from trainyard.cli.models import models_app
from trainyard.cli.runs import runs_app
from trainyard.cli.server import server
from trainyard.cli.sim import sim as sim_command
from trainyard.cli.sweeps import sweeps_app

app = typer.Typer(help="Trainyard: submit, queue, run and track training jobs.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
app.add_typer(datasets_app, name="datasets")  # cli/datasets.py
app.add_typer(images_app, name="images")  # cli/images.py
app.add_typer(admin_app, name="admin")  # cli/admin.py
app.command("sim")(sim_command)  # cli/sim.py
app.add_typer(history_app, name="history")  # cli/history.py
app.add_typer(runs_app, name="runs")  # cli/runs.py
app.add_typer(models_app, name="models")  # cli/models.py
app.add_typer(algorithms_app, name="algorithms")  # cli/algorithms.py
app.add_typer(sweeps_app, name="sweeps")  # cli/sweeps.py
app.command()(server)  # cli/server.py
app.command()(jobs.submit)  # cli/jobs.py
app.command()(jobs.sweep)
app.command()(jobs.status)
app.command("list")(jobs.list_jobs)
app.command()(jobs.logs)
app.command()(jobs.cancel)
app.command()(jobs.watch)
app.command()(jobs.queues)
app.command()(login.whoami)  # cli/login.py
app.command()(login.login)


if __name__ == "__main__":
    app()
