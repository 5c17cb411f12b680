"""The use cases of the service: jobs, runs, models, datasets, access and policy. Each
takes its stores and a caller; the gRPC servicers (and any other adapter) sit on top."""
