"""The bad-input corpus: hostile kubeconfigs, credentials, servers, flags and arguments, table-driven.

For every case, on the subcommands where it makes a difference (see CASES; a server's answers on all four, and
at -v 6, 8 and 9 too):
exit 1 or 2, exactly one stderr line starting ``error: `` (the last one; -v adds log lines above it),
nothing on stdout, no traceback, never "internal error", and no secret. Every token, password, key and
certificate field holds SECRET (or PEM/base64 around it); none of those forms may ever be printed.

Runs in-process (cli_runner) against one scripted server per module, whose first path segment picks the
fault: the kubeconfig's server is ``.../<fault>``. Cases that must fail before any request point at a fault
nobody serves and check that nothing reached the server (no anonymous request after a failed credential).
The cases whose exec plugin really runs (PLUGIN_RUNS: a child process) are marked integration, so the unit
suite (`make unit`) starts no process; `make test` runs them all.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, Union

import pytest
import yaml

from cli_runner import Result, invoke
from fake_apiserver import ScriptedServer, answer, close_at_once
from oidc_idp import unsigned_jwt
from tls_material import ca_data

SECRET = "pvleft-SeCrEt-7f3a9c"
KEY_PEM = f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n-----END PRIVATE KEY-----\n"
CERT_PEM = f"-----BEGIN CERTIFICATE-----\n{SECRET}\n-----END CERTIFICATE-----\n"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# Every printed form a secret could take: raw, in a data field, in a Basic header.
SECRET_FORMS = (SECRET, b64(KEY_PEM), b64(CERT_PEM), b64(SECRET), b64(f"admin:{SECRET}"), "PRIVATE KEY", SECRET[7:])
SUBCOMMANDS = ("leftovers", "pending", "classes", "claims")
NOWHERE = "nowhere"  # a fault nobody serves: a request there is a request that should not have been sent


# -- the scripted server ------------------------------------------------------------------------------

def status_body(code: int, reason: str, message: str, details: Optional[dict[str, Any]] = None) -> bytes:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": message, "reason": reason, "code": code,
                       **({"details": details} if details is not None else {})}).encode()


HTML = b"<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n</body>\n</html>\n"
FAULTS: dict[str, Callable[[socket.socket], None]] = {
    "list-array": answer(200, b"[1,2,3]"),
    "items-string": answer(200, b'{"kind":"List","apiVersion":"v1","metadata":{},"items":"x"}'),
    "items-null-entry": answer(200, b'{"kind":"List","apiVersion":"v1","metadata":{},"items":[null]}'),
    "items-number-entry": answer(200, b'{"metadata":{},"items":[1]}'),
    "metadata-string": answer(200, b'{"metadata":"x","items":[]}'),
    "nested-too-deep": answer(200, b'{"items":[{"metadata":{"name":"a","uid":"u"},"spec":' + b'{"a":' * 50000 + b'1'
                              + b'}' * 50000 + b'}]}'),
    "same-continue": answer(200, b'{"metadata":{"continue":"again"},"items":[]}'),
    "not-json": answer(200, b"hello, I am not JSON\nat all\n", "text/plain"),
    "empty-200": answer(200, b""),
    "truncated": answer(200, b'{"kind":"List","items":[{"metadata":', length=5000),
    "html-502": answer(502, HTML, "text/html"),
    "html-200": answer(200, HTML, "text/html"),
    "status-500-multiline": answer(500, status_body(500, "InternalError", "line one\nline two\n\tline three\n")),
    "status-terminal-escapes": answer(500, status_body(500, "InternalError", "\x1b]0;pwned\x07\x1b[2Jboom\r")),
    "body-terminal-escapes": answer(200, b'\x1b[2J{"items":\n"x"}\r\n', "text/plain"),
    "text-500-multiline": answer(500, b"panic: something broke\n\ngoroutine 1 [running]:\nmain.main()\n", "text/plain"),
    "huge-500": answer(500, b"overloaded\n" * 100_000, "text/plain"),
    "unauthorized": answer(401, status_body(401, "Unauthorized", "Unauthorized")),
    "not-found": answer(404, status_body(404, "NotFound", "the server could not find the requested resource")),
    # details.kind is the resource a refusal names: one that is not text was an unhashable key (a traceback).
    "forbidden-kind-list": answer(403, status_body(403, "Forbidden", "nope", {"kind": ["persistentvolumes"]})),
    "not-found-empty": answer(404, b"", "text/plain"),
    "too-many": answer(429, status_body(429, "TooManyRequests", "Too many requests, please try again later."),
                       extra="Retry-After: 0\r\n"),  # retried 10 times at once, then the error
    "redirect": answer(302, b"", "text/plain", extra="Location: http://127.0.0.1:1/elsewhere\r\n"),
    "bad-gzip": answer(200, b"\x1f\x8b\x08\x00 this is no gzip", extra="Content-Encoding: gzip\r\n"),
    "close": close_at_once,
    "garbage": lambda conn: conn.sendall(b"HELLO WORLD\r\n\r\n"),
    # Framings RFC 9112 refuses: each was an endless loop, an internal error or a misleading "closed" before.
    "negative-chunk": lambda conn: conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                                b"-6\r\n{}\r\n\r\n0\r\n\r\n"),
    "length-superscript": lambda conn: conn.sendall("HTTP/1.1 200 OK\r\nContent-Length: \u00b2\r\n\r\n{}"
                                                    .encode("utf-8")),
    "length-twice": lambda conn: conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 20\r\n"
                                              b"\r\n{}"),
    "endless-headers": lambda conn: [conn.sendall(b"HTTP/1.1 200 OK\r\n")] + [
        conn.sendall(b"X-Filler: " + b"f" * 1000 + b"\r\n") for _ in range(3000)],
}


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(dict(FAULTS)) as scripted:  # its "silent" answers nothing: only --request-timeout ends the wait
        yield scripted


# -- building a case's inputs -----------------------------------------------------------------------

@dataclass
class Inputs:
    """What a case builds on: the shared server, a folder of files, and kubeconfig documents."""

    server: ScriptedServer
    folder: Path
    name: str

    def url(self, fault: str = NOWHERE) -> str:
        return self.server.url_for(fault)

    def file(self, name: str, content: Union[str, bytes], mode: int = 0o644) -> str:
        path = self.folder / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        path.chmod(mode)
        return str(path)

    def script(self, name: str, body: str) -> str:
        # The script first leaves a mark (a shell builtin, no extra process): the test sees whether it ran.
        return self.file(name, f"#!/bin/sh\n: > {shlex.quote(str(self.ran_mark))}\n{body}\n", 0o755)

    @property
    def ran_mark(self) -> Path:
        return self.folder / f"{self.name}.ran"

    def kubeconfig(self, doc: Union[dict, str, bytes]) -> str:
        if isinstance(doc, dict):
            doc = yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper))  # libyaml: faster
        return self.file(f"{self.name}.kubeconfig", doc)


def trust(server: str) -> dict:
    """The scripted server speaks TLS (no credential is sent to one that does not): its kubeconfig trusts it."""
    return {"certificate-authority-data": ca_data()} if server.startswith("https://127.0.0.1") else {}


def config(server: str, *, cluster: Optional[dict] = None, user: Optional[dict] = None,
           context: Optional[dict] = None, **top: Any) -> dict:
    """A kubeconfig whose user holds SECRET; the keyword arguments replace parts of it."""
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx",
        "clusters": [{"name": "c", "cluster": {"server": server, **trust(server)} if cluster is None else cluster}],
        "users": [{"name": "u", "user": {"token": SECRET} if user is None else user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"} if context is None else context}],
    }
    doc.update(top)
    return doc


Build = Callable[[Inputs], tuple[list[str], dict[str, Optional[str]]]]


@dataclass(frozen=True)
class Case:
    id: str
    build: Build
    fragment: str = ""  # a part of the error line that says what is wrong
    code: int = 1
    subcommands: tuple[str, ...] = SUBCOMMANDS
    fault: str = ""  # the server answer under test: run at every -v level, and the request must arrive
    verbosities: tuple[int, ...] = (0,)
    extra_secrets: tuple[str, ...] = field(default=())
    runs_plugin: bool = False  # the exec plugin really runs: a child process, so an integration test


def kc(doc: Callable[[Inputs], Union[dict, str, bytes]], *args: str,
       env: Optional[dict[str, Optional[str]]] = None) -> Build:
    """A case that runs with one kubeconfig file (and the environment that makes it the only one)."""
    def build(inputs: Inputs) -> tuple[list[str], dict[str, Optional[str]]]:
        return ["--kubeconfig", inputs.kubeconfig(doc(inputs)), *args], dict(env or {})
    return build


def flags(*args: str) -> Build:
    """A case about the command line: a sane kubeconfig (whose server is never reached) and these flags."""
    return kc(lambda i: config(i.url()), *args, f"--token={SECRET}")


def user_case(id: str, user: Callable[[Inputs], dict], fragment: str = "", **kw: Any) -> Case:
    return Case(id, kc(lambda i: config(i.url(), user=user(i))), fragment, **kw)


def cluster_case(id: str, cluster: Callable[[Inputs], dict], fragment: str = "", **kw: Any) -> Case:
    return Case(id, kc(lambda i: config(i.url(), cluster=cluster(i))), fragment, **kw)


def exec_user(command: str, api_version: str = "client.authentication.k8s.io/v1", **more: Any) -> dict:
    return {"exec": {"apiVersion": api_version, "command": command, "interactiveMode": "Never", **more}}


def credential(status: dict, api_version: str = "client.authentication.k8s.io/v1") -> str:
    doc = {"apiVersion": api_version, "kind": "ExecCredential", "status": status}
    return "cat <<'EOF'\n" + json.dumps(doc) + "\nEOF"


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def closed_tls(i: Inputs) -> str:
    return "https://127.0.0.1:1"  # TLS material is checked before any connection is tried


# -- the table ------------------------------------------------------------------------------------

KUBECONFIG_FILES = [
    Case("binary-file", kc(lambda i: bytes(range(128, 256)) * 4), "not a text file"),
    Case("nul-bytes", kc(lambda i: "apiVersion: v1\x00\nkind: Config\n"), "NUL"),
    Case("yaml-unclosed-flow", kc(lambda i: "clusters: [\n  {name: c\n"), "cannot be read"),
    Case("yaml-tab-indent", kc(lambda i: "clusters:\n\t- name: c\n"), "cannot be read"),
    Case("yaml-unterminated-quote", kc(lambda i: "current-context: 'ctx\n"), "cannot be read"),
    Case("yaml-undefined-alias", kc(lambda i: "current-context: *nothing\n"), "cannot be read"),
    # A tag go-yaml does not know is no tag to kubectl (here a list of one string): read, never run.
    Case("yaml-python-tag", kc(lambda i: "x: !!python/object/apply:os.system ['true']\n"), "no context chosen"),
    Case("yaml-deep-nesting", kc(lambda i: "[" * 5000 + "]" * 5000), "kubeconfig"),
    # go-yaml v2 (sigs.k8s.io/yaml's Unmarshal) decodes the first document only: here one with no context.
    Case("yaml-two-documents", kc(lambda i: "a: 1\n---\nb: 2\n"), "no context"),
    Case("yaml-merge-into-a-scalar", kc(lambda i: "a: &a 1\nb:\n  <<: *a\n"),
         "map merge requires map or sequence of maps as the value"),  # go-yaml v2's words (decode.go failWantMap)
    # kubectl reads 10,000 levels; a bounded depth here, one line instead of a RecursionError (kube/nesting.py).
    Case("json-nested-500-deep", kc(lambda i: json.dumps(dict(config(i.url()), x=nested(500)))),
         "nested deeper than 200 levels"),
    Case("yaml-nested-500-deep", kc(lambda i: "x: " + "{a: " * 500 + "1" + "}" * 500 + "\n"),
         "nested deeper than 200 levels"),
    Case("json-nested-2000-deep", kc(lambda i: '{"x": ' + "[" * 2000 + "]" * 2000 + "}"),
         "nested deeper than 200 levels"),
    Case("yaml-billion-laughs", kc(lambda i: "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join(['*' + chr(97 + n)] * 9)}]\n" for n in range(8))
        + "clusters: [*i]\ncontexts: *i\n"), "document contains excessive aliasing"),  # kubectl's words
    Case("top-level-list", kc(lambda i: "- a\n- b\n"), "expected a mapping"),
    Case("top-level-string", kc(lambda i: "just a string\n"), "expected a mapping"),
    Case("top-level-number", kc(lambda i: "42\n"), "expected a mapping"),
    Case("top-level-bool", kc(lambda i: "true\n"), "expected a mapping"),
    Case("empty-file", kc(lambda i: ""), "no context"),
    Case("empty-mapping", kc(lambda i: "{}\n"), "no context"),
    Case("kubeconfig-is-a-folder", lambda i: (["--kubeconfig", str(i.folder)], {}), "no such file"),
    Case("kubeconfig-missing", lambda i: (["--kubeconfig", str(i.folder / "absent")], {}), "no such file"),
    Case("kubeconfig-name-too-long", lambda i: (["--kubeconfig", "/tmp/" + "k" * 5000], {}), "no such file"),
    Case("kubeconfig-list-name-too-long", lambda i: ([], {"KUBECONFIG": "/tmp/" + "k" * 5000, "HOME": "/tmp/" + "h" * 5000,
                                                          "KUBERNETES_SERVICE_HOST": None}), "no kubeconfig found"),
    Case("no-kubeconfig-anywhere", lambda i: ([], {"KUBECONFIG": str(i.folder / "absent"), "HOME": str(i.folder),
                                                   "KUBERNETES_SERVICE_HOST": None}), "no kubeconfig found"),
]

STRUCTURE = [
    Case("clusters-string", kc(lambda i: dict(config(i.url()), clusters="c")), "clusters must be a list"),
    Case("clusters-mapping", kc(lambda i: dict(config(i.url()), clusters={"c": {"server": "x"}})), "must be a list"),
    Case("users-number", kc(lambda i: dict(config(i.url()), users=7)), "users must be a list"),
    Case("contexts-string", kc(lambda i: dict(config(i.url()), contexts="ctx")), "contexts must be a list"),
    Case("context-entry-string", kc(lambda i: dict(config(i.url()), contexts=["ctx"])), "contexts[0] must be a mapping"),
    Case("context-entry-list", kc(lambda i: dict(config(i.url()), contexts=[["ctx"]])), "contexts[0] must be a mapping"),
    Case("cluster-entry-string", kc(lambda i: dict(config(i.url()), clusters=["c"])), "clusters[0] must be a mapping"),
    Case("user-entry-number", kc(lambda i: dict(config(i.url()), users=[5])), "users[0] must be a mapping"),
    Case("user-entry-null", kc(lambda i: dict(config(i.url()), users=[None])), "users[0] must be a mapping"),
    Case("context-name-list", kc(lambda i: dict(config(i.url()), contexts=[{"name": ["ctx"], "context": {}}])),
         "contexts[0].name must be a string"),
    Case("cluster-name-number", kc(lambda i: dict(config(i.url()), clusters=[{"name": 3, "cluster": {}}])),
         "clusters[0].name must be a string"),
    # A missing or null name is "" to kubectl: two of them are two users of the same name.
    Case("user-name-missing", kc(lambda i: dict(config(i.url()), users=[{"user": {"token": SECRET}},
                                                                       {"name": None, "user": {}}])),
         'duplicate name "" in users'),
    # client-go converts each extensions list into a map and refuses a name met twice (clientcmd/api/v1
    # conversion.go); the extensions themselves are never printed, they may hold a secret.
    Case("extension-name-twice", kc(lambda i: config(i.url(), context={"cluster": "c", "user": "u", "extensions": [
        {"name": "e", "extension": {"token": SECRET}}, {"name": "e", "extension": {}}]})),
         'duplicate name "e" in the extensions of context "ctx"'),
    Case("context-body-string", kc(lambda i: config(i.url(), context="c/u")), 'context "ctx" must be a mapping'),
    Case("cluster-body-list", kc(lambda i: config(i.url(), cluster=[i.url()])), 'cluster "c" must be a mapping'),
    Case("user-body-string", kc(lambda i: config(i.url(), user=SECRET)), 'user "u" must be a mapping'),
    Case("current-context-list", kc(lambda i: dict(config(i.url()), **{"current-context": ["ctx"]})),
         "current-context must be a string"),
    Case("current-context-number", kc(lambda i: dict(config(i.url()), **{"current-context": 1})),
         "current-context must be a string"),
    Case("current-context-mapping", kc(lambda i: dict(config(i.url()), **{"current-context": {"a": 1}})),
         "current-context must be a string"),
    Case("current-context-unknown", kc(lambda i: dict(config(i.url()), **{"current-context": "prod"})),
         'context "prod" does not exist'),
    Case("context-cluster-unknown", kc(lambda i: config(i.url(), context={"cluster": "nope", "user": "u"})),
         'cluster "nope"'),
    Case("context-cluster-list", kc(lambda i: config(i.url(), context={"cluster": ["c"], "user": "u"})),
         "cluster must be a string"),
    Case("context-namespace-list", kc(lambda i: config(i.url(), context={"cluster": "c", "user": "u",
                                                                         "namespace": ["a"]})),
         "namespace must be a string"),
    Case("context-namespace-dotdot", kc(lambda i: config(i.url(), context={"cluster": "c", "user": "u",
                                                                           "namespace": ".."})),
         "invalid namespace \"..\": [may not be '..'] (the namespace of context \"ctx\")"),
    Case("context-namespace-dot", kc(lambda i: config(i.url(), context={"cluster": "c", "user": "u",
                                                                        "namespace": "."})), "invalid namespace"),
    Case("context-namespace-slash", kc(lambda i: config(i.url(), context={"cluster": "c", "user": "u",
                                                                          "namespace": "a/b"})), "invalid namespace"),
    Case("flag-context-unknown", kc(lambda i: config(i.url()), "--context", "prod"), 'context "prod" does not exist'),
    Case("flag-cluster-unknown", kc(lambda i: config(i.url()), "--cluster", "prod"), 'cluster "prod"'),
    Case("flag-user-unknown", kc(lambda i: config(i.url()), "--user", "prod"), 'auth info "prod" does not exist'),
]

SERVERS_IN_KUBECONFIG = [
    cluster_case("server-missing", lambda i: {}, "has no server"),
    cluster_case("server-empty", lambda i: {"server": ""}, "has no server"),
    cluster_case("server-number", lambda i: {"server": 6443}, "server must be a string"),
    cluster_case("server-list", lambda i: {"server": [i.url()]}, "server must be a string"),
    cluster_case("server-bad-ipv6", lambda i: {"server": "https://[::1"}, "host must be a URL or a host:port pair"),
    cluster_case("server-bad-port", lambda i: {"server": "http://127.0.0.1:abc"}, "host must be a URL"),
    cluster_case("server-port-too-big", lambda i: {"server": "http://127.0.0.1:99999"}, "host must be a URL"),
    cluster_case("server-ftp", lambda i: {"server": "ftp://127.0.0.1/"}, "ftp"),
    cluster_case("server-with-space", lambda i: {"server": "https://exa mple.com"}, "host must be a URL"),
    cluster_case("server-password-in-url", lambda i: {"server": f"https://admin:{SECRET}@127.0.0.1:1"},
                 "<redacted>@127.0.0.1:1"),
]

TLS_MATERIAL = [
    cluster_case("ca-data-bad-base64", lambda i: {"server": closed_tls(i), "certificate-authority-data": "!!!!"},
                 "certificate-authority-data is not valid base64"),
    cluster_case("ca-data-bad-padding", lambda i: {"server": closed_tls(i), "certificate-authority-data": "abcde"},
                 "not valid base64"),
    cluster_case("ca-data-not-pem", lambda i: {"server": closed_tls(i), "certificate-authority-data": b64(SECRET)},
                 "certificate authority"),
    cluster_case("ca-data-garbage-pem", lambda i: {"server": closed_tls(i),
                                                   "certificate-authority-data": b64(CERT_PEM)},
                 "certificate authority"),
    cluster_case("ca-data-binary", lambda i: {"server": closed_tls(i), "certificate-authority-data":
                                              base64.b64encode(bytes(range(256))).decode()}, "certificate authority"),
    cluster_case("ca-data-number", lambda i: {"server": closed_tls(i), "certificate-authority-data": 12},
                 'cluster "c": certificate-authority-data must be a base64 string, not a number'),
    cluster_case("ca-file-missing", lambda i: {"server": closed_tls(i), "certificate-authority": "absent.crt"},
                 "absent.crt"),
    cluster_case("ca-file-folder", lambda i: {"server": closed_tls(i), "certificate-authority": str(i.folder)},
                 "certificate-authority"),
    cluster_case("ca-path-with-nul", lambda i: {"server": closed_tls(i), "certificate-authority": "/tmp/a\x00b"},
                 "certificate-authority /tmp/a\\x00b"),
    cluster_case("insecure-and-ca-data", lambda i: {"server": closed_tls(i), "insecure-skip-tls-verify": True,
                                                    "certificate-authority-data": b64(CERT_PEM)},
                 "specifying a root certificates file with the insecure flag is not allowed"),
    cluster_case("insecure-and-ca-file", lambda i: {"server": closed_tls(i), "insecure-skip-tls-verify": True,
                                                    "certificate-authority": i.file("ca.crt", CERT_PEM)},
                 "specifying a root certificates file with the insecure flag is not allowed"),
    cluster_case("insecure-a-string", lambda i: {"server": closed_tls(i), "insecure-skip-tls-verify": "yes"},
                 "insecure-skip-tls-verify must be true or false"),
    cluster_case("tls-server-name-number", lambda i: {"server": closed_tls(i), "tls-server-name": 1},
                 "tls-server-name must be a string"),
    Case("insecure-flag-and-ca-flag", kc(lambda i: config(closed_tls(i)), "--insecure-skip-tls-verify",
                                         "--certificate-authority", "/dev/null"),
         "specifying a root certificates file with the insecure flag is not allowed"),
    Case("ca-flag-missing", kc(lambda i: config(closed_tls(i)), "--certificate-authority", "/nonexistent/ca.crt"),
         "--certificate-authority /nonexistent/ca.crt"),
    Case("client-key-flag-alone", kc(lambda i: config(closed_tls(i)), "--client-key", "/dev/null"), "without"),
    Case("client-cert-flag-missing", kc(lambda i: config(closed_tls(i)), "--client-certificate", "/nonexistent/c",
                                        "--client-key", "/nonexistent/k"), "--client-certificate /nonexistent/c"),
    Case("client-pair-flags-garbage", kc(lambda i: config(closed_tls(i)),
                                         "--client-certificate", "/dev/null", "--client-key", "/dev/null"),
         "cannot be loaded"),
]


def tls_user(id: str, user: Callable[[Inputs], dict], fragment: str) -> Case:
    return Case(id, kc(lambda i: config(closed_tls(i), user=user(i))), fragment)


CLIENT_CERTS = [
    tls_user("cert-data-bad-base64", lambda i: {"client-certificate-data": f"%%{SECRET}%%",
                                                "client-key-data": b64(KEY_PEM)}, "client-certificate-data"),
    tls_user("key-data-bad-base64", lambda i: {"client-certificate-data": b64(CERT_PEM),
                                               "client-key-data": f"{SECRET}="}, "client-key-data"),
    tls_user("cert-without-key", lambda i: {"client-certificate-data": b64(CERT_PEM)}, "without its key"),
    tls_user("key-without-cert", lambda i: {"client-key-data": b64(KEY_PEM)}, "without its certificate"),
    tls_user("cert-and-key-garbage", lambda i: {"client-certificate-data": b64(CERT_PEM),
                                                "client-key-data": b64(KEY_PEM)}, "cannot be loaded"),
    tls_user("cert-and-key-binary", lambda i: {"client-certificate-data": b64(SECRET * 3),
                                               "client-key-data": b64(SECRET * 2)}, "cannot be loaded"),
    tls_user("cert-file-missing", lambda i: {"client-certificate": "absent.crt", "client-key-data": b64(KEY_PEM)},
             "absent.crt"),
    tls_user("key-file-missing", lambda i: {"client-certificate-data": b64(CERT_PEM), "client-key": "absent.key"},
             "absent.key"),
    tls_user("key-file-garbage", lambda i: {"client-certificate": i.file("c.crt", CERT_PEM),
                                            "client-key": i.file("k.key", KEY_PEM)}, "cannot be loaded"),
    tls_user("cert-path-with-nul", lambda i: {"client-certificate": "/tmp/a\x00b", "client-key-data": b64(KEY_PEM)},
             "client-certificate /tmp/a\\x00b"),
    tls_user("key-data-number", lambda i: {"client-certificate-data": b64(CERT_PEM), "client-key-data": 5},
             'user "u": client-key-data must be a base64 string, not a number'),
]

TOKENS = [
    user_case("token-crlf-inside", lambda i: {"token": f"{SECRET}\r\nX-Injected: 1"}, "not allowed in an HTTP header"),
    user_case("token-lf-inside", lambda i: {"token": f"{SECRET}\nmore"}, "not allowed in an HTTP header"),
    user_case("token-nul-inside", lambda i: {"token": f"{SECRET}\x00x"}, "not allowed in an HTTP header"),
    user_case("token-space-inside", lambda i: {"token": f"{SECRET} {SECRET}"}, "not allowed in an HTTP header"),
    user_case("token-non-ascii", lambda i: {"token": f"{SECRET}é"}, "not allowed in an HTTP header"),
    user_case("token-only-whitespace", lambda i: {"token": "  \n\t"}, "empty"),
    user_case("token-number", lambda i: {"token": 12345}, "token must be a string"),
    user_case("token-list", lambda i: {"token": [SECRET]}, "token must be a string"),
    user_case("token-file-empty", lambda i: {"tokenFile": i.file("empty-token", "")}, "empty"),
    user_case("token-file-newlines-only", lambda i: {"tokenFile": i.file("nl-token", "\n\n")}, "empty"),
    user_case("token-file-missing", lambda i: {"tokenFile": "absent-token"}, "No such file"),
    user_case("token-file-folder", lambda i: {"tokenFile": str(i.folder)}, "token file"),
    user_case("token-file-binary", lambda i: {"tokenFile": i.file("bin-token", b"\xff\xfe" + SECRET.encode())},
              "not text"),
    user_case("token-file-two-lines", lambda i: {"tokenFile": i.file("2-token", f"{SECRET}\n{SECRET}\n")},
              "not allowed in an HTTP header"),
    user_case("token-file-number", lambda i: {"tokenFile": 7}, "tokenFile must be a string"),
    user_case("token-file-path-with-nul", lambda i: {"tokenFile": "/tmp/a\x00b"}, "token file /tmp/a\\x00b"),
    user_case("password-number", lambda i: {"username": "admin", "password": 1234}, "password must be a string"),
    user_case("username-list", lambda i: {"username": ["admin"], "password": SECRET}, "username must be a string"),
    Case("flag-token-crlf", kc(lambda i: config(i.url()), "--token", f"{SECRET}\r\nX: y"),
         "not allowed in an HTTP header"),
]

AUTH_PROVIDERS = [
    user_case("auth-provider-gcp", lambda i: {"auth-provider": {"name": "gcp", "config": {"access-token": SECRET}}},
              "gke-gcloud-auth-plugin"),
    user_case("auth-provider-azure", lambda i: {"auth-provider": {"name": "azure", "config": {
        "access-token": SECRET, "client-secret": SECRET}}}, "kubelogin"),
    user_case("auth-provider-unknown", lambda i: {"auth-provider": {"name": "corp-sso", "config": {"x": SECRET}}},
              'no Auth Provider found for name "corp-sso"'),
    user_case("auth-provider-no-name", lambda i: {"auth-provider": {"config": {"id-token": SECRET}}},
              "no Auth Provider found"),
    user_case("auth-provider-string", lambda i: {"auth-provider": "gcp"}, "auth-provider must be a mapping"),
    user_case("oidc-without-issuer", lambda i: {"auth-provider": {"name": "oidc", "config": {
        "client-secret": SECRET, "refresh-token": SECRET}}}, "Must provide idp-issuer-url"),
    user_case("oidc-without-id-token", lambda i: {"auth-provider": {"name": "oidc", "config": {
        "idp-issuer-url": "https://127.0.0.1:1", "client-id": "c", "client-secret": SECRET, "refresh-token": SECRET}}},
              "identity provider https://127.0.0.1:1/.well-known/openid-configuration was refused"),
    user_case("oidc-empty-id-token", lambda i: {"auth-provider": {"name": "oidc", "config": {
        "idp-issuer-url": "https://127.0.0.1:1", "client-id": "c", "id-token": ""}}}, "has no id-token"),
    user_case("oidc-id-token-list", lambda i: {"auth-provider": {"name": "oidc", "config": {"id-token": [SECRET]}}},
              'user "u": auth-provider.config.id-token must be a string, not a list'),
    user_case("oidc-config-string", lambda i: {"auth-provider": {"name": "oidc", "config": SECRET}},
              'user "u": auth-provider.config must be a mapping, not a string'),
    # Each was an internal error (TypeError) before: the shape is checked where the kubeconfig is read.
    user_case("auth-provider-name-list", lambda i: {"auth-provider": {"name": ["x"], "config": {"id-token": SECRET}}},
              'user "u": auth-provider.name must be a string, not a list'),
    user_case("auth-provider-name-map", lambda i: {"auth-provider": {"name": {"a": 1}}},
              'user "u": auth-provider.name must be a string, not a mapping'),
    user_case("auth-provider-config-number", lambda i: {"auth-provider": {"name": "oidc", "config": {"id-token": 5}}},
              'user "u": auth-provider.config.id-token must be a string, not a number'),
    user_case("oidc-id-token-deep", lambda i: {"auth-provider": {"name": "oidc", "config": {
        "idp-issuer-url": "https://127.0.0.1:1", "client-id": "c", "id-token": unsigned_jwt({"x": nested(600)})}}},
              "its payload is nested deeper than 200 levels"),
    user_case("oidc-id-token-crlf", lambda i: {"auth-provider": {"name": "oidc", "config": {
        "idp-issuer-url": "https://127.0.0.1:1", "client-id": "c",
        "id-token": unsigned_jwt({"exp": 4_102_444_800}) + f"{SECRET}\r\nX: y"}}}, "not allowed in an HTTP header"),
]

EXEC_PLUGINS = [
    user_case("exec-no-command", lambda i: {"exec": {"apiVersion": "client.authentication.k8s.io/v1"}},
              "names no command"),
    user_case("exec-command-list", lambda i: exec_user(["get-token"]),
              'user "u": exec.command must be a string, not a list'),  # type: ignore[arg-type]
    user_case("exec-command-missing", lambda i: exec_user("/nonexistent/corp-get-token"),
              "executable /nonexistent/corp-get-token not found"),
    user_case("exec-command-missing-on-path", lambda i: exec_user("corp-get-token-xyz", installHint="run brew x"),
              "corp-get-token-xyz not found (run brew x)"),
    user_case("exec-relative-missing", lambda i: exec_user("./absent-plugin.sh"), "absent-plugin.sh not found"),
    user_case("exec-not-executable", lambda i: exec_user(i.file("noexec.sh", "#!/bin/sh\necho hi\n", 0o644)),
              "noexec.sh"),
    user_case("exec-exits-3", lambda i: exec_user(i.script("fail.sh", "echo 'token expired: run corp-login' >&2; "
                                                                     "exit 3")),
              "fail.sh failed with exit code 3: token expired: run corp-login"),
    user_case("exec-exits-1-silent", lambda i: exec_user(i.script("fail-quiet.sh", "exit 1")),
              "fail-quiet.sh failed with exit code 1"),
    user_case("exec-bad-json", lambda i: exec_user(i.script("bad-json.sh", "echo 'not json'")),
              "not a JSON ExecCredential"),
    user_case("exec-empty-output", lambda i: exec_user(i.script("empty.sh", "true")), "not a JSON ExecCredential"),
    user_case("exec-json-list", lambda i: exec_user(i.script("list.sh", "echo '[1]'")), "did not print an ExecCredential"),
    user_case("exec-config-api-version", lambda i: exec_user(i.script("ok1.sh", credential({"token": SECRET})),
                                                             api_version="client.authentication.k8s.io/v1alpha1"),
              'invalid apiVersion "client.authentication.k8s.io/v1alpha1"'),
    user_case("exec-config-no-api-version", lambda i: {"exec": {"command": i.script("ok2.sh",
                                                                                    credential({"token": SECRET}))}},
              "invalid apiVersion"),
    user_case("exec-output-api-version", lambda i: exec_user(i.script("beta.sh", credential(
        {"token": SECRET}, "client.authentication.k8s.io/v1beta1"))),
              "plugin returned version client.authentication.k8s.io/v1beta1"),
    user_case("exec-output-no-token", lambda i: exec_user(i.script("notoken.sh", credential({}))),
              "neither a token nor a client certificate"),
    user_case("exec-output-no-status", lambda i: exec_user(i.script("nostatus.sh", "echo '{\"apiVersion\": "
                                                                    "\"client.authentication.k8s.io/v1\", "
                                                                    "\"kind\": \"ExecCredential\"}'")),
              "returned no status"),
    user_case("exec-output-deep", lambda i: exec_user(i.script("deep.sh", "printf '%s'  '" + json.dumps(
        {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "x": nested(600)}) + "'")),
              "nested deeper than 200 levels"),
    user_case("exec-output-token-crlf", lambda i: exec_user(i.script("crlf.sh", credential(
        {"token": f"{SECRET}\r\nX: y"}))), "not allowed in an HTTP header"),
    user_case("exec-output-cert-no-key", lambda i: exec_user(i.script("certonly.sh", credential(
        {"clientCertificateData": CERT_PEM}))), "neither a token nor a client certificate and key"),
    # A token of the wrong type sent the request as system:anonymous before: a broken plugin is an error.
    user_case("exec-output-token-number", lambda i: exec_user(i.script("tokennum.sh", credential({"token": 12345}))),
              "status.token must be a string, not a number"),
    user_case("exec-output-cert-list", lambda i: exec_user(i.script("certlist.sh", credential(
        {"clientCertificateData": [CERT_PEM], "clientKeyData": KEY_PEM}))),
              "status.clientCertificateData must be a string, not a list"),
    user_case("exec-output-bad-expiry", lambda i: exec_user(i.script("expiry.sh", credential(
        {"token": SECRET, "expirationTimestamp": "tomorrow"}))), "unreadable expirationTimestamp"),
    tls_user("exec-output-garbage-pair", lambda i: exec_user(i.script("pair.sh", credential(
        {"clientCertificateData": CERT_PEM, "clientKeyData": KEY_PEM}))), "cannot be loaded"),
    user_case("exec-interactive-always", lambda i: {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": i.script("ok3.sh", credential({"token": SECRET})),
        "interactiveMode": "Always"}}, "needs an interactive terminal"),
    user_case("exec-interactive-bogus", lambda i: exec_user(i.script("ok4.sh", credential({"token": SECRET})),
                                                            interactiveMode="Sometimes"),
              "interactiveMode must be Never, IfAvailable or Always"),
    user_case("exec-args-string", lambda i: exec_user(i.script("ok5.sh", credential({"token": SECRET})), args="x"),
              'user "u": exec.args must be a list, not a string'),
    user_case("exec-string", lambda i: {"exec": "get-token"}, "exec must be a mapping"),
    user_case("exec-v1-without-interactive-mode", lambda i: {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": i.script("ok6.sh", credential({"token": SECRET}))}},
              "interactiveMode must be specified"),
    user_case("exec-env-name-with-equals", lambda i: exec_user(i.script("ok7.sh", credential({"token": SECRET})),
                                                               env=[{"name": "A=B", "value": SECRET}]), "env entries"),
    user_case("exec-env-value-with-nul", lambda i: exec_user(i.script("ok8.sh", credential({"token": SECRET})),
                                                             env=[{"name": "A", "value": f"{SECRET}\x00"}]),
              "env entries"),
    user_case("exec-env-string", lambda i: exec_user(i.script("ok9.sh", credential({"token": SECRET})), env=SECRET),
              "env must be a list"),
    user_case("exec-arg-with-nul", lambda i: exec_user(i.script("ok10.sh", credential({"token": SECRET})),
                                                       args=[f"--secret={SECRET}\x00"]), "args must be a list"),
    user_case("exec-command-is-a-folder", lambda i: exec_user(str(i.folder)), "could not be run"),
    user_case("exec-command-with-nul", lambda i: exec_user("./get\x00token"), "not found"),
]


def in_cluster(token: Union[str, bytes], port: str = "443", ca: Optional[str] = None) -> Build:
    def build(i: Inputs) -> tuple[list[str], dict[str, Optional[str]]]:
        account = i.folder / f"sa-{abs(hash((token, port, ca)))}"
        account.mkdir(exist_ok=True)
        (account / "token").write_bytes(token.encode() if isinstance(token, str) else token)
        if ca is not None:
            (account / "ca.crt").write_text(ca)
        return [], {"KUBECONFIG": str(i.folder / "absent"), "HOME": str(i.folder),
                    "PVLEFT_SERVICEACCOUNT_DIR": str(account), "KUBERNETES_SERVICE_HOST": "127.0.0.1",
                    "KUBERNETES_SERVICE_PORT": port}
    return build


# The cases whose exec plugin really starts (a child process, even when exec fails): integration tests. The
# test checks the other way round: a case not named here ran no script.
PLUGIN_RUNS = {"exec-not-executable", "exec-exits-3", "exec-exits-1-silent", "exec-bad-json", "exec-empty-output",
               "exec-json-list", "exec-output-api-version", "exec-output-no-token", "exec-output-no-status",
               "exec-output-token-crlf", "exec-output-cert-no-key", "exec-output-bad-expiry",
               "exec-output-garbage-pair", "exec-command-is-a-folder", "exec-output-token-number",
               "exec-output-cert-list", "exec-output-deep"}
EXEC_PLUGINS = [replace(case, runs_plugin=case.id in PLUGIN_RUNS) for case in EXEC_PLUGINS]


IN_CLUSTER = [
    Case("in-cluster-empty-token", in_cluster(""), "empty"),
    Case("in-cluster-token-two-lines", in_cluster(f"{SECRET}\n{SECRET}\n"), "not allowed in an HTTP header"),
    Case("in-cluster-bad-port", in_cluster(SECRET, port="abc"), "host must be a URL"),
    Case("in-cluster-ca-garbage", in_cluster(SECRET, ca=CERT_PEM), "certificate authority"),
    Case("in-cluster-ca-not-pem", in_cluster(SECRET, ca="hello"), "certificate authority"),
]

FLAGS = [
    Case("namespace-dotdot", flags("-n", ".."), "invalid namespace \"..\": [may not be '..']", code=2),
    Case("namespace-dot", flags("-n", "."), "invalid namespace \".\": [may not be '.']", code=2),
    Case("namespace-slash", flags("-n", "a/b"), "may not contain '/'", code=2),
    Case("namespace-percent", flags("-n", "a%2fb"), "may not contain '%'", code=2),
    Case("namespace-undecodable", flags("-n", "\udcff\udcfe"), "invalid namespace", code=2),
    Case("namespace-64-chars", flags("-n", "a" * 64), "at most 63 characters", code=2),
    Case("namespace-upper", flags("-n", "Team-A"), "invalid namespace", code=2),
    Case("namespace-leading-dash", flags("--namespace=-a"), "invalid namespace", code=2),
    Case("namespace-newline", flags("-n", "a\nb"), "invalid namespace", code=2),
    Case("namespace-and-all", flags("-n", "x", "-A"), "cannot be used together", code=2),
    Case("as-crlf", flags("--as", "bob\r\nX-Injected: 1"), "--as may not contain line breaks", code=2),
    Case("as-nul", flags("--as", "bob\x00"), "--as may not contain", code=2),
    Case("as-group-lf", flags("--as", "bob", "--as-group", "devs\nX: y"), "--as-group may not contain", code=2),
    Case("as-group-cr", flags("--as", "bob", "--as-group=devs\r"), "--as-group may not contain", code=2),
    Case("as-uid-lf", flags("--as", "bob", "--as-uid", "1\n2"), "--as-uid may not contain", code=2),
    Case("as-uid-nul", flags("--as", "bob", "--as-uid", "\x00"), "--as-uid may not contain", code=2),
    Case("as-not-latin1", flags("--as", "名前"), "--as contains characters", code=2),
    Case("timeout-huge", flags("--request-timeout", "9999999999999999999999h"), "Invalid timeout value", code=2),
    Case("timeout-huge-seconds", flags("--request-timeout", "9" * 400), "Invalid timeout value", code=2),
    Case("timeout-negative", flags("--request-timeout", "-1s"), "--request-timeout", code=2),
    Case("timeout-negative-seconds", flags("--request-timeout=-5"), "Invalid timeout value", code=2),
    Case("timeout-word", flags("--request-timeout", "soon"), "Invalid timeout value. Timeout must be a single "
         "integer in seconds, or an integer followed by a corresponding time unit (e.g. 1s | 2m | 3h): 'soon'", code=2),
    Case("timeout-nan", flags("--request-timeout", "nan"), "Invalid timeout value", code=2),
    Case("timeout-exponent", flags("--request-timeout", "1e3s"), "Invalid timeout value", code=2),
    Case("timeout-two-dots", flags("--request-timeout", "1.5.5s"), "Invalid timeout value", code=2),
    # kubectl's words and exit code (cli-runtime's NoCompatiblePrinterError): a runtime error, 1.
    Case("output-xml", flags("-o", "xml"), 'unable to match a printer suitable for the output format "xml"', code=1),
    Case("output-jsonpath-empty", flags("-o", "jsonpath="), "format specified but no template given", code=1),
    Case("output-custom-columns-empty", flags("-o", "custom-columns="), "format specified but no", code=1),
    # 1,000 columns were a RecursionError (the tabwriter recurses per column) once rows came.
    Case("output-custom-columns-1000", flags("-o", "custom-columns=" + ",".join(f"C{n}:.metadata.name"
                                                                              for n in range(1000))),
         "at most 256 columns (1000 given)", code=1),  # kubectl exits 1 on a bad template
    Case("output-custom-columns-file-1000", lambda i: (["--kubeconfig", i.kubeconfig(config(i.url())), "-o",
                                                        "custom-columns-file=" + i.file("cols.txt", " ".join(
                                                            f"C{n}" for n in range(1000)) + "\n" + " ".join(
                                                            ".metadata.name" for n in range(1000)) + "\n")], {}),
         "at most 256 columns (1000 given)", code=1),  # kubectl exits 1 on a bad template
    Case("output-go-template", flags("-o", "go-template=x"), "-o go-template is not supported", code=2),
    # The clouds' own name syntax, checked before any call (an internal ValueError from the SDK before).
    Case("gce-project-path", flags("--project", "a b/../c"), "--project 'a b/../c' is not a Compute Engine project",
         code=2, subcommands=("leftovers",)),
    Case("gce-zone-bad", flags("--project", "shop-prod", "--zone", "us-central1-a/../x"),
         "is not a Compute Engine zone name", code=2, subcommands=("leftovers",)),
    Case("gce-region-upper", flags("--project", "shop-prod", "--region", "US-CENTRAL1"),
         "is not a Compute Engine region name", code=2, subcommands=("leftovers",)),
    Case("aws-region-space", flags("--aws-region", "us east 1"), "--aws-region 'us east 1' is not an AWS region name",
         code=2, subcommands=("leftovers",)),
    Case("azure-subscription-name", flags("--azure-subscription", "prod"),
         "--azure-subscription 'prod' is not an Azure subscription ID (a UUID)", code=2, subcommands=("leftovers",)),
    Case("azure-group-path", flags("--azure-subscription", "0b1d7c5e-2f4a-4c8e-9d3b-6a7f8e9d0c1b",
                                   "--azure-resource-group", "rg/../x"),
         "--azure-resource-group 'rg/../x' is not an Azure resource group name", code=2, subcommands=("leftovers",)),
    Case("output-template-file", flags("-o", "templatefile=x"), "not supported", code=2),
    Case("output-undecodable", flags("-o", "\udcff"), "unable to match a printer", code=1),
    Case("all-namespaces-maybe", flags("-A=maybe"), 'invalid argument "maybe" for "-A', code=2),
    Case("watch-two", flags("--watch=2"), 'invalid argument "2" for "', code=2),
    Case("no-headers-yes", flags("--no-headers=yes"), 'for "--no-headers" flag', code=2),
    Case("verbosity-word", flags("-v", "loud"), 'invalid argument "loud" for "-v, --v" flag: strconv.ParseInt',
         code=2),  # pflag's words
    Case("unknown-flag-token-like", flags(f"--tokn={SECRET}"), "unknown flag: --tokn", code=2),
    Case("unknown-flag-client-secret", flags("--client-secret", SECRET), "unknown flag: --client-secret", code=2),
    Case("unknown-flag-password-file", flags(f"--password-file={SECRET}"), "unknown flag: --password-file", code=2),
    Case("unknown-flag-plain", flags("--bogus", SECRET), "unknown flag: --bogus", code=2),
    Case("unknown-short-flag", flags("-Z", SECRET), "unknown flag: -Z", code=2),
    Case("abbreviated-token-flag", flags(f"--tok={SECRET}"), "unknown flag: --tok", code=2),
    Case("ambiguous-abbreviation", flags(f"--cl={SECRET}"), "unknown flag: --cl", code=2),
    # A word after the subcommand is a NAME (as kubectl get pv NAME); by name across namespaces is kubectl's error.
    Case("name-across-namespaces", flags("-A", "some-claim"), "a resource cannot be retrieved by name across all "
                                                               "namespaces", code=2, subcommands=("pending", "claims")),
    Case("context-with-all-contexts", flags("--context", "x", "--all-contexts"),
         "--context cannot be used with --all-contexts or --contexts", code=2),
    Case("kubeconfig-flag-empty", lambda i: (["--kubeconfig=", f"--token={SECRET}"],
                                             {"KUBECONFIG": str(i.folder / "absent"), "HOME": str(i.folder),
                                              "KUBERNETES_SERVICE_HOST": None}), "no kubeconfig found"),
    Case("server-flag-bad", flags("-s", "https://[::1"), "host must be a URL or a host:port pair"),
]


def server_case(fault: str, fragment: str = "", *args: str, **kw: Any) -> Case:
    kw.setdefault("verbosities", (0, 6, 8, 9))
    return Case(f"server-{fault}", kc(lambda i: config(i.url(fault)), *args), fragment, fault=fault, **kw)


SERVER_ANSWERS = [
    server_case("list-array", "the server's answer is not what list expects"),
    server_case("items-string", "not what list expects"),
    server_case("items-null-entry", "not what list expects"),
    server_case("items-number-entry", "not what list expects"),
    server_case("metadata-string", "not what list expects"),
    server_case("not-json", "not what list expects"),
    server_case("same-continue", "continue token it had already given"),
    server_case("nested-too-deep", "nested too deeply"),
    server_case("empty-200", "not what list expects"),
    server_case("html-200", "not what list expects"),
    server_case("truncated", "closed the connection mid-answer"),
    server_case("html-502", "HTTP 502"),
    server_case("status-500-multiline", "line one line two line three"),
    server_case("text-500-multiline", "HTTP 500"),
    server_case("status-terminal-escapes", "boom"),
    server_case("body-terminal-escapes", "not what list expects"),
    server_case("huge-500", "HTTP 500"),
    server_case("unauthorized", "You must be logged in to the server (Unauthorized)"),
    server_case("not-found", "the server could not find the requested resource"),
    server_case("forbidden-kind-list", "error: nope; kubectl pvleft needs get/list/watch on "),
    server_case("not-found-empty", "HTTP 404"),
    server_case("too-many", "Too many requests"),
    server_case("redirect", "HTTP 302"),
    server_case("bad-gzip", "sent a broken HTTP answer: a broken gzip body"),
    # A server that closes every connection before answering: a GET is sent again 1 s later, 10 times (as client-go,
    # tests/test_retry_unit.py); a --request-timeout under that 1 s leaves no time to, so the line comes at once.
    server_case("close", "closed the connection mid-answer", "--request-timeout", "0.5s"),
    server_case("garbage", "sent a broken HTTP answer: not an HTTP/1.1 answer"),
    server_case("negative-chunk", "sent a broken HTTP answer: a malformed chunk size"),
    server_case("length-superscript", "sent a broken HTTP answer: a malformed Content-Length"),
    server_case("length-twice", "sent a broken HTTP answer: a malformed Content-Length"),
    server_case("endless-headers", "more than any API server sends"),
    # Only --request-timeout ends a silent server's wait: 0.1s (seconds, with a fraction) on one subcommand,
    # 50ms on the others. The wait is the whole cost of these runs: the timeouts are kept short.
    server_case("silent", "did not answer in time (--request-timeout)", "--request-timeout", "0.1s",
                subcommands=("leftovers",), verbosities=(0,)),
    Case("server-silent-short", kc(lambda i: config(i.url("silent")), "--request-timeout", "50ms"),
         "did not answer in time (--request-timeout)", fault="silent", subcommands=("pending", "classes", "claims")),
    # The first list of a watch fails like any command: one line, exit 1, no retry.
    *[Case(f"watch-{fault}", kc(lambda i, f=fault: config(i.url(f)), "--watch",
                                *(("--request-timeout", "0.5s") if fault == "close" else ())), said, fault=fault)
      for fault, said in (("list-array", "the server's answer is not what list expects"),
                          ("items-null-entry", "not what list expects"),
                          ("status-500-multiline", "line one line two line three"),
                          ("unauthorized", "You must be logged in to the server (Unauthorized)"),
                          ("not-found", "the server could not find the requested resource"),
                          ("close", "closed the connection mid-answer"),
                          ("too-many", "Too many requests"))],
]



def rotated(cases: list[Case], width: int = 1) -> list[Case]:
    """Each case on ``width`` subcommands, in turn, so every subcommand sees its share of every kind of case."""
    return [replace(case, subcommands=tuple(SUBCOMMANDS[(index + k) % len(SUBCOMMANDS)] for k in range(width)))
            if case.subcommands == SUBCOMMANDS else case for index, case in enumerate(cases)]


# Where it makes sense: flags and kubeconfig structure are refused before any subcommand code runs (one
# subcommand each, in turn); TLS material when the first connection is set up, the same code for all (one);
# credentials at the first request, which each subcommand makes to a different kind (two each); a server's
# answers meet each subcommand's own first list (all four).
CASES = (rotated(KUBECONFIG_FILES + STRUCTURE + SERVERS_IN_KUBECONFIG + FLAGS) + rotated(TLS_MATERIAL + CLIENT_CERTS)
         + rotated(TOKENS + AUTH_PROVIDERS + EXEC_PLUGINS + IN_CLUSTER, width=2) + SERVER_ANSWERS)


def runs() -> Iterator[Any]:
    for number, case in enumerate(CASES):
        for subcommand in case.subcommands:
            # -v logs in the transport, the same for every subcommand: -v 6, 8 and 9 each on one, in turn.
            levels = [v for v in case.verbosities
                      if v == 0 or case.subcommands[(number + (6, 8, 9).index(v)) % len(case.subcommands)] == subcommand]
            for level in levels:
                yield pytest.param(case, subcommand, level, id=f"{case.id}-{subcommand}-v{level}",
                                   marks=[pytest.mark.integration] if case.runs_plugin else [])


def test_the_corpus_is_big_enough() -> None:
    assert len({c.id for c in CASES}) == len(CASES) >= 150
    assert [c.id for c in CASES if not c.fragment] == []  # what each error says is checked, every time
    assert {c.id for c in EXEC_PLUGINS} >= PLUGIN_RUNS


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bad-input")


def run_case(case: Case, subcommand: str, level: int, server: ScriptedServer, folder: Path) -> tuple[Result, bool]:
    """The run's result, and whether an exec plugin's script ran."""
    inputs = Inputs(server, folder, f"{case.id}-{subcommand}-{level}")
    args, env = case.build(inputs)
    env = {"KUBECONFIG": None, "PVLEFT_WATCH_BACKOFF_INITIAL_SECONDS": "0.05", "PVLEFT_WATCH_SETTLE_SECONDS": "0.01",
           **env}
    verbosity = ["-v", str(level)] if level else []
    return invoke(subcommand, *args, *verbosity, env=env), inputs.ran_mark.exists()


@pytest.mark.parametrize("case, subcommand, level", list(runs()))
def test_bad_input_is_one_error_line(case: Case, subcommand: str, level: int, server: ScriptedServer,
                                     folder: Path) -> None:
    before = len(server.seen(NOWHERE)), len(server.seen(case.fault)) if case.fault else 0
    result, plugin_ran = run_case(case, subcommand, level, server, folder)
    shown = f"exit {result.code}\nstdout: {result.stdout!r}\nstderr: {result.stderr!r}"
    assert case.runs_plugin or not plugin_ran, f"{case.id} ran its exec plugin: add it to PLUGIN_RUNS"
    assert result.code == case.code, shown
    assert result.stdout == "", shown
    lines = result.stderr.splitlines()
    if "\nDid you mean this?\n" in result.stderr:  # cobra's suggestions, after the one error line as kubectl's
        lines, suggested = lines[:lines.index("Did you mean this?") - 1], lines[lines.index("Did you mean this?"):]
        assert all(re.fullmatch(r"\t--[a-z-]+", line) for line in suggested[1:]), shown
    assert [line for line in lines if line.startswith("error: ")] == lines[-1:], shown
    if level == 0:
        assert len(lines) == 1, shown
    # Above the error line, only -v's klog lines (a logged body is one escaped line), and no control character
    # reaches the terminal: a server's escape sequences cannot rewrite it.
    assert all(re.match(r"I\d{4} \d\d:\d\d:\d\d\.\d+ ", line) for line in lines[:-1]), shown
    assert all(c in "\n\t" or c.isprintable() for c in result.stderr), shown
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, shown
    assert case.fragment in lines[-1], shown
    for form in SECRET_FORMS + case.extra_secrets:
        assert form not in result.stdout + result.stderr, f"{form!r} printed\n{shown}"
    if level >= 9:
        assert "Authorization: Bearer <masked>" in result.stderr, shown
    # Nothing reached the server unless the case is about its answer (so no request went out anonymously).
    assert len(server.seen(NOWHERE)) == before[0], shown
    if case.fault:
        assert len(server.seen(case.fault)) > before[1], shown
