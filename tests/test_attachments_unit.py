"""The attachments analysis's pure rules: the attacher's finalizer name, the attach-limit margin, --older-than
and unknown evidence (None) never read as gone."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from kubectl_pvleft.analyses import attachments
from kubectl_pvleft.records import VolumeAttachment
from kubectl_pvleft.records.nodes import CSINode, Node

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc)


def va(name: str, node: str = "n1", driver: str = "ebs.csi.aws.com", **status: object) -> VolumeAttachment:
    return VolumeAttachment.from_wire({"metadata": {"name": name, "uid": f"uid-{name}",
                                                    "creationTimestamp": "2026-12-01T00:00:00Z"},
                                       "spec": {"attacher": driver, "nodeName": node,
                                                "source": {"persistentVolumeName": f"pv-{name}"}},
                                       "status": status})


def ready(name: str) -> Node:
    return Node.from_wire({"metadata": {"name": name}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}})


def test_the_finalizer_name_is_the_attachers_own() -> None:
    """external-attacher pkg/controller/util.go GetFinalizerName / SanitizeDriverName: [^a-zA-Z0-9-] -> "-", and
    a name ending in "-" gets an "X"."""
    assert attachments.finalizer_of("ebs.csi.aws.com") == "external-attacher/ebs-csi-aws-com"
    assert attachments.finalizer_of("csi.vsphere.vmware.com") == "external-attacher/csi-vsphere-vmware-com"
    assert attachments.finalizer_of("odd_driver.") == "external-attacher/odd-driver-X"


def test_near_the_limit_is_a_tenth_of_it_at_least_one_slot() -> None:
    """nodevolumelimits/csi.go filters a node once attached + new > allocatable.count: at the limit, no more."""
    csinode = CSINode.from_wire({"metadata": {"name": "n1"}, "spec": {"drivers": [
        {"name": "d", "nodeID": "i-1", "allocatable": {"count": 25}}]}})
    assert attachments.node_troubles("n1", csinode, {"d": 22}, True)[0] == ()
    near = attachments.node_troubles("n1", csinode, {"d": 23}, True)[0]
    assert [t.kind for t in near] == ["near-attach-limit"]
    assert [t.kind for t in attachments.node_troubles("n1", csinode, {"d": 25}, True)[0]] == ["attach-limit"]
    unknown = attachments.node_troubles("n1", None, {"d": 25}, False)
    assert unknown[0] == () and unknown[1][0].registered is None  # CSINodes unreadable: nothing said


def test_unreadable_nodes_and_volumes_are_unknown_never_missing() -> None:
    result = attachments.assess([va("a")], None, None, None, include_all=True, now=NOW)
    row = result.rows[0]
    assert row.troubles == () and row.node_state is None and row.pv_state is None
    gone = attachments.assess([va("a")], [], [], [], now=NOW).rows
    assert [t.kind for t in gone[0].troubles] == ["node-missing", "pv-missing"]


def test_older_than_sets_aside_a_fresh_error_and_counts_an_old_one() -> None:
    fresh = va("a", attachError={"message": "boom", "time": (NOW - timedelta(minutes=5)).isoformat()})
    old = va("b", attachError={"message": "boom", "time": (NOW - timedelta(hours=2)).isoformat()})
    result = attachments.assess([fresh, old], [ready("n1")], None, None, include_all=True,
                                older_than=3600, now=NOW)
    by_name = {r.name: r for r in result.rows}
    assert attachments.VERDICT.held(by_name["a"]) == "in trouble for less than --older-than"
    assert attachments.VERDICT.is_finding(by_name["b"]) and result.finding_count == 1
