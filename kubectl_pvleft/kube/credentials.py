"""Authentication the way kubectl does it: bearer tokens (inline, from a file, in-cluster), basic auth,
client certificates, exec credential plugins and the oidc auth provider (oidc.py: refreshed in memory). The
removed gcp/azure auth providers get kubectl's own explanation.

Every value read here is a secret: none of them is ever part of an exception message or a log line.
Tokens are trimmed of surrounding whitespace, as client-go trims a token file (``echo`` and
``kubectl create token > f`` both leave a newline).
"""

from __future__ import annotations

import base64
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Optional

import msgspec

from kubectl_pvleft.deadline import Deadline
from kubectl_pvleft.errors import ConfigError, CredentialError
from kubectl_pvleft.kube.kubeconfig import Auth, Connection, shown_path

if TYPE_CHECKING:
    import subprocess
    from typing import TypedDict, TypeGuard

    from kubectl_pvleft.kube.kubeconfig_types import ExecConfig
    from kubectl_pvleft.kube.oidc import OIDCProvider

    class ExecCredentialStatus(TypedDict, total=False):
        """The fields read from an ExecCredential's status (client.authentication.k8s.io), each a string or null."""

        token: Optional[str]
        clientCertificateData: Optional[str]
        clientKeyData: Optional[str]
        expirationTimestamp: Optional[str]

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
TOKEN_FILE_REFRESH_SECONDS = 60.0  # client-go re-reads a token file (a rotating projected token) each minute
EXEC_TIMEOUT_SECONDS = 60.0
PLUGIN_DOCS = "https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins"

REMOVED_PROVIDERS = {
    "gcp": ('The gcp auth plugin has been removed. Please use the "gke-gcloud-auth-plugin" kubectl/client-go '
            "credential plugin instead. See https://cloud.google.com/blog/products/containers-kubernetes/"
            "kubectl-auth-changes-in-gke for further details"),
    "azure": ('The azure auth plugin has been removed. Please use the "kubelogin" kubectl/client-go credential '
              f"plugin instead. See {PLUGIN_DOCS} for further details"),
}


class Issued(msgspec.Struct):
    """What a credential source gives for one request: a header value and/or a client certificate."""

    authorization: Optional[str] = None
    cert_data: Optional[bytes] = None
    key_data: Optional[bytes] = None
    expires: Optional[float] = None  # time.time() after which it must be fetched again

    def __repr__(self) -> str:  # the credential itself is never shown
        return f"Issued(expires={self.expires!r})"


def clean_token(token: str, where: str) -> str:
    """Trim as client-go does, and refuse a token that cannot be an HTTP header value (never echo it)."""
    token = token.strip()
    if not token:
        raise ConfigError(f"{where} is empty")
    if any(ord(c) < 0x21 or ord(c) > 0x7E for c in token):
        raise ConfigError(f"{where} contains characters that are not allowed in an HTTP header (the token is not shown)")
    return token


def header_safe(value: str, what: str) -> str:
    """Impersonation names and the like: one header line each, so CR, LF and NUL are refused."""
    if any(c in value for c in "\r\n\x00"):
        raise ConfigError(f"{what} contains a line break or NUL, which cannot be sent in an HTTP header")
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise ConfigError(f"{what} contains characters that cannot be sent in an HTTP header") from None
    return value


class Credentials:
    """The credential source of one Connection; thread-safe (watch streams run in threads)."""

    def __init__(self, connection: Connection, interactive: Optional[bool] = None,
                 log: Optional[Callable[[str], None]] = None) -> None:
        self._auth = connection.auth
        self._oidc: Optional[OIDCProvider] = None
        self._connection = connection
        self._lock = threading.Lock()
        self._cached: Optional[Issued] = None
        self._interactive = sys.stdin.isatty() if interactive is None else interactive
        provider = self._auth.auth_provider
        if provider is not None:
            name = provider.get("name")
            if name in REMOVED_PROVIDERS:
                raise CredentialError(REMOVED_PROVIDERS[name])
            if name != "oidc":
                raise CredentialError(f'no Auth Provider found for name "{name}"')
            from kubectl_pvleft.kube.oidc import provider_for  # oidc users only

            # Made even when a token wins (client-go builds the provider, and refuses one without an issuer).
            self._oidc = provider_for(dict(provider.get("config") or {}), self._who(), log)

    @property
    def uses_client_certificate_from_plugin(self) -> bool:
        return self._auth.exec is not None

    def issue(self, force: bool = False, deadline: Optional[Deadline] = None) -> Issued:
        """The credential for the next request; cached until it expires (or ``force`` after a 401)."""
        with self._lock:
            now = time.time()
            if self._cached is not None and not force and (self._cached.expires is None or now < self._cached.expires):
                return self._cached
            self._cached = self._fetch(deadline or Deadline())
            return self._cached

    def _fetch(self, deadline: Deadline) -> Issued:
        auth = self._auth
        if auth.token_file:
            try:
                return self._token_file(auth.token_file)
            except ConfigError:
                if not auth.token:
                    raise
        if auth.token:
            return Issued(authorization="Bearer " + clean_token(auth.token, f"the token of {self._who()}"))
        if auth.exec is not None:
            return run_exec_plugin(auth, self._connection, self._interactive, deadline)
        if self._oidc is not None:  # the id-token, refreshed in memory when it has expired (oidc.py)
            token, expires = self._oidc.token(deadline)
            return Issued(authorization="Bearer " + clean_token(token, f"the oidc id-token of {self._who()}"),
                          expires=expires)
        if auth.username is not None or auth.password is not None:
            pair = f"{auth.username or ''}:{auth.password or ''}".encode()
            return Issued(authorization="Basic " + base64.b64encode(pair).decode("ascii"))
        return Issued()

    def _token_file(self, path: str) -> Issued:
        try:
            with open(path, "rb") as handle:
                raw = handle.read()
        except (OSError, ValueError) as exc:  # ValueError: a path with NUL in it
            raise ConfigError(f"token file {shown_path(path)}: {getattr(exc, 'strerror', None) or 'cannot be read'}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"token file {shown_path(path)} is not text") from None
        token = clean_token(text, f"the token in {shown_path(path)}")
        return Issued(authorization="Bearer " + token, expires=time.time() + TOKEN_FILE_REFRESH_SECONDS)

    def _who(self) -> str:
        return f'user "{self._auth.user_name}"' if self._auth.user_name else "the kubeconfig user"


# -- exec credential plugins ---------------------------------------------------------------------------

def _exec_command(config: ExecConfig, base_dir: Optional[str]) -> str:
    command = config.get("command")
    if not isinstance(command, str) or not command:
        raise CredentialError("exec plugin: the kubeconfig names no command")
    # kubectl resolves a relative command that contains a path separator against the kubeconfig's folder;
    # a bare name is looked up on PATH.
    if not os.path.isabs(command) and os.sep in command and base_dir:
        return os.path.normpath(os.path.join(base_dir, command))
    return command


def _exec_info(api_version: str, connection: Connection, interactive: bool, provide_cluster: bool) -> str:
    import json  # exec plugins only, as below: json, shutil, subprocess and datetime are not on the common path

    spec: dict[str, object] = {"interactive": interactive}
    if provide_cluster:
        cluster: dict[str, object] = {"server": connection.server}
        if connection.tls.server_name:
            cluster["tls-server-name"] = connection.tls.server_name
        if connection.tls.insecure:
            cluster["insecure-skip-tls-verify"] = True
        if connection.tls.ca_data:
            cluster["certificate-authority-data"] = base64.b64encode(connection.tls.ca_data).decode("ascii")
        if connection.proxy_url:  # client-go hands the plugin the cluster's proxy-url too
            cluster["proxy-url"] = connection.proxy_url
        spec["cluster"] = cluster
    return json.dumps({"apiVersion": api_version, "kind": "ExecCredential", "spec": spec})


def _last_line(text: bytes) -> str:
    lines = [line.strip() for line in text.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def run_exec_plugin(auth: Auth, connection: Connection, interactive: bool,
                    deadline: Optional[Deadline] = None) -> Issued:
    """Run the kubeconfig's credential plugin, within what the request's deadline leaves (it is part of it)."""
    config = auth.exec or {}
    api_version = config.get("apiVersion")
    command = _exec_command(config, auth.exec_dir)
    label = f'exec plugin "{command}"'
    if api_version not in EXEC_API_VERSIONS:
        raise CredentialError(f'{label}: invalid apiVersion "{api_version}" (kubectl accepts '
                              + " and ".join(EXEC_API_VERSIONS) + ")")
    use_stdin = _uses_terminal(config, api_version, label, interactive)
    args = _exec_args(config, label)
    env = _exec_env(config, label)
    env["KUBERNETES_EXEC_INFO"] = _exec_info(api_version, connection, use_stdin, bool(config.get("provideClusterInfo")))
    found = _find_executable(command, config.get("installHint"))
    done = _run_plugin([found, *args], env, use_stdin, label, deadline or Deadline())
    if done.returncode != 0:
        said = _last_line(done.stderr or b"")  # already on the terminal when interactive
        raise CredentialError(f"getting credentials: exec: executable {command} failed with exit code {done.returncode}"
                              + (f": {said}" if said else ""))
    return _parse_exec_output(done.stdout, api_version, label)


def _uses_terminal(config: ExecConfig, api_version: str, label: str, interactive: bool) -> bool:
    """kubectl's interactiveMode rules: whether the plugin gets our stdin (and the terminal its stderr)."""
    mode = config.get("interactiveMode") or ("IfAvailable" if api_version.endswith("v1beta1") else None)
    if mode is None:  # client-go: v1 has no default
        raise CredentialError(f"{label}: interactiveMode must be specified (Never, IfAvailable or Always) for "
                              f"{api_version}")
    if mode not in ("Never", "IfAvailable", "Always"):
        raise CredentialError(f'{label}: interactiveMode must be Never, IfAvailable or Always, not "{mode}"')
    if mode == "Always" and not interactive:
        raise CredentialError(f"{label} needs an interactive terminal (interactiveMode: Always), and there is none")
    return interactive and mode != "Never"


def _exec_args(config: ExecConfig, label: str) -> list[str]:
    args = config.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) and "\x00" not in a for a in args):
        raise CredentialError(f"{label}: args must be a list of strings (without NUL)")
    return args


def _exec_env(config: ExecConfig, label: str) -> dict[str, str]:
    entries = config.get("env") or []
    if not isinstance(entries, list):
        raise CredentialError(f"{label}: env must be a list of name/value pairs")
    env = dict(os.environ)
    for entry in entries:
        name = entry.get("name") if isinstance(entry, dict) else None
        value = (entry.get("value") or "") if isinstance(entry, dict) else ""  # null: "" (a Go string field)
        # An environment cannot carry these: refused here, not as an exception from exec.
        if not isinstance(name, str) or not name or "=" in name or "\x00" in name or "\x00" in value:
            raise CredentialError(f"{label}: env entries need a name without '=' or NUL, and a value without NUL")
        env[name] = value
    return env


def _find_executable(command: str, hint: Optional[str]) -> str:
    import shutil

    found = None
    if "\x00" not in command:
        found = shutil.which(command) if os.sep not in command else (command if os.path.exists(command) else None)
    if not found:
        detail = f" ({' '.join(str(hint).split())})" if hint else f"; see {PLUGIN_DOCS}"
        raise CredentialError(f"getting credentials: exec: executable {command} not found{detail}")
    return found


def _run_plugin(argv: list[str], env: dict[str, str], use_stdin: bool, label: str,
                deadline: Deadline) -> subprocess.CompletedProcess[bytes]:
    import subprocess

    limit = deadline.wait(EXEC_TIMEOUT_SECONDS) or EXEC_TIMEOUT_SECONDS  # OutOfTime when nothing is left
    try:
        # Interactive (a terminal, and the plugin may use it): like kubectl, its stderr goes to the terminal so a
        # login prompt or device code is seen, and a person, not a timer, decides how long a login takes.
        # Its own process group: when time is up the plugin and whatever it started (a `sleep`, a browser
        # helper holding its stdout open) are all ended, so nothing keeps the run waiting on the pipe.
        process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                   stderr=None if use_stdin else subprocess.PIPE,
                                   stdin=None if use_stdin else subprocess.DEVNULL, start_new_session=not use_stdin)
        try:
            stdout, stderr = process.communicate(timeout=None if use_stdin else limit)
        except subprocess.TimeoutExpired:
            _end_group(process)
            within = "in time (--request-timeout)" if limit < EXEC_TIMEOUT_SECONDS else f"within {limit:g}s"
            raise CredentialError(f"getting credentials: {label} did not answer {within}") from None
        return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise CredentialError(f"getting credentials: {label} could not be run: {reason}") from None


def _end_group(process: subprocess.Popen[bytes]) -> None:
    import signal

    try:
        os.killpg(process.pid, signal.SIGKILL)  # the plugin's group (start_new_session)
    except (OSError, AttributeError):  # no process groups (Windows): the plugin itself
        process.kill()
    process.wait()


def _parse_exec_output(stdout: bytes, api_version: str, label: str) -> Issued:
    from kubectl_pvleft.kube.nesting import TooDeep, loads

    try:
        doc: object = loads(stdout)
    except TooDeep as exc:
        raise CredentialError(f"getting credentials: decoding stdout of {label}: {exc}") from None
    except ValueError:
        raise CredentialError(f"getting credentials: decoding stdout of {label}: not a JSON ExecCredential") from None
    if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
        raise CredentialError(f"getting credentials: {label} did not print an ExecCredential")
    if doc.get("apiVersion") != api_version:
        raise CredentialError(f"getting credentials: {label} is configured to use API version {api_version}, "
                              f"plugin returned version {doc.get('apiVersion')}")
    status = doc.get("status")
    if not isinstance(status, dict) or not _read_as_strings(status, label):  # True, or why it cannot be read
        raise CredentialError(f"getting credentials: {label} returned no status")
    token, cert, key = status.get("token"), status.get("clientCertificateData"), status.get("clientKeyData")
    if not token and not (cert and key):
        raise CredentialError(f"getting credentials: {label} returned neither a token nor a client certificate and key")
    if (cert is None) != (key is None):
        raise CredentialError(f"getting credentials: {label} returned a client certificate without its key")
    issued = Issued(expires=_expiry(status.get("expirationTimestamp"), label))
    if isinstance(token, str) and token:
        issued.authorization = "Bearer " + clean_token(token, f"the token {label} returned")
    if cert and key:
        issued.cert_data, issued.key_data = str(cert).encode(), str(key).encode()
    return issued


def _read_as_strings(status: dict[str, object], label: str) -> TypeGuard[ExecCredentialStatus]:
    """True when each field read from the status is a string or null; else the error kubectl's decoding gives."""
    for field in ("token", "clientCertificateData", "clientKeyData", "expirationTimestamp"):
        # kubectl decodes into typed fields: a number where a string belongs is a broken plugin, never "no token"
        # (which would send the request as system:anonymous).
        if status.get(field) is not None and not isinstance(status[field], str):
            raise CredentialError(f"getting credentials: decoding stdout of {label}: status.{field} must be a string, "
                                  f"not {_json_type(status[field])}")
    return True


def _json_type(value: object) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__)


def _expiry(stamp: Optional[str], label: str) -> Optional[float]:
    from datetime import datetime, timezone

    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(timezone.utc).timestamp()
    except ValueError:
        raise CredentialError(f"getting credentials: {label} returned an unreadable expirationTimestamp") from None
