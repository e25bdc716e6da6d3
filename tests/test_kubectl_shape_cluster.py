"""What kubectl does, done the same way, with kubectl on the same plane as the oracle: `version` (client, server,
-o json, an unreachable server), -L/--label-columns (kubectl's headers, values and order, before LABELS),
--chunk-size (the page the API server is asked for, seen in its audit log; 0: no limit, one answer), the usage
errors of the flags both share (pflag's words: k8s.io/cli-runtime and spf13/pflag flag.go), and --help in
kubectl's layout (cobra's usage template: Examples, Options, Usage, the `options` line)."""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from plugin_runner import run_plugin
from recording.classes_claims import cleanup
from scenarios import apply, host_path_pv, wait_pv_phase

pytestmark = pytest.mark.cluster

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"


def kubectl(cluster: Any, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([KUBECTL, "--kubeconfig", str(cluster.kubeconfig("admin")), *args], check=False,
                          capture_output=True, text=True, timeout=60)


def plugin(cluster: Any, *args: str) -> subprocess.CompletedProcess:
    return run_plugin(cluster.kubeconfig("admin"), *args)


@pytest.fixture(scope="module")
def labelled(cluster: Any) -> Iterator[str]:
    p = f"ks-{uuid.uuid4().hex[:6]}-"
    pvs = [host_path_pv(f"{p}a", claim=("default", f"{p}gone"), labels={"app.kubernetes.io/name": "db", "tier": "data"}),
           host_path_pv(f"{p}b", claim=("default", f"{p}gone-too"), labels={"tier": "cache"})]
    for pv in pvs:  # bound once to a claim (by uid) that is gone: the PV controller makes it Released
        pv["spec"]["claimRef"]["uid"] = str(uuid.uuid4())
    apply(cluster, *pvs)
    wait_pv_phase(cluster, f"{p}a", "Released")
    wait_pv_phase(cluster, f"{p}b", "Released")
    yield p
    cleanup(cluster, p)


def test_version_as_kubectl_prints_it(cluster: Any) -> None:
    theirs = json.loads(kubectl(cluster, "version", "-o", "json").stdout)
    ours = plugin(cluster, "version", "-o", "json")
    assert ours.returncode == 0, ours.stderr
    document = json.loads(ours.stdout)
    assert document["serverVersion"] == theirs["serverVersion"]  # the server's own answer, as it gave it
    assert document["clientVersion"]["gitVersion"].startswith("v")
    text = plugin(cluster, "version")
    assert text.stdout.splitlines() == [f"Client Version: {document['clientVersion']['gitVersion']}",
                                        f"Server Version: {theirs['serverVersion']['gitVersion']}"]
    client = run_plugin(None, "version", "--client", "-o", "yaml")  # asks no server: no kubeconfig needed
    assert client.returncode == 0 and client.stdout.startswith("clientVersion:\n"), client.stderr


def test_version_of_a_server_that_cannot_be_reached_is_the_client_then_one_error(cluster: Any) -> None:
    result = plugin(cluster, "version", "-s", "https://127.0.0.1:1")
    theirs = kubectl(cluster, "version", "-s", "https://127.0.0.1:1")
    assert result.returncode == theirs.returncode == 1
    assert result.stdout.startswith("Client Version: v") and theirs.stdout.startswith("Client Version: v")
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")


def test_label_columns_as_kubectl_get(cluster: Any, labelled: str) -> None:
    p = labelled
    flags = ["-L", "app.kubernetes.io/name,tier", "-L", "absent", "--show-labels"]
    ours = plugin(cluster, "leftovers", f"{p}a", f"{p}b", *flags)
    theirs = kubectl(cluster, "get", "pv", f"{p}a", f"{p}b", *flags)
    assert ours.returncode == theirs.returncode == 0, ours.stderr

    def tail(text: str, columns: int) -> list[list[str]]:  # the label columns and LABELS, at the end of each line
        lines = text.splitlines()
        starts = [m.start() for m in re.finditer(r"\S+", lines[0])][-columns:]
        return [[line[s:e].strip() for s, e in zip(starts, [*starts[1:], None], strict=True)] for line in lines]

    assert tail(ours.stdout, 4) == tail(theirs.stdout, 4)
    assert tail(ours.stdout, 4)[0] == ["NAME", "TIER", "ABSENT", "LABELS"]


def test_chunk_size_is_the_page_asked_for(cluster: Any, labelled: str) -> None:
    def limits(*args: str) -> set[str]:
        before = cluster.audit_log.read_text().count("\n")
        assert plugin(cluster, "leftovers", *args).returncode == 0
        events = [json.loads(line) for line in cluster.audit_log.read_text().splitlines()[before:]]
        lists = [e["requestURI"] for e in events if e.get("verb") == "list" and e.get("stage") == "ResponseComplete"
                 and e["requestURI"].startswith("/api/v1/persistentvolumes")]
        assert lists, "no list of PVs in the audit log"
        return {dict(re.findall(r"[?&](limit)=(\d+)", uri)).get("limit", "none") for uri in lists}

    assert limits() == {"500"}  # kubectl's default
    assert limits("--chunk-size", "1") == {"1"}  # one PV a page: the two PVs of this test take two pages or more
    assert limits("--chunk-size=0") == {"none"}  # as kubectl --chunk-size=0: no limit, one answer


@pytest.mark.parametrize("args", [["-n"], ["--namespace"], ["-A=maybe"], ["--chunk-size=abc"], ["--bogus"],
                                  ["-o", "yml"]])
def test_a_mistyped_flag_in_kubectl_s_words(cluster: Any, args: list[str]) -> None:
    """The message kubectl gives for the same mistake on `get`; kubectl's second line (See 'kubectl get --help')
    is ours too, folded into the one error line."""
    ours = plugin(cluster, "leftovers", *args)
    theirs = kubectl(cluster, "get", "pv", *args)
    assert ours.returncode != 0 and theirs.returncode != 0
    said = re.sub(r"^(error|Error): ", "", theirs.stderr.splitlines()[0])
    assert ours.stderr.count("\n") == 1 and ours.stderr.startswith("error: ")
    expected = said.split(", allowed formats are:")[0]  # the formats each knows differ
    assert expected in ours.stderr, (ours.stderr, said)


def test_help_in_kubectl_s_layout(cluster: Any) -> None:
    def sections(text: str) -> list[str]:
        return [line for line in text.splitlines() if re.fullmatch(r"[A-Z][a-z]+:", line)]

    theirs = subprocess.run([KUBECTL, "get", "--help"], capture_output=True, text=True, check=True).stdout
    ours = plugin(cluster, "leftovers", "--help").stdout
    assert [s for s in sections(ours) if s != "Columns:"] == sections(theirs) == ["Examples:", "Options:", "Usage:"]
    last = ' options" for a list of global command-line options (applies to all commands).'
    assert theirs.splitlines()[-1] == f'Use "kubectl{last}' and ours.splitlines()[-1].endswith(last)
    # Each option as pflag prints it: "    -o, --output='':" then its text on a line of its own, a tab in.
    assert re.search(r"\n    -o, --output='':\n\t\S", ours) and re.search(r"\n    -o, --output='':\n\t\S", theirs)
    assert "\n    --chunk-size=500:\n" in ours and "\n    --chunk-size=500:\n" in theirs
    # The shared flags are `options`', as kubectl's are `kubectl options`'.
    assert "--kubeconfig=" not in ours and "--kubeconfig=" in plugin(cluster, "options").stdout
    assert "--kubeconfig=" in subprocess.run([KUBECTL, "options"], capture_output=True, text=True, check=True).stdout
