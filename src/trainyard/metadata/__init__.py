"""Datasets, metrics, artifacts: the files behind each run and their records."""
