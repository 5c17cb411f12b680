"""The `kubernetes` table of a pool of executor "kubernetes": its cluster, what it creates
there, and how its pods reach the service (domain.pools.KubernetesPool)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Self

from pydantic import BeforeValidator, Field, model_validator
from pydantic_core import PydanticKnownError

from trainyard.domain.pools import RESOURCE_KINDS, KubernetesPool, Toleration
from trainyard.services.policy_file.fields import (
    NonNegativeInt,
    NonNegativeNumber,
    PositiveInt,
    Table,
    not_null,
    one_of,
    seconds,
)
from trainyard.services.policy_file.problems import problem, problem_at, raise_all

# A namespace, a label value, a service account: RFC 1123 labels (and a label value may
# also hold dots and underscores).
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_LABEL_KEY = re.compile(r"^([a-z0-9.-]{1,253}/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_ADDRESS = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):\d{1,5}$")  # host:port
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
MAX_SECONDS = 10 * 365 * 86400  # ten years: beyond, a duration is a mistake
CHOICES = {
    "token_delivery": ("secret", "env"),
    "admission": ("trainyard", "kueue"),
    "image_pull_policy": ("IfNotPresent", "Always", "Never"),
    "cleanup": ("delete", "keep"),
    "runtime_kind": ("ClusterTrainingRuntime", "TrainingRuntime"),
}


def _one_of(key: str) -> BeforeValidator:
    return one_of(CHOICES[key])


def _dns_label(value: object) -> object:
    if isinstance(value, str) and value and not _DNS_LABEL.match(value):
        raise problem("not_a_dns_label")
    return value


def _subdomain(value: object) -> object:
    if isinstance(value, str) and value and not (
            len(value) <= 253 and all(_DNS_LABEL.match(p) for p in value.split("."))):
        raise problem("not_a_dns_name")
    return value


def _address(value: object) -> object:
    if isinstance(value, str) and value and not _ADDRESS.match(value):
        raise problem("not_an_address")
    return value


def _kinds(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise PydanticKnownError("list_type")
    kinds: list[str] = []
    found = []
    for index, kind in enumerate(value):
        if kind not in RESOURCE_KINDS:
            found.append(problem_at((index,), "not_a_resource", kind,
                                    kinds=", ".join(RESOURCE_KINDS)))
        elif kind in kinds:
            found.append(problem_at((index,), "listed_twice", kind))
        else:
            kinds.append(str(kind))
    if not value:
        raise problem("no_resource")
    raise_all(found)
    return tuple(kinds)


def _node_selector(value: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise PydanticKnownError("dict_type")
    found = [problem_at((str(k),), "not_a_label", v) for k, v in value.items()
             if not (isinstance(k, str) and _LABEL_KEY.match(k) and isinstance(v, str)
                     and _LABEL_VALUE.match(v))]
    raise_all(found)
    return tuple(sorted(value.items()))


def _listed(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


class TolerationModel(Table):
    key: str = ""
    operator: Annotated[str, BeforeValidator(lambda v: _operator(v))] = "Equal"
    value: str = ""
    effect: Annotated[str, BeforeValidator(lambda v: _effect(v))] = ""
    toleration_seconds: Annotated[NonNegativeInt | None, not_null("int_type")] = None

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        """What the API server takes but the pod would not: refused here, naming the key."""
        found = []
        if self.operator == "Exists" and self.value:
            found.append(problem_at(("value",), "exists_no_value", self.value))
        if self.operator == "Equal" and not self.key:
            found.append(problem_at(("key",), "equal_needs_key", None))
        if self.toleration_seconds is not None and self.effect != "NoExecute":
            found.append(problem_at(("toleration_seconds",), "seconds_no_execute",
                                    self.toleration_seconds))
        raise_all(found)
        return self

    def toleration(self) -> Toleration:
        return Toleration(self.key, self.operator, self.value, self.effect,
                          self.toleration_seconds)


def _operator(value: object) -> object:
    if isinstance(value, str) and value not in ("Equal", "Exists"):
        raise problem("not_one_of", choices='"Equal", "Exists"')
    return value


def _effect(value: object) -> object:
    if isinstance(value, str) and value not in ("", "NoSchedule", "PreferNoSchedule",
                                                 "NoExecute"):
        raise problem("not_one_of", choices='"NoSchedule", "PreferNoSchedule", "NoExecute"')
    return value


class KubernetesModel(Table):
    kinds: Annotated[tuple[str, ...], BeforeValidator(_kinds)] = ("PyTorchJob",)
    kubeconfig: str = ""
    context: str = ""
    in_cluster: bool = False
    namespace: Annotated[str, BeforeValidator(_dns_label)] = "default"
    team_namespace: str = ""
    image_pull_policy: Annotated[str, _one_of("image_pull_policy")] = "IfNotPresent"
    service_account: Annotated[str, BeforeValidator(_dns_label)] = ""
    node_selector: Annotated[tuple[tuple[str, str], ...], BeforeValidator(_node_selector)] = ()
    tolerations: Annotated[tuple[TolerationModel, ...], BeforeValidator(_listed)] = ()
    token_delivery: Annotated[str, _one_of("token_delivery")] = "secret"
    admission: Annotated[str, _one_of("admission")] = "trainyard"
    queue_name: Annotated[str, BeforeValidator(_dns_label)] = ""
    runtime_ref: Annotated[str, BeforeValidator(_subdomain)] = ""
    runtime_kind: Annotated[str, _one_of("runtime_kind")] = "ClusterTrainingRuntime"
    chief: bool = False
    cleanup: Annotated[str, _one_of("cleanup")] = "delete"
    ttl: Annotated[NonNegativeNumber, Field(le=MAX_SECONDS), seconds(positive=False)] = 3600.0
    python: str = "python3"
    cache_dir: str = "/var/tmp/trainyard"
    cache_mb: PositiveInt = 20480
    service_address: Annotated[str, BeforeValidator(_address)] = ""
    grace: Annotated[NonNegativeNumber | None, not_null("float_type"), Field(le=MAX_SECONDS),
                     seconds(positive=False)] = None

    @model_validator(mode="wrap")
    @classmethod
    def _together(cls, data: Any, handler: Any) -> Self:
        """What one key needs of another: a TrainJob its runtime, Kueue its queue, a team
        namespace its {team}, in-cluster credentials no kubeconfig."""
        model: Self = handler(data)
        found = []
        if "TrainJob" in model.kinds and not model.runtime_ref:
            found.append(problem_at(("runtime_ref",), "trainjob_runtime", None))
        if model.admission == "kueue" and not model.queue_name:
            found.append(problem_at(("queue_name",), "kueue_queue", None))
        if model.team_namespace and (
                "{team}" not in model.team_namespace or
                not _DNS_LABEL.match(model.team_namespace.replace("{team}", "team"))):
            found.append(problem_at(("team_namespace",), "not_a_namespace_template",
                                    model.team_namespace))
        if model.in_cluster and (model.kubeconfig or model.context):
            found.append(problem_at(("in_cluster",), "in_cluster_and_kubeconfig", True))
        raise_all(found)
        return model

    def pool(self) -> KubernetesPool:
        return KubernetesPool(
            kinds=self.kinds, kubeconfig=self.kubeconfig, context=self.context,
            in_cluster=self.in_cluster, namespace=self.namespace,
            team_namespace=self.team_namespace, image_pull_policy=self.image_pull_policy,
            service_account=self.service_account, node_selector=self.node_selector,
            tolerations=tuple(t.toleration() for t in self.tolerations),
            token_delivery=self.token_delivery, admission=self.admission,
            queue_name=self.queue_name, runtime_ref=self.runtime_ref,
            runtime_kind=self.runtime_kind, chief=self.chief, cleanup=self.cleanup,
            ttl_s=int(self.ttl), python=self.python, cache_dir=self.cache_dir,
            cache_mb=self.cache_mb, service_address=self.service_address,
            grace_s=self.grace)
