"""`kubectl pvleft why KIND/NAME`: open the context, have the story told (analyses/why.py), print it as text, JSON
or YAML. An object that does not exist is kubectl's NotFound line and exit 1; with --exit-code, a story with a
link that blocks exits 3, as a run with findings does."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from kubectl_pvleft.cli.parser import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK
from kubectl_pvleft.cli.session import Session
from kubectl_pvleft.invocation import Invocation
from kubectl_pvleft.text import warn

if TYPE_CHECKING:
    from kubectl_pvleft.output.story import Story


def tell(invocation: Invocation, session: Session) -> Story:
    """The story of the invocation's one KIND/NAME, in the session's namespace (the context's, else "default", as
    kubectl's); Absent when the object does not exist. The MCP server's `why` tool tells it here too."""
    from kubectl_pvleft.analyses.why import story, subject

    found = subject(invocation.names[0])
    assert found is not None  # the parser refused anything else
    kind, name = found
    return story(session.api, kind, name, session.options.namespace or "default")


def why(invocation: Invocation) -> int:
    from kubectl_pvleft.analyses.why import Absent
    from kubectl_pvleft.output import story as told

    with Session(invocation) as session:
        try:
            tale = tell(invocation, session)
        except Absent as exc:
            print(str(exc), file=sys.stderr)
            return EXIT_ERROR
    for message in tale.warnings:
        warn(message)
    if invocation.output == "json":
        print(json.dumps(tale.to_json(), indent=4))
    elif invocation.output == "yaml":
        from kubectl_pvleft.output.formats import yaml_text

        print(yaml_text(tale.to_json()), end="")
    else:
        print(told.text(tale), end="")
    return EXIT_FINDINGS if invocation.exit_code and tale.blocking is not None else EXIT_OK
