#!/usr/bin/env python3
"""kubectl-pvleft against kubectl and against the floor, on a loaded test control plane.

    python benchmarks/run.py [--pvs 10000 --pvcs 10000 --pods 2000 --events 20000] [--repeat 5]
                             [--label "before core v2"] [--scale 100000 [--scale-dir DIR]] [--keep] [--install]

1. A small control plane (8 PVs): `leftovers` vs `kubectl get pv`, and `kubectl-pvleft --help`'s CPU time.
2. A large one, loaded by load.py; then, alternately (one warm-up of each, then --repeat rounds, the order
   rotated every round): each subcommand, its kubectl equivalent, and the floor (the same lists fetched
   raw over HTTPS in pages of 500 and discarded, in this process).
3. With --scale N: N PVs and N PVCs in all, then `leftovers -o json` and its floor again: on the same plane,
   grown, or with --scale-dir on a second plane kept between runs (scaleplane.py), frozen meanwhile.
With --install the plugin is a fresh non-editable install of `git archive HEAD` (install.py).
Each command runs as a child process; wall time from the parent, user+sys CPU and peak RSS from that
child's wait4(), API requests from the audit log lines its userAgent wrote during the run.
Writes its section of BENCHMARKS.md (replacing one of the same --label) and the raw samples as
benchmarks/results/<label>.json; stops the control planes it started unless --keep.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests" / "cluster")]  # load, and controlplane beside the tests

import install  # noqa: E402
import report  # noqa: E402
import scaleplane  # noqa: E402
from controlplane import ControlPlane  # noqa: E402
from load import Mix, admin_tls, load, start_or_attach  # noqa: E402

PLUGIN_AGENT = "kubectl-pvleft/"
KUBECTL_AGENT = "kubectl"  # kubectl/v1.33.x (linux/amd64) kubernetes/...; also kubectl.1.33/...
FLOOR_AGENT = "pvleft-bench-floor/1"
GNU_TIME = "/usr/bin/time"  # Debian's `time` package
PAGE = 500
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

PV = ("/api/v1/persistentvolumes", "application/json")
PVC = ("/api/v1/persistentvolumeclaims", "application/json")
PVC_METADATA = ("/api/v1/persistentvolumeclaims", METADATA_ONLY)
SC = ("/apis/storage.k8s.io/v1/storageclasses", "application/json")
CSI_DRIVERS = ("/apis/storage.k8s.io/v1/csidrivers", METADATA_ONLY)
PENDING_PODS = ("/api/v1/pods?fieldSelector=status.phase%3DPending", "application/json")
EVENTS = ("/api/v1/events", "application/json")


@dataclass(frozen=True)
class Scenario:
    key: str
    title: str
    plugin: tuple[str, ...]
    kubectl: tuple[tuple[str, ...], ...]
    floor: tuple[tuple[str, str], ...]
    kubectl_label: str = ""

    @property
    def kubectl_text(self) -> str:
        return self.kubectl_label or " + ".join("kubectl " + " ".join(c) for c in self.kubectl)


SCENARIOS = (
    Scenario("leftovers", "leftovers -o json", ("leftovers", "-o", "json"),
             (("get", "pv,pvc", "-A", "-o", "json"),), (PV, PVC_METADATA, SC)),
    Scenario("pending", "pending -A", ("pending", "-A"),
             (("get", "pods", "-A", "--field-selector=status.phase=Pending", "-o", "json"),
              ("get", "events", "-A", "-o", "json")),
             (PENDING_PODS, EVENTS, PVC, PV, SC, CSI_DRIVERS)),
    Scenario("classes", "classes", ("classes",), (("get", "sc,pv,pvc", "-A", "-o", "json"),),
             (SC, PV, PVC, CSI_DRIVERS)),
    Scenario("claims", "claims -A", ("claims", "-A"), (("get", "pvc", "-A", "-o", "json"),), (PVC,)),
)
SMALL = Scenario("small", "leftovers (small cluster)", ("leftovers",), (("get", "pv"),), (PV, PVC_METADATA, SC))
SMALL_MIX = Mix(bound=3, released_retain=2, released_replaced=0, released_delete=1, failed=1, available=1,
                static_pending=0, prebound_released=0, external_pending=0, wffc_pending=0, lost=0, resizing=0,
                pods=0, events=0)


@dataclass
class Sample:
    wall: float
    cpu: float = 0.0
    rss_mib: float = 0.0
    requests: int = 0
    verbs: dict[str, int] = field(default_factory=dict)
    background: int = 0
    out_bytes: int = 0
    items: Optional[int] = None  # JSON items or table rows in the output; counted in warm-ups only


@dataclass
class Measured:
    """All samples of one command line in one scenario."""

    label: str
    samples: list[Sample] = field(default_factory=list)
    items: Optional[int] = None  # what the output held (JSON items, or table rows), from the warm-up

    def median(self, attr: str = "wall") -> float:
        return statistics.median(getattr(s, attr) for s in self.samples) if self.samples else float("nan")

    def spread(self) -> tuple[float, float]:
        walls = [s.wall for s in self.samples]
        return (min(walls), max(walls)) if walls else (float("nan"), float("nan"))

    def peak(self, attr: str) -> float:
        return max((getattr(s, attr) for s in self.samples), default=float("nan"))


class AuditWindow:
    """The audit log lines written between start() and close(), counted by userAgent."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def start(self) -> None:
        self.offset = self.path.stat().st_size

    def close(self, agent: str) -> tuple[int, dict[str, int], int]:
        """(requests by `agent`, those by verb and resource, requests by anyone else) since start()."""
        data = b""
        if self.path.stat().st_size < self.offset:
            # The apiserver rotated the log (at 100 MB): the window began in the newest rotated file.
            rotated = max(self.path.parent.glob(self.path.stem + "-*" + self.path.suffix),
                          key=lambda p: p.stat().st_mtime)
            with rotated.open("rb") as f:
                f.seek(self.offset)
                data = f.read()
            self.offset = 0
        with self.path.open("rb") as f:
            f.seek(self.offset)
            data += f.read()
        mine, verbs, others = 0, {}, 0
        for line in data.splitlines():
            event = json.loads(line)
            if event.get("stage") != "ResponseComplete":
                continue
            if (event.get("userAgent") or "").startswith(agent):
                mine += 1
                what = f"{event['verb']} {(event.get('objectRef') or {}).get('resource', event['requestURI'])}"
                verbs[what] = verbs.get(what, 0) + 1
            else:
                others += 1
        return mine, verbs, others


class Bench:
    def __init__(self, cp: ControlPlane, plugin: Sequence[str], kubectl: str, scratch: Path) -> None:
        self.cp = cp
        self.kubeconfig = str(cp.kubeconfig("admin"))
        self.plugin = list(plugin)
        self.kubectl = kubectl
        self.scratch = scratch
        self.audit = AuditWindow(cp.audit_log)
        self.env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "PVLEFT_SERVICEACCOUNT_DIR")}
        self.env["KUBECACHEDIR"] = str(scratch / "kube-cache")  # kubectl's discovery cache, not ~/.kube

    # -- one child process, measured
    def child(self, argv: Sequence[str], agent: str, count: bool = False) -> Sample:
        """Run argv under GNU time, which reports the peak RSS: a direct child's ru_maxrss would count
        the pages of this big parent it was forked from (exec keeps the old mm's high-water mark)."""
        out_path, err_path, rss_path = self.scratch / "stdout", self.scratch / "stderr", self.scratch / "rss"
        self.audit.start()
        with out_path.open("wb") as out, err_path.open("wb") as err:
            started = time.perf_counter()
            proc = subprocess.Popen([GNU_TIME, "-f", "%M", "-o", str(rss_path), *argv], stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL, env=self.env, cwd=self.scratch)
            # wait4's CPU covers time's child too (it reaped it), to the microsecond.
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 3):
            raise RuntimeError(f"{shlex.join(argv)} exited {proc.returncode}: {err_path.read_text()[-2000:]}")
        requests, verbs, others = self.audit.close(agent)
        peak_kib = int(rss_path.read_text().split()[-1])
        return Sample(wall=wall, cpu=usage.ru_utime + usage.ru_stime, rss_mib=peak_kib / 1024,
                      requests=requests, verbs=verbs, background=others, out_bytes=out_path.stat().st_size,
                      items=_items(out_path.read_bytes()) if count else None)

    def run_plugin(self, args: Sequence[str], count: bool = False) -> Sample:
        return self.child([*self.plugin, *args, "--kubeconfig", self.kubeconfig], PLUGIN_AGENT, count)

    def run_kubectl(self, commands: Sequence[Sequence[str]], count: bool = False) -> Sample:
        """Several kubectl commands in a row count as one answer: walls, CPU and requests add up."""
        total = Sample(wall=0.0, items=0 if count else None)
        for args in commands:
            sample = self.child([self.kubectl, "--kubeconfig", self.kubeconfig, *args], KUBECTL_AGENT, count)
            if count:
                total.items = (total.items or 0) + (sample.items or 0)
            total.wall += sample.wall
            total.cpu += sample.cpu
            total.rss_mib = max(total.rss_mib, sample.rss_mib)
            total.requests += sample.requests
            total.background += sample.background
            total.out_bytes += sample.out_bytes
            for verb, n in sample.verbs.items():
                total.verbs[verb] = total.verbs.get(verb, 0) + n
        return total

    def run_floor(self, lists: Sequence[tuple[str, str]], count: bool = False) -> Sample:
        """The lists, raw: a fresh TLS connection, pages of 500, bodies read and dropped."""
        context = admin_tls(self.cp)
        self.audit.start()
        started, size = time.perf_counter(), 0
        connection = http.client.HTTPSConnection("127.0.0.1", self.cp.ports["apiserver"], context=context)
        for path, accept in lists:
            size += read_all_pages(connection, path, accept)
        connection.close()
        wall = time.perf_counter() - started
        requests, verbs, others = self.audit.close(FLOOR_AGENT)
        return Sample(wall=wall, requests=requests, verbs=verbs, background=others, out_bytes=size)

    def scenario(self, scenario: Scenario, repeat: int, with_kubectl: bool = True) -> dict[str, Measured]:
        runners: dict[str, Callable[[bool], Sample]] = {
            "plugin": lambda count: self.run_plugin(scenario.plugin, count),
            "kubectl": lambda count: self.run_kubectl(scenario.kubectl, count),
            "floor": lambda count: self.run_floor(scenario.floor, count),
        }
        if not with_kubectl:
            del runners["kubectl"]
        measured = {name: Measured(name) for name in runners}
        # Warm-up, untimed: the page cache, the server's caches, kubectl's discovery cache (a cheap
        # command: a full kubectl run at 10,000 objects costs as much as a timed one).
        self.run_plugin(scenario.plugin)
        self.run_floor(scenario.floor)
        if with_kubectl:
            self.child([self.kubectl, "--kubeconfig", self.kubeconfig, "api-resources"], KUBECTL_AGENT)
        order = list(runners)
        for round_ in range(repeat):
            for name in order[round_ % len(order):] + order[:round_ % len(order)]:
                # The first round also counts what each output held (after the clock stopped).
                sample = runners[name](round_ == 0)
                measured[name].samples.append(sample)
                if round_ == 0:
                    measured[name].items = sample.items
            print(f"  {scenario.title}: round {round_ + 1}/{repeat}: "
                  + ", ".join(f"{n} {m.samples[-1].wall:.2f}s" for n, m in measured.items()),
                  file=sys.stderr, flush=True)
        return measured

    def import_profiles(self, args: Sequence[str]) -> dict[str, Any]:
        """`-X importtime` of `--help` and of args against this plane (not timed: the profile slows it)."""
        python = report.plugin_python(self.plugin)
        try:
            return {"--help": install.import_profile([*self.plugin, "--help"], python, self.env, self.scratch),
                    " ".join(args): install.import_profile([*self.plugin, *args, "--kubeconfig", self.kubeconfig],
                                                           python, self.env, self.scratch)}
        except (OSError, RuntimeError) as exc:  # not a Python plugin (a bundle): no profile
            return {"error": str(exc)[:200]}

    def help_cpu(self, repeat: int) -> Measured:
        measured = Measured("--help")
        self.child([*self.plugin, "--help"], PLUGIN_AGENT)
        for _ in range(max(10, 3 * repeat)):
            measured.samples.append(self.child([*self.plugin, "--help"], PLUGIN_AGENT))
        return measured


def plane_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of a benchmark that loads a plane and writes one section of BENCHMARKS.md (``section``)."""
    parser.add_argument("--plugin", help="the plugin command line (default: kubectl-pvleft beside this Python)")
    parser.add_argument("--kubectl", help="the kubectl binary (default: the real one behind gcloud's dispatcher)")
    parser.add_argument("--keep", action="store_true", help="leave the plane running (and reuse a loaded one)")
    parser.add_argument("--output", type=Path, default=HERE.parent / "BENCHMARKS.md")
    parser.add_argument("--render", type=Path, metavar="RESULTS_JSON", help="only rewrite the section from a results file")


def section(args: argparse.Namespace, label: str, results_name: str,
            measure: Callable[[argparse.Namespace, Path], dict[str, Any]],
            render: Callable[[dict[str, Any]], str]) -> int:
    """The end of such a benchmark's main: measure in a scratch folder (GNU time is what reads peak RSS) and save
    the results as benchmarks/results/RESULTS_NAME.json, or read them back (--render); then write the section."""
    if args.render:
        results = json.loads(args.render.read_text())
    else:
        if not os.access(GNU_TIME, os.X_OK):
            raise SystemExit(f"error: {GNU_TIME} is missing (apt-get install time): it measures peak RSS")
        with tempfile.TemporaryDirectory(prefix=f"pvleft-{results_name}-") as scratch:
            results = measure(args, Path(scratch))
        report.save_json(HERE / "results" / f"{results_name}.json", results)
    report.write_section(args.output, label, render(results))
    print(f"wrote the section {label!r} of {args.output}", file=sys.stderr)
    return 0


def read_all_pages(connection: http.client.HTTPSConnection, path: str, accept: str, page: int = PAGE,
                   agent: str = FLOOR_AGENT, answered: Optional[Callable[[], None]] = None) -> int:
    """The floor: one list read raw, page by page (``page`` 0: in one answer), with nothing decoded but the
    continue token; returns the bytes read. ``answered`` is called after each answer (to count or time them)."""
    size, token = 0, ""
    headers = {"Accept": accept, "User-Agent": agent}
    while True:
        query = ([f"limit={page}"] if page else []) + ([f"continue={quote(token, safe='')}"] if token else [])
        url = path + (("&" if "?" in path else "?") + "&".join(query) if query else "")
        connection.request("GET", url, headers=headers)
        response = connection.getresponse()
        body = response.read()
        if answered is not None:
            answered()
        if response.status != 200:
            raise RuntimeError(f"floor GET {url}: HTTP {response.status}")
        size += len(body)
        # The continue token is in the list's metadata, which the server writes before the items.
        match = re.search(rb'"continue":"([^"]*)"', body[:4096])
        token = match.group(1).decode() if match else ""
        if not token:
            return size


def _items(output: bytes) -> Optional[int]:
    """JSON items in a List, or rows in a table (without its header)."""
    if not output:
        return None
    text = output.decode(errors="replace").strip()
    if text.startswith("{"):
        count = 0
        for chunk in re.split(r"\n(?=\{)", text):  # several kubectl Lists in a row
            count += len(json.loads(chunk).get("items") or ())
        return count
    return max(0, len(text.splitlines()) - 1)


def revive(results: dict[str, Any]) -> dict[str, Any]:
    """A results file read back: its measured commands as Measured again."""
    def measured(data: dict[str, Any]) -> Measured:
        return Measured(data["label"], [Sample(**s) for s in data["samples"]], data.get("items"))

    def group(data: dict[str, Any]) -> dict[str, Measured]:
        return {name: measured(m) for name, m in data.items()}

    small, large = results.get("small"), results.get("large")
    if small:
        small["scenario"], small["help"] = group(small["scenario"]), measured(small["help"])
    if large:
        large["scenarios"] = {key: group(m) for key, m in large["scenarios"].items()}
        if large.get("scale"):
            large["scale"] = group(large["scale"])
    return results


# ---- the whole run --------------------------------------------------------------------------------------


def resolve_plugin(option: Optional[str]) -> list[str]:
    if option:
        return shlex.split(option)
    beside = Path(sys.executable).parent / "kubectl-pvleft"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("kubectl-pvleft")
    return [found] if found else [sys.executable, "-m", "kubectl_pvleft"]


def resolve_kubectl(option: Optional[str]) -> str:
    """The kubectl binary itself: gcloud's `kubectl` is a dispatcher that execs kubectl.1.NN, and its
    own start-up would be charged to kubectl. Use the newest versioned binary beside it."""
    if option:
        named = Path(option).resolve()
        if named.name == "kubectl" and any(named.parent.glob("kubectl.1.*")):
            print(f"warning: {option} is gcloud's kubectl dispatcher: its start-up is charged to kubectl",
                  file=sys.stderr)
        return option
    found = shutil.which("kubectl")
    if not found:
        raise SystemExit("error: kubectl is not on PATH (--kubectl)")
    real = Path(found).resolve()
    versioned = sorted(real.parent.glob("kubectl.1.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
    return str(versioned[-1]) if versioned else str(real)


def started_plane(workdir: Path, keep: bool, planes: list[ControlPlane]) -> ControlPlane:
    """The plane running in workdir, or a new one; `planes` collects those to stop at the end."""
    cp, started = start_or_attach(workdir)
    if started and not keep:
        planes.append(cp)
    return cp


def run_small(args: argparse.Namespace, bench_for: Callable[[ControlPlane], Bench],
              planes: list[ControlPlane]) -> dict[str, Any]:
    print("small cluster: starting", file=sys.stderr, flush=True)
    cp = started_plane(Path(str(args.dir) + "-small"), False, planes)  # cheap to start: never kept
    load(cp, SMALL_MIX, "small")
    bench = bench_for(cp)
    # A second each: more rounds cost little and steady the median on a shared machine.
    result = {"pvs": SMALL_MIX.pvs, "scenario": bench.scenario(SMALL, max(10, 3 * args.repeat)),
              "help": bench.help_cpu(args.repeat), "apiserver": report.apiserver_version(cp),
              "imports": bench.import_profiles(SCENARIOS[0].plugin)}
    if cp in planes:
        cp.stop(keep_logs=False)
        planes.remove(cp)
    return result


def run_large(args: argparse.Namespace, bench_for: Callable[[ControlPlane], Bench],
              planes: list[ControlPlane], kept: Optional[scaleplane.Kept]) -> dict[str, Any]:
    cp = started_plane(args.dir, args.keep, planes)
    mix = Mix.of(args.pvs, args.pvcs, args.pods, args.events)
    admin_count = report.object_counts(cp)
    record = cp.workdir / "bench-load.json"  # how the running plane was loaded, for a later --keep run
    if admin_count["persistentvolumes"] < mix.pvs:
        print(f"loading {mix}", file=sys.stderr, flush=True)
        loading = load(cp, mix, "b0")
        record.write_text(json.dumps(loading))
        time.sleep(args.settle)
    else:
        loading = json.loads(record.read_text()) if record.exists() else {}
    bench = bench_for(cp)
    wanted = [s for s in SCENARIOS if not args.only or s.key in args.only]
    result: dict[str, Any] = {"mix": asdict(mix), "loading": loading, "counts": report.object_counts(cp),
                              "apiserver": report.apiserver_version(cp),
                              "scenarios": {s.key: bench.scenario(s, args.repeat) for s in wanted}}
    if args.scale and kept:
        scale_cp, result["scale_plane"] = kept.ready(args.scale, args.pvs, args.pvcs)
        batches = result["scale_plane"]["loading"]["batches"].values()
        result["scale_loading"] = {"total": sum(b["total"] for b in batches),
                                   "requests": sum(b["requests"] for b in batches)}
        if result["scale_plane"]["loading"]["loaded_now"]:
            time.sleep(args.settle)
        bench = bench_for(scale_cp)
        result["scale_apiserver"] = report.apiserver_version(scale_cp)
    elif args.scale:
        extra = Mix.of(max(0, args.scale - mix.pvs), max(0, args.scale - mix.pvcs), 0, 0)
        print(f"scaling up: {extra}", file=sys.stderr, flush=True)
        result["scale_loading"] = load(cp, extra, "s1")
        time.sleep(args.settle)
    if args.scale:
        result["scale_counts"] = report.object_counts(bench.cp)
        result["scale"] = bench.scenario(SCENARIOS[0], max(3, args.repeat // 2), with_kubectl=args.scale_kubectl)
    return result


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pvleft-bench"),
                        help="control plane work directory (the small one uses DIR-small)")
    parser.add_argument("--pvs", type=int, default=10_000)
    parser.add_argument("--pvcs", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=2_000, help="Pending Pods")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds per scenario (after one warm-up)")
    parser.add_argument("--scale", type=int, default=0, help="then grow to this many PVs and PVCs and rerun leftovers")
    parser.add_argument("--scale-dir", type=Path,
                        help="measure --scale on a second plane here, kept between runs (loaded if it holds fewer "
                             "PVs than --scale, reused otherwise, frozen while the other scenarios run)")
    parser.add_argument("--scale-kubectl", action="store_true", help="also time kubectl at --scale (slow)")
    parser.add_argument("--only", nargs="*", choices=[s.key for s in SCENARIOS] + ["small"], default=None)
    parser.add_argument("--settle", type=float, default=20.0, help="seconds to let the controllers settle after loading")
    parser.add_argument("--label", default="", help="names this run's section of BENCHMARKS.md")
    parser.add_argument("--plugin", help="the plugin command line (default: kubectl-pvleft beside this Python)")
    parser.add_argument("--install", action="store_true",
                        help="measure a fresh install: `pip install` of `git archive HEAD` into a new venv "
                             "(not editable, no extras) in a temp dir")
    parser.add_argument("--install-python", default="python3", help="the Python whose venv module --install uses")
    parser.add_argument("--kubectl", help="the kubectl binary (default: the real one behind gcloud's dispatcher)")
    parser.add_argument("--note", default="", help="a sentence for the section (e.g. which commit was measured)")
    parser.add_argument("--output", type=Path, default=HERE.parent / "BENCHMARKS.md")
    parser.add_argument("--keep", action="store_true", help="leave the control planes running (and reuse a loaded one)")
    parser.add_argument("--render", type=Path, metavar="RESULTS_JSON",
                        help="only rewrite the section from a results file of an earlier run")
    args = parser.parse_args(argv)
    if args.render:
        results = revive(json.loads(args.render.read_text()))
        label = args.label or results.get("label") or args.render.stem
        note = args.note or results.get("note", "")
        report.write_section(args.output, label, report.render(label, results, note, SCENARIOS, SMALL))
        print(f"rewrote the section {label!r} of {args.output}", file=sys.stderr)
        return 0

    if not os.access(GNU_TIME, os.X_OK):
        raise SystemExit(f"error: {GNU_TIME} is missing (apt-get install time): it measures peak RSS")
    if args.install and args.plugin:
        raise SystemExit("error: --install and --plugin both name the plugin: give one")
    if args.scale_dir and args.scale_dir.resolve() == args.dir.resolve():
        raise SystemExit("error: --scale-dir must be another directory than --dir")
    kubectl = resolve_kubectl(args.kubectl)
    planes: list[ControlPlane] = []
    label = args.label or f"run of {report.utc_now()[:10]}"
    results: dict[str, Any] = {"argv": sys.argv[1:], "started": report.utc_now(), "label": label, "note": args.note,
                               "load_average_at_start": round(os.getloadavg()[0], 2)}
    kept = scaleplane.Kept(args.scale_dir) if args.scale and args.scale_dir and args.only != ["small"] else None
    with tempfile.TemporaryDirectory(prefix="pvleft-bench-") as scratch:
        if args.install:
            print(f"installing git archive HEAD of {HERE.parent} into a fresh venv", file=sys.stderr, flush=True)
            results["install"] = install.fresh_install(Path(scratch) / "install", args.install_python)
            plugin = results["install"]["plugin"]
        else:
            plugin = resolve_plugin(args.plugin)
        results["versions"] = report.versions(plugin, kubectl)
        if args.install:
            results["versions"]["source"] = f"git archive of {results['install']['commit'][:7]}"
        run_dir = Path(scratch) / "run"
        run_dir.mkdir()

        def bench_for(cp: ControlPlane) -> Bench:
            return Bench(cp, plugin, kubectl, run_dir)

        try:
            if kept:
                kept.park()
            if not args.only or "small" in args.only:
                results["small"] = run_small(args, bench_for, planes)
            if args.only != ["small"]:
                results["large"] = run_large(args, bench_for, planes, kept)
        finally:
            if kept:
                kept.release()
            for cp in planes:
                cp.stop(keep_logs=False)
    results["machine"] = report.machine()
    report.save_json(HERE / "results" / f"{report.slug(label)}.json", results)
    report.write_section(args.output, label, report.render(label, results, args.note, SCENARIOS, SMALL))
    print(f"wrote the section {label!r} of {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
