"""The SDK against a real server, on both dialects: a waiting job's status and its line in
the list carry the prediction the store holds; a running job's carry none."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from tests.liveserver import wait_until
from trainyard.client import Client, PredictedStart, TrainSpec
from trainyard.domain.prediction import PredictedStart as Prediction
from trainyard.domain.states import JobState
from trainyard.server.assembly import TrainyardServer
from trainyard.store.predictions import PredictionStore


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def test_a_waiting_job_carries_its_predicted_start(server: TrainyardServer,
                                                   client: Client) -> None:
    holders = [client.train(TrainSpec(name=f"holder-{n}", command="sleep 30")).job_id
               for n in range(2)]  # the server runs two at a time
    wait_until(lambda: all(server.jobs.get(h).state is JobState.RUNNING for h in holders),
               20, "the holders to run")
    waiter = client.train(TrainSpec(name="waiter", command="true")).job_id
    now = int(time.time())  # whole seconds, never ahead of the clock
    PredictionStore(server.db).replace({
        waiter: Prediction(as_of=now - 40, p50=now + 2100, p90=now + 16800, horizon_s=86400),
        holders[0]: Prediction(as_of=now - 40, p50=now),  # stale: it runs now
    })
    expected = PredictedStart(iso(now + 2100), iso(now + 16800), iso(now - 40), "", 86400.0)
    st = client.status(waiter)
    assert st.state == "WAITING" and st.predicted_start == expected
    assert st.predicted_start.describe().startswith("expected to start in about 35 min; ")
    assert client.status(holders[0]).predicted_start is None
    listed = {j.job_id: j for j in client.list_jobs(page_size=10)[0]}
    assert listed[waiter].predicted_start == expected
    assert listed[holders[0]].predicted_start is None
    assert listed[holders[1]].predicted_start is None
    PredictionStore(server.db).replace({
        waiter: Prediction(as_of=now, cannot_start="it asks more than any pool has")})
    st = client.status(waiter)
    assert st.predicted_start is not None
    assert st.predicted_start.describe() == "cannot start: it asks more than any pool has"
    assert (st.predicted_start.p50, st.predicted_start.p90) == (None, None)
    for job_id in [*holders, waiter]:
        client.cancel(job_id)
