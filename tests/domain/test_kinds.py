"""Which backends run which jobs: an image, a bare command, or a registered algorithm's
code directory (with or without the image it runs in)."""

from __future__ import annotations

import pytest

from tests.scheduler import builders
from trainyard.domain.kinds import KINDS, JobKind, kind_for, kind_in, runs_shape
from trainyard.domain.policy import Queue, job_kind

IMAGE = "sha256:" + "a" * 64


@pytest.mark.parametrize(("image", "code", "kinds"), [
    (IMAGE, False, {JobKind.DOCKER, JobKind.KUBERNETES}),
    ("", False, {JobKind.LOCAL, JobKind.SLURM}),
    (IMAGE, True, set(KINDS)),  # the host's interpreter, or its image
    ("", True, {JobKind.LOCAL, JobKind.SLURM}),  # no image to run it in
])
def test_the_backends_that_run_each_shape(image: str, code: bool, kinds: set[str]) -> None:
    assert {k for k in KINDS if runs_shape(k, image, code)} == kinds


def test_a_code_job_takes_its_queues_first_pool_of_either_kind() -> None:
    assert kind_in([JobKind.SLURM, JobKind.DOCKER], IMAGE, code=True) == JobKind.SLURM
    assert kind_in([JobKind.KUBERNETES, JobKind.LOCAL], IMAGE, code=True) == JobKind.KUBERNETES
    # Without an image only a command backend will do; none: kind_for's answer, refused later.
    assert kind_in([JobKind.DOCKER, JobKind.LOCAL], "", code=True) == JobKind.LOCAL
    assert kind_in([JobKind.DOCKER], "", code=True) == JobKind.LOCAL
    # An image alone never runs on a command backend.
    assert kind_in([JobKind.LOCAL, JobKind.DOCKER], IMAGE) == JobKind.DOCKER


def test_without_a_policy_a_code_job_runs_as_its_image_says() -> None:
    assert kind_for(IMAGE) == JobKind.DOCKER and kind_for("") == JobKind.LOCAL


def test_a_policy_places_a_code_job_in_its_queues_first_pool() -> None:
    policy = builders.policy(queues={"q": Queue("q", pools=("cpu", "box")),
                                     "box": Queue("box", pools=("box",))})
    assert job_kind(policy, "q", IMAGE, code=True) == JobKind.LOCAL
    assert job_kind(policy, "q", IMAGE) == JobKind.DOCKER
    assert job_kind(policy, "q", "", code=True) == JobKind.LOCAL
    assert job_kind(policy, "box", IMAGE, code=True) == JobKind.DOCKER
