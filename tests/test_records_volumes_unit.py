"""kubectl_pvleft.records.volumes: what a decoded claim keeps of the page it came from."""

from __future__ import annotations

import json
import sys

from kubectl_pvleft.kube.kinds import PERSISTENT_VOLUME_CLAIMS


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
