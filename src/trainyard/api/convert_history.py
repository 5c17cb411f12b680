"""The service's history as protobuf: a page of finished jobs and the policy in force."""

from __future__ import annotations

from trainyard.api.convert import state_to_pb, timestamp
from trainyard.services.history import HistoryPage, PolicyInForce
from trainyard.v1 import training_pb2 as pb


def since_from_pb(request: pb.ExportHistoryRequest) -> float | None:
    return request.since.ToNanoseconds() / 1e9 if request.HasField("since") else None


def policy_to_pb(policy: PolicyInForce) -> pb.PolicyInForce:
    out = pb.PolicyInForce(source=policy.source, text=policy.text, format=policy.format,
                           max_running=policy.max_running, admins=list(policy.admins))
    for pool in policy.pools:
        added = out.pools.add(name=pool.name, executor=pool.executor,
                              gpu_ids=list(pool.gpu_ids), max_jobs=pool.max_jobs)
        if pool.cpus is not None:
            added.cpus = pool.cpus
        if pool.memory_mb is not None:
            added.memory_mb = pool.memory_mb
    return out


def history_page_to_pb(page: HistoryPage) -> pb.HistoryPage:
    out = pb.HistoryPage(next_page_token=page.next_token)
    for job in page.jobs:
        res = job.resources
        out.jobs.add(
            job_id=job.id, name=job.name, owner=job.owner, team=job.team, queue=job.queue,
            priority=job.priority,
            resources=pb.Resources(cpus=res.cpus, memory_mb=res.memory_mb, gpus=res.gpus),
            state=state_to_pb(job.state), submitted_at=timestamp(job.submitted_at),
            ended_at=timestamp(job.ended_at), ran_seconds=job.ran_s,
            launch_seconds=job.launch_s, attempts=job.attempts)
    if page.policy is not None:
        out.policy.CopyFrom(policy_to_pb(page.policy))
    if page.window is not None:
        out.total = page.window.jobs
        if page.window.first_submit is not None:
            out.first_submit.CopyFrom(timestamp(page.window.first_submit))
    return out
