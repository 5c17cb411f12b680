"""The algorithm RPCs of TrainingService: wire format in, service call, wire format out.
TrainingServicer inherits them."""

from __future__ import annotations

from collections.abc import Iterator

import grpc

from trainyard.api import convert_algorithms as conv
from trainyard.api.auth import current_identity
from trainyard.api.errors import grpc_errors
from trainyard.services.algorithms import AlgorithmService
from trainyard.v1 import training_pb2 as pb


class AlgorithmServicer:
    algorithms: AlgorithmService

    @grpc_errors
    def RegisterAlgorithm(self, request_iterator: Iterator[pb.AlgorithmUpload],
                          context: grpc.ServicerContext) -> pb.AlgorithmVersion:
        registration, chunks = conv.split_upload(request_iterator)
        version, created = self.algorithms.register(current_identity(), registration, chunks)
        return conv.version_to_pb(version, created)

    @grpc_errors
    def ListAlgorithms(self, request: pb.ListAlgorithmsRequest,
                       context: grpc.ServicerContext) -> pb.ListAlgorithmsResponse:
        found = self.algorithms.list(current_identity())
        return pb.ListAlgorithmsResponse(algorithms=[conv.summary_to_pb(s) for s in found])

    @grpc_errors
    def GetAlgorithm(self, request: pb.GetAlgorithmRequest,
                     context: grpc.ServicerContext) -> pb.Algorithm:
        return conv.detail_to_pb(self.algorithms.get(current_identity(), request.name))

    @grpc_errors
    def SetAlgorithmAlias(self, request: pb.SetAlgorithmAliasRequest,
                          context: grpc.ServicerContext) -> pb.SetAlgorithmAliasResponse:
        version, previous = self.algorithms.set_alias(current_identity(), request.name,
                                                      request.alias, request.version)
        return pb.SetAlgorithmAliasResponse(name=request.name, alias=request.alias,
                                            version=version, previous_version=previous or 0)

    @grpc_errors
    def DeleteAlgorithm(self, request: pb.DeleteAlgorithmRequest,
                        context: grpc.ServicerContext) -> pb.DeleteAlgorithmResponse:
        record = self.algorithms.delete(current_identity(), request.name, request.version)
        return pb.DeleteAlgorithmResponse(algorithm=conv.version_to_pb(record))
