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
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional
from urllib.parse import parse_qs, unquote_plus

from loopback import LoopbackFake, Reply, Request, json_reply

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


class IdP(LoopbackFake):
    """The provider on https://127.0.0.1:port; ``with IdP() as idp:`` starts and stops it."""

    tls = http11 = True

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

    @property
    def issuer(self) -> str:
        return self.endpoint

    # -- serving ---------------------------------------------------------------------------------------------

    def serve(self, request: Request) -> Reply:
        if request.method == "POST":
            form = parse_qs(request.body.decode("ascii", "replace"), keep_blank_values=True)
            self.received.append(Received(request.method, request.target, dict(request.headers), form))
            return self._token_endpoint(request, form)
        self.received.append(Received(request.method, request.target, dict(request.headers), {}))
        if request.method != "GET":
            return _answer(404, {"error": "not found"})
        if request.target == "/.well-known/openid-configuration" and self.scripted_discovery:
            return Reply(self.scripted_discovery[0], self.scripted_discovery[2], self.scripted_discovery[1])
        if request.target == "/.well-known/openid-configuration":
            return _answer(200, self.discovery())
        if request.target == "/keys":
            return _answer(200, self.jwks())
        return _answer(404, {"error": "not found"})

    def _token_endpoint(self, request: Request, form: dict[str, list[str]]) -> Reply:
        if request.target != "/token":
            return _answer(404, {"error": "not found"})
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
            return _answer(400, {"error": "invalid_request", "error_description": "not a form"})
        if self.scripted_grant is not None:
            status, content_type, body = self.scripted_grant(form)
            return Reply(status, body, content_type)
        status, doc = self.grant(dict(request.headers), form)
        return _answer(status, doc, {"WWW-Authenticate": 'Basic realm="idp"'} if status == 401 else None)

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


def _answer(status: int, doc: dict[str, Any], extra: Optional[dict[str, str]] = None) -> Reply:
    return json_reply(status, doc, **{"Cache-Control": "no-store"}, **(extra or {}))  # no-store: RFC 6749 5.1
