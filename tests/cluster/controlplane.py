#!/usr/bin/env python3
"""A real, kubelet-less Kubernetes control plane for kubectl-pvleft's tests.

Runs etcd, kube-apiserver, kube-controller-manager and kube-scheduler from the binaries that
build.sh puts in tests/cluster/bin, all on 127.0.0.1 with free ports, plus three fake (but Ready)
nodes and the RBAC users the plugin's tests log in as.

    python tests/cluster/controlplane.py up --dir DIR     # start and leave running
    python tests/cluster/controlplane.py down --dir DIR   # stop what `up` started

Only the stdlib, pyyaml, the openssl CLI and kubectl are needed.
"""

from __future__ import annotations

import argparse
import base64
import ctypes
import datetime
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
BIN = HERE / "bin"
BUILD_SH = HERE / "build.sh"
CLUSTERROLE_YAML = HERE.parent.parent / "plugin" / "clusterrole.yaml"

READY_TIMEOUT = 90.0
STOP_TIMEOUT = 5.0
SERVICE_CIDR = "10.0.0.0/24"
SERVICE_IP = "10.0.0.1"  # first IP of SERVICE_CIDR: the `kubernetes` Service, so it must be a SAN
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
NAMESPACED_NS = "team-a"

# Only the controllers the storage tests rely on. Deliberately absent: node-lifecycle-controller
# (it would mark the kubelet-less nodes NotReady and taint them) and pod-garbage-collector-controller
# (it would delete Pods bound to nodes with no kubelet).
CONTROLLERS: tuple[str, ...] = (
    "persistentvolume-binder-controller",
    "persistentvolume-attach-detach-controller",
    "persistentvolumeclaim-protection-controller",
    "persistentvolume-protection-controller",
    "persistentvolume-expander-controller",
    "serviceaccount-controller",  # the `default` SA, without which Pods are rejected at admission
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",  # kube-root-ca.crt, referenced by every Pod's token volume
    "namespace-controller",
    "garbage-collector-controller",
    # The workloads that mount a claim again (claims: unused by design): their controllers create and scale the
    # Pods and a StatefulSet's claims. Their Pods stay Pending or scheduled: the nodes have no kubelet.
    "statefulset-controller",
    "replicaset-controller",
    "deployment-controller",
    "job-controller",
    "cronjob-controller",
    # The oracle of pending's SELinux pre-flight: its SELinuxLabelConflict / SELinuxChangePolicyConflict events on
    # Pods sharing a volume whose CSIDriver sets seLinuxMount (disabled by default; its gate is GA in 1.37).
    "selinux-warning-controller",
)

# Feature gates given to kube-apiserver and kube-controller-manager alike. PersistentVolumeClaimUnusedSinceTime
# (beta in 1.37, on by default) is named anyway so the tests do not depend on the default: with it the
# persistentvolumeclaim-protection-controller writes the PVC condition `Unused`. A ControlPlane may override it
# (feature_gates=...) to test a server that does not write it.
FEATURE_GATES: dict[str, bool] = {"PersistentVolumeClaimUnusedSinceTime": True}

NODES: tuple[tuple[str, str], ...] = (("node-a", "zone-a"), ("node-b", "zone-b"), ("node-c", "zone-c"))
NODE_RESOURCES = {"cpu": "8", "memory": "32Gi", "pods": "110"}

# Client identities: kubeconfig name -> (CN, O). Users here get a kubeconfig in the workdir.
USERS: dict[str, tuple[str, str | None]] = {
    "admin": ("pvleft-admin", "system:masters"),
    "reader": ("pvleft-reader-user", None),
    "pvonly": ("pvleft-pvonly-user", None),
    "namespaced": ("pvleft-namespaced-user", None),
    "listonly": ("pvleft-listonly-user", None),  # may list and watch, never get: a 403 that must not mean "absent"
}
COMPONENTS: dict[str, tuple[str, str | None]] = {
    "kube-controller-manager": ("system:kube-controller-manager", None),
    "kube-scheduler": ("system:kube-scheduler", None),
}
PROCESS_ORDER = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")

AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    # One event per request (at ResponseComplete) is enough to see who did what.
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata"}],
}


class ControlPlaneError(RuntimeError):
    pass


class KubectlError(subprocess.CalledProcessError):
    """CalledProcessError whose message includes kubectl's stderr, which is where the reason is."""

    def __str__(self) -> str:
        return f"{super().__str__()}\nstdout: {self.stdout}\nstderr: {self.stderr}"


@dataclass
class _Proc:
    name: str
    argv: list[str]
    pid: int
    popen: subprocess.Popen[bytes] | None = None  # None when attached to processes started by another run


def binaries_present() -> bool:
    return all(os.access(BIN / name, os.X_OK) for name in PROCESS_ORDER)


def build(log: Path | None = None) -> None:
    """Run build.sh (a no-op when the binaries are up to date). Raises with the output tail on failure."""
    if log is None:
        res = subprocess.run(["bash", str(BUILD_SH)], check=False)
        if res.returncode != 0:
            raise ControlPlaneError(f"{BUILD_SH} failed with rc={res.returncode}")
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        res = subprocess.run(["bash", str(BUILD_SH)], stdout=out, stderr=subprocess.STDOUT, check=False)
    if res.returncode != 0:
        raise ControlPlaneError(f"{BUILD_SH} failed with rc={res.returncode}; log {log}:\n{_tail(log)}")


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return f"(no {path})"


def _free_ports(n: int) -> list[int]:
    # Hold all sockets open until every port is picked so the n ports are distinct.
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _pid_alive(pid: int, binary: str) -> bool:
    """True if pid runs `binary` and is not a zombie: guards against killing a recycled PID."""
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return argv0 == binary and state not in ("Z", "X")


def _die_with_parent() -> None:
    # Fixture mode: if pytest is SIGKILLed, the kernel sends the children SIGTERM instead of orphaning them.
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


class ControlPlane:
    def __init__(self, workdir: Path, extra_apiserver_args: Sequence[str] = (),
                 feature_gates: dict[str, bool] | None = None) -> None:
        self.workdir = Path(workdir).resolve()
        # Opt-in flags for a plane of a test's own (e.g. --oidc-issuer-url); the session's plane has none.
        self.extra_apiserver_args = tuple(extra_apiserver_args)
        self.feature_gates = {**FEATURE_GATES, **(feature_gates or {})}
        self.pki = self.workdir / "pki"
        self.logs = self.workdir / "logs"
        self.etcd_data = self.workdir / "etcd-data"
        self.audit_log = self.workdir / "audit.log"
        self.audit_policy = self.workdir / "audit-policy.yaml"
        self.pids_file = self.workdir / "pids.json"
        self.state_file = self.workdir / "state.json"
        self.ports: dict[str, int] = {}
        self._procs: dict[str, _Proc] = {}
        self._detach = False

    # ---- public API -------------------------------------------------------------------------------

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    def kubeconfig(self, name: str = "admin") -> Path:
        if name not in USERS:
            raise KeyError(f"unknown user {name!r}; one of {sorted(USERS)}")
        return self.workdir / f"{name}.kubeconfig"

    def kubectl(
        self,
        *args: str,
        kubeconfig: str = "admin",
        input: str | None = None,
        check: bool = True,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl as one of the USERS."""
        cmd = ["kubectl", "--kubeconfig", str(self.kubeconfig(kubeconfig)), *args]
        res = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout, check=False)
        if check and res.returncode != 0:
            raise KubectlError(res.returncode, cmd, res.stdout, res.stderr)
        return res

    def audit_events(self, containing: str = "", since: int = 0) -> list[dict[str, Any]]:
        """The audit log's events from byte ``since`` on (``audit_log.stat().st_size`` taken earlier), those whose
        line holds ``containing``. The API server appends as it goes: a last line without its newline is still being
        written, and is left for the next read."""
        with self.audit_log.open("rb") as log:
            log.seek(since)
            lines = log.read().split(b"\n")[:-1]  # the piece after the last newline: not a whole line yet
        needle = containing.encode()
        return [json.loads(line) for line in lines if line.strip() and needle in line]

    def api(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        user: str = "admin",
        content_type: str = "application/json",
        timeout: float = 10,
    ) -> tuple[int, Any]:
        """A raw API call as one of the USERS: (HTTP status, decoded JSON body or text)."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self._ssl_context(user), timeout=timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")

    def start(self, detach: bool = False) -> None:
        """Start everything and wait until it is usable. detach=True: processes outlive this Python process."""
        missing = [n for n in PROCESS_ORDER if not os.access(BIN / n, os.X_OK)]
        if missing:
            raise ControlPlaneError(f"missing {missing} in {BIN}; run bash {BUILD_SH}")
        if self.attach():
            raise ControlPlaneError(f"a control plane is already running from {self.workdir}")
        for leftover in self._procs_from_pids_file().values():  # survivors of a half-dead plane
            self._terminate(leftover)
        self._detach = detach
        # A fresh cluster (data, logs, audit) every start: only the certificates are reused.
        for old in (self.etcd_data, self.logs):
            shutil.rmtree(old, ignore_errors=True)
        self.audit_log.unlink(missing_ok=True)
        self.logs.mkdir(parents=True)
        try:
            self._ensure_pki()
            etcd, etcd_peer, apiserver, kcm, sched = _free_ports(5)
            self.ports = {"etcd": etcd, "etcd-peer": etcd_peer, "apiserver": apiserver,
                          "kube-controller-manager": kcm, "kube-scheduler": sched}
            self._write_kubeconfigs()
            self.audit_policy.write_text(yaml.safe_dump(AUDIT_POLICY))

            self._spawn("etcd", self._etcd_argv())
            self._wait("etcd /health", self._etcd_healthy)
            self._spawn("kube-apiserver", self._apiserver_argv())
            self._wait("kube-apiserver /readyz", self._apiserver_ready)
            self._spawn("kube-controller-manager", self._kcm_argv())
            self._spawn("kube-scheduler", self._scheduler_argv())
            self._wait("kube-controller-manager /healthz", lambda: self._component_healthy("kube-controller-manager"))
            self._wait("kube-scheduler /healthz", lambda: self._component_healthy("kube-scheduler"))
            self._write_state()
            # The ServiceAccount admission plugin rejects Pods until the SA controller made `default`.
            self._wait("ServiceAccount default/default",
                       lambda: self.api("GET", "/api/v1/namespaces/default/serviceaccounts/default")[0] == 200)
            self._apply_rbac()
            self._create_nodes()
            (self.workdir / "env.sh").write_text(f"export KUBECONFIG={self.kubeconfig('admin')}\n")
        except BaseException:
            self.stop(keep_logs=True)
            raise

    def attach(self) -> bool:
        """Adopt processes a previous `start` left running in workdir (e.g. `up`). False if not all alive."""
        try:
            pids = json.loads(self.pids_file.read_text())
            state = json.loads(self.state_file.read_text())
        except (FileNotFoundError, ValueError):
            return False
        if set(pids) != set(PROCESS_ORDER) or not all(_pid_alive(pids[n], str(BIN / n)) for n in PROCESS_ORDER):
            return False
        self.ports = state["ports"]
        self._detach = True
        self._procs = {n: _Proc(n, state["argv"][n], pids[n]) for n in PROCESS_ORDER}
        return True

    def stop(self, keep_logs: bool = True) -> None:
        """Terminate by PID (SIGTERM, then SIGKILL), newest first. Also works on an attach()ed plane."""
        if not self._procs:
            self.attach()
            if not self._procs:  # attach() refuses half-dead planes: take whatever pids are still ours
                self._procs = self._procs_from_pids_file()
        for name in reversed(list(self._procs)):
            self._terminate(self._procs.pop(name))
        self.pids_file.unlink(missing_ok=True)
        shutil.rmtree(self.etcd_data, ignore_errors=True)  # start() never reuses it
        if not keep_logs:
            shutil.rmtree(self.logs, ignore_errors=True)
            self.audit_log.unlink(missing_ok=True)

    def restart_apiserver(self, down_for: float = 0.0, while_down: Callable[[], None] | None = None) -> None:
        """Stop and start kube-apiserver on the same port (KCM and scheduler reconnect on their own), ``down_for``
        seconds apart: an outage its clients see as refused connections. ``while_down`` runs with no server up
        (etcd still is): what it does, no client can have watched."""
        proc = self._procs.get("kube-apiserver")
        if proc is None:
            raise ControlPlaneError("kube-apiserver is not running")
        self._terminate(proc)
        if while_down is not None:
            while_down()
        time.sleep(down_for)
        self._spawn("kube-apiserver", proc.argv)
        self._wait("kube-apiserver /readyz after restart", self._apiserver_ready)
        self._write_state()

    # ---- certificates -----------------------------------------------------------------------------

    def _ensure_pki(self) -> None:
        """Create the CA, serving/client certs and the SA key pair with openssl; keep what exists."""
        self.pki.mkdir(parents=True, exist_ok=True)
        ca_crt, ca_key = self.pki / "ca.crt", self.pki / "ca.key"
        if not (ca_crt.exists() and ca_key.exists()):
            for old in self.pki.iterdir():  # leaves signed by a lost CA are useless
                old.unlink()
            self._openssl_cnf("ca.cnf", "basicConstraints = critical,CA:TRUE\n"
                              "keyUsage = critical,keyCertSign,cRLSign,digitalSignature\n"
                              "subjectKeyIdentifier = hash\n")
            self._run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                       "-out", str(ca_key)])
            self._run(["openssl", "req", "-x509", "-new", "-key", str(ca_key), "-subj", "/CN=pvleft-test-ca",
                       "-days", "3650", "-config", str(self.pki / "ca.cnf"), "-extensions", "ext",
                       "-out", str(ca_crt)])
        sans = ["IP:127.0.0.1", f"IP:{SERVICE_IP}", "DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default",
                "DNS:kubernetes.default.svc", "DNS:kubernetes.default.svc.cluster.local"]
        self._leaf("apiserver", "kube-apiserver", None, "serverAuth", sans)
        for name, (cn, org) in {**USERS, **COMPONENTS}.items():
            self._leaf(name, cn, org, "clientAuth")
        sa_key, sa_pub = self.pki / "sa.key", self.pki / "sa.pub"
        if not (sa_key.exists() and sa_pub.exists()):
            self._run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                       "-out", str(sa_key)])
            self._run(["openssl", "pkey", "-in", str(sa_key), "-pubout", "-out", str(sa_pub)])

    def _leaf(self, name: str, cn: str, org: str | None, usage: str, sans: Sequence[str] = ()) -> None:
        crt, key = self.pki / f"{name}.crt", self.pki / f"{name}.key"
        if crt.exists() and key.exists():
            return
        ext = ("basicConstraints = critical,CA:FALSE\nkeyUsage = critical,digitalSignature,keyEncipherment\n"
               f"extendedKeyUsage = {usage}\n")
        if sans:
            ext += f"subjectAltName = {','.join(sans)}\n"
        cnf = self._openssl_cnf(f"{name}.cnf", ext)
        csr = self.pki / f"{name}.csr"
        subj = (f"/O={org}" if org else "") + f"/CN={cn}"
        self._run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(key)])
        self._run(["openssl", "req", "-new", "-key", str(key), "-subj", subj, "-config", str(cnf), "-out", str(csr)])
        self._run(["openssl", "x509", "-req", "-in", str(csr), "-CA", str(self.pki / "ca.crt"),
                   "-CAkey", str(self.pki / "ca.key"), "-set_serial", f"0x{secrets.token_hex(16)}",
                   "-days", "3650", "-extfile", str(cnf), "-extensions", "ext", "-out", str(crt)])
        csr.unlink()

    def _openssl_cnf(self, name: str, ext: str) -> Path:
        # Self-contained config so the system openssl.cnf (and its default extensions) play no part.
        path = self.pki / name
        path.write_text(f"[req]\ndistinguished_name = dn\nprompt = no\n[dn]\n[ext]\n{ext}")
        return path

    @staticmethod
    def _run(cmd: list[str]) -> None:
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise ControlPlaneError(f"{' '.join(cmd)} failed:\n{res.stderr}")

    # ---- kubeconfigs ------------------------------------------------------------------------------

    def _write_kubeconfigs(self) -> None:
        for name, (cn, _) in {**USERS, **COMPONENTS}.items():
            context = f"pvleft-{name}"
            namespace = NAMESPACED_NS if name == "namespaced" else "default"
            cfg = {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "pvleft-test", "cluster": {
                    "server": self.server, "certificate-authority-data": _b64(self.pki / "ca.crt")}}],
                "users": [{"name": cn, "user": {
                    "client-certificate-data": _b64(self.pki / f"{name}.crt"),
                    "client-key-data": _b64(self.pki / f"{name}.key")}}],
                "contexts": [{"name": context, "context": {
                    "cluster": "pvleft-test", "user": cn, "namespace": namespace}}],
                "current-context": context,
            }
            path = self.workdir / f"{name}.kubeconfig"
            path.write_text(yaml.safe_dump(cfg, sort_keys=False))
            path.chmod(0o600)

    # ---- processes --------------------------------------------------------------------------------

    def _etcd_argv(self) -> list[str]:
        client, peer = f"http://127.0.0.1:{self.ports['etcd']}", f"http://127.0.0.1:{self.ports['etcd-peer']}"
        return [
            str(BIN / "etcd"),
            "--name=pvleft",
            f"--data-dir={self.etcd_data}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=pvleft={peer}",
            "--initial-cluster-state=new",
            "--unsafe-no-fsync",  # test data: durability is pointless, fsync latency is not
            "--log-level=warn",
        ]

    def _apiserver_argv(self) -> list[str]:
        p = self.pki
        return [
            str(BIN / "kube-apiserver"),
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            # The lease reconciler refuses a loopback address for the `kubernetes` Endpoints (fatal
            # since 1.37); nothing in-cluster dials the apiserver through that Service anyway.
            "--endpoint-reconciler-type=none",
            f"--secure-port={self.ports['apiserver']}",
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            f"--tls-cert-file={p / 'apiserver.crt'}",
            f"--tls-private-key-file={p / 'apiserver.key'}",
            f"--client-ca-file={p / 'ca.crt'}",
            "--authorization-mode=Node,RBAC",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--service-account-issuer={SA_ISSUER}",
            f"--service-account-key-file={p / 'sa.pub'}",
            f"--service-account-signing-key-file={p / 'sa.key'}",
            f"--audit-policy-file={self.audit_policy}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-mode=blocking",  # the event is on disk before the client sees the response
            "--profiling=false",
            # Otherwise SIGTERM waits out the 60s request timeout on the controllers' open watches;
            # this way it drains short requests, then gives HTTP shutdown 2s.
            "--shutdown-send-retry-after=true",
            *self.extra_apiserver_args,
            self._feature_gates_flag(),
        ]

    def _feature_gates_flag(self) -> str:
        return "--feature-gates=" + ",".join(f"{k}={str(v).lower()}" for k, v in sorted(self.feature_gates.items()))

    # No --authentication/--authorization-kubeconfig for KCM and scheduler: their own HTTPS port only
    # serves /healthz here (always allowed), and the delegated lookup would log errors forever
    # about the requestheader CA this cluster has no use for.
    def _kcm_argv(self) -> list[str]:
        kubeconfig = self.workdir / "kube-controller-manager.kubeconfig"
        return [
            str(BIN / "kube-controller-manager"),
            f"--kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.ports['kube-controller-manager']}",
            f"--controllers={','.join(CONTROLLERS)}",
            "--leader-elect=false",
            # The system:kube-controller-manager role only lists/watches; the PV binder etc. need their
            # own bootstrap roles (system:controller:*), which they get through per-controller SA tokens.
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={self.pki / 'sa.key'}",
            f"--root-ca-file={self.pki / 'ca.crt'}",
            # Its default, /usr/libexec/kubernetes/..., would be created on the host.
            f"--flex-volume-plugin-dir={self.workdir / 'flexvolume'}",
            self._feature_gates_flag(),
            "--v=2",
        ]

    def _scheduler_argv(self) -> list[str]:
        kubeconfig = self.workdir / "kube-scheduler.kubeconfig"
        return [
            str(BIN / "kube-scheduler"),
            f"--kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.ports['kube-scheduler']}",
            "--leader-elect=false",
            "--v=2",
        ]

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = self.logs / f"{name}.log"
        with log.open("ab") as out:
            out.write(f"\n===== {_now()} starting: {' '.join(argv)}\n".encode())
            out.flush()
            popen = subprocess.Popen(
                argv,
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=self._detach,
                preexec_fn=None if self._detach else _die_with_parent,  # noqa: PLW1509 (PDEATHSIG has no other way in)
            )
        self._procs[name] = _Proc(name, argv, popen.pid, popen)
        self._write_pids()

    def _alive(self, proc: _Proc) -> bool:
        if proc.popen is not None:
            return proc.popen.poll() is None
        return _pid_alive(proc.pid, proc.argv[0])

    def _terminate(self, proc: _Proc) -> None:
        for sig, grace in ((signal.SIGTERM, STOP_TIMEOUT), (signal.SIGKILL, STOP_TIMEOUT)):
            if not self._alive(proc):
                break
            try:
                os.kill(proc.pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + grace
            while self._alive(proc) and time.monotonic() < deadline:
                time.sleep(0.05)
        if proc.popen is not None:
            proc.popen.wait(timeout=STOP_TIMEOUT)
        self._write_pids()

    def _procs_from_pids_file(self) -> dict[str, _Proc]:
        try:
            pids: dict[str, int] = json.loads(self.pids_file.read_text())
        except (FileNotFoundError, ValueError):
            return {}
        return {n: _Proc(n, [str(BIN / n)], pid) for n, pid in pids.items()
                if n in PROCESS_ORDER and _pid_alive(pid, str(BIN / n))}

    def _write_pids(self) -> None:
        pids = {n: p.pid for n, p in self._procs.items() if self._alive(p)}
        self.pids_file.write_text(json.dumps(pids, indent=2) + "\n")

    def _write_state(self) -> None:
        state = {"server": self.server, "ports": self.ports, "argv": {n: p.argv for n, p in self._procs.items()}}
        self.state_file.write_text(json.dumps(state, indent=2) + "\n")

    # ---- readiness --------------------------------------------------------------------------------

    def _wait(self, what: str, probe: Callable[[], bool], timeout: float = READY_TIMEOUT) -> None:
        """Poll probe() until true; fail fast with the log tail if any started process exits meanwhile."""
        deadline = time.monotonic() + timeout
        last_error = ""
        while True:
            for proc in self._procs.values():
                if not self._alive(proc):
                    rc = proc.popen.returncode if proc.popen else "?"
                    log = self.logs / f"{proc.name}.log"
                    raise ControlPlaneError(f"{proc.name} exited (rc={rc}) while waiting for {what}; "
                                            f"tail of {log}:\n{_tail(log)}")
            try:
                if probe():
                    return
            except (OSError, urllib.error.URLError, ssl.SSLError, ValueError) as e:
                last_error = f" (last error: {e})"
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"timed out after {timeout:.0f}s waiting for {what}{last_error}; "
                                        f"logs in {self.logs}")
            time.sleep(0.2)

    def _ssl_context(self, user: str) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        ctx.load_cert_chain(str(self.pki / f"{user}.crt"), str(self.pki / f"{user}.key"))
        return ctx

    def _etcd_healthy(self) -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ports['etcd']}/health", timeout=2) as resp:
            return json.load(resp).get("health") == "true"

    def _apiserver_ready(self) -> bool:
        status, _ = self.api("GET", "/readyz", timeout=5)
        return status == 200

    def _component_healthy(self, name: str) -> bool:
        # Self-signed serving certs; /healthz is in their always-allowed paths, no client auth needed.
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{self.ports[name]}/healthz"
        with urllib.request.urlopen(url, context=ctx, timeout=2) as resp:
            return resp.status == 200

    # ---- cluster objects --------------------------------------------------------------------------

    def _apply_rbac(self) -> None:
        reader, pvonly, namespaced, listonly = (USERS[n][0] for n in ("reader", "pvonly", "namespaced", "listonly"))
        read = ["get", "list", "watch"]
        docs: list[dict[str, Any]] = [
            _binding("ClusterRoleBinding", "pvleft-reader", "ClusterRole", "pvleft-reader", reader),
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "pvleft-pv-only"},
             "rules": [  # like pvleft-reader minus persistentvolumeclaims
                 {"apiGroups": [""], "resources": ["persistentvolumes", "pods", "events", "nodes"], "verbs": read},
                 {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": read},
                 {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses", "csidrivers"], "verbs": read},
             ]},
            _binding("ClusterRoleBinding", "pvleft-pv-only", "ClusterRole", "pvleft-pv-only", pvonly),
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACED_NS}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": "pvleft-namespaced", "namespace": NAMESPACED_NS},
             "rules": [
                 {"apiGroups": [""], "resources": ["persistentvolumeclaims", "pods", "events"], "verbs": read},
                 {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": read},
             ]},
            _binding("RoleBinding", "pvleft-namespaced", "Role", "pvleft-namespaced", namespaced, NAMESPACED_NS),
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "pvleft-list-only"},
             "rules": [{"apiGroups": [""], "resources": ["persistentvolumes", "persistentvolumeclaims"],
                        "verbs": ["list", "watch"]}]},
            _binding("ClusterRoleBinding", "pvleft-list-only", "ClusterRole", "pvleft-list-only", listonly),
        ]
        # The plugin's documented role goes in untouched, from its own file.
        self.kubectl("apply", "-f", str(CLUSTERROLE_YAML), "-f", "-", input=yaml.safe_dump_all(docs))

    def _create_nodes(self) -> None:
        """Three Ready nodes with no kubelet; nothing flips them NotReady since node-lifecycle is off."""
        for name, zone in NODES:
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": zone}}}
            self._must("POST", "/api/v1/nodes", node, ok=(201, 409))
            # TaintNodesByCondition admission adds node.kubernetes.io/not-ready on create; normally
            # node-lifecycle-controller lifts it once Ready, here we must.
            self._must("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": None}},
                       content_type="application/merge-patch+json")
            now = _now()
            status = {"status": {
                "capacity": NODE_RESOURCES,
                "allocatable": NODE_RESOURCES,
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                "message": "fake node for kubectl-pvleft tests (no kubelet)",
                                "lastHeartbeatTime": now, "lastTransitionTime": now}],
                "addresses": [{"type": "Hostname", "address": name}],
            }}
            self._must("PATCH", f"/api/v1/nodes/{name}/status", status, content_type="application/merge-patch+json")

        def nodes_ready() -> bool:
            _, body = self._must("GET", "/api/v1/nodes")
            ready = {n["metadata"]["name"] for n in body["items"] if not n["spec"].get("taints") and any(
                c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))}
            return ready >= {name for name, _ in NODES}

        self._wait("nodes Ready", nodes_ready)

    def _must(self, method: str, path: str, body: Any = None, *, ok: Iterable[int] = (200,),
              content_type: str = "application/json") -> tuple[int, Any]:
        status, resp = self.api(method, path, body, content_type=content_type)
        if status not in ok:
            raise ControlPlaneError(f"{method} {path}: HTTP {status}: {resp}")
        return status, resp


# What the `own_plane` fixture (tests/conftest.py) hands a module: ``with own_plane("name", **options) as plane:``.
OwnPlane = Callable[..., AbstractContextManager[ControlPlane]]


def _binding(kind: str, name: str, role_kind: str, role: str, user: str, namespace: str | None = None) -> dict:
    meta: dict[str, str] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}


# ---- CLI ------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "down"])
    parser.add_argument("--dir", required=True, type=Path, help="work directory (certs, kubeconfigs, logs)")
    args = parser.parse_args(argv)
    cp = ControlPlane(args.dir)
    me = f"python {Path(__file__).resolve()}"

    if args.command == "down":
        running = cp.attach()
        cp.stop(keep_logs=True)
        print("stopped" if running else "nothing running (leftover pids, if any, were stopped)", f"in {cp.workdir}")
        return 0

    if cp.attach():
        print(f"already running: {cp.server} (pids in {cp.pids_file})")
    else:
        build()
        started = time.monotonic()
        cp.start(detach=True)
        print(f"control plane up at {cp.server} in {time.monotonic() - started:.1f}s; logs in {cp.logs}")
    print(f"export KUBECONFIG={cp.kubeconfig('admin')}")
    print(f"stop with: {me} down --dir {cp.workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
