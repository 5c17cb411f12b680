"""The HTTP face of the service: the JSON API (the gRPC API transcoded, one route per RPC),
the dashboard's pages and files, and the Prometheus metrics, on one ASGI app."""
