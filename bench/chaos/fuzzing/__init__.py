"""The fuzzing scenario's parts: a live server to aim at, request generators from the
message descriptors, the REST routes and the CLI's commands, and the checks of each reply."""
