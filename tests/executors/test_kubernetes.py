"""The Kubernetes executor against a real API server (tests/conftest.py: kube_api): what it
does when its launch meets an object already there, a Secret it cannot create, and a
resource someone else deletes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.server.kubeserver import custom, get_object
from trainyard.domain.pools import KubernetesPool
from trainyard.domain.spec import Resources
from trainyard.executors.base import JobFiles, LaunchError, LaunchRequest, Observation, Phase
from trainyard.executors.kubernetes.config import KubernetesConfig
from trainyard.executors.kubernetes.executor import KubernetesExecutor
from trainyard.testbed.kube_apiserver import KubeApiServer


def request(job: str, attempt: int = 1, token: str = "tyjob_x") -> LaunchRequest:
    files = JobFiles(*(Path("/nowhere") / n for n in ("d", "m", "m.jsonl", "c", "w", "l")))
    return LaunchRequest(job_id=job, attempt=attempt, handle=f"trainyard-{job}-{attempt}",
                         command="true", image="trainer:1", env={}, hyperparameters={},
                         resources=Resources(1.0, 256, 0), gpu_ids=(), files=files,
                         job_token=token, pool="k8s")


@pytest.fixture
def make(kube_api: KubeApiServer, kube_namespace: str) -> Iterator[object]:
    made: list[KubernetesExecutor] = []

    def build(instance: str = "exec-a", **pool: object) -> KubernetesExecutor:
        settings: dict[str, object] = dict(kubeconfig=str(kube_api.kubeconfig),
                                           namespace=kube_namespace, token_delivery="env")
        settings.update(pool)
        executor = KubernetesExecutor(KubernetesConfig(
            instance=instance, pools={"k8s": KubernetesPool(**settings)},  # type: ignore[arg-type]
            service_address="127.0.0.1:9"))
        made.append(executor)
        return executor
    yield build
    for executor in made:
        executor.close()


def wait_phase(look: object, phases: set[Phase], timeout: float = 20.0) -> Observation:
    deadline = time.monotonic() + timeout
    while True:
        seen: Observation = look()  # type: ignore[operator]
        if seen.phase in phases or time.monotonic() > deadline:
            return seen
        time.sleep(0.1)


def test_a_launch_that_finds_its_own_object_adopts_it_and_refuses_anothers(
        make: object, kube_api: KubeApiServer, kube_namespace: str) -> None:
    first = make()  # type: ignore[operator]
    first.launch(request("j1", token="tyjob_first"))
    # The service restarted after the create: the same launch (with the token it minted
    # anew) finds the object, adopts it, and gives it that token.
    again = make()  # type: ignore[operator]
    again.launch(request("j1", token="tyjob_again"))
    assert wait_phase(lambda: again.poll("trainyard-j1-1"), {Phase.STARTING}).phase \
        is Phase.STARTING
    found = get_object(kube_api, "PyTorchJob", kube_namespace, "trainyard-j1-1")
    assert found is not None
    env = found["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0][
        "env"]
    assert {"name": "TRAINYARD_JOB_TOKEN", "value": "tyjob_again"} in env
    other = make("exec-b")  # type: ignore[operator]
    with pytest.raises(LaunchError, match="is not this attempt's"):
        other.launch(request("j1"))


def test_a_secret_the_cluster_cannot_hold_fails_the_launch_and_leaves_nothing(
        make: object, kube_api: KubeApiServer, kube_namespace: str) -> None:
    executor = make(token_delivery="secret")  # type: ignore[operator]
    with pytest.raises(LaunchError, match='token_delivery = "env"'):
        executor.launch(request("j2"))
    found = get_object(kube_api, "PyTorchJob", kube_namespace, "trainyard-j2-1")
    assert found is None or found["metadata"].get("deletionTimestamp")


def test_a_resource_deleted_outside_trainyard_is_a_lost_attempt(
        make: object, kube_api: KubeApiServer, kube_namespace: str) -> None:
    executor = make()  # type: ignore[operator]
    executor.launch(request("j3"))
    custom(kube_api).delete_namespaced_custom_object("kubeflow.org", "v1", kube_namespace,
                                                     "pytorchjobs", "trainyard-j3-1")
    lost = wait_phase(lambda: executor.poll("trainyard-j3-1"), {Phase.LOST})
    assert (lost.phase, lost.retry) == (Phase.LOST, True)
    assert "deleted outside Trainyard" in lost.message
    # One it deleted itself (a cancel) is no lost attempt.
    executor.launch(request("j4"))
    assert executor.cancel("trainyard-j4-1", 1.0)
    assert executor.cancel("trainyard-j4-1", 1.0)  # idempotent
    # The object waits for its foreground deletion (no garbage collector here); once gone:
    custom(kube_api).patch_namespaced_custom_object(
        "kubeflow.org", "v1", kube_namespace, "pytorchjobs", "trainyard-j4-1",
        {"metadata": {"finalizers": None}})
    gone = wait_phase(lambda: executor.poll("trainyard-j4-1"), {Phase.LOST})
    assert (gone.phase, gone.retry) == (Phase.LOST, False), gone


def test_a_resource_the_api_server_refuses_fails_the_launch_with_its_message(
        make: object, kube_api: KubeApiServer, kube_namespace: str) -> None:
    executor = make(kinds=("TrainJob",), runtime_ref="torch")  # type: ignore[operator]
    # TrainJob's own CEL rule: its name is an RFC 1035 label of at most 63 characters.
    long = replace(request("j5"), handle="trainyard-" + "a" * 60)
    with pytest.raises(LaunchError) as refused:
        executor.launch(long)
    assert "the API server refused the TrainJob" in str(refused.value)
    assert "metadata.name must be no more than 63 characters" in str(refused.value)


def test_a_request_for_a_pool_it_does_not_serve_is_refused(make: object) -> None:
    executor = make()  # type: ignore[operator]
    with pytest.raises(LaunchError, match="pool 'gpu' is not a Kubernetes pool"):
        executor.launch(replace(request("j6"), pool="gpu"))
