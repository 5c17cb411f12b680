"""Real engines started on this machine for tests, benchmarks and demos (standard library
only, but for the official kubernetes client that sets up the Kubernetes API server;
nothing of Trainyard's): never imported by the service itself."""
