#!/usr/bin/env python3
"""Compression: when asking for gzip pays, on loopback and over a slow link.

    python benchmarks/compression.py [--dir /tmp/pvleft-bench-compress] [--pvs 10000 --pvcs 10000]
                                     [--repeat 5] [--delay-ms 10 --rate-mbit 50] [--keep]

On one control plane loaded by load.py (N PVs and N PVCs, no Pods or events: these commands read neither),
`kubectl-pvleft leftovers`, `kubectl-pvleft claims -A` and, for reference, `kubectl get pv` (kubectl asks
for gzip too) run with the kubeconfig's cluster as it is (`Accept-Encoding: gzip` on lists) and with
`disable-compression: true`, alternately, first straight to the API server on loopback, then through
linkshaper.py's slow link (a one-way delay of --delay-ms each way, so 2x that round trip, and --rate-mbit
each way, shared by all connections). For every run: wall time, the child's CPU (user+sys), the API
server's CPU over the same time (it does the gzipping), and the bytes that crossed the link each way
(TLS records, as on a wire). The bytes are counted by the link, so only for its runs; the loopback runs
send the same requests and get the same answers.

Writes the "Compression" section of BENCHMARKS.md and the samples to benchmarks/results/compression.json;
--render rewrites the section from that file. Stops the plane it started unless --keep; a later run with
--keep reuses a loaded plane.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import report  # noqa: E402
import run  # noqa: E402
from linkshaper import LinkShaper  # noqa: E402
from load import Mix, load, load_once  # noqa: E402

LABEL = "compression"
COMMANDS = {  # key: (words in the table, plugin or kubectl, arguments)
    "leftovers": ("`kubectl-pvleft leftovers`", "plugin", ("leftovers",)),
    "claims": ("`kubectl-pvleft claims -A`", "plugin", ("claims", "-A")),
    "kubectl": ("`kubectl get pv` (kubectl 1.33)", "kubectl", ("get", "pv")),
}
SETTINGS = ("gzip", "plain")  # the kubeconfig as it is; with disable-compression: true
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def kubeconfig_variant(source: Path, target: Path, server: Optional[str], plain: bool) -> Path:
    """The admin kubeconfig with another server URL and/or `disable-compression: true` in its cluster."""
    text = source.read_text()
    match = re.search(r"^(\s*)server: (\S+)$", text, re.M)
    if not match:
        raise SystemExit(f"error: no server line in {source}")
    indent, url = match.group(1), server or match.group(2)
    extra = f"\n{indent}disable-compression: true" if plain else ""
    target.write_text(text[:match.start()] + f"{indent}server: {url}{extra}" + text[match.end():])
    return target


def apiserver_cpu(cp: Any) -> Callable[[], float]:
    """A reader of the API server process's CPU seconds (user+sys) so far."""
    pid = json.loads(cp.pids_file.read_text())["kube-apiserver"]

    def seconds() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    return seconds


class Runner:
    """Each command with each setting, over one link, as child processes measured by run.Bench."""

    def __init__(self, bench: run.Bench, kubeconfigs: dict[str, Path], server_cpu: Callable[[], float],
                 link: Optional[LinkShaper]) -> None:
        self.bench, self.kubeconfigs, self.server_cpu, self.link = bench, kubeconfigs, server_cpu, link

    def once(self, command: str, setting: str) -> dict[str, Any]:
        _, who, args = COMMANDS[command]
        kubeconfig = str(self.kubeconfigs[setting])
        if who == "plugin":
            argv, agent = [*self.bench.plugin, *args, "--kubeconfig", kubeconfig], run.PLUGIN_AGENT
        else:
            argv, agent = [self.bench.kubectl, "--kubeconfig", kubeconfig, *args], run.KUBECTL_AGENT
        before = self.link.counters() if self.link else None
        server_before = self.server_cpu()
        sample = self.bench.child(argv, agent)
        result = {"wall": sample.wall, "cpu": sample.cpu, "rss_mib": sample.rss_mib, "requests": sample.requests,
                  "server_cpu": self.server_cpu() - server_before, "out_bytes": sample.out_bytes}
        if self.link and before:
            after = self.link.counters()
            result.update(up_bytes=after[0] - before[0], down_bytes=after[1] - before[1],
                          connections=after[2] - before[2])
        return result

    def rounds(self, repeat: int, name: str) -> dict[str, list[dict[str, Any]]]:
        pairs = [(c, s) for c in COMMANDS for s in SETTINGS]
        for command, setting in pairs:  # warm-up, untimed: caches, kubectl's discovery cache for this address
            self.once(command, setting)
        samples: dict[str, list[dict[str, Any]]] = {f"{c}/{s}": [] for c, s in pairs}
        for round_ in range(repeat):
            # The commands rotated every round; each one's two settings back to back, their order swapped.
            commands = list(COMMANDS)[round_ % len(COMMANDS):] + list(COMMANDS)[:round_ % len(COMMANDS)]
            order = [(c, s) for c in commands for s in (SETTINGS if round_ % 2 == 0 else SETTINGS[::-1])]
            for command, setting in order:
                samples[f"{command}/{setting}"].append(self.once(command, setting))
            print(f"  {name}: round {round_ + 1}/{repeat}: "
                  + ", ".join(f"{k} {v[-1]['wall']:.2f}s" for k, v in samples.items()), file=sys.stderr, flush=True)
        return samples


def loaded_plane(args: argparse.Namespace, planes: list[Any]) -> tuple[Any, dict[str, Any]]:
    def fill(cp: Any) -> dict[str, Any]:
        if report.object_counts(cp)["persistentvolumes"] >= args.pvs:  # loaded by load.py itself
            return {}
        mix = Mix.of(args.pvs, args.pvcs, 0, 0)
        print(f"loading {mix}", file=sys.stderr, flush=True)
        loading = load(cp, mix, "b0")
        time.sleep(args.settle)
        return loading

    return load_once(args.dir, "bench-load.json", {"pvs": args.pvs, "pvcs": args.pvcs}, fill, keep=args.keep,
                     planes=planes)


def measure(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    plugin, kubectl = run.resolve_plugin(args.plugin), run.resolve_kubectl(args.kubectl)
    results: dict[str, Any] = {"argv": sys.argv[1:], "started": report.utc_now(),
                               "load_average_at_start": round(os.getloadavg()[0], 2),
                               "versions": report.versions(plugin, kubectl),
                               "link": {"delay_ms": args.delay_ms, "rate_mbit": args.rate_mbit}}
    planes: list[Any] = []
    try:
        cp, results["loading"] = loaded_plane(args, planes)
        results["counts"] = report.object_counts(cp)
        results["apiserver"] = report.apiserver_version(cp)
        bench = run.Bench(cp, plugin, kubectl, scratch)
        admin = cp.kubeconfig("admin")
        direct = {s: kubeconfig_variant(admin, scratch / f"direct-{s}.kubeconfig", None, s == "plain")
                  for s in SETTINGS}
        results["loopback"] = Runner(bench, direct, apiserver_cpu(cp), None).rounds(args.repeat, "loopback")
        link = LinkShaper(("127.0.0.1", cp.ports["apiserver"]), args.delay_ms, args.rate_mbit)
        try:
            shaped = {s: kubeconfig_variant(admin, scratch / f"link-{s}.kubeconfig",
                                            f"https://127.0.0.1:{link.port}", s == "plain") for s in SETTINGS}
            results["link_runs"] = Runner(bench, shaped, apiserver_cpu(cp), link).rounds(args.repeat, "link")
        finally:
            link.close()
    finally:
        for cp in planes:
            cp.stop(keep_logs=False)
    results["machine"] = report.machine()
    return results


# ---- the section of BENCHMARKS.md -------------------------------------------------------------------------


def _median(samples: Sequence[dict[str, Any]], key: str) -> float:
    values = [s[key] for s in samples if key in s]
    return statistics.median(values) if values else float("nan")


def _mib(value: float) -> str:
    return "–" if value != value else f"{value / 2**20:.1f}"


def table(runs: dict[str, list[dict[str, Any]]], with_bytes: bool) -> list[str]:
    lines = ["| command | compression | median s | min–max s | ×plain | CPU s | API server CPU s | peak RSS MiB |"
             + (" MiB received | KiB sent |" if with_bytes else ""),
             "|---|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if with_bytes else "")]
    for command, (words, _, _) in COMMANDS.items():
        plain = _median(runs[f"{command}/plain"], "wall")
        for setting in SETTINGS:
            samples = runs[f"{command}/{setting}"]
            walls = [s["wall"] for s in samples]
            wall = _median(samples, "wall")
            row = (f"| {words} | {'gzip' if setting == 'gzip' else 'off (`disable-compression`)'} | "
                   f"{report._s(wall)} | {report._s(min(walls))}–{report._s(max(walls))} | "
                   f"{wall / plain:.2f}× | {report._s(_median(samples, 'cpu'))} | "
                   f"{report._s(_median(samples, 'server_cpu'))} | {max(s['rss_mib'] for s in samples):.0f} |")
            if with_bytes:
                row += f" {_mib(_median(samples, 'down_bytes'))} | {_median(samples, 'up_bytes') / 1024:.0f} |"
            lines.append(row)
    return [*lines, ""]


def render(results: dict[str, Any]) -> str:
    v, hw, link = results["versions"], results["machine"], results["link"]
    counts = results["counts"]
    loading = results.get("loading") or {}
    loaded = (f"loaded by load.py in {loading['total']:.0f} s ({loading['requests']:,} requests)"
              if "total" in loading else "loaded before")
    return "\n".join([
        "## Compression", "",
        f"{results['started']}, `python benchmarks/compression.py {report._shown_argv(results['argv'])}`. "
        f"One control plane with {counts['persistentvolumes']:,} PVs and {counts['persistentvolumeclaims']:,} "
        f"PVCs in 50 namespaces ({loaded}), API server {results['apiserver']}; `{v['plugin_version']}` "
        f"({v['source']}), kubectl {v['kubectl_version']}. Machine: {hw['cores']} cores, load average "
        f"{results['load_average_at_start']} at the start and {hw['load_average'][0]} at the end. Medians of "
        f"{len(next(iter(results['loopback'].values())))} alternated runs after one warm-up each. "
        "\"CPU s\" is the command's own (user+sys); \"API server CPU s\" is kube-apiserver's over the same "
        "time (it compresses; controllers add a little background).", "",
        "### Loopback", "", *table(results["loopback"], False),
        f"### A {2 * link['delay_ms']:g} ms round trip, {link['rate_mbit']:g} Mbit/s each way", "",
        "Through `benchmarks/linkshaper.py`, a TCP proxy on loopback that holds every byte until a link of this "
        "delay and rate would have delivered it (this kernel has no `netem` qdisc, so `tc` could not do it; "
        "TCP slow start and loss are not modelled). Bytes are what crossed it, TLS included.", "",
        *table(results["link_runs"], True),
    ])


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pvleft-bench-compress"))
    parser.add_argument("--pvs", type=int, default=10_000)
    parser.add_argument("--pvcs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds over each link (after one warm-up)")
    parser.add_argument("--delay-ms", type=float, default=10.0, help="one-way delay of the slow link")
    parser.add_argument("--rate-mbit", type=float, default=50.0, help="rate of the slow link, each way")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds to let the controllers settle after loading")
    run.plane_flags(parser)
    return run.section(parser.parse_args(argv), LABEL, LABEL, measure, render)


if __name__ == "__main__":
    raise SystemExit(main())
