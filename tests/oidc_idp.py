"""A small OpenID Connect provider on loopback, for the oidc auth provider's tests.

HTTPS with tls_material's certificate; it speaks what a kube-apiserver and kubectl's oidc provider need, and
speaks it strictly:

- ``GET /.well-known/openid-configuration``: the discovery document (OIDC Discovery 1.0, section 3);
- ``GET /keys``: the JWKS with one RSA key; id-tokens are RS256 JWTs with iss, aud, sub, exp and iat;
- ``POST /token``: the RFC 6749 refresh grant (section 6). The client authenticates with HTTP Basic (client id
  and secret each form-urlencoded first, section 2.3.1) or with client_id/client_secret in the form, never both
  (section 2.3: "MUST NOT use more than one"); a wrong one is 401 invalid_client, an unknown or used refresh
  token 400 invalid_grant (section 5.2). Refresh tokens rotate: each answer carries a new one and the old one
  is refused from then on.

Every request is recorded (method, path, headers, form), to check what reached the IdP.
"""

from __future__ import annotations

import base64
import functools
import json
import secrets
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional
from urllib.parse import parse_qs, unquote_plus

from tls_material import server_context

CLIENT_ID = "pvleft-cli"
# Characters that Go's url.QueryEscape and RFC 6749's form encoding change: Basic credentials must be escaped.
CLIENT_SECRET = "cl1ent s3cret+/:=&"
SUBJECT = "alice"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unsigned_jwt(claims: dict[str, Any]) -> str:
    """A JWT whose claims a client reads (kubectl reads exp without checking the signature): for unit tests."""
    header = b64url(json.dumps({"alg": "RS256", "typ": "JWT"}).encode())
    return f"{header}.{b64url(json.dumps(claims).encode())}.{b64url(b'not-a-signature')}"


@functools.cache
def _key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    form: dict[str, list[str]] = field(default_factory=dict)


class IdP:
    """The provider on https://127.0.0.1:port; ``with IdP() as idp:`` starts and stops it."""

    def __init__(self, client_id: str = CLIENT_ID, client_secret: str = CLIENT_SECRET) -> None:
        self.client_id, self.client_secret = client_id, client_secret
        self.received: list[Received] = []
        self.omit_id_token = False  # answer a refresh without id_token (as Okta does)
        # A misbehaving IdP, for the tests of what the client shows: (status, content type, body) instead of the
        # real answer; the token endpoint's is given the form that was sent.
        self.scripted_discovery: Optional[tuple[int, str, bytes]] = None
        self.scripted_grant: Optional[Callable[[dict[str, list[str]]], tuple[int, str, bytes]]] = None
        self._refresh_tokens: dict[str, str] = {}  # live refresh token -> subject
        self.issued: list[str] = []  # every id-token, refresh and access token handed out: none may be printed
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        context: ssl.SSLContext = server_context()
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.issuer = f"https://127.0.0.1:{self._server.server_address[1]}"
        # A short poll: stopping the server waits for it, once per test.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def __enter__(self) -> IdP:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- what the tests hand out -------------------------------------------------------------------------

    def id_token(self, lifetime: float = 3600.0, subject: str = SUBJECT, **claims: Any) -> str:
        """An RS256 id-token that expires ``lifetime`` seconds from now (negative: already expired)."""
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        now = int(time.time())
        body = {"iss": self.issuer, "aud": self.client_id, "sub": subject, "iat": now, "exp": int(now + lifetime),
                "jti": secrets.token_urlsafe(8), **claims}
        signing_input = f"{b64url(json.dumps({'alg': 'RS256', 'kid': 'k1', 'typ': 'JWT'}).encode())}." \
                        f"{b64url(json.dumps(body).encode())}"
        signature = _key().sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
        token = f"{signing_input}.{b64url(signature)}"
        self.issued.append(token)
        return token

    def refresh_token(self, subject: str = SUBJECT) -> str:
        token = "rt-" + secrets.token_urlsafe(24)
        self.issued.append(token)
        with self._lock:
            self._refresh_tokens[token] = subject
        return token

    def token_requests(self) -> list[Received]:
        return [r for r in self.received if r.path == "/token"]

    # -- the endpoints -----------------------------------------------------------------------------------

    def discovery(self) -> dict[str, Any]:
        return {"issuer": self.issuer, "authorization_endpoint": f"{self.issuer}/auth",
                "token_endpoint": f"{self.issuer}/token", "jwks_uri": f"{self.issuer}/keys",
                "response_types_supported": ["code"], "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"], "grant_types_supported": ["refresh_token"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"]}

    def jwks(self) -> dict[str, Any]:
        numbers = _key().public_key().public_numbers()
        size = (numbers.n.bit_length() + 7) // 8
        return {"keys": [{"kty": "RSA", "alg": "RS256", "use": "sig", "kid": "k1",
                          "n": b64url(numbers.n.to_bytes(size, "big")), "e": b64url(numbers.e.to_bytes(3, "big"))}]}

    def grant(self, headers: dict[str, str], form: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        """RFC 6749 section 6 (refresh) with section 2.3.1 client authentication and section 5.2 errors."""
        if any(len(values) != 1 for values in form.values()):  # 3.2: parameters MUST NOT be included more than once
            return 400, {"error": "invalid_request", "error_description": "repeated parameter"}
        one = {k: v[0] for k, v in form.items()}
        basic = headers.get("authorization", "")
        if basic and ("client_secret" in one or not basic.startswith("Basic ")):
            return 400, {"error": "invalid_request", "error_description": "more than one client authentication"}
        if basic:
            try:
                pair = base64.b64decode(basic[len("Basic "):], validate=True).decode()
            except ValueError:
                return 401, {"error": "invalid_client"}
            raw_id, _, raw_secret = pair.partition(":")
            client_id, client_secret = unquote_plus(raw_id), unquote_plus(raw_secret)
        else:
            client_id, client_secret = one.get("client_id", ""), one.get("client_secret", "")
        if client_id != self.client_id or not secrets.compare_digest(client_secret, self.client_secret):
            return 401, {"error": "invalid_client", "error_description": "client authentication failed"}
        if one.get("grant_type") != "refresh_token":
            return 400, {"error": "unsupported_grant_type"}
        with self._lock:
            subject = self._refresh_tokens.pop(one.get("refresh_token", ""), None)  # used once: rotation
        if subject is None:
            return 400, {"error": "invalid_grant", "error_description": "the refresh token is invalid or was used"}
        access = "at-" + secrets.token_urlsafe(16)
        self.issued.append(access)
        answer: dict[str, Any] = {"access_token": access, "token_type": "Bearer",
                                  "expires_in": 3600, "refresh_token": self.refresh_token(subject)}
        if not self.omit_id_token:
            answer["id_token"] = self.id_token(subject=subject)
        return 200, answer


def _handler(idp: IdP) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the record is idp.received
            pass

        def _answer(self, status: int, doc: dict[str, Any], extra: Optional[dict[str, str]] = None) -> None:
            body = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "no-store")  # RFC 6749 5.1
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _raw(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _record(self, form: Optional[dict[str, list[str]]] = None) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            idp.received.append(Received(self.command, self.path, headers, form or {}))

        def do_GET(self) -> None:
            self._record()
            if self.path == "/.well-known/openid-configuration" and idp.scripted_discovery:
                self._raw(*idp.scripted_discovery)
            elif self.path == "/.well-known/openid-configuration":
                self._answer(200, idp.discovery())
            elif self.path == "/keys":
                self._answer(200, idp.jwks())
            else:
                self._answer(404, {"error": "not found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode("ascii", "replace")
            form = parse_qs(raw, keep_blank_values=True)
            self._record(form)
            if self.path != "/token":
                self._answer(404, {"error": "not found"})
                return
            if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
                self._answer(400, {"error": "invalid_request", "error_description": "not a form"})
                return
            if idp.scripted_grant is not None:
                self._raw(*idp.scripted_grant(form))
                return
            status, doc = idp.grant({k.lower(): v for k, v in self.headers.items()}, form)
            self._answer(status, doc, {"WWW-Authenticate": 'Basic realm="idp"'} if status == 401 else None)

    return Handler
