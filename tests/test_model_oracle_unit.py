"""The generated `kubernetes` models as an oracle for our msgspec records (a test dependency only).

Every recorded wire fixture is decoded twice: by our records and by `kubernetes.client.ApiClient().deserialize`.
Every field a record declares must be a field of the generated model under the same wire name, with an equal
value: a mistyped wire name (which msgspec reads as absent, silently) fails here. Snapshot kinds have no
generated model and are not covered by this oracle.
"""

from __future__ import annotations

import json
import pathlib
import sys
from datetime import datetime

import msgspec
import pytest

kubernetes = pytest.importorskip("kubernetes")

from kubectl_pvleft.records import Event, PersistentVolume, PersistentVolumeClaim, StorageClass  # noqa: E402
from kubectl_pvleft.records.pods import Pod  # noqa: E402
from kubectl_pvleft.records.workloads import CronJob, DaemonSet, Deployment, Job, ReplicaSet, StatefulSet  # noqa: E402

WIRE = pathlib.Path(__file__).parent / "fixtures" / "wire"
# A List's kind -> (our record, the generated model).
KINDS = {
    "PersistentVolumeList": (PersistentVolume, "V1PersistentVolume"),
    "PersistentVolumeClaimList": (PersistentVolumeClaim, "V1PersistentVolumeClaim"),
    "PodList": (Pod, "V1Pod"),
    "StorageClassList": (StorageClass, "V1StorageClass"),
    "EventList": (Event, "CoreV1Event"),
    "StatefulSetList": (StatefulSet, "V1StatefulSet"),
    "DeploymentList": (Deployment, "V1Deployment"),
    "ReplicaSetList": (ReplicaSet, "V1ReplicaSet"),
    "DaemonSetList": (DaemonSet, "V1DaemonSet"),
    "JobList": (Job, "V1Job"),
    "CronJobList": (CronJob, "V1CronJob"),
}


# A record struct that stands for several wire types: a wire name the given model lacks must be a field of one
# of these models, and then ours must be absent (None).
SHARED_SHAPES = {
    "InTreeSource": ("V1HostPathVolumeSource", "V1LocalVolumeSource", "V1NFSVolumeSource",
                     "V1GCEPersistentDiskVolumeSource", "V1AWSElasticBlockStoreVolumeSource",
                     "V1CinderPersistentVolumeSource", "V1VsphereVirtualDiskVolumeSource", "V1CephFSPersistentVolumeSource",
                     "V1AzureDiskVolumeSource"),
    # One Event record reads both core/v1 and events.k8s.io/v1 events.
    "Event": ("CoreV1Event", "EventsV1Event"),
    # One spec and one status record read all six workload kinds (each sends only its own fields).
    "WorkloadSpec": ("V1StatefulSetSpec", "V1DeploymentSpec", "V1ReplicaSetSpec", "V1DaemonSetSpec", "V1JobSpec",
                     "V1CronJobSpec"),
    "WorkloadStatus": ("V1StatefulSetStatus", "V1DeploymentStatus", "V1ReplicaSetStatus", "V1DaemonSetStatus",
                       "V1JobStatus", "V1CronJobStatus"),
}
# Fields newer than the oracle's models: kubernetes 37 (Kubernetes 1.37's models) needs python-dateutil>=3 and
# botocore <3, so the test extra takes kubernetes<37 (1.36's models). Each entry says why it is not a typo.
NEWER_THAN_THE_MODELS = {
    ("ClaimStatus", "healthStatus"): "volume health in a claim's status, recorded from a 1.37 server",
}


class _Response:
    """What ApiClient.deserialize reads: the body as bytes in .data."""

    def __init__(self, obj):
        self.data = json.dumps(obj)


# The `pending` fixtures keep each kind's items as a bare list under these keys.
BARE_LISTS = {"pods": "PodList", "events": "EventList", "claims": "PersistentVolumeClaimList",
              "classes": "StorageClassList"}


def _lists(node, top=True):
    """Every List object of a known kind anywhere in a fixture (bare lists only at its top: deeper, `events` are
    watch events)."""
    if isinstance(node, dict):
        if node.get("kind") in KINDS and isinstance(node.get("items"), list):
            yield node
        for key, value in node.items():
            if top and key in BARE_LISTS and isinstance(value, list):
                yield {"kind": BARE_LISTS[key], "items": value}
                continue
            yield from _lists(value, False)
    elif isinstance(node, list):
        for value in node:
            yield from _lists(value, False)


def _cases():
    for path in sorted(WIRE.glob("*.json")):
        for listed in _lists(json.loads(path.read_text())):
            for index, item in enumerate(listed["items"]):
                yield pytest.param(listed["kind"], item, id=f"{path.stem}-{listed['kind']}-{index}")


def _plain(value):
    """A value in the wire's own terms, so ours and the model's compare: times as UTC ISO with Z."""
    if isinstance(value, datetime):
        value = value.isoformat()
    if isinstance(value, str) and value.endswith("+00:00"):  # the model's serializer writes UTC so
        return value[: -len("+00:00")] + "Z"
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _same(ours, theirs, where):
    if isinstance(ours, msgspec.Raw):
        return
    if isinstance(ours, msgspec.Struct):
        if theirs is None:
            return  # absent on the wire: our defaults stand for it
        by_wire = {wire: attr for attr, wire in theirs.attribute_map.items()}
        for field in msgspec.structs.fields(ours):
            if field.encode_name not in by_wire:
                shape = type(ours).__name__
                elsewhere = any(field.encode_name in getattr(kubernetes.client, model).attribute_map.values()
                                for model in SHARED_SHAPES.get(shape, ()))
                newer = (shape, field.encode_name) in NEWER_THAN_THE_MODELS
                assert elsewhere or newer, (
                    f"{where}.{field.encode_name}: no field of {type(theirs).__name__} has that wire name")
                assert newer or getattr(ours, field.name) is None, f"{where}.{field.encode_name}"
                continue
            _same(getattr(ours, field.name), getattr(theirs, by_wire[field.encode_name]),
                  f"{where}.{field.encode_name}")
        return
    if isinstance(ours, (tuple, list)) and ours and isinstance(ours[0], msgspec.Struct):
        assert len(ours) == len(theirs or ()), where
        for index, (mine, other) in enumerate(zip(ours, theirs, strict=True)):
            _same(mine, other, f"{where}[{index}]")
        return
    mine = _plain(msgspec.to_builtins(ours)) if not isinstance(ours, datetime) else _plain(ours)
    other = _plain(kubernetes.client.ApiClient().sanitize_for_serialization(theirs))
    # An absent field is our default (empty, None) and the model's None.
    assert (mine or None) == (other or None), f"{where}: ours {mine!r}, the generated model's {other!r}"


CASES = list(_cases())


def test_the_fixtures_cover_every_kind_with_a_model():
    assert {case.values[0] for case in CASES} >= {
        "PersistentVolumeList", "PersistentVolumeClaimList", "PodList", "StorageClassList", "EventList",
        "StatefulSetList", "DeploymentList", "ReplicaSetList", "CronJobList"}


@pytest.mark.parametrize("kind, item", CASES)
def test_every_declared_field_equals_the_generated_model(kind, item):
    record_type, model_name = KINDS[kind]
    ours = record_type.from_wire(item)
    theirs = kubernetes.client.ApiClient().deserialize(_Response(item), model_name)
    _same(ours, theirs, kind[: -len("List")])


def test_the_plugin_never_imports_its_oracles():
    code = ("import sys, kubectl_pvleft.cli.main, kubectl_pvleft.analyses.leftovers, kubectl_pvleft.analyses.pending; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'tabulate')))")
    import subprocess
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
