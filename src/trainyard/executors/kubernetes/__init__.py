"""The Kubernetes executor: one module per concern (the resources, their manifests, what
their conditions say, the API calls, the watch), assembled in `executor`. Only `api`,
`watcher` and `executor` load the official `kubernetes` client: a server loads them when it
has Kubernetes pools."""
