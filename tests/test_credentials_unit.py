"""Credentials as kubectl sends them, checked at a scripted server (what arrived, and as whom), in-process
(the tests whose exec plugin runs are integration tests: a child process).

The same behaviours against the real control plane, and the in-cluster token file (an https server), are in
test_credentials_cluster.py.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import pytest
import yaml

from cli_runner import Result, invoke
from fake_apiserver import EMPTY_LIST, ScriptedServer, answer, http_answer
from kubectl_pvleft.errors import ConnectionFailed
from kubectl_pvleft.kube.api import PERSISTENT_VOLUMES, KubeAPI
from kubectl_pvleft.kube.kubeconfig import Selection, load_connection
from loopback import free_port
from oidc_idp import unsigned_jwt
from tls_material import ca_data

TOKEN = "tok-9f8e7d6c5b4a"
OIDC_TOKEN = unsigned_jwt({"sub": "u", "exp": 4_102_444_800})  # a JWT valid until 2100: sent as it is
# The oracle: a real kubectl (gcloud's dispatcher on PATH picks one by the server's version; there is no server here).
KUBECTL = next((p for p in ("/usr/lib/google-cloud-sdk/bin/kubectl.1.33",) if os.path.exists(p)), "kubectl")


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer({"ok": answer(200, EMPTY_LIST)}) as scripted:
        yield scripted


def kubeconfig(path: Path, server: str, user: dict, **cluster: object) -> str:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": server, **trust(server, cluster), **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    }))
    return str(path)


def trust(server: str, cluster: dict) -> dict:
    """The scripted server speaks TLS: its kubeconfig trusts it, unless the test sets TLS itself."""
    wanted = server.startswith("https://") and "127.0.0.1" in server and "insecure-skip-tls-verify" not in cluster
    return {"certificate-authority-data": ca_data()} if wanted else {}


def authorizations(server: ScriptedServer, since: int) -> set[str]:
    return {headers.get("authorization", "<none>") for _, headers in server.requests[since:]}


def ok(result: Result) -> Result:
    assert result.code == 0, result
    return result


@pytest.mark.parametrize("user", [
    {"token": TOKEN + "\n"},
    {"token": f"  {TOKEN}\r\n"},
    {"tokenFile": "token-file"},  # written by `kubectl create token sa > f`: a trailing newline
    {"auth-provider": {"name": "oidc", "config": {"id-token": OIDC_TOKEN + "\n", "idp-issuer-url": "https://127.0.0.1:1",
                                                  "client-id": "c"}}},
], ids=["inline-newline", "inline-crlf-and-spaces", "token-file-newline", "oidc-id-token-newline"])
def test_a_token_ending_in_a_newline_is_trimmed_like_client_go(user: dict, server: ScriptedServer,
                                                              tmp_path: Path) -> None:
    (tmp_path / "token-file").write_text(TOKEN + "\n")
    before = len(server.requests)
    result = ok(invoke("leftovers", "--kubeconfig", kubeconfig(tmp_path / "kc", server.url_for("ok"), user)))
    token = OIDC_TOKEN if "auth-provider" in user else TOKEN
    assert token not in result.stdout + result.stderr
    assert authorizations(server, before) == {f"Bearer {token}"}


@pytest.mark.integration  # the exec plugin is a child process
def test_a_relative_exec_command_resolves_against_the_kubeconfig_folder(server: ScriptedServer,
                                                                        tmp_path: Path) -> None:
    folder = tmp_path / "configs"
    folder.mkdir()
    script = folder / "get-token.sh"
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {"token": TOKEN}}
    script.write_text("#!/bin/sh\ncat <<'EOF'\n" + json.dumps(credential) + "\nEOF\n")
    script.chmod(0o755)
    config = kubeconfig(folder / "kc", server.url_for("ok"), {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": "./get-token.sh", "interactiveMode": "Never"}})
    before = len(server.requests)
    ok(invoke("classes", "--kubeconfig", config))  # this process's working directory is not `folder`
    assert authorizations(server, before) == {f"Bearer {TOKEN}"}


@pytest.mark.integration  # the exec plugin is a child process
def test_a_failing_exec_plugin_stops_before_any_request_and_logs_nothing_else(server: ScriptedServer,
                                                                               tmp_path: Path) -> None:
    script = tmp_path / "corp-login.sh"
    script.write_text("#!/bin/sh\necho 'refresh token expired' >&2\nexit 2\n")
    script.chmod(0o755)
    config = kubeconfig(tmp_path / "kc", server.url_for("ok"), {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(script)}})
    before = len(server.requests)
    result = invoke("pending", "-A", "--kubeconfig", config)
    assert (result.code, result.stdout) == (1, "")
    assert result.stderr == (f"error: getting credentials: exec: executable {script} failed with exit code 2: "
                             "refresh token expired\n")
    assert server.requests[before:] == []  # never carried on as system:anonymous
    # No library installed a root handler (pytest's own capture handlers aside).
    assert [h for h in logging.getLogger().handlers if not type(h).__module__.startswith("_pytest")] == []


def test_basic_auth_and_impersonation_headers(server: ScriptedServer, tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "kc", server.url_for("ok"), {"username": "admin", "password": TOKEN})
    before = len(server.requests)
    result = ok(invoke("claims", "-A", "--kubeconfig", config, "--as", "jane", "--as-group", "devs",
                       "--as-group", "ops", "--as-uid", "42", "-v", "9"))
    sent = server.requests[before:]
    assert {h["impersonate-user"] for _, h in sent} == {"jane"} and {h["impersonate-uid"] for _, h in sent} == {"42"}
    assert {h["authorization"] for _, h in sent} == {"Basic YWRtaW46dG9rLTlmOGU3ZDZjNWI0YQ=="}
    assert "Authorization: Basic <masked>" in result.stderr
    assert TOKEN not in result.stderr and "YWRtaW46dG9rLTlmOGU3ZDZjNWI0YQ" not in result.stderr


def test_a_password_in_the_server_url_is_never_logged(server: ScriptedServer, tmp_path: Path) -> None:
    url = server.url_for("ok").replace("https://", f"https://admin:{TOKEN}@")
    config = kubeconfig(tmp_path / "kc", url, {"token": TOKEN})
    for level in ("6", "8", "9"):
        result = ok(invoke("classes", "--kubeconfig", config, "-v", level))
        assert "<redacted>@127.0.0.1" in result.stderr and TOKEN not in result.stdout + result.stderr


def test_a_timeout_names_the_flag_only_when_it_was_given(server: ScriptedServer, tmp_path: Path) -> None:
    connection = load_connection(Selection(kubeconfig=kubeconfig(tmp_path / "kc", server.url_for("silent"),
                                                                 {"token": TOKEN})))
    # A timeout the user did not ask for (the plugin's own): the message must not send them to a flag.
    api = KubeAPI(connection, request_timeout=0.05)
    with pytest.raises(ConnectionFailed) as caught:
        list(api.list(PERSISTENT_VOLUMES))
    assert "did not answer in time" in str(caught.value) and "--request-timeout" not in str(caught.value)
    flagged = invoke("leftovers", "--kubeconfig", str(tmp_path / "kc"), "--request-timeout", "50ms")
    assert flagged.code == 1 and flagged.stderr.endswith("did not answer in time (--request-timeout)\n")


@pytest.mark.parametrize("subcommand", ["pending", "claims"])
def test_watch_against_a_server_that_is_silent_at_start_fails_like_any_command(subcommand: str, server: ScriptedServer,
                                                                               tmp_path: Path) -> None:
    """It takes the connection and never answers; no --request-timeout was given (so none is named)."""
    config = kubeconfig(tmp_path / "kc", server.url_for("silent"), {"token": TOKEN})
    result = in_a_thread(lambda: invoke(subcommand, "-A", "--watch", "--kubeconfig", config,
                                        env={"PVLEFT_READ_TIMEOUT_SECONDS": "0.1", **QUICK_WATCH}))
    assert (result.code, result.stdout) == (1, "")
    assert result.stderr == f"error: the server {server.url}/silent did not answer in time\n"


# The watch's batching pause (0.3 s by default) shortened, as tests may (PVLEFT_WATCH_*): it is no part of these tests.
QUICK_WATCH = {"PVLEFT_WATCH_SETTLE_SECONDS": "0.01"}


def in_a_thread(run) -> Result:
    outcome: list[Result] = []
    runner = threading.Thread(target=lambda: outcome.append(run()), daemon=True)
    runner.start()
    runner.join(60)  # a guard against the old behaviour (retrying the first list forever), not a speed target
    assert outcome, "the watch kept retrying a server that never answered its first list"
    return outcome[0]


@pytest.mark.parametrize("subcommand", ["pending", "claims", "leftovers", "classes"])
def test_watch_against_a_server_that_is_down_at_start_fails_like_any_command(subcommand: str,
                                                                             tmp_path: Path) -> None:
    # No CA named would load the system's trust store (~0.1 s) before the refused connect: skip verification.
    config = kubeconfig(tmp_path / "kc", f"https://127.0.0.1:{free_port()}", {"token": TOKEN},
                        **{"insecure-skip-tls-verify": True})
    result = in_a_thread(lambda: invoke(subcommand, "-A", "--watch", "--kubeconfig", config, env=QUICK_WATCH))
    assert (result.code, result.stdout) == (1, "")
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("error: the connection to the server https://127.0.0.1:")


@pytest.mark.integration  # the exec plugin is a child process
def test_an_interactive_exec_plugin_prompts_on_the_terminal(server: ScriptedServer, tmp_path: Path) -> None:
    """With a terminal on stdin, a login plugin's prompt reaches the user (kubectl passes its stderr through)
    and its answer is read from that terminal. A real process: stdin must be a tty."""
    import os
    import pty
    import subprocess
    import sys

    script = tmp_path / "login.sh"
    credential = json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                             "status": {"token": TOKEN}})
    script.write_text("#!/bin/sh\necho 'open https://login.example and enter code WXYZ-1234' >&2\nread answer\n"
                      f"cat <<'EOF'\n{credential}\nEOF\n")
    script.chmod(0o755)
    config = kubeconfig(tmp_path / "kc", server.url_for("ok"), {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": str(script), "interactiveMode": "IfAvailable"}})
    controller, terminal = pty.openpty()
    before = len(server.requests)
    try:
        process = subprocess.Popen([sys.executable, "-m", "kubectl_pvleft", "classes", "--kubeconfig", config],
                                   stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        os.write(controller, b"done\n")  # the user, answering the prompt
        out, err = process.communicate(timeout=60)
    finally:
        os.close(controller)
        os.close(terminal)
    assert process.returncode == 0, (out, err)
    assert "enter code WXYZ-1234" in err
    assert authorizations(server, before) == {f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def plain_server() -> Iterator[ScriptedServer]:
    with ScriptedServer({"ok": answer(200, EMPTY_LIST)}, tls=False) as scripted:
        yield scripted


def _plugin(folder: Path) -> dict:
    """An exec plugin that leaves a mark when it runs (it must not run for a plain-HTTP server)."""
    script = folder / "plugin.sh"
    script.write_text(f"#!/bin/sh\ntouch {folder}/ran\necho '{{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                      f"\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{TOKEN}\"}}}}'\n")
    script.chmod(0o755)
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script)}}


@pytest.mark.parametrize("kind", ["token", "tokenFile", "basic", "exec", "oidc", "flag-token"])
def test_no_credential_is_ever_sent_to_a_plain_http_server(kind: str, plain_server: ScriptedServer,
                                                           tmp_path: Path) -> None:
    """client-go merges a user's credentials only into a TLS config: kubectl sends none over http://, nor do we,
    and we say so once (kubectl is silent)."""
    (tmp_path / "token").write_text(TOKEN)
    user = {"token": {"token": TOKEN}, "tokenFile": {"tokenFile": str(tmp_path / "token")},
            "basic": {"username": "admin", "password": TOKEN}, "exec": _plugin(tmp_path),
            "oidc": {"auth-provider": {"name": "oidc", "config": {"id-token": TOKEN}}}, "flag-token": {}}[kind]
    config = kubeconfig(tmp_path / "kc", plain_server.url_for("ok"), user)
    flags = ["--token", TOKEN] if kind == "flag-token" else []
    before = len(plain_server.requests)
    result = ok(invoke("classes", "--kubeconfig", config, "-v", "9", *flags))
    sent = plain_server.requests[before:]
    assert sent and {h.get("authorization", "<none>") for _, h in sent} == {"<none>"}
    assert not (tmp_path / "ran").exists()  # the exec plugin was not even run
    assert TOKEN not in result.stdout + result.stderr
    warning = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warning == [f'warning: {plain_server.url_for("ok")} is not a TLS server: the credentials of user "u" are '
                       "not sent to it (as kubectl does), so requests go out anonymous"]


def test_impersonation_still_goes_to_a_plain_http_server(plain_server: ScriptedServer, tmp_path: Path) -> None:
    # client-go sets impersonation before it asks whether the transport is TLS: kubectl sends it over http too.
    config = kubeconfig(tmp_path / "kc", plain_server.url_for("ok"), {})
    before = len(plain_server.requests)
    ok(invoke("classes", "--kubeconfig", config, "--as", "jane"))
    assert {h.get("impersonate-user") for _, h in plain_server.requests[before:]} == {"jane"}


def test_a_server_without_a_scheme_is_plain_http_and_gets_no_credential(plain_server: ScriptedServer,
                                                                        tmp_path: Path) -> None:
    """client-go picks the scheme of a bare host:port before reading any TLS setting: http, even with a CA."""
    bare = plain_server.url_for("ok").removeprefix("http://")
    connection = load_connection(Selection(kubeconfig=kubeconfig(tmp_path / "kc", bare, {"token": TOKEN},
                                                                 **{"certificate-authority-data": ca_data()})))
    assert connection.server == "http://" + bare and connection.auth.token is None
    before = len(plain_server.requests)
    ok(invoke("classes", "--kubeconfig", str(tmp_path / "kc")))
    assert {h.get("authorization", "<none>") for _, h in plain_server.requests[before:]} == {"<none>"}


def test_token_file_wins_over_an_inline_token_and_the_inline_one_is_the_fallback(server: ScriptedServer,
                                                                                 tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-the-file")
    both = {"token": "inline-token", "tokenFile": str(tmp_path / "token")}
    config = kubeconfig(tmp_path / "kc", server.url_for("ok"), both)
    before = len(server.requests)
    ok(invoke("classes", "--kubeconfig", config))
    assert authorizations(server, before) == {"Bearer from-the-file"}
    (tmp_path / "token").unlink()  # client-go falls back to the inline token when the file cannot be read
    before = len(server.requests)
    ok(invoke("classes", "--kubeconfig", config))
    assert authorizations(server, before) == {"Bearer inline-token"}
    before = len(server.requests)  # --token replaces both
    ok(invoke("classes", "--kubeconfig", config, "--token", "from-the-flag"))
    assert authorizations(server, before) == {"Bearer from-the-flag"}


def test_a_hanging_exec_plugin_is_bounded_by_the_request_timeout(server: ScriptedServer, tmp_path: Path) -> None:
    """The plugin's run is part of the request (kubectl bounds it): it held a run for 60 s under
    --request-timeout 2s, and a child it started (here `sleep`) kept the pipe open past any kill of the shell."""
    import time

    script = tmp_path / "hang.sh"
    script.write_text("#!/bin/sh\nsleep 30\necho never\n")
    script.chmod(0o755)
    config = kubeconfig(tmp_path / "kc", server.url_for("ok"), {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": str(script), "interactiveMode": "Never"}})
    before = len(server.requests)
    started = time.monotonic()
    result = invoke("claims", "-A", "--kubeconfig", config, "--request-timeout", "1s")
    took = time.monotonic() - started
    assert (result.code, result.stdout) == (1, "")
    assert result.stderr == (f'error: getting credentials: exec plugin "{script}" did not answer in time '
                             "(--request-timeout)\n")
    assert took < 10, took  # a guard against the old 30-60 s wait, not a speed target
    assert server.requests[before:] == []  # never sent as system:anonymous instead


def test_impersonation_from_the_kubeconfig_merged_with_the_flags(server: ScriptedServer, tmp_path: Path) -> None:
    """as, as-uid, as-groups and as-user-extra were read by kubectl and dropped here: the plugin asked as another
    identity than kubectl would. A flag given wins over its key; the rest comes from the kubeconfig."""
    user = {"token": TOKEN, "as": "jane", "as-uid": "42", "as-groups": ["devs", "ops"],
            "as-user-extra": {"scopes.example.com/team": ["storage"], "reason%": ["on call"]}}
    config = kubeconfig(tmp_path / "kc", server.url_for("ok"), user)
    before = len(server.requests)
    ok(invoke("classes", "--kubeconfig", config))
    sent = [headers for _, headers in server.requests[before:]]
    assert {(h["impersonate-user"], h["impersonate-uid"]) for h in sent} == {("jane", "42")}
    assert {h["impersonate-group"] for h in sent} == {"ops"}  # one header line per group; the last one recorded
    # client-go's headerKeyEscape: '/' and '%' are not header-name characters.
    assert {h["impersonate-extra-scopes.example.com%2fteam"] for h in sent} == {"storage"}
    assert {h["impersonate-extra-reason%25"] for h in sent} == {"on call"}
    before = len(server.requests)
    ok(invoke("classes", "--kubeconfig", config, "--as", "joe", "--as-group", "admins"))
    sent = [headers for _, headers in server.requests[before:]]
    assert {(h["impersonate-user"], h["impersonate-uid"], h["impersonate-group"]) for h in sent} == {
        ("joe", "42", "admins")}


def test_impersonation_keys_without_a_user_are_refused_as_kubectl_refuses(tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "kc", "https://127.0.0.1:1", {"as-groups": ["devs"]})
    result = invoke("classes", "--kubeconfig", config)
    assert (result.code, result.stderr) == (1, "error: requesting uid, groups or user-extra for u without "
                                               "impersonating a user\n")


def _doc(server: str, users: list, clusters: Optional[list] = None, context_user: str = "u") -> dict:
    return {"apiVersion": "v1", "kind": "Config", "current-context": "x",
            "clusters": clusters or [{"name": "c", "cluster": {"server": server, **trust(server, {})}}],
            "users": users, "contexts": [{"name": "x", "context": {"cluster": "c", "user": context_user}}]}


@pytest.mark.parametrize("section", ["clusters", "users", "contexts"])
def test_two_entries_of_one_name_in_a_file_are_refused_as_kubectl_refuses(section: str, tmp_path: Path) -> None:
    doc = _doc("https://127.0.0.1:1", [{"name": "u", "user": {"token": TOKEN}}])
    doc[section].append(dict(doc[section][0]))
    (tmp_path / "kc").write_text(yaml.safe_dump(doc))
    result = invoke("classes", "--kubeconfig", str(tmp_path / "kc"))
    name = doc[section][0]["name"]
    assert (result.code, result.stderr) == (1, f'error: error loading config file "{tmp_path / "kc"}": duplicate '
                                               f'name "{name}" in {section}\n')
    assert TOKEN not in result.stderr  # kubectl prints the entries, secrets and all; never here


@pytest.mark.integration  # kubectl runs as the oracle
@pytest.mark.parametrize("user, cluster, said", [
    ({"token": TOKEN, "username": "a", "password": TOKEN}, {},
     "more than one authentication method found for u; found [token basicAuth], only one is allowed"),
    ({"token": TOKEN}, {"certificate-authority": "/etc/hostname", "certificate-authority-data": "aGVsbG8="},
     "certificate-authority-data and certificate-authority are both specified for c. certificate-authority-data "
     "will override."),
    ({"client-certificate": "/etc/hostname", "client-certificate-data": "aGVsbG8=", "client-key-data": "aGVsbG8="},
     {}, "client-cert-data and client-cert are both specified for u. client-cert-data will override."),
    ({"client-certificate-data": "aGVsbG8=", "client-key": "/etc/hostname", "client-key-data": "aGVsbG8="}, {},
     "client-key-data and client-key are both specified for u; client-key-data will override"),
])
def test_what_kubectl_validation_refuses_is_refused(user: dict, cluster: dict, said: str, tmp_path: Path) -> None:
    doc = _doc("https://127.0.0.1:1", [{"name": "u", "user": user}],
               [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", **cluster}}])
    (tmp_path / "kc").write_text(yaml.safe_dump(doc))
    result = invoke("classes", "--kubeconfig", str(tmp_path / "kc"))
    assert (result.code, result.stderr) == (1, f"error: invalid configuration: {said}\n")
    kubectl = subprocess.run([KUBECTL, "--kubeconfig", str(tmp_path / "kc"), "get", "pv", "--request-timeout", "1s"],
                             capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    assert said in kubectl.stderr, kubectl.stderr  # kubectl refuses the same file in the same words


def test_a_tilde_is_not_expanded_as_kubectl_does_not(tmp_path: Path) -> None:
    (tmp_path / "kc").write_text(yaml.safe_dump(_doc("https://127.0.0.1:1", [{"name": "u", "user": {}}])))
    result = invoke("classes", "--kubeconfig", "~/kc", env={"HOME": str(tmp_path)})
    assert (result.code, result.stderr) == (1, "error: kubeconfig ~/kc: no such file\n")
    doc = _doc("https://127.0.0.1:1", [{"name": "u", "user": {}}],
               [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", "certificate-authority": "~/ca.crt"}}])
    (tmp_path / "kc").write_text(yaml.safe_dump(doc))
    connection_error = invoke("classes", "--kubeconfig", str(tmp_path / "kc"), env={"HOME": str(tmp_path)})
    assert f"{tmp_path}/~/ca.crt" in connection_error.stderr  # relative to the kubeconfig's folder, as client-go


def test_a_context_whose_user_is_not_defined_goes_out_anonymous_and_says_so(server: ScriptedServer,
                                                                          tmp_path: Path) -> None:
    (tmp_path / "kc").write_text(yaml.safe_dump(_doc(server.url_for("ok"), [], context_user="ghost")))
    before = len(server.requests)
    result = ok(invoke("classes", "--kubeconfig", str(tmp_path / "kc")))
    assert {h.get("authorization", "<none>") for _, h in server.requests[before:]} == {"<none>"}
    assert result.stderr.splitlines()[0] == ('warning: user "ghost" of context "x" is not in the kubeconfig: requests '
                                             "go out anonymous (kubectl would ask for a user name and password)")


def test_a_429_or_503_with_retry_after_is_retried_as_client_go_does(tmp_path: Path) -> None:
    """client-go retries a GET answered 429 (or 5xx) with Retry-After, up to 10 times; the plugin gave up at once."""
    answers = iter([(429, "Retry-After: 0\r\n"), (503, "Retry-After: 0\r\n"), (200, "")])

    def flaky(conn: socket.socket) -> None:
        status, extra = next(answers, (200, ""))
        conn.sendall(http_answer(status, EMPTY_LIST if status == 200 else b"{}", extra=extra))

    always = {"busy": answer(429, b'{"kind":"Status","code":429,"reason":"TooManyRequests","message":"slow down"}',
                             extra="Retry-After: 0\r\n"),
              "no-retry-after": answer(503, b"", "text/plain")}
    with ScriptedServer({"flaky": flaky, **always}) as scripted:
        reads = ok(invoke("classes", "--kubeconfig", kubeconfig(tmp_path / "a", scripted.url_for("flaky"), {}), "-v", "6"))
        assert reads.stderr.count('"Retrying"') == 2  # a 429 and a 503, each retried once, then the lists went on
        assert len(scripted.seen("flaky")) == reads.stderr.count('"Response"')
        busy = invoke("classes", "--kubeconfig", kubeconfig(tmp_path / "b", scripted.url_for("busy"), {}))
        assert busy.code == 1 and "slow down" in busy.stderr
        assert len(scripted.seen("busy")) == 11  # the first try and 10 retries, then the server's answer
        invoke("classes", "--kubeconfig", kubeconfig(tmp_path / "c", scripted.url_for("no-retry-after"), {}))
        assert len(scripted.seen("no-retry-after")) == 1  # no Retry-After: not retried


def test_a_dropped_watch_is_said_in_kubectls_words_never_a_class_name(tmp_path: Path) -> None:
    """Issue 21, item 11: a watch warning showed `(Cut)`, our internal class name."""
    from kubectl_pvleft.kube.api import StreamClosed

    def cut(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"10\r\n{\"type\":\"ADDED\",")  # half an event, then the connection ends

    with ScriptedServer({"cut": cut}) as scripted:
        api = KubeAPI(load_connection(Selection(kubeconfig=kubeconfig(tmp_path / "kc", scripted.url_for("cut"), {}))))
        with pytest.raises(StreamClosed) as caught:
            list(api.watch(PERSISTENT_VOLUMES, None, "1"))
        api.close()
    assert str(caught.value) == f"the server {scripted.url_for('cut')} closed the connection mid-answer"


def test_the_exec_plugin_and_the_request_share_one_deadline(server: ScriptedServer, tmp_path: Path) -> None:
    """--request-timeout bounds the request whole: a plugin that takes 1.5 s leaves the silent server the rest of
    2 s, not another 2 s (the two waits added up before: 3.5 s)."""
    import time

    script = tmp_path / "slow.sh"
    script.write_text("#!/bin/sh\nsleep 1.5\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                      "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"tok\"}}'\n")
    script.chmod(0o755)
    config = kubeconfig(tmp_path / "kc", server.url_for("silent"), {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": str(script), "interactiveMode": "Never"}})
    started = time.monotonic()
    result = invoke("claims", "-A", "--kubeconfig", config, "--request-timeout", "2s")
    took = time.monotonic() - started
    assert (result.code, result.stderr) == (1, f"error: the server {server.url}/silent did not answer in time "
                                               "(--request-timeout)\n")
    assert took < 3.2, took  # the bound is 2 s; the sum of two separate waits was at least 3.5 s


def test_an_exec_env_value_of_null_is_the_empty_string() -> None:
    """client-go's ExecEnvVar (k8s.io/client-go/tools/clientcmd/api/types.go) has `Value string`: a YAML null
    decodes to "", and that is what the plugin gets (it was the text "None")."""
    from kubectl_pvleft.kube.credentials import _exec_env

    env = _exec_env({"command": "x", "env": [{"name": "PVLEFT_NULL", "value": None}, {"name": "PVLEFT_SET",
                                                                                      "value": "v"}]}, "user x")
    assert env["PVLEFT_NULL"] == "" and env["PVLEFT_SET"] == "v"
