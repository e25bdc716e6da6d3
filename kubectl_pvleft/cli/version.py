"""`kubectl pvleft version`: the plugin's version and, when the server answers, the server's own (GET /version), as
`kubectl version` prints them: text, or -o json|yaml; --client asks no server. A server that cannot be reached is
kubectl's: the client's version first, then one error line, exit 1."""

from __future__ import annotations

import platform
import sys
from collections.abc import Sequence
from typing import Any

from kubectl_pvleft import __version__
from kubectl_pvleft.errors import UsageError


def client_version() -> dict[str, str]:
    major, minor = [*__version__.split("."), "0"][:2]
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine().lower(), platform.machine().lower())
    return {"major": major, "minor": minor, "gitVersion": f"v{__version__}",
            "pythonVersion": platform.python_version(), "platform": f"{sys.platform}/{machine}"}


def version(argv: Sequence[str], prog: str) -> int:
    from kubectl_pvleft.cli.parser import parse_version_flags, selection_of
    from kubectl_pvleft.kube.transport import set_verbosity

    args = parse_version_flags(argv, prog)
    if args.version_output not in (None, "json", "yaml"):
        raise UsageError("--output must be 'yaml' or 'json'")  # kubectl's words
    set_verbosity(args.verbosity)
    document: dict[str, Any] = {"clientVersion": client_version()}
    if args.version_output is None:
        print(f"Client Version: {document['clientVersion']['gitVersion']}", flush=True)
    if args.client:
        _print(document, args.version_output)
        return 0
    from kubectl_pvleft.cli.session import connect

    api, _ = connect(selection_of(args), args.request_timeout, args.request_timeout is not None)
    try:
        import msgspec

        server = api.fetch("/version", {}, "application/json", "get", msgspec.json.Decoder(dict[str, Any]))
    except BaseException:
        _print(document, args.version_output)  # the client's part, before the error line (as kubectl)
        raise
    finally:
        api.close()
    document["serverVersion"] = server
    if args.version_output is None:
        from kubectl_pvleft.text import shown

        print(f"Server Version: {shown(str(server.get('gitVersion', '')))}")
        return 0
    _print(document, args.version_output)
    return 0


def _print(document: dict[str, Any], output: str | None) -> None:
    if output == "json":
        import json

        print(json.dumps(document, indent=2, ensure_ascii=False), flush=True)
    elif output == "yaml":
        from kubectl_pvleft.output.formats import yaml_text

        print(yaml_text(document), end="", flush=True)
