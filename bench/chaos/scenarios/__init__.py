"""One module per scenario, each with `run(workdir, quick) -> dict`."""
