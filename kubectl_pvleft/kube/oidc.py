"""The kubeconfig's ``auth-provider: oidc``, as client-go's oidc provider runs it, in memory only.

client-go (plugin/pkg/client/auth/oidc) sends the ``id-token`` while it is valid (its ``exp`` more than 10 s
away); otherwise, with a ``refresh-token``, it asks the IdP for a new one: OIDC discovery
(``idp-issuer-url`` + ``/.well-known/openid-configuration``, its ``token_endpoint``), then the RFC 6749
refresh grant as Go's oauth2 library sends it (client credentials in HTTP Basic first, in the form on any
failure), and takes the answer's ``id_token``. kubectl writes the new tokens into the kubeconfig; this
plugin never writes the kubeconfig, so they live for this run only and one stderr line says kubectl would
have saved them.

The IdP is reached with its own TLS settings (``idp-certificate-authority[-data]``, else the system's trust
store) and, as client-go's ``restclient.TransportFor`` does, through the proxy the environment names (never
the cluster's ``proxy-url``). Every exchange takes its time from the request's deadline.

The id-token, refresh token and client secret are never part of a message or a log line; text an IdP sends
back is shown with any of them cut out.
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any, Optional
from urllib.parse import parse_qs, quote_plus, urlencode, urlsplit

from kubectl_pvleft.deadline import Deadline, OutOfTime
from kubectl_pvleft.errors import CredentialError
from kubectl_pvleft.kube.httpclient import Pool, Response, Server, Timeouts
from kubectl_pvleft.kube.httpframing import ConnectFailed, Cut, HTTPFailure, Malformed, NoAnswer, TimedOut, TLSFailed, TooLarge
from kubectl_pvleft.kube.nesting import TooDeep, loads
from kubectl_pvleft.kube.proxy import ProxyFailed, from_environment
from kubectl_pvleft.text import one_line, shown, warn

EXPIRY_SKEW_SECONDS = 10  # client-go's expiryDelta: a token this close to its exp is already expired
REFRESH_TIMEOUT_SECONDS = 60.0  # without --request-timeout, as long as an exec plugin may take
MAX_ANSWER_BYTES = 1 << 20  # oauth2 reads at most 1 MiB of a token answer; discovery documents are smaller
BODY_SHOWN = 80  # client-go quotes this much of a failed discovery answer
BASE64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

Log = Callable[[str], None]


class OIDCProvider:
    """One user's oidc provider: the tokens it holds for this run, refreshed when the id-token expires."""

    def __init__(self, config: dict[str, Optional[str]], who: str, log: Optional[Log] = None) -> None:
        self._who = who
        self._log = log
        self._lock = threading.Lock()
        # client-go refuses the provider before any request, even with a valid id-token.
        self._issuer = config.get("idp-issuer-url") or ""
        if not self._issuer:
            raise CredentialError(f"the oidc auth provider of {who}: Must provide idp-issuer-url")
        self._client_id = config.get("client-id") or ""
        if not self._client_id:
            raise CredentialError(f"the oidc auth provider of {who}: Must provide client-id")
        self._client_secret = config.get("client-secret") or ""
        self._ca_data = _ca_data(config, who)
        self._ca_file = config.get("idp-certificate-authority") or ""
        self._id_token = config.get("id-token") or ""
        self._refresh_token = config.get("refresh-token") or ""
        self._said_unsaved = False

    def token(self, deadline: Deadline) -> tuple[str, float]:
        """A valid id-token and the time.time() after which client-go would no longer send it."""
        with self._lock:
            expiry: Optional[float] = None
            if self._id_token:
                expiry = token_expiry(self._id_token, self._who)
                if valid(expiry):
                    return self._id_token, expiry - EXPIRY_SKEW_SECONDS
            if not self._refresh_token:
                raise CredentialError(self._cannot_refresh(expiry))
            self._refresh(deadline)
            fresh = token_expiry(self._id_token, f"{self._who} (the one the identity provider returned)")
            return self._id_token, fresh - EXPIRY_SKEW_SECONDS

    def _cannot_refresh(self, expiry: Optional[float]) -> str:
        if expiry is None:
            return (f"the oidc auth provider of {self._who} has no id-token and no refresh-token to get one: "
                    "log in again (kubectl's oidc provider cannot either)")
        if expiry <= 0:
            return (f"the oidc id-token of {self._who} has no exp claim, so it counts as expired, and there is no "
                    "refresh-token to renew it: log in again")
        return (f"the oidc id-token of {self._who} expired at {utc(expiry)} and there is no refresh-token to "
                "renew it: log in again")

    def _refresh(self, deadline: Deadline) -> None:
        limit = deadline.wait(REFRESH_TIMEOUT_SECONDS) or REFRESH_TIMEOUT_SECONDS  # OutOfTime when none is left
        within = Deadline(limit)
        context = self._tls_context()
        endpoint = self._token_endpoint(context, within)
        answer = self._refresh_grant(endpoint, context, within)
        id_token = answer.get("id_token")
        if not isinstance(id_token, str) or not id_token:
            raise CredentialError(self._failed(
                f"the answer of the token endpoint {_display(endpoint)} has no id_token: either the scope "
                "\"openid\" was not requested at login, or the provider "
                "does not return id_tokens when refreshing"))
        rotated = answer.get("refresh_token")
        if isinstance(rotated, str) and rotated:
            self._refresh_token = rotated  # the provider rotates it: the old one may already be refused
        self._id_token = id_token
        if not self._said_unsaved:
            self._said_unsaved = True
            warn(f"the oidc id-token of {self._who} was refreshed for this run only; kubectl would have "
                 "saved the new tokens in the kubeconfig (this plugin never writes it)")

    # -- the exchanges ----------------------------------------------------------------------------------

    def _token_endpoint(self, context: ssl.SSLContext, within: Deadline) -> str:
        issuer = self._issuer[:-1] if self._issuer.endswith("/") else self._issuer  # Go's TrimSuffix: one "/"
        if not _http_url(issuer):  # Go: unsupported protocol scheme, or no host
            raise CredentialError(self._failed(f"the idp-issuer-url {_display(self._issuer)} is not an http(s) URL"))
        url = issuer + "/.well-known/openid-configuration"
        response, body = self._exchange("GET", url, [], None, context, within)
        if response.status != 200:
            cut = body[:BODY_SHOWN] + (b"..." if len(body) > BODY_SHOWN else b"")
            raise CredentialError(self._failed(f"the discovery document {_display(url)} answered "
                                               f"{response.status} {response.reason}: {self._quoted(cut)}"))
        try:
            document = loads(body)
        except ValueError as exc:
            raise CredentialError(self._failed(f"the discovery document {_display(url)} {_not_json(exc)}")) from None
        endpoint = document.get("token_endpoint") if isinstance(document, dict) else None
        if not isinstance(endpoint, str) or not endpoint:
            raise CredentialError(self._failed(f"the discovery document {_display(url)} has no token_endpoint"))
        if not _http_url(endpoint):
            raise CredentialError(self._failed(f"the token_endpoint of {_display(url)} is not an http(s) URL"))
        return endpoint

    def _refresh_grant(self, endpoint: str, context: ssl.SSLContext, within: Deadline) -> dict[str, Any]:
        """Go's oauth2 with an unknown auth style: client_id and client_secret in HTTP Basic (each form-escaped,
        RFC 6749 2.3.1), and on any failure once more with both in the form."""
        grant = {"grant_type": "refresh_token", "refresh_token": self._refresh_token}
        basic = base64.b64encode(f"{quote_plus(self._client_id)}:{quote_plus(self._client_secret)}".encode()).decode()
        try:
            return self._token_answer(endpoint, grant, [("Authorization", "Basic " + basic)], context, within)
        except CredentialError:
            in_form = dict(grant, client_id=self._client_id)
            if self._client_secret:
                in_form["client_secret"] = self._client_secret
            return self._token_answer(endpoint, in_form, [], context, within)

    def _token_answer(self, endpoint: str, form: dict[str, str], headers: list[tuple[str, str]],
                      context: ssl.SSLContext, within: Deadline) -> dict[str, Any]:
        body = urlencode(form).encode("ascii")
        headers = [("Content-Type", "application/x-www-form-urlencoded"), *headers]
        response, answer = self._exchange("POST", endpoint, headers, body, context, within)
        failed = not 200 <= response.status <= 299
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        fields: dict[str, Any] = {}
        if kind in ("application/x-www-form-urlencoded", "text/plain"):  # Go's oauth2 reads these as a form
            fields = {k: v[0] for k, v in parse_qs(answer.decode("utf-8", "replace"), keep_blank_values=True).items()}
        else:
            try:
                decoded: Any = loads(answer)
            except ValueError as exc:
                decoded = None
                if not failed:
                    raise CredentialError(self._failed(f"the answer of the token endpoint {_display(endpoint)} "
                                                       f"{_not_json(exc)}")) from None
            if isinstance(decoded, dict):
                fields = decoded
        code = fields.get("error")
        if failed or code:
            raise CredentialError(self._failed(self._grant_error(endpoint, response, answer, fields)))
        if not fields.get("access_token"):  # oauth2 refuses an answer without one, id_token or not
            raise CredentialError(self._failed(f"the answer of the token endpoint {_display(endpoint)} has no "
                                               "access_token"))
        return fields

    def _grant_error(self, endpoint: str, response: Response, answer: bytes, fields: dict[str, Any]) -> str:
        """The refusal in the IdP's own words, naming the endpoint that said it (which provider refused is the first
        thing to know when several contexts use several)."""
        code = fields.get("error")
        if isinstance(code, str) and code:
            text = f"the token endpoint {_display(endpoint)} answered {response.status} {code}"
            description = fields.get("error_description")
            if isinstance(description, str) and description:
                text += f": {self._quoted(description.encode('utf-8', 'replace'))}"
            if code == "invalid_grant":
                text += " (the refresh-token was refused: log in again)"
            return text
        return (f"the token endpoint {_display(endpoint)} answered {response.status} {response.reason}"
                + (f": {self._quoted(answer[:BODY_SHOWN * 4])}" if answer.strip() else ""))

    def _exchange(self, method: str, url: str, headers: list[tuple[str, str]], body: Optional[bytes],
                  context: ssl.SSLContext, within: Deadline) -> tuple[Response, bytes]:
        parts = urlsplit(url)
        server = Server(f"{parts.scheme}://{parts.netloc}")  # the origin: the whole path goes in the target
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        started = time.monotonic()
        try:
            proxy = from_environment(url, os.environ)
            if proxy is not None and self._log:
                self._log(f'"Proxy" url="{proxy.display}" from="{proxy.origin}" server="{_display(url)}"')
            pool = Pool(server, context if server.tls else None, None, proxy)
            left = within.wait()
            timeouts = Timeouts(connect=left or REFRESH_TIMEOUT_SECONDS, read=left, total=left)
            response = pool.post(target, headers, body or b"", timeouts) if method == "POST" \
                else pool.get(target, headers, timeouts)
            answer = response.read(MAX_ANSWER_BYTES)
        except HTTPFailure as exc:
            raise CredentialError(self._failed(self._unreachable(url, exc))) from None
        except OutOfTime:
            raise CredentialError(self._failed(self._unreachable(url, TimedOut("deadline")))) from None
        except ProxyFailed as exc:  # its words name the proxy (never its credentials)
            raise CredentialError(self._failed(f"{exc} (on the way to the identity provider {_display(url)})")) from None
        if self._log:
            self._log(f'"Response" verb="{method}" url="{_display(url)}" status="{response.status} '
                      f'{response.reason}" milliseconds={int((time.monotonic() - started) * 1000)}')
        return response, answer

    def _unreachable(self, url: str, exc: HTTPFailure) -> str:
        where = f"the identity provider {_display(url)}"
        if isinstance(exc, TLSFailed):
            return f"TLS handshake with {where} failed: {one_line(exc.reason)[:300]}"
        if isinstance(exc, ConnectFailed):
            return f"the connection to {where} was refused or unreachable"
        if isinstance(exc, TimedOut):
            return f"{where} did not answer in time"
        if isinstance(exc, TooLarge):
            return f"{where} sent {exc}, more than a token answer is"
        # Which of these it was is the first thing to know (an IdP that drops connections is not one that speaks
        # broken HTTP): the words the API server's failures use (transport.py), never one phrase for all of them.
        if isinstance(exc, NoAnswer):
            return f"{where} {'reset' if exc.reset else 'closed'} the connection before answering"
        if isinstance(exc, Cut):
            return f"{where} closed the connection mid-answer"
        if isinstance(exc, Malformed):
            return f"{where} sent a broken HTTP answer: {exc}"
        return f"cannot talk to {where}: {type(exc).__name__}"

    def _tls_context(self) -> ssl.SSLContext:
        """client-go: the -data wins over the file; neither: the system's trust store."""
        pem = self._ca_data
        if pem is None and self._ca_file:
            try:
                with open(self._ca_file, "rb") as handle:
                    pem = handle.read()
            except (OSError, ValueError) as exc:
                raise CredentialError(f"the oidc idp-certificate-authority of {self._who} "
                                      f"({shown(self._ca_file)}): {getattr(exc, 'strerror', None) or 'cannot be read'}"
                                      ) from None
        if pem is None:
            return ssl.create_default_context()
        try:
            return ssl.create_default_context(cadata=pem.decode("ascii"))
        except (ssl.SSLError, UnicodeDecodeError, ValueError):
            raise CredentialError(f"the oidc idp-certificate-authority of {self._who} holds no PEM certificate"
                                  ) from None

    # -- messages ---------------------------------------------------------------------------------------

    def _failed(self, why: str) -> str:
        return f"refreshing the oidc id-token of {self._who} failed: {why}"

    def _quoted(self, text: bytes) -> str:
        """An IdP's words, one line, with every secret this provider holds cut out (an IdP may echo them)."""
        words = one_line(text.decode("utf-8", "replace"))
        for secret in (self._refresh_token, self._client_secret, self._id_token):
            if len(secret) >= 4:
                words = words.replace(secret, "<redacted>")
        return shown(words)


_shared: dict[tuple[str, ...], OIDCProvider] = {}
_shared_lock = threading.Lock()


def provider_for(config: dict[str, Optional[str]], who: str, log: Optional[Log] = None) -> OIDCProvider:
    """One provider per user configuration in this process, as client-go keeps one per issuer and client: the
    contexts of a fleet run that share an OIDC user refresh once, and the refresh token the IdP rotated to (the
    old one is refused from then on) is the one every context uses next."""
    key = (who, *(part for name, value in sorted(config.items()) for part in (name, value or "")))
    with _shared_lock:
        provider = _shared.get(key)
        if provider is None:
            provider = _shared[key] = OIDCProvider(config, who, log)
        return provider


def _ca_data(config: dict[str, Optional[str]], who: str) -> Optional[bytes]:
    text = config.get("idp-certificate-authority-data") or ""
    if not text:
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise CredentialError(f"the oidc idp-certificate-authority-data of {who} is not base64") from None


def token_expiry(token: str, who: str) -> float:
    """The id-token's exp as client-go reads it (a JWT's second part, unpadded base64url JSON; an integer or a
    float, truncated); no exp claim is time zero, which is expired. Never the token in a message."""
    parts = token.split(".")
    if len(parts) != 3:
        raise CredentialError(f"the oidc id-token of {who} is not a valid JWT (the token is not shown)")
    payload = parts[1]
    if not set(payload) <= BASE64URL or len(payload) % 4 == 1:
        raise CredentialError(f"the oidc id-token of {who} is not a valid JWT: its payload is not base64url")
    try:
        claims = loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except ValueError as exc:
        raise CredentialError(f"the oidc id-token of {who} is not a valid JWT: its payload {_not_json(exc)}") from None
    if not isinstance(claims, dict):
        raise CredentialError(f"the oidc id-token of {who} is not a valid JWT: its payload is not a JSON object")
    exp = claims.get("exp", 0)
    if isinstance(exp, str):  # Go's json.Number takes a quoted number too
        try:
            exp = float(exp)
        except ValueError:
            exp = None
    if isinstance(exp, bool) or not isinstance(exp, (int, float)) or exp != exp or abs(exp) > 2**63:
        raise CredentialError(f"the oidc id-token of {who} has an exp claim that is not a number")
    return float(int(exp))


def valid(expiry: float, now: Optional[float] = None) -> bool:
    """client-go: now + 10 s is strictly before exp."""
    return (time.time() if now is None else now) + EXPIRY_SKEW_SECONDS < expiry


def utc(stamp: float) -> str:
    from datetime import datetime, timezone

    try:
        return datetime.fromtimestamp(stamp, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return f"{stamp:.0f} (seconds since 1970, UTC)"


def _http_url(url: str) -> bool:
    """An http(s) URL with a host and a usable port, without blanks or control characters (which urlsplit
    would silently drop)."""
    if not url.isprintable() or any(c.isspace() for c in url):
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number or out of range
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _display(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return shown(url[:100])
    if "@" in parts.netloc:  # user:password in an issuer URL is never shown
        parts = parts._replace(netloc="<redacted>@" + parts.netloc.rsplit("@", 1)[1])
    return shown(parts._replace(query="", fragment="").geturl())


def _not_json(exc: ValueError) -> str:
    return f"is {exc}" if isinstance(exc, TooDeep) else "is not JSON"
