"""Credentials, TLS and failures against the real control plane, the way kubectl handles them (issue #9).

Tokens come from `kubectl create token` for ServiceAccounts bound to the plugin's own ClusterRole; the
admin kubeconfig of the test plane authenticates with client-certificate-data/client-key-data. Most runs are
in-process (cli_runner); runs that need a real process (signals, /proc, Python's warnings at the top level,
kubectl's plugin dispatch) are subprocesses of the installed console script.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from cli_runner import invoke
from plugin_runner import PLUGIN, run_plugin

SUBCOMMANDS = ("leftovers", "pending", "classes", "claims")
NAMESPACE = "pvleft-cred"


@pytest.fixture(scope="module")
def accounts(cluster) -> Iterator[dict[str, str]]:
    """ServiceAccount tokens from `kubectl create token`: a reader (the plugin's ClusterRole) and a nobody."""
    cluster.kubectl("create", "namespace", NAMESPACE)
    cluster.kubectl("create", "serviceaccount", "reader", "-n", NAMESPACE)
    cluster.kubectl("create", "serviceaccount", "nobody", "-n", NAMESPACE)
    cluster.kubectl("create", "clusterrolebinding", "pvleft-cred-reader", "--clusterrole=pvleft-reader",
                    f"--serviceaccount={NAMESPACE}:reader")
    try:
        yield {name: cluster.kubectl("create", "token", name, "-n", NAMESPACE).stdout.strip()
               for name in ("reader", "nobody")}
    finally:
        cluster.kubectl("delete", "clusterrolebinding", "pvleft-cred-reader", check=False)
        cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)


def ca_data(cluster) -> str:
    return base64.b64encode((cluster.pki / "ca.crt").read_bytes()).decode()


def kubeconfig(path: Path, cluster, user: dict, cluster_fields: dict | None = None) -> Path:
    fields = {"certificate-authority-data": ca_data(cluster)} if cluster_fields is None else cluster_fields
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": cluster.server, **fields}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": NAMESPACE}}],
    }))
    return path


def one_error_line(result) -> str:
    assert result.returncode == 1 and result.stdout == "", result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr, result
    return lines[0]


# -- tokens ---------------------------------------------------------------------------------------

def test_a_token_ending_in_a_newline_works_inline_from_a_file_and_in_cluster(cluster, accounts,
                                                                             tmp_path: Path) -> None:
    token = accounts["reader"] + "\n"  # as `echo "$TOKEN" > f` (or a YAML block scalar) leaves it
    (tmp_path / "token").write_text(token)
    inline = kubeconfig(tmp_path / "inline.kc", cluster, {"token": token})
    crlf = kubeconfig(tmp_path / "crlf.kc", cluster, {"token": token.strip() + "\r\n"})
    from_file = kubeconfig(tmp_path / "file.kc", cluster, {"tokenFile": "token"})
    for config in (inline, crlf, from_file):
        result = invoke("leftovers", "--kubeconfig", str(config))
        assert result.code == 0 and token.strip() not in result.stdout + result.stderr, result
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text(token)
    (account / "ca.crt").write_bytes((cluster.pki / "ca.crt").read_bytes())
    (account / "namespace").write_text(NAMESPACE)
    result = invoke("claims", env={"KUBECONFIG": "", "HOME": str(tmp_path), "PVLEFT_SERVICEACCOUNT_DIR": str(account),
                                   "KUBERNETES_SERVICE_HOST": "127.0.0.1",
                                   "KUBERNETES_SERVICE_PORT": cluster.server.rsplit(":", 1)[1]})
    assert (result.code, result.stderr) == (0, f"No claims in trouble found in {NAMESPACE} namespace.\n"), result


@pytest.mark.parametrize("subcommand", SUBCOMMANDS)
def test_a_token_is_never_printed_at_any_verbosity(cluster, accounts, subcommand: str, tmp_path: Path) -> None:
    """Through --token and a kubeconfig; for a user who may read (success) and one who may not (403s)."""
    for name in ("reader", "nobody"):
        token = accounts[name]
        via_config = ["--kubeconfig", str(kubeconfig(tmp_path / f"{name}.kc", cluster, {"token": token}))]
        via_flag = ["--kubeconfig", str(kubeconfig(tmp_path / f"{name}-bare.kc", cluster, {})), "--token", token]
        for way in (via_config, via_flag):
            for level in ("0", "6", "8", "9"):
                result = invoke(subcommand, "-A", *way, "-v", level)
                assert result.code == (0 if name == "reader" else 1), result
                assert token not in result.stdout + result.stderr
                assert token[-12:] not in result.stdout + result.stderr
                if level == "9":
                    assert "Authorization: Bearer <masked>" in result.stderr
                if name == "nobody" and level == "0":
                    one_error_line(result)


# -- client keys ----------------------------------------------------------------------------------

def open_files(pid: int) -> list[str]:
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return found


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_the_client_key_never_reaches_a_disk_even_when_killed(cluster, sig: int, tmp_path: Path) -> None:
    admin = yaml.safe_load(cluster.kubeconfig("admin").read_text())
    assert "client-key-data" in admin["users"][0]["user"]  # the test plane's admin signs in with a client key
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = subprocess.Popen([PLUGIN, "pending", "-A", "--watch", "--kubeconfig", str(cluster.kubeconfig("admin"))],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, TMPDIR=str(scratch), TMP=str(scratch), TEMP=str(scratch)))
    try:
        deadline = time.monotonic() + 60
        while not any(link.startswith("socket:") for link in open_files(process.pid)):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "no connection to the API server"
            time.sleep(0.2)
        time.sleep(1.0)  # the watch streams are open: the TLS context (and the key) has long been loaded
        for link in open_files(process.pid):
            assert not link.startswith(str(scratch)), link
            if link.startswith("/") and os.path.isfile(link) and not link.startswith(("/proc/", "/dev/")):
                assert b"PRIVATE KEY" not in Path(link).read_bytes(), link  # memfds read as /memfd:... (deleted)
    finally:
        process.send_signal(sig)
        out, err = process.communicate(timeout=30)
    # Ended by the signal, or by cli.entry()'s handler where the console script installs it.
    assert process.returncode in (-sig, 128 + sig), (out, err)
    assert err == ""
    leftovers = [p for p in scratch.rglob("*") if p.is_file() and b"PRIVATE KEY" in p.read_bytes()]
    assert leftovers == [] and list(scratch.iterdir()) == []


# -- exec plugins ---------------------------------------------------------------------------------

def exec_kubeconfig(folder: Path, cluster, command: str, script: str) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "get-token.sh").write_text("#!/bin/sh\n" + script + "\n")
    (folder / "get-token.sh").chmod(0o755)
    return kubeconfig(folder / "kc", cluster, {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": command, "interactiveMode": "Never"}})


def test_a_relative_exec_plugin_resolves_against_the_kubeconfig_folder(cluster, accounts, tmp_path: Path) -> None:
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {"token": accounts["reader"]}}
    config = exec_kubeconfig(tmp_path / "configs", cluster, "./get-token.sh",
                             "cat <<'EOF'\n" + json.dumps(credential) + "\nEOF")
    # Through kubectl's plugin dispatch, from a working directory that is not the kubeconfig's.
    result = run_plugin(config, "classes", via_kubectl=True, env={"PWD": "/"})
    assert result.returncode == 0 and "error" not in result.stderr, result
    mine = subprocess.run([PLUGIN, "claims", "--kubeconfig", str(config)], capture_output=True, text=True,
                          cwd="/", timeout=120, check=False)
    assert mine.returncode == 0, mine


def audit_events(cluster) -> list[dict]:
    return cluster.audit_events()


def test_a_failing_exec_plugin_is_one_line_and_nothing_is_sent_as_anonymous(cluster, tmp_path: Path) -> None:
    config = exec_kubeconfig(tmp_path / "configs", cluster, "./get-token.sh",
                             "echo 'SSO session expired; run corp-login' >&2; exit 1")
    for subcommand in SUBCOMMANDS:
        line = one_error_line(invoke(subcommand, "-A", "--kubeconfig", str(config)))
        assert line == (f"error: getting credentials: exec: executable {tmp_path / 'configs' / 'get-token.sh'} "
                        "failed with exit code 1: SSO session expired; run corp-login")
    anonymous = [e for e in audit_events(cluster) if e.get("userAgent", "").startswith("kubectl-pvleft/")
                 and e.get("user", {}).get("username") == "system:anonymous"]
    assert anonymous == []


# -- TLS ------------------------------------------------------------------------------------------

def admin_user(cluster) -> dict:
    return yaml.safe_load(cluster.kubeconfig("admin").read_text())["users"][0]["user"]


def test_insecure_skip_tls_verify_prints_no_warning_even_while_watching(cluster, tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "kc", cluster, admin_user(cluster), {"insecure-skip-tls-verify": True})
    once = run_plugin(config, "leftovers", "-v", "0")
    assert once.returncode == 0 and "Warning" not in once.stderr and "warning" not in once.stderr, once
    # The watch reopens its streams every second here: each reconnect is a new unverified TLS connection.
    watching = subprocess.Popen([PLUGIN, "pending", "-A", "--watch", "--kubeconfig", str(config)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ, PVLEFT_WATCH_TIMEOUT_SECONDS="1"))
    time.sleep(6)
    watching.send_signal(signal.SIGINT)
    out, err = watching.communicate(timeout=30)
    assert watching.returncode == 130 and err == "", (out, err)


def test_insecure_with_a_certificate_authority_is_refused_with_kubectls_message(cluster, tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "kc", cluster, admin_user(cluster),
                        {"insecure-skip-tls-verify": True, "certificate-authority-data": ca_data(cluster)})
    kubectl = subprocess.run(["kubectl", "--kubeconfig", str(config), "get", "pv"], capture_output=True, text=True,
                             timeout=60, check=False)
    assert kubectl.returncode == 1
    for subcommand in SUBCOMMANDS:
        assert one_error_line(invoke(subcommand, "--kubeconfig", str(config))) == kubectl.stderr.strip()


# -- messages that must not mislead ----------------------------------------------------------------

def test_a_refused_impersonation_does_not_blame_persistentvolumes(cluster) -> None:
    for subcommand in SUBCOMMANDS:
        line = one_error_line(invoke(subcommand, "--kubeconfig", str(cluster.kubeconfig("reader")), "--as", "jane"))
        # The server's own words may name the resource (constrained impersonation); our hint must not send
        # the user after get/list/watch rights they already have.
        assert "cannot impersonate" in line and "needs your own user to be allowed to impersonate" in line, line
        assert "needs get/list/watch" not in line and "ClusterRole" not in line, line


@pytest.mark.parametrize("subcommand", ["pending", "leftovers"])
def test_with_no_right_to_list_the_watch_says_one_line(cluster, subcommand: str) -> None:
    result = run_plugin(cluster.kubeconfig("namespaced"), subcommand, "-A", "--watch", timeout=120)
    assert "forbidden" in one_error_line(result)
