"""A Kubernetes pool in the policy file: its table, its defaults, and what is refused."""

from __future__ import annotations

import pytest

from trainyard.domain.pools import KubernetesPool, Toleration, never_fits
from trainyard.domain.spec import Resources
from trainyard.services.policy_file import PolicyError, parse_policy

QUEUE = '\n[queues.default]\npools = ["k8s"]\n'
POOL = '[pools.k8s]\nexecutor = "kubernetes"\n'


def problems(text: str) -> list[str]:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text + QUEUE, "toml", source="policy.toml")
    return caught.value.problems


def test_a_kubernetes_pool_carries_its_table_and_counts_what_the_file_gives() -> None:
    policy = parse_policy(POOL + 'cpus = 64\n[pools.k8s.kubernetes]\n'
                          'kinds = ["TFJob", "PyTorchJob"]\nkubeconfig = "/etc/kc"\n'
                          'context = "prod"\nteam_namespace = "trainyard-{team}"\n'
                          'node_selector = {pool = "gpu"}\n'
                          'tolerations = [{key = "nvidia.com/gpu", operator = "Exists", '
                          'effect = "NoSchedule"}]\ntoken_delivery = "env"\nchief = true\n'
                          'grace = "1m"\nttl = "2h"\ncleanup = "keep"\n' + QUEUE, "toml")
    pool = policy.pools["k8s"]
    assert pool.executor == "kubernetes"
    assert pool.kubernetes == KubernetesPool(
        kinds=("TFJob", "PyTorchJob"), kubeconfig="/etc/kc", context="prod",
        team_namespace="trainyard-{team}", node_selector=(("pool", "gpu"),),
        tolerations=(Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),),
        token_delivery="env", chief=True, grace_s=60.0, ttl_s=7200, cleanup="keep")
    assert pool.capacity.max_jobs == 1000 and pool.capacity.cpus == 64


def test_without_its_table_a_kubernetes_pool_creates_pytorchjobs_with_secrets() -> None:
    pool = parse_policy(POOL + QUEUE, "toml").pools["k8s"].kubernetes
    assert pool == KubernetesPool()
    assert pool.kinds == ("PyTorchJob",) and pool.token_delivery == "secret"


def test_each_bad_key_is_named_with_its_problem() -> None:
    assert problems(POOL + '[pools.k8s.kubernetes]\nkinds = ["MPIJob", "TFJob", "TFJob"]\n'
                    'namespace = "Team_A"\ntoken_delivery = "file"\n'
                    'image_pull_policy = "Sometimes"\n') == [
        "policy.toml, line 4: pools.k8s.kubernetes.kinds[0]: must be one of PyTorchJob, "
        'TFJob, TrainJob, got "MPIJob"',
        'policy.toml, line 4: pools.k8s.kubernetes.kinds[2]: "TFJob" is listed twice',
        "policy.toml, line 5: pools.k8s.kubernetes.namespace: must be a DNS label (lowercase "
        "letters, digits and '-', at most 63), got \"Team_A\"",
        'policy.toml, line 6: pools.k8s.kubernetes.token_delivery: must be one of "secret", '
        '"env", got "file"',
        'policy.toml, line 7: pools.k8s.kubernetes.image_pull_policy: must be one of '
        '"IfNotPresent", "Always", "Never", got "Sometimes"']


def test_what_one_key_needs_of_another() -> None:
    found = problems(POOL + '[pools.k8s.kubernetes]\nkinds = ["TrainJob"]\n'
                     'admission = "kueue"\nteam_namespace = "trainyard"\n'
                     'in_cluster = true\ncontext = "x"\n')
    assert [p.split(": ")[1] for p in found] == [
        "pools.k8s.kubernetes.runtime_ref", "pools.k8s.kubernetes.queue_name",
        "pools.k8s.kubernetes.team_namespace", "pools.k8s.kubernetes.in_cluster"]
    assert "(Cluster)TrainingRuntime" in found[0] and "LocalQueue" in found[1]
    assert '"trainyard-{team}"' in found[2]


def test_a_pool_kueue_admits_declares_no_capacity_and_takes_no_quota() -> None:
    found = problems(POOL + 'gpus = 8\n[pools.k8s.kubernetes]\nadmission = "kueue"\n'
                     'queue_name = "team-a"\n[teams.vision]\nmembers = ["ann"]\n'
                     '[teams.vision.quota.k8s]\ngpus = 2\n')
    assert found == [
        "policy.toml, line 3: pools.k8s.gpus: Kueue admits this pool's jobs (admission = "
        "\"kueue\"): its capacity is its ClusterQueue's; declare none here",
        "policy.toml, line 9: teams.vision.quota.k8s: Kueue admits the jobs of pool \"k8s\" "
        "(admission = \"kueue\"): quotas there are its ClusterQueue's"]


def test_the_kubernetes_table_belongs_to_kubernetes_pools() -> None:
    assert problems('[pools.k8s]\nmax_jobs = 2\n[pools.k8s.kubernetes]\nkinds = ["TFJob"]\n'
                    ) == ['policy.toml, line 3: pools.k8s.kubernetes: only a pool of executor '
                          '"kubernetes" takes this key']


@pytest.mark.parametrize(("team", "namespace"), [
    ("vision", "trainyard-vision"), ("Vision_A.b", "trainyard-vision-a-b"), ("", "default")])
def test_each_team_is_its_own_namespace(team: str, namespace: str) -> None:
    pool = KubernetesPool(team_namespace="trainyard-{team}")
    assert pool.namespace_of(team) == namespace


@pytest.mark.parametrize(("framework", "kind"), [
    ("", "PyTorchJob"), ("none", "PyTorchJob"), ("pytorch", "PyTorchJob"),
    ("tensorflow", "TFJob")])
def test_a_job_chooses_among_its_pools_kinds_by_framework(framework: str, kind: str) -> None:
    assert KubernetesPool(kinds=("PyTorchJob", "TFJob")).kind_for(framework) == kind
    assert KubernetesPool(kinds=("PyTorchJob",)).kind_for("tensorflow") is None


def test_what_the_api_server_takes_but_a_pod_would_not_is_refused_here() -> None:
    found = problems(POOL + '[pools.k8s.kubernetes]\ntolerations = ['
                     '{operator = "Exists", value = "x"}, {effect = "NoSchedule"}, '
                     '{key = "k", effect = "NoSchedule", toleration_seconds = 5}]\n'
                     'runtime_ref = "Not A Name"\nservice_address = "host-without-port"\n'
                     'ttl = 1e300\n')
    assert [p.split(": ", 2)[1] for p in found] == [
        "pools.k8s.kubernetes.tolerations[0].value",
        "pools.k8s.kubernetes.tolerations[1].key",
        "pools.k8s.kubernetes.tolerations[2].toleration_seconds",
        "pools.k8s.kubernetes.runtime_ref", "pools.k8s.kubernetes.service_address",
        "pools.k8s.kubernetes.ttl"]
    assert 'must be HOST:PORT' in found[4]
    assert found[5].endswith("ttl: must be at most 315360000, got 1e+300")


def test_a_pool_kueue_admits_leaves_gpus_to_kueue() -> None:
    pool = parse_policy(POOL + '[pools.k8s.kubernetes]\nadmission = "kueue"\n'
                        'queue_name = "team-a"\n' + QUEUE, "toml").pools["k8s"]
    assert pool.capacity.cpus is None and pool.capacity.memory_mb is None
    # Trainyard counts every pool's GPUs: here beyond what its jobs could hold at once.
    assert pool.capacity.gpus == 8192
    assert never_fits(pool.capacity, Resources(cpus=1, gpus=8), workers=4) is None
