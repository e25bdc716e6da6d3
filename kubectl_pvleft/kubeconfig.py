"""Where to connect and as whom, chosen the way kubectl chooses it.

kubectl merges every file of a ``KUBECONFIG`` list with "first file wins" for each named cluster,
user and context and for ``current-context``; the Python client's own merger differs, so the merge
is done here and the client is only handed the one merged document. Nothing is ever written back.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml
from kubernetes.client import Configuration
from kubernetes.config import incluster_config
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import KubeConfigLoader

from kubectl_pvleft.errors import ConfigError

# Where a Pod finds its ServiceAccount token, CA and namespace; PVLEFT_SERVICEACCOUNT_DIR points elsewhere
# (a sidecar that mounts the projected volume at another path, and the in-cluster tests).
SERVICEACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")

# Fields that hold file paths, which kubectl resolves relative to the file that named them.
_PATH_FIELDS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
}


@dataclass(frozen=True)
class Selection:
    """The kubectl flags that pick a server and identity."""

    kubeconfig: Optional[str] = None
    context: Optional[str] = None
    cluster: Optional[str] = None
    user: Optional[str] = None
    namespace: Optional[str] = None
    impersonate_user: Optional[str] = None
    impersonate_groups: tuple[str, ...] = ()


@dataclass
class Connection:
    configuration: Configuration
    namespace: str
    context: Optional[str]
    server: str
    impersonate_user: Optional[str] = None
    impersonate_groups: tuple[str, ...] = ()
    sources: list[str] = field(default_factory=list)


def kubeconfig_files(explicit: Optional[str], env: Optional[str] = None) -> list[Path]:
    """The files kubectl would read: --kubeconfig alone, else every existing KUBECONFIG entry, else ~/.kube/config."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"kubeconfig {explicit}: no such file")
        return [path]
    env = os.environ.get("KUBECONFIG") if env is None else env
    if env:
        # kubectl skips list entries that do not exist, and reads each file once.
        seen: list[Path] = []
        for entry in env.split(os.pathsep):
            if entry and Path(entry).expanduser().is_file() and Path(entry).expanduser() not in seen:
                seen.append(Path(entry).expanduser())
        return seen
    default = Path.home() / ".kube" / "config"
    return [default] if default.is_file() else []


def _read(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"kubeconfig {path} cannot be read: {reason}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"kubeconfig {path} is not a kubeconfig document")
    return doc


def _absolutize(section: str, entry: dict[str, Any], base: Path) -> None:
    body = entry.get(section[:-1]) or {}
    for key in _PATH_FIELDS.get(section, ()):
        value = body.get(key)
        if value and not os.path.isabs(os.path.expanduser(value)):
            body[key] = str(base / value)


def merge_kubeconfigs(paths: list[Path]) -> dict[str, Any]:
    """kubectl's merge: for every named entry and for current-context, the first file that sets it wins."""
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": [], "current-context": ""}
    for path in paths:
        doc = _read(path)
        if not merged["current-context"] and doc.get("current-context"):
            merged["current-context"] = doc["current-context"]
        for section in ("clusters", "users", "contexts"):
            have = {e.get("name") for e in merged[section]}
            for entry in doc.get(section) or ():
                if not isinstance(entry, dict) or entry.get("name") in have:
                    continue
                entry = copy.deepcopy(entry)
                _absolutize(section, entry, path.parent)
                merged[section].append(entry)
                have.add(entry.get("name"))
    return merged


def _named(doc: dict[str, Any], section: str, name: str) -> Optional[dict[str, Any]]:
    return next((e for e in doc.get(section) or () if e.get("name") == name), None)


def load_connection(selection: Selection) -> Connection:
    """Resolve the flags into a client Configuration and the namespace to use."""
    paths = kubeconfig_files(selection.kubeconfig)
    if not paths:
        return _in_cluster(selection)
    doc = merge_kubeconfigs(paths)
    context_name = selection.context or doc.get("current-context")
    if not context_name:
        raise ConfigError("no context chosen: the kubeconfig has no current-context; pass --context")
    context_entry = _named(doc, "contexts", context_name)
    if context_entry is None:
        raise ConfigError(f'context "{context_name}" does not exist in the kubeconfig')
    context = dict(context_entry.get("context") or {})
    if selection.cluster:
        context["cluster"] = selection.cluster
    if selection.user:
        context["user"] = selection.user
    cluster_entry = _named(doc, "clusters", context.get("cluster") or "")
    if cluster_entry is None:
        raise ConfigError(f'cluster "{context.get("cluster")}" of context "{context_name}" does not exist in the kubeconfig')
    if context.get("user") and _named(doc, "users", context["user"]) is None:
        raise ConfigError(f'user "{context["user"]}" of context "{context_name}" does not exist in the kubeconfig')
    server = (cluster_entry.get("cluster") or {}).get("server")
    if not server:
        raise ConfigError(f'cluster "{cluster_entry.get("name")}" has no server')

    # Hand the client a document with exactly the chosen context, so overrides need no special casing.
    chosen = copy.deepcopy(doc)
    chosen["contexts"] = [{"name": context_name, "context": context}]
    chosen["current-context"] = context_name
    if not context.get("user"):
        chosen["users"] = [{"name": "", "user": {}}]
        context["user"] = ""
    configuration = Configuration()
    try:
        KubeConfigLoader(config_dict=chosen, active_context=context_name).load_and_set(configuration)
    except ConfigException as exc:
        raise ConfigError(f"kubeconfig: {exc}") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"kubeconfig context {context_name}: {exc}") from None
    return Connection(
        configuration=configuration,
        namespace=selection.namespace or context.get("namespace") or "default",
        context=context_name,
        server=configuration.host,
        impersonate_user=selection.impersonate_user,
        impersonate_groups=selection.impersonate_groups,
        sources=[str(p) for p in paths],
    )


def _in_cluster(selection: Selection) -> Connection:
    if selection.context or selection.cluster or selection.user:
        raise ConfigError("no kubeconfig found (set KUBECONFIG or pass --kubeconfig) to choose a context, cluster or user from")
    configuration = Configuration()
    account = Path(os.environ.get("PVLEFT_SERVICEACCOUNT_DIR") or SERVICEACCOUNT_DIR)
    try:
        incluster_config.InClusterConfigLoader(
            token_filename=str(account / "token"), cert_filename=str(account / "ca.crt"),
        ).load_and_set(configuration)
    except ConfigException:
        raise ConfigError(
            "no kubeconfig found (set KUBECONFIG or pass --kubeconfig) and not running inside a cluster"
        ) from None
    namespace = selection.namespace
    if not namespace:
        try:
            namespace = (account / "namespace").read_text().strip()
        except OSError:
            namespace = "default"
    return Connection(
        configuration=configuration,
        namespace=namespace or "default",
        context=None,
        server=configuration.host,
        impersonate_user=selection.impersonate_user,
        impersonate_groups=selection.impersonate_groups,
    )
