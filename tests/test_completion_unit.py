"""Completion with no cluster: subcommands, flags, -o values, kubeconfig names merged as kubectl merges, silent
failures. The completion program's main() runs in this process; kubectl's relay (`kubectl __complete pvleft ...`
runs our kubectl_complete-pvleft from PATH) and the program's own stderr are checked in real processes too."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import pytest
import yaml

from cli_runner import Result, environment
from kubectl_pvleft.cli import completion
from kubectl_pvleft.cli.main import build_parser
from loopback import Silent

BIN = Path(sys.executable).parent
COMPLETER = shutil.which("kubectl_complete-pvleft", path=str(BIN)) or shutil.which("kubectl_complete-pvleft")


def subcommands() -> list[str]:
    """The command line's subcommands, in its order, as argparse holds them, then `help`, `options` and `version`
    (kubectl's own, as cobra offers them)."""
    parser = build_parser("kubectl pvleft")
    return [name for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for name in action.choices] + ["help", "options", "version"]


def completer(*words: str, env: Optional[dict] = None) -> Result:
    """`kubectl_complete-pvleft WORDS` in this process: its main() with stdout and stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    with environment(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = completion.main(list(words))
    return Result(code, out.getvalue(), err.getvalue())


def candidates(stdout: str) -> tuple[list[str], int]:
    """Candidates (without descriptions) and the directive, from cobra's __complete protocol."""
    lines = stdout.splitlines()
    assert lines and lines[-1].startswith(":"), stdout
    return [line.split("\t")[0] for line in lines[:-1]], int(lines[-1][1:])


def complete(*words: str, env: Optional[dict] = None) -> tuple[list[str], int]:
    """What the completion program answers for `kubectl pvleft WORDS`."""
    result = completer(*words, env=env)
    assert (result.code, result.stderr) == (0, ""), result
    return candidates(result.stdout)


def kubectl_complete(*words: str, env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """`kubectl __complete pvleft WORDS`: kubectl finds kubectl_complete-pvleft on PATH and relays its answer."""
    full_env = dict(os.environ, **(env or {}))
    full_env["PATH"] = f"{os.path.dirname(COMPLETER)}{os.pathsep}{full_env['PATH']}"
    return subprocess.run(["kubectl", "__complete", "pvleft", *words], capture_output=True, text=True,
                          env=full_env, timeout=60, check=False)


def run_completer(*words: str, env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """The completion program itself, to see its stderr (kubectl adds debug lines to its own)."""
    return subprocess.run([COMPLETER, *words], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})), timeout=60, check=False)


def test_installed_as_console_script() -> None:
    assert COMPLETER, "kubectl_complete-pvleft is not installed: run `make install`"


def test_subcommands() -> None:
    names, directive = complete("")
    assert names == subcommands() and directive == 4
    assert {"leftovers", "pending", "classes", "claims"} <= set(names)
    assert complete("cl") == ([n for n in names if n.startswith("cl")], 4) and "classes" in names
    # After a subcommand: object names from the server (test_completion_cluster.py), never file names; with no
    # server to ask, none at all.
    assert complete("leftovers", "", env={"KUBECONFIG": os.devnull}) == ([], 4)
    assert complete("serve", "", env={"KUBECONFIG": os.devnull}) == ([], 4)
    assert complete("mcp", "", env={"KUBECONFIG": os.devnull}) == ([], 4)
    # why takes one KIND/NAME: first the kinds, with no space after the slash (directive 2 added to 4).
    assert complete("why", "", env={"KUBECONFIG": os.devnull}) == (
        ["pod/", "pv/", "pvc/", "volumesnapshotcontent/"], 6)
    assert complete("why", "pv", env={"KUBECONFIG": os.devnull}) == (["pv/", "pvc/"], 6)
    assert complete("why", "nope/x", env={"KUBECONFIG": os.devnull}) == ([], 4)


def test_flags_long_and_short_of_the_subcommand() -> None:
    names, directive = complete("pending", "-")
    assert directive == 4
    assert {"-n", "--namespace", "-A", "--all-namespaces", "-o", "--output", "--watch", "-w", "--context"} <= set(names)
    assert "--drift" not in names  # a flag of classes, not of pending
    long_only, _ = complete("classes", "--")
    assert "--drift" in long_only and not any(n.startswith("-") and not n.startswith("--") for n in long_only)
    names, _ = complete("leftovers", "--al")
    assert {"--all", "--all-namespaces"} <= set(names) and all(n.startswith("--al") for n in names)
    # A flag already given is not offered again; a repeatable one is.
    names, _ = complete("leftovers", "--as-group", "a", "--all", "--a")
    assert "--all" not in names and "--as-group" in names


def test_flags_before_the_subcommand() -> None:
    names, _ = complete("--")
    assert "--version" in names and "--kubeconfig" in names
    # Flags with a value are skipped over when finding the subcommand.
    assert complete("-n", "leftovers", "") == (subcommands(), 4)
    assert complete("--context", "x", "leftovers", "--dr") == ([], 4)
    assert complete("--context", "x", "classes", "--dr") == (["--drift"], 4)


def test_output_values() -> None:
    names, directive = complete("leftovers", "-o", "")
    assert {"table", "wide", "json", "yaml", "jsonl", "name"} <= set(names)
    # A templated format is offered as `jsonpath=` with no space after it (directive 2 added to 4).
    assert directive == (6 if any(n.endswith("=") for n in names) else 4)
    names, _ = complete("leftovers", "-o", "j")
    assert {"json", "jsonl"} <= set(names) and all(n.startswith("j") for n in names)
    assert complete("leftovers", "--output=y") == (["yaml"], 4)
    assert complete("-o", "wi") == (["wide"], 4)


def test_kubeconfig_flag_completes_file_names() -> None:
    assert complete("--kubeconfig", "") == ([], 0)  # 0: the shell's own file completion


def _kubeconfig(path: Path, contexts: list[tuple[str, str, str]], current: str = "") -> Path:
    clusters = sorted({c for _, c, _ in contexts})
    users = sorted({u for _, _, u in contexts})
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        # Verification off: with no CA named, a namespace lookup would first load the system's trust store (~0.1 s).
        "clusters": [{"name": c, "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}
                     for c in clusters],
        "users": [{"name": u, "user": {"token": "not-a-real-token"}} for u in users],
        "contexts": [{"name": n, "context": {"cluster": c, "user": u}} for n, c, u in contexts],
    }))
    return path


def test_context_cluster_user_names_merged_as_kubectl_merges(tmp_path: Path) -> None:
    first = _kubeconfig(tmp_path / "a", [("prod", "prod-cluster", "alice"), ("shared", "a-cluster", "alice")])
    second = _kubeconfig(tmp_path / "b", [("staging", "staging-cluster", "bob"), ("shared", "b-cluster", "bob")])
    env = {"KUBECONFIG": f"{first}{os.pathsep}{tmp_path / 'missing'}{os.pathsep}{second}"}
    assert complete("leftovers", "--context", "", env=env) == (["prod", "shared", "staging"], 4)
    assert complete("--context", "s", env=env) == (["shared", "staging"], 4)
    assert complete("--cluster", "", env=env)[0] == ["a-cluster", "b-cluster", "prod-cluster", "staging-cluster"]
    assert complete("claims", "--user", "", env=env)[0] == ["alice", "bob"]
    # --kubeconfig means exactly that file, as for the plugin itself.
    assert complete("--kubeconfig", str(second), "--context", "", env=env)[0] == ["shared", "staging"]
    assert complete(f"--kubeconfig={first}", "--context", "", env=env)[0] == ["prod", "shared"]


def test_contexts_lists_complete_their_last_item(tmp_path: Path) -> None:
    config = _kubeconfig(tmp_path / "a", [("prod-eu", "c", "u"), ("prod-us", "c", "u"), ("staging", "c", "u")])
    env = {"KUBECONFIG": str(config)}
    assert complete("leftovers", "--contexts", "", env=env) == (["prod-eu", "prod-us", "staging"], 4)
    assert complete("--contexts", "prod-eu,", env=env) == (["prod-eu,prod-us", "prod-eu,staging"], 4)
    assert complete("--contexts", "staging,prod-eu,p", env=env) == (["staging,prod-eu,prod-us"], 4)
    assert complete("claims", "--contexts=prod-", env=env) == (["prod-eu", "prod-us"], 4)
    assert complete("--contexts", "prod-eu,prod-us,staging,", env=env) == ([], 4)


def test_failures_print_no_candidates_and_nothing_on_stderr(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.write_text("clusters: [unclosed\n")
    for words in (("--context", ""), ("-n", ""), ("--kubeconfig", str(tmp_path / "nope"), "--user", "")):
        result = completer(*words, env={"KUBECONFIG": str(broken)})
        assert (result.returncode, result.stdout, result.stderr) == (0, ":4\n", ""), words


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP port that accepts connections and never answers: the namespace lookup must give up by itself."""
    with Silent() as silent:
        yield f"https://127.0.0.1:{silent.port}"


@pytest.mark.integration
def test_namespace_lookup_against_a_silent_server_gives_up_quietly(tmp_path: Path, silent_server: str) -> None:
    config = _kubeconfig(tmp_path / "config", [("hung", "hung", "someone")], current="hung")
    config.write_text(config.read_text().replace("https://127.0.0.1:1", silent_server))
    result = run_completer("pending", "-n", "", env={"KUBECONFIG": str(config)})
    assert (result.returncode, result.stdout, result.stderr) == (0, ":4\n", "")


@pytest.mark.integration
def test_object_name_lookup_against_a_silent_server_gives_up_quietly(tmp_path: Path, silent_server: str) -> None:
    config = _kubeconfig(tmp_path / "config", [("hung", "hung", "someone")], current="hung")
    config.write_text(config.read_text().replace("https://127.0.0.1:1", silent_server))
    result = run_completer("leftovers", "", env={"KUBECONFIG": str(config)})
    assert (result.returncode, result.stdout, result.stderr) == (0, ":4\n", "")


def test_unreachable_server_gives_no_namespaces_and_no_names(tmp_path: Path) -> None:
    config = _kubeconfig(tmp_path / "config", [("down", "down", "someone")], current="down")
    for words in (("-n", ""), ("pending", ""), ("claims", "-A", "d")):
        result = completer(*words, env={"KUBECONFIG": str(config)})
        assert (result.returncode, result.stdout, result.stderr) == (0, ":4\n", ""), words


@pytest.mark.integration
def test_kubectl_relays_the_programs_answer_unchanged(tmp_path: Path) -> None:
    """Plugin dispatch: `kubectl __complete pvleft WORDS` finds kubectl_complete-pvleft on PATH, passes it the
    words and the environment, and prints what it printed."""
    config = _kubeconfig(tmp_path / "a", [("prod", "prod-cluster", "alice"), ("shared", "a-cluster", "alice")])
    env = {"KUBECONFIG": str(config)}
    relayed = {}
    for words in (("",), ("pending", "-"), ("leftovers", "-o", ""), ("leftovers", "--context", "")):
        relayed[words] = kubectl_complete(*words, env=env)
        assert relayed[words].returncode == 0, relayed[words].stderr
        assert relayed[words].stdout == completer(*words, env=env).stdout, words
    assert candidates(relayed[("",)].stdout) == (subcommands(), 4)
    assert candidates(relayed[("leftovers", "--context", "")].stdout) == (["prod", "shared"], 4)
