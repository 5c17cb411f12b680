"""Interfaces to the service layer: gRPC now."""
