"""The TrainingService servicer: wire format in, service layer call, wire format out."""

from __future__ import annotations

from collections.abc import Iterator

import grpc

from trainyard.api import convert
from trainyard.api.auth import current_identity
from trainyard.api.catalog_servicer import CatalogServicer
from trainyard.api.errors import grpc_errors
from trainyard.domain.sweep import Parameter
from trainyard.services.jobs import TrainingService
from trainyard.services.models import ModelService
from trainyard.services.policy_source import PolicySource
from trainyard.services.runs import RunService
from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc


class TrainingServicer(CatalogServicer, pb_grpc.TrainingServiceServicer):
    def __init__(self, service: TrainingService, runs: RunService, models: ModelService,
                 policy: PolicySource | None = None, max_running: int = 0) -> None:
        self.service = service
        self.runs = runs  # runs, compare, reproduce: api/catalog_servicer.py
        self.models = models  # models, aliases, download, lineage, dataset delete
        self.policy = policy
        self.max_running = max_running

    @grpc_errors
    def Train(self, request: pb.TrainRequest, context: grpc.ServicerContext) -> pb.TrainResponse:
        job_id, existing = self.service.train(convert.spec_from_request(request),
                                              client_request_id=request.client_request_id,
                                              identity=current_identity(),
                                              pipeline=request.pipeline,
                                              pipeline_max_parallel=request.pipeline_max_parallel)
        return pb.TrainResponse(job_id=job_id, existing=existing)

    @grpc_errors
    def GetTrainingStatus(self, request: pb.GetTrainingStatusRequest,
                          context: grpc.ServicerContext) -> pb.TrainingStatus:
        return convert.status_to_pb(self.service.status(request.job_id, current_identity()))

    @grpc_errors
    def ListJobs(self, request: pb.ListJobsRequest,
                 context: grpc.ServicerContext) -> pb.ListJobsResponse:
        states = [convert.state_from_pb(s, "states") for s in request.states]
        records, token = self.service.list_jobs(
            states=states, queue=request.queue, labels=dict(request.labels),
            page_size=request.page_size, page_token=request.page_token,
            identity=current_identity(),
        )
        return pb.ListJobsResponse(jobs=[convert.summary_to_pb(r) for r in records],
                                   next_page_token=token)

    @grpc_errors
    def CancelJob(self, request: pb.CancelJobRequest,
                  context: grpc.ServicerContext) -> pb.CancelJobResponse:
        state = self.service.cancel(request.job_id, current_identity())
        return pb.CancelJobResponse(state=convert.state_to_pb(state))

    @grpc_errors
    def WatchJob(self, request: pb.WatchJobRequest,
                 context: grpc.ServicerContext) -> Iterator[pb.JobEvent]:
        for event in self.service.watch(request.job_id, is_active=context.is_active,
                                        identity=current_identity()):
            yield pb.JobEvent(job_id=request.job_id,
                              transition=convert.transition_to_pb(event),
                              final=event.to_state.is_final())

    @grpc_errors
    def StreamLogs(self, request: pb.StreamLogsRequest,
                   context: grpc.ServicerContext) -> Iterator[pb.LogChunk]:
        for offset, data in self.service.logs(request.job_id, follow=request.follow,
                                              offset=request.offset,
                                              is_active=context.is_active,
                                              identity=current_identity()):
            yield pb.LogChunk(data=data, offset=offset)

    @grpc_errors
    def RegisterDataset(self, request: pb.RegisterDatasetRequest,
                        context: grpc.ServicerContext) -> pb.DatasetVersion:
        record, created = self.service.register_dataset(request.name, request.path)
        return convert.dataset_to_pb(record, created)

    @grpc_errors
    def ListDatasets(self, request: pb.ListDatasetsRequest,
                     context: grpc.ServicerContext) -> pb.ListDatasetsResponse:
        found = self.models.list_datasets(request.name, current_identity())
        return pb.ListDatasetsResponse(
            datasets=[convert.dataset_to_pb(d.record, run_ids=d.run_ids) for d in found])

    @grpc_errors
    def WhoAmI(self, request: pb.WhoAmIRequest, context: grpc.ServicerContext) -> pb.Identity:
        who = current_identity()
        return pb.Identity(user=who.user, admin=who.admin, read_only=who.read_only,
                           teams=sorted(who.teams), single_user=who.single_user,
                           token_id=who.token_id)

    @grpc_errors
    def GetQueues(self, request: pb.GetQueuesRequest,
                  context: grpc.ServicerContext) -> pb.QueuesOverview:
        source = self.policy
        path = str(source.path) if source is not None and source.path else ""
        loaded = source.loaded_at if source is not None else 0.0
        return convert.queues_to_pb(self.service.queues(path, loaded, self.max_running))

    @grpc_errors
    def SubmitSweep(self, request: pb.SweepRequest,
                    context: grpc.ServicerContext) -> pb.SweepResponse:
        parameters = [Parameter(p.name, tuple(p.values), p.min, p.max, p.log, p.integer)
                      for p in request.parameters]
        sweep_id, job_ids = self.service.submit_sweep(
            convert.spec_from_request(request.template), parameters, search=request.search,
            trials=request.trials, seed=request.seed, max_parallel=request.max_parallel,
            identity=current_identity())
        return pb.SweepResponse(sweep_id=sweep_id, job_ids=job_ids)
