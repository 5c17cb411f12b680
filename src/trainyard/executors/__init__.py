"""Backends that run jobs, behind one small protocol (executors.base.Executor)."""
