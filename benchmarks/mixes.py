#!/usr/bin/env python3
"""Requests per mix: how many API requests each subcommand sends whatever state the PVs and claims are in.

    python benchmarks/mixes.py [--dir /tmp/pvleft-bench-mixes] [--per-mix 2500] [--keep]

One control plane holds four labelled batches (`pvleft-bench/mix=<state>`), each of --per-mix PVs and
--per-mix PVCs in 50 namespaces:
  - bound: PV and PVC bound to each other (name and uid both ways);
  - released: the PV Released, its claimRef naming a claim that was deleted; the batch's claims are others;
  - missing: the PV still Bound, its claimRef naming a claim that does not exist;
  - replaced: the PV still Bound, its claimRef naming a claim that exists again under another uid (the case
    of issue #22: 10,004 requests, one GET per claim, at 10,000 such PVs).
Claims that are not bound are Pending on a WaitForFirstConsumer class. kube-controller-manager is frozen
(SIGSTOP) once the namespaces have their ServiceAccounts, and resumed at the end: its PV binder would turn the
missing and replaced PVs Released, and resync thousands of Pending claims, while we count (on a kept plane,
the next run writes their Bound phase again first).

Each subcommand runs once per mix with `-l pvleft-bench/mix=<state>` where its selector picks PVs or claims
(leftovers, claims), else once on the whole estate (classes, pending, snapshots: their selector picks
StorageClasses, Pods or VolumeSnapshotContents); its requests are counted from the audit log by the plugin's
user agent. Writes the "Requests per mix" section of BENCHMARKS.md and the counts to
benchmarks/results/mixes.json; --render rewrites the section from that file. Stops the plane it started
unless --keep; a later run with --keep reuses the loaded plane.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import report  # noqa: E402
import run  # noqa: E402
from load import LABEL_KEY, MIXES, Admin, Estate, Mix, MixBatch, load_once  # noqa: E402

LABEL = "requests per mix"
RESULTS = "mixes"
LIMIT = 50  # issue #22: at most this many requests per subcommand, whatever the mix
SELECTED = (("leftovers",), ("leftovers", "--all"), ("claims", "-A"), ("claims", "-A", "--all"))
WHOLE = (("classes",), ("classes", "--drift"), ("pending", "-A"), ("snapshots",))


def controller_manager(cp: Any) -> int:
    return int(json.loads(cp.pids_file.read_text())["kube-controller-manager"])


def loaded_plane(args: argparse.Namespace, planes: list[Any]) -> tuple[Any, dict[str, Any]]:
    def fill(cp: Any) -> dict[str, Any]:
        admin = Admin(cp)
        started_at = time.monotonic()
        Estate(admin, Mix.of(0, 0, 0, 0), "mix").base()  # namespaces (with their ServiceAccounts) and classes
        os.kill(controller_manager(cp), signal.SIGSTOP)
        loading: dict[str, Any] = {}
        for mix in MIXES:
            began = time.monotonic()
            MixBatch(admin, mix, args.per_mix).load()
            loading[mix] = round(time.monotonic() - began, 1)
        return loading | {"total": round(time.monotonic() - started_at, 1), "requests": admin.requests}

    return load_once(args.dir, "bench-mixes.json", {"per_mix": args.per_mix}, fill, keep=args.keep, planes=planes)


def measure(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    plugin, kubectl = run.resolve_plugin(args.plugin), run.resolve_kubectl(args.kubectl)
    results: dict[str, Any] = {"argv": sys.argv[1:], "started": report.utc_now(),
                               "versions": report.versions(plugin, kubectl), "limit": LIMIT}
    planes: list[Any] = []
    try:
        cp, results["loading"] = loaded_plane(args, planes)
        os.kill(controller_manager(cp), signal.SIGSTOP)  # a kept plane was resumed at the end of its run
        try:
            if not results["loading"]["loaded_now"]:
                for mix in MIXES:
                    MixBatch(Admin(cp), mix, results["loading"]["per_mix"]).restore()
            results["counts"] = report.object_counts(cp)
            results["apiserver"] = report.apiserver_version(cp)
            bench = run.Bench(cp, plugin, kubectl, scratch)
            results["runs"] = runs(bench.run_plugin)
        finally:
            os.kill(controller_manager(cp), signal.SIGCONT)
    finally:
        for cp in planes:
            cp.stop(keep_logs=False)
    results["machine"] = report.machine()
    return results


def runs(run_plugin: Callable[[Sequence[str]], run.Sample]) -> dict[str, dict[str, Any]]:
    """{command: {mix or "all": {"requests": n, "verbs": {...}, "wall": s, "rss_mib": peak RSS}}}."""
    found: dict[str, dict[str, Any]] = {}

    def once(args: Sequence[str], where: str, selector: Sequence[str] = ()) -> None:
        sample = run_plugin([*args, *selector])
        found.setdefault(" ".join(args), {})[where] = {"requests": sample.requests, "verbs": sample.verbs,
                                                       "wall": round(sample.wall, 2), "rss_mib": round(sample.rss_mib)}
        print(f"  {' '.join(args)} [{where}]: {sample.requests} requests {sample.verbs}, {sample.rss_mib:.0f} MiB",
              file=sys.stderr, flush=True)

    for args in SELECTED:
        for mix in MIXES:
            once(args, mix, ("-l", f"{LABEL_KEY}={mix}"))
    for args in WHOLE:
        once(args, "all")
    return found


AT_TEN_THOUSAND = (
    "Every PV in one state at 10,000 PVs + 10,000 PVCs (20 pages of each at 500): "
    "`tests/test_leftovers_reads_unit.py::test_each_kind_is_listed_once_whatever_the_mix` counts `leftovers`' "
    "requests as a paging API server on loopback sees them, 41 on each of the four states (20 + 20 + 1). The "
    "earlier round (53 on `missing`, 51 on `replaced`: the PVs of gone claims and the claims listed again) is in "
    "`benchmarks/HISTORY.md`.")


def rss_line(by_mix: dict[str, Any]) -> str:
    cells = [f"{mix} {by_mix[mix]['rss_mib']}" for mix in MIXES if "rss_mib" in by_mix.get(mix, {})]
    return "`leftovers` peak RSS (MiB, GNU time): " + ", ".join(cells) + "." if cells else ""


def render(results: dict[str, Any]) -> str:
    v, counts, loading = results["versions"], results["counts"], results["loading"]
    lines = ["## Requests per mix", "",
             f"{results['started']}, `python benchmarks/mixes.py {report._shown_argv(results['argv'])}`. "
             f"One control plane with {counts['persistentvolumes']:,} PVs and "
             f"{counts['persistentvolumeclaims']:,} PVCs in 50 namespaces: four labelled batches "
             f"(`{LABEL_KEY}=<mix>`) of {loading['per_mix']:,} PVs and {loading['per_mix']:,} PVCs each, loaded in "
             f"{loading.get('total', 0):.0f} s. Batches of 2,500 rather than 10,000 per mix, so that the estate "
             "as a whole is the target's 10,000 + 10,000: `-l` narrows only the PV list of `leftovers` (its claim "
             "list, and `classes`' lists, are cluster-wide), so on 4 × 10,000 every cell would count the pages of "
             "40,000 objects; a per-object pattern shows at 2,500 as plainly as at 10,000. API server "
             f"{results['apiserver']}; `{v['plugin_version']}` ({v['source']}). Requests are the audit log's "
             "lines with the plugin's user agent, one run each. kube-controller-manager is frozen while loading "
             "and counting, so that the PV binder leaves the states as written (it would turn `missing` and "
             "`replaced` Released).", "",
             "- **bound**: PV and PVC bound to each other.",
             "- **released**: PV Released, its claim deleted (the batch's claims are other, Pending ones).",
             "- **missing**: PV still Bound, its claimRef naming a claim that does not exist.",
             "- **replaced**: PV still Bound, a claim of its claimRef's name exists again under another uid "
             "(Pending): issue #22's case, where `leftovers` sent one GET per claim.", "",
             f"`leftovers` and `claims` run with `-l {LABEL_KEY}=<mix>` (their selector picks PVs, claims); "
             "`classes`, `pending` and `snapshots` select StorageClasses, Pods or VolumeSnapshotContents, so "
             f"they run once on the whole estate (all four mixes together). Target: ≤ {results['limit']} each.",
             "", "| subcommand | " + " | ".join(MIXES) + " |", "|---|" + "---:|" * len(MIXES)]
    for command, by_mix in results["runs"].items():
        if "all" in by_mix:
            cells = [f"{by_mix['all']['requests']} (whole estate)"] + ["″"] * (len(MIXES) - 1)
        else:
            cells = [str(by_mix[m]["requests"]) for m in MIXES]
        lines.append(f"| `kubectl-pvleft {command}` | " + " | ".join(cells) + " |")
    over = [(command, where, cell) for command, by_mix in results["runs"].items()
            for where, cell in by_mix.items() if cell["requests"] > results["limit"]]
    if over:
        lines += ["", "Over the target: " + "; ".join(
            f"`{command}` [{where}] {cell['requests']} ("
            + ", ".join(f"{verb} {n}" for verb, n in sorted(cell["verbs"].items())) + ")"
            for command, where, cell in over) + "."]
    rss = rss_line(results["runs"].get("leftovers", {}))
    lines += ["", AT_TEN_THOUSAND] + (["", rss] if rss else [])
    lines += ["", "Reproduce (the verbs of each run are in `benchmarks/results/mixes.json`):", "",
              "```", "python benchmarks/mixes.py --keep            # load once (about "
              f"{loading.get('total', 0):.0f} s here), count", "python benchmarks/mixes.py --keep            "
              "# count again on the loaded plane",
              "python tests/cluster/controlplane.py down --dir /tmp/pvleft-bench-mixes", "```", ""]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pvleft-bench-mixes"))
    parser.add_argument("--per-mix", type=int, default=2_500, help="PVs (and PVCs) in each mix's batch")
    run.plane_flags(parser)
    return run.section(parser.parse_args(argv), LABEL, RESULTS, measure, render)


if __name__ == "__main__":
    raise SystemExit(main())
