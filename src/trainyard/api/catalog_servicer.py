"""The runs, models and lineage RPCs of TrainingService: wire format in, service call,
wire format out. TrainingServicer inherits them."""

from __future__ import annotations

from collections.abc import Iterator

import grpc

from trainyard.api import convert_runs as conv
from trainyard.api.auth import current_identity
from trainyard.api.convert import dataset_to_pb, model_to_pb, spec_to_pb, state_from_pb
from trainyard.api.errors import grpc_errors
from trainyard.services.datasets import DatasetService
from trainyard.services.models import ModelService
from trainyard.services.runs import RunQuery, RunService
from trainyard.v1 import training_pb2 as pb


class CatalogServicer:
    runs: RunService
    models: ModelService
    datasets: DatasetService

    @grpc_errors
    def ListRuns(self, request: pb.ListRunsRequest,
                 context: grpc.ServicerContext) -> pb.ListRunsResponse:
        query = RunQuery(
            job_id=request.job_id, dataset=request.dataset, algorithm=request.algorithm,
            image=request.image, labels=dict(request.labels),
            states=[state_from_pb(s, "states") for s in request.states],
            thresholds=conv.thresholds_from_pb(list(request.metrics)),
            sort_metric=request.sort_metric, descending=request.descending,
            page_size=request.page_size, page_token=request.page_token)
        views, token = self.runs.list_runs(current_identity(), query)
        return pb.ListRunsResponse(runs=[conv.run_to_pb(v) for v in views],
                                   next_page_token=token)

    @grpc_errors
    def GetRun(self, request: pb.GetRunRequest, context: grpc.ServicerContext) -> pb.Run:
        return conv.run_to_pb(self.runs.get(current_identity(), request.run_id))

    @grpc_errors
    def CompareRuns(self, request: pb.CompareRunsRequest,
                    context: grpc.ServicerContext) -> pb.CompareRunsResponse:
        comparison, views = self.runs.compare(current_identity(), list(request.run_ids),
                                              include_series=request.include_series)
        return conv.comparison_to_pb(comparison, views)

    @grpc_errors
    def ReproduceRun(self, request: pb.ReproduceRunRequest,
                     context: grpc.ServicerContext) -> pb.ReproduceRunResponse:
        job_id, existing, spec, run = self.runs.reproduce(
            current_identity(), request.run_id, request.client_request_id)
        return pb.ReproduceRunResponse(job_id=job_id, existing=existing, spec=spec_to_pb(spec),
                                       reproduces=run.id)

    @grpc_errors
    def ListModels(self, request: pb.ListModelsRequest,
                   context: grpc.ServicerContext) -> pb.ListModelsResponse:
        models = self.models.list_models(current_identity())
        return pb.ListModelsResponse(models=[conv.model_summary_to_pb(m) for m in models])

    @grpc_errors
    def GetModel(self, request: pb.GetModelRequest, context: grpc.ServicerContext) -> pb.Model:
        return conv.model_detail_to_pb(self.models.get_model(current_identity(), request.name))

    @grpc_errors
    def SetModelAlias(self, request: pb.SetModelAliasRequest,
                      context: grpc.ServicerContext) -> pb.SetModelAliasResponse:
        version, previous = self.models.set_alias(current_identity(), request.name,
                                                  request.alias, request.version)
        return pb.SetModelAliasResponse(name=request.name, alias=request.alias,
                                        version=version, previous_version=previous or 0)

    @grpc_errors
    def DownloadModel(self, request: pb.DownloadModelRequest,
                      context: grpc.ServicerContext) -> Iterator[pb.ModelFileChunk]:
        model, chunks = self.models.download(current_identity(),
                                            conv.model_ref_from_pb(request.model))
        first = True
        for chunk in chunks:
            if not context.is_active():
                return
            msg = pb.ModelFileChunk(path=chunk.path, size=chunk.size, sha256=chunk.sha256,
                                    offset=chunk.offset, data=chunk.data)
            if first:
                msg.model.CopyFrom(model_to_pb(model))
                first = False
            yield msg

    @grpc_errors
    def GetModelLineage(self, request: pb.GetModelLineageRequest,
                        context: grpc.ServicerContext) -> pb.ModelLineage:
        return conv.lineage_to_pb(self.models.lineage(current_identity(),
                                                      conv.model_ref_from_pb(request.model)))

    @grpc_errors
    def GetDatasetLineage(self, request: pb.GetDatasetLineageRequest,
                          context: grpc.ServicerContext) -> pb.DatasetLineage:
        return conv.dataset_lineage_to_pb(self.datasets.lineage(
            current_identity(), request.name, request.version))

    @grpc_errors
    def DeleteDataset(self, request: pb.DeleteDatasetRequest,
                      context: grpc.ServicerContext) -> pb.DeleteDatasetResponse:
        record = self.datasets.delete(current_identity(), request.name, request.version)
        return pb.DeleteDatasetResponse(dataset=dataset_to_pb(record))
