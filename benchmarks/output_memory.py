"""Peak RSS of printing N objects as -o json and -o yaml: the List written whole (the old path: the document is
built, then encoded, then written) against the streamed List (each object encoded and written as it comes). Each
measurement is its own process (ru_maxrss), writing to /dev/null; the objects are claims as `claims -A -o json`
prints them (their keys and value shapes), made here so that only the printing is measured, not a plane's reads.

    python benchmarks/output_memory.py --objects 100000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def claim(index: int) -> dict:
    ns, name = f"team-{index % 300:03d}", f"data-app-{index:06d}"
    return {
        "namespace": ns, "name": name, "status": "Bound", "storage_class": "standard-rwo",
        "volume": f"pvc-{index:08d}-0000-4000-8000-{index:012d}", "requested": "10Gi", "capacity": "10Gi",
        "allocated": None, "access_modes": ["ReadWriteOnce"], "problems": [{"kind": "unused", "since":
        "2026-10-01T00:00:00Z", "evidence": "condition", "message": "no Pod has used this claim since 2026-10-01"}],
        "age": "64d", "created": "2026-10-01T00:00:00Z", "labels": {"app.kubernetes.io/name": "app", "tier": "data"},
        "finding": True, "set_aside": None,
        "next": [f"kubectl describe pvc {name} -n {ns}", f"kubectl get events -n {ns} --field-selector "
                 f"involvedObject.name={name}"],
    }


def child(count: int, fmt: str, streamed: bool) -> None:
    from kubectl_pvleft.output.formats import JsonFormatter, YamlFormatter, kubectl_list, yaml_text
    from kubectl_pvleft.output.report import PrintOptions, Report

    rows = range(count)
    with open("/dev/null", "w") as out:
        if streamed:
            report = Report(rows=[], columns=(), to_json=claim, name=lambda i: "")
            cls = JsonFormatter if fmt == "json" else YamlFormatter
            cls(report, PrintOptions(output=fmt, out=out)).whole(rows)  # type: ignore[arg-type]
        else:
            document = kubectl_list([claim(i) for i in rows])
            out.write(json.dumps(document, indent=4, ensure_ascii=False) if fmt == "json" else yaml_text(document))
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)  # MiB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(int(args.child[0]), args.child[1], args.child[2] == "streamed")
        return 0
    baseline = int(subprocess.run([sys.executable, __file__, "--child", "0", "json", "streamed"], check=True,
                                  capture_output=True, text=True).stdout)
    print(f"objects {args.objects}; a process that prints nothing: {baseline} MiB")
    for fmt in ("json", "yaml"):
        for how in ("whole", "streamed"):
            peak = subprocess.run([sys.executable, __file__, "--child", str(args.objects), fmt, how], check=True,
                                  capture_output=True, text=True).stdout.strip()
            print(f"-o {fmt:4} {how:8} peak RSS {peak} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
