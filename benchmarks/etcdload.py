#!/usr/bin/env python3
"""Load a control plane with load.py's estate in minutes, not an hour: the objects written straight into etcd.

    python benchmarks/etcdload.py --dir /tmp/pvleft-paging --batch b0 --pvs 10000 --pvcs 10000
    python benchmarks/etcdload.py --dir /tmp/pvleft-paging --batch s1 --pvs 90000 --pvcs 90000

Through the API server, load.py writes about 390,000 requests for 100,000 PVs and claims (59 minutes on these
shared cores, the API server's CPU the limit: admission, validation, the blocking audit log). Reads do not care
how an object got into etcd, so here load.py's own `Estate` builds the batch against a recorder with load.py's
Admin interface: each create gets a uid and creation time, each status patch is merged (RFC 7386) as the server
would, and the finished objects are put into etcd as JSON (the API server decodes JSON from storage as it does
protobuf), 100 to a transaction. What the API server itself adds (admission's protection finalizers, a PV's
lastPhaseTransitionTime, managedFields) is copied from an exemplar: a small batch (`x0`) loaded through the API
server first, whose objects are compared with the recorder's own build of the same batch (`--check` prints the
differences that remain). Namespaces and classes go through the API server (Estate.base()).

The controllers never saw these objects being made; their final states are the ones the PV binder leaves alone
(load.py's docstring), so kube-controller-manager is stopped while they are written (its informers would meet a
claim before its PV) and started again afterwards, when its first list holds both.
"""

from __future__ import annotations

import argparse
import base64
import copy
import datetime
import json
import re
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests" / "cluster")]

from controlplane import ControlPlane  # noqa: E402
from load import Admin, Estate, Mix, namespace_name, start_or_attach  # noqa: E402

EXEMPLAR = "x0"
TXN_OPS = 100  # etcd's --max-txn-ops is 128
NOW = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386, as a merge-patch+json PATCH applies."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class Recorder:
    """load.Admin's create/patch_status/call/each, on objects kept here instead of on a server."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}  # the object's path -> the object
        self.requests = 0

    @staticmethod
    def _object_path(collection: str, body: dict[str, Any]) -> str:
        return f"{collection}/{body['metadata']['name']}"

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        key = self._object_path(path, body)
        if key in self.objects:
            return {"kind": "Status", "code": 409}
        obj = copy.deepcopy(body)
        obj["metadata"]["uid"] = str(uuid.uuid4())
        obj["metadata"]["creationTimestamp"] = NOW
        self.objects[key] = obj
        return obj

    def patch_status(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        self.objects[path] = merge_patch(self.objects[path], patch)
        return self.objects[path]

    def call(self, method: str, path: str, body: Any = None, **_: Any) -> dict[str, Any]:
        if method == "GET" and path in self.objects:
            return self.objects[path]
        raise RuntimeError(f"the recorder answers GETs of what it made, not {method} {path}")

    def each(self, what: str, items: Sequence[Any], task: Callable[[Any], None]) -> None:
        for item in items:
            task(item)


def shape(obj: dict[str, Any], batch: str) -> str:
    """What an object is, without its batch, index or uuid: the key its exemplar is found by."""
    kind = obj.get("kind") or ("PersistentVolumeClaim" if "namespace" in obj["metadata"] else "PersistentVolume")
    name = re.sub(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", "-UUID", obj["metadata"]["name"])
    name = re.sub(rf"-{re.escape(batch)}-\d+$", "", name)
    spec = obj.get("spec") or {}
    ref = (spec.get("claimRef") or {}).get("name", "")
    ref = re.sub(rf"-{re.escape(batch)}-\d+$", "", ref)
    status = obj.get("status") or {}
    return "|".join([kind, name, ref, str(status.get("phase")), str(spec.get("storageClassName")),
                     str(spec.get("persistentVolumeReclaimPolicy")), str(sorted(status)),
                     str(sorted(c.get("type") for c in status.get("conditions") or ()))])


def server_side(real: dict[str, Any]) -> dict[str, Any]:
    """What the API server (and admission) added to an object it stored: taken over by its recorded twin."""
    meta, status = real["metadata"], real.get("status") or {}
    added: dict[str, Any] = {"finalizers": meta.get("finalizers"), "managedFields": meta.get("managedFields")}
    if "lastPhaseTransitionTime" in status:
        added["lastPhaseTransitionTime"] = status["lastPhaseTransitionTime"]
    return added


def with_server_side(obj: dict[str, Any], added: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    if added.get("finalizers") is not None:
        obj["metadata"]["finalizers"] = list(added["finalizers"])
    if added.get("managedFields") is not None:
        fields = copy.deepcopy(added["managedFields"])
        for entry in fields:
            entry["time"] = NOW
        obj["metadata"]["managedFields"] = fields
    if "lastPhaseTransitionTime" in added:
        obj.setdefault("status", {})["lastPhaseTransitionTime"] = NOW
    return obj


def etcd_key(path: str) -> str:
    """/api/v1/persistentvolumes/N -> /registry/persistentvolumes/N; claims keep their namespace."""
    parts = path.strip("/").split("/")
    if parts[2] == "namespaces":  # api v1 namespaces NS persistentvolumeclaims NAME
        return f"/registry/{parts[4]}/{parts[3]}/{parts[5]}"
    return f"/registry/{parts[2]}/{parts[3]}"


def put_all(cp: ControlPlane, objects: dict[str, dict[str, Any]]) -> int:
    url = f"http://127.0.0.1:{cp.ports['etcd']}/v3/kv/txn"
    items = list(objects.items())
    for first in range(0, len(items), TXN_OPS):
        ops = [{"requestPut": {"key": base64.b64encode(etcd_key(path).encode()).decode(),
                               "value": base64.b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode()}}
               for path, obj in items[first:first + TXN_OPS]]
        request = urllib.request.Request(url, json.dumps({"success": ops}).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            response.read()
    return len(items)


PROTOBUF_PREFIX = b"k8s\x00"  # k8s.io/apimachinery/pkg/runtime/serializer/protobuf: the envelope's magic


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, bytes]]:
    """(field number, bytes) of every length-delimited field of a protobuf message (varints skipped)."""
    out, pos = [], 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        wire = tag & 7
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            out.append((tag >> 3, data[pos:pos + size]))
            pos += size
        else:
            raise ValueError(f"protobuf wire type {wire}")
    return out


def _field(number: int, payload: bytes) -> bytes:
    size, head = len(payload), bytearray([(number << 3) | 2])
    while size >= 0x80:
        head.append((size & 0x7F) | 0x80)
        size >>= 7
    head.append(size)
    return bytes(head) + payload


def as_protobuf(cp: ControlPlane, admin: Admin) -> int:
    """Store every PV and claim again as the API server stores them (protobuf), from its own protobuf answer: the
    JSON put by put_all reads the same, but a page the API server serves from etcd rather than its watch cache
    would decode JSON, slower than the protobuf a plane loaded through the API server holds. A List's items are
    cut out of its envelope (runtime.Unknown: typeMeta 1, raw 2; the List's items are its field 2) and each put
    back in an envelope of its own kind, under its key (ObjectMeta: name 1, namespace 3)."""
    url = f"http://127.0.0.1:{cp.ports['etcd']}/v3/kv/txn"
    written = 0
    for collection, kind, resource in (("/api/v1/persistentvolumes", "PersistentVolume", "persistentvolumes"),
                                       ("/api/v1/persistentvolumeclaims", "PersistentVolumeClaim",
                                        "persistentvolumeclaims")):
        type_meta = _field(1, b"v1") + _field(2, kind.encode())
        token = ""
        while True:
            path = f"{collection}?limit=1000" + (f"&continue={urllib.parse.quote(token, safe='')}" if token else "")
            for _ in range(10):  # 504 while the watch cache catches up with the puts of the pages before
                status, body = admin.exchange("GET", path, None, {"Accept": "application/vnd.kubernetes.protobuf",
                                                                   "User-Agent": "pvleft-bench-load/1"})
                if status != 504:
                    break
                time.sleep(3)
            if status != 200 or not body.startswith(PROTOBUF_PREFIX):
                raise RuntimeError(f"GET {path}: HTTP {status}")
            raw = next(v for n, v in _fields(body[len(PROTOBUF_PREFIX):]) if n == 2)
            ops, token = [], ""
            for number, value in _fields(raw):
                if number == 1:  # ListMeta: continue is its field 3
                    token = next((v.decode() for n, v in _fields(value) if n == 3), "")
                elif number == 2:
                    meta = dict(_fields(next(v for n, v in _fields(value) if n == 1)))
                    name, namespace = meta[1].decode(), meta.get(3, b"").decode()
                    key = f"/registry/{resource}/" + (f"{namespace}/{name}" if namespace else name)
                    stored = PROTOBUF_PREFIX + _field(1, type_meta) + _field(2, value) + _field(3, b"") + _field(4, b"")
                    ops.append({"requestPut": {"key": base64.b64encode(key.encode()).decode(),
                                               "value": base64.b64encode(stored).decode()}})
            for first in range(0, len(ops), TXN_OPS):
                request = urllib.request.Request(url, json.dumps({"success": ops[first:first + TXN_OPS]}).encode(),
                                                 {"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=60) as response:
                    response.read()
            written += len(ops)
            if not token:
                break
        print(f"  {kind}: {written} stored as protobuf", file=sys.stderr, flush=True)
    return written


def recorded(mix: Mix, batch: str) -> dict[str, dict[str, Any]]:
    recorder = Recorder()
    estate = Estate(recorder, mix, batch)  # type: ignore[arg-type]  # Admin's interface, duck-typed
    estate.bound()
    estate.other_volumes()
    estate.other_claims()
    return recorder.objects


def exemplars(cp: ControlPlane, admin: Admin) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Load the exemplar batch through the API server (once), record the same batch, and pair them by path:
    the server-side additions by shape, and the differences left between the twins."""
    mix = Mix.of(400, 400, 0, 0)
    first = f"/api/v1/namespaces/{namespace_name(0)}/persistentvolumeclaims/data-{EXEMPLAR}-000000"
    if admin.call("GET", first, ok=(200, 404)).get("kind") != "PersistentVolumeClaim":  # not in this plane yet
        print("exemplar batch through the API server", file=sys.stderr, flush=True)
        Estate(admin, mix, EXEMPLAR).load()
    mine = recorded(mix, EXEMPLAR)
    by_shape: dict[str, dict[str, Any]] = {}
    differences: list[str] = []
    for path, obj in mine.items():
        real = normal(admin.call("GET", path))
        added = server_side(real)
        by_shape.setdefault(shape(obj, EXEMPLAR), added)
        twin = normal(with_server_side(obj, added))
        for section in ("spec", "status"):
            theirs = {k: v for k, v in (real.get(section) or {}).items() if k != "lastPhaseTransitionTime"}
            ours = {k: v for k, v in (twin.get(section) or {}).items() if k != "lastPhaseTransitionTime"}
            if section == "spec" and "claimRef" in theirs:  # the claim's uid differs by construction
                theirs["claimRef"] = {k: v for k, v in theirs["claimRef"].items() if k not in ("uid", "resourceVersion")}
                ours["claimRef"] = {k: v for k, v in ours["claimRef"].items() if k != "uid"}
            if theirs != ours:
                differences.append(f"{path} {section}: server {json.dumps(theirs, sort_keys=True)[:300]} "
                                   f"recorded {json.dumps(ours, sort_keys=True)[:300]}")
        differences.extend(f"{path} metadata.{key}: server {real['metadata'].get(key)} "
                           f"recorded {twin['metadata'].get(key)}"
                           for key in ("labels", "annotations", "finalizers")
                           if real["metadata"].get(key) != twin["metadata"].get(key))
    return by_shape, differences


def normal(obj: dict[str, Any]) -> dict[str, Any]:
    """An object as the API server answers it whatever it was stored as: decoding from storage applies the
    defaults (a claim's Pending phase, a hostPath's type), an empty map is not written; condition times are
    the loader's clock, not the object's."""
    obj = copy.deepcopy(obj)
    if not obj["metadata"].get("annotations"):
        obj["metadata"].pop("annotations", None)
    if "namespace" in obj["metadata"]:
        obj.setdefault("status", {}).setdefault("phase", "Pending")
    host = (obj.get("spec") or {}).get("hostPath")
    if host is not None:
        host.setdefault("type", "")
    for condition in (obj.get("status") or {}).get("conditions") or ():
        condition.pop("lastProbeTime", None)
        condition.pop("lastTransitionTime", None)
    return obj


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pvleft-bench"))
    parser.add_argument("--batch", default="b0")
    parser.add_argument("--pvs", type=int, default=10_000)
    parser.add_argument("--pvcs", type=int, default=10_000)
    parser.add_argument("--check", action="store_true", help="print every difference from the exemplar's twins")
    parser.add_argument("--as-protobuf", action="store_true",
                        help="only store every PV and claim again as protobuf, as the API server stores them")
    args = parser.parse_args(argv)
    cp, _ = start_or_attach(args.dir)
    admin = Admin(cp)
    if args.as_protobuf:
        started = time.monotonic()
        print(json.dumps({"as_protobuf": as_protobuf(cp, admin), "seconds": round(time.monotonic() - started, 1)}))
        return 0
    started = time.monotonic()
    Estate(admin, Mix.of(0, 0, 0, 0), args.batch).base()  # namespaces, classes: through the API server
    by_shape, differences = exemplars(cp, admin)
    print(f"exemplar: {len(by_shape)} shapes, {len(differences)} differences from the server's objects",
          file=sys.stderr, flush=True)
    for line in differences[: None if args.check else 5]:
        print("  " + line, file=sys.stderr)
    mix = Mix.of(args.pvs, args.pvcs, 0, 0)
    objects = recorded(mix, args.batch)
    unmatched = 0
    for path, obj in objects.items():
        added = by_shape.get(shape(obj, args.batch))
        if added is None:
            unmatched += 1
            continue
        objects[path] = with_server_side(obj, added)
    built = time.monotonic()
    kcm = cp._procs["kube-controller-manager"]  # stopped while etcd is written, as documented
    cp._terminate(kcm)
    try:
        written = put_all(cp, objects)
    finally:
        cp._spawn("kube-controller-manager", kcm.argv)
        cp._write_state()
    record = {"batch": args.batch, "mix": mix.__dict__, "written": written, "unmatched_shapes": unmatched,
              "exemplar_differences": len(differences), "build_s": round(built - started, 1),
              "write_s": round(time.monotonic() - built, 1)}
    path = cp.workdir / "bench-etcdload.json"
    history = json.loads(path.read_text()) if path.exists() else []
    path.write_text(json.dumps([*history, record], indent=1) + "\n")
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
