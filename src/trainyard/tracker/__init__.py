"""The control loop: snapshot -> scheduler -> executors -> store."""

from trainyard.tracker.loop import Tracker, TrackerConfig

__all__ = ["Tracker", "TrackerConfig"]
