"""Trainyard: a self-hosted model training service."""

__version__ = "0.1.0"
