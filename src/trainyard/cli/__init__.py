"""The `trainyard` command line, built on trainyard.client."""
