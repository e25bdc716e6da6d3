"""What run.py writes: the facts of the run (machine, versions, counts) and its section of BENCHMARKS.md."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional
from urllib.parse import quote

COUNTED = {
    "persistentvolumes": "/api/v1/persistentvolumes",
    "persistentvolumeclaims": "/api/v1/persistentvolumeclaims",
    "pending pods": "/api/v1/pods?fieldSelector=status.phase%3DPending",
    "events": "/api/v1/events",
    "storageclasses": "/apis/storage.k8s.io/v1/storageclasses",
}


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-") or "run"


def object_counts(cp: Any) -> dict[str, int]:
    """How many objects each list holds: remainingItemCount of a limit=1 page where the server gives
    it (not with a field selector), else the whole list, paged."""
    counts = {}
    for name, path in COUNTED.items():
        sep = "&" if "?" in path else "?"
        count, token = 0, ""
        while True:
            status, page = cp.api("GET", f"{path}{sep}limit={1 if not token and '?' not in path else 500}"
                                  + (f"&continue={quote(token, safe='')}" if token else ""), timeout=60)
            if status != 200:
                raise RuntimeError(f"GET {path}: HTTP {status}")
            meta = page.get("metadata") or {}
            count += len(page.get("items") or ())
            if meta.get("remainingItemCount") is not None:
                count += int(meta["remainingItemCount"])
                break
            token = meta.get("continue") or ""
            if not token:
                break
        counts[name] = count
    return counts


def _output(argv: Sequence[str], cwd: Optional[str] = None) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=cwd, check=False).stdout.strip()
    except OSError as exc:
        return f"({exc})"


def plugin_python(plugin: Sequence[str]) -> str:
    """The interpreter that runs the plugin: a console script's shebang, else the command itself."""
    first = Path(plugin[0])
    if len(plugin) == 1 and first.is_file():
        head = first.read_bytes()[:200].split(b"\n", 1)[0]
        if head.startswith(b"#!"):
            return head[2:].decode().strip().split()[0]
    return plugin[0]


def apiserver_version(cp: Any) -> Optional[str]:
    status, body = cp.api("GET", "/version")
    return body.get("gitVersion") if status == 200 and isinstance(body, dict) else None


def versions(plugin: Sequence[str], kubectl: str) -> dict[str, Any]:
    python = plugin_python(plugin)
    probe = ("import json, sys, importlib.metadata as m, kubectl_pvleft as k\n"
             "def v(n):\n"
             "    try: return m.version(n)\n"
             "    except m.PackageNotFoundError: return None\n"
             "print(json.dumps({'python': sys.version.split()[0], 'package': k.__file__, "
             "'packages': {n: v(n) for n in ('kubectl-pvleft', 'kubernetes', 'urllib3', 'msgspec', 'PyYAML')}}))")
    found = json.loads(_output([python, "-c", probe], cwd="/") or "{}")  # not this tree's package
    kubectl_json = json.loads(_output([kubectl, "version", "--client", "-o", "json"]) or "{}")
    package = Path(found.get("package", ".")).resolve().parent
    return {
        "plugin": " ".join(plugin), "plugin_version": _output([*plugin, "--version"]),
        "plugin_python": found.get("python"), "plugin_package": str(package),
        "packages": found.get("packages", {}), "source": _git_state(package),
        "kubectl": kubectl, "kubectl_version": (kubectl_json.get("clientVersion") or {}).get("gitVersion"),
        "bench_python": sys.version.split()[0],
    }


def _git_state(package: Path) -> str:
    head = _output(["git", "-C", str(package), "rev-parse", "--short", "HEAD"])
    if not head or "(" in head:
        return "not a git checkout"
    dirty = _output(["git", "-C", str(package), "status", "--porcelain", "--", "."])
    return f"{head}{' with uncommitted changes' if dirty else ''}"


def machine() -> dict[str, Any]:
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        total_kib = int(f.readline().split()[1])
    return {"cores": os.cpu_count(), "cpu": model, "memory_gib": round(total_kib / 2**20, 1),
            "kernel": platform.release(), "load_average": [round(x, 2) for x in os.getloadavg()]}


def save_json(path: Path, results: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, default=_plain) + "\n")


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


# ---- BENCHMARKS.md -------------------------------------------------------------------------------------

BEGIN, END = "<!-- bench-results:begin {} -->", "<!-- bench-results:end {} -->"
START_UP_HEADING = "## Start-up: krew bundle vs pip install"


def write_section(path: Path, label: str, body: str) -> None:
    """Replace this label's section, or add it before the start-up section (or at the end)."""
    begin, end = BEGIN.format(slug(label)), END.format(slug(label))
    block = f"{begin}\n{body.rstrip()}\n{end}\n"
    text = path.read_text() if path.exists() else ""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1].lstrip("\n")
    elif START_UP_HEADING in text:
        head, rest = text.split(START_UP_HEADING, 1)
        text = head + block + "\n" + START_UP_HEADING + rest
    else:
        text = text.rstrip() + "\n\n" + block
    path.write_text(text)


def _s(value: float) -> str:
    if value != value:  # nan
        return "–"
    return f"{value:.3f}" if value < 1 else f"{value:.2f}"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b and a == a and b == b else "–"


def verdict(ok: Optional[bool]) -> str:
    return "not measured" if ok is None else ("**pass**" if ok else "**FAIL**")


def scenario_table(title: str, kubectl_text: str, plugin_text: str, measured: dict[str, Any],
                   floor_text: str) -> list[str]:
    names = {"plugin": f"`kubectl-pvleft {plugin_text}`", "kubectl": f"`{kubectl_text}`", "floor": floor_text}
    floor, kubectl = measured.get("floor"), measured.get("kubectl")
    lines = [f"#### {title}", "",
             "| command | median s | min–max s | CPU s | peak RSS MiB | API requests | output | ×floor | ×kubectl |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, m in measured.items():
        low, high = m.spread()
        rss = "–" if name == "floor" else f"{m.peak('rss_mib'):.0f}"
        cpu = "–" if name == "floor" else _s(m.median("cpu"))
        requests = sorted({s.requests for s in m.samples})
        items = "" if m.items is None else f"{m.items} items, "
        output = f"{items}{m.samples[0].out_bytes / 2**20:.1f} MiB" if m.samples else "–"
        lines.append(f"| {names[name]} | {_s(m.median())} | {_s(low)}–{_s(high)} | {cpu} | {rss} | "
                     f"{'/'.join(map(str, requests))} | {output} | "
                     f"{_ratio(m.median(), floor.median()) if floor else '–'} | "
                     f"{_ratio(m.median(), kubectl.median()) if kubectl else '–'} |")
    plugin = measured.get("plugin")
    if plugin and plugin.samples:
        reads = plugin.samples[0].verbs
        lines += ["", "The plugin's requests: " + ", ".join(f"{what} ×{n}" for what, n in sorted(reads.items()))
                  + (" (all reads)." if all(w.split()[0] in ("get", "list", "watch") for w in reads) else
                     " — NOT ONLY READS.")]
    return [*lines, ""]


def _floor_text(lists: Sequence[tuple[str, str]]) -> str:
    words = [path.split("/")[-1].split("?")[0] + (" (metadata only)" if "PartialObjectMetadata" in accept else "")
             + (" (Pending)" if "Pending" in path else "") for path, accept in lists]
    return "floor: " + ", ".join(words)


def targets(results: dict[str, Any]) -> list[tuple[str, str, Optional[bool]]]:
    """(target, measured, pass) for each of issue #10's targets that this run measured."""
    rows: list[tuple[str, str, Optional[bool]]] = []
    large = results.get("large", {}).get("scenarios", {})
    left = large.get("leftovers")
    if left:
        p, f, k = left["plugin"], left["floor"], left["kubectl"]
        rows += [
            ("`leftovers -o json` ≤ 1.3× floor", f"{p.median() / f.median():.2f}× ({_s(p.median())} s vs "
                                                  f"{_s(f.median())} s)", p.median() <= 1.3 * f.median()),
            ("`leftovers -o json` ≤ 0.15× kubectl", f"{p.median() / k.median():.2f}× ({_s(k.median())} s; "
                                                     f"CPU {_ratio(p.median('cpu'), k.median('cpu'))})",
             p.median() <= 0.15 * k.median()),
            ("`leftovers -o json` ≤ 50 requests", f"{max(s.requests for s in p.samples)}",
             max(s.requests for s in p.samples) <= 50),
            ("`leftovers -o json` RSS ≤ 80 MiB", f"{p.peak('rss_mib'):.0f} MiB", p.peak("rss_mib") <= 80),
        ]
    scale = results.get("large", {}).get("scale")
    if scale and left:
        s, pvs = scale["plugin"], results["large"]["scale_counts"]["persistentvolumes"]
        rows += [(f"at {pvs:,} PVs (target: 100,000): RSS ≤ 150 MiB", f"{s.peak('rss_mib'):.0f} MiB",
                  s.peak("rss_mib") <= 150),
                 (f"at {pvs:,} PVs: time ≤ 11× its 10,000 time",
                  f"{s.median() / left['plugin'].median():.1f}× ({_s(s.median())} s)",
                  s.median() <= 11 * left["plugin"].median())]
    else:
        rows.append(("at 100,000 PVs: RSS ≤ 150 MiB, time ≤ 11× the 10k time", "not run (--scale 100000)", None))
    for key, label, rss in (("pending", "`pending -A`", 100), ("classes", "`classes`", None),
                            ("claims", "`claims -A`", None)):
        m = large.get(key)
        if not m:
            continue
        p, k = m["plugin"], m["kubectl"]
        rows.append((f"{label} ≤ 0.15× kubectl", f"{p.median() / k.median():.2f}× (CPU "
                                                 f"{_ratio(p.median('cpu'), k.median('cpu'))})",
                     p.median() <= 0.15 * k.median()))
        if rss:
            rows.append((f"{label} RSS ≤ {rss} MiB", f"{p.peak('rss_mib'):.0f} MiB", p.peak("rss_mib") <= rss))
    small = results.get("small")
    if small:
        p, k = small["scenario"]["plugin"], small["scenario"]["kubectl"]
        rows.append(("small cluster: `leftovers` ≤ 1.5× `kubectl get pv`",
                     f"{p.median() / k.median():.2f}× ({_s(p.median())} s vs {_s(k.median())} s; CPU "
                     f"{_ratio(p.median('cpu'), k.median('cpu'))})", p.median() <= 1.5 * k.median()))
        h = small["help"]
        rows.append(("`kubectl-pvleft --help` ≤ 0.15 s CPU", f"{h.median('cpu'):.3f} s (user+sys, median)",
                     h.median("cpu") <= 0.15))
    return rows


def render(label: str, results: dict[str, Any], note: str, scenarios: Sequence[Any], small_scenario: Any) -> str:
    v, hw = results["versions"], results["machine"]
    lines = [f"## Results: {label}", "",
             f"{results['started']}, `python benchmarks/run.py {_shown_argv(results['argv'])}`. "
             f"Machine: {hw['cores']} cores ({hw['cpu']}), {hw['memory_gib']} GiB, Linux {hw['kernel']}, "
             f"load average {results.get('load_average_at_start', '?')} when it started and "
             f"{hw['load_average'][0]} when it ended (other sessions share these cores: wall times stretch "
             "with the load; CPU times much less).", "",
             f"Versions: `{v['plugin_version'] or 'kubectl-pvleft ?'}` from `{v['plugin_package']}` "
             f"({v['source']}; {_install_text(results)}), Python {v['plugin_python']}, "
             + ", ".join(f"{n} {ver}" for n, ver in v["packages"].items() if ver and n != "kubectl-pvleft")
             + f"; kubectl {v['kubectl_version']} (`{v['kubectl']}`); kube-apiserver "
             f"{(results.get('large') or results.get('small') or {}).get('apiserver')}.", ""]
    if note:
        lines += [note, ""]
    lines += ["### Targets (issue #10)", "", "| target | measured | verdict |", "|---|---|---|"]
    lines += [f"| {t} | {m} | {verdict(ok)} |" for t, m, ok in targets(results)]
    lines.append("")
    large = results.get("large")
    if large:
        lines += _large_lines(large, scenarios)
    small = results.get("small")
    if small:
        lines += [f"### Small cluster ({small['pvs']} PVs)", ""]
        lines += scenario_table(small_scenario.title, small_scenario.kubectl_text, " ".join(small_scenario.plugin),
                                small["scenario"], _floor_text(small_scenario.floor))
        h = small["help"]
        lines += [f"`kubectl-pvleft --help`: {h.median('cpu'):.3f} s CPU (user+sys), {_s(h.median())} s wall, "
                  f"{h.peak('rss_mib'):.0f} MiB peak RSS (median of {len(h.samples)}).", ""]
        lines += _import_lines(small.get("imports") or {})
    return "\n".join(lines)


def _install_text(results: dict[str, Any]) -> str:
    installed = results.get("install")
    if installed:
        return (f"installed for this run by `pip install` of `git archive {installed['commit'][:7]}` into a fresh "
                f"`{installed['python']} -m venv`: not editable, runtime dependencies only"
                + (", uncommitted changes of the checkout left out" if installed["uncommitted_changes_left_out"]
                   else ""))
    if results["versions"]["source"] != "not a git checkout":
        return "run from the git checkout, an editable install (not what users install: see --install)"
    return "an installed copy"


def _import_lines(imports: dict[str, Any]) -> list[str]:
    """One line per profiled command: module count, third-party packages, what was tried and is absent."""
    lines = []
    for command, profile in imports.items():
        if command == "error" or not profile.get("modules"):
            continue
        third = ", ".join(f"{name} {ms:.0f} ms" for name, ms in profile["third_party_ms"].items())
        absent = ", ".join(profile["absent_tried"])
        lines.append(f"- `kubectl-pvleft {command}`: {profile['modules']} modules imported; outside the "
                     f"standard library (cumulative import time): {third or 'none'}"
                     + (f"; tried and absent: {absent}" if absent else "") + ".")
    if not lines:
        return []
    return ["`python -X importtime` of the plugin (once, untimed, on the small cluster):", "", *lines, ""]


def _shown_argv(argv: Sequence[str]) -> str:
    """The command line as typed, with the --note value (printed below it) elided."""
    shown, skip = [], False
    for word in argv:
        if skip:
            shown.append('"…"')
        elif " " in word:
            shown.append(f'"{word}"')
        else:
            shown.append(word)
        skip = word == "--note"
    return " ".join(shown)


def _large_lines(large: dict[str, Any], scenarios: Sequence[Any]) -> list[str]:
    c, loading = large["counts"], large.get("loading") or {}
    lines = ["### Large cluster", "",
             f"{c['persistentvolumes']:,} PVs, {c['persistentvolumeclaims']:,} PVCs in 50 namespaces, "
             f"{c['pending pods']:,} Pending Pods, {c['events']:,} events, {c['storageclasses']} StorageClasses "
             f"(mix: {_mix_text(large['mix'])})."]
    if loading:
        phases = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in loading.items()
                           if name not in ("total", "requests"))
        lines.append(f"Loaded in {loading['total']:.0f} s ({loading['requests']:,} requests, "
                     f"{loading['requests'] / loading['total']:.0f}/s on 16 connections: {phases}).")
    background = [s.background / s.wall for m in large["scenarios"].values() for r in m.values() for s in r.samples]
    if background:
        lines.append(f"Other clients (controllers, scheduler) made {sum(background) / len(background):.1f} "
                     "requests/s on average during the timed runs.")
    lines.append("")
    by_key = {s.key: s for s in scenarios}
    for key, measured in large["scenarios"].items():
        s = by_key[key]
        lines += scenario_table(s.title, s.kubectl_text, " ".join(s.plugin), measured, _floor_text(s.floor))
    scale = large.get("scale")
    if scale:
        sc, sl = large["scale_counts"], large["scale_loading"]
        lines += [f"#### leftovers -o json at {sc['persistentvolumes']:,} PVs, {sc['persistentvolumeclaims']:,} PVCs",
                  "", _scale_text(large, sl), ""]
        s = scenarios[0]
        lines += scenario_table(f"{s.title} (scale)", s.kubectl_text, " ".join(s.plugin), scale,
                                _floor_text(s.floor))[2:]
    return lines


def _scale_text(large: dict[str, Any], loading: dict[str, Any]) -> str:
    plane = large.get("scale_plane")
    if not plane:
        return f"The same plane, grown by {loading['requests']:,} requests in {loading['total']:.0f} s."
    record = plane["loading"]
    when = ("loaded by this run" if record["loaded_now"] == list(record["batches"]) else
            f"batches {', '.join(record['loaded_now'])} loaded by this run" if record["loaded_now"] else
            "loaded before this run and reused")
    text = (f"A second plane in `{plane['dir']}`, kept between runs, {large['scale_counts']['pending pods']:,} Pods and "
            f"{large['scale_counts']['events']:,} events (`leftovers` reads neither): batches "
            f"{', '.join(record['batches'])}, {loading['requests']:,} requests in {loading['total']:.0f} s, {when}.")
    thaw = plane.get("thaw")
    if thaw:
        text += (f" It was frozen (SIGSTOP) for {thaw['frozen']:.0f} s while the scenarios above ran; after SIGCONT "
                 f"/readyz answered in {thaw['ready_after']:.2f} s and a full list of its "
                 f"{thaw['first_list_items']:,} PVs took {thaw['first_list']:.1f} s.")
    return text


def _mix_text(mix: dict[str, int]) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in mix.items() if v and k not in ("pods", "events"))


