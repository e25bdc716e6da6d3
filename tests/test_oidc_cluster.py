"""The oidc auth provider against a real kube-apiserver that trusts a real (small) IdP, with kubectl 1.33 as the
oracle on a copy of each kubeconfig.

The plane is this module's own (the session's plane has no OIDC): kube-apiserver started with --oidc-issuer-url
pointing at tests/oidc_idp.py on loopback, so a refreshed id-token is accepted only if the IdP really signed it
for this client, and an expired one is really refused. The OIDC user may read what the plugin reads (the
plugin's own ClusterRole), nothing else: a run that went out anonymous would fail.

kubectl writes the refreshed tokens into its kubeconfig, and the IdP rotates refresh tokens (a used one is
refused), so kubectl's copy carries a refresh token of its own; everything else in the two files is the same.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest
import yaml

from cli_runner import Result, invoke
from controlplane import ControlPlane, build
from oidc_idp import CLIENT_ID, CLIENT_SECRET, SUBJECT, IdP
from tls_material import ca_data

pytestmark = pytest.mark.cluster

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
USER = f"oidc:{SUBJECT}"  # --oidc-username-prefix=oidc:


class Plane:
    def __init__(self, control: ControlPlane, idp: IdP) -> None:
        self.control, self.idp = control, idp

    def status_with(self, token: str) -> int:
        """GET /api/v1/persistentvolumes with this bearer token, straight to the API server."""
        context = ssl.create_default_context(cafile=str(self.control.pki / "ca.crt"))
        request = urllib.request.Request(self.control.server + "/api/v1/persistentvolumes",
                                         headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(request, context=context, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    if not os.access(KUBECTL, os.X_OK):
        pytest.fail(f"no {KUBECTL}: the oracle is missing")
    build(log=tmp_path_factory.getbasetemp() / "cluster-build.log")
    folder = tmp_path_factory.mktemp("oidc-plane")
    idp_ca = folder / "idp-ca.crt"
    idp_ca.write_bytes(base64.b64decode(ca_data()))
    with IdP() as idp:
        control = ControlPlane(folder / "plane", extra_apiserver_args=[
            f"--oidc-issuer-url={idp.issuer}", f"--oidc-client-id={CLIENT_ID}", f"--oidc-ca-file={idp_ca}",
            "--oidc-username-claim=sub", "--oidc-username-prefix=oidc:"])
        control.start()
        try:
            control.kubectl("create", "clusterrolebinding", "pvleft-oidc-reader", "--clusterrole=pvleft-reader",
                            f"--user={USER}")
            found = Plane(control, idp)
            _wait_for_the_authenticator(found)
            yield found
        finally:
            control.stop(keep_logs=False)


def _wait_for_the_authenticator(plane: Plane) -> None:
    """kube-apiserver reads the IdP's discovery document and keys in the background after it is ready."""
    token = plane.idp.id_token()
    for _ in range(300):
        if plane.status_with(token) == 200:
            return
        time.sleep(0.1)
    raise AssertionError("kube-apiserver never accepted a fresh id-token from the test IdP")


@pytest.fixture
def fresh(plane: Plane) -> Plane:
    plane.idp.received.clear()
    plane.idp.omit_id_token = False
    return plane


def write_kubeconfig(path: Path, plane: Plane, config: dict[str, str]) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {
            "server": plane.control.server,
            "certificate-authority-data": base64.b64encode((plane.control.pki / "ca.crt").read_bytes()).decode()}}],
        "users": [{"name": "u", "user": {"auth-provider": {"name": "oidc", "config": config}}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    }))
    return path


def oidc_config(plane: Plane, id_token: Optional[str], refresh_token: Optional[str], **more: str) -> dict[str, str]:
    config = {"idp-issuer-url": plane.idp.issuer, "client-id": CLIENT_ID, "client-secret": CLIENT_SECRET,
              "idp-certificate-authority-data": ca_data(), **more}
    if id_token is not None:
        config["id-token"] = id_token
    if refresh_token is not None:
        config["refresh-token"] = refresh_token
    return config


def kubectl(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([KUBECTL, "--kubeconfig", str(path), "get", "pv", "--request-timeout", "20s"],
                          capture_output=True, text=True, timeout=60, check=False)


def grants_seen(plane: Plane, since: int) -> list[tuple[str, str, bool, list[str]]]:
    """What reached the IdP, in the terms that matter: method, path, client in HTTP Basic, form keys."""
    return [(r.method, r.path, r.headers.get("authorization", "").startswith("Basic "), sorted(r.form))
            for r in plane.idp.received[since:]]


def no_secret(result: Any, *secrets: str, plane: Optional[Plane] = None) -> None:
    text = result.stdout + result.stderr
    issued = plane.idp.issued if plane else ()
    for secret in (*secrets, *issued, CLIENT_SECRET, base64.b64encode(f"{CLIENT_ID}:".encode()).decode()[:8]):
        assert secret not in text, f"a secret is in the output: {result}"


def error_lines(result: Result) -> list[str]:
    assert "Traceback" not in result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def audit_users(plane: Plane, agent: str) -> set[str]:
    users = set()
    for line in plane.control.audit_log.read_text().splitlines():
        event = json.loads(line)
        if event.get("userAgent", "").startswith(agent):
            users.add(event["user"]["username"])
    return users


# -- the plane itself -----------------------------------------------------------------------------------

def test_the_api_server_takes_the_idp_s_fresh_token_and_refuses_an_expired_one(plane: Plane) -> None:
    assert plane.status_with(plane.idp.id_token()) == 200
    assert plane.status_with(plane.idp.id_token(lifetime=-120)) == 401


# -- the cases, each with kubectl beside -----------------------------------------------------------------

def test_a_valid_id_token_is_used_as_it_is(fresh: Plane, tmp_path: Path) -> None:
    id_token = fresh.idp.id_token()
    config = oidc_config(fresh, id_token, fresh.idp.refresh_token())
    ours = write_kubeconfig(tmp_path / "ours", fresh, config)
    written = ours.read_bytes()
    for verbosity in ("0", "9"):
        result = invoke("leftovers", "--kubeconfig", str(ours), "-v", verbosity)
        assert result.code == 0 and error_lines(result) == [] and "warning:" not in result.stderr, result
        no_secret(result, id_token, config["refresh-token"], plane=fresh)
    assert fresh.idp.received == [] and ours.read_bytes() == written
    theirs = kubectl(write_kubeconfig(tmp_path / "theirs", fresh, config))
    assert theirs.returncode == 0 and fresh.idp.received == [], theirs
    assert USER in audit_users(fresh, "kubectl-pvleft")


@pytest.mark.parametrize("verbosity", ["0", "9"])
def test_an_expired_id_token_is_refreshed_accepted_and_never_written(fresh: Plane, tmp_path: Path,
                                                                    verbosity: str) -> None:
    expired = fresh.idp.id_token(lifetime=-120)
    config = oidc_config(fresh, expired, fresh.idp.refresh_token())
    ours = write_kubeconfig(tmp_path / "ours", fresh, config)
    written = ours.read_bytes()
    result = invoke("leftovers", "--kubeconfig", str(ours), "-v", verbosity)
    assert result.code == 0 and error_lines(result) == [], (result, fresh.idp.failures)  # and the IdP's side
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == ['warning: the oidc id-token of user "u" was refreshed for this run only; kubectl would have '
                        'saved the new tokens in the kubeconfig (this plugin never writes it)'], result.stderr
    assert ours.read_bytes() == written
    ours_seen = grants_seen(fresh, 0)
    assert len(fresh.idp.token_requests()) == 1
    no_secret(result, expired, config["refresh-token"], plane=fresh)

    # kubectl on its copy: the same exchanges with the IdP, and it writes the new tokens into the file.
    theirs_config = dict(config, **{"refresh-token": fresh.idp.refresh_token()})
    theirs_path = write_kubeconfig(tmp_path / "theirs", fresh, theirs_config)
    since = len(fresh.idp.received)
    theirs = kubectl(theirs_path)
    assert theirs.returncode == 0, theirs
    assert grants_seen(fresh, since) == ours_seen == [
        ("GET", "/.well-known/openid-configuration", False, []),
        ("POST", "/token", True, ["grant_type", "refresh_token"])]
    saved = yaml.safe_load(theirs_path.read_text())["users"][0]["user"]["auth-provider"]["config"]
    assert saved["id-token"] != expired and saved["refresh-token"] != theirs_config["refresh-token"]


def test_an_expired_id_token_without_refresh_token_is_one_line(fresh: Plane, tmp_path: Path) -> None:
    expired = fresh.idp.id_token(lifetime=-3600)
    config = oidc_config(fresh, expired, None)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(json.loads(base64.urlsafe_b64decode(
        expired.split(".")[1] + "=="))["exp"]))
    for verbosity in ("0", "9"):
        result = invoke("leftovers", "--kubeconfig", str(write_kubeconfig(tmp_path / "ours", fresh, config)),
                        "-v", verbosity)
        assert result.code == 1 and result.stdout == "" and error_lines(result) == [
            f'error: the oidc id-token of user "u" expired at {stamp} and there is no refresh-token to renew it: '
            "log in again"], result
        no_secret(result, expired, plane=fresh)
    theirs = kubectl(write_kubeconfig(tmp_path / "theirs", fresh, config))
    assert theirs.returncode != 0 and "cannot refresh without refresh-token" in theirs.stderr, theirs
    assert fresh.idp.received == []


def test_a_refused_refresh_token_is_one_line(fresh: Plane, tmp_path: Path) -> None:
    config = oidc_config(fresh, fresh.idp.id_token(lifetime=-120), "rt-that-the-idp-never-issued")
    for verbosity in ("0", "9"):
        result = invoke("leftovers", "--kubeconfig", str(write_kubeconfig(tmp_path / "ours", fresh, config)),
                        "-v", verbosity)
        assert result.code == 1 and result.stdout == "", result
        assert error_lines(result) == [
            f'error: refreshing the oidc id-token of user "u" failed: the token endpoint {fresh.idp.issuer}/token '
            'answered 400 invalid_grant: '
            'the refresh token is invalid or was used (the refresh-token was refused: log in again)'], result
        no_secret(result, config["id-token"], config["refresh-token"], plane=fresh)
    ours_seen = grants_seen(fresh, len(fresh.idp.received) - 3)
    since = len(fresh.idp.received)
    theirs = kubectl(write_kubeconfig(tmp_path / "theirs", fresh, config))
    assert theirs.returncode != 0 and "invalid_grant" in theirs.stderr, theirs
    # Go's oauth2 tries the client in HTTP Basic, then in the form: the plugin does the same.
    assert grants_seen(fresh, since) == ours_seen == [
        ("GET", "/.well-known/openid-configuration", False, []),
        ("POST", "/token", True, ["grant_type", "refresh_token"]),
        ("POST", "/token", False, ["client_id", "client_secret", "grant_type", "refresh_token"])]


def test_an_answer_without_id_token_is_one_line(fresh: Plane, tmp_path: Path) -> None:
    fresh.idp.omit_id_token = True
    config = oidc_config(fresh, fresh.idp.id_token(lifetime=-120), fresh.idp.refresh_token())
    result = invoke("leftovers", "--kubeconfig", str(write_kubeconfig(tmp_path / "ours", fresh, config)), "-v", "9")
    assert result.code == 1 and error_lines(result) == [
        f'error: refreshing the oidc id-token of user "u" failed: the answer of the token endpoint {fresh.idp.issuer}/token '
        'has no id_token: either the scope '
        '"openid" was not requested at login, or the provider does not return id_tokens when refreshing'], result
    no_secret(result, config["id-token"], config["refresh-token"], plane=fresh)
    config["refresh-token"] = fresh.idp.refresh_token()
    theirs = kubectl(write_kubeconfig(tmp_path / "theirs", fresh, config))
    assert theirs.returncode != 0 and "did not contain an id_token" in theirs.stderr, theirs


def test_an_idp_that_is_down_is_one_line(fresh: Plane, tmp_path: Path) -> None:
    with socket_closed() as port:
        config = oidc_config(fresh, fresh.idp.id_token(lifetime=-120), fresh.idp.refresh_token(),
                             **{"idp-issuer-url": f"https://127.0.0.1:{port}"})
        for verbosity in ("0", "9"):
            result = invoke("leftovers", "--kubeconfig", str(write_kubeconfig(tmp_path / "ours", fresh, config)),
                            "-v", verbosity)
            assert result.code == 1 and error_lines(result) == [
                'error: refreshing the oidc id-token of user "u" failed: the connection to the identity provider '
                f'https://127.0.0.1:{port}/.well-known/openid-configuration was refused or unreachable'], result
            no_secret(result, config["id-token"], config["refresh-token"], plane=fresh)
        theirs = kubectl(write_kubeconfig(tmp_path / "theirs", fresh, config))
        # kubectl blames the API server ("The connection to the server <API server> was refused"): the plugin
        # names the IdP that refused.
        assert theirs.returncode != 0 and f"{fresh.control.server.split('//')[1]} was refused" in theirs.stderr, theirs


def test_an_idp_the_kubeconfig_does_not_trust_is_one_tls_line(fresh: Plane, tmp_path: Path) -> None:
    # The plane's own CA: a real CA, but not the one that signed the IdP's certificate.
    wrong = base64.b64encode((fresh.control.pki / "ca.crt").read_bytes()).decode()
    config = oidc_config(fresh, fresh.idp.id_token(lifetime=-120), fresh.idp.refresh_token(),
                         **{"idp-certificate-authority-data": wrong})
    for verbosity in ("0", "9"):
        result = invoke("leftovers", "--kubeconfig", str(write_kubeconfig(tmp_path / "ours", fresh, config)),
                        "-v", verbosity)
        lines = error_lines(result)
        assert result.code == 1 and len(lines) == 1, result
        assert lines[0].startswith('error: refreshing the oidc id-token of user "u" failed: TLS handshake with the '
                                   f'identity provider {fresh.idp.issuer}/.well-known/openid-configuration failed: '
                                   'CERTIFICATE_VERIFY_FAILED'), lines
        no_secret(result, config["id-token"], config["refresh-token"], plane=fresh)
    theirs = kubectl(write_kubeconfig(tmp_path / "theirs", fresh, config))
    assert theirs.returncode != 0 and "certificate signed by unknown authority" in theirs.stderr, theirs
    assert fresh.idp.received == []


class socket_closed:
    """A loopback port nothing listens on (bound, then closed)."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def __exit__(self, *exc: object) -> None:
        pass
