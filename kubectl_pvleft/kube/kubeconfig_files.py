"""Which kubeconfig files kubectl reads (--kubeconfig, else $KUBECONFIG's list, else ~/.kube/config), each read and
checked as kubectl reads it, and merged as client-go merges them: the first file wins a map key and
current-context; relative paths resolve against the file that named them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

from kubectl_pvleft.errors import ConfigError
from kubectl_pvleft.kube.kubeconfig_types import check_types
from kubectl_pvleft.text import shown

# Fields that hold file paths, which kubectl resolves relative to the file that named them.
_PATH_FIELDS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
}


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


def _read(path: Path) -> dict[str, Any]:
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
        doc = read_plain(text)
        if doc is None:
            doc = _read_yaml(text, path)
    except Refused as exc:
        raise ConfigError(f"kubeconfig {path} cannot be read: {shown(str(exc))}") from None  # keys escaped
    if not isinstance(doc, dict):
        raise ConfigError(f"kubeconfig {path} is not a kubeconfig document (expected a mapping at the top)")
    check_types(doc, path)
    _check_extension_names(doc, path)
    version, kind = doc.get("apiVersion") or "v1", doc.get("kind") or "Config"  # empty: kubectl's defaults
    if (version, kind) != ("v1", "Config"):
        raise ConfigError(f'kubeconfig {path}: no kind "{shown(kind)}" is registered for version "{shown(version)}" '
                          "(a kubeconfig is apiVersion v1, kind Config)")
    return doc


def _read_yaml(text: str, path: Path) -> Any:
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


def _check_extension_names(doc: dict[str, Any], path: Path) -> None:
    """client-go turns every ``extensions`` list of the file (the top level's, preferences', each cluster's, user's
    and context's) into a map, and refuses the whole file at a name met twice in one list (k8s.io/client-go
    tools/clientcmd/api/v1/conversion.go, Convert_Slice_v1_NamedExtension_To_Map_string_To_runtime_Object)."""
    preferences = doc.get("preferences")
    lists: list[tuple[str, Any]] = [("the file's extensions", doc.get("extensions")),
                                    ("preferences", preferences.get("extensions") if isinstance(preferences, dict) else None)]
    for section in ("clusters", "users", "contexts"):
        entries = doc.get(section)
        for entry in entries if isinstance(entries, list) else ():
            body = entry.get(section[:-1]) if isinstance(entry, dict) else None
            if isinstance(body, dict):
                lists.append((f'{section[:-1]} "{shown(str(entry.get("name") or ""))}"', body.get("extensions")))
    for where, extensions in lists:
        seen: set[str] = set()
        for extension in extensions if isinstance(extensions, list) else ():
            name = str(extension.get("name") or "") if isinstance(extension, dict) else ""
            if name in seen:  # kubectl prints the list itself too: never here, an extension may hold a secret
                raise ConfigError(f'error loading config file "{shown(str(path))}": duplicate name "{shown(name)}" in '
                                  f"the extensions of {where}")
            seen.add(name)


def _entries(doc: dict[str, Any], section: str, path: Path) -> list[dict[str, Any]]:
    """A section's named entries, each checked to be {name: string, <kind>: mapping}."""
    entries = doc.get(section)
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise ConfigError(f"kubeconfig {path}: {section} must be a list of named entries")
    body_key = section[:-1]
    names: set[str] = set()
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ConfigError(f"kubeconfig {path}: {section}[{index}] must be a mapping with name and {body_key}")
        if entry.get("name") is None:  # a missing or null name is "" to kubectl, as in Go
            entry["name"] = ""
        if not isinstance(entry.get("name"), str):
            raise ConfigError(f"kubeconfig {path}: {section}[{index}].name must be a string")
        if entry["name"] in names:  # kubectl refuses the file (and prints the entries: never here, they hold secrets)
            raise ConfigError(f'error loading config file "{shown(str(path))}": duplicate name "{shown(entry["name"])}" '
                              f"in {section}")
        names.add(entry["name"])
        body = entry.get(body_key)
        if body is not None and not isinstance(body, dict):
            raise ConfigError(f'kubeconfig {path}: {body_key} "{entry["name"]}" must be a mapping')
    return entries


def _absolutized(section: str, entry: dict[str, Any], base: Path) -> dict[str, Any]:
    """The entry with its relative file paths made absolute against the file's folder. What changes is a new
    mapping: the file's own are never written to (a YAML alias may share one between entries)."""
    key = section[:-1]
    body = entry.get(key) or {}
    changed: dict[str, Any] = {}
    for name in _PATH_FIELDS.get(section, ()):
        value = body.get(name)
        if isinstance(value, str) and value and not os.path.isabs(value):  # "~/ca.crt" is relative, as in client-go
            changed[name] = str(base / value)
    if section == "users" and isinstance(body.get("exec"), dict):
        changed["exec"] = {**body["exec"], "__dir__": str(base)}  # a relative exec command resolves against this folder
    return {**entry, key: {**body, **changed}} if changed else entry


def merge_kubeconfigs(paths: list[Path]) -> dict[str, Any]:
    """kubectl's merge: for every named entry and for current-context, the first file that sets it wins."""
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": [], "current-context": ""}
    for path in paths:
        doc = _read(path)
        current = doc.get("current-context")
        if current is not None and not isinstance(current, str):
            raise ConfigError(f"kubeconfig {path}: current-context must be a string")
        if not merged["current-context"] and current:
            merged["current-context"] = current
        for section in ("clusters", "users", "contexts"):
            have = {e.get("name") for e in merged[section]}
            for entry in _entries(doc, section, path):
                if entry["name"] in have:
                    continue
                merged[section].append(_absolutized(section, entry, path.parent))
                have.add(entry["name"])
    return merged
