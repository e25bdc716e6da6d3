"""The errors the command line turns into one `error:` line and an exit code."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from collections.abc import Mapping

CONTAINER_IMAGE = "ghcr.io/kubectl-pvleft/kubectl-pvleft"  # the package with serve's and the clouds' extras (Containerfile)


def needs_extra(what: str, needs: str, extra: str, in_image: bool = True) -> str:
    """The line for a flag whose optional package is not installed, saying how to get it where this program
    runs: pip's extra; in the krew bundle (PyInstaller sets ``sys.frozen``), where there is no pip, what the
    bundle carries and where the rest is (``in_image``: the container image has this extra)."""
    if getattr(sys, "frozen", False):
        image = f", or run the container image {CONTAINER_IMAGE}, which has it" if in_image else ""
        return (f"{what} needs {needs}, which the krew bundle does not carry (it carries the cluster commands, not "
                f"the optional packages of serve, mcp and the cloud censuses): install the package with pipx "
                f"install 'kubectl-pvleft[{extra}]'{image}")
    return f"{what} needs {needs}: pip install 'kubectl-pvleft[{extra}]'"


class PvleftError(Exception):
    """Anything the user should read as one line; never shown as a traceback."""

    exit_code = 1
    after = ""  # lines printed after the error line, as kubectl prints them (cobra's "Did you mean this?")


class UsageError(PvleftError):
    exit_code = 2


class TemplateRefused(UsageError):
    """A -o template kubectl refuses (empty, unparsable, too large): kubectl exits 1 for these, not 2."""

    exit_code = 1


class ConfigError(PvleftError):
    """The kubeconfig (or in-cluster config) could not give us a server to talk to."""


class ConnectionFailed(PvleftError):
    """No HTTP answer at all: refused, unresolvable, timed out, or the TLS handshake failed."""


class ApiError(PvleftError):
    """The API server answered with an error Status. ``details`` is its details as the server sent them
    (StatusDetails: name, group, kind, uid, causes...), JSON no one decodes further: only ``kind`` is read
    (``details_kind``)."""

    def __init__(self, status: int, reason: str, message: str, verb: str, path: str,
                 details: Optional[Mapping[str, object]] = None) -> None:
        self.status = status
        self.reason = reason
        self.api_message = message
        self.verb = verb
        self.path = path
        self.details = details or {}
        super().__init__(f"{message or reason} ({verb} {path}: HTTP {status})")

    @property
    def details_kind(self) -> Optional[str]:
        """The resource the Status names (details.kind, a plural), when it is text: a server may send anything."""
        kind = self.details.get("kind")
        return kind if isinstance(kind, str) and kind else None


class Forbidden(ApiError):
    """403: the user may not do this. Never a hint about whether the object exists."""


class NotFound(ApiError):
    """404: no such object, or the kind is not served here (no CRD). Never raised for a 403."""


class Expired(ApiError):
    """410 Gone: a continue token or a watch resourceVersion is older than the server keeps."""


class Oversized(PvleftError):
    """An answer past a bound kept whatever a server sends (objects in one list or one stream, bytes in one object).
    Not an outage: asked again at once, a hostile server would answer the same, so it is asked again later."""


class CredentialError(ConfigError):
    """A credential could not be obtained (exec plugin, removed auth provider): the run stops here rather
    than carrying on as system:anonymous and blaming RBAC."""


class BadResponse(ApiError):
    """The server answered 2xx with something that is not the object we asked for."""


class TemplateError(TemplateRefused):
    """A template kubectl refuses; the message is kubectl's text, to print after `error: `."""

    exit_code = 1  # kubectl exits 1 on a bad template, not with a usage code

    def __init__(self, message: str, reason: Optional[str] = None) -> None:
        super().__init__(message)
        self.reason = reason or message  # the parser's or evaluator's bare text, without kubectl's wrapping


class ExecutionError(TemplateError):
    """A template that parsed but failed on this object. `reason` is client-go's bare error (what custom-columns
    and --sort-by print); `partial` is the value Go hands back with the error, which an existence filter keeps."""

    def __init__(self, reason: str, partial: Optional[list[object]] = None, message: Optional[str] = None) -> None:
        super().__init__(message or reason, reason)
        self.partial = partial or []


class Refusal(str):
    """A warning line that says an optional read was refused (a 403 made its values unknown), still the line every
    output prints, carrying what was refused as data for the readers that want it (the MCP server's `unread`)."""

    status: int
    verb: str
    path: str
    resource: str

    @classmethod
    def of(cls, exc: ApiError, line: str) -> Refusal:
        refusal = cls(line)
        path = exc.path.split("?", 1)[0]
        refusal.status, refusal.verb, refusal.path = exc.status, exc.verb, path
        refusal.resource = exc.details_kind or path.rstrip("/").rsplit("/", 1)[-1]
        return refusal
