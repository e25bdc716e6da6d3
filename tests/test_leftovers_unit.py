"""leftovers' pure logic over wire JSON recorded from the real control plane."""

from __future__ import annotations

import json
from datetime import timedelta

from kubectl_pvleft.analyses import leftovers
from kubectl_pvleft.analyses.leftovers import ClaimIndex, Leftover, LeftoverResult, assess, to_json
from kubectl_pvleft.records import Absent, ClaimIdentity, PersistentVolume, StorageClass
from reports import table_lines
from wire import items

SEED = {"name": "mariadb-pv", "phase": "Released", "reclaim": "Retain", "claim": "mariadb/mariadb",
        "claim_missing": True, "storage_class": "standard", "capacity": "250Mi"}


def pvs() -> list[PersistentVolume]:
    return [PersistentVolume.from_wire(o) for o in items("leftovers_pvs")]


def claims(drop: tuple[str, ...] = ()) -> ClaimIndex:
    live = [ClaimIdentity.from_wire(o) for o in items("leftovers_pvc_metadata")]
    return ClaimIndex.of(c for c in live if f"{c.namespace}/{c.name}" not in drop)


def classes() -> dict[str, StorageClass]:
    return {sc.name: sc for sc in map(StorageClass.from_wire, items("leftovers_storageclasses"))}


def by_name(rows: list[Leftover]) -> dict[str, Leftover]:
    return {r.pv.name: r for r in rows}


def test_seed_line_comes_first_and_exact() -> None:
    row = to_json(by_name(assess(pvs(), claims(), classes()))["mariadb-pv"])
    assert json.dumps(dict(list(row.items())[:7])) == json.dumps(SEED)
    assert list(row)[7:] == ["claim_uid", "claim_state", "class_reclaim", "class_missing", "driver",
                             "volume_handle", "reason", "message", "last_phase_transition_time", "kept", "status",
                             "deletion_timestamp", "finalizers", "held_by", "delete_failure", "finding"]


def test_default_report_is_released_failed_and_dead_pointers() -> None:
    rows = by_name(assess(pvs(), claims(), classes()))
    assert sorted(rows) == ["mariadb-pv", "scratch-pv", "shop-pv"]
    assert rows["shop-pv"].claim_state == "replaced" and rows["shop-pv"].claim_missing is False
    assert rows["scratch-pv"].pv.phase == "Failed"
    assert rows["scratch-pv"].class_reclaim is Absent.MISSING
    assert "host_path deleter" in (rows["scratch-pv"].pv.message or "")


def test_all_includes_bound_and_available() -> None:
    rows = by_name(assess(pvs(), claims(), classes(), include_all=True))
    assert rows["web-pv"].claim_state == "present"
    assert rows["spare-pv"].claim_state is None and rows["spare-pv"].claim_missing is False


def test_bound_pv_whose_claim_is_gone_is_reported() -> None:
    rows = by_name(assess(pvs(), claims(drop=("shop/web",)), classes()))
    assert rows["web-pv"].pv.phase == "Bound"
    assert (rows["web-pv"].claim_state, rows["web-pv"].claim_missing) == ("missing", True)


def test_unreadable_claims_are_unknown_never_missing() -> None:
    rows = assess(pvs(), None, classes(), include_all=True)
    assert {r.claim_missing for r in rows if r.pv.claim_ref} == {None}
    assert all(r.claim_missing is not True for r in rows)


def test_unreadable_classes_are_unknown() -> None:
    row = by_name(assess(pvs(), claims(), None))["mariadb-pv"]
    assert to_json(row)["class_reclaim"] is None and to_json(row)["class_missing"] is None


def test_pre_bound_pv_waiting_for_its_claim_is_not_a_leftover() -> None:
    spare = next(o for o in items("leftovers_pvs") if o["metadata"]["name"] == "spare-pv")
    spare = json.loads(json.dumps(spare))
    spare["spec"]["claimRef"] = {"namespace": "shop", "name": "not-yet"}
    row = assess([PersistentVolume.from_wire(spare)], claims(), classes())
    assert row == []


def test_claim_namespace_narrows_by_claim_ref() -> None:
    assert [r.pv.name for r in assess(pvs(), claims(), classes(), claim_namespace="mariadb")] == ["mariadb-pv"]


def test_table_shows_missing_class_and_age_since_phase_transition() -> None:
    rows = assess(pvs(), claims(), classes())
    transition = by_name(rows)["mariadb-pv"].pv.last_phase_transition
    assert transition is not None
    report = leftovers.report(LeftoverResult(rows), now=transition + timedelta(hours=3, minutes=5))
    lines = table_lines(report, wide=False, all_namespaces=False, no_headers=False)
    assert lines[0] == ("NAME         STATUS     RECLAIM   CLASS RECLAIM   CLAIM             CLAIM STATE   "
                        "STORAGECLASS   CAPACITY   AGE")
    mariadb = next(row for row in lines if row.startswith("mariadb-pv"))
    assert mariadb.split() == ["mariadb-pv", "Released", "Retain", "Retain", "mariadb/mariadb", "missing",
                               "standard", "250Mi", "3h5m"]
    scratch = next(row for row in lines if row.startswith("scratch-pv"))
    assert scratch.split()[:6] == ["scratch-pv", "Failed", "Delete", "<missing>", "shop/scratch", "missing"]


def test_beta_class_annotation_wins_as_kubectl_reads_it() -> None:
    old = json.loads(json.dumps(next(o for o in items("leftovers_pvs") if o["metadata"]["name"] == "web-pv")))
    old["metadata"].setdefault("annotations", {})["volume.beta.kubernetes.io/storage-class"] = "legacy"
    assert PersistentVolume.from_wire(old).storage_class == "legacy"
