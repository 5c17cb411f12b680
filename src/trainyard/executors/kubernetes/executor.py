"""Jobs as Kubeflow custom resources on Kubernetes clusters. Trainyard keeps the queue and
decides when a job starts; the cluster's operator runs its workers, and the job runtime in
each container talks to this service.

The handle is the resource's name (trainyard-<job>-<attempt>); labels say which service,
job and attempt it belongs to, so a restarted service finds its resources and leaves
others' alone."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from trainyard.domain.kinds import JobKind
from trainyard.domain.pools import KubernetesPool
from trainyard.executors.base import (
    EngineAway,
    LaunchError,
    LaunchRequest,
    Observation,
    Phase,
    pool_of,
)
from trainyard.executors.kubernetes.api import KubeApi, Obj, api_client
from trainyard.executors.kubernetes.conditions import observe
from trainyard.executors.kubernetes.config import KubernetesConfig, cluster_key
from trainyard.executors.kubernetes.errors import ApiAway, ApiRefused
from trainyard.executors.kubernetes.manifests import Placement, manifest, token_secret
from trainyard.executors.kubernetes.resources import (
    ATTEMPT,
    INSTANCE,
    JOB_ID,
    RESOURCES,
    ResourceKind,
    selector,
)
from trainyard.executors.kubernetes.watcher import ResourceWatch

log = logging.getLogger(__name__)

AWAY = "Kubernetes: {}"
ADOPT_WAIT_S = 10.0  # how long a restarted service waits for its first list of a kind
UNCONFIRMED_S = 30.0  # how long a create that did not answer may take to show in a watch

# Whether an attempt's runtime has been heard from, given (job id, attempt).
RuntimeSeen = Callable[[str, int], bool]


class Cluster:
    """One cluster's API and a watch of each kind its pools create."""

    def __init__(self, api: KubeApi, kinds: set[str], instance: str,
                 on_change: Callable[[str], None]) -> None:
        self.api = api
        self.watches = {kind: ResourceWatch(api, RESOURCES[kind], selector(instance),
                                            on_change) for kind in sorted(kinds)}

    def away(self) -> str | None:
        return next((w.away for w in self.watches.values() if w.away is not None), None)

    def find(self, name: str) -> tuple[ResourceWatch, Obj | None]:
        for watch in self.watches.values():
            found = watch.get(name)
            if found is not None:
                return watch, found
        for watch in self.watches.values():
            if watch.gone(name) is not None:
                return watch, None
        raise KeyError(name)


class KubernetesExecutor:
    name = JobKind.KUBERNETES
    remote = True
    started_by_launch = False  # created; its operator's Running condition says it started
    ends_with_host = False

    def __init__(self, config: KubernetesConfig,
                 clients: Callable[[KubernetesPool], KubeApi] | None = None) -> None:
        self.config = config
        connect = clients or (lambda pool: KubeApi(api_client(pool), config.timeout_s))
        self._listener: Callable[[str], None] = lambda handle: None
        self._lock = threading.Lock()
        self._deleted: set[str] = set()  # handles this service deleted (cancel, preemption)
        self._created: dict[str, tuple[Cluster, ResourceKind, str]] = {}  # handle -> where
        # handle -> when a create did not answer, and whether its token needs a Secret
        self._unconfirmed: dict[str, tuple[float, bool]] = {}
        self._replacing: set[str] = set()  # handles whose resource goes before a new launch
        self._runtime_seen: RuntimeSeen = lambda job_id, attempt: False
        self._service_address = config.service_address
        # A restarted service waits this long, once, for its first lists (adopt, sweep).
        self._first_lists_by = time.monotonic() + ADOPT_WAIT_S
        self.clusters: dict[tuple[bool, str, str], Cluster] = {}
        for name, pool in config.pools.items():
            key = cluster_key(pool)
            kinds = {k for p in config.pools.values() if cluster_key(p) == key
                     for k in p.kinds}
            if key not in self.clusters:
                try:
                    api = connect(pool)
                except Exception as exc:  # the client's own: a bad kubeconfig or context
                    self.close()
                    where = "in-cluster credentials" if pool.in_cluster else \
                        f"kubeconfig {pool.kubeconfig or '$KUBECONFIG'}"
                    raise RuntimeError(f"Kubernetes pool {name!r}: cannot load its {where}: "
                                       f"{exc}") from None
                self.clusters[key] = Cluster(api, kinds, config.instance, self._changed)
        for cluster in self.clusters.values():
            for watch in cluster.watches.values():
                watch.start()

    def reach_service_at(self, address: str) -> None:
        self._service_address = address

    def hear_runtime(self, seen: RuntimeSeen) -> None:
        """How to tell that an attempt's runtime has called (a TrainJob's sign of running)."""
        self._runtime_seen = seen

    @property
    def calls(self) -> int:
        return sum(c.api.calls for c in self.clusters.values())

    def _changed(self, handle: str) -> None:
        self._listener(handle)

    def handle_for(self, job_id: str, attempt: int) -> str:
        return f"trainyard-{job_id}-{attempt}"

    def set_exit_listener(self, listener: Callable[[str], None]) -> None:
        self._listener = listener

    def close(self) -> None:
        for cluster in self.clusters.values():
            for watch in cluster.watches.values():
                watch.close()
            cluster.api.close()

    def unavailable(self) -> str | None:
        away = next((why for c in self.clusters.values() if (why := c.away()) is not None),
                    None)
        return AWAY.format(away) if away is not None else None

    # -- launch --------------------------------------------------------------------------

    def pool_of(self, request: LaunchRequest) -> KubernetesPool:
        return pool_of(self.config.pools, request, "Kubernetes")

    def placement(self, request: LaunchRequest, pool: KubernetesPool) -> Placement:
        kind = pool.kind_for(request.framework)
        if kind is None:
            raise LaunchError(f"the pool creates {', '.join(pool.kinds)}, none of them for "
                              f"framework {request.framework!r}")
        address = pool.service_address or self._service_address
        if not address:
            raise LaunchError("the Kubernetes pool has no service_address for its pods to "
                              "reach this service at")
        grace = pool.grace_s if pool.grace_s is not None else self.config.grace_s
        return Placement(RESOURCES[kind], pool.namespace_of(request.team),
                         self.config.instance, address, grace, self.config.tls_ca_pem)

    def launch(self, request: LaunchRequest) -> None:
        if not request.image:
            raise LaunchError("a Kubernetes pool runs container images: give --image")
        pool = self.pool_of(request)
        place = self.placement(request, pool)
        cluster = self.clusters[cluster_key(pool)]
        watch = cluster.watches[place.resource.kind]
        body = manifest(request, pool, place)
        try:
            created = cluster.api.create(place.resource, place.namespace, body)
        except ApiAway as exc:
            watch.suspect(str(exc))  # the jobs still waiting wait for it to answer
            with self._lock:  # it may have been created all the same: looked for by name
                self._unconfirmed[request.handle] = (time.monotonic(),
                                                     pool.token_delivery == "secret")
            raise EngineAway(AWAY.format(exc)) from None
        except ApiRefused as exc:
            if exc.status != 409:
                raise LaunchError(f"the API server refused the {place.resource.kind}: "
                                  f"{exc}") from None
            created = self._ours_already(cluster, place, request, body)
        if pool.token_delivery == "secret":
            self._give_token(cluster, place, request, created)
        watch.put(created)
        with self._lock:
            self._created[request.handle] = (cluster, place.resource, place.namespace)
            self._unconfirmed.pop(request.handle, None)
        return None

    def _ours_already(self, cluster: Cluster, place: Placement, request: LaunchRequest,
                      body: Obj) -> Obj:
        """A launch interrupted after its create: the object of that name is adopted when
        its labels say it is this attempt's, of this service, and given this launch's token
        (each launch mints a new one): in its Secret, or in its spec."""
        try:
            found = cluster.api.get(place.resource, place.namespace, request.handle)
        except ApiAway as exc:
            raise EngineAway(AWAY.format(exc)) from None
        labels = ((found or {}).get("metadata") or {}).get("labels") or {}
        if found is None or labels.get(INSTANCE) != self.config.instance or \
                labels.get(JOB_ID) != request.job_id or \
                labels.get(ATTEMPT) != str(request.attempt):
            raise LaunchError(f"a {place.resource.kind} named {request.handle} exists in "
                              f"namespace {place.namespace} and is not this attempt's")
        if (found.get("metadata") or {}).get("deletionTimestamp"):
            with self._lock:  # an earlier launch's, on its way out: launched again after
                self._replacing.add(request.handle)
            raise EngineAway(f"the {place.resource.kind} of an earlier launch of this "
                             "attempt is being deleted")
        if body["spec"] == found.get("spec"):
            return found
        try:  # env delivery: the new token in the spec its pods are made from
            return cluster.api.patch(place.resource, place.namespace, request.handle,
                                     {"spec": body["spec"]})
        except (ApiAway, ApiRefused) as exc:
            self._replace(cluster, place.resource, place.namespace, request.handle)
            raise EngineAway(f"the {place.resource.kind} of a launch cut short is being "
                             f"replaced ({exc})") from None

    def _replace(self, cluster: Cluster, resource: ResourceKind, namespace: str, handle: str
                 ) -> None:
        """Delete what a launch left unusable; the job is launched again once it is gone."""
        with self._lock:
            self._replacing.add(handle)
        try:
            cluster.api.delete(resource, namespace, handle)
        except (ApiAway, ApiRefused) as exc:  # the next look at it tries again
            log.warning("could not delete %s: %s", handle, exc)

    def _give_token(self, cluster: Cluster, place: Placement, request: LaunchRequest,
                    created: Obj) -> None:
        """The attempt's token in a Secret owned by its resource (replacing an earlier
        launch's); without it the resource cannot start, so it is deleted again."""
        meta = created["metadata"]
        owner = {"apiVersion": place.resource.api_version, "kind": place.resource.kind,
                 "name": meta["name"], "uid": meta.get("uid", "")}
        secret = token_secret(request, place.namespace, self.config.instance, owner)
        try:
            cluster.api.put_secret(place.namespace, secret)
        except ApiAway as exc:
            self._replace(cluster, place.resource, place.namespace, request.handle)
            raise EngineAway(f"could not create the job token's Secret: {exc}") from None
        except ApiRefused as exc:
            self._replace(cluster, place.resource, place.namespace, request.handle)
            hint = "; the cluster serves no Secrets here: set token_delivery = \"env\"" \
                if exc.status == 404 else ""
            raise LaunchError(f"could not create the job token's Secret: {exc}{hint}"
                              ) from None

    # -- following -----------------------------------------------------------------------

    def poll(self, handle: str) -> Observation:
        return self._observe(handle, wait=0.0)

    def adopt(self, handle: str) -> Observation:
        """After a restart: the first look waits for the first list of each kind (once: a
        cluster that does not list by then is looked at again later)."""
        return self._observe(handle, wait=self._first_lists_wait())

    def _first_lists_wait(self) -> float:
        return max(0.0, self._first_lists_by - time.monotonic())

    def _observe(self, handle: str, wait: float) -> Observation:
        for cluster in self.clusters.values():
            if not all(w.synced(wait) for w in cluster.watches.values()):
                away = cluster.away()
                return Observation(Phase.UNKNOWN, message=AWAY.format(away) if away else
                                   "the cluster's resources are not listed yet")
        for cluster in self.clusters.values():
            try:
                watch, obj = cluster.find(handle)
            except KeyError:
                continue
            kind = watch.resource.kind
            if obj is not None and handle in self._unconfirmed:
                obj = self._confirmed(cluster, watch, obj, handle)
            if handle in self._replacing:
                return self._being_replaced(cluster, watch, obj, handle)
            if obj is not None:
                return observe(obj, runtime_seen=self._seen(obj))
            if handle in self._deleted:
                return Observation(Phase.LOST, message=f"its {kind} was deleted on request")
            return Observation(Phase.LOST, retry=True,
                               message=f"its {kind} {handle} was deleted outside Trainyard")
        away = self.unavailable()
        if away is not None:
            return Observation(Phase.UNKNOWN, message=away)
        if handle in self._created:
            return Observation(Phase.LOST, retry=True, message=f"{handle} is gone")
        with self._lock:
            self._replacing.discard(handle)  # gone: it may be launched again
            unconfirmed = self._unconfirmed.get(handle)
        if unconfirmed is not None and time.monotonic() - unconfirmed[0] < UNCONFIRMED_S:
            return Observation(Phase.STARTING)  # a create that did not answer may yet show
        return Observation(Phase.NOT_FOUND, retry=True,
                           message=f"no resource named {handle} exists")

    def _confirmed(self, cluster: Cluster, watch: ResourceWatch, obj: Obj, handle: str
                   ) -> Obj:
        """A create that did not answer went through: its object is this launch's, with
        the token in its spec; one whose token was to go in a Secret never got it, and is
        replaced."""
        with self._lock:
            _, needs_secret = self._unconfirmed.pop(handle)
            self._created[handle] = (cluster, watch.resource, obj["metadata"]["namespace"])
        if needs_secret:
            self._replace(cluster, watch.resource, obj["metadata"]["namespace"], handle)
        return obj

    def _being_replaced(self, cluster: Cluster, watch: ResourceWatch, obj: Obj | None,
                        handle: str) -> Observation:
        """A resource a launch left unusable: starting until it is gone, then not found
        (launched again)."""
        if obj is None:
            with self._lock:
                self._replacing.discard(handle)
            return Observation(Phase.NOT_FOUND)
        if not (obj.get("metadata") or {}).get("deletionTimestamp"):
            try:  # its delete failed before: again
                cluster.api.delete(watch.resource, obj["metadata"]["namespace"], handle)
            except (ApiAway, ApiRefused) as exc:
                log.warning("could not delete %s: %s", handle, exc)
        return Observation(Phase.STARTING, message=f"its {watch.resource.kind} from a launch "
                           "cut short is deleted before it is launched again")

    def _seen(self, obj: Obj) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        try:
            return self._runtime_seen(labels.get(JOB_ID, ""), int(labels.get(ATTEMPT, "0")))
        except ValueError:
            return False

    # -- stopping ------------------------------------------------------------------------

    def _where(self, handle: str) -> tuple[Cluster, ResourceKind, str] | None:
        with self._lock:
            known = self._created.get(handle)
        if known is not None:
            return known
        for cluster in self.clusters.values():
            for watch in cluster.watches.values():
                obj = watch.get(handle)
                if obj is not None:
                    return cluster, watch.resource, obj["metadata"]["namespace"]
        return None

    def cancel(self, handle: str, grace_seconds: float) -> bool:
        """Delete the resource (its pods get TERM and the pod template's grace); True once
        deleted or gone."""
        where = self._where(handle)
        if where is None:
            # Nothing under this name: nothing to stop, once the caches say so.
            return all(w.synced() for c in self.clusters.values() for w in c.watches.values())
        cluster, resource, namespace = where
        with self._lock:
            self._deleted.add(handle)
        try:
            cluster.api.delete(resource, namespace, handle)
        except (ApiAway, ApiRefused) as exc:
            with self._lock:
                self._deleted.discard(handle)
            log.warning("deleting %s: %s", handle, exc)
            return False
        return True

    def release(self, handle: str) -> None:
        """Final in Trainyard: the resource goes, unless its pool keeps finished ones for
        the operator's TTL."""
        where = self._where(handle)
        with self._lock:
            self._created.pop(handle, None)
            self._deleted.discard(handle)
            self._replacing.discard(handle)
        for each in self.clusters.values():
            for watch in each.watches.values():
                watch.forget(handle)
        if where is None:
            return
        cluster, resource, namespace = where
        obj = cluster.watches[resource.kind].get(handle)
        if obj is None or self._keeps(obj):
            return
        try:
            cluster.api.delete(resource, namespace, handle)
        except (ApiAway, ApiRefused) as exc:  # a restarted service sweeps it
            log.warning("could not delete %s: %s", handle, exc)

    def _keeps(self, obj: Obj) -> bool:
        policy = (obj.get("spec") or {}).get("runPolicy") or {}
        return "ttlSecondsAfterFinished" in policy

    def sweep(self, active: set[str]) -> list[str]:
        removed = []
        for cluster in self.clusters.values():
            if cluster.away() is not None:
                continue
            for kind, watch in cluster.watches.items():
                if not watch.synced(self._first_lists_wait()):
                    continue
                for name in watch.names():
                    obj = watch.get(name)
                    if name in active or obj is None or self._keeps(obj):
                        continue
                    namespace = obj["metadata"]["namespace"]
                    try:
                        cluster.api.delete(watch.resource, namespace, name)
                    except (ApiAway, ApiRefused) as exc:
                        log.warning("could not delete orphan %s %s: %s", kind, name, exc)
                        continue
                    removed.append(f"deleted {kind} {namespace}/{name}, which belongs to no "
                                   "active job")
        return removed
