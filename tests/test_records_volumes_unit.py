"""kubectl_pvleft.records.volumes: what a decoded claim keeps of the page it came from; what a PV names as its driver."""

from __future__ import annotations

import json
import sys

from kubectl_pvleft.kube.kinds import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES


def test_a_decoded_claim_holds_its_managed_fields_not_its_page() -> None:
    """ClaimMeta.managed_fields is a msgspec.Raw: decoded from a page it is a view into the whole page, so each claim
    a census keeps would keep its page alive (176 MiB of pages under 100,000 claims, BENCHMARKS.md). The record
    copies its bytes: after decoding, nothing refers to the page."""
    managed = [{"manager": "kubectl", "operation": "Update", "time": "2026-12-01T00:00:00Z",
                "fieldsV1": {"f:spec": {"f:resources": {"f:requests": {".": {}}}}}}]
    page = json.dumps({"metadata": {"resourceVersion": "7"}, "items": [
        {"metadata": {"name": f"c{i}", "namespace": "ns", "uid": f"u{i}", "managedFields": managed}}
        for i in range(3)]}).encode()
    before = sys.getrefcount(page)
    claims = PERSISTENT_VOLUME_CLAIMS.page_decoder.decode(page).items
    assert sys.getrefcount(page) == before
    assert [c.meta.last_write_of(b'"f:resources"', b'"f:requests"') is not None for c in claims] == [True] * 3
    assert json.loads(bytes(claims[0].meta.managed_fields)) == managed


def test_an_in_tree_pv_names_its_source_as_driver_and_handle() -> None:
    """The DRIVER of a PV without CSI is its in-tree source's wire name, read from the spec's fields typed
    Optional[InTreeSource] (every in-tree source the record declares), and the handle is what names its storage."""
    page = json.dumps({"metadata": {}, "items": [
        {"metadata": {"name": "a"}, "spec": {"hostPath": {"path": "/data/a"}}},
        {"metadata": {"name": "b"}, "spec": {"gcePersistentDisk": {"pdName": "disk-b"}}},
        {"metadata": {"name": "c"}, "spec": {"scaleIO": {}}},
        {"metadata": {"name": "d"}, "spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-d"}}}]}).encode()
    pvs = PERSISTENT_VOLUMES.page_decoder.decode(page).items
    assert [(pv.driver, pv.volume_handle) for pv in pvs] == [
        ("hostPath", "/data/a"), ("gcePersistentDisk", "disk-b"), ("scaleIO", None), ("ebs.csi.aws.com", "vol-d")]
