"""The command line without a cluster: usage, exit codes, error lines, connection failures (in-process)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from cli_runner import invoke
from kubectl_pvleft.cli.main import parse_request_timeout, program_name
from loopback import free_port


def kubeconfig_for(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    }))
    return path


@pytest.mark.parametrize("text, seconds", [("0", None), ("5", 5.0), ("30s", 30.0), ("2m", 120.0),
                                           ("1m30s", 90.0), ("500ms", 0.5), ("1h", 3600.0)])
def test_request_timeout_parses_kubectl_durations(text: str, seconds) -> None:
    assert parse_request_timeout(text) == seconds


def test_program_name_follows_the_binary() -> None:
    assert program_name("/usr/local/bin/kubectl-pvleft") == "kubectl pvleft"
    assert program_name("/x/kubectl_pvleft/__main__.py") == "python -m kubectl_pvleft"


def test_help_names_the_plugin_and_documents_exit_codes() -> None:
    result = invoke("--help")
    assert result.returncode == 0
    assert "\nUsage:\n  kubectl pvleft [flags] [options]\n" in result.stdout
    for code in ("0 ", "1 ", "2 ", "3 ", "130", "141"):
        assert f"\n  {code}" in result.stdout
    sub = invoke("leftovers", "--help")
    assert sub.returncode == 0 and "\nUsage:\n  kubectl pvleft leftovers [NAME ...] [flags] [options]\n" in sub.stdout
    assert "Exit codes: 0 success, 1 error" in sub.stdout


@pytest.mark.parametrize("args, fragment", [
    (["leftovers", "--bogus"], "unknown flag: --bogus"),
    (["zzzzzzzz"], 'unknown command "zzzzzzzz" for'),  # no suggestion: one line
    (["leftovers", "--request-timeout", "soon"], "Invalid timeout value"),
])
def test_usage_errors_are_one_line_exit_2(args: list[str], fragment: str) -> None:
    result = invoke(*args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


def test_namespace_and_all_namespaces_conflict(tmp_path: Path) -> None:
    result = invoke("claims", "-n", "x", "-A", "--kubeconfig", str(kubeconfig_for(tmp_path, "https://127.0.0.1:1")))
    assert result.returncode == 2
    assert result.stderr == "error: -n/--namespace and -A/--all-namespaces cannot be used together\n"


def test_missing_kubeconfig_is_exit_1(tmp_path: Path) -> None:
    result = invoke("leftovers", "--kubeconfig", str(tmp_path / "absent"))
    assert (result.returncode, result.stderr) == (1, f"error: kubeconfig {tmp_path / 'absent'}: no such file\n")


def test_unknown_context_is_exit_1(tmp_path: Path) -> None:
    result = invoke("leftovers", "--context", "prod", "--kubeconfig", str(kubeconfig_for(tmp_path, "https://127.0.0.1:1")))
    assert result.returncode == 1
    assert result.stderr == 'error: context "prod" does not exist in the kubeconfig\n'


def test_unreachable_server_is_one_clear_line(tmp_path: Path) -> None:
    server = f"https://127.0.0.1:{free_port()}"
    result = invoke("leftovers", "--kubeconfig", str(kubeconfig_for(tmp_path, server)))
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: the connection to the server {server} was refused")
    assert result.stderr.count("\n") == 1


def test_silent_server_hits_request_timeout(tmp_path: Path) -> None:
    with socket.socket() as listener:  # accepts the TCP connection, never answers TLS
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        server = f"https://127.0.0.1:{listener.getsockname()[1]}"
        config = kubeconfig_for(tmp_path, server)
        result = invoke("leftovers", "--request-timeout", "100ms", "--kubeconfig", str(config))
    assert result.returncode == 1
    assert result.stderr.startswith("error: ")
    assert "did not answer in time" in result.stderr or "TLS handshake" in result.stderr
    assert result.stderr.count("\n") == 1
