"""Adapters over the use cases (trainyard.services): gRPC now. Each converts the wire
format, makes one service call and maps its errors."""
