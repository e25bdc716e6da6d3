"""`kubectl-pvleft mcp`: every analysis as a read-only tool of a Model Context Protocol server on stdin/stdout, for
AI agents (docs/mcp.md).

A tool call is one run of the CLI: its arguments become the subcommand's own flags, parsed by the CLI's parser
(the same checks, the same usage errors), run in a ``Session`` exactly as `kubectl pvleft NAME -o json` runs, and
answered with the objects that command prints, a page at a time. Nothing here judges a row: the analyses do.
The tools and their input schemas come from the commands' declarations (``invocation.COMMANDS``, their ``Flag``s,
the clouds' flags when the cloud's extra is installed), so a new analysis or flag is a new tool or input; their
output schemas from the TypedDicts each analysis declares for what its -o json prints (``Analysis.items``), closed
(``additionalProperties: false``), so a key printed and not declared is caught by the tests that validate against
them.
One more tool is not an analysis: `why` (one object's story, ``WHY``), its output schema from the story's
TypedDict (``StoryJson``), told by what `kubectl pvleft why` calls (cli/why.py).

The official SDK (`mcp`, the ``mcp`` extra) is imported here only: the rest of the plugin never needs it. stdout is
the protocol's channel: nothing else may write there (warnings are in the results, errors on stderr).
"""

from __future__ import annotations

import re
import shlex
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Optional, Union, get_args, get_origin, get_type_hints, is_typeddict

from kubectl_pvleft import __version__
from kubectl_pvleft.analyses import ANALYSES_BY_NAME
from kubectl_pvleft.cli.session import Session, describe_api_error
from kubectl_pvleft.errors import ApiError, ConfigError, ConnectionFailed, Forbidden, PvleftError, Refusal, UsageError, needs_extra
from kubectl_pvleft.invocation import BOOLEAN, COMMANDS, DURATION, REPEATED, VALUE, WHY, Command, Flag, Invocation, Options
from kubectl_pvleft.text import one_line, shown

if TYPE_CHECKING:  # the SDK only when `mcp` runs (its extra)
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams, Tool

PROG = "kubectl pvleft"
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
# A call with no --request-timeout still ends: an agent waiting on a tool cannot tell slow from hung.
DEFAULT_CALL_SECONDS = 60.0
CONCURRENT_CALLS = 2  # runs at once; more wait their turn (each run lists whole kinds)

# kubectl's own flags a tool takes per call, by input name (as -o json's callers know them from the CLI).
KUBECTL_INPUTS = (("namespace", "--namespace", VALUE), ("all_namespaces", "--all-namespaces", BOOLEAN),
                  ("label_selector", "--selector", VALUE), ("field_selector", "--field-selector", VALUE))
NAMES = "names"
OBJECT = "object"  # why's one KIND/NAME
LIMIT = "limit"
CONTINUE = "continue"

INSTRUCTIONS = (
    "kubectl-pvleft answers storage questions about one Kubernetes cluster, read-only: it only sends get, list and "
    "watch. Each tool is one `kubectl pvleft` subcommand; its items are the objects that subcommand prints with "
    "-o json, each finding with its evidence and `next`: read-only kubectl commands for a person to look further. "
    "`why` tells one object's story (a Pod, claim, PV or snapshot content): the chain of objects, the link that "
    "blocks and who owns it. "
    "It never changes anything and never suggests a write. `warnings` and `errors` say what could not be read "
    "(a 403, a failed cloud census): such values are null (unknown), never guessed.")


# -- the tools, from the declarations ---------------------------------------------------------------------

def tool_flags(command: Command) -> tuple[Flag, ...]:
    """A tool's inputs that are flags: kubectl's per-call ones, the subcommand's own, and the clouds' when a census
    may join it and that cloud's extra is installed (a flag whose census cannot run here is not offered)."""
    kubectl = tuple(Flag(name=name, dest=dest, kind=kind, help=cli_help(name)) for dest, name, kind in KUBECTL_INPUTS)
    own = tuple(command.flags)
    if not command.census:
        return kubectl + own
    from kubectl_pvleft.clouds import CLOUDS, installed
    from kubectl_pvleft.clouds import FLAGS as SHARED

    clouds = tuple(flag for cloud in CLOUDS if installed(cloud.EXTRA) for flag in cloud.FLAGS)
    return kubectl + own + (clouds + tuple(SHARED) if clouds else ())


def cli_help(option: str) -> str:
    """The CLI's own help line for one of kubectl's flags."""
    from kubectl_pvleft.cli.parser import build_parser

    action = next(a for a in build_parser(PROG)._actions if option in a.option_strings)
    return str(action.help or "")


def flag_schema(flag: Flag) -> dict[str, Any]:
    text: dict[str, Any] = {"type": "string"}
    if flag.pattern:  # the same syntax the parser checks (fullmatch), anchored for JSON Schema's search
        text["pattern"] = f"^(?:{flag.pattern})$"
    help_text = flag.help or ""
    if flag.kind == BOOLEAN:
        return {"type": "boolean", "description": help_text}
    if flag.kind == REPEATED:
        return {"type": "array", "items": text, "description": help_text}
    if flag.kind == DURATION:
        return {**text, "description": f"{help_text} (a duration: 90s, 36h, 7d)"}
    return {**text, "description": help_text}


def input_schema(command: Command) -> dict[str, Any]:
    properties = {flag.dest: flag_schema(flag) for flag in tool_flags(command)}
    properties[NAMES] = {"type": "array", "items": {"type": "string"},
                         "description": f"only these {command.selector_help} (by name), shown with or without "
                                        "findings; a name that does not exist is in not_found"}
    properties[LIMIT] = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
                         "description": "at most this many items in this answer; `omitted` counts the rest"}
    properties[CONTINUE] = {"type": "string", "pattern": "^[0-9]+$",
                            "description": "the `continue` of the previous answer: its next page (the analysis runs "
                                           "again, so a page reflects the cluster as it is now)"}
    return {"type": "object", "properties": properties, "additionalProperties": False}


def object_pattern() -> str:
    """The KIND/NAME `why` takes, as a JSON Schema pattern: kubectl's words for its kinds, in any case (as the
    parser's ``subject`` reads them; ECMA patterns have no case-insensitive flag), then a name without "/"."""
    from kubectl_pvleft.analyses.why import KIND_WORDS

    def any_case(word: str) -> str:
        return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in word)

    return f"^(?:{'|'.join(any_case(word) for word in sorted(KIND_WORDS, key=len, reverse=True))})/[^/]+$"


def why_input_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {
        OBJECT: {"type": "string", "pattern": object_pattern(),
                 "description": "the object whose story to tell, as kubectl names it: pod/NAME, pvc/NAME, pv/NAME or "
                                "volumesnapshotcontent/NAME"},
        "namespace": {"type": "string", "description": cli_help("--namespace") + " (a Pod's or claim's; "
                                                                                 "default: the server's -n, else "
                                                                                 "the context's)"}},
            "required": [OBJECT], "additionalProperties": False}


def schema_of(command: Command) -> dict[str, Any]:
    """A tool's input schema: an analysis's from its flags, why's its own."""
    return why_input_schema() if command is WHY else input_schema(command)


def item_schema(command: Command) -> dict[str, Any]:
    """The JSON Schema of one item the command's -o json prints: any of its analysis's item types (its rows', and a
    cloud census's), each an object with exactly its declared keys. The definitions are in ``$defs``, referred to
    from the document's root (``#/$defs/...``)."""
    # Options(): the analysis without flags; classes --drift is another analysis with the same item types.
    return json_schema(*ANALYSES_BY_NAME[command.name].load(Options()).items())


def json_schema(*kinds: object) -> dict[str, Any]:
    """The JSON Schema of a value of any of these types (TypedDicts), each object closed."""
    from pydantic import TypeAdapter

    made: dict[object, object] = {}
    portable = tuple(_portable(kind, made) for kind in kinds)
    either: Any = Union[portable] if len(portable) > 1 else portable[0]
    schema: dict[str, Any] = TypeAdapter(either).json_schema()
    return schema


def _cloud_json_types() -> dict[str, object]:
    """The clouds' JSON TypedDicts (clouds/base.py) by name: an analysis names them in its own only under
    TYPE_CHECKING (a cloud is imported only with its flags), so its annotations are resolved with these."""
    from kubectl_pvleft.clouds import base

    return {name: value for name, value in vars(base).items() if name.endswith("Json") and is_typeddict(value)}


def _portable(kind: Any, made: dict[object, object]) -> Any:
    """``kind`` with every TypedDict in it made again as typing_extensions' (what pydantic reads before Python
    3.12), its annotations resolved, its required and optional keys kept, and closed: another key is an error."""
    import typing_extensions

    if is_typeddict(kind):
        if kind not in made:
            hints = get_type_hints(kind, localns=_cloud_json_types())
            fields = {key: (typing_extensions.Required if key in kind.__required_keys__ else
                            typing_extensions.NotRequired)[_portable(value, made)] for key, value in hints.items()}
            typed_dict: Any = typing_extensions.TypedDict  # called with a name mypy cannot see: a class made here
            again = typed_dict(kind.__name__, fields)
            again.__doc__ = kind.__doc__
            again.__pydantic_config__ = {"extra": "forbid"}
            made[kind] = again
        return made[kind]
    args, origin = get_args(kind), get_origin(kind)
    if not args or origin is Literal:
        return kind
    portable = tuple(_portable(arg, made) for arg in args)
    if origin in (Union, types.UnionType):
        return Union[portable]
    return origin[portable]


STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
MAYBE_STRING: dict[str, Any] = {"type": ["string", "null"]}
# What every tool says of what it could not read, the same way.
WARNINGS: dict[str, Any] = {**STRINGS, "description": "what could not be read or told (a 403 on a kind the answer "
                                                      "leans on): the values it decides are null, never guessed"}
UNREAD: dict[str, Any] = {
    "type": "array", "description": "the reads refused (403) whose values are null here: each with its warning line",
    "items": {"type": "object", "properties": {
        "resource": {"type": "string"}, "verb": {"type": "string"}, "path": {"type": "string"},
        "status": {"type": "integer"}, "warning": {"type": "string"}},
              "required": ["resource", "verb", "path", "status", "warning"], "additionalProperties": False}}


def answer_schema(kind: Mapping[str, Any], shown_as: str, namespace: str, answer: Mapping[str, Any],
                  required: tuple[str, ...], closed: bool = False) -> dict[str, Any]:
    """What a tool answers: ``answer`` (its own properties, ``required`` of them) beside what every tool says the
    same way: the command line whose -o json it is (``shown_as``), the context and namespace read (``namespace``:
    what the namespace means for it), what could not be read. ``kind``: the JSON Schema of what the -o json
    prints, whose definitions go to the root (``#/$defs/...``, as its references say); ``closed``: no other key."""
    definitions = dict(kind).pop("$defs", {})
    schema = {
        "type": "object",
        "$defs": definitions,
        "properties": {
            "cli": {"type": "string", "description": f"the kubectl pvleft command line whose -o json {shown_as} "
                                                     "(connection flags left out)"},
            "context": MAYBE_STRING,
            "namespace": {"type": ["string", "null"], "description": namespace},
            **answer,
            "warnings": WARNINGS,
            "unread": UNREAD,
        },
        "required": ["cli", "context", "namespace", *required, "warnings", "unread"],
    }
    return {**schema, "additionalProperties": False} if closed else schema


def output_schema(command: Command) -> dict[str, Any]:
    item = item_schema(command)
    answer = {
        "items": {"type": "array", "description": f"the objects `kubectl pvleft {command.name} -o json` prints in "
                                                 "items[], this page of them",
                  "items": {key: value for key, value in item.items() if key != "$defs"}},
        "verdicts": {"type": "array", "description": "for each item, in order: the object, what is wrong with it "
                                                    "(empty: nothing to act on), why true evidence is set aside "
                                                    "(kept, younger than older_than, so by design; null: it is "
                                                    "not) and the read-only next looks",
                     "items": {"type": "object", "properties": {"object": {"type": "string"}, "findings": STRINGS,
                                                                "set_aside": MAYBE_STRING, "next": STRINGS},
                               "required": ["object", "findings", "set_aside", "next"]}},
        "findings": {"type": "integer", "minimum": 0, "description": "the findings, over every page: what --exit-code counts"},
        "total": {"type": "integer", "minimum": 0},
        "offset": {"type": "integer", "minimum": 0},
        "omitted": {"type": "integer", "minimum": 0, "description": "items after this page, left out"},
        "continue": {"type": ["string", "null"], "description": "pass as `continue` for the next page; null: last"},
        "partial": {"type": "boolean", "description": "a cloud census or its prices failed: `errors` says which"},
        "errors": {**STRINGS, "description": "what made the answer partial, one line each"},
        "failed": {"type": "array", "description": "`errors` as data: the cloud (gce, aws, azure) and the part of "
                                                  "its work (census, snapshots, prices) that failed",
                   "items": {"type": "object", "properties": {
                       "cloud": MAYBE_STRING, "part": MAYBE_STRING, "message": {"type": "string"}},
                             "required": ["cloud", "part", "message"]}},
        "not_served": {"type": ["string", "null"], "description": "the kinds this tool reads are not served by "
                                                                "this cluster (no CRDs): nothing to check"},
        "not_found": {"type": "object", "additionalProperties": {"type": "string"},
                      "description": "names asked for that have no object, with kubectl's line for each"},
    }
    return answer_schema(item, "items these are", "the namespace read; null: every namespace (or, for "
                                                  "cluster-scoped kinds, not narrowed)", answer,
                         ("items", "verdicts", "findings", "total", "offset", "omitted", "continue", "partial",
                          "errors", "failed", "not_served", "not_found"))


def why_output_schema() -> dict[str, Any]:
    """What the `why` tool answers: the object `kubectl pvleft why ... -o json` prints (``StoryJson``, closed), with
    the command line, the context and namespace read, and what could not be read, as the other tools say them."""
    from kubectl_pvleft.output.story import StoryJson

    story = json_schema(StoryJson)
    told = {key: value for key, value in story.items() if key != "$defs"}
    answer = {"story": {**told, "description": "what `kubectl pvleft why ... -o json` prints: the chain of links "
                                               "(each with its state, findings, owner and read-only next looks), "
                                               "the link that blocks, the evidence newest first"}}
    return answer_schema(story, "is `story`", "the namespace a Pod or claim was read in", answer, ("story",),
                         closed=True)


def tools() -> list[Tool]:
    import mcp.types as types

    def tool(command: Command, inputs: dict[str, Any], outputs: dict[str, Any]) -> Tool:
        return types.Tool(name=command.name, title=f"kubectl pvleft {command.name}", description=command.summary,
                          input_schema=inputs, output_schema=outputs,
                          annotations=types.ToolAnnotations(title=f"kubectl pvleft {command.name}",
                                                            read_only_hint=True, destructive_hint=False,
                                                            idempotent_hint=True, open_world_hint=True))

    return [*(tool(command, input_schema(command), output_schema(command)) for command in COMMANDS),
            tool(WHY, why_input_schema(), why_output_schema())]


# -- one call ------------------------------------------------------------------------------------------------

def checked(command: Command, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments, each of the type its schema says (a usage error names the first that is not)."""
    properties = schema_of(command)["properties"]
    for key, value in arguments.items():
        spec = properties.get(key)
        if spec is None:
            raise UsageError(f"{command.name} has no input {shown(key)!r} (it takes {', '.join(sorted(properties))})")
        kind = spec["type"]
        ok = (isinstance(value, bool) if kind == "boolean"
              else isinstance(value, int) and not isinstance(value, bool) if kind == "integer"
              else isinstance(value, str) if kind == "string"
              else isinstance(value, list) and all(isinstance(item, str) for item in value))
        if not ok:
            what = {"array": "an array of strings", "integer": "an integer"}.get(kind, f"a {kind}")
            raise UsageError(f"input {key!r} must be {what}")
    limit = arguments.get(LIMIT, DEFAULT_LIMIT)
    if not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"input 'limit' must be between 1 and {MAX_LIMIT}")
    offset = arguments.get(CONTINUE, "0")
    if not offset.isdigit():
        raise UsageError("input 'continue' must be the `continue` of a previous answer")
    return dict(arguments)


def argv_of(command: Command, arguments: Mapping[str, Any], base: Invocation) -> list[str]:
    """The subcommand's command line the arguments mean (``--flag=value``: a value never reads as a flag), with the
    server's -n/-A as the default namespace when the call names none."""
    argv = [command.name]
    for flag in tool_flags(command):
        value = arguments.get(flag.dest)
        if value is None:
            continue
        if flag.kind == BOOLEAN:
            argv.append(flag.name if value else f"{flag.name}=false")
        elif flag.kind == REPEATED:
            argv.extend(f"{flag.name}={item}" for item in value)
        else:
            argv.append(f"{flag.name}={value}")
    if "namespace" not in arguments and "all_namespaces" not in arguments:
        if base.all_namespaces:
            argv.append("--all-namespaces")
        elif base.namespace:
            argv.append(f"--namespace={base.namespace}")
    names = list(arguments.get(NAMES) or ())
    # After "--" only when a name could read as a flag (no Kubernetes name starts with "-", a typo may).
    return [*argv, "--", *names] if any(name.startswith("-") for name in names) else [*argv, *names]


def cli_line(argv: list[str]) -> str:
    """The command line a person would type for the same answer: ``-o json`` before a ``--`` that ends the flags."""
    cut = argv.index("--") if "--" in argv else len(argv)
    return shlex.join([*PROG.split(), *argv[:cut], "-o", "json", *argv[cut:]])


def run_of(argv: list[str], base: Invocation) -> Invocation:
    """The run `kubectl pvleft ARGV -o json` is, through the CLI's parser (its checks, its usage errors), in the
    server's connection."""
    from kubectl_pvleft.cli.parser import parse

    parsed = parse(argv, PROG)
    assert parsed is not None  # argv names the subcommand
    return parsed.replace(selection=base.selection, request_timeout=base.request_timeout, verbosity=base.verbosity,
                          chunk_size=base.chunk_size, output="json")


def answer(base: Invocation, command: Command, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """One tool call: the run `kubectl pvleft ARGV -o json` makes, in the server's context, one page of it."""
    if command is WHY:
        return why_answer(base, arguments)
    arguments = checked(command, arguments)
    argv = argv_of(command, arguments, base)
    invocation = run_of(argv, base)
    # interactive=False: stdin is the protocol's channel, never a terminal a credential plugin may prompt on.
    with Session(invocation, interactive=False) as session:
        result = session.run()
        context = session.api.connection.context
        namespace = session.options.namespace
    from kubectl_pvleft.output.report import placed

    reports = [shown.apply(placed) for shown in (result.report, *result.sections)]
    rows = [(report, row) for report in reports for row in report.rows]  # as -o json lists them: one List
    offset, limit = int(arguments.get(CONTINUE, "0")), int(arguments.get(LIMIT, DEFAULT_LIMIT))
    page = rows[offset:offset + limit]
    after = max(0, len(rows) - offset - len(page))
    warnings = list(dict.fromkeys(result.warnings + ([result.not_served] if result.not_served else [])))
    return {
        "cli": cli_line(argv),
        "context": context,
        "namespace": namespace,
        "items": [report.to_json(row) for report, row in page],
        "verdicts": [{"object": report.name(row),
                      "findings": list(report.findings(row)) if report.findings else [],
                      "set_aside": report.set_aside(row) if report.set_aside else None,
                      "next": list(report.next(row)) if report.next else []} for report, row in page],
        "findings": result.findings,
        "total": len(rows),
        "offset": offset,
        "omitted": after,
        "continue": str(offset + len(page)) if after else None,
        "partial": result.partial,
        "errors": list(result.errors),
        "failed": [failed(line) for line in result.errors],
        "warnings": warnings,
        "unread": unread(warnings),
        "not_served": result.not_served,
        "not_found": dict(result.not_found),
    }


def unread(warnings: list[str]) -> list[dict[str, Any]]:
    return [{"resource": w.resource, "verb": w.verb, "path": w.path, "status": w.status, "warning": w}
            for w in warnings if isinstance(w, Refusal)]


def why_argv(arguments: Mapping[str, Any], base: Invocation) -> list[str]:
    """`why`'s command line: its namespace, else the server's -n (why takes no -A: then the context's), the object."""
    namespace = arguments.get("namespace", base.namespace)
    argv = ["why", *([f"--namespace={namespace}"] if namespace is not None else [])]
    thing = arguments[OBJECT]
    return [*argv, "--", thing] if thing.startswith("-") else [*argv, thing]  # a value never reads as a flag


def why_answer(base: Invocation, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The `why` tool: the story `kubectl pvleft why KIND/NAME -o json` prints, told by what it calls; an object
    that does not exist is a ``not_found`` error with kubectl's NotFound line (the CLI's stderr)."""
    from kubectl_pvleft.cli.why import tell

    arguments = checked(WHY, arguments)
    if OBJECT not in arguments:
        raise UsageError(f"why needs the input {OBJECT!r}: pod/NAME, pvc/NAME, pv/NAME or volumesnapshotcontent/NAME")
    argv = why_argv(arguments, base)
    invocation = run_of(argv, base)  # the parser checks the object before any request
    with Session(invocation, interactive=False) as session:
        tale = tell(invocation, session)
        context = session.api.connection.context
        namespace = session.options.namespace or "default"
    warnings = list(tale.warnings)
    return {"cli": cli_line(argv), "context": context, "namespace": namespace, "story": tale.to_json(),
            "warnings": warnings, "unread": unread(warnings)}


def failed(line: str) -> dict[str, Any]:
    """A line that made the answer partial, as data: which cloud (its JSON ``source``) and which part of its work
    (census, snapshots, prices) failed, read from the prefix the clouds' names give it; null where none matches."""
    from kubectl_pvleft.clouds import CLOUDS

    for cloud in CLOUDS:
        for part in ("census", "snapshots", "prices"):
            prefix = f"{cloud.NAME} {part}: "
            if line.startswith(prefix):
                return {"cloud": cloud.SOURCE, "part": part, "message": line[len(prefix):]}
    return {"cloud": None, "part": None, "message": line}


def failure(exc: BaseException) -> dict[str, Any]:
    """What went wrong, as data an agent can act on: never the text of an unexpected exception (it may hold a
    value), never a credential."""
    from kubectl_pvleft.analyses.why import Absent

    doc: dict[str, Any] = {"kind": "internal", "message": f"internal error ({type(exc).__name__})"}
    if isinstance(exc, Absent):  # why's object: kubectl's NotFound line, as the CLI prints it
        doc = {"kind": "not_found", "message": str(exc)}
    elif isinstance(exc, ApiError):
        kind = "forbidden" if isinstance(exc, Forbidden) else "unauthorized" if exc.status == 401 else "api"
        doc = {"kind": kind, "message": describe_api_error(exc), "status": exc.status, "verb": exc.verb,
               "path": exc.path.split("?", 1)[0], "resource": exc.details_kind}
    elif isinstance(exc, UsageError):
        doc = {"kind": "usage", "message": str(exc)}
    elif isinstance(exc, ConnectionFailed):
        doc = {"kind": "unreachable", "message": str(exc)}
    elif isinstance(exc, ConfigError):
        doc = {"kind": "config", "message": str(exc)}
    elif isinstance(exc, PvleftError):
        doc = {"kind": "error", "message": str(exc)}
    doc["message"] = one_line(shown(doc["message"]))
    return {"error": doc}


# -- the server ----------------------------------------------------------------------------------------------

def serve_mcp(invocation: Invocation) -> int:
    try:
        import mcp  # noqa: F401  (the extra: said in one line when absent)
    except ImportError:
        # Not in the container image (Containerfile installs serve and the clouds' extras).
        raise PvleftError(needs_extra("mcp", "the mcp package", "mcp", in_image=False)) from None
    import asyncio

    listen = invocation.flags.listen
    asyncio.run(_serve_stdio(invocation) if listen is None else _serve_http(invocation, listen))
    return 0


def call_seconds(invocation: Invocation) -> Optional[float]:
    """How long one call may take: --request-timeout (0: no bound, as kubectl's), else DEFAULT_CALL_SECONDS."""
    if invocation.request_timeout is None:
        return DEFAULT_CALL_SECONDS
    return invocation.request_timeout or None


def server(invocation: Invocation) -> Server:
    import asyncio
    import json

    import mcp.types as types
    from mcp.server.lowlevel import Server

    bound = call_seconds(invocation)
    # Every request of a run is bounded too, so a run abandoned at the call's deadline ends on its own.
    base = invocation.replace(request_timeout=bound) if invocation.request_timeout is None else invocation
    by_name = {command.name: command for command in (*COMMANDS, WHY)}
    listed = tools()
    turns = asyncio.Semaphore(CONCURRENT_CALLS)

    async def list_tools(ctx: ServerRequestContext, params: Optional[PaginatedRequestParams]) -> ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        command = by_name.get(params.name)
        try:
            if command is None:
                raise UsageError(f"no tool {shown(params.name)!r} (the tools: {', '.join(by_name)})")
            async with turns:
                doc = await asyncio.wait_for(asyncio.to_thread(answer, base, command, params.arguments or {}), bound)
            error = False
        except asyncio.TimeoutError:
            doc = {"error": {"kind": "timeout", "message": f"{params.name} did not finish within {bound:g}s "
                                                          "(--request-timeout)"}}
            error = True
        except Exception as exc:  # one call failed, the server goes on: a structured error, never a traceback
            doc, error = failure(exc), True
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(doc, ensure_ascii=False))],
                                    structured_content=doc, is_error=error)

    return Server("kubectl-pvleft", version=__version__, title="kubectl pvleft", instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def _serve_stdio(invocation: Invocation) -> None:
    from mcp.server.stdio import stdio_server

    mcp_server = server(invocation)
    async with stdio_server() as (read, write):
        await mcp_server.run(read, write, mcp_server.create_initialization_options())


async def _serve_http(invocation: Invocation, listen: str) -> None:
    """MCP's streamable HTTP transport on a loopback address (the parser refuses any other): the SDK's Starlette
    app, with its DNS-rebinding protection (Host and Origin must name a loopback address), served by uvicorn on a
    socket bound here so that port 0 can say which port it got."""
    import socket
    import sys

    import uvicorn

    host, _, port = listen.rpartition(":")
    host = host.strip("[]")
    family = socket.AF_INET6 if host == "::1" else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1" if host == "localhost" else host, int(port)))
    except OSError as exc:
        sock.close()
        raise PvleftError(f"cannot listen on {shown(listen)}: {exc.strerror or exc}") from None
    app = server(invocation).streamable_http_app(host="::1" if host == "::1" else "127.0.0.1")
    bound = sock.getsockname()[1]
    shown_host = "[::1]" if host == "::1" else host
    print(f"answering MCP on http://{shown_host}:{bound}/mcp", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])
