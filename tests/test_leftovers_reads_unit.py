"""What find_leftovers reads and keeps, over wire JSON recorded from the real control plane, and over a
paging API server on loopback (requests counted as the server saw them).

It lists each kind once, whatever state the PVs are in: the claims are read into an index before the PVs'
pages are used, and only the PVs that can be rows are kept whole. Nothing is read again (issue #22).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

from fake_apiserver import FakeAPIServer, status
from kubectl_pvleft.analyses.leftovers import find_leftovers
from kubectl_pvleft.errors import Forbidden
from kubectl_pvleft.kube.api import Kind, KubeAPI
from kubectl_pvleft.kube.kubeconfig import Selection, load_connection
from kubectl_pvleft.records import ClaimIdentity, PersistentVolume, StorageClass
from wire import items

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


THREE_LISTS = [("list", "persistentvolumeclaims"), ("list", "persistentvolumes"), ("list", "storageclasses")]


def test_a_bound_pv_whose_claim_is_gone_is_reported_from_the_first_lists() -> None:
    reader = RecordedReader(drop=("shop/web",))
    result = find_leftovers(reader)
    rows = {r.pv.name: r for r in result.rows}
    assert sorted(rows) == ["mariadb-pv", "scratch-pv", "shop-pv", "web-pv"]
    assert (rows["web-pv"].pv.phase, rows["web-pv"].claim_state) == ("Bound", "missing")
    assert sorted(reader.asked) == THREE_LISTS  # it read the PV again, then its claim: one GET each


def test_bound_pvs_with_their_claims_cost_no_more_reads() -> None:
    reader = RecordedReader()
    result = find_leftovers(reader)
    assert sorted(r.pv.name for r in result.rows) == ["mariadb-pv", "scratch-pv", "shop-pv"]
    assert sorted(reader.asked) == THREE_LISTS
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


@pytest.mark.parametrize("count", [5, 500])
def test_every_claim_replaced_costs_no_more_than_the_three_lists(count: int) -> None:
    """A few replaced claims or hundreds: the lists alone say so (it sent a GET for each PV and each claim
    when they were few, and listed both again when many)."""
    reader = Synthetic(count)
    rows = find_leftovers(reader).rows
    assert len(rows) == count and {r.claim_state for r in rows} == {"replaced"}
    assert sorted(reader.asked) == THREE_LISTS


def test_claims_that_may_not_be_listed_are_unknown_never_missing_and_never_got() -> None:
    """A 403 on the claim list: every claim state is unknown (said once), never "missing" (which would tell an
    operator the claim is gone), and no GET goes looking for them one by one (its 404 could not be told from
    the 403's "not allowed" anyway)."""

    class NoClaims(RecordedReader):
        def list(self, kind: Kind[Any], namespace: Optional[str] = None, **selectors: Any) -> Iterator[Any]:
            if kind.plural != "persistentvolumeclaims":
                return super().list(kind, namespace, **selectors)
            self.asked.append(("list", kind.plural))

            def refused() -> Iterator[Any]:  # as KubeAPI's: the 403 comes with the first page, when iterated
                raise Forbidden(403, "Forbidden", "persistentvolumeclaims is forbidden", "list",
                                "/api/v1/persistentvolumeclaims")
                yield

            return refused()

    reader = NoClaims(drop=("shop/web",))
    result = find_leftovers(reader)
    assert all(r.claim_state == "unknown" for r in result.rows if r.claim) and result.rows
    assert "web-pv" not in {r.pv.name for r in result.rows}  # a Bound PV of unknown claim: no row
    assert sorted(reader.asked) == THREE_LISTS
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


def test_pvs_whose_claims_are_gone_are_listed_once_with_the_callers_selector() -> None:
    """-l picks 500 of 1,000 PVs whose claims are all gone ("missing"): one list of the selected PVs (it
    listed them a second time to read them whole)."""

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
    assert reader.read == [("mix=missing", 500)]
    assert sorted(reader.asked) == THREE_LISTS


# -- issue #22: requests per mix at 10,000 PVs + 10,000 PVCs, as a paging API server counts them ------------

ESTATE, SHOP = 10_000, "shop"
MIXES = ("bound", "released", "missing", "replaced")


def mix_estate(mix: str) -> dict[str, list[dict[str, Any]]]:
    """ESTATE PVs all in one state and ESTATE claims, as wire JSON: bound to each other; Released (claim gone,
    the claims are others); still Bound to a gone claim; still Bound to a claim whose name has a new uid."""
    pvs, claims = [], []
    for i in range(ESTATE):
        claim, uid = (f"gone-{i}", f"gone-uid-{i}") if mix in ("released", "missing") else (f"data-{i}", f"uid-{i}")
        pvs.append({"metadata": {"name": f"pv-{i:05d}", "uid": f"pv-uid-{i}"},
                    "spec": {"claimRef": {"namespace": SHOP, "name": claim, "uid": uid},
                             "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "standard",
                             "capacity": {"storage": "1Gi"}},
                    "status": {"phase": "Released" if mix == "released" else "Bound"}})
        live_uid = f"new-uid-{i}" if mix == "replaced" else f"uid-{i}"
        claims.append({"metadata": {"name": f"data-{i}", "namespace": SHOP, "uid": live_uid}})
    classes = [{"metadata": {"name": "standard"}, "provisioner": "x", "reclaimPolicy": "Retain"}]
    return {"persistentvolumes": pvs, "persistentvolumeclaims": claims, "storageclasses": classes}


def paging(estate: dict[str, list[dict[str, Any]]]):
    """Lists by limit and continue (the offset of the next page), as the API server pages them; a GET is a 404."""

    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        plural = path.rsplit("/", 1)[-1]
        if plural not in estate:
            return 404, status(404, "NotFound", f"{path} not found")
        start, limit = int(query.get("continue", ["0"])[0]), int(query["limit"][0])
        meta = {"resourceVersion": "1000"}
        if start + limit < len(estate[plural]):
            meta["continue"] = str(start + limit)
        return 200, {"kind": "List", "apiVersion": "v1", "metadata": meta,
                     "items": estate[plural][start:start + limit]}

    return handler


@pytest.mark.parametrize("mix", MIXES)
def test_each_kind_is_listed_once_whatever_the_mix(tmp_path: Path, mix: str) -> None:
    """20 pages of PVs, 20 of claims, 1 of classes: 41 requests on every mix (at most 50, issue #22). It sent 81 on
    "missing" and "replaced": the PVs whose claim uid was not in the claim list, and their claims, listed again."""
    with FakeAPIServer(paging(mix_estate(mix))) as server:
        api = KubeAPI(load_connection(Selection(kubeconfig=str(server.kubeconfig(tmp_path / "kc")))))
        rows = find_leftovers(api).rows
    assert len(rows) == (0 if mix == "bound" else ESTATE)
    assert {r.claim_state for r in rows} <= {"replaced" if mix == "replaced" else "missing"}
    requests = Counter(request.split("?")[0].rsplit("/", 1)[-1] for request in server.requests)
    assert requests == {"persistentvolumes": 20, "persistentvolumeclaims": 20, "storageclasses": 1}
