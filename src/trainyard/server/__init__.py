"""The server: the one place that wires stores, tracker, executors and adapters."""

from trainyard.server.assembly import ServerConfig, TrainyardServer

__all__ = ["ServerConfig", "TrainyardServer"]
