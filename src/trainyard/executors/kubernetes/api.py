"""One cluster's API server, through the official Kubernetes client: the few calls the
backend makes, each counted, and their failures sorted into "away" (ask again later) and
"refused" (the server's own sentence, for the user)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

from kubernetes import client, config
from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError

from trainyard.domain.pools import KubernetesPool
from trainyard.executors.kubernetes.errors import ApiAway, ApiRefused
from trainyard.executors.kubernetes.resources import ResourceKind

Obj = dict[str, Any]


def api_client(pool: KubernetesPool, pool_size: int = 16) -> client.ApiClient:
    """A client for the pool's cluster: in-cluster credentials, or a kubeconfig (the pool's
    path and context, else the default). The client retries nothing: callers decide."""
    configuration = client.Configuration()
    if pool.in_cluster:
        config.load_incluster_config(client_configuration=configuration)
    else:
        config.load_kube_config(config_file=pool.kubeconfig or None,
                                context=pool.context or None,
                                client_configuration=configuration, persist_config=False)
    configuration.retries = 0
    configuration.connection_pool_maxsize = pool_size
    return client.ApiClient(configuration)


def _refusal(exc: ApiException) -> Exception:
    status = int(exc.status or 0)
    message = str(exc.reason or "")
    try:
        body = json.loads(exc.body or "{}")
        message = str(body.get("message") or message)
    except (ValueError, AttributeError, TypeError):
        pass
    if status == 0 or status >= 500 or status == 429:  # it may serve again: ask later
        return ApiAway(f"the API server answered {status}: {message}".rstrip(": "))
    return ApiRefused(status, message)


class KubeApi:
    def __init__(self, api: client.ApiClient, timeout_s: float = 10.0) -> None:
        self.client = api
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self.timeout_s = timeout_s
        self.host = str(api.configuration.host)
        self._lock = threading.Lock()
        self._calls = 0

    @property
    def calls(self) -> int:
        """The calls made so far, a watch counted once per request."""
        return self._calls

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            self._calls += 1
        try:
            return fn(*args, _request_timeout=kwargs.pop("timeout", self.timeout_s), **kwargs)
        except ApiException as exc:
            raise _refusal(exc) from None
        except (HTTPError, OSError) as exc:
            raise ApiAway(f"the API server at {self.host} does not answer "
                          f"({type(exc).__name__})") from None

    def create(self, res: ResourceKind, namespace: str, body: Obj) -> Obj:
        return dict(self._call(self.custom.create_namespaced_custom_object, res.group,
                               res.version, namespace, res.plural, body))

    def get(self, res: ResourceKind, namespace: str, name: str) -> Obj | None:
        try:
            return dict(self._call(self.custom.get_namespaced_custom_object, res.group,
                                   res.version, namespace, res.plural, name))
        except ApiRefused as exc:
            if exc.status == 404:
                return None
            raise

    def delete(self, res: ResourceKind, namespace: str, name: str) -> bool:
        """Delete with foreground propagation (its pods go first); False if it was gone."""
        try:
            self._call(self.custom.delete_namespaced_custom_object, res.group, res.version,
                       namespace, res.plural, name, propagation_policy="Foreground")
        except ApiRefused as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def list(self, res: ResourceKind, selector: str) -> tuple[list[Obj], str]:
        """Every object of the kind (all namespaces) the selector matches, and the list's
        resourceVersion, to watch from."""
        got = self._call(self.custom.list_cluster_custom_object, res.group, res.version,
                         res.plural, label_selector=selector)
        return list(got.get("items") or []), str((got.get("metadata") or {})
                                                 .get("resourceVersion", ""))

    def watch(self, res: ResourceKind, selector: str, resource_version: str,
              timeout_s: int, holder: list[Any]) -> Iterator[Obj]:
        """The watch events (dicts: type, object) from `resource_version`, bookmarks
        included, until the server ends the watch after `timeout_s`. The open response is
        put in `holder`, so another thread can close it."""
        response = self._call(self.custom.list_cluster_custom_object, res.group, res.version,
                              res.plural, label_selector=selector, watch=True,
                              resource_version=resource_version, allow_watch_bookmarks=True,
                              timeout_seconds=timeout_s, _preload_content=False,
                              timeout=timeout_s + self.timeout_s)
        holder.append(response)
        pending = b""
        try:
            for chunk in response.stream(64 * 1024, decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
        except (HTTPError, OSError, ValueError) as exc:
            raise ApiAway(f"the watch of {res.plural} broke off ({type(exc).__name__})"
                          ) from None
        finally:
            response.release_conn()

    def served(self, res: ResourceKind) -> str | None:
        """Why the cluster does not serve the kind (its group and version, its resource),
        or None when it does."""
        try:
            found = self._call(self.custom.get_api_resources, res.group, res.version)
        except ApiRefused as exc:
            if exc.status == 404:
                return f"the cluster does not serve {res.api_version}: install {res.installs}"
            raise
        names = {r.name for r in (found.resources or [])}
        if res.plural not in names:
            return f"the cluster serves {res.api_version} but not {res.plural}: install " \
                f"{res.installs}"
        return None

    def patch(self, res: ResourceKind, namespace: str, name: str, body: Obj) -> Obj:
        """A merge patch of the object."""
        return dict(self._call(self.custom.patch_namespaced_custom_object, res.group,
                               res.version, namespace, res.plural, name, body))

    def put_secret(self, namespace: str, body: Obj) -> None:
        """Create the Secret, or replace one of that name."""
        try:
            self._call(self.core.create_namespaced_secret, namespace, body)
        except ApiRefused as exc:
            if exc.status != 409:
                raise
            self._call(self.core.replace_namespaced_secret, body["metadata"]["name"],
                       namespace, body)

    def nodes(self) -> list[Obj] | None:
        """The nodes' status (dicts), or None where the core API is not served."""
        try:
            got = self._call(self.core.list_node, _preload_content=False)
        except ApiRefused as exc:
            if exc.status in (403, 404):
                return None
            raise
        return list(json.loads(got.data).get("items") or [])

    def close(self) -> None:
        self.client.close()
