"""Kubeconfig scalars typed as kubectl types them (issue 20): every candidate scalar in every role, kubectl's
answer beside ours.

kubectl reads a kubeconfig through sigs.k8s.io/yaml (go-yaml v2's typing, then JSON, then client-go's structs),
so `namespace: y` is a boolean it refuses and `namespace: 1:30` a string it keeps, where PyYAML says the opposite.
kubectl's answers (`kubectl config view --raw -o json`) are recorded in fixtures/kubectl_scalars.json: the unit test
checks our loader against them without kubectl; the integration test asks kubectl 1.33 again, when it is here, and
fails when an answer changed (PVLEFT_RECORD=1 writes the new answers instead).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kubectl_pvleft.errors import ConfigError
from kubectl_pvleft.kube.kubeconfig import merge_kubeconfigs

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
RECORDED = Path(__file__).parent / "fixtures" / "kubectl_scalars.json"

CANDIDATES = [
    "y", "Y", "yes", "Yes", "YES", "yES", "n", "N", "no", "on", "On", "off", "OFF", "true", "True", "TRUE", "false",
    "~", "null", "Null", "NULL", "nULL", "", "0", "00", "012", "08", "09", "0o17", "0O7", "0x1F", "0x", "0b101",
    "0b-1", "-0b-1", "1_000", "1__0", "+1", "-1", "+", "1e3", "1.e5", "1.5", ".5", "+.5", "2.", "1e400", ".1e400",
    "12345678.9", "99999999999999999999", "18446744073709551615", "0xFFFFFFFFFFFFFFFFFFFF", ".inf", "-.Inf", "+.inf",
    ".nan", ".NaN", "-.nan", ".nAn", "1:30", "190:20:30", "2001-12-14", "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10", "'0'", "'y'", '"y"', '"1e3"', "=", "<<", "!tag x", "!!str 12", "!!int 12",
    "!!binary aGVsbG8=", "!!timestamp 2001-12-14", "team-a", "https://127.0.0.1:6443",
]

TEMPLATE = """\
apiVersion: v1
kind: Config
current-context: {current}
clusters:
- name: {cluster}
  cluster:
    server: {server}
    insecure-skip-tls-verify: {insecure}
    disable-compression: {compression}
contexts:
- name: {context}
  context:
    cluster: {cluster}
    user: {user}
    namespace: {namespace}
users:
- name: {user}
  user:
    token: {token}
    as: someone
    as-groups:
    - {group}
    as-user-extra:
      {key}: [v]
"""
SANE = {"current": "x", "cluster": "c", "context": "x", "user": "u", "namespace": "default",
        "server": "https://127.0.0.1:1", "insecure": "false", "compression": "false", "token": "t", "group": "g",
        "key": "k"}


def at(*steps: Any) -> Callable[[dict], Any]:
    def value(doc: dict) -> Any:
        for step in steps:
            doc = doc.get(step) if isinstance(doc, dict) else doc[step] if isinstance(doc, list) and doc else None
        return doc
    return value


# role: (the template's slots the scalar fills, where its value is in `kubectl config view -o json`'s document,
# the keys an error line may name)
ROLES: dict[str, tuple[tuple[str, ...], Callable[[dict], Any], tuple[str, ...]]] = {
    "cluster-name": (("cluster",), at("clusters", 0, "name"), ("name",)),
    "context-name": (("context", "current"), at("contexts", 0, "name"), ("name", "current-context")),
    "user-name": (("user",), at("users", 0, "name"), ("name",)),
    "namespace": (("namespace",), at("contexts", 0, "context", "namespace"), ("namespace",)),
    "server": (("server",), at("clusters", 0, "cluster", "server"), ("server",)),
    "current-context": (("current",), at("current-context"), ("current-context",)),
    "insecure-skip-tls-verify": (("insecure",), at("clusters", 0, "cluster", "insecure-skip-tls-verify"),
                                 ("insecure-skip-tls-verify",)),
    "disable-compression": (("compression",), at("clusters", 0, "cluster", "disable-compression"),
                            ("disable-compression",)),
    "token": (("token",), at("users", 0, "user", "token"), ("token",)),
    "as-groups-item": (("group",), at("users", 0, "user", "as-groups"), ("as-groups",)),
    "map-key": (("key",), at("users", 0, "user", "as-user-extra"), ("as-user-extra",)),
}


def kubeconfig_text(role: str, scalar: str) -> str:
    return TEMPLATE.format(**{**SANE, **dict.fromkeys(ROLES[role][0], scalar)})


def shown(value: Any) -> Any:
    """A value as `kubectl config view -o json` shows it: empty strings, false and null are left out."""
    return None if value is None or value is False or value == "" else value


def ours(path: Path, role: str) -> dict[str, Any]:
    try:
        doc = merge_kubeconfigs([path])
    except ConfigError as exc:
        return {"refused": str(exc)}
    return {"value": shown(ROLES[role][1](doc))}


def kubectls(path: Path, role: str) -> dict[str, Any]:
    done = subprocess.run([KUBECTL, "config", "view", "--raw", "-o", "json", "--kubeconfig", str(path)],
                          capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
                          check=False)
    if done.returncode:
        return {"refused": done.stderr.strip().replace(str(path), "KUBECONFIG")}
    return {"value": shown(ROLES[role][1](json.loads(done.stdout)))}


def recorded() -> dict[str, dict[str, dict[str, Any]]]:
    return json.loads(RECORDED.read_text())


@pytest.mark.parametrize("role", list(ROLES))
def test_each_scalar_in_each_role_is_what_kubectl_makes_of_it(role: str, tmp_path: Path) -> None:
    answers = recorded()[role]
    assert sorted(answers) == sorted(CANDIDATES), "re-record: PVLEFT_RECORD=1 pytest -m integration " + __file__
    wrong = []
    for scalar in CANDIDATES:
        path = tmp_path / "kubeconfig"
        path.write_text(kubeconfig_text(role, scalar))
        theirs, mine = answers[scalar], ours(path, role)
        if "refused" in theirs:
            # One error line naming the file, and the key unless the text is not YAML at all.
            named = "refused" in mine and str(path) in mine["refused"] and any(
                key in mine["refused"] for key in (*ROLES[role][2], "cannot be read"))
            if not named:
                wrong.append((scalar, theirs, mine))
        elif mine != theirs:
            wrong.append((scalar, theirs, mine))
    assert wrong == []


def test_the_table_holds_the_differences_the_issue_names() -> None:
    table = recorded()
    for role in ("namespace", "context-name"):
        for refused in ("y", "n", "0o17", "1e3"):
            assert "refused" in table[role][refused], (role, refused)
        for kept in ("1:30", "2001-12-14"):
            assert table[role][kept] == {"value": kept}, (role, kept)
    assert table["map-key"]["y"] == {"value": {"true": ["v"]}}
    assert table["map-key"]["1e3"] == {"value": {"1000": ["v"]}}
    assert table["insecure-skip-tls-verify"]["y"] == {"value": True}


@pytest.mark.integration  # kubectl, a child process per case
@pytest.mark.skipif(not os.path.exists(KUBECTL), reason="no kubectl 1.33 here: the recorded answers stand")
def test_kubectl_still_answers_as_recorded(tmp_path: Path) -> None:
    cases = [(role, scalar) for role in ROLES for scalar in CANDIDATES]

    def ask(numbered: tuple[int, tuple[str, str]]) -> dict[str, Any]:
        number, (role, scalar) = numbered
        path = tmp_path / f"kubeconfig-{number}"
        path.write_text(kubeconfig_text(role, scalar))
        return kubectls(path, role)

    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(ask, enumerate(cases)))
    live: dict[str, dict[str, Any]] = {role: {} for role in ROLES}
    for (role, scalar), answer in zip(cases, answers, strict=True):
        live[role][scalar] = answer
    if os.environ.get("PVLEFT_RECORD") == "1":
        RECORDED.write_text(json.dumps(live, indent=1, sort_keys=True) + "\n")
    assert live == recorded()


@pytest.mark.parametrize("secret", ["982451653", "0o17777", "4e300", "!!int 77777", "!!int abcdef"])
@pytest.mark.parametrize("role", ["token", "map-key"])
def test_a_refused_scalar_is_never_repeated_in_the_error_line(role: str, secret: str, tmp_path: Path) -> None:
    # A token (or a password) that YAML reads as a number or a boolean: the line names its key and type only.
    path = tmp_path / "kubeconfig"
    path.write_text(kubeconfig_text(role, secret))
    answer = ours(path, role)
    value = secret.split()[-1]
    assert role == "map-key" or "refused" in answer
    assert value not in answer.get("refused", ""), answer


# go-yaml v2 refuses a document whose aliases give more than their share of the nodes it decodes ("excessive
# aliasing": 99% up to 400,000 nodes), and an anchor inside its own value. (n, m, k): a list of n scalars, a list
# of m aliases to it, a list of k aliases to that; kubectl 1.33's verdict, recorded (the boundary is 112 -> 113).
ALIASES = {(900, 112, 0): False, (900, 113, 0): True, (5, 50, 30): True, (50, 50, 2): False, (200, 10, 30): True,
           (200, 10, 2): False, (100, 128, 0): False}


def aliased_text(n: int, m: int, k: int) -> str:
    text = f"apiVersion: v1\nkind: Config\nfoo:\n  a: &a [{', '.join(['x'] * n)}]\n  b: &b [{', '.join(['*a'] * m)}]\n"
    return text + (f"  c: [{', '.join(['*b'] * k)}]\n" if k else "")


@pytest.mark.parametrize("shape, refused", list(ALIASES.items()), ids=[str(s) for s in ALIASES])
def test_aliases_are_limited_as_kubectl_limits_them(shape: tuple[int, int, int], refused: bool, tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(aliased_text(*shape))
    try:
        merge_kubeconfigs([path])
        said = ""
    except ConfigError as exc:
        said = str(exc)
    assert ("document contains excessive aliasing" in said) == refused, said
    path.write_text("apiVersion: v1\nclusters: &a\n- *a\n")
    with pytest.raises(ConfigError, match="contains itself"):
        merge_kubeconfigs([path])


@pytest.mark.integration  # kubectl, a child process per case
@pytest.mark.skipif(not os.path.exists(KUBECTL), reason="no kubectl 1.33 here: the recorded answers stand")
def test_kubectl_still_limits_aliases_as_recorded(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    for shape, refused in ALIASES.items():
        path.write_text(aliased_text(*shape))
        done = subprocess.run([KUBECTL, "config", "view", "-o", "name", "--kubeconfig", str(path)], capture_output=True,
                              text=True, timeout=60, check=False)
        assert ("excessive aliasing" in done.stderr) == refused, (shape, done.stderr)
