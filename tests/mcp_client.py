"""The official MCP client (the SDK's `mcp.client.stdio`) talking to `kubectl-pvleft mcp`, as an agent would: what
the MCP tests use to start the server, list its tools and call them, keeping everything the server said."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import anyio

from plugin_runner import PLUGIN


class Conversation:
    """Everything the server said (each response as JSON) and what it printed on stderr."""

    def __init__(self) -> None:
        self.said: list[str] = []
        self.stderr = ""
        self.tools: dict[str, Any] = {}
        self.answers: list[tuple[str, dict[str, Any], Any]] = []
        self.seconds: list[float] = []  # each call's, as the client waited


def converse(kubeconfig: Path, calls: list[tuple[str, dict[str, Any]]], tmp_path: Path,
             *flags: str, env: dict[str, str] | None = None) -> Conversation:
    """Start `kubectl-pvleft mcp` with the official stdio client, list its tools, make the calls in order. ``env``:
    variables set over the client's default environment (HOME, PATH, ...), as a client configuration sets them."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    talk = Conversation()
    errlog = tmp_path / f"mcp-stderr-{len(list(tmp_path.glob('mcp-stderr-*')))}.txt"

    async def run() -> None:
        params = StdioServerParameters(command=PLUGIN, args=["mcp", "--kubeconfig", str(kubeconfig), *flags],
                                       env=env)
        with errlog.open("w") as err:
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
                talk.said.append((await session.initialize()).model_dump_json(by_alias=True))
                listed = await session.list_tools()
                talk.said.append(listed.model_dump_json(by_alias=True))
                talk.tools = {tool.name: tool for tool in listed.tools}
                for name, arguments in calls:
                    started = time.monotonic()
                    result = await session.call_tool(name, arguments)  # validates against the output schema
                    talk.seconds.append(time.monotonic() - started)
                    talk.said.append(result.model_dump_json(by_alias=True))
                    talk.answers.append((name, arguments, result))

    anyio.run(run)
    talk.stderr = errlog.read_text()
    return talk


def item_validator(output_schema: dict[str, Any]) -> Any:
    """A validator of one item, from a tool's output schema: the item's schema with the definitions it refers to."""
    import jsonschema

    schema = {"$defs": output_schema.get("$defs", {}), **output_schema["properties"]["items"]["items"]}
    return jsonschema.Draft202012Validator(schema)


@functools.cache
def declared(name: str) -> Any:
    """The item validator of the tool `name`, generated here as the server generates it."""
    from kubectl_pvleft.cli.mcp_server import output_schema
    from kubectl_pvleft.invocation import COMMANDS_BY_NAME

    return item_validator(output_schema(COMMANDS_BY_NAME[name]))


def assert_declared(validator: Any, items: list[dict[str, Any]], what: object = "") -> None:
    """Every item is what its type declares: no key it does not declare, none missing, each value of its type. The
    message says what each of the union's types found wrong."""
    for item in items:
        errors = [e.message for error in validator.iter_errors(item) for e in (error.context or [error])]
        assert not errors, (what, item.get("kind"), item.get("name"), errors)

