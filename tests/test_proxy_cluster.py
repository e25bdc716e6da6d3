"""Through real proxies to the real control plane, with kubectl 1.33 on the same kubeconfig as the oracle.

squid (HTTP CONNECT, with and without Basic proxy auth) and danted (SOCKS5) run on loopback (tests/proxies.py).
The API server is named PROXY_ONLY_NAME, which only squid's hosts file resolves: a run that went around the
proxy cannot succeed. The apiserver's certificate does not carry that name, so those kubeconfigs say
``tls-server-name: kubernetes`` (one of its SANs), which also shows SNI and verification happen inside the tunnel
as without a proxy. danted resolves with the system, so its own log shows the connection went through it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import pytest
import yaml

import proxies
from loopback import free_port
from plugin_runner import PLUGIN, run_plugin

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(not proxies.available(), reason="squid and dante-server are not installed")]

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
NO_PROXY_ENV = dict.fromkeys(("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"), "")


@pytest.fixture(scope="module")
def squid() -> Iterator[proxies.Squid]:
    proxy = proxies.Squid().start()
    yield proxy
    proxy.stop()


@pytest.fixture(scope="module")
def squid_auth() -> Iterator[proxies.Squid]:
    proxy = proxies.Squid(auth=True).start()
    yield proxy
    proxy.stop()


@pytest.fixture(scope="module")
def danted() -> Iterator[proxies.Danted]:
    proxy = proxies.Danted().start()
    yield proxy
    proxy.stop()


def port(cluster) -> int:
    return int(cluster.server.rsplit(":", 1)[1])


def kubeconfig(cluster, path: Path, host: str, **cluster_fields) -> Path:
    """The admin kubeconfig with another server host and extra cluster keys (proxy-url, tls-server-name)."""
    config = yaml.safe_load(cluster.kubeconfig("admin").read_text())
    entry = config["clusters"][0]["cluster"]
    entry["server"] = f"https://{host}:{port(cluster)}"
    entry.update(cluster_fields)
    path.write_text(yaml.safe_dump(config))
    return path


def both(path: Path, env: Optional[dict] = None, *flags: str) -> tuple[subprocess.CompletedProcess,
                                                                        subprocess.CompletedProcess]:
    """kubectl get pv and the plugin's leftovers on one kubeconfig, in one environment."""
    full_env = {**os.environ, **NO_PROXY_ENV, **(env or {})}
    theirs = subprocess.run([KUBECTL, "--kubeconfig", str(path), "get", "pv", "--request-timeout", "10s"],
                            capture_output=True, text=True, env=full_env, timeout=60, check=False)
    ours = run_plugin(path, "leftovers", "--request-timeout", "10s", *flags, env={**NO_PROXY_ENV, **(env or {})},
                      timeout=60)
    return theirs, ours


def test_proxy_url_tunnels_to_a_name_only_the_proxy_resolves(cluster, squid, tmp_path):
    path = kubeconfig(cluster, tmp_path / "k", proxies.PROXY_ONLY_NAME, **{"proxy-url": squid.url,
                                                                           "tls-server-name": "kubernetes"})
    before = len(squid.tunnels())
    theirs, ours = both(path, None, "-v", "6")
    assert theirs.returncode == 0, theirs.stderr
    assert ours.returncode == 0, ours.stderr
    assert squid.tunnels()[before:].count(f"{proxies.PROXY_ONLY_NAME}:{port(cluster)}") >= 2  # kubectl's and ours
    proxy_lines = [line for line in ours.stderr.splitlines() if '"Proxy"' in line]
    assert proxy_lines and f'url="{squid.url}"' in proxy_lines[0] and 'from="proxy-url"' in proxy_lines[0]


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "https_proxy"])
def test_https_proxy_from_the_environment(cluster, squid, tmp_path, variable):
    path = kubeconfig(cluster, tmp_path / "k", proxies.PROXY_ONLY_NAME, **{"tls-server-name": "kubernetes"})
    theirs, ours = both(path, {variable: squid.url})
    assert (theirs.returncode, ours.returncode) == (0, 0), (theirs.stderr, ours.stderr)


def test_a_proxy_value_without_a_scheme_is_http(cluster, squid, tmp_path):
    path = kubeconfig(cluster, tmp_path / "k", proxies.PROXY_ONLY_NAME, **{"tls-server-name": "kubernetes"})
    theirs, ours = both(path, {"HTTPS_PROXY": f"127.0.0.1:{squid.port}"})
    assert (theirs.returncode, ours.returncode) == (0, 0), (theirs.stderr, ours.stderr)


@pytest.mark.parametrize("no_proxy", [proxies.PROXY_ONLY_NAME, ".proxy-only.test", "proxy-only.test", "*",
                                      f"{proxies.PROXY_ONLY_NAME}:{{port}}"])
def test_no_proxy_sends_the_request_direct(cluster, squid, tmp_path, no_proxy):
    """Direct, the name does not resolve: both fail, and squid saw no tunnel."""
    path = kubeconfig(cluster, tmp_path / "k", proxies.PROXY_ONLY_NAME, **{"tls-server-name": "kubernetes"})
    before = len(squid.tunnels())
    theirs, ours = both(path, {"HTTPS_PROXY": squid.url, "NO_PROXY": no_proxy.format(port=port(cluster))})
    assert theirs.returncode != 0 and ours.returncode != 0
    assert squid.tunnels()[before:] == []
    assert len(ours.stderr.strip().splitlines()) == 1 and ours.stderr.startswith("error: ")


def test_no_proxy_for_another_port_still_proxies(cluster, squid, tmp_path):
    path = kubeconfig(cluster, tmp_path / "k", proxies.PROXY_ONLY_NAME, **{"tls-server-name": "kubernetes"})
    theirs, ours = both(path, {"HTTPS_PROXY": squid.url, "NO_PROXY": f"{proxies.PROXY_ONLY_NAME}:1"})
    assert (theirs.returncode, ours.returncode) == (0, 0), (theirs.stderr, ours.stderr)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_loopback_is_never_proxied_from_the_environment(cluster, squid, tmp_path, host):
    path = kubeconfig(cluster, tmp_path / "k", host)
    before = len(squid.tunnels())
    theirs, ours = both(path, {"HTTPS_PROXY": squid.url})
    assert (theirs.returncode, ours.returncode) == (0, 0), (theirs.stderr, ours.stderr)
    assert squid.tunnels()[before:] == []


def test_proxy_url_is_used_even_for_loopback_and_wins_over_the_environment(cluster, squid, tmp_path):
    path = kubeconfig(cluster, tmp_path / "k", "127.0.0.1", **{"proxy-url": squid.url})
    before = len(squid.tunnels())
    theirs, ours = both(path, {"HTTPS_PROXY": "http://127.0.0.1:1"})  # nothing listens there
    assert (theirs.returncode, ours.returncode) == (0, 0), (theirs.stderr, ours.stderr)
    assert squid.tunnels()[before:].count(f"127.0.0.1:{port(cluster)}") >= 2


def test_sni_and_verification_inside_the_tunnel_as_without_a_proxy(cluster, squid, tmp_path):
    """Without tls-server-name the proxy-only name is not in the certificate: both refuse it."""
    path = kubeconfig(cluster, tmp_path / "k", proxies.PROXY_ONLY_NAME, **{"proxy-url": squid.url})
    theirs, ours = both(path)
    assert theirs.returncode != 0 and "certificate" in theirs.stderr
    assert ours.returncode != 0 and ours.stderr.startswith("error: ") and "certificate" in ours.stderr
    assert len(ours.stderr.strip().splitlines()) == 1


def test_proxy_credentials_are_sent_and_never_shown(cluster, squid_auth, tmp_path):
    url = squid_auth.url_with_credentials()
    path = kubeconfig(cluster, tmp_path / "k", proxies.PROXY_ONLY_NAME, **{"proxy-url": url,
                                                                           "tls-server-name": "kubernetes"})
    theirs, ours = both(path, None, "-v", "9")
    assert (theirs.returncode, ours.returncode) == (0, 0), (theirs.stderr, ours.stderr)
    assert proxies.PROXY_PASSWORD not in ours.stderr + ours.stdout
    assert f"http://<redacted>@127.0.0.1:{squid_auth.port}" in ours.stderr
    assert any(f" {proxies.PROXY_USER} " in line for line in squid_auth.log_lines())  # squid logged who it was

    # The same credentials from the environment.
    path = kubeconfig(cluster, tmp_path / "e", proxies.PROXY_ONLY_NAME, **{"tls-server-name": "kubernetes"})
    theirs, ours = both(path, {"HTTPS_PROXY": url}, "-v", "9")
    assert (theirs.returncode, ours.returncode) == (0, 0), (theirs.stderr, ours.stderr)
    assert proxies.PROXY_PASSWORD not in ours.stderr + ours.stdout


@pytest.mark.parametrize("credentials", [None, ("pvleft", "wrong-password")])
def test_a_proxy_that_wants_credentials_is_one_error_line(cluster, squid_auth, tmp_path, credentials):
    url = squid_auth.url_with_credentials(*credentials) if credentials else squid_auth.url
    path = kubeconfig(cluster, tmp_path / "k", proxies.PROXY_ONLY_NAME, **{"proxy-url": url,
                                                                           "tls-server-name": "kubernetes"})
    theirs, ours = both(path)
    assert theirs.returncode != 0 and "Proxy Authentication Required" in theirs.stderr
    assert ours.returncode != 0
    assert ours.stderr.strip().splitlines() == [
        f"error: the proxy {squid_auth.url if not credentials else f'http://<redacted>@127.0.0.1:{squid_auth.port}'}"
        f" refused to connect to {proxies.PROXY_ONLY_NAME}:{port(cluster)}: 407 Proxy Authentication Required"]
    assert "wrong-password" not in ours.stderr


def test_a_proxy_that_forbids_the_target_is_one_error_line(cluster, squid, tmp_path):
    path = kubeconfig(cluster, tmp_path / "k", proxies.REFUSED_NAME, **{"proxy-url": squid.url,
                                                                         "tls-server-name": "kubernetes"})
    theirs, ours = both(path)
    assert theirs.returncode != 0 and "Forbidden" in theirs.stderr
    assert ours.stderr.strip().splitlines() == [
        f"error: the proxy {squid.url} refused to connect to {proxies.REFUSED_NAME}:{port(cluster)}: 403 Forbidden"]


def test_a_proxy_that_is_not_there_is_one_error_line_naming_it(cluster, tmp_path):
    closed = free_port()
    path = kubeconfig(cluster, tmp_path / "k", "127.0.0.1", **{"proxy-url": f"http://u:hunter2@127.0.0.1:{closed}"})
    theirs, ours = both(path)
    assert theirs.returncode != 0 and ours.returncode != 0
    assert ours.stderr.strip().splitlines() == [
        f"error: the proxy http://<redacted>@127.0.0.1:{closed} (proxy-url) cannot be reached: connection refused"]
    assert "did you specify" not in ours.stderr and "hunter2" not in ours.stderr


def test_socks5_proxy_url(cluster, danted, tmp_path):
    path = kubeconfig(cluster, tmp_path / "k", "localhost", **{"proxy-url": danted.url})
    before = len(danted.passed())
    theirs, ours = both(path)
    assert (theirs.returncode, ours.returncode) == (0, 0), (theirs.stderr, ours.stderr)
    # kubectl's connections and ours, each passed by danted to the API server's port.
    assert sum(f"127.0.0.1.{port(cluster)}" in line for line in danted.passed()[before:]) >= 2


@pytest.mark.parametrize("scheme", ["socks5h", "ftp"])
def test_proxy_url_schemes_kubectl_refuses(cluster, tmp_path, scheme):
    path = kubeconfig(cluster, tmp_path / "k", "127.0.0.1", **{"proxy-url": f"{scheme}://u:hunter2@127.0.0.1:1080"})
    theirs, ours = both(path)
    assert theirs.returncode != 0 and f'unsupported scheme "{scheme}"' in theirs.stderr
    assert ours.returncode != 0
    assert ours.stderr.strip().splitlines() == [
        f"error: invalid 'proxy-url' \"{scheme}://<redacted>@127.0.0.1:1080\" for cluster \"{cluster_name(path)}\": "
        f"unsupported scheme \"{scheme}\", must be http, https, or socks5"]


def cluster_name(path: Path) -> str:
    return yaml.safe_load(path.read_text())["clusters"][0]["name"]


def test_watch_goes_through_the_proxy(cluster, squid, tmp_path):
    path = kubeconfig(cluster, tmp_path / "k", proxies.PROXY_ONLY_NAME, **{"proxy-url": squid.url,
                                                                           "tls-server-name": "kubernetes"})
    before = len(squid.tunnels())
    command = [PLUGIN or sys.executable, *([] if PLUGIN else ["-m", "kubectl_pvleft"]), "leftovers", "--watch",
               "--kubeconfig", str(path)]
    watch = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, **NO_PROXY_ENV})
    try:
        end = time.monotonic() + 30
        while time.monotonic() < end and watch.poll() is None and not squid.tunnels()[before:]:
            time.sleep(0.2)
        time.sleep(1)  # the first list, then the watch request on a kept or new tunnel
        assert watch.poll() is None, watch.communicate()  # still watching: it connected
    finally:
        watch.terminate()
        watch.communicate(timeout=30)
    assert squid.tunnels()[before:]


def test_only_reads_went_through_the_proxy(cluster, squid, tmp_path):
    """The read-only promise holds through a proxy: the audit log shows only get, list and watch from us."""
    test_proxy_url_tunnels_to_a_name_only_the_proxy_resolves(cluster, squid, tmp_path)
    verbs = set()
    with cluster.audit_log.open() as log:
        for line in log:
            if "kubectl-pvleft/" in line:
                event = json.loads(line)
                if event.get("userAgent", "").startswith("kubectl-pvleft/"):
                    verbs.add(event["verb"])
    assert verbs and verbs <= {"get", "list", "watch"}, verbs


def _proxy_certificate(folder: Path, ca: Optional[tuple[Path, Path]]) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and "kubernetes", signed by ``ca`` (certificate, key) or by itself."""
    key, cert = folder / "proxy.key", folder / "proxy.crt"
    extensions = folder / "ext"
    extensions.write_text("subjectAltName=IP:127.0.0.1,DNS:kubernetes\n")
    subprocess.run(["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-subj", "/CN=proxy",
                    "-out", str(folder / "proxy.csr")], check=True, capture_output=True)
    signer = ["-CA", str(ca[0]), "-CAkey", str(ca[1]), "-CAcreateserial"] if ca else ["-signkey", str(key)]
    subprocess.run(["openssl", "x509", "-req", "-in", str(folder / "proxy.csr"), *signer, "-days", "1",
                    "-extfile", str(extensions), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


@pytest.mark.parametrize("host,fields", [(proxies.PROXY_ONLY_NAME, {"tls-server-name": "kubernetes"}),
                                         ("127.0.0.1", {})])
def test_an_https_proxy_is_reached_with_the_clusters_tls_settings(cluster, tmp_path, host, fields):
    """Go's transport speaks TLS to an https proxy with the cluster's TLS config: its CA, and its tls-server-name
    (when set) as the name the proxy's certificate must carry."""
    squid = proxies.Squid(tls=_proxy_certificate(tmp_path, (cluster.pki / "ca.crt", cluster.pki / "ca.key"))).start()
    try:
        path = kubeconfig(cluster, tmp_path / "k", host, **{"proxy-url": squid.url, **fields})
        theirs, ours = both(path)
        assert (theirs.returncode, ours.returncode) == (0, 0), (theirs.stderr, ours.stderr)
        assert squid.tunnels().count(f"{host}:{port(cluster)}") >= 2
    finally:
        squid.stop()


def test_an_https_proxy_the_cluster_ca_does_not_vouch_for_is_refused(cluster, tmp_path):
    squid = proxies.Squid(tls=_proxy_certificate(tmp_path, None)).start()
    try:
        path = kubeconfig(cluster, tmp_path / "k", "127.0.0.1", **{"proxy-url": squid.url})
        theirs, ours = both(path)
        assert theirs.returncode != 0 and "certificate" in theirs.stderr
        assert ours.returncode != 0
        [line] = ours.stderr.strip().splitlines()
        assert line.startswith(f"error: TLS handshake with the proxy {squid.url} failed: ") and "certificate" in line
        assert squid.tunnels() == []
    finally:
        squid.stop()


def test_a_plain_http_server_is_reached_through_http_proxy_as_kubectl_does(squid, tmp_path):
    """HTTP_PROXY for an http:// server: Go hands the request itself to the proxy (no CONNECT). No API server
    serves plain HTTP any more, so a recording server answers; it sees who came through squid (Via)."""
    from loopback import LoopbackFake, Reply, Request, json_reply

    seen: list[tuple[str, str, str]] = []

    class Recorder(LoopbackFake):
        def serve(self, request: Request) -> Reply:
            seen.append((request.headers.get("user-agent", ""), request.headers.get("via", ""), request.headers["host"]))
            kind = {"persistentvolumeclaims": "PersistentVolumeClaimList", "storageclasses": "StorageClassList"}
            name = next((v for k, v in kind.items() if k in request.path), "PersistentVolumeList")
            return json_reply(200, {"kind": name, "apiVersion": "v1", "metadata": {}, "items": []})

    with Recorder() as server:
        path = tmp_path / "k"
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "x",
            "clusters": [{"name": "c", "cluster": {"server": f"http://{proxies.PROXY_ONLY_NAME}:{server.port}"}}],
            "users": [{"name": "u", "user": {}}], "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}))
        _theirs, ours = both(path, {"HTTP_PROXY": squid.url})  # kubectl's requests are checked in seen
        assert ours.returncode == 0, ours.stderr
        host = f"{proxies.PROXY_ONLY_NAME}:{server.port}"
        kubectl_seen = [s for s in seen if not s[0].startswith("kubectl-pvleft/")]
        ours_seen = [s for s in seen if s[0].startswith("kubectl-pvleft/")]
        assert kubectl_seen and all("squid" in via and got == host for _, via, got in kubectl_seen)  # the oracle
        assert ours_seen and all("squid" in via and got == host for _, via, got in ours_seen)

        # With proxy credentials, which we would have to send on every request: refused in one line.
        _theirs, ours = both(path, {"HTTP_PROXY": f"http://u:hunter2@127.0.0.1:{squid.port}"})
        assert ours.returncode != 0 and len(ours.stderr.strip().splitlines()) == 1 and "hunter2" not in ours.stderr


def test_a_socks5_proxy_that_refuses_the_user_name_and_password(cluster, tmp_path):
    danted = proxies.Danted(username_auth=True).start()
    try:
        url = f"socks5://nosuchuser:hunter2@127.0.0.1:{danted.port}"
        path = kubeconfig(cluster, tmp_path / "k", "localhost", **{"proxy-url": url})
        theirs, ours = both(path)
        assert theirs.returncode != 0 and "username/password authentication failed" in theirs.stderr
        assert ours.stderr.strip().splitlines() == [
            f"error: the proxy socks5://<redacted>@127.0.0.1:{danted.port} refused the user name and password"]

        # Without credentials: no method both sides speak.
        path = kubeconfig(cluster, tmp_path / "n", "localhost", **{"proxy-url": danted.url})
        theirs, ours = both(path)
        assert theirs.returncode != 0 and "no acceptable authentication methods" in theirs.stderr
        assert ours.stderr.strip().splitlines() == [
            f"error: the proxy {danted.url} accepts none of our SOCKS5 authentication methods "
            "(it may want a user name and password)"]
    finally:
        danted.stop()


def test_a_fleet_run_takes_each_clusters_proxy(cluster, squid, danted, tmp_path):
    """--all-contexts: each context's cluster is reached through its own proxy-url, in the same run."""
    config = yaml.safe_load(cluster.kubeconfig("admin").read_text())
    first = config["clusters"][0]
    via_squid = {"name": "via-squid", "cluster": {**first["cluster"], "proxy-url": squid.url,
                                                   "tls-server-name": "kubernetes",
                                                   "server": f"https://{proxies.PROXY_ONLY_NAME}:{port(cluster)}"}}
    via_danted = {"name": "via-danted", "cluster": {**first["cluster"], "proxy-url": danted.url,
                                                     "server": f"https://localhost:{port(cluster)}"}}
    user = config["contexts"][0]["context"]["user"]
    config["clusters"] = [via_squid, via_danted]
    config["contexts"] = [{"name": c["name"], "context": {"cluster": c["name"], "user": user}}
                          for c in (via_squid, via_danted)]
    config["current-context"] = "via-squid"
    path = tmp_path / "fleet"
    path.write_text(yaml.safe_dump(config))
    tunnels, passed = len(squid.tunnels()), len(danted.passed())
    ours = run_plugin(path, "leftovers", "--all-contexts", "--request-timeout", "10s", env=NO_PROXY_ENV, timeout=60)
    assert ours.returncode == 0, ours.stderr
    assert f"{proxies.PROXY_ONLY_NAME}:{port(cluster)}" in squid.tunnels()[tunnels:]
    assert any(f"127.0.0.1.{port(cluster)}" in line for line in danted.passed()[passed:])
