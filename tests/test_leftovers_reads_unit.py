"""What find_leftovers reads and keeps, over wire JSON recorded from the real control plane.

It keeps whole only the PVs that can be rows; a Bound PV is kept as its name and its claim's uid, and the
few whose claim uid the claim list does not hold are read again by name (one GET each), with their claim.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Optional

import pytest
from wire import items

from kubectl_pvleft.analyses.leftovers import find_leftovers
from kubectl_pvleft.kube.api import Kind
from kubectl_pvleft.records import ClaimIdentity, PersistentVolume, StorageClass

POOLS = {"persistentvolumes": ("leftovers_pvs", PersistentVolume),
         "persistentvolumeclaims": ("leftovers_pvc_metadata", ClaimIdentity),
         "storageclasses": ("leftovers_storageclasses", StorageClass)}


class RecordedReader:
    """The Reader protocol over recorded lists; ``drop`` removes claims (namespace/name) from its answers."""

    def __init__(self, drop: tuple[str, ...] = ()) -> None:
        self.drop = drop
        self.asked: list[tuple[str, ...]] = []

    def _objects(self, plural: str) -> list[Any]:
        pool, record = POOLS[plural]
        found = [record.from_wire(o) for o in items(pool)]
        return [o for o in found if f"{o.metadata.namespace}/{o.metadata.name}" not in self.drop]

    def list(self, kind: Kind[Any], namespace: Optional[str] = None, *, field_selector: Optional[str] = None,
             label_selector: Optional[str] = None) -> Iterator[Any]:
        self.asked.append(("list", kind.plural))
        return iter(self._objects(kind.plural))

    def get(self, kind: Kind[Any], name: str, namespace: Optional[str] = None) -> Any:
        self.asked.append(("get", kind.plural, f"{namespace}/{name}" if namespace else name))
        return next((o for o in self._objects(kind.plural)
                     if o.metadata.name == name and o.metadata.namespace == namespace), None)


def test_a_bound_pv_whose_claim_is_gone_is_read_again_and_reported() -> None:
    reader = RecordedReader(drop=("shop/web",))
    result = find_leftovers(reader)
    rows = {r.pv.name: r for r in result.rows}
    assert sorted(rows) == ["mariadb-pv", "scratch-pv", "shop-pv", "web-pv"]
    assert (rows["web-pv"].pv.phase, rows["web-pv"].claim_state) == ("Bound", "missing")
    # The PV again, then its claim (gone: missing, not replaced).
    assert [a for a in reader.asked if a[0] == "get"] == [("get", "persistentvolumes", "web-pv"),
                                                          ("get", "persistentvolumeclaims", "shop/web")]


def test_bound_pvs_with_their_claims_cost_no_more_reads() -> None:
    reader = RecordedReader()
    result = find_leftovers(reader)
    assert sorted(r.pv.name for r in result.rows) == ["mariadb-pv", "scratch-pv", "shop-pv"]
    assert reader.asked == [("list", "persistentvolumes"), ("list", "persistentvolumeclaims"),
                            ("list", "storageclasses")]
    assert result.all_pvs == []  # every PV is kept only for a cloud census


def test_all_and_a_cloud_census_keep_every_pv() -> None:
    every = {pv["metadata"]["name"] for pv in items("leftovers_pvs")}
    assert {r.pv.name for r in find_leftovers(RecordedReader(), include_all=True).rows} == every
    kept = find_leftovers(RecordedReader(), keep_every_pv=True)
    assert {pv.name for pv in kept.all_pvs} == every
    assert sorted(r.pv.name for r in kept.rows) == ["mariadb-pv", "scratch-pv", "shop-pv"]


def test_claims_of_another_namespace_are_not_read_again() -> None:
    reader = RecordedReader(drop=("shop/web",))
    result = find_leftovers(reader, claim_namespace="mariadb")
    assert [r.pv.name for r in result.rows] == ["mariadb-pv"]
    assert not [a for a in reader.asked if a[0] == "get"]


def test_a_gone_claim_replaced_by_a_namesake_is_replaced() -> None:
    """web-pv's claim uid is not in the list, but a claim of that name is: replaced, not missing."""

    class Renamed(RecordedReader):
        def _objects(self, plural: str) -> list[Any]:
            found = super()._objects(plural)
            if plural != "persistentvolumeclaims":
                return found
            return [ClaimIdentity.from_wire({"metadata": {"name": o.metadata.name, "namespace": o.metadata.namespace,
                                                          "uid": "another-" + o.metadata.uid}})
                    if o.metadata.name == "web" else o for o in found]

    rows = {r.pv.name: r for r in find_leftovers(Renamed()).rows}
    assert (rows["web-pv"].pv.phase, rows["web-pv"].claim_state) == ("Bound", "replaced")


class Synthetic:
    """A cluster of ``count`` Bound PVs whose claims were all deleted and recreated under the same names (new uids):
    every claim is "replaced". Counts what it is asked."""

    def __init__(self, count: int) -> None:
        self.asked: list[tuple[str, ...]] = []
        self.pvs = [PersistentVolume.from_wire({
            "metadata": {"name": f"pv-{i}", "uid": f"pv-uid-{i}"},
            "spec": {"claimRef": {"namespace": "shop", "name": f"data-{i}", "uid": f"old-{i}"},
                     "persistentVolumeReclaimPolicy": "Retain", "capacity": {"storage": "1Gi"}},
            "status": {"phase": "Bound"}}) for i in range(count)]
        self.claims = [ClaimIdentity.from_wire({"metadata": {"name": f"data-{i}", "namespace": "shop",
                                                             "uid": f"new-{i}"}}) for i in range(count)]

    def list(self, kind: Kind[Any], namespace: Optional[str] = None, **selectors: Any) -> Iterator[Any]:
        self.asked.append(("list", kind.plural))
        return iter({"persistentvolumes": self.pvs, "persistentvolumeclaims": self.claims}.get(kind.plural, []))

    def get(self, kind: Kind[Any], name: str, namespace: Optional[str] = None) -> Any:
        self.asked.append(("get", kind.plural, name))
        pool = self.pvs if kind.plural == "persistentvolumes" else self.claims
        return next((o for o in pool if o.metadata.name == name), None)


@pytest.mark.parametrize("count, gets", [(5, 10), (500, 0)])
def test_requests_stay_bounded_when_every_claim_was_replaced(count: int, gets: int) -> None:
    """A few replaced claims: one GET for the PV and one for its claim; hundreds: lists instead (it sent one GET
    per claim: 10,004 requests at 10,000 PVs)."""
    reader = Synthetic(count)
    rows = find_leftovers(reader).rows
    assert len(rows) == count and {r.claim_state for r in rows} == {"replaced"}
    assert sum(1 for a in reader.asked if a[0] == "get") == gets
    assert len(reader.asked) - gets <= 5  # the three lists, and at most the PVs and claims listed again


def test_a_claim_that_may_be_listed_but_not_got_is_unknown_never_missing() -> None:
    """A user whose role grants list but not get: the re-read of a gone claim's namesake is a 403. The claim's
    state is unknown (said once), never "missing" (which would tell an operator the claim is gone)."""
    from kubectl_pvleft.errors import Forbidden

    class ListOnly(RecordedReader):
        def get(self, kind: Kind[Any], name: str, namespace: Optional[str] = None) -> Any:
            if kind.plural == "persistentvolumeclaims":
                self.asked.append(("get", kind.plural, f"{namespace}/{name}"))
                raise Forbidden(403, "Forbidden", f'persistentvolumeclaims "{name}" is forbidden', "get",
                                f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}")
            return super().get(kind, name, namespace)

    reader = ListOnly(drop=("shop/web",))
    result = find_leftovers(reader)
    rows = {r.pv.name: r for r in result.rows}
    assert ("get", "persistentvolumeclaims", "shop/web") in reader.asked  # the 403 was really met
    assert "web-pv" not in rows or rows["web-pv"].claim_state != "missing"  # a Bound PV of unknown claim: no row
    assert all(r.claim_state != "missing" for r in result.rows)
    assert len(result.warnings) == 1 and "claim" in result.warnings[0]


def test_rows_are_in_kubectls_order_by_name_whatever_order_the_server_lists_in() -> None:
    """The recorded lists are already sorted (as the API server lists them): reversed here, so only our sort
    can put the rows in name order."""

    class Reversed(RecordedReader):
        def _objects(self, plural: str) -> list[Any]:
            return list(reversed(super()._objects(plural)))

    names = [r.pv.name for r in find_leftovers(Reversed(), include_all=True).rows]
    assert names == sorted(names) and len(names) > 3
    assert [pv.metadata.name for pv in Reversed()._objects("persistentvolumes")] != sorted(names)


def test_many_pvs_read_again_are_listed_with_the_callers_selector() -> None:
    """-l picks 500 of 1,000 PVs whose claims are all gone ("missing"): the PVs listed again are the selected
    ones only (it listed every PV again: 10,000 to re-read 2,500, 20 pages instead of 5)."""

    class Labelled(Synthetic):
        def __init__(self) -> None:
            super().__init__(1000)
            for i, pv in enumerate(self.pvs):
                pv.metadata.labels["mix"] = "missing" if i % 2 else "bound"
            self.claims = []  # every claim gone, no namesake
            self.read: list[tuple[Optional[str], int]] = []  # (selector, PVs answered) of each PV list

        def list(self, kind: Kind[Any], namespace: Optional[str] = None, **selectors: Any) -> Iterator[Any]:
            if kind.plural != "persistentvolumes":
                return super().list(kind, namespace, **selectors)
            self.asked.append(("list", kind.plural))
            selector = selectors.get("label_selector")
            answered = [pv for pv in self.pvs if selector is None or f"mix={pv.metadata.labels['mix']}" == selector]
            self.read.append((selector, len(answered)))
            return iter(answered)

    reader = Labelled()
    rows = find_leftovers(reader, label_selector="mix=missing").rows
    assert len(rows) == 500 and {r.claim_state for r in rows} == {"missing"}
    assert reader.read == [("mix=missing", 500), ("mix=missing", 500)]
    assert not [a for a in reader.asked if a[0] == "get"]
