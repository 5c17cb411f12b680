"""The TrainingService servicer: wire format in, one use case call, wire format out."""

from __future__ import annotations

from collections.abc import Iterator

import grpc

from trainyard.api import convert
from trainyard.api.algorithm_servicer import AlgorithmServicer
from trainyard.api.auth import current_identity
from trainyard.api.catalog_servicer import CatalogServicer
from trainyard.api.convert_sweeps import sweep_to_pb
from trainyard.api.errors import grpc_errors
from trainyard.services.bundle import Services
from trainyard.services.sweeps import SweepRules
from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc


class TrainingServicer(CatalogServicer, AlgorithmServicer, pb_grpc.TrainingServiceServicer):
    def __init__(self, services: Services) -> None:
        self.jobs = services.jobs
        self.sweeps = services.sweeps
        self.runs = services.runs  # runs, compare, reproduce: api/catalog_servicer.py
        self.models = services.models  # models, aliases, download, lineage
        self.datasets = services.datasets
        self.algorithms = services.algorithms  # api/algorithm_servicer.py

    @grpc_errors
    def Train(self, request: pb.TrainRequest, context: grpc.ServicerContext) -> pb.TrainResponse:
        job_id, existing = self.jobs.train(current_identity(),
                                           convert.spec_from_request(request),
                                           client_request_id=request.client_request_id,
                                           pipeline=request.pipeline,
                                           pipeline_max_parallel=request.pipeline_max_parallel,
                                           after=convert.after_from_request(request))
        return pb.TrainResponse(job_id=job_id, existing=existing)

    @grpc_errors
    def GetTrainingStatus(self, request: pb.GetTrainingStatusRequest,
                          context: grpc.ServicerContext) -> pb.TrainingStatus:
        return convert.status_to_pb(self.jobs.status(current_identity(), request.job_id))

    @grpc_errors
    def ListJobs(self, request: pb.ListJobsRequest,
                 context: grpc.ServicerContext) -> pb.ListJobsResponse:
        states = [convert.state_from_pb(s, "states") for s in request.states]
        page = self.jobs.list_page(
            current_identity(), states=states, queue=request.queue,
            labels=dict(request.labels), page_size=request.page_size,
            page_token=request.page_token,
        )
        return pb.ListJobsResponse(
            jobs=[convert.summary_to_pb(r, page.predicted.get(r.id), page.needs.get(r.id))
                  for r in page.records],
            next_page_token=page.next_token)

    @grpc_errors
    def CancelJob(self, request: pb.CancelJobRequest,
                  context: grpc.ServicerContext) -> pb.CancelJobResponse:
        state = self.jobs.cancel(current_identity(), request.job_id)
        return pb.CancelJobResponse(state=convert.state_to_pb(state))

    @grpc_errors
    def WatchJob(self, request: pb.WatchJobRequest,
                 context: grpc.ServicerContext) -> Iterator[pb.JobEvent]:
        for event, final in self.jobs.watch(current_identity(), request.job_id,
                                            is_active=context.is_active):
            yield pb.JobEvent(job_id=request.job_id,
                              transition=convert.transition_to_pb(event), final=final)

    @grpc_errors
    def StreamLogs(self, request: pb.StreamLogsRequest,
                   context: grpc.ServicerContext) -> Iterator[pb.LogChunk]:
        for offset, data in self.jobs.logs(current_identity(), request.job_id,
                                           follow=request.follow, offset=request.offset,
                                           is_active=context.is_active):
            yield pb.LogChunk(data=data, offset=offset)

    @grpc_errors
    def RegisterDataset(self, request: pb.RegisterDatasetRequest,
                        context: grpc.ServicerContext) -> pb.DatasetVersion:
        record, created = self.datasets.register(current_identity(), request.name,
                                                 request.path)
        return convert.dataset_to_pb(record, created)

    @grpc_errors
    def ListDatasets(self, request: pb.ListDatasetsRequest,
                     context: grpc.ServicerContext) -> pb.ListDatasetsResponse:
        found = self.datasets.list(current_identity(), request.name)
        return pb.ListDatasetsResponse(
            datasets=[convert.dataset_to_pb(d.record, run_ids=d.run_ids) for d in found])

    @grpc_errors
    def WhoAmI(self, request: pb.WhoAmIRequest, context: grpc.ServicerContext) -> pb.Identity:
        return convert.identity_to_pb(current_identity())

    @grpc_errors
    def GetQueues(self, request: pb.GetQueuesRequest,
                  context: grpc.ServicerContext) -> pb.QueuesOverview:
        return convert.queues_to_pb(self.jobs.queues(current_identity()))

    @grpc_errors
    def SubmitSweep(self, request: pb.SweepRequest,
                    context: grpc.ServicerContext) -> pb.SweepResponse:
        sweep_id, job_ids = self.sweeps.submit(
            current_identity(), convert.sweep_template_from_pb(request.template),
            convert.parameters_from_pb(list(request.parameters)), search=request.search,
            trials=request.trials, seed=request.seed, max_parallel=request.max_parallel,
            rules=SweepRules(
                objective=request.objective, early_stop=request.early_stop,
                min_steps=request.min_steps, reduction=request.reduction,
                max_trials=request.max_trials, max_gpu_hours=request.max_gpu_hours,
                max_cpu_hours=request.max_cpu_hours))
        return pb.SweepResponse(sweep_id=sweep_id, job_ids=job_ids)

    # --- sweeps as one unit -----------------------------------------------------------------

    @grpc_errors
    def ListSweeps(self, request: pb.SweepListRequest,
                   context: grpc.ServicerContext) -> pb.SweepListResponse:
        views, token = self.sweeps.list(current_identity(), page_size=request.page_size,
                                        page_token=request.page_token)
        return pb.SweepListResponse(sweeps=[sweep_to_pb(v, with_trials=False) for v in views],
                                    next_page_token=token)

    @grpc_errors
    def GetSweep(self, request: pb.SweepGetRequest,
                 context: grpc.ServicerContext) -> pb.SweepStatus:
        return sweep_to_pb(self.sweeps.show(current_identity(), request.sweep_id))

    @grpc_errors
    def CancelSweep(self, request: pb.SweepActionRequest,
                    context: grpc.ServicerContext) -> pb.SweepStatus:
        return sweep_to_pb(self.sweeps.cancel(current_identity(), request.sweep_id))

    @grpc_errors
    def PauseSweep(self, request: pb.SweepActionRequest,
                   context: grpc.ServicerContext) -> pb.SweepStatus:
        return sweep_to_pb(self.sweeps.pause(current_identity(), request.sweep_id))

    @grpc_errors
    def ResumeSweep(self, request: pb.SweepActionRequest,
                    context: grpc.ServicerContext) -> pb.SweepStatus:
        return sweep_to_pb(self.sweeps.resume(current_identity(), request.sweep_id))
