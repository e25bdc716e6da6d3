"""`why`'s pure parts: KIND/NAME in kubectl's words, the usage it refuses, and the story's text and JSON (the
blocking link, evidence newest first, hostile names escaped)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from cli_runner import invoke
from kubectl_pvleft.analyses.why import subject
from kubectl_pvleft.output.story import Evidence, Link, Story, newest_first, text

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(("word", "expected"), [
    ("pod/web-0", ("pod", "web-0")), ("po/web-0", ("pod", "web-0")), ("pods/web-0", ("pod", "web-0")),
    ("pvc/data", ("pvc", "data")), ("PersistentVolumeClaim/data", ("pvc", "data")), ("pv/pvc-1", ("pv", "pvc-1")),
    ("vsc/snapcontent-1", ("volumesnapshotcontent", "snapcontent-1")),
    ("volumesnapshotcontent.snapshot.storage.k8s.io/x", ("volumesnapshotcontent", "x")),
    ("deploy/web", None), ("pod", None), ("pod/", None), ("pod/a/b", None),
])
def test_kind_and_name_in_kubectls_words(word: str, expected: object) -> None:
    assert subject(word) == expected


@pytest.mark.parametrize("args", [("why",), ("why", "pod/a", "pod/b"), ("why", "node/a"), ("why", "pod/a", "-w"),
                                  ("why", "pod/a", "-A"), ("why", "pod/a", "-o", "wide"),
                                  ("why", "pod/a", "--all-contexts")])
def test_what_why_refuses_is_a_usage_error_before_any_request(args: tuple[str, ...]) -> None:
    result = invoke(*args)
    assert result.code == 2 and result.stdout == "" and result.stderr.startswith("error: ")
    assert result.stderr.count("\n") == 1


def story() -> Story:
    return Story("pod/shop/web-0", (
        Link("Pod", "web-0", "Pending", "shop", 0, next=("kubectl describe pod web-0 -n shop",)),
        Link("PersistentVolumeClaim", "data\x1b[31m", "Pending", "shop", 1, findings=("pending: no class",),
             owner="persistentvolume-controller", analysis="claims", next=("kubectl describe pvc data -n shop",)),
        Link("StorageClass", "fast", "missing", None, 2),
    ), newest_first([Evidence(NOW - timedelta(minutes=5), "PersistentVolumeClaim shop/data", "ProvisioningFailed",
                              "old"),
                     Evidence(None, "Pod shop/web-0", "Unschedulable", "undated"),
                     Evidence(NOW - timedelta(minutes=1), "PersistentVolumeClaim shop/data", "ProvisioningFailed",
                              "new")]))


def test_the_first_link_with_findings_blocks_and_its_commands_come_first() -> None:
    told = story()
    assert told.blocking is not None and told.blocking.kind == "PersistentVolumeClaim"
    assert told.next == ("kubectl describe pvc data -n shop", "kubectl describe pod web-0 -n shop")
    assert [e.message for e in told.evidence] == ["new", "old", "undated"]
    doc = told.to_json()
    assert doc["blocked"] is True and doc["blocking"]["owner"] == "persistentvolume-controller"
    assert [link["kind"] for link in doc["chain"]] == ["Pod", "PersistentVolumeClaim", "StorageClass"]


def test_the_text_names_the_blocker_and_escapes_what_the_server_wrote() -> None:
    out = text(story(), now=NOW)
    assert "\x1b" not in out and "data\\x1b[31m" in out
    lines = out.splitlines()
    assert lines[0] == "pod/shop/web-0: blocked at PersistentVolumeClaim shop/data\\x1b[31m, owner: " \
                       "persistentvolume-controller"
    assert any(line.endswith("Pending  <- blocks") for line in lines)
    assert "60s ago  PersistentVolumeClaim shop/data  ProvisioningFailed: new" in [line.strip() for line in lines]


def test_a_story_with_nothing_blocking_says_so() -> None:
    calm = Story("pv/x", (Link("PersistentVolume", "x", "Bound"),))
    assert calm.blocking is None and text(calm).startswith("pv/x: nothing blocks it")
