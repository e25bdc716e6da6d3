"""How the plugin scales on a cluster that has lived for years: 10,000 PVs and 10,000 PVCs.

    python benchmarks/bench_parse.py [--pvs 10000]

Measures (best of 5, wall clock, this machine) and prints a Markdown table for RESULTS.md:
  1. one 10,000-PV list body: json.loads + our records, against the client's generated models;
  2. the pure leftovers analysis over those records;
  3. `kubectl-pvleft leftovers -o jsonl` end to end over HTTP, 20 pages of 500 from a local scripted server
     (the client's full path: TLS-less HTTP, paging, parsing, analysis, printing), and its peak RSS.
Targets live here, never as timed assertions in tests.
"""

from __future__ import annotations

import argparse
import copy
import json
import resource
import subprocess
import sys
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

from fake_apiserver import FakeAPIServer  # noqa: E402
from kubectl_pvleft.leftovers import ClaimIndex, assess  # noqa: E402
from kubectl_pvleft.records import ClaimIdentity, PersistentVolume, StorageClass  # noqa: E402
from wire import items, load  # noqa: E402


def synthetic(count: int) -> tuple[list[dict], list[dict]]:
    """Copies of the recorded mariadb PV, every tenth Released with its claim gone, the rest Bound."""
    template = next(o for o in items("leftovers_pvs") if o["metadata"]["name"] == "mariadb-pv")
    claim_template = items("leftovers_pvc_metadata")[0]
    pvs, claims = [], []
    for i in range(count):
        pv = copy.deepcopy(template)
        uid = str(uuid.UUID(int=i))
        pv["metadata"].update(name=f"pv-{i:06d}", uid=str(uuid.UUID(int=10**9 + i)))
        pv["spec"]["claimRef"].update(namespace=f"ns-{i % 50}", name=f"data-{i}", uid=uid)
        pv["status"]["phase"] = "Released" if i % 10 == 0 else "Bound"
        pvs.append(pv)
        if i % 10:
            c = copy.deepcopy(claim_template)
            c["metadata"].update(namespace=f"ns-{i % 50}", name=f"data-{i}", uid=uid)
            claims.append(c)
    return pvs, claims


def best(fn: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def pages(objects: list[dict], kind: str, size: int = 500) -> Callable:
    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        start = int(query.get("continue", ["0"])[0])
        meta = {"resourceVersion": "1"}
        if start + size < len(objects):
            meta["continue"] = str(start + size)
        return 200, {"kind": kind, "apiVersion": "v1", "metadata": meta, "items": objects[start:start + size]}
    return handler


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pvs", type=int, default=10_000)
    args = parser.parse_args()
    pvs, claims = synthetic(args.pvs)
    body = json.dumps({"kind": "PersistentVolumeList", "apiVersion": "v1", "metadata": {}, "items": pvs}).encode()

    loads = best(lambda: json.loads(body))
    parsed = json.loads(body)["items"]
    ours = best(lambda: [PersistentVolume.from_wire(o) for o in parsed])
    from kubernetes.client import ApiClient

    text = body.decode()
    generated = best(lambda: ApiClient().deserialize(text, "V1PersistentVolumeList", "application/json"), runs=2)

    records = [PersistentVolume.from_wire(o) for o in pvs]
    index = ClaimIndex.of(ClaimIdentity.from_wire(c) for c in claims)
    classes = {sc.name: sc for sc in map(StorageClass.from_wire, items("leftovers_storageclasses"))}
    analysis = best(lambda: assess(records, index, classes))
    tracemalloc.start()
    kept = [PersistentVolume.from_wire(o) for o in json.loads(body)["items"]]
    records_mib = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    del kept

    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        if "persistentvolumeclaims" in path:
            return pages(claims, "PartialObjectMetadataList")(path, query)
        if "storageclasses" in path:
            return 200, load("leftovers_storageclasses")
        return pages(pvs, "PersistentVolumeList")(path, query)

    with FakeAPIServer(handler) as server:
        kubeconfig = server.kubeconfig(Path("/tmp/pvleft-bench.kubeconfig"))
        command = [sys.executable, "-m", "kubectl_pvleft", "leftovers", "-o", "jsonl", "--kubeconfig", str(kubeconfig)]
        def once() -> None:
            out = subprocess.run(command, capture_output=True, check=True).stdout
            assert out.count(b"\n") == args.pvs // 10
        end_to_end = best(once, runs=3)
        rss = subprocess.run(["/usr/bin/time", "-f", "%M", *command], capture_output=True, text=True)
        peak_rss = int(rss.stderr.strip().splitlines()[-1]) / 1024 if rss.returncode == 0 else float("nan")
        startup = best(lambda: subprocess.run([sys.executable, "-m", "kubectl_pvleft", "--version"],
                                              capture_output=True, check=True), runs=3)

    print(f"| measurement ({args.pvs} PVs, {len(claims)} PVCs) | result |")
    print("|---|---|")
    print(f"| one list body ({len(body) / 2**20:.0f} MiB with managedFields): json.loads | {loads:.3f} s |")
    print(f"| ... then our records from it | {ours:.3f} s |")
    print(f"| ... the generated client models instead (json.loads included) | {generated:.3f} s |")
    print(f"| records held in memory | {records_mib:.1f} MiB |")
    print(f"| leftovers analysis (pure) | {analysis * 1000:.1f} ms |")
    print(f"| `leftovers -o jsonl` end to end, 20+18 pages over HTTP | {end_to_end:.2f} s |")
    print(f"| ... its peak RSS | {peak_rss:.0f} MiB |")
    print(f"| interpreter + imports (`--version`) | {startup:.2f} s |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
