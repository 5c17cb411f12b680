"""The gRPC server: the interceptor that authenticates every call, the servicers over the
use cases (the users' two, and the job runtime's), health checking and reflection."""

from __future__ import annotations

from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from trainyard.api.admin_service import AdminServicer
from trainyard.api.auth import AuthInterceptor
from trainyard.api.grpc_service import TrainingServicer
from trainyard.api.runtime_servicer import JobRuntimeServicer
from trainyard.api.runtime_servicer import add_to_server as add_runtime_servicer
from trainyard.api.sample_servicer import SAMPLE_SERVICE_NAME, SampleTrainingServicer
from trainyard.api.sample_servicer import add_to_server as add_sample_servicer
from trainyard.services.bundle import Services
from trainyard.v1 import runtime_pb2
from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["TrainingService"].full_name
ADMIN_SERVICE_NAME = pb.DESCRIPTOR.services_by_name["AdminService"].full_name
RUNTIME_SERVICE_NAME = runtime_pb2.DESCRIPTOR.services_by_name["JobRuntime"].full_name


class UserServicers:
    """The servicers of the users' two services, shared by gRPC and the HTTP API, and the
    interceptor that checks every caller of both."""

    def __init__(self, services: Services) -> None:
        self.callers = AuthInterceptor(services.access, services.runtime)
        self.training = TrainingServicer(services)
        self.admin = AdminServicer(services.access, services.history)

    def by_service(self) -> dict[str, object]:
        return {SERVICE_NAME: self.training, ADMIN_SERVICE_NAME: self.admin}


class GrpcServer:
    def __init__(self, services: Services, servicers: UserServicers, workers: int) -> None:
        self.health = health.HealthServicer()
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grpc"),
            options=[("grpc.so_reuseport", 0)],
            interceptors=[servicers.callers],
        )
        pb_grpc.add_TrainingServiceServicer_to_server(servicers.training, self.server)
        pb_grpc.add_AdminServiceServicer_to_server(servicers.admin, self.server)
        add_runtime_servicer(JobRuntimeServicer(services.runtime), self.server)
        # The sample training service's two RPCs, for its existing clients (same port).
        add_sample_servicer(SampleTrainingServicer(services.sample), self.server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, ADMIN_SERVICE_NAME, RUNTIME_SERVICE_NAME, SAMPLE_SERVICE_NAME,
             health.SERVICE_NAME,
             reflection.SERVICE_NAME), self.server)

    def bind(self, address: str, credentials: grpc.ServerCredentials | None) -> int:
        """Listen on address (TLS with credentials); the bound port, 0 if it could not."""
        if credentials is None:
            return int(self.server.add_insecure_port(address))
        return int(self.server.add_secure_port(address, credentials))

    def start(self) -> None:
        self.server.start()
        for name in ("", SERVICE_NAME):
            self.health.set(name, health_pb2.HealthCheckResponse.SERVING)

    def stop(self, grace: float) -> None:
        self.health.enter_graceful_shutdown()
        self.server.stop(grace).wait()

    def wait(self) -> None:
        self.server.wait_for_termination()
