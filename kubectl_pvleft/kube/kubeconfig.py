"""Where to connect and as whom, chosen the way kubectl chooses it.

kubectl merges every file of a ``KUBECONFIG`` list with "first file wins" for each named cluster,
user and context and for ``current-context``; the merge is done here, then the chosen context is
resolved into a ``Connection``: the server, the TLS material, and how to authenticate. Nothing is
ever written back, and no credential is ever part of a message.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import msgspec

from kubectl_pvleft import text
from kubectl_pvleft.errors import ConfigError
from kubectl_pvleft.kube.kubeconfig_files import is_file
from kubectl_pvleft.kube.kubeconfig_files import kubeconfig_files as kubeconfig_files
from kubectl_pvleft.kube.kubeconfig_files import merge_kubeconfigs as merge_kubeconfigs
from kubectl_pvleft.kube.kubeconfig_files import shown_path as shown_path
from kubectl_pvleft.kube.proxy import checked_proxy_url

if TYPE_CHECKING:
    from collections.abc import Mapping

    from kubectl_pvleft.kube.kubeconfig_files import Merged, Named
    from kubectl_pvleft.kube.kubeconfig_types import AuthInfo, AuthProviderConfig, Cluster, Context, ExecConfig

# Where a Pod finds its ServiceAccount token, CA and namespace; PVLEFT_SERVICEACCOUNT_DIR points elsewhere
# (a sidecar that mounts the projected volume at another path, and the in-cluster tests).
SERVICEACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"  # compiled at first use, by re



_SECRET_FIELDS = frozenset(("token", "password", "cert_data", "key_data"))


class _Frozen(msgspec.Struct, frozen=True):
    """A frozen record; msgspec builds the class in C (a frozen dataclass costs ~1 ms of start-up each)."""

    def __repr__(self) -> str:  # never a secret in a repr
        shown = (f"{name}={getattr(self, name)!r}" for name in self.__struct_fields__ if name not in _SECRET_FIELDS)
        return f"{type(self).__name__}({', '.join(shown)})"


class Selection(_Frozen, frozen=True):
    """The kubectl flags that pick a server and identity (flags win over the kubeconfig)."""

    kubeconfig: Optional[str] = None
    context: Optional[str] = None
    cluster: Optional[str] = None
    user: Optional[str] = None
    namespace: Optional[str] = None
    impersonate_user: Optional[str] = None
    impersonate_uid: Optional[str] = None
    impersonate_groups: tuple[str, ...] = ()
    # Connection flags, kubectl's meaning: each overrides the kubeconfig's value.
    server: Optional[str] = None
    token: Optional[str] = None  # never in a repr (_Frozen)
    certificate_authority: Optional[str] = None
    client_certificate: Optional[str] = None
    client_key: Optional[str] = None
    insecure_skip_tls_verify: Optional[bool] = None
    tls_server_name: Optional[str] = None
    username: Optional[str] = None
    password: Optional[str] = None


class TLS(_Frozen, frozen=True):
    """What the TLS handshake needs. Key material stays in memory (see transport.py)."""

    ca_data: Optional[bytes] = None  # PEM: the cluster's own CA, else the system's trust store
    insecure: bool = False
    server_name: Optional[str] = None
    cert_data: Optional[bytes] = None
    key_data: Optional[bytes] = None


class Auth(_Frozen, frozen=True):
    """How to authenticate, as the kubeconfig says; credentials.py turns it into headers."""

    token: Optional[str] = None
    token_file: Optional[str] = None
    username: Optional[str] = None
    password: Optional[str] = None
    exec: Optional[ExecConfig] = None
    exec_dir: Optional[str] = None  # the folder of the kubeconfig that defined the exec plugin
    auth_provider: Optional[AuthProviderConfig] = None
    user_name: str = ""  # the kubeconfig user entry, to name in messages


class Connection(_Frozen, frozen=True):
    server: str
    namespace: str
    context: Optional[str]
    tls: TLS = TLS()
    auth: Auth = Auth()
    impersonate_user: Optional[str] = None
    impersonate_uid: Optional[str] = None
    impersonate_groups: tuple[str, ...] = ()
    impersonate_extra: tuple[tuple[str, tuple[str, ...]], ...] = ()  # as-user-extra: (key, values), in file order
    sources: tuple[str, ...] = ()
    in_cluster: bool = False
    proxy_url: Optional[str] = None  # the cluster's proxy-url, as written (never shown: it may hold credentials)
    disable_compression: bool = False  # the cluster's disable-compression
    # The kubeconfig user whose credentials are not sent because the server is not TLS (client-go merges a
    # user's credentials only into a TLS config), for the one warning line that says so; None otherwise.
    withheld_from: Optional[str] = None
    notes: tuple[str, ...] = ()  # warnings about how the request goes out, said once on stderr


def _named(entries: list[Named], name: str) -> Optional[Named]:
    return next((e for e in entries if e.get("name") == name), None)


def _string(body: Mapping[str, object], key: str, where: str) -> Optional[str]:
    value = body.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ConfigError(f"kubeconfig {where}: {key} must be a string")
    return value


def _strings(body: Mapping[str, object], key: str, where: str) -> tuple[str, ...]:
    value = body.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"kubeconfig {where}: {key} must be a list of strings")
    return tuple(value)


def _extra(user: AuthInfo, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    value = user.get("as-user-extra")
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, list)
                                              and all(isinstance(x, str) for x in v) for k, v in value.items()):
        raise ConfigError(f"kubeconfig {where}: as-user-extra must map names to lists of strings")
    return tuple((k, tuple(v)) for k, v in value.items() if v)


def _pem(body: Mapping[str, object], data_key: str, file_key: str, where: str) -> Optional[bytes]:
    """Inline base64 data wins over a file, as in client-go."""
    data = _string(body, data_key, where)
    if data is not None:
        try:  # strict, as Go's decoder is (it skips only line breaks): "!!!!" must not mean "no CA"
            return base64.b64decode(data.replace("\r", "").replace("\n", ""), validate=True)
        except (binascii.Error, ValueError):
            raise ConfigError(f"kubeconfig {where}: {data_key} is not valid base64") from None
    name = _string(body, file_key, where)
    return _file(name, f"{where}: {file_key}") if name else None


def _file(name: str, what: str) -> bytes:
    try:
        return Path(name).read_bytes()
    except (OSError, ValueError) as exc:  # ValueError: a path with NUL in it
        raise ConfigError(f"{what} {shown_path(name)}: {getattr(exc, 'strerror', None) or 'cannot be read'}") from None


def namespace_problem(namespace: str) -> Optional[str]:
    """Why kubectl would refuse this namespace before any request (it cannot be a path segment or an
    RFC 1123 label), or None. A namespace of ".." would otherwise turn a namespaced URL cluster-wide."""
    if namespace in (".", ".."):
        return f"may not be '{namespace}'"
    for bad in ("/", "%"):
        if bad in namespace:
            return f"may not contain '{bad}'"
    if len(namespace) > 63 or not re.fullmatch(_DNS1123_LABEL, namespace):
        return ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', start and "
                "end with an alphanumeric character, and be at most 63 characters")
    return None


def _checked_namespace(namespace: Optional[str], where: str) -> Optional[str]:
    if namespace and (problem := namespace_problem(namespace)):
        ascii_only = namespace.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
        raise ConfigError(f'invalid namespace "{text.shown(ascii_only)}": [{problem}] (the namespace of {where})')
    return namespace


def checked_server(server: str, where: str) -> str:
    """The server URL as kubectl accepts it: http(s), a host, a numeric port; else kubectl's own message
    (with any user:password in it left out)."""
    from urllib.parse import urlsplit

    if "://" not in server:
        # client-go decides the scheme of a bare host:port before it has read any TLS setting (a CA, a client
        # certificate or insecure-skip-tls-verify come later, and only for a TLS server): it is plain HTTP.
        server = "http://" + server
    shown = server
    try:
        parts = urlsplit(server)
        if parts.password is not None or parts.username is not None:
            shown = parts._replace(netloc="<redacted>@" + parts.netloc.rsplit("@", 1)[1]).geturl()
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number in range)
        valid = bool(parts.hostname) and not any(c.isspace() or not c.isprintable() for c in server)
    except ValueError:
        valid = False
    if not valid:
        raise ConfigError(f'{where}: host must be a URL or a host:port pair: "{text.shown(shown)}"')
    if parts.scheme not in ("http", "https"):
        raise ConfigError(f'{where}: unsupported protocol scheme "{parts.scheme}" in "{shown}"')
    return server.rstrip("/")


def _bool(value: object, where: str, key: str = "insecure-skip-tls-verify") -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    raise ConfigError(f"kubeconfig {where}: {key} must be true or false")


def load_connection(selection: Selection) -> Connection:
    """Resolve the flags and the kubeconfig into a Connection and the namespace to use."""
    paths = kubeconfig_files(selection.kubeconfig)
    if not paths:
        if selection.server:  # -s with no kubeconfig at all: kubectl's flags alone make a config
            return _from_flags({}, {}, None, selection, ())
        return _in_cluster(selection)
    doc = merge_kubeconfigs(paths)
    context_name = selection.context or doc.get("current-context")
    if not context_name:
        if selection.server:
            return _from_flags({}, {}, None, selection, tuple(map(str, paths)))
        raise ConfigError("no context chosen: the kubeconfig has no current-context; pass --context")
    context, cluster_name, cluster, user_name, user, missing = _chosen(doc, context_name, selection)
    namespace = _string(context, "namespace", f'context "{context_name}"')
    return _from_flags(cluster, user, context_name, selection, tuple(map(str, paths)),
                       cluster_label=f'cluster "{cluster_name}"', namespace=namespace, user_name=user_name,
                       missing=missing)


def _context(doc: Merged, name: str) -> Context:
    entry = _named(doc["contexts"], name)
    if entry is None:
        raise ConfigError(f'context "{name}" does not exist in the kubeconfig')
    return entry.get("context") or {}


def _chosen(doc: Merged, context_name: str,
            selection: Selection) -> tuple[Context, str, Cluster, str, AuthInfo, Optional[str]]:
    """The context, the cluster it names (or the flags name instead) by name and body, the user by name and body,
    and why that user is missing (None when it is not)."""
    context = _context(doc, context_name)
    cluster_name = selection.cluster or _string(context, "cluster", f'context "{context_name}"') or ""
    user_name = selection.user or _string(context, "user", f'context "{context_name}"') or ""
    cluster_entry = _named(doc["clusters"], cluster_name)
    if cluster_entry is None and not selection.server:
        raise ConfigError(f'cluster "{cluster_name}" of context "{context_name}" does not exist in the kubeconfig')
    user_entry = _named(doc["users"], user_name) if user_name else None
    if user_entry is None and selection.user:  # named by --user: kubectl requires it
        raise ConfigError(f'auth info "{user_name}" does not exist')
    # A context's user the kubeconfig does not define: kubectl carries on without credentials (asking for a user
    # name and password on a terminal); here the requests go out anonymous, and a warning says so.
    missing = None
    if user_name and user_entry is None:
        missing = f'user "{user_name}" of context "{context_name}" is not in the kubeconfig'
    cluster, user = (cluster_entry or {}).get("cluster") or {}, (user_entry or {}).get("user") or {}
    return context, cluster_name, cluster, user_name, user, missing  # read, never written to: the file's own


def _from_flags(cluster: Cluster, user: AuthInfo, context_name: Optional[str], selection: Selection,
                sources: tuple[str, ...], *, cluster_label: str = "flags", namespace: Optional[str] = None,
                user_name: str = "", missing: Optional[str] = None) -> Connection:
    user_label = f'user "{user_name}"' if user_name else "user"
    server = selection.server or _string(cluster, "server", cluster_label)
    if not server:
        raise ConfigError(f"{cluster_label} has no server" if cluster_label != "flags" else
                          "no server: pass --server or a kubeconfig")
    server = checked_server(server, "--server" if selection.server else cluster_label)
    # client-go merges kubectl's --as, --as-uid and --as-group over the user's as, as-uid and as-groups (a flag
    # given wins, the kubeconfig fills the rest); as-user-extra comes from the kubeconfig alone.
    impersonate_user = selection.impersonate_user or _string(user, "as", user_label)
    impersonate_uid = selection.impersonate_uid or _string(user, "as-uid", user_label)
    impersonate_groups = selection.impersonate_groups or _strings(user, "as-groups", user_label)
    impersonate_extra = _extra(user, user_label)
    if not impersonate_user and (impersonate_uid or impersonate_groups or impersonate_extra):
        raise ConfigError(f"requesting uid, groups or user-extra for {user_name or '<unnamed>'} without impersonating "
                          "a user")  # kubectl's words, before any request
    _validate(cluster, user, selection, cluster_label, user_name)
    tls, auth = _tls(cluster, user, selection, cluster_label, user_label), _auth(user, selection, user_label, user_name)
    withheld = None
    if not server.startswith("https://"):
        # Never a credential over a link that is not TLS: client-go merges the user's token, password, client
        # certificate, exec plugin and auth provider only into a TLS config, so kubectl sends none of them here.
        if auth != Auth(user_name=user_name) or tls.cert_data is not None:
            withheld = user_label if user_name else "the flags"
        tls, auth = TLS(), Auth(user_name=user_name)
    return Connection(
        server=server, context=context_name,
        namespace=selection.namespace or _checked_namespace(namespace, f'context "{context_name}"') or "default",
        tls=tls, auth=auth, withheld_from=withheld,
        notes=(f"{missing}: requests go out anonymous (kubectl would ask for a user name and password)",)
        if missing else (),
        impersonate_user=impersonate_user, impersonate_uid=impersonate_uid, impersonate_groups=impersonate_groups,
        impersonate_extra=impersonate_extra, sources=sources,
        proxy_url=checked_proxy_url(_string(cluster, "proxy-url", cluster_label), cluster_label),
        disable_compression=_bool(cluster.get("disable-compression"), cluster_label, "disable-compression"),
    )


def _validate(cluster: Cluster, user: AuthInfo, selection: Selection, cluster_label: str,
              user_name: str) -> None:
    """What client-go's validation refuses in the merged config (the flags over the kubeconfig), in its words,
    before any request: two ways to authenticate, or the same material given twice."""
    def given(flag: Optional[str], key: str) -> bool:
        return bool(flag) or bool(user.get(key))

    problems = []
    methods = [name for name, present in (
        ("token", given(selection.token, "token")),
        ("basicAuth", given(selection.username, "username") or given(selection.password, "password"))) if present]
    cluster_name = cluster_label.split('"')[1] if '"' in cluster_label else cluster_label
    if not (selection.certificate_authority or selection.insecure_skip_tls_verify) \
            and cluster.get("certificate-authority") and cluster.get("certificate-authority-data"):
        problems.append(f"certificate-authority-data and certificate-authority are both specified for {cluster_name}. "
                        "certificate-authority-data will override.")
    if not selection.client_certificate and user.get("client-certificate") and user.get("client-certificate-data"):
        problems.append(f"client-cert-data and client-cert are both specified for {user_name}. client-cert-data will "
                        "override.")
    if not selection.client_key and user.get("client-key") and user.get("client-key-data"):
        problems.append(f"client-key-data and client-key are both specified for {user_name}; client-key-data will "
                        "override")
    if isinstance(user.get("exec"), dict) and user.get("auth-provider") is not None:
        problems.append(f"authProvider cannot be provided in combination with an exec plugin for {user_name}")
    if len(methods) > 1:
        problems.append(f"more than one authentication method found for {user_name}; found [{' '.join(methods)}], "
                        "only one is allowed")
    if problems:
        raise ConfigError("invalid configuration: " + " ".join(problems))


def _tls(cluster: Cluster, user: AuthInfo, selection: Selection, cluster_label: str,
         user_label: str) -> TLS:
    # kubectl: --insecure-skip-tls-verify or --certificate-authority given as flags replace all three
    # kubeconfig settings together (so a flag CA turns a kubeconfig's insecure off, and vice versa).
    if selection.certificate_authority or selection.insecure_skip_tls_verify:
        insecure = bool(selection.insecure_skip_tls_verify)
    else:
        insecure = _bool(cluster.get("insecure-skip-tls-verify"), cluster_label)
    if selection.certificate_authority:
        ca = _file(selection.certificate_authority, "--certificate-authority")
    elif selection.insecure_skip_tls_verify:
        ca = None  # the flag turns verification off; a kubeconfig CA would only be refused below
    else:
        ca = _pem(cluster, "certificate-authority-data", "certificate-authority", cluster_label)
    if insecure and ca is not None:
        raise ConfigError("specifying a root certificates file with the insecure flag is not allowed")
    cert = (_file(selection.client_certificate, "--client-certificate") if selection.client_certificate
            else _pem(user, "client-certificate-data", "client-certificate", user_label))
    key = (_file(selection.client_key, "--client-key") if selection.client_key
           else _pem(user, "client-key-data", "client-key", user_label))
    if (cert is None) != (key is None):
        raise ConfigError(f"{user_label} has a client certificate without its key, or a key without its certificate")
    return TLS(ca_data=ca, insecure=insecure, cert_data=cert, key_data=key,
               server_name=selection.tls_server_name or _string(cluster, "tls-server-name", cluster_label))


def _auth(user: AuthInfo, selection: Selection, user_label: str, user_name: str) -> Auth:
    exec_config = user.get("exec")
    if exec_config is not None and not isinstance(exec_config, dict):
        raise ConfigError(f"kubeconfig {user_label}: exec must be a mapping")
    provider = user.get("auth-provider")
    if provider is not None and not isinstance(provider, dict):
        raise ConfigError(f"kubeconfig {user_label}: auth-provider must be a mapping")
    if provider is not None:
        # kubectl decodes it into {name: string, config: map[string]string}: any other shape is a broken file.
        if provider.get("name") is not None and not isinstance(provider["name"], str):
            raise ConfigError(f"kubeconfig {user_label}: auth-provider name must be a string")
        config = provider.get("config")
        if config is not None and (not isinstance(config, dict)
                                   or not all(isinstance(v, str) or v is None for v in config.values())):
            raise ConfigError(f"kubeconfig {user_label}: auth-provider config must be a mapping of strings")
    exec_dir = None
    if exec_config is not None:
        exec_config = exec_config.copy()
        exec_dir = exec_config.pop("__dir__", None)
    token = selection.token or _string(user, "token", user_label)
    return Auth(
        token=token,
        # Both in the kubeconfig: client-go reads the file at each request and falls back to the inline token
        # only when the file cannot be read. A --token flag replaces both.
        token_file=None if selection.token else _string(user, "tokenFile", user_label),
        username=selection.username or _string(user, "username", user_label),
        password=selection.password or _string(user, "password", user_label),
        exec=None if selection.token else exec_config,
        exec_dir=exec_dir,
        auth_provider=None if selection.token else provider,
        user_name=user_name,
    )


def _in_cluster(selection: Selection) -> Connection:
    if selection.context or selection.cluster or selection.user:
        raise ConfigError("no kubeconfig found (set KUBECONFIG or pass --kubeconfig) to choose a context, cluster or user from")
    account = Path(os.environ.get("PVLEFT_SERVICEACCOUNT_DIR") or SERVICEACCOUNT_DIR)
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    token_file = account / "token"
    if not host or not port or not is_file(token_file):
        raise ConfigError("no kubeconfig found (set KUBECONFIG or pass --kubeconfig) and not running inside a cluster")
    namespace = selection.namespace or _account_namespace(account)
    ca_path = account / "ca.crt"
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    return Connection(
        server=checked_server(selection.server or server, "--server" if selection.server else "in-cluster server"),
        namespace=_checked_namespace(namespace, f"{account / 'namespace'}") or "default",
        context=None,
        tls=TLS(ca_data=_file(str(ca_path), "in-cluster CA") if is_file(ca_path) else None),
        # client-go re-reads the projected token (it rotates); credentials.py does the same.
        auth=Auth(token=selection.token, token_file=None if selection.token else str(token_file),
                  user_name="serviceaccount"),
        impersonate_user=selection.impersonate_user, impersonate_uid=selection.impersonate_uid,
        impersonate_groups=selection.impersonate_groups, in_cluster=True,
    )


def _account_namespace(account: Path) -> str:
    try:
        return (account / "namespace").read_text().strip()
    except OSError:
        return "default"
