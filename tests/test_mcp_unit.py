"""`kubectl-pvleft mcp` without a cluster: its tools and input schemas are generated from the commands' declarations
(a flag added to a command is an input of its tool, with the parser's own syntax), a call's arguments become the
command line they mean and go through the CLI's parser, and bad arguments or run-only flags are usage errors.
The server itself, driven by the official client against the real plane, is in test_mcp_cluster.py."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from kubectl_pvleft.analyses import ANALYSES_BY_NAME
from kubectl_pvleft.cli.mcp_server import (
    argv_of,
    checked,
    cli_line,
    input_schema,
    item_schema,
    object_pattern,
    output_schema,
    tool_flags,
    why_argv,
    why_input_schema,
    why_output_schema,
)
from kubectl_pvleft.cli.parser import parse
from kubectl_pvleft.errors import UsageError
from kubectl_pvleft.invocation import BOOLEAN, COMMANDS, COMMANDS_BY_NAME, DURATION, REPEATED, WHY, Flag, Invocation, Options

PROG = "kubectl pvleft"
CLAIMS = COMMANDS_BY_NAME["claims"]
JSON_TYPES = {BOOLEAN: "boolean", REPEATED: "array", DURATION: "string"}


def server_invocation(*argv: str) -> Invocation:
    invocation = parse(["mcp", *argv], PROG)
    assert invocation is not None
    return invocation


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_every_declared_flag_is_an_input_of_its_tool(command: Any) -> None:
    schema = input_schema(command)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator.check_schema(output_schema(command))
    properties = schema["properties"]
    for flag in command.flags:
        assert properties[flag.dest]["type"] == JSON_TYPES.get(flag.kind, "string"), flag.name
        assert properties[flag.dest]["description"].startswith(flag.help or ""), flag.name
    assert {flag.dest for flag in tool_flags(command)} | {"names", "limit", "continue"} == set(properties)


def objects_in(schema: Any) -> list[dict[str, Any]]:
    """Every object schema with properties in a schema, nested or in ``$defs``."""
    if isinstance(schema, list):
        return [found for part in schema for found in objects_in(part)]
    if not isinstance(schema, dict):
        return []
    here = [schema] if "properties" in schema else []
    return here + [found for value in schema.values() for found in objects_in(value)]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_each_item_schema_is_generated_from_its_types_and_closed(command: Any) -> None:
    """The items' schema is a JSON Schema, made of every type the analysis declares (each TypedDict a definition
    or the item itself), and every object in it has exactly its declared keys: a key printed and not declared is
    refused (the real-plane tests validate every printed item against it)."""
    schema = output_schema(command)
    jsonschema.Draft202012Validator.check_schema(schema)
    item = item_schema(command)
    declared = {kind.__name__ for kind in ANALYSES_BY_NAME[command.name].load(Options()).items()}
    top = {ref["$ref"].rsplit("/", 1)[-1] for ref in item.get("anyOf", ())} or {item.get("title")}
    assert top == declared
    objects = objects_in(item)
    assert len(objects) >= len(item.get("$defs", {}))
    assert all(found.get("additionalProperties") is False for found in objects), command.name
    assert schema["properties"]["items"]["items"] == {key: value for key, value in item.items() if key != "$defs"}
    assert schema["$defs"] == item.get("$defs", {})


def test_an_item_must_have_every_declared_key_and_no_other() -> None:
    """leftovers' rows over wire JSON recorded from the real plane, as -o json prints them: valid; one key more,
    one key less or a value of another type is not."""
    from kubectl_pvleft.analyses.leftovers import ClaimIndex, LeftoverResult, assess, report
    from kubectl_pvleft.records import ClaimIdentity, PersistentVolume, StorageClass
    from wire import items

    rows = assess([PersistentVolume.from_wire(o) for o in items("leftovers_pvs")],
                  ClaimIndex.of(ClaimIdentity.from_wire(o) for o in items("leftovers_pvc_metadata")),
                  {sc.name: sc for sc in map(StorageClass.from_wire, items("leftovers_storageclasses"))},
                  include_all=True)
    leftovers = report(LeftoverResult(rows=rows))
    printed = [dict(leftovers.to_json(row)) for row in leftovers.rows]
    schema = output_schema(COMMANDS_BY_NAME["leftovers"])
    item = jsonschema.Draft202012Validator({"$defs": schema["$defs"], **schema["properties"]["items"]["items"]})
    assert printed and all(item.is_valid(doc) for doc in printed)
    first = printed[0]
    assert not item.is_valid({**first, "stray": 1})
    assert not item.is_valid({key: value for key, value in first.items() if key != "claim_state"})
    assert not item.is_valid({**first, "finding": "yes"})
    assert item.is_valid({**first, "claim_uid": None})  # nullable: declared `str | None`


def test_a_flag_added_to_a_command_is_an_input_of_its_tool() -> None:
    """What other analyses add (a new claim state's flag) flows through: nothing here lists the fields."""
    added = Flag(name="--by-design", dest="by_design", kind=BOOLEAN, help="claims unused by design too")
    command = CLAIMS.replace(flags=(*CLAIMS.flags, added))
    assert input_schema(command)["properties"]["by_design"] == {"type": "boolean",
                                                                 "description": "claims unused by design too"}
    assert argv_of(command, {"by_design": True}, server_invocation()) == ["claims", "--by-design"]


def test_a_pattern_the_parser_checks_is_in_the_schema() -> None:
    from kubectl_pvleft.clouds import installed

    schema = input_schema(COMMANDS_BY_NAME["leftovers"])
    if not installed("gcp"):  # a venv without the cloud's extra (a census could not run): no input offers it
        assert "project" not in schema["properties"]
        return
    jsonschema.validate({"project": ["my-project-1"], "cost": True}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"project": ["not a project"]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"token": "x"}, schema)  # connection flags are the server's, never a call's


def test_arguments_become_the_command_line_they_mean() -> None:
    arguments = {"older_than": "7d", "exclude_namespaces": ["kube-*"], "all": True, "names": ["-odd", "b"]}
    argv = argv_of(CLAIMS, arguments, server_invocation("-n", "shop"))
    assert argv == ["claims", "--all", "--older-than=7d", "--exclude-namespace=kube-*", "--namespace=shop", "--",
                    "-odd", "b"]
    invocation = parse(argv, PROG)
    assert invocation is not None
    assert (invocation.namespace, invocation.names) == ("shop", ("-odd", "b"))  # a value never reads as a flag
    assert (invocation.flags.older_than, invocation.flags.exclude_namespaces) == (7 * 86400, ("kube-*",))
    assert cli_line(argv) == ("kubectl pvleft claims --all --older-than=7d '--exclude-namespace=kube-*' "
                              "--namespace=shop -o json -- -odd b")
    assert cli_line(["claims"]) == "kubectl pvleft claims -o json"
    # The call's namespace wins over the server's default; -A on the server is every namespace by default.
    assert argv_of(CLAIMS, {"namespace": "web"}, server_invocation("-n", "shop")) == ["claims", "--namespace=web"]
    assert argv_of(CLAIMS, {}, server_invocation("-A")) == ["claims", "--all-namespaces"]
    assert argv_of(CLAIMS, {"all_namespaces": False}, server_invocation("-A")) == ["claims",
                                                                                  "--all-namespaces=false"]


@pytest.mark.parametrize("arguments, words", [
    ({"nope": 1}, "has no input 'nope'"),
    ({"all": "yes"}, "input 'all' must be a boolean"),
    ({"names": "a"}, "input 'names' must be an array of strings"),
    ({"limit": 0}, "between 1 and"),
    ({"limit": True}, "input 'limit' must be an integer"),
    ({"continue": "abc"}, "`continue` of a previous answer"),
])
def test_bad_arguments_are_usage_errors(arguments: dict[str, Any], words: str) -> None:
    with pytest.raises(UsageError, match=words.replace("(", r"\(")):
        checked(CLAIMS, arguments)


@pytest.mark.parametrize("argv", [["-o", "json"], ["-w"], ["--sort-by", ".name"], ["-l", "a=b"],
                                  ["--field-selector", "a=b"], ["--exit-code"], ["--all-contexts"], ["some-name"]])
def test_the_flags_of_one_report_are_refused(argv: list[str]) -> None:
    with pytest.raises(UsageError, match="cannot be used with mcp"):
        parse(["mcp", *argv], PROG)


def test_the_connection_flags_are_the_clis() -> None:
    invocation = server_invocation("--context", "prod", "-n", "shop", "--request-timeout", "30s", "--as", "auditor")
    assert (invocation.selection.context, invocation.namespace, invocation.request_timeout,
            invocation.selection.impersonate_user) == ("prod", "shop", 30.0, "auditor")


@pytest.mark.parametrize("listen", ["0.0.0.0:8080", ":8080", "10.0.0.1:80", "example.com:80", "[::]:80",
                                    "127.0.0.2:80", "127.0.0.1:70000"])
def test_http_answers_on_loopback_only(listen: str) -> None:
    with pytest.raises(UsageError, match=r"loopback|no port"):
        parse(["mcp", "--listen", listen], PROG)


@pytest.mark.parametrize("listen", ["127.0.0.1:0", "[::1]:8080", "localhost:65535"])
def test_a_loopback_address_is_taken(listen: str) -> None:
    assert server_invocation("--listen", listen).flags.listen == listen


@pytest.mark.parametrize("thing", ["pod/web-0", "Pod/web-0", "po/a", "PVC/data", "persistentvolumeclaims/d", "pv/x",
                                   "PersistentVolume/x", "vsc/c", "volumesnapshotcontents/c",
                                   "volumesnapshotcontent.snapshot.storage.k8s.io/c", "node/x", "pod/", "pod/a/b",
                                   "/x", "podx/y", "xpod/y", "pod", "", "-A", "pv/x\n"])
def test_why_takes_in_its_schema_what_the_parser_takes(thing: str) -> None:
    """The `object` pattern (ECMA, no case flag: each letter in any case) accepts exactly the KIND/NAMEs the CLI's
    parser does (analyses/why.py's subject, what check_why applies before any request)."""
    import re

    from kubectl_pvleft.analyses.why import subject

    assert (re.search(object_pattern(), thing) is not None) is (subject(thing) is not None), thing
    parsed = None
    try:
        parsed = parse(why_argv({"object": thing}, server_invocation()), PROG)
    except UsageError:
        pass
    assert (parsed is not None) is (subject(thing) is not None), thing


def test_why_is_asked_as_the_cli_is() -> None:
    jsonschema.Draft202012Validator.check_schema(why_input_schema())
    assert why_argv({"object": "pod/web-0"}, server_invocation("-n", "shop")) == ["why", "--namespace=shop", "pod/web-0"]
    assert why_argv({"object": "pv/x", "namespace": "web"}, server_invocation("-n", "shop")) == [
        "why", "--namespace=web", "pv/x"]
    assert why_argv({"object": "pod/a"}, server_invocation("-A")) == ["why", "pod/a"]  # why takes no -A: the context's
    assert cli_line(why_argv({"object": "pvc/data"}, server_invocation())) == "kubectl pvleft why pvc/data -o json"
    for arguments, words in (({"object": "pod/a", "limit": 1}, "has no input 'limit'"),
                             ({"object": ["pod/a"]}, "input 'object' must be a string"),
                             ({"object": "pod/a", "all_namespaces": True}, "has no input 'all_namespaces'")):
        with pytest.raises(UsageError, match=words):
            checked(WHY, arguments)


def test_why_answers_the_story_closed() -> None:
    """The `story` of why's answer is StoryJson's schema, every object closed: the story -o json prints is valid,
    one key more or less in a link is not."""
    from test_why_unit import story

    schema = why_output_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert all(found.get("additionalProperties") is False for found in objects_in(schema))
    printed = story().to_json()
    answer = {"cli": "kubectl pvleft why pod/web-0 -o json", "context": "c", "namespace": "shop", "story": printed,
              "warnings": [], "unread": []}
    jsonschema.validate(answer, schema)
    link = printed["chain"][0]
    for wrong in ({**link, "stray": 1}, {key: value for key, value in link.items() if key != "owner"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**answer, "story": {**printed, "chain": [wrong]}}, schema)


def test_docs_name_every_tool() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "mcp.md").read_text()
    for command in COMMANDS:
        assert f"| `{command.name}` |" in text and f"`kubectl pvleft {command.name} -o json`" in text, command.name
    assert "| `why` |" in text and "`kubectl pvleft why pod/NAME -o json`" in text


@pytest.mark.integration  # the server is a child process; the API server a socket that never answers
def test_a_call_ends_within_the_request_timeout(tmp_path: Any) -> None:
    """A server that accepts the connection and never answers (a fault a real API server does not make on
    purpose): each call is an error answer within --request-timeout and a margin, and the server answers the next."""
    import socket

    import yaml

    from mcp_client import converse

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        config = tmp_path / "silent.kc"
        config.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "x",
            "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{silent.getsockname()[1]}",
                                                   "insecure-skip-tls-verify": True}}],
            "users": [{"name": "u", "user": {"token": "not-a-real-token"}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}))
        talk = converse(config, [("leftovers", {}), ("claims", {})], tmp_path, "--request-timeout", "2s")
    for (name, _, result), seconds in zip(talk.answers, talk.seconds, strict=True):
        assert result.is_error and result.structured_content["error"]["kind"] in ("timeout", "unreachable"), name
        assert seconds < 2 + 3, (name, seconds)


@pytest.mark.parametrize("args", [("claims", "-o", "json"), ("claims", "--output=json"), ("claims", "-ojson")])
def test_a_printed_item_with_an_undeclared_key_fails_the_test_that_printed_it(args: tuple[str, ...]) -> None:
    """run_plugin's check (tests/plugin_runner.py), which every real-plane test printing -o json goes through."""
    import json

    from plugin_runner import check_declared

    printed = json.dumps({"apiVersion": "v1", "items": [{"stray": 1}], "kind": "List", "metadata": {}})
    with pytest.raises(AssertionError, match="stray"):
        check_declared(args, printed)
    check_declared((*args, "--all-contexts"), printed)  # a fleet's rows carry a context: not this check's
