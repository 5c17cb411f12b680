"""Trace replay: the live scheduler under a simulated clock and executor."""
