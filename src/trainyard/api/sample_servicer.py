"""The sample training service's servicer (`training.TrainingService`): its wire format in,
one use case call, its wire format out. Errors are mapped as the main API's are."""

from __future__ import annotations

import grpc

from trainyard.api.auth import current_identity
from trainyard.api.errors import grpc_errors
from trainyard.services.sample import SampleMetadata, SampleService, SampleStatus
from trainyard.v1 import sample_pb2 as pb
from trainyard.v1 import sample_pb2_grpc as pb_grpc

SAMPLE_SERVICE_NAME = pb.DESCRIPTOR.services_by_name["TrainingService"].full_name


def metadata_from_pb(request: pb.TrainRequest) -> SampleMetadata | None:
    if not request.HasField("metadata"):
        return None
    m = request.metadata
    return SampleMetadata(algorithm=m.algorithm, dataset_id=m.dataset_id, name=m.name,
                          train_data_version_hash=m.train_data_version_hash,
                          parameters=dict(m.parameters))


def status_to_pb(status: SampleStatus) -> pb.GetTrainingStatusResponse:
    m = status.metadata
    return pb.GetTrainingStatusResponse(
        status=int(status.state), job_id=status.job_id, message=status.message,
        metadata=pb.TrainingJobMetadata(
            algorithm=m.algorithm, dataset_id=m.dataset_id, name=m.name,
            train_data_version_hash=m.train_data_version_hash, parameters=m.parameters),
        positionInQueue=status.position)


class SampleTrainingServicer(pb_grpc.TrainingServiceServicer):
    def __init__(self, sample: SampleService) -> None:
        self.sample = sample

    @grpc_errors
    def Train(self, request: pb.TrainRequest, context: grpc.ServicerContext
              ) -> pb.TrainResponse:
        return pb.TrainResponse(job_id=self.sample.train(current_identity(),
                                                         metadata_from_pb(request)))

    @grpc_errors
    def GetTrainingStatus(self, request: pb.GetTrainingStatusRequest,
                          context: grpc.ServicerContext) -> pb.GetTrainingStatusResponse:
        return status_to_pb(self.sample.status(current_identity(), request.job_id))


def add_to_server(servicer: SampleTrainingServicer, server: grpc.Server) -> None:
    pb_grpc.add_TrainingServiceServicer_to_server(servicer, server)
