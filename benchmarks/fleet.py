#!/usr/bin/env python3
"""Fleet mode's wall time: `leftovers --all-contexts` over N local control planes vs each context alone.

    python benchmarks/fleet.py [--contexts 3] [--pvs 300] [--repeat 5] [--dir /tmp/pvleft-fleet-bench] [--keep]

Starts N control planes of tests/cluster side by side (in DIR-1 ... DIR-N, or attaches to planes a --keep run left
there), loads each with load.py's estate of --pvs PVs and as many PVCs (no Pods, no events), writes one
kubeconfig with a context per plane (the `reader` user, bound to the plugin's ClusterRole), then runs
alternately, one warm-up each and --repeat rounds with the order rotated every round:
`leftovers -o json --all-contexts` and `leftovers -o json --context bench-I` for every I. Each is a child
process timed by the parent, output to a file. The issue's target: N contexts close to the slowest single
context, not the sum. Writes the `## Fleet` section of BENCHMARKS.md (only that section).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests" / "cluster")]  # load, and controlplane beside the tests

import yaml  # noqa: E402

from controlplane import ControlPlane, build  # noqa: E402
from load import Mix, load  # noqa: E402
from run import resolve_plugin  # noqa: E402

HEADING = "## Fleet"


def fleet_kubeconfig(planes: list[ControlPlane], path: Path) -> list[str]:
    """Each plane's reader kubeconfig under its own context, cluster and user names: bench-1 ... bench-N."""
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
    for number, cp in enumerate(planes, 1):
        reader = yaml.safe_load(cp.kubeconfig("reader").read_text())
        name = f"bench-{number}"
        doc["clusters"].append({"name": name, "cluster": reader["clusters"][0]["cluster"]})
        doc["users"].append({"name": name, "user": reader["users"][0]["user"]})
        doc["contexts"].append({"name": name, "context": {"cluster": name, "user": name}})
    doc["current-context"] = "bench-1"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o600)
    return [c["name"] for c in doc["contexts"]]


def timed(argv: list[str], out: Path) -> float:
    started = time.monotonic()
    with out.open("wb") as sink:
        result = subprocess.run(argv, stdout=sink, stderr=subprocess.PIPE, timeout=600, check=False)
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(f"error: {' '.join(argv)} exited {result.returncode}: {result.stderr.decode()[-500:]}")
    return elapsed


def measure(commands: dict[str, list[str]], repeat: int, out: Path) -> dict[str, list[float]]:
    """One warm-up of each, then `repeat` rounds with the order rotated, so no command always goes first."""
    keys = list(commands)
    samples: dict[str, list[float]] = {key: [] for key in keys}
    for key in keys:
        timed(commands[key], out)
    for round_number in range(repeat):
        order = keys[round_number % len(keys):] + keys[:round_number % len(keys)]
        for key in order:
            samples[key].append(timed(commands[key], out))
    return samples


def rows(argv: list[str], out: Path) -> list[dict[str, Any]]:
    timed(argv, out)
    return json.loads(out.read_text())["items"]


def render(result: dict[str, Any]) -> str:
    n, fleet, single = result["contexts"], result["fleet"], result["single"]
    slowest, total = max(single.values()), sum(single.values())
    lines = [
        HEADING, "",
        f"`python benchmarks/fleet.py --contexts {n} --pvs {result['pvs']} --repeat {result['repeat']}` "
        f"({result['date']}, commit {result['commit']}; load average {result['load_average']} on "
        f"{os.cpu_count()} cores). {n} control planes of `tests/cluster`, each loaded by `load.py` with "
        f"{result['per_plane_pvs']} PVs and {result['per_plane_pvcs']} PVCs ({result['per_plane_leftovers']} "
        "leftovers each); one kubeconfig with a context per plane (the `reader` user). Medians of "
        f"{result['repeat']} alternated runs after a warm-up, wall time from the parent, output to a file.",
        "",
        "| command | median wall time |", "|---|---|",
        f"| `leftovers -o json --all-contexts` ({result['fleet_rows']} rows) | {fleet:.2f} s |",
        *[f"| `leftovers -o json --context {c}` ({result['single_rows'][c]} rows) | {t:.2f} s |"
          for c, t in single.items()],
        "",
        f"**{n} contexts: {fleet:.2f} s vs slowest single {slowest:.2f} s vs sum {total:.2f} s** "
        f"({fleet / slowest:.2f}× the slowest, {fleet / total:.2f}× the sum). Target (issue #15): close to the "
        "slowest single context, not the sum.",
        "",
        "Each process pays its Python start-up once, and the contexts' lists are read concurrently "
        "(`--max-concurrency`, default 8), so the fleet run costs about one start-up plus the slowest "
        "context's reads, where running the contexts one after another costs N start-ups plus every read; "
        "on this 2-core machine the N API servers and the plugin's decoding share the same cores.",
        "",
        "Every sample in seconds, per command, round by round: " + "; ".join(
            f"{key} " + ", ".join(f"{t:.2f}" for t in values) for key, values in result["samples"].items()) + ".",
    ]
    # Paragraphs wrapped as the rest of BENCHMARKS.md is; table rows stay whole.
    return "\n".join(line if line.startswith("|") else textwrap.fill(line, 108, break_on_hyphens=False)
                     for line in lines) + "\n"


def write_section(path: Path, body: str) -> None:
    """Replace the `## Fleet` section (up to the next `## `), or add it before the start-up section."""
    text = path.read_text()
    if HEADING + "\n" in text:
        head, rest = text.split(HEADING + "\n", 1)
        tail = rest[rest.index("\n## "):] if "\n## " in rest else ""
        text = head + body + tail
    elif "\n## Start-up" in text:
        head, rest = text.split("\n## Start-up", 1)
        text = head + "\n" + body + "\n## Start-up" + rest
    else:
        text = text.rstrip() + "\n\n" + body
    path.write_text(text)


def git_commit() -> str:
    found = subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True, check=False)
    return found.stdout.strip() or "unknown"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--contexts", type=int, default=3, choices=(2, 3, 4), help="control planes (2-4)")
    parser.add_argument("--pvs", type=int, default=300, help="PVs and as many PVCs in each plane")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pvleft-fleet-bench"))
    parser.add_argument("--keep", action="store_true", help="leave the control planes running for the next run")
    parser.add_argument("--no-write", action="store_true", help="print the section, do not touch BENCHMARKS.md")
    args = parser.parse_args(argv)

    started_here: list[ControlPlane] = []
    mix = Mix.of(args.pvs, args.pvs, 0, 0)
    build()  # once, before the planes start side by side

    def ready(number: int) -> ControlPlane:
        began = time.monotonic()
        cp = ControlPlane(Path(f"{args.dir}-{number}"))
        attached = cp.attach()
        if not attached:
            cp.start(detach=True)  # detached: a plane started from a worker thread outlives that thread
            started_here.append(cp)
            load(cp, mix, "fleet")
        print(f"plane {number}: {'attached' if attached else 'started and loaded'} in "
              f"{time.monotonic() - began:.0f}s", file=sys.stderr, flush=True)
        return cp

    try:
        # Side by side: starting and loading planes one after another would be most of the run.
        with ThreadPoolExecutor(max_workers=args.contexts) as pool:
            planes = list(pool.map(ready, range(1, args.contexts + 1)))
        with tempfile.TemporaryDirectory(prefix="pvleft-fleet-") as scratch:
            kubeconfig = Path(scratch) / "fleet.kubeconfig"
            contexts = fleet_kubeconfig(planes, kubeconfig)
            base = [*resolve_plugin(None), "leftovers", "-o", "json", "--kubeconfig", str(kubeconfig)]
            commands = {"fleet": [*base, "--all-contexts"], **{c: [*base, "--context", c] for c in contexts}}
            out = Path(scratch) / "out.json"
            fleet_rows = rows(commands["fleet"], out)
            single_rows = {c: len(rows(commands[c], out)) for c in contexts}
            if len(fleet_rows) != sum(single_rows.values()):
                raise SystemExit(f"error: the fleet run has {len(fleet_rows)} rows, the contexts {single_rows}")
            samples = measure(commands, args.repeat, out)
    finally:
        if not args.keep:
            for cp in started_here:
                cp.stop(keep_logs=False)
    medians = {key: statistics.median(values) for key, values in samples.items()}
    result = {
        "contexts": args.contexts, "pvs": args.pvs, "repeat": args.repeat, "per_plane_pvs": mix.pvs,
        "per_plane_pvcs": mix.pvcs, "per_plane_leftovers": mix.leftovers, "fleet": medians.pop("fleet"),
        "single": medians, "fleet_rows": len(fleet_rows), "single_rows": single_rows,
        "date": time.strftime("%Y-%m-%d", time.gmtime()), "commit": git_commit(),
        "load_average": f"{os.getloadavg()[0]:.1f}", "samples": samples,
    }
    body = render(result)
    print(body)
    print(json.dumps(samples), file=sys.stderr)
    if not args.no_write:
        write_section(HERE.parent / "BENCHMARKS.md", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
