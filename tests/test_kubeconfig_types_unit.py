"""Every kubeconfig field given every wrong type: one error line or a run, never an internal error.

A generated corpus (issue 21, item 10): each field of the top level, a cluster, a user (with its exec plugin and
auth provider) and a context is set to a list, a mapping, a number, a boolean, null, a string and a float in
turn, and the plugin is run against a closed port. `auth-provider: {name: [x]}` was a TypeError."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli_runner import invoke

BASE: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Config", "current-context": "x", "preferences": {},
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}],
    "users": [{"name": "u", "user": {"token": "abc"}}],
    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "default"}}],
}
EXEC = {"apiVersion": "client.authentication.k8s.io/v1", "command": "/nonexistent/get-token", "args": [], "env": [],
        "interactiveMode": "Never", "provideClusterInfo": False, "installHint": "x"}
PROVIDER = {"name": "oidc", "config": {"id-token": "abc"}}

FIELDS: list[tuple[str, ...]] = (
    [("current-context",), ("preferences",), ("extensions",), ("clusters",), ("users",), ("contexts",)]
    + [("clusters", 0, "cluster", f) for f in ("server", "certificate-authority", "certificate-authority-data",
                                              "insecure-skip-tls-verify", "tls-server-name", "proxy-url",
                                              "disable-compression", "extensions")]
    + [("clusters", 0, k) for k in ("name", "cluster")]
    + [("users", 0, "user", f) for f in ("token", "tokenFile", "username", "password", "client-certificate",
                                         "client-certificate-data", "client-key", "client-key-data", "as", "as-uid",
                                         "as-groups", "as-user-extra", "exec", "auth-provider", "extensions")]
    + [("users", 0, k) for k in ("name", "user")]
    + [("users", 0, "user", "exec", f) for f in EXEC]
    + [("users", 0, "user", "auth-provider", f) for f in ("name", "config")]
    + [("users", 0, "user", "auth-provider", "config", "id-token")]
    + [("contexts", 0, "context", f) for f in ("cluster", "user", "namespace", "extensions")]
    + [("contexts", 0, k) for k in ("name", "context")]
)
WRONG = [["x"], {"a": 1}, 12, True, None, "text", 1.5]


def _set(doc: dict, path: tuple, value: Any) -> dict:
    doc = copy.deepcopy(doc)
    if path[:4] == ("users", 0, "user", "exec"):
        doc["users"][0]["user"] = {"exec": dict(EXEC)}
    if path[:4] == ("users", 0, "user", "auth-provider"):
        doc["users"][0]["user"] = {"auth-provider": copy.deepcopy(PROVIDER)}
    where = doc
    for step in path[:-1]:
        where = where[step]
    where[path[-1]] = value
    return doc


@pytest.mark.parametrize("path", FIELDS, ids=[".".join(map(str, p)) for p in FIELDS])
def test_every_field_of_every_wrong_type_is_one_line_never_an_internal_error(path: tuple, tmp_path: Path) -> None:
    for number, value in enumerate(WRONG):
        config = tmp_path / f"kc-{number}"
        config.write_text(yaml.safe_dump(_set(BASE, path, value)))
        result = invoke("classes", "--kubeconfig", str(config), "--request-timeout", "2s")
        assert "internal error" not in result.stderr, (path, value, result.stderr)
        assert result.stdout == "" or result.code == 0, (path, value)
        if result.code:
            lines = [line for line in result.stderr.splitlines() if not line.startswith("warning: ")]
            assert len(lines) == 1 and lines[0].startswith("error: "), (path, value, result.stderr)
