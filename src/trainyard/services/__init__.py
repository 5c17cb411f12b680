"""The use cases of the service: jobs, sweeps, runs, models, datasets, access, policy and
images. Each takes its stores and a caller and decides visibility and authorization itself;
the gRPC servicers (and any other adapter) only convert and call. The server's assembly
(trainyard.server) builds them."""
