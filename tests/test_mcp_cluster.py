"""`kubectl-pvleft mcp` driven by the official MCP client (the SDK's `mcp.client.stdio`) against the real control
plane: the tools it lists and their read-only annotations and schemas, every tool's answer beside the CLI's `-o json`
on the same cluster (every item of both valid under the tool's output schema: no key undeclared), pages that add up,
a 403 and an unreachable server as structured errors, no token anywhere in the traffic or on stderr, and an audit log
with nothing but get, list and watch from the server's identity.

The server runs as a ServiceAccount of its own (a token from `kubectl create token`, bound to the plugin's
ClusterRole), so the audit log tells its requests from every other test's; the CLI it is compared with runs as the
`reader` user, bound to the same ClusterRole.
"""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
import yaml

from aws_moto import FAKE_KEY_ID, FAKE_SECRET, MotoServer, aws_test_env, create_volume, csi_tags
from kubectl_pvleft.invocation import COMMANDS
from loopback import free_port
from mcp_client import assert_declared, converse, item_validator
from plugin_runner import PLUGIN, items, run_plugin
from scenarios import apply, claim, get, seed_mariadb, wait_for

pytestmark = pytest.mark.cluster

NAMESPACE = "pvleft-mcp"
ACCOUNT = "mcp-agent"
TOOLS = {command.name for command in COMMANDS} | {"why"}  # every analysis is a tool (attachments too), and why
CLOUD_INPUTS = {"project", "aws_region", "azure_subscription", "cost"}
# What each tool is asked, and the same question on the command line (the answer's `cli` must say it).
QUESTIONS: list[tuple[str, dict[str, Any]]] = [
    ("leftovers", {}), ("leftovers", {"all": True}), ("pending", {"all_namespaces": True}),
    ("claims", {"all_namespaces": True, "all": True}), ("claims", {"namespace": NAMESPACE}), ("classes", {}),
    ("classes", {"drift": True}), ("snapshots", {"all": True}), ("attachments", {"all": True}),
]
# why's: the Pending Pod (its claim waits on a class that does not exist) and the leftover PV.
STORIES: list[tuple[str, dict[str, Any]]] = [("why", {"object": "pod/web-0", "namespace": NAMESPACE}),
                                             ("why", {"object": "pv/mcp-leftover-pv"})]


def token_kubeconfig(path: Path, cluster: Any, token: str, server: str | None = None) -> Path:
    ca = base64.b64encode((cluster.pki / "ca.crt").read_bytes()).decode()
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "agent",
        "clusters": [{"name": "plane", "cluster": {"server": server or cluster.server,
                                                   "certificate-authority-data": ca}}],
        "users": [{"name": "agent", "user": {"token": token}}],
        "contexts": [{"name": "agent", "context": {"cluster": "plane", "user": "agent", "namespace": NAMESPACE}}],
    }))
    return path


@pytest.fixture(scope="module")
def seeded(cluster: Any) -> Iterator[str]:
    """A leftover PV (the real PV controller releases it), claims that cannot bind and a Pod Pending on one; the
    server's own ServiceAccount and its token. Yields the token."""
    seed_mariadb(cluster, ns=NAMESPACE, pv="mcp-leftover-pv")
    apply(cluster, *(claim(NAMESPACE, name, storage_class="mcp-no-such-class") for name in ("waiting", "idle-a", "idle-b")),
          {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": NAMESPACE},
           "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}],
                    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "waiting"}}],
                    "terminationGracePeriodSeconds": 0}})
    # The answers are compared with the CLI's read a moment later: let the scheduler's first verdict on web-0 be in
    # (its PodScheduled condition and FailedScheduling event) before either reads it.
    wait_for("web-0's FailedScheduling", lambda: any(
        event["reason"] == "FailedScheduling" for event in get(cluster, f"/api/v1/namespaces/{NAMESPACE}/events?"
                                                              "fieldSelector=involvedObject.name%3Dweb-0")["items"]))
    cluster.kubectl("create", "serviceaccount", ACCOUNT, "-n", NAMESPACE)
    cluster.kubectl("create", "clusterrolebinding", "pvleft-mcp-agent", "--clusterrole=pvleft-reader",
                    f"--serviceaccount={NAMESPACE}:{ACCOUNT}")
    try:
        yield cluster.kubectl("create", "token", ACCOUNT, "-n", NAMESPACE).stdout.strip()
    finally:
        cluster.kubectl("delete", "clusterrolebinding", "pvleft-mcp-agent", check=False)
        cluster.kubectl("delete", "pods", "--all", "-n", NAMESPACE, "--grace-period=0", "--force", check=False)
        cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)
        cluster.kubectl("delete", "pv", "mcp-leftover-pv", "--wait=false", check=False)


def test_tools_are_listed_read_only_with_their_schemas(cluster: Any, seeded: str, tmp_path: Path) -> None:
    talk = converse(token_kubeconfig(tmp_path / "agent.kc", cluster, seeded), [], tmp_path)
    assert set(talk.tools) == TOOLS
    for tool in talk.tools.values():
        hints = tool.annotations
        assert (hints.read_only_hint, hints.idempotent_hint, hints.destructive_hint) == (True, True, False), tool.name
        for schema in (tool.input_schema, tool.output_schema):
            jsonschema.Draft202012Validator.check_schema(schema)
        if tool.name == "why":
            continue
        inputs = tool.input_schema["properties"]
        assert {"namespace", "all_namespaces", "label_selector", "names", "limit", "continue"} <= set(inputs)
        assert tool.input_schema["additionalProperties"] is False
    # The subcommands' own flags, generated from their declarations: the clouds' where a census may join (every
    # extra is installed in the test venv), not where none can.
    assert set(talk.tools["leftovers"].input_schema["properties"]) >= CLOUD_INPUTS
    assert set(talk.tools["snapshots"].input_schema["properties"]) >= CLOUD_INPUTS
    assert not CLOUD_INPUTS & set(talk.tools["claims"].input_schema["properties"])
    assert {"older_than", "all", "exclude_namespaces"} <= set(talk.tools["claims"].input_schema["properties"])
    assert "drift" in talk.tools["classes"].input_schema["properties"]
    assert talk.tools["leftovers"].input_schema["properties"]["project"]["items"]["pattern"].startswith("^(?:")
    # why: the object (its pattern the parser's) and the namespace; its story what `why -o json` prints, closed.
    why = talk.tools["why"]
    assert set(why.input_schema["properties"]) == {"object", "namespace"} and why.input_schema["required"] == ["object"]
    assert why.input_schema["additionalProperties"] is False
    story = why.output_schema["properties"]["story"]
    assert set(story["properties"]) == {"subject", "blocked", "blocking", "chain", "evidence", "next"}
    assert story["additionalProperties"] is False
    assert all(definition["additionalProperties"] is False for definition in why.output_schema["$defs"].values())
    assert talk.stderr == ""


def ours(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items of this module's objects, settled. The plane is shared: another module's PVs may still be going
    away (a thousand held by pv-protection for a minute) between the server's answer and the CLI's."""
    return [settled(item) for item in found if NAMESPACE in json.dumps(item) or '"mcp-' in json.dumps(item)]


def settled(value: Any) -> Any:
    """An answer without its events' times and counts: the scheduler and the PV controller update their events (a
    later time, a higher count) while the Pod stays Pending, so the CLI run a moment after the MCP call may see
    them later, and in another order (newest first). Each event's object, reason and message must still agree."""
    if isinstance(value, list):
        return [settled(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {key: settled(v) for key, v in value.items()}
    for key in ("events", "evidence"):
        if isinstance(value.get(key), list):
            for event in value[key]:
                assert event.get("time") is None or isinstance(event["time"], str), event
            out[key] = sorted(({k: v for k, v in event.items() if k not in ("time", "count")} for event in value[key]),
                              key=lambda event: json.dumps(event, sort_keys=True))
    return out


def test_every_tool_answers_the_facts_the_cli_prints(cluster: Any, seeded: str, tmp_path: Path) -> None:
    """Each answer's items are the objects `kubectl pvleft ... -o json` prints (run as the `reader` user, bound to
    the same ClusterRole), its verdicts the findings and read-only next looks of each."""
    talk = converse(token_kubeconfig(tmp_path / "agent.kc", cluster, seeded), QUESTIONS, tmp_path)
    assert talk.stderr == ""
    seen = set()
    for name, arguments, result in talk.answers:
        assert not result.is_error, (name, result.structured_content)
        doc = result.structured_content
        assert json.loads(result.content[0].text) == doc  # the same answer for clients that read text only
        jsonschema.validate(doc, talk.tools[name].output_schema)
        words = shlex.split(doc["cli"])
        assert words[:3] == ["kubectl", "pvleft", name] and words[-2:] == ["-o", "json"]
        printed = run_plugin(cluster.kubeconfig("reader"), *words[2:])
        assert printed.returncode == 0, printed.stderr
        # Every object either prints, this test's or another's, is what the tool's schema declares.
        item = item_validator(talk.tools[name].output_schema)
        assert_declared(item, doc["items"], (name, arguments))
        assert_declared(item, items(printed.stdout), (name, arguments))
        # The plane is shared: other tests' objects may still be going away between the two answers, so the items
        # compared are this test's (its namespace, its names), and every one of them must be the same.
        assert ours(doc["items"]) == ours(items(printed.stdout)), (name, arguments)
        assert (doc["total"], doc["omitted"], doc["continue"]) == (len(doc["items"]), 0, None)
        assert doc["warnings"] == [line.removeprefix("warning: ") for line in printed.stderr.splitlines()]
        assert doc["context"] == "agent" and doc["partial"] is False and doc["errors"] == [] and doc["unread"] == []
        assert len(doc["verdicts"]) == len(doc["items"])
        assert doc["findings"] == sum(len(v["findings"]) for v in doc["verdicts"])  # one page: all of them
        for verdict, item in zip(doc["verdicts"], doc["items"], strict=True):
            assert all(look.startswith(("kubectl describe ", "kubectl get ")) for look in verdict["next"])
            assert verdict["next"] == item.get("next", verdict["next"])
            assert bool(verdict["findings"]) == item.get("finding", bool(verdict["findings"])), (name, item)
            assert verdict["set_aside"] == item.get("set_aside"), (name, item)
        seen.update((name, v["object"], tuple(v["findings"]) != ()) for v in doc["verdicts"])
    assert ("leftovers", "persistentvolume/mcp-leftover-pv", True) in seen
    assert ("pending", f"pod/{NAMESPACE}/web-0", True) in seen or ("pending", "pod/web-0", True) in seen, seen
    claims = next(doc.structured_content for name, args, doc in talk.answers if args == {"namespace": NAMESPACE})
    assert claims["namespace"] == NAMESPACE and "waiting" in {item["name"] for item in claims["items"]}


def test_why_tells_the_story_the_cli_prints(cluster: Any, seeded: str, tmp_path: Path) -> None:
    """`why` on the Pending Pod and on the leftover PV: `story` is what `kubectl pvleft why ... -o json` prints (its
    `cli`, run as `reader`), valid under the tool's output schema; the Pod's story is blocked on its claim (the
    class does not exist), the PV's names it Released. An object that does not exist is a `not_found` error whose
    message is the line the CLI prints (exit 1); the server answers the next call."""
    missing = ("why", {"object": "pod/no-such-pod", "namespace": NAMESPACE})
    talk = converse(token_kubeconfig(tmp_path / "agent.kc", cluster, seeded), [*STORIES, missing, STORIES[1]], tmp_path)
    assert talk.stderr == ""
    for _, arguments, result in [*talk.answers[:2], talk.answers[3]]:
        assert not result.is_error, (arguments, result.structured_content)
        doc = result.structured_content
        assert json.loads(result.content[0].text) == doc
        jsonschema.validate(doc, talk.tools["why"].output_schema)
        words = shlex.split(doc["cli"])
        assert words[:3] == ["kubectl", "pvleft", "why"] and words[-3:] == [arguments["object"], "-o", "json"], words
        printed = run_plugin(cluster.kubeconfig("reader"), *words[2:])
        assert printed.returncode == 0, printed.stderr
        assert settled(doc["story"]) == settled(json.loads(printed.stdout)), arguments
        assert doc["warnings"] == [line.removeprefix("warning: ") for line in printed.stderr.splitlines()]
        assert doc["context"] == "agent" and doc["unread"] == []
    pod = talk.answers[0][2].structured_content["story"]
    assert pod["subject"] == f"pod/{NAMESPACE}/web-0" and pod["blocked"] is True, pod
    assert (pod["blocking"]["kind"], pod["blocking"]["name"]) == ("PersistentVolumeClaim", "waiting"), pod
    assert all(look.startswith(("kubectl describe ", "kubectl get ")) for look in pod["next"]), pod
    volume = talk.answers[1][2].structured_content["story"]
    assert volume["subject"] == "pv/mcp-leftover-pv" and volume["chain"][0]["state"] == "Released", volume
    absent = talk.answers[2][2]
    assert absent.is_error and absent.structured_content["error"]["kind"] == "not_found", absent.structured_content
    cli = run_plugin(cluster.kubeconfig("reader"), "why", "pod/no-such-pod", "-n", NAMESPACE)
    assert cli.returncode == 1 and cli.stdout == ""
    assert cli.stderr.strip() == absent.structured_content["error"]["message"]
    assert absent.structured_content["error"]["message"] == 'Error from server (NotFound): pods "no-such-pod" not found'


def test_names_asked_for_are_shown_and_those_that_do_not_exist_said(cluster: Any, seeded: str,
                                                                    tmp_path: Path) -> None:
    """NAMEs: the objects named, with or without findings, and kubectl's NotFound line for a name without one."""
    question = ("claims", {"namespace": NAMESPACE, "names": ["idle-a", "no-such-claim"]})
    doc = converse(token_kubeconfig(tmp_path / "agent.kc", cluster, seeded), [question],
                   tmp_path).answers[0][2].structured_content
    printed = run_plugin(cluster.kubeconfig("reader"), *shlex.split(doc["cli"])[2:])
    assert printed.returncode == 1, (printed.stdout, printed.stderr, doc)
    assert doc["items"] == items(printed.stdout)
    assert [item["name"] for item in doc["items"]] == ["idle-a"]
    assert list(doc["not_found"]) == ["no-such-claim"]
    assert doc["not_found"]["no-such-claim"] in printed.stderr.splitlines()


def test_pages_add_up_to_the_whole_answer(cluster: Any, seeded: str, tmp_path: Path) -> None:
    kubeconfig = token_kubeconfig(tmp_path / "agent.kc", cluster, seeded)
    # This test's namespace: on the shared plane another module's claims may come and go between the calls.
    whole = converse(kubeconfig, [("claims", {"namespace": NAMESPACE, "all": True})], tmp_path)
    everything = whole.answers[0][2].structured_content
    assert everything["total"] >= 3, everything
    pages: list[dict[str, Any]] = []
    cursor: str | None = None

    async def walk() -> None:
        nonlocal cursor
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=PLUGIN, args=["mcp", "--kubeconfig", str(kubeconfig)])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            while True:
                arguments: dict[str, Any] = {"namespace": NAMESPACE, "all": True, "limit": 1}
                if cursor is not None:
                    arguments["continue"] = cursor
                doc = (await session.call_tool("claims", arguments)).structured_content
                pages.append(doc)
                cursor = doc["continue"]
                if cursor is None:
                    break

    anyio.run(walk)
    assert [len(page["items"]) for page in pages] == [1] * everything["total"]
    assert [page["omitted"] for page in pages] == list(range(everything["total"] - 1, -1, -1))
    assert [item for page in pages for item in page["items"]] == everything["items"]


def test_a_403_is_an_answer_with_what_could_not_be_read(cluster: Any, seeded: str, tmp_path: Path) -> None:
    """`pvonly` may list PVs and nothing else: leftovers and pending answer with what they lean on unknown (null)
    and the warnings the CLI prints; claims, whose claims it may not list, is a structured 403 with the CLI's own
    line; snapshots too; the server answers the next call as before."""
    talk = converse(cluster.kubeconfig("pvonly"), [("leftovers", {}), ("pending", {"all_namespaces": True}),
                                                   ("claims", {"namespace": NAMESPACE}), ("snapshots", {}),
                                                   ("classes", {}), *STORIES,
                                                   ("why", {"object": "pvc/waiting", "namespace": NAMESPACE})],
                    tmp_path)
    answers = {name: result for name, _, result in talk.answers[:5]}
    stories, claim_story = talk.answers[5:7], talk.answers[7][2]
    for name in ("leftovers", "pending", "classes"):
        doc = answers[name].structured_content
        printed = run_plugin(cluster.kubeconfig("pvonly"), *shlex.split(doc["cli"])[2:])
        assert not answers[name].is_error, name
        if name == "classes":  # the plane's one class: no other test adds or removes it
            assert doc["items"] == items(printed.stdout)
        else:
            assert ours(doc["items"]) == ours(items(printed.stdout)) != [], name
        assert doc["warnings"] == [line.removeprefix("warning: ") for line in printed.stderr.splitlines()], name
        assert_declared(item_validator(talk.tools[name].output_schema), doc["items"] + items(printed.stdout), name)
    assert answers["leftovers"].structured_content["warnings"]
    unread = answers["leftovers"].structured_content["unread"]  # the same refusals, as data
    assert {(u["resource"], u["verb"], u["status"]) for u in unread} >= {("persistentvolumeclaims", "list", 403)}
    assert all(u["warning"] in answers["leftovers"].structured_content["warnings"] for u in unread)
    assert all(item["claim_missing"] is None for item in answers["leftovers"].structured_content["items"])
    for name, resource in (("claims", "persistentvolumeclaims"), ("snapshots", "volumesnapshotcontents")):
        assert answers[name].is_error
        error = answers[name].structured_content["error"]
        assert (error["kind"], error["status"], error["verb"]) == ("forbidden", 403, "list"), error
        assert error["path"].endswith("/" + resource), error
        cli = run_plugin(cluster.kubeconfig("pvonly"), name, "-n", NAMESPACE)
        assert cli.returncode == 1 and cli.stderr.strip() == f"error: {error['message']}"
    # why: the Pod and the PV may be read, their claim not: stories with that link unknown and the CLI's warnings
    # (as data in `unread` too); the claim asked about (the one read why requires) a structured 403 with its line.
    for _, arguments, result in stories:
        doc = result.structured_content
        assert not result.is_error, (arguments, doc)
        jsonschema.validate(doc, talk.tools["why"].output_schema)
        printed = run_plugin(cluster.kubeconfig("pvonly"), *shlex.split(doc["cli"])[2:])
        assert printed.returncode == 0 and doc["story"] == json.loads(printed.stdout), (arguments, printed.stderr)
        assert doc["warnings"] == [line.removeprefix("warning: ") for line in printed.stderr.splitlines()] != []
        assert ("persistentvolumeclaims", "get", 403) in {(u["resource"], u["verb"], u["status"]) for u in doc["unread"]}
        assert {u["warning"] for u in doc["unread"]} <= set(doc["warnings"]), arguments
    error = claim_story.structured_content["error"]
    assert claim_story.is_error and (error["kind"], error["status"], error["verb"]) == ("forbidden", 403, "get"), error
    cli = run_plugin(cluster.kubeconfig("pvonly"), "why", "pvc/waiting", "-n", NAMESPACE)
    assert cli.returncode == 1 and cli.stderr.strip() == f"error: {error['message']}"
    assert "Traceback" not in talk.stderr


def test_an_unreachable_server_is_a_structured_error(cluster: Any, tmp_path: Path) -> None:
    kubeconfig = token_kubeconfig(tmp_path / "gone.kc", cluster, "not-a-real-token",
                                  server=f"https://127.0.0.1:{free_port()}")
    talk = converse(kubeconfig, [("leftovers", {}), ("claims", {"limit": 0}), ("nothing", {}),
                                 ("claims", {"names": "not-a-list"}), ("leftovers", {"cost": True})], tmp_path)
    kinds = [(result.is_error, result.structured_content["error"]["kind"]) for _, _, result in talk.answers]
    assert kinds == [(True, "unreachable"), (True, "usage"), (True, "usage"), (True, "usage"), (True, "usage")]
    cli = run_plugin(kubeconfig, "leftovers")
    assert cli.stderr.strip() == "error: " + talk.answers[0][2].structured_content["error"]["message"]
    assert "needs a cloud census" in talk.answers[4][2].structured_content["error"]["message"]
    assert "Traceback" not in talk.stderr


def test_no_token_in_any_answer_or_on_stderr(cluster: Any, seeded: str, tmp_path: Path) -> None:
    """The server's token, and one the API server refuses, at the highest verbosity: in nothing the server said,
    in nothing it printed on stderr."""
    refused = seeded[:-8] + "AAAAAAAA"  # a token the API server cannot verify: every request a 401
    for token in (seeded, refused):
        kubeconfig = token_kubeconfig(tmp_path / "agent.kc", cluster, token)
        talk = converse(kubeconfig, QUESTIONS + STORIES, tmp_path, "-v", "9")
        traffic = "\n".join(talk.said) + talk.stderr
        assert talk.answers and talk.stderr  # -v 9 logged the requests
        assert token not in traffic and token[-12:] not in traffic
    assert talk.answers[0][2].structured_content["error"]["kind"] == "unauthorized"


def test_a_cloud_census_and_its_failure_are_answered_as_the_cli_prints_them(cluster: Any, seeded: str,
                                                                           moto: MotoServer, tmp_path: Path) -> None:
    """`leftovers` with `aws_region` against moto in server mode: the census's rows (an orphan EBS volume) are in
    the items as -o json prints them, with `cost` (from a price file) their monthly cost and the totals, every item
    as the tool's output schema declares it; with EC2 unreachable the answer is `partial` and `errors` holds the
    CLI's error line, the cluster's rows still there."""
    import subprocess

    ec2 = moto.client("ec2", "us-east-1")
    orphan = create_volume(ec2, "us-east-1b", 30, "gp2", tags=csi_tags("pvc-mcp-orphan", NAMESPACE, "cart", "eks-mcp"))
    keys = {"AWS_ACCESS_KEY_ID": FAKE_KEY_ID, "AWS_SECRET_ACCESS_KEY": FAKE_SECRET}
    reachable = aws_test_env(tmp_path, AWS_ENDPOINT_URL_EC2=moto.endpoint, **keys)
    unreachable = aws_test_env(tmp_path, AWS_ENDPOINT_URL_EC2=f"http://127.0.0.1:{free_port()}", **keys)
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: USD\ndate: 2026-10-01\nprices:\n"
                      "  - {cloud: aws, location: '*', type: gp2, unit_price: 0.10}\n")
    census = {"aws_region": ["us-east-1"], "aws_cluster_name": "eks-mcp"}
    for env, partial in ((reachable, False), (unreachable, True)):
        question = ("leftovers", census if partial else {**census, "cost": True, "price_file": str(prices)})
        # The CLI reads through the server's own kubeconfig: an orphan made by this cluster names its context.
        agent = token_kubeconfig(tmp_path / "agent.kc", cluster, seeded)
        talk = converse(agent, [question], tmp_path, env=env)
        result = talk.answers[0][2]
        assert not result.is_error, result.structured_content
        doc = result.structured_content
        printed = subprocess.run([PLUGIN, *shlex.split(doc["cli"])[2:], "--kubeconfig",
                                  str(agent)], capture_output=True, text=True, env=env,
                                 timeout=120, check=False)
        assert printed.returncode == (4 if partial else 0), printed.stderr
        assert ours(doc["items"]) == ours(items(printed.stdout)) != []  # this test's, as in the first test
        item = item_validator(talk.tools["leftovers"].output_schema)
        assert_declared(item, doc["items"] + items(printed.stdout), question)
        if not partial:  # the PVs' disks, the census's orphan, each with its monthly cost, and the totals
            kinds = {(o.get("kind"), "disk" in o, "monthly_cost" in o) for o in doc["items"]}
            assert {("orphan-volume", True, True), ("monthly-cost-total", False, False)} <= kinds, kinds
            assert any(o.get("monthly_cost", {}) and o["monthly_cost"].get("amount") for o in doc["items"])
        assert doc["partial"] is partial and bool(doc["errors"]) is partial
        assert [(f["cloud"], f["part"]) for f in doc["failed"]] == ([("aws", "census")] if partial else [])
        assert doc["errors"] == [line.removeprefix("error: ") for line in printed.stderr.splitlines()
                                 if line.startswith("error: ")]
        assert (orphan in json.dumps(doc["items"])) is not partial
        assert "persistentvolume/mcp-leftover-pv" in {v["object"] for v in doc["verdicts"]}
        assert doc["findings"] == sum(len(v["findings"]) for v in doc["verdicts"])


def test_streamable_http_on_loopback_answers_as_stdio_does(cluster: Any, seeded: str, tmp_path: Path) -> None:
    """--listen 127.0.0.1:0: the SDK's streamable HTTP client gets the answer the stdio client gets; a request whose
    Host is not loopback (DNS rebinding) is refused."""
    import subprocess
    import urllib.error
    import urllib.request

    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    kubeconfig = token_kubeconfig(tmp_path / "agent.kc", cluster, seeded)
    question = ("leftovers", {"all": True})
    over_stdio = converse(kubeconfig, [question], tmp_path).answers[0][2].structured_content
    server = subprocess.Popen([PLUGIN, "mcp", "--kubeconfig", str(kubeconfig), "--listen", "127.0.0.1:0"],
                              stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        assert line.startswith("answering MCP on http://127.0.0.1:") and line.rstrip().endswith("/mcp"), line
        url = line.split()[-1]

        async def ask() -> Any:
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool(*question)

        over_http = anyio.run(ask)
        assert not over_http.is_error and over_http.structured_content["items"] == over_stdio["items"]
        rebinding = urllib.request.Request(url, data=b"{}", method="POST", headers={"Host": "evil.example"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(rebinding, timeout=10)
        assert 400 <= refused.value.code < 500
    finally:
        server.terminate()
        _, rest = server.communicate(timeout=30)
    assert seeded not in line + rest and "Traceback" not in rest


def test_the_audit_log_shows_only_reads_from_the_server(cluster: Any, seeded: str, tmp_path: Path) -> None:
    """Every request the server's identity sent in this module (stdio, HTTP, pages) was a read; the server's
    --chunk-size is its calls' (lists in pages of one here)."""
    talk = converse(token_kubeconfig(tmp_path / "agent.kc", cluster, seeded), QUESTIONS + STORIES, tmp_path,
                    "--chunk-size", "1")
    assert all(not result.is_error for _, _, result in talk.answers)
    events = cluster.audit_events(ACCOUNT)
    mine = [e for e in events if e.get("user", {}).get("username") == f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"]
    verbs = {e["verb"] for e in mine}
    assert verbs and verbs <= {"get", "list", "watch"}, sorted(verbs)
    resources = {(e.get("objectRef") or {}).get("resource") for e in mine}
    assert {"persistentvolumes", "persistentvolumeclaims", "storageclasses", "pods"} <= resources
    assert any("limit=1&" in e["requestURI"] + "&" and "continue=" in e["requestURI"] for e in mine)
