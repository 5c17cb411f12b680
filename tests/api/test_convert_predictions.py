"""A predicted start on the wire: its times as Timestamps (unset past the forecast's
horizon), set on a waiting job's status and summary only, and read back by the SDK."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from trainyard.api.convert import prediction_to_pb, status_to_pb, summary_to_pb
from trainyard.client.messages import JobStatus, JobSummary
from trainyard.domain.position import QueuePlace
from trainyard.domain.prediction import PredictedStart
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.services.jobs import JobStatus as ServiceStatus
from trainyard.store.records import JobRecord

AS_OF, P50, P90 = 1_780_000_000.0, 1_780_002_100.0, 1_780_016_800.5
SOON = PredictedStart(as_of=AS_OF, p50=P50, p90=P90, horizon_s=86400.0)
NEVER = PredictedStart(as_of=AS_OF, cannot_start="queue gpu is closed to team nlp")


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def record(state: JobState = JobState.WAITING) -> JobRecord:
    return JobRecord(id="j1", seq=1, spec=JobSpec(name="j", command="true"), kind="local",
                     owner="ann", state=state, attempt=0, message="", exit_code=None,
                     cancel_requested=False, pending_code="", pending_message="",
                     executor="", handle="", gpu_ids=(), team="", pool="",
                     preempt_requested=False, started_at=None, sweep_id="", metrics_offset=0,
                     malformed_metric_lines=0, submitted_at=AS_OF - 60, updated_at=AS_OF - 60,
                     client_request_id=None)


def status(job: JobRecord, prediction: PredictedStart | None) -> ServiceStatus:
    return ServiceStatus(job=job, place=QueuePlace(1), events=[], latest_metrics={},
                         model=None, prediction=prediction)


def test_times_go_as_timestamps_and_unknown_ones_stay_unset() -> None:
    msg = prediction_to_pb(SOON)
    assert (msg.as_of.ToNanoseconds(), msg.p50.ToNanoseconds(), msg.p90.ToNanoseconds()) == (
        int(AS_OF * 1e9), int(P50 * 1e9), int(P90 * 1e9))
    assert msg.horizon_seconds == 86400.0 and msg.cannot_start == ""
    never = prediction_to_pb(NEVER)
    assert not never.HasField("p50") and not never.HasField("p90")
    assert never.cannot_start == "queue gpu is closed to team nlp"
    horizon = prediction_to_pb(PredictedStart(as_of=AS_OF, p50=P50, horizon_s=3600.0))
    assert horizon.HasField("p50") and not horizon.HasField("p90")


def test_a_waiting_jobs_status_and_summary_carry_it_and_the_sdk_reads_it() -> None:
    st = JobStatus.from_pb(status_to_pb(status(record(), SOON)))
    assert st.predicted_start is not None
    assert (st.predicted_start.p50, st.predicted_start.p90, st.predicted_start.as_of) == (
        iso(P50), iso(P90), iso(AS_OF))
    assert st.predicted_start.horizon_seconds == 86400.0
    assert st.to_dict()["predicted_start"] == {"p50": iso(P50), "p90": iso(P90),
                                               "as_of": iso(AS_OF)}
    summary = JobSummary.from_pb(summary_to_pb(record(), NEVER))
    assert summary.predicted_start is not None
    assert summary.to_dict()["predicted_start"] == {
        "p50": None, "p90": None, "as_of": iso(AS_OF),
        "cannot_start": "queue gpu is closed to team nlp"}


def test_a_job_that_no_longer_waits_carries_none() -> None:
    running = replace(record(), state=JobState.RUNNING)
    assert not status_to_pb(status(running, SOON)).HasField("predicted_start")
    assert not summary_to_pb(running, SOON).HasField("predicted_start")
    assert not status_to_pb(status(record(), None)).HasField("predicted_start")
    assert JobStatus.from_pb(status_to_pb(status(record(), None))).to_dict()[
        "predicted_start"] is None
    assert JobSummary.from_pb(summary_to_pb(record())).predicted_start is None
