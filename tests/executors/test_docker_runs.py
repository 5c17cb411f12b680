"""A container run records the image id it was created from, and reproducing it runs that
id rather than the tag: against the real engine."""

from __future__ import annotations

from pathlib import Path

from tests.dockerenv import TRAINER_IMAGE, Engine, docker_server, engine, final, running
from trainyard.auth.policy import LOCAL
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.services.runs import RunQuery

__all__ = ["engine"]


def test_the_image_id_is_recorded_and_reproduce_pins_it(engine: Engine, tmp_path: Path) -> None:
    image_id = engine.client.images.get(TRAINER_IMAGE).id
    with running(docker_server(tmp_path)) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(name="img", image=TRAINER_IMAGE,
                                                     command="echo ok > $MODEL_SAVE_PATH/m"))
        assert final(srv, job_id).state is JobState.SUCCEEDED
        run = srv.runs.get(LOCAL, job_id).run
        assert run.image_id == image_id and run.executor == "docker"
        views, _ = srv.runs.list_runs(LOCAL, RunQuery(image=image_id[7:19]))
        assert [v.run.job.id for v in views] == [job_id]
        again, _, spec, source = srv.runs.reproduce(LOCAL, f"{job_id}-1")
        assert spec.image == image_id and source.id == f"{job_id}-1"
        assert final(srv, again).state is JobState.SUCCEEDED
        rerun = srv.runs.get(LOCAL, again).run
        assert rerun.image_id == image_id and rerun.spec.image == image_id
        assert rerun.job.reproduced_from == f"{job_id}-1"
