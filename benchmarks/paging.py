#!/usr/bin/env python3
"""The page size by measurement: `leftovers -o json --chunk-size N` beside its two floors, on one loaded plane.

    python benchmarks/paging.py --dir /tmp/pvleft-paging --label 10k --rounds 5
    python benchmarks/paging.py --dir /tmp/pvleft-paging --label 100k --rounds 3 --claims

For each page size (--sizes, default 500 1000 2500 5000, and 0: one unpaged answer) the plugin runs as a child
process (wall from here, user+sys CPU from wait4, peak RSS from GNU time, the time to its first byte on stdout, and the
CPU the API server and etcd spent meanwhile, from /proc),
and so does the floor in the same pages: the lists `leftovers` reads (PVs, claims as metadata, classes) fetched
raw over one TLS connection and dropped, in this process (wall and this process's CPU). "unpaged" is the floor
in one answer per list. One warm-up of everything (--no-warm-up: of the unpaged floor), then --rounds rounds,
the order rotated every round; medians.
kube-controller-manager and kube-scheduler are stopped (SIGSTOP) while it runs and resumed after: at 100,000 PVs
the controller manager's resyncs alone take a core of the two, and nothing here needs a controller.
--claims also times `claims -A -o json` (peak RSS above all). --baseline CMD times another plugin command line the
same way, alternated with the rest: an older tree, as `env PYTHONPATH=DIR python -P -m kubectl_pvleft` (without -P
the current directory's tree is imported instead). The samples go to benchmarks/results/paging-LABEL.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests" / "cluster")]

from controlplane import ControlPlane  # noqa: E402
from load import admin_tls  # noqa: E402
from run import GNU_TIME, PLUGIN_AGENT, PV, PVC_METADATA, SC, AuditWindow, read_all_pages  # noqa: E402

FLOOR = (PV, PVC_METADATA, SC)  # what `leftovers` lists, as run.py's floor


def load_average() -> float:
    return os.getloadavg()[0]


SERVER = ("kube-apiserver", "etcd")


def server_cpu(cp: ControlPlane) -> float:
    """user+sys CPU seconds the API server and etcd have used so far (/proc/PID/stat): what a run costs the server,
    which the load of other work on these cores stretches far less than wall time."""
    pids = json.loads((cp.workdir / "pids.json").read_text())
    ticks = 0
    for name in SERVER:
        fields = Path(f"/proc/{pids[name]}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat
    return ticks / os.sysconf("SC_CLK_TCK")


def with_server_cpu(cp: ControlPlane, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    before = server_cpu(cp)
    sample = run()
    sample["server_cpu"] = server_cpu(cp) - before
    return sample


def plugin_run(argv: Sequence[str], env: dict[str, str], scratch: Path, audit: AuditWindow) -> dict[str, Any]:
    rss_path = scratch / "rss"
    audit.start()
    started = time.perf_counter()
    proc = subprocess.Popen([GNU_TIME, "-f", "%M", "-o", str(rss_path), *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    first: Optional[float] = None
    size = 0
    fd = proc.stdout.fileno()
    while True:
        block = os.read(fd, 1 << 20)
        if not block:
            break
        if first is None:
            first = time.perf_counter() - started
        size += len(block)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 3):
        raise RuntimeError(f"{argv} exited {code}: {err[-2000:]!r}")
    requests, _, others = audit.close(PLUGIN_AGENT)
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mib": int(rss_path.read_text().split()[-1]) / 1024,
            "first_byte": first, "out_bytes": size, "requests": requests, "background": others,
            "load": load_average()}


def floor_run(cp: ControlPlane, page: int) -> dict[str, Any]:
    """The floor lists, raw, in pages of `page` (0: one answer each)."""
    context = admin_tls(cp)
    cpu0, started = time.process_time(), time.perf_counter()
    answers: list[float] = []  # when each answer was read

    def answered() -> None:
        answers.append(time.perf_counter() - started)

    connection = http.client.HTTPSConnection("127.0.0.1", cp.ports["apiserver"], context=context)
    size = sum(read_all_pages(connection, path, accept, page, "pvleft-bench-floor/1", answered)
               for path, accept in FLOOR)
    connection.close()
    return {"wall": time.perf_counter() - started, "cpu": time.process_time() - cpu0,
            "first_byte": answers[0] if answers else None, "out_bytes": size, "requests": len(answers),
            "load": load_average()}


def stop_controllers(cp: ControlPlane, sig: signal.Signals) -> None:
    pids = json.loads((cp.workdir / "pids.json").read_text())
    for name in ("kube-scheduler", "kube-controller-manager"):
        if name in pids:
            os.kill(pids[name], sig)


def median(samples: list[dict[str, Any]], key: str) -> Optional[float]:
    values = [s[key] for s in samples if s.get(key) is not None]
    return statistics.median(values) if values else None


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pvleft-paging"))
    parser.add_argument("--label", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2500, 5000, 0])
    parser.add_argument("--plugin", default=str(Path(sys.executable).parent / "kubectl-pvleft"))
    parser.add_argument("--baseline", metavar="CMD",
                        help="another plugin command line (an older tree, say) timed beside --plugin, alternated")
    parser.add_argument("--claims", action="store_true", help="also `claims -A -o json`")
    parser.add_argument("--only-claims", action="store_true")
    parser.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                        help="warm up with one unpaged floor only (at 100,000 a round takes ten minutes here)")
    args = parser.parse_args(argv)
    cp = ControlPlane(args.dir)
    if not cp.attach():
        raise SystemExit(f"error: no control plane running in {args.dir}")
    kubeconfig = str(cp.kubeconfig("admin"))
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "PVLEFT_SERVICEACCOUNT_DIR")}
    audit = AuditWindow(cp.audit_log)
    runners: dict[str, Callable[[], dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="pvleft-paging-") as tmp:
        scratch = Path(tmp)
        if not args.only_claims:
            for size in args.sizes:
                runners[f"plugin {size or 'unpaged'}"] = (
                    lambda size=size: plugin_run([args.plugin, "leftovers", "-o", "json", "--chunk-size", str(size),
                                                  "--kubeconfig", kubeconfig], env, scratch, audit))
                if args.baseline:
                    runners[f"baseline {size or 'unpaged'}"] = (
                        lambda size=size: plugin_run([*shlex.split(args.baseline), "leftovers", "-o", "json",
                                                      "--chunk-size", str(size), "--kubeconfig", kubeconfig],
                                                     env, scratch, audit))
                runners[f"floor {size or 'unpaged'}"] = lambda size=size: floor_run(cp, size)
        if args.claims or args.only_claims:
            runners["claims -A -o json"] = lambda: plugin_run(
                [args.plugin, "claims", "-A", "-o", "json", "--kubeconfig", kubeconfig], env, scratch, audit)
        samples: dict[str, list[dict[str, Any]]] = {name: [] for name in runners}
        stop_controllers(cp, signal.SIGSTOP)
        try:
            time.sleep(2)
            for run in runners.values() if args.warm_up else [lambda: floor_run(cp, 0)]:  # untimed
                run()
            order = list(runners)
            for round_ in range(args.rounds):
                shift = round_ % len(order)
                for name in order[shift:] + order[:shift]:
                    samples[name].append(run_one := with_server_cpu(cp, runners[name]))
                    print(f"  round {round_ + 1}/{args.rounds} {name}: {run_one['wall']:.2f}s wall "
                          f"{run_one['cpu']:.2f}s cpu, server {run_one['server_cpu']:.2f}s cpu, "
                          f"load {run_one['load']:.1f}", file=sys.stderr, flush=True)
        finally:
            stop_controllers(cp, signal.SIGCONT)
    pvs = _count(cp, "/api/v1/persistentvolumes")
    claims = _count(cp, "/api/v1/persistentvolumeclaims")
    keys = ("wall", "cpu", "server_cpu", "rss_mib", "first_byte", "out_bytes", "requests", "load")
    summary = {name: {key: median(group, key) for key in keys} for name, group in samples.items()}
    result = {"label": args.label, "pvs": pvs, "claims": claims, "rounds": args.rounds, "plugin": args.plugin,
              "baseline": args.baseline, "summary": summary, "samples": samples}
    out = HERE / "results" / f"paging-{args.label}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{pvs} PVs, {claims} claims; medians of {args.rounds}")
    print(f"{'':24} {'wall s':>8} {'cpu s':>7} {'server s':>8} {'RSS MiB':>8} {'1st byte':>9} {'requests':>8} {'load':>5}")
    for name, row in summary.items():
        def f(key: str, fmt: str, row: dict[str, Any] = row) -> str:
            return format(row[key], fmt) if row[key] is not None else "-"
        print(f"{name:24} {f('wall', '8.2f')} {f('cpu', '7.2f')} {f('server_cpu', '8.2f')} "
              f"{f('rss_mib', '8.0f')} {f('first_byte', '9.2f')} "
              f"{f('requests', '8.0f')} {f('load', '5.1f')}")
    return 0


def _count(cp: ControlPlane, path: str) -> int:
    _, page = cp.api("GET", f"{path}?limit=1", timeout=60)
    return len(page.get("items") or ()) + int((page.get("metadata") or {}).get("remainingItemCount") or 0)


if __name__ == "__main__":
    raise SystemExit(main())
