"""The server: the one place that wires stores, tracker, executors and adapters."""

from trainyard.server.assembly import TrainyardServer
from trainyard.server.config import ServerConfig

__all__ = ["ServerConfig", "TrainyardServer"]
