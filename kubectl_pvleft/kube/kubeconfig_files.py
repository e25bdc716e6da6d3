"""Which kubeconfig files kubectl reads (--kubeconfig, else $KUBECONFIG's list, else ~/.kube/config), each read and
checked as kubectl reads it, and merged as client-go merges them: the first file wins a map key and
current-context; relative paths resolve against the file that named them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from kubectl_pvleft.errors import ConfigError
from kubectl_pvleft.kube.kubeconfig_types import check_types
from kubectl_pvleft.text import shown

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Literal, TypedDict, TypeVar

    from kubectl_pvleft.kube.kubeconfig_types import AuthInfo, Config, Extensions, NamedAuthInfo, NamedCluster, NamedContext

    class WithExtensions(TypedDict, total=False):  # a cluster, a user or a context
        extensions: Optional[Extensions]

    # kubectl's merged view: every named entry a mapping with a string name, first file first.
    Merged = TypedDict("Merged", {"clusters": list[NamedCluster], "users": list[NamedAuthInfo],
                                  "contexts": list[NamedContext], "current-context": str})
    Named = TypeVar("Named", NamedCluster, NamedAuthInfo, NamedContext)
    Section = Literal["clusters", "users", "contexts"]


def shown_path(name: str) -> str:
    """A path from a kubeconfig, for a message: control characters (a NUL, a line break) escaped."""
    return shown(name)


def is_file(path: Path) -> bool:
    """Path.is_file, except that a name too long for the system (or otherwise unusable) is simply not a file."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def kubeconfig_files(explicit: Optional[str], env: Optional[str] = None) -> list[Path]:
    """The files kubectl would read: --kubeconfig alone, else every existing KUBECONFIG entry, else ~/.kube/config."""
    if explicit:
        path = Path(explicit)  # no "~" expansion: kubectl does none (the shell does, for an unquoted ~)
        if not is_file(path):
            raise ConfigError(f"kubeconfig {shown_path(explicit)}: no such file")
        return [path]
    env = os.environ.get("KUBECONFIG") if env is None else env
    if env:
        # kubectl skips list entries that do not exist, and reads each file once.
        seen: list[Path] = []
        for entry in env.split(os.pathsep):
            if entry and is_file(Path(entry)) and Path(entry) not in seen:
                seen.append(Path(entry))
        return seen
    try:
        default = Path.home() / ".kube" / "config"
    except (RuntimeError, KeyError):  # no HOME and no passwd entry: there is no default file
        return []
    return [default] if is_file(default) else []


def _read(path: Path) -> Config:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"kubeconfig {path} is not a text file (not UTF-8)") from None
    except OSError as exc:
        raise ConfigError(f"kubeconfig {path} cannot be read: {exc.strerror or type(exc).__name__}") from None
    if "\x00" in text:
        raise ConfigError(f"kubeconfig {path} is not a text file (it contains NUL bytes)")
    from kubectl_pvleft.kube.plainyaml import Refused
    from kubectl_pvleft.kube.plainyaml import read as read_plain

    try:  # JSON and plain block YAML without importing PyYAML; both typed as kubectl's YAML reader types them
        doc: object = read_plain(text)
        if doc is None:
            doc = _read_yaml(text, path)
    except Refused as exc:
        raise ConfigError(f"kubeconfig {path} cannot be read: {shown(str(exc))}") from None  # keys escaped
    if not isinstance(doc, dict) or not check_types(doc, path):  # check_types: True, or why kubectl refuses the file
        raise ConfigError(f"kubeconfig {path} is not a kubeconfig document (expected a mapping at the top)")
    _check_extension_names(doc, path)
    version, kind = doc.get("apiVersion") or "v1", doc.get("kind") or "Config"  # empty: kubectl's defaults
    if (version, kind) != ("v1", "Config"):
        raise ConfigError(f'kubeconfig {path}: no kind "{shown(kind)}" is registered for version "{shown(version)}" '
                          "(a kubeconfig is apiVersion v1, kind Config)")
    return doc


def _read_yaml(text: str, path: Path) -> object:
    import yaml  # only for the YAML plainyaml does not read (anchors, flow style, block scalars, ...)

    from kubectl_pvleft.kube.plainyaml import Refused, read_yaml

    try:
        return read_yaml(text) or {}
    except Refused:
        raise  # said by _read, with the file's name
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"kubeconfig {path} cannot be read: {problem}{where}") from None
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"kubeconfig {path} cannot be read: {type(exc).__name__}") from None


def _check_extension_names(doc: Config, path: Path) -> None:
    """client-go turns every ``extensions`` list of the file (the top level's, preferences', each cluster's, user's
    and context's) into a map, and refuses the whole file at a name met twice in one list (k8s.io/client-go
    tools/clientcmd/api/v1/conversion.go, Convert_Slice_v1_NamedExtension_To_Map_string_To_runtime_Object)."""
    preferences = doc.get("preferences")
    lists: list[tuple[str, Optional[Extensions]]] = [
        ("the file's extensions", doc.get("extensions")),
        ("preferences", preferences.get("extensions") if isinstance(preferences, dict) else None)]
    for kind, name, body in _bodies(doc):
        if isinstance(body, dict):
            lists.append((f'{kind} "{shown(str(name or ""))}"', body.get("extensions")))
    for where, extensions in lists:
        seen: set[str] = set()
        for extension in extensions if isinstance(extensions, list) else ():
            name = str(extension.get("name") or "") if isinstance(extension, dict) else ""
            if name in seen:  # kubectl prints the list itself too: never here, an extension may hold a secret
                raise ConfigError(f'error loading config file "{shown(str(path))}": duplicate name "{shown(name)}" in '
                                  f"the extensions of {where}")
            seen.add(name)


def _bodies(doc: Config) -> Iterator[tuple[str, Optional[str], Optional[WithExtensions]]]:
    """Each named entry's kind, name and body (a cluster, a user or a context), in the file's order."""
    for cluster in doc.get("clusters") or ():
        if isinstance(cluster, dict):
            yield "cluster", cluster.get("name"), cluster.get("cluster")
    for user in doc.get("users") or ():
        if isinstance(user, dict):
            yield "user", user.get("name"), user.get("user")
    for context in doc.get("contexts") or ():
        if isinstance(context, dict):
            yield "context", context.get("name"), context.get("context")


def _entries(entries: Optional[list[Optional[Named]]], section: str, path: Path) -> list[Named]:
    """A section's named entries, each checked to be {name: string, <kind>: mapping}."""
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise ConfigError(f"kubeconfig {path}: {section} must be a list of named entries")
    body_key = section[:-1]
    names: set[str] = set()
    checked: list[Named] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ConfigError(f"kubeconfig {path}: {section}[{index}] must be a mapping with name and {body_key}")
        name = entry.get("name")  # a missing or null one is "" already (check_types)
        if not isinstance(name, str):
            raise ConfigError(f"kubeconfig {path}: {section}[{index}].name must be a string")
        if name in names:  # kubectl refuses the file (and prints the entries: never here, they hold secrets)
            raise ConfigError(f'error loading config file "{shown(str(path))}": duplicate name "{shown(name)}" '
                              f"in {section}")
        names.add(name)
        body = entry.get(body_key)
        if body is not None and not isinstance(body, dict):
            raise ConfigError(f'kubeconfig {path}: {body_key} "{name}" must be a mapping')
        checked.append(entry)
    return checked


# Relative file paths resolve against the folder of the file that named them: what changes is a new mapping, the
# file's own are never written to (a YAML alias may share one between entries).

def _absolute(value: object, base: Path) -> Optional[str]:
    """A relative path made absolute ("~/ca.crt" is relative, as in client-go); None for any other value."""
    return str(base / value) if isinstance(value, str) and value and not os.path.isabs(value) else None


def _cluster_absolutized(entry: NamedCluster, base: Path) -> NamedCluster:
    body = entry.get("cluster") or {}
    authority = _absolute(body.get("certificate-authority"), base)
    return {**entry, "cluster": {**body, "certificate-authority": authority}} if authority else entry


def _user_absolutized(entry: NamedAuthInfo, base: Path) -> NamedAuthInfo:
    body = entry.get("user") or {}
    changed: AuthInfo = {}
    if certificate := _absolute(body.get("client-certificate"), base):
        changed["client-certificate"] = certificate
    if key := _absolute(body.get("client-key"), base):
        changed["client-key"] = key
    if token_file := _absolute(body.get("tokenFile"), base):
        changed["tokenFile"] = token_file
    exec_config = body.get("exec")
    if isinstance(exec_config, dict):  # a relative exec command resolves against this folder
        changed["exec"] = {**exec_config, "__dir__": str(base)}
    return {**entry, "user": {**body, **changed}} if changed else entry


def _context_as_is(entry: NamedContext, base: Path) -> NamedContext:
    return entry  # a context names no file


def _first_wins(merged: list[Named], entries: list[Named], absolutized: Callable[[Named, Path], Named],
                base: Path) -> None:
    have = {entry.get("name") for entry in merged}
    for entry in entries:
        if entry.get("name") in have:
            continue
        merged.append(absolutized(entry, base))
        have.add(entry.get("name"))


def merge_kubeconfigs(paths: list[Path]) -> Merged:
    """kubectl's merge: for every named entry and for current-context, the first file that sets it wins."""
    merged: Merged = {"clusters": [], "users": [], "contexts": [], "current-context": ""}
    for path in paths:
        doc = _read(path)
        current = doc.get("current-context")
        if current is not None and not isinstance(current, str):
            raise ConfigError(f"kubeconfig {path}: current-context must be a string")
        if not merged["current-context"] and current:
            merged["current-context"] = current
        _first_wins(merged["clusters"], _entries(doc.get("clusters"), "clusters", path), _cluster_absolutized,
                    path.parent)
        _first_wins(merged["users"], _entries(doc.get("users"), "users", path), _user_absolutized, path.parent)
        _first_wins(merged["contexts"], _entries(doc.get("contexts"), "contexts", path), _context_as_is, path.parent)
    return merged
