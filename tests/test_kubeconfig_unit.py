"""kubeconfig selection the way kubectl does it: merge order, overrides, relative paths, errors."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from kubectl_pvleft.errors import ConfigError
from kubectl_pvleft.kube.kubeconfig import Selection, kubeconfig_files, load_connection, merge_kubeconfigs


def write(path: Path, *, current: str, clusters: dict, users: dict, contexts: dict) -> Path:
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [{"name": n, "cluster": c} for n, c in clusters.items()],
        "users": [{"name": n, "user": u} for n, u in users.items()],
        "contexts": [{"name": n, "context": c} for n, c in contexts.items()],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def two_files(tmp_path: Path) -> tuple[Path, Path]:
    first = write(tmp_path / "first", current="one",
                  clusters={"c1": {"server": "https://first.example:6443"}},
                  users={"u1": {"token": "first-token"}},
                  contexts={"one": {"cluster": "c1", "user": "u1", "namespace": "team-a"},
                            "shared": {"cluster": "c1", "user": "u1"}})
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    second = write(tmp_path / "sub" / "second", current="two",
                   clusters={"c1": {"server": "https://shadowed.example"}, "c2": {"server": "https://second.example",
                                                                                 "certificate-authority": "ca.crt"}},
                   users={"u2": {"token": "second-token"}},
                   contexts={"two": {"cluster": "c2", "user": "u2"}, "shared": {"cluster": "c2", "user": "u2"}})
    return first, second


def test_first_file_wins_for_entries_and_current_context(two_files: tuple[Path, Path]) -> None:
    merged = merge_kubeconfigs(list(two_files))
    assert merged["current-context"] == "one"
    assert [c["name"] for c in merged["clusters"]] == ["c1", "c2"]
    assert merged["clusters"][0]["cluster"]["server"] == "https://first.example:6443"
    shared = next(c for c in merged["contexts"] if c["name"] == "shared")
    assert shared["context"]["cluster"] == "c1"


def test_relative_paths_resolve_against_the_file_that_names_them(two_files: tuple[Path, Path]) -> None:
    merged = merge_kubeconfigs(list(two_files))
    c2 = next(c for c in merged["clusters"] if c["name"] == "c2")
    assert c2["cluster"]["certificate-authority"] == str(two_files[1].parent / "ca.crt")


def test_users_sharing_one_aliased_body_each_get_absolute_paths(tmp_path: Path) -> None:
    """A YAML alias makes two users one mapping as read: each merged entry has the paths made absolute, once (the
    merge writes new mappings, never the file's own)."""
    (tmp_path / "sub").mkdir()
    config = tmp_path / "sub" / "config"
    config.write_text("apiVersion: v1\nkind: Config\nusers:\n"
                      "- name: a\n  user: &u {client-certificate: a.crt, client-key: /abs/a.key, exec: {command: ./get}}\n"
                      "- name: b\n  user: *u\n")
    merged = merge_kubeconfigs([config])
    for entry in merged["users"]:
        assert entry["user"] == {"client-certificate": str(tmp_path / "sub" / "a.crt"), "client-key": "/abs/a.key",
                                 "exec": {"command": "./get", "__dir__": str(tmp_path / "sub")}}, entry["name"]


def test_kubeconfig_list_skips_missing_entries(two_files: tuple[Path, Path], tmp_path: Path) -> None:
    env = ":".join([str(tmp_path / "nope"), str(two_files[1]), "", str(two_files[0]), str(two_files[1])])
    assert kubeconfig_files(None, env) == [two_files[1], two_files[0]]


def test_explicit_kubeconfig_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        kubeconfig_files(str(tmp_path / "missing"))


def test_connection_uses_context_namespace_and_token(two_files: tuple[Path, Path], monkeypatch) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{two_files[0]}:{two_files[1]}")
    conn = load_connection(Selection())
    assert conn.server == "https://first.example:6443"
    assert conn.namespace == "team-a"
    assert conn.auth.token == "first-token"


def test_flags_override_context_cluster_user_and_namespace(two_files: tuple[Path, Path], monkeypatch) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{two_files[0]}:{two_files[1]}")
    conn = load_connection(Selection(context="two", namespace="ops"))
    assert (conn.server, conn.namespace) == ("https://second.example", "ops")
    conn = load_connection(Selection(context="one", cluster="c2", user="u2"))
    assert conn.server == "https://second.example"
    assert conn.auth.token == "second-token"
    assert conn.namespace == "team-a"


def test_a_users_unknown_keys_are_ignored_even_named_like_the_merges_own(tmp_path: Path) -> None:
    """kubectl ignores a key its types do not have: a user's ``__missing__`` is no warning, ``__name__`` no name, and
    an exec plugin's folder is the file's, whatever ``__dir__`` the file writes (client-go: tools/clientcmd/api/v1
    AuthInfo and ExecConfig have none of them)."""
    config = write(tmp_path / "config", current="one", clusters={"c": {"server": "https://one.example"}},
                   users={"u": {"token": "t", "__missing__": "forged", "__name__": "other",
                                "exec": {"command": "./get", "apiVersion": "client.authentication.k8s.io/v1",
                                         "__dir__": "/elsewhere"}}},
                   contexts={"one": {"cluster": "c", "user": "u"}})
    conn = load_connection(Selection(kubeconfig=str(config)))
    assert (conn.notes, conn.auth.user_name, conn.auth.exec_dir) == ((), "u", str(tmp_path))


def test_namespace_defaults_to_default(two_files: tuple[Path, Path]) -> None:
    assert load_connection(Selection(kubeconfig=str(two_files[1]))).namespace == "default"


@pytest.mark.parametrize("selection, message", [
    (Selection(context="nope"), 'context "nope" does not exist'),
    (Selection(cluster="nope"), 'cluster "nope"'),
    (Selection(user="nope"), 'auth info "nope" does not exist'),
])
def test_unknown_names_are_clear_errors(two_files: tuple[Path, Path], selection: Selection, message: str) -> None:
    selection = Selection(kubeconfig=str(two_files[0]), context=selection.context, cluster=selection.cluster,
                          user=selection.user)
    with pytest.raises(ConfigError, match=message):
        load_connection(selection)


def test_malformed_kubeconfig_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.write_text("clusters: [unclosed\n")
    with pytest.raises(ConfigError, match="cannot be read"):
        load_connection(Selection(kubeconfig=str(bad)))
    bad.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="not a kubeconfig"):
        load_connection(Selection(kubeconfig=str(bad)))


def test_no_kubeconfig_and_not_in_cluster(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBECONFIG", "")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError, match="not running inside a cluster"):
        load_connection(Selection())


def test_embedded_cert_data_is_accepted_and_file_is_not_rewritten(tmp_path: Path) -> None:
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    path = write(tmp_path / "cfg", current="x",
                 clusters={"c": {"server": "https://127.0.0.1:1", "certificate-authority-data": base64.b64encode(pem).decode()}},
                 users={"u": {"token": "t"}}, contexts={"x": {"cluster": "c", "user": "u"}})
    before = path.read_bytes()
    conn = load_connection(Selection(kubeconfig=str(path)))
    assert conn.tls.ca_data == pem
    assert path.read_bytes() == before


def test_missing_certificate_file_is_a_config_error(two_files: tuple[Path, Path]) -> None:
    (two_files[1].parent / "ca.crt").unlink()
    with pytest.raises(ConfigError, match=r"ca\.crt"):
        load_connection(Selection(kubeconfig=str(two_files[1])))


def test_a_name_with_a_line_break_cannot_forge_a_line(tmp_path: Path) -> None:
    """A context's user that the kubeconfig does not define is a warning naming it; a user name holding a line break
    and an ``error:`` must stay inside that one warning line, escaped, as the error line is (text.warn)."""
    from cli_runner import invoke

    forged = "u\nerror: you must run rm -rf /tmp/x\x1b[2K"
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "ctx",
           "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
           "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": forged}}]}
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(doc))
    result = invoke("leftovers", "--kubeconfig", str(path), "--request-timeout", "2s", env={"KUBECONFIG": None})
    lines = result.stderr.splitlines()
    assert [line.split(":")[0] for line in lines] == ["warning", "error"], result.stderr
    assert "u\\nerror: you must run rm -rf /tmp/x\\x1b[2K" in lines[0]
    assert all(c == "\n" or c.isprintable() for c in result.stderr)
