"""The oidc auth provider against a real (small) IdP on loopback, in-process: what client-go's oidc provider does
(the id-token while it is valid, else the refresh grant), in memory only.

The API server here is a scripted server that records the Authorization it was sent; the real kube-apiserver
started with --oidc-issuer-url, and kubectl as the oracle, are in test_oidc_cluster.py.
"""

from __future__ import annotations

import base64
import json
import re
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Optional

import pytest
import yaml

from cli_runner import Result, invoke
from fake_apiserver import EMPTY_LIST, ScriptedServer, answer, close_at_once
from kubectl_pvleft.kube.oidc import token_expiry, valid
from loopback import free_port
from oidc_idp import CLIENT_ID, CLIENT_SECRET, SUBJECT, IdP, unsigned_jwt
from tls_material import ca_data

REFRESHED = re.compile(r'^warning: the oidc id-token of user "u" was refreshed for this run only; kubectl would have '
                       r"saved the new tokens in the kubeconfig \(this plugin never writes it\)$")


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    faults = {"ok": answer(200, EMPTY_LIST), "idp-close": close_at_once,
              "idp-garbage": lambda conn: conn.sendall(b"HELLO WORLD\r\n\r\n"),
              "idp-truncated": answer(200, b'{"issuer": ', length=200)}
    with ScriptedServer(faults) as scripted:  # and its own "silent"
        yield scripted


@pytest.fixture
def idp() -> Iterator[IdP]:
    with IdP() as provider:
        yield provider


def provider_config(idp: IdP, id_token: Optional[str], refresh_token: Optional[str], **more: str) -> dict:
    config = {"idp-issuer-url": idp.issuer, "client-id": CLIENT_ID, "client-secret": CLIENT_SECRET,
              "idp-certificate-authority-data": ca_data(), **more}
    if id_token is not None:
        config["id-token"] = id_token
    if refresh_token is not None:
        config["refresh-token"] = refresh_token
    return config


def kubeconfig(path: Path, server: ScriptedServer, config: dict, **cluster: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": server.url_for("ok"), "certificate-authority-data": ca_data(),
                                               **cluster}}],
        "users": [{"name": "u", "user": {"auth-provider": {"name": "oidc", "config": config}}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    }))
    return path


def run(path: Path, *flags: str) -> Result:
    return invoke("leftovers", "--kubeconfig", str(path), *flags)


def sent_tokens(server: ScriptedServer, since: int) -> list[str]:
    return [headers.get("authorization", "<none>") for _, headers in server.requests[since:]]


def one_error_line(result: Result) -> str:
    lines = result.stderr.splitlines()
    assert result.code == 1 and result.stdout == "" and len(lines) == 1 and lines[0].startswith("error: "), result
    return lines[0]


def secrets_absent(result: Result, *secrets: str, idp: Optional[IdP] = None) -> None:
    text = result.stdout + result.stderr
    for secret in (*secrets, *(idp.issued if idp else ())):
        assert secret not in text, f"a secret is in the output: {result}"
    for form in (base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode(), "s3cret"):
        assert form not in text, result


VERBOSITIES = ("0", "9")


# -- the id-token as it is ------------------------------------------------------------------------------

@pytest.mark.parametrize("verbosity", VERBOSITIES)
def test_a_valid_id_token_is_sent_as_it_is_and_the_idp_is_not_asked(server, idp, tmp_path: Path,
                                                                    verbosity: str) -> None:
    id_token, refresh = idp.id_token(lifetime=600), idp.refresh_token()
    path = kubeconfig(tmp_path / "kc", server, provider_config(idp, id_token, refresh))
    before, written = len(server.requests), path.read_bytes()
    result = run(path, "-v", verbosity)
    assert result.code == 0, result
    assert set(sent_tokens(server, before)) == {f"Bearer {id_token}"}
    assert idp.received == [] and "warning:" not in result.stderr
    assert path.read_bytes() == written
    secrets_absent(result, id_token, refresh, idp=idp)


def test_client_go_s_ten_second_skew_decides_what_is_expired(server, idp, tmp_path: Path) -> None:
    soon, later = idp.id_token(lifetime=5), idp.id_token(lifetime=30)
    assert not valid(token_expiry(soon, "u")) and valid(token_expiry(later, "u"))
    before = len(server.requests)
    assert run(kubeconfig(tmp_path / "later", server, provider_config(idp, later, idp.refresh_token()))).code == 0
    assert set(sent_tokens(server, before)) == {f"Bearer {later}"} and idp.received == []
    before = len(server.requests)
    result = run(kubeconfig(tmp_path / "soon", server, provider_config(idp, soon, idp.refresh_token())))
    assert result.code == 0, result
    assert f"Bearer {soon}" not in sent_tokens(server, before) and len(idp.token_requests()) == 1


def test_the_expiry_rule_at_its_edges() -> None:
    now = 1_700_000_000.0
    assert valid(now + 10.5, now) and not valid(now + 10, now) and not valid(now, now)
    assert token_expiry(unsigned_jwt({"exp": 1700000000.9}), "u") == 1700000000.0  # Go truncates a float exp
    assert token_expiry(unsigned_jwt({"exp": "1700000000"}), "u") == 1700000000.0  # json.Number takes a string
    assert token_expiry(unsigned_jwt({"sub": "x"}), "u") == 0.0  # no exp: Go's zero time, expired


# -- the refresh ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("verbosity", VERBOSITIES)
def test_an_expired_id_token_is_refreshed_in_memory_and_the_kubeconfig_is_not_written(
        server, idp, tmp_path: Path, verbosity: str) -> None:
    expired, refresh = idp.id_token(lifetime=-60), idp.refresh_token()
    path = kubeconfig(tmp_path / "kc", server, provider_config(idp, expired, refresh))
    before, written = len(server.requests), path.read_bytes()
    result = run(path, "-v", verbosity)
    assert result.code == 0, result
    sent = set(sent_tokens(server, before))
    assert len(sent) == 1 and f"Bearer {expired}" not in sent
    fresh = sent.pop().removeprefix("Bearer ")
    claims = json.loads(base64.urlsafe_b64decode(fresh.split(".")[1] + "=="))
    assert claims["sub"] == SUBJECT and claims["iss"] == idp.issuer and claims["exp"] > time.time() + 600
    # Discovery first, then one refresh grant exactly as Go's oauth2 sends it: the client in HTTP Basic, each
    # part form-escaped (RFC 6749 2.3.1), and nothing else in the form.
    assert [(r.method, r.path) for r in idp.received] == [("GET", "/.well-known/openid-configuration"),
                                                          ("POST", "/token")]
    grant = idp.received[1]
    assert grant.form == {"grant_type": ["refresh_token"], "refresh_token": [refresh]}
    assert grant.headers["authorization"] == "Basic " + base64.b64encode(
        b"pvleft-cli:cl1ent+s3cret%2B%2F%3A%3D%26").decode()
    assert grant.headers["content-type"] == "application/x-www-form-urlencoded"
    assert path.read_bytes() == written
    warnings = [line for line in result.stderr.splitlines() if line.startswith(("warning:", "error:"))]
    assert len(warnings) == 1 and REFRESHED.match(warnings[0]), result.stderr
    secrets_absent(result, expired, refresh, fresh, idp=idp)
    if verbosity == "9":  # the IdP's requests are logged as kubectl's debug round tripper logs them
        assert f'"Response" verb="POST" url="{idp.issuer}/token" status="200 OK"' in result.stderr


def test_the_rotated_refresh_token_is_the_one_used_next_in_the_same_run(server, idp, tmp_path: Path) -> None:
    """A watch outlives a short-lived id-token: the second refresh must use the refresh token the IdP rotated to
    (the first one is refused once used)."""
    from kubectl_pvleft.deadline import Deadline
    from kubectl_pvleft.kube.oidc import OIDCProvider

    first = idp.refresh_token()
    provider = OIDCProvider(provider_config(idp, idp.id_token(lifetime=-60), first), 'user "u"')
    token_one, _ = provider.token(Deadline(30))
    provider._id_token = idp.id_token(lifetime=-1)  # as if the run went on past its exp
    token_two, _ = provider.token(Deadline(30))
    grants = idp.token_requests()
    assert token_one != token_two and len(grants) == 2
    assert grants[0].form["refresh_token"] == [first] and grants[1].form["refresh_token"] != [first]


def test_an_id_token_without_exp_is_refreshed(server, idp, tmp_path: Path) -> None:
    no_exp = unsigned_jwt({"iss": idp.issuer, "sub": SUBJECT})
    result = run(kubeconfig(tmp_path / "kc", server, provider_config(idp, no_exp, idp.refresh_token())))
    assert result.code == 0 and len(idp.token_requests()) == 1, result


def test_the_idp_ca_may_be_a_file(server, idp, tmp_path: Path) -> None:
    (tmp_path / "idp-ca.crt").write_bytes(base64.b64decode(ca_data()))
    config = provider_config(idp, idp.id_token(lifetime=-60), idp.refresh_token(),
                             **{"idp-certificate-authority": str(tmp_path / "idp-ca.crt")})
    del config["idp-certificate-authority-data"]
    result = run(kubeconfig(tmp_path / "kc", server, config))
    assert result.code == 0 and len(idp.token_requests()) == 1, result


# -- what fails, in one line ----------------------------------------------------------------------------

@pytest.mark.parametrize("verbosity", VERBOSITIES)
def test_an_expired_id_token_without_refresh_token_is_one_line_with_its_expiry(server, idp, tmp_path: Path,
                                                                               verbosity: str) -> None:
    expired = idp.id_token(lifetime=-3600)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(token_expiry(expired, "u")))
    before = len(server.requests)
    result = run(kubeconfig(tmp_path / "kc", server, provider_config(idp, expired, None)), "-v", verbosity)
    assert one_error_line(result) == (f'error: the oidc id-token of user "u" expired at {stamp} and there is no '
                                      "refresh-token to renew it: log in again")
    assert idp.received == [] and server.requests[before:] == []
    secrets_absent(result, expired, idp=idp)


@pytest.mark.parametrize("verbosity", VERBOSITIES)
def test_a_refused_refresh_token_is_one_line(server, idp, tmp_path: Path, verbosity: str) -> None:
    expired, wrong = idp.id_token(lifetime=-60), "rt-never-issued-0123456789"
    result = run(kubeconfig(tmp_path / "kc", server, provider_config(idp, expired, wrong)), "-v", verbosity)
    line = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert result.code == 1 and len(line) == 1 and "Traceback" not in result.stderr, result
    assert line[0] == (f'error: refreshing the oidc id-token of user "u" failed: the token endpoint {idp.issuer}/token '
                       'answered 400 invalid_grant: the refresh token is invalid or was used (the refresh-token was refused: '
                       'log in again)')
    # Go's oauth2 probes: a failure with the client in HTTP Basic is tried once more with it in the form.
    grants = idp.token_requests()
    assert [("authorization" in g.headers, sorted(g.form)) for g in grants] == [
        (True, ["grant_type", "refresh_token"]),
        (False, ["client_id", "client_secret", "grant_type", "refresh_token"])]
    assert grants[1].form["client_secret"] == [CLIENT_SECRET] and grants[1].form["client_id"] == [CLIENT_ID]
    secrets_absent(result, expired, wrong, idp=idp)


def test_a_wrong_client_secret_is_one_line(server, idp, tmp_path: Path) -> None:
    config = provider_config(idp, idp.id_token(lifetime=-60), idp.refresh_token(), **{"client-secret": "wrong-1234"})
    result = run(kubeconfig(tmp_path / "kc", server, config), "-v", "9")
    line = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert result.code == 1 and line == [f'error: refreshing the oidc id-token of user "u" failed: the token endpoint '
                                         f'{idp.issuer}/token answered 401 invalid_client: client authentication failed'], result
    secrets_absent(result, "wrong-1234", idp=idp)


def test_an_answer_without_id_token_is_one_line(server, idp, tmp_path: Path) -> None:
    idp.omit_id_token = True
    refresh = idp.refresh_token()
    result = run(kubeconfig(tmp_path / "kc", server, provider_config(idp, idp.id_token(lifetime=-60), refresh)),
                 "-v", "9")
    line = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert result.code == 1 and line == [
        f'error: refreshing the oidc id-token of user "u" failed: the answer of the token endpoint {idp.issuer}/token '
        'has no id_token: either the scope '
        '"openid" was not requested at login, or the provider does not return id_tokens when refreshing'], result
    secrets_absent(result, refresh, idp=idp)


@pytest.mark.parametrize("verbosity", VERBOSITIES)
def test_an_idp_that_is_down_is_one_line(server, tmp_path: Path, verbosity: str) -> None:
    with IdP() as idp:
        refresh = idp.refresh_token()
        config = provider_config(idp, idp.id_token(lifetime=-60), refresh)
    issuer = f"https://127.0.0.1:{free_port()}"
    config["idp-issuer-url"] = issuer
    result = run(kubeconfig(tmp_path / "kc", server, config), "-v", verbosity)
    assert one_error_line(result) == (
        f'error: refreshing the oidc id-token of user "u" failed: the connection to the identity provider '
        f"{issuer}/.well-known/openid-configuration was refused or unreachable")
    secrets_absent(result, refresh, idp=idp)


@pytest.mark.parametrize("verbosity", VERBOSITIES)
def test_an_idp_whose_certificate_the_kubeconfig_does_not_trust_is_one_tls_line(server, idp, tmp_path: Path,
                                                                                verbosity: str) -> None:
    other_ca = _another_ca()
    refresh = idp.refresh_token()
    config = provider_config(idp, idp.id_token(lifetime=-60), refresh, **{"idp-certificate-authority-data": other_ca})
    result = run(kubeconfig(tmp_path / "kc", server, config), "-v", verbosity)
    line = one_error_line(result)
    assert line.startswith(f'error: refreshing the oidc id-token of user "u" failed: TLS handshake with the identity '
                           f"provider {idp.issuer}/.well-known/openid-configuration failed: "), line
    assert "certificate verify failed" in line.lower() or "CERTIFICATE_VERIFY_FAILED" in line, line
    assert idp.received == []
    secrets_absent(result, refresh, idp=idp)


def test_an_idp_that_never_answers_is_bounded_by_the_request_timeout(server, tmp_path: Path) -> None:
    with IdP() as idp:
        refresh = idp.refresh_token()
        config = provider_config(idp, idp.id_token(lifetime=-60), refresh)
    config["idp-issuer-url"] = server.url_for("silent")  # takes the connection, says nothing
    result = run(kubeconfig(tmp_path / "kc", server, config), "--request-timeout", "1s")
    assert one_error_line(result) == (
        f'error: refreshing the oidc id-token of user "u" failed: the identity provider '
        f'{server.url_for("silent")}/.well-known/openid-configuration did not answer in time')


@pytest.mark.parametrize(("fault", "words"), [
    ("idp-close", "closed the connection before answering"),
    ("idp-garbage", "sent a broken HTTP answer: not an HTTP/1.1 answer"),
    ("idp-truncated", "closed the connection mid-answer")])
def test_an_idp_that_drops_the_connection_or_breaks_http_says_which(server, tmp_path: Path, fault: str,
                                                                    words: str) -> None:
    """A connection dropped before any answer, one dropped mid-answer and an answer that is not HTTP are three
    different troubles at the IdP, worded as the API server's are (transport.py), never one phrase for all of
    them. None is sent again: the connection was a new one, and Go's net/http (what kubectl's oidc provider
    uses) retries only on a reused one (transport.go, persistConn.shouldRetryRequest)."""
    with IdP() as idp:
        refresh = idp.refresh_token()
        config = provider_config(idp, idp.id_token(lifetime=-60), refresh)
    config["idp-issuer-url"] = server.url_for(fault)
    before = len(server.seen(fault))
    result = run(kubeconfig(tmp_path / "kc", server, config))
    assert one_error_line(result) == (
        f'error: refreshing the oidc id-token of user "u" failed: the identity provider '
        f"{server.url_for(fault)}/.well-known/openid-configuration {words}")
    assert len(server.seen(fault)) == before + 1
    secrets_absent(result, refresh, idp=idp)


def test_the_test_idp_serves_the_plugin_while_another_peer_never_starts_its_tls_handshake(
        server, idp, tmp_path: Path) -> None:
    """Of the test IdP itself (tests/loopback.py): in test_oidc_cluster.py kube-apiserver's connections share it
    with the plugin's, so one peer that connects and sends no ClientHello must not hold up the others (the
    handshake was the accepting thread's work: the plugin's refresh waited until its timeout)."""
    refresh = idp.refresh_token()
    config = provider_config(idp, idp.id_token(lifetime=-60), refresh)
    with socket.create_connection(("127.0.0.1", idp.port)):
        time.sleep(0.1)  # accepted before the plugin connects
        result = run(kubeconfig(tmp_path / "kc", server, config), "--request-timeout", "5s")
    assert result.code == 0 and REFRESHED.match(result.stderr.splitlines()[0]), result
    assert [r.path for r in idp.received] == ["/.well-known/openid-configuration", "/token"]


# -- the way to the IdP: client-go's restclient.TransportFor, the environment's proxy, not the cluster's ---------

def test_the_idp_is_reached_through_the_environment_s_proxy(server, idp, tmp_path: Path) -> None:
    refresh, proxy_port = idp.refresh_token(), free_port()
    config = provider_config(idp, idp.id_token(lifetime=-60), refresh,
                             **{"idp-issuer-url": "https://idp.pvleft.test:8443"})  # not loopback: Go proxies it
    result = invoke("leftovers", "--kubeconfig", str(kubeconfig(tmp_path / "kc", server, config)),
                    env={"HTTPS_PROXY": f"http://127.0.0.1:{proxy_port}", "NO_PROXY": None, "no_proxy": None,
                         "https_proxy": None})
    line = one_error_line(result)
    assert line.startswith(f'error: refreshing the oidc id-token of user "u" failed: the proxy '
                           f"http://127.0.0.1:{proxy_port} (HTTPS_PROXY) cannot be reached: "), line
    assert line.endswith("(on the way to the identity provider "
                         "https://idp.pvleft.test:8443/.well-known/openid-configuration)"), line


def test_the_cluster_s_proxy_url_is_not_used_for_the_idp(server, idp, tmp_path: Path) -> None:
    """client-go builds the IdP's client without the cluster's proxy-url: the refresh goes straight to the IdP,
    and only the API server's request meets the (closed) proxy."""
    proxy_port = free_port()
    config = provider_config(idp, idp.id_token(lifetime=-60), idp.refresh_token())
    result = run(kubeconfig(tmp_path / "kc", server, config, **{"proxy-url": f"http://127.0.0.1:{proxy_port}"}))
    assert len(idp.token_requests()) == 1, result
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.code == 1 and len(errors) == 1 and f"127.0.0.1:{proxy_port}" in errors[0], result
    assert "identity provider" not in errors[0]


@pytest.mark.parametrize("config, words", [
    ({"client-id": CLIENT_ID, "id-token": "x.y.z"}, "Must provide idp-issuer-url"),
    ({"idp-issuer-url": "https://127.0.0.1:1", "id-token": "x.y.z"}, "Must provide client-id"),
    ({"idp-issuer-url": "https://127.0.0.1:1", "client-id": CLIENT_ID, "id-token": "not-a-jwt"},
     "is not a valid JWT (the token is not shown)"),
    ({"idp-issuer-url": "https://127.0.0.1:1", "client-id": CLIENT_ID, "id-token": "a.b=.c"},
     "its payload is not base64url"),
    ({"idp-issuer-url": "https://127.0.0.1:1", "client-id": CLIENT_ID},
     "has no id-token and no refresh-token to get one"),
    ({"idp-issuer-url": "https://127.0.0.1:1", "client-id": CLIENT_ID, "id-token": unsigned_jwt({"sub": "x"})},
     "has no exp claim, so it counts as expired, and there is no refresh-token"),
    ({"idp-issuer-url": "https://127.0.0.1:1", "client-id": CLIENT_ID, "idp-certificate-authority-data": "%%%",
      "id-token": unsigned_jwt({"exp": 1})}, "idp-certificate-authority-data of user \"u\" is not base64"),
    *(({"idp-issuer-url": issuer, "client-id": CLIENT_ID, "refresh-token": "rt-x", "id-token": unsigned_jwt({"exp": 1})},
       "is not an http(s) URL") for issuer in ("idp.example", "ftp://idp.example", "https://", "https://[::1",
                                                "https://idp.example:99999", "https://idp.example/a\r\nb")),
], ids=["no-issuer", "no-client-id", "not-a-jwt", "padded-payload", "nothing", "no-exp", "bad-ca-data",
        "issuer-no-scheme", "issuer-ftp", "issuer-no-host", "issuer-bad-ipv6", "issuer-bad-port", "issuer-crlf"])
def test_what_client_go_refuses_before_any_request_is_one_line(server, tmp_path: Path, config: dict,
                                                               words: str) -> None:
    before = len(server.requests)
    line = one_error_line(run(kubeconfig(tmp_path / "kc", server, config)))
    assert words in line and server.requests[before:] == []


def _another_ca() -> str:
    """A CA that did not sign the IdP's certificate."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "not-the-idp-ca")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()


def test_a_fleet_run_whose_contexts_share_an_oidc_user_refreshes_once(server, idp, tmp_path: Path) -> None:
    """Two clusters, one OIDC login: the refresh token rotates at the first refresh, so a second refresh with the
    old one would be refused (invalid_grant). One provider per user in the run: one refresh, both contexts served."""
    expired, refresh = idp.id_token(lifetime=-60), idp.refresh_token()
    path = tmp_path / "kc"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "one",
        "clusters": [{"name": n, "cluster": {"server": server.url_for("ok"), "certificate-authority-data": ca_data()}}
                     for n in ("c1", "c2")],
        "users": [{"name": "u", "user": {"auth-provider": {"name": "oidc",
                                                           "config": provider_config(idp, expired, refresh)}}}],
        "contexts": [{"name": n, "context": {"cluster": c, "user": "u"}} for n, c in (("one", "c1"), ("two", "c2"))],
    }))
    before = len(server.requests)
    result = invoke("leftovers", "--kubeconfig", str(path), "--all-contexts")
    assert result.code == 0 and "error:" not in result.stderr, result
    assert len(idp.token_requests()) == 1
    assert len(set(sent_tokens(server, before))) == 1 and f"Bearer {expired}" not in sent_tokens(server, before)
    assert len([line for line in result.stderr.splitlines() if REFRESHED.match(line)]) == 1, result.stderr


# -- what an IdP sends back is shown safely -------------------------------------------------------------

def _echo_error(form: dict) -> tuple[int, str, bytes]:
    """An IdP that echoes the refresh token in its error, with a line break and a terminal escape."""
    text = f"bad token {form['refresh_token'][0]}\n\x1b[31mred"
    return 400, "application/json", json.dumps({"error": "invalid_grant", "error_description": text}).encode()


def _html_500(form: dict) -> tuple[int, str, bytes]:
    return 500, "text/html", b"<html>\n<body>upstream down</body>\n</html>"


def _form_answer(idp: IdP) -> Callable[[dict], tuple[int, str, bytes]]:
    def answer(form: dict) -> tuple[int, str, bytes]:  # RFC 6749 says JSON; Go's oauth2 reads a form too
        from urllib.parse import urlencode

        return 200, "application/x-www-form-urlencoded", urlencode({
            "access_token": "at-form", "token_type": "Bearer", "id_token": idp.id_token()}).encode()
    return answer


def _error_with_200(form: dict) -> tuple[int, str, bytes]:
    return 200, "application/json", b'{"error": "invalid_grant"}'


def _no_access_token(form: dict) -> tuple[int, str, bytes]:
    return 200, "application/json", b'{"id_token": "x.y.z", "token_type": "Bearer"}'


@pytest.mark.parametrize("grant, words", [
    (_echo_error, "the token endpoint {token} answered 400 invalid_grant: bad token <redacted> \\x1b[31mred (the "
                  "refresh-token was refused: log in again)"),
    (_html_500, "the token endpoint {token} answered 500 Internal Server Error: <html> <body>upstream down</body> </html>"),
    (_error_with_200, "the token endpoint {token} answered 200 invalid_grant (the refresh-token was refused: log in again)"),
    (_no_access_token, "the answer of the token endpoint {token} has no access_token"),
], ids=["echoes-the-token", "html-500", "error-with-200", "no-access-token"])
def test_what_a_token_endpoint_says_is_one_safe_line(server, idp, tmp_path: Path, grant, words: str) -> None:
    idp.scripted_grant = grant
    refresh = idp.refresh_token()
    result = run(kubeconfig(tmp_path / "kc", server, provider_config(idp, idp.id_token(lifetime=-60), refresh)),
                 "-v", "9")
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    words = words.replace("{token}", f"{idp.issuer}/token")  # the refusal names the provider that said it
    assert result.code == 1 and lines == [f'error: refreshing the oidc id-token of user "u" failed: {words}'], result
    assert "\x1b" not in result.stderr
    secrets_absent(result, refresh, idp=idp)


def test_a_form_encoded_token_answer_is_read_as_go_s_oauth2_reads_it(server, idp, tmp_path: Path) -> None:
    idp.scripted_grant = _form_answer(idp)
    before = len(server.requests)
    result = run(kubeconfig(tmp_path / "kc", server, provider_config(idp, idp.id_token(lifetime=-60),
                                                                     idp.refresh_token())))
    assert result.code == 0, result
    assert sent_tokens(server, before)[0] == f"Bearer {idp.issued[-1]}"


def test_a_failing_discovery_document_is_one_line_with_the_start_of_its_body(server, idp, tmp_path: Path) -> None:
    idp.scripted_discovery = (503, "text/plain", b"maintenance " + b"x" * 200)
    refresh = idp.refresh_token()
    result = run(kubeconfig(tmp_path / "kc", server, provider_config(idp, idp.id_token(lifetime=-60), refresh)))
    assert one_error_line(result) == (
        f'error: refreshing the oidc id-token of user "u" failed: the discovery document '
        f'{idp.issuer}/.well-known/openid-configuration answered 503 Service Unavailable: maintenance '
        + "x" * 68 + "...")
    assert idp.token_requests() == []
