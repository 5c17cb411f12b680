"""Real engines started on this machine for tests, benchmarks and demos (standard library
only, nothing of Trainyard's): never imported by the service itself."""
