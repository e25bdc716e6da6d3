"""A corpus of kubeconfigs (tests/fixtures/kubeconfigs/<case>/: its files, case.json with the KUBECONFIG order and
the flags), loaded by our loader and compared case by case with kubectl 1.33 and with the `kubernetes` package.

kubectl is the oracle: `kubectl config view --minify --raw -o json` says which context, cluster and user it takes
(first file wins for a name and for current-context, relative paths against the file that named them), and
`kubectl get --raw /version` against a closed port says whether client-go's validation refuses the merged config
before any request. Its answers are recorded beside each case (kubectl.json, paths as $CASE), so the unit tests run
without kubectl; the integration test asks kubectl again and fails when an answer changed (PVLEFT_RECORD=1 writes).

The `kubernetes` package's loader is a second reader, not an oracle: where it differs from kubectl (the last file
wins current-context, a token file's newline is kept, impersonation and disable-compression are dropped, conflicts
pass silently, PyYAML's scalar types), case.json lists the difference and the test asserts it IS a difference.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Optional

import pytest
import yaml

from kubectl_pvleft.errors import ConfigError
from kubectl_pvleft.kube.kubeconfig import Connection, Selection, load_connection

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
CORPUS = Path(__file__).parent / "fixtures" / "kubeconfigs"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "case.json").is_file())
FIELDS = ("context", "server", "namespace", "insecure", "ca", "tls-server-name", "proxy-url", "disable-compression",
          "token", "impersonation")


def copied(name: str, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path / name
    shutil.copytree(CORPUS / name, folder)
    return folder, json.loads((folder / "case.json").read_text())


def kubeconfig_env(folder: Path, case: dict[str, Any]) -> str:
    return os.pathsep.join(str(folder / name) for name in case["KUBECONFIG"])


def flag(case: dict[str, Any], name: str) -> Optional[str]:
    flags = case["flags"]
    return flags[flags.index(name) + 1] if name in flags else None


def file_token(name: Optional[str]) -> Optional[str]:
    return Path(name).read_text().strip() if name else None  # client-go trims the file's token


# -- kubectl's answers -------------------------------------------------------------------------------------

def ask_kubectl(folder: Path, case: dict[str, Any]) -> dict[str, Any]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(folder), "KUBECONFIG": kubeconfig_env(folder, case)}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([KUBECTL, *args, *case["flags"]], capture_output=True, text=True, timeout=60,
                              env=env, cwd=folder, check=False)

    view = run("config", "view", "--minify", "--flatten", "-o", "json")  # the CA read from the right file
    get = run("get", "--raw", "/version", "--request-timeout", "2s")
    answer = {"view": json.loads(view.stdout) if view.returncode == 0 else {"refused": view.stderr.strip()},
              "get": (get.stderr.strip().splitlines() or [""])[-1]}
    return json.loads(json.dumps(answer).replace(str(folder), "$CASE"))


def recorded(name: str) -> dict[str, Any]:
    return json.loads((CORPUS / name / "kubectl.json").read_text())


def defining_folder(folder: Path, case: dict[str, Any], user: str) -> Path:
    """The folder of the first file that defines this user: a relative tokenFile is relative to it."""
    for name in case["KUBECONFIG"]:
        path = folder / name
        if path.is_file() and any(u.get("name") == user for u in yaml.safe_load(path.read_text()).get("users") or ()):
            return path.parent
    return folder


def kubectl_fields(view: dict[str, Any], folder: Path, case: dict[str, Any]) -> dict[str, Any]:
    """What client-go makes of kubectl's minified view, in the terms of our Connection."""
    view = json.loads(json.dumps(view).replace("$CASE", str(folder)))
    if view.get("users") and view["users"][0]["user"].get("tokenFile"):
        token_file = defining_folder(folder, case, view["users"][0]["name"]) / view["users"][0]["user"]["tokenFile"]
        view["users"][0]["user"]["tokenFile"] = str(token_file)
    cluster = view["clusters"][0]["cluster"]
    user = view["users"][0]["user"] if view.get("users") else {}
    context = view["contexts"][0]["context"]
    server = cluster.get("server", "")
    server = (server if "://" in server else "http://" + server).rstrip("/")  # a bare host:port is plain HTTP
    tls = server.startswith("https://")  # client-go merges TLS settings and credentials into a TLS config only
    ca = (base64.b64decode(cluster["certificate-authority-data"]) if cluster.get("certificate-authority-data")
          else Path(cluster["certificate-authority"]).read_bytes() if cluster.get("certificate-authority") else None)
    return {
        "context": view["current-context"], "server": server, "namespace": context.get("namespace") or "default",
        "insecure": tls and bool(cluster.get("insecure-skip-tls-verify")), "ca": ca if tls else None,
        "tls-server-name": cluster.get("tls-server-name") if tls else None, "proxy-url": cluster.get("proxy-url"),
        "disable-compression": bool(cluster.get("disable-compression")),
        "token": (file_token(user.get("tokenFile")) or user.get("token")) if tls else None,
        "impersonation": (user.get("as"), user.get("as-uid"), tuple(user.get("as-groups") or ()),
                          tuple((k, tuple(v)) for k, v in (user.get("as-user-extra") or {}).items())),
    }


# -- ours --------------------------------------------------------------------------------------------------

def load_ours(folder: Path, case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Connection:
    monkeypatch.setenv("KUBECONFIG", kubeconfig_env(folder, case))
    return load_connection(Selection(context=flag(case, "--context"), cluster=flag(case, "--cluster"),
                                     user=flag(case, "--user"), namespace=flag(case, "--namespace")))


def our_fields(conn: Connection) -> dict[str, Any]:
    return {
        "context": conn.context, "server": conn.server, "namespace": conn.namespace, "insecure": conn.tls.insecure,
        "ca": conn.tls.ca_data, "tls-server-name": conn.tls.server_name, "proxy-url": conn.proxy_url,
        "disable-compression": conn.disable_compression,
        "token": file_token(conn.auth.token_file) or conn.auth.token,  # the file wins, read at each request
        "impersonation": (conn.impersonate_user, conn.impersonate_uid, conn.impersonate_groups, conn.impersonate_extra),
    }


def refused_by_validation(get: str) -> bool:
    """kubectl get stopped before any request, on the merged config (not on loading a file, nor on the way to the
    server: the TLS material, the dial, the password prompt that reads EOF)."""
    after = ("error loading config file", "EOF", "x509", "Unable to connect", "connection to the server")
    return get.startswith("error: ") and not any(words in get for words in after)


@pytest.mark.parametrize("name", CASES)
def test_the_corpus_is_read_as_kubectl_reads_it(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder, case = copied(name, tmp_path)
    answer = recorded(name)
    try:
        conn: Optional[Connection] = load_ours(folder, case, monkeypatch)
        refusal = ""
    except ConfigError as exc:
        conn, refusal = None, str(exc)
    if refused_by_validation(answer["get"]):  # client-go's validation: the same words, before any request
        assert answer["get"].removeprefix("error: ") in refusal, (answer["get"], refusal)
    elif "refused" in answer["view"] and "cannot locate user" in answer["view"]["refused"]:
        # Only `config view --minify` needs the user: kubectl get carries on without credentials, and so do we.
        assert conn is not None and conn.auth.token is None and conn.notes, refusal
    elif "refused" in answer["view"]:
        assert refusal and "\n" not in refusal, answer
        assert str(folder) in refusal  # the file is named
    else:
        assert conn is not None, refusal
        assert our_fields(conn) == kubectl_fields(answer["view"], folder, case)


# -- the kubernetes package beside us -------------------------------------------------------------------------

def kubernetes_fields(folder: Path, case: dict[str, Any]) -> dict[str, Any]:
    from kubernetes import client, config

    files = kubeconfig_env(folder, case)
    configuration = client.Configuration()
    config.load_kube_config(config_file=files, context=flag(case, "--context"), client_configuration=configuration,
                            persist_config=False)
    contexts, active = config.list_kube_config_contexts(config_file=files)
    if flag(case, "--context"):
        active = next(c for c in contexts if c["name"] == flag(case, "--context"))
    bearer = configuration.api_key.get("BearerToken") or configuration.api_key.get("authorization")
    ca = Path(configuration.ssl_ca_cert).read_bytes() if configuration.ssl_ca_cert else None
    return {
        "context": active["name"], "server": configuration.host, "namespace": active["context"].get("namespace") or "default",
        "insecure": not configuration.verify_ssl, "ca": ca, "tls-server-name": configuration.tls_server_name,
        "proxy-url": configuration.proxy, "disable-compression": False,  # it has no such setting
        "token": bearer.removeprefix("Bearer ") if bearer else None, "impersonation": (None, None, (), ()),
    }


@pytest.mark.parametrize("name", CASES)
def test_the_kubernetes_package_reads_the_corpus_as_we_do_except_the_known_differences(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("kubernetes")
    folder, case = copied(name, tmp_path)
    differs = case["kubernetes_differs"]
    if "varies" in differs:  # the other reader's answer is its PyYAML's, which differs by version: nothing to hold
        pytest.skip(differs["varies"])
    try:
        mine: Optional[dict[str, Any]] = our_fields(load_ours(folder, case, monkeypatch))
    except ConfigError:
        mine = None
    monkeypatch.delenv("KUBECONFIG")
    try:
        theirs: Optional[dict[str, Any]] = kubernetes_fields(folder, case)
    except Exception:  # whatever the other loader raises is its refusal
        theirs = None
    assert ((mine is None) != (theirs is None)) == ("refused" in differs), (mine, theirs)
    if mine is None or theirs is None:
        return
    for field in FIELDS:
        if field in differs:
            assert mine[field] != theirs[field], (field, differs[field], mine[field])
        else:
            assert mine[field] == theirs[field], (field, mine[field], theirs[field])


@pytest.mark.integration  # kubectl, child processes
@pytest.mark.skipif(not os.path.exists(KUBECTL), reason="no kubectl 1.33 here: the recorded answers stand")
@pytest.mark.parametrize("name", CASES)
def test_kubectl_still_answers_as_recorded(name: str, tmp_path: Path) -> None:
    folder, case = copied(name, tmp_path)
    answer = ask_kubectl(folder, case)
    if os.environ.get("PVLEFT_RECORD") == "1":
        (CORPUS / name / "kubectl.json").write_text(json.dumps(answer, indent=1, sort_keys=True) + "\n")
    assert answer == recorded(name)
