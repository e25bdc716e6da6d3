"""The 100,000-PV plane of `run.py --scale N --scale-dir DIR`: a second control plane, kept between runs.

Loading it takes half an hour or more on these 2 cores, so it is loaded once and reused. While the
10,000 scenarios run on the other plane it is frozen (SIGSTOP to its four processes): idle, its
controllers still resync 100,000 PVs and claims, and the apiserver and etcd would share the cores
with what is being timed. tests/cluster/controlplane.py cannot restart a plane on its etcd data
(start() and stop() both remove it), and freezing costs nothing: SIGCONT resumes it at once, with its
watch caches whole. The plane records what was loaded into it in DIR/bench-scale.json.

    python benchmarks/scaleplane.py --dir /tmp/pvleft-bench-100k --scale 100000   # load (or top up) only
    python benchmarks/scaleplane.py --dir /tmp/pvleft-bench-100k --thaw            # resume a frozen plane
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests" / "cluster")]  # load, and controlplane beside the tests

from controlplane import PROCESS_ORDER, ControlPlane  # noqa: E402
from load import Mix, load, start_or_attach  # noqa: E402

RECORD = "bench-scale.json"  # {"batches": {batch: load timings}} of what is in the plane
FROZEN = "bench-frozen.json"  # who froze the plane and when, while it is frozen
LOADER_AGENT = b'"userAgent":"pvleft-bench-load/1"'


def _pids(workdir: Path) -> dict[str, int]:
    try:
        pids = json.loads((workdir / "pids.json").read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return {name: pids[name] for name in PROCESS_ORDER if name in pids}


def _signal(pids: dict[str, int], sig: signal.Signals, order: Sequence[str]) -> None:
    for name in order:
        if name in pids:
            try:
                os.kill(pids[name], sig)
            except ProcessLookupError:
                pass


def thaw_if_frozen(workdir: Path) -> bool:
    """SIGCONT a plane an earlier run left frozen (killed mid-run): attach() takes a stopped process
    for alive, and every request to it would hang. True if it was frozen."""
    marker = workdir / FROZEN
    if not marker.exists():
        return False
    _signal(_pids(workdir), signal.SIGCONT, PROCESS_ORDER)
    marker.unlink(missing_ok=True)
    return True


def being_loaded(cp: ControlPlane, within: float = 60.0) -> bool:
    """Whether a loader (load.py's user agent) wrote to the plane in the last `within` seconds: the
    newest of its audit events near the end of the log, by its timestamp."""
    try:
        with cp.audit_log.open("rb") as f:
            f.seek(max(0, cp.audit_log.stat().st_size - 4_000_000))
            tail = f.read().splitlines()[1:]
    except FileNotFoundError:
        return False
    for line in reversed(tail):
        if LOADER_AGENT in line:
            stamp = json.loads(line)["stageTimestamp"]
            when = datetime.datetime.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
            return time.time() - when.timestamp() < within
    return False


def freeze(cp: ControlPlane) -> float:
    """SIGSTOP the plane, its clients first; the time it was frozen at (monotonic)."""
    pids = _pids(cp.workdir)
    (cp.workdir / FROZEN).write_text(json.dumps({"by_pid": os.getpid(), "since": time.time(), "pids": pids}) + "\n")
    _signal(pids, signal.SIGSTOP, reversed(PROCESS_ORDER))
    return time.monotonic()


def thaw(cp: ControlPlane, frozen_at: float) -> dict[str, float]:
    """SIGCONT the plane, etcd first; how long it was frozen, until /readyz answered 200, and how long
    the first full list of PVs (pages of 500) took after that."""
    started = time.monotonic()
    _signal(_pids(cp.workdir), signal.SIGCONT, PROCESS_ORDER)
    (cp.workdir / FROZEN).unlink(missing_ok=True)
    deadline = started + 120
    while True:
        try:
            if cp.api("GET", "/readyz", timeout=5)[0] == 200:
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the plane in {cp.workdir} is not ready 120 s after SIGCONT")
        time.sleep(0.1)
    ready = time.monotonic()
    pvs = _list_all(cp, "/api/v1/persistentvolumes")
    return {"frozen": round(started - frozen_at, 1), "ready_after": round(ready - started, 2),
            "first_list": round(time.monotonic() - ready, 2), "first_list_items": pvs}


def _list_all(cp: ControlPlane, path: str) -> int:
    items, token = 0, ""
    while True:
        status, page = cp.api("GET", f"{path}?limit=500" + (f"&continue={quote(token, safe='')}" if token else ""), timeout=120)
        if status != 200:
            raise RuntimeError(f"GET {path}: HTTP {status}")
        items += len(page.get("items") or ())
        token = (page.get("metadata") or {}).get("continue") or ""
        if not token:
            return items


def pv_count(cp: ControlPlane) -> int:
    status, page = cp.api("GET", "/api/v1/persistentvolumes?limit=1", timeout=60)
    if status != 200:
        raise RuntimeError(f"GET persistentvolumes: HTTP {status}")
    return len(page.get("items") or ()) + int((page.get("metadata") or {}).get("remainingItemCount") or 0)


def read_record(workdir: Path) -> dict[str, Any]:
    try:
        return json.loads((workdir / RECORD).read_text())
    except (FileNotFoundError, ValueError):
        return {"batches": {}}


def ensure_loaded(cp: ControlPlane, scale: int, base_pvs: int, base_pvcs: int) -> dict[str, Any]:
    """Load the plane to `scale` PVs and PVCs if it holds fewer PVs: the 10,000 mix as batch b0 (no Pods,
    no events: `leftovers` reads neither), then the rest as s1, as run.py's same-plane --scale grows its
    plane. A batch interrupted half-way is loaded again (creates that find the object are no-ops).
    Returns the record: every batch's load timings, and which of them this call loaded."""
    record = read_record(cp.workdir)
    base = Mix.of(base_pvs, base_pvcs, 0, 0)
    plan = [("b0", base), ("s1", Mix.of(max(0, scale - base.pvs), max(0, scale - base.pvcs), 0, 0))]
    loaded_now = []
    for batch, mix in plan:
        if batch in record["batches"] or pv_count(cp) >= scale or not mix.pvs:
            continue
        print(f"{cp.workdir}: loading batch {batch}: {mix}", file=sys.stderr, flush=True)
        record["batches"][batch] = load(cp, mix, batch)
        loaded_now.append(batch)
        (cp.workdir / RECORD).write_text(json.dumps(record, indent=1) + "\n")
    have = pv_count(cp)
    if have < scale:  # a larger --scale than the plane was grown for: one more batch for the rest
        batch = f"s{len(record['batches'])}"
        mix = Mix.of(scale - have, scale - have, 0, 0)
        print(f"{cp.workdir}: loading batch {batch}: {mix}", file=sys.stderr, flush=True)
        record["batches"][batch] = load(cp, mix, batch)
        loaded_now.append(batch)
        (cp.workdir / RECORD).write_text(json.dumps(record, indent=1) + "\n")
    return {**record, "loaded_now": loaded_now}


def attach(workdir: Path) -> Optional[ControlPlane]:
    """The plane running in workdir (thawed if a killed run left it frozen), or None."""
    thaw_if_frozen(workdir)
    cp = ControlPlane(workdir)
    return cp if cp.attach() else None


class Kept:
    """The scale plane across one run.py run: frozen while the 10,000 scenarios run (if it is running),
    then resumed, or started, and loaded up to the scale if it holds fewer PVs."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir).resolve()
        self.cp: Optional[ControlPlane] = None
        self.frozen_at: Optional[float] = None

    def park(self) -> None:
        self.cp = attach(self.workdir)
        if self.cp is None:
            return  # not running: started (and loaded) when its turn comes
        if being_loaded(self.cp):
            raise SystemExit(f"error: {self.workdir}: a loader wrote to this plane in the last minute; "
                             "let it finish (freezing it would stall the loader)")
        self.frozen_at = freeze(self.cp)
        print(f"{self.workdir}: frozen (SIGSTOP) until the scale scenario", file=sys.stderr, flush=True)

    def ready(self, scale: int, base_pvs: int, base_pvcs: int) -> tuple[ControlPlane, dict[str, Any]]:
        """The plane, running and loaded; how it was resumed or started, and its load record."""
        info: dict[str, Any] = {"dir": str(self.workdir)}
        if self.cp is not None and self.frozen_at is not None:
            info["thaw"] = thaw(self.cp, self.frozen_at)
            self.frozen_at = None
            print(f"{self.workdir}: resumed: {info['thaw']}", file=sys.stderr, flush=True)
        if self.cp is None:
            self.cp, info["started"] = start_or_attach(self.workdir)
            if info["started"]:  # a new plane starts empty: what the record says was loaded is gone
                (self.workdir / RECORD).unlink(missing_ok=True)
        info["loading"] = ensure_loaded(self.cp, scale, base_pvs, base_pvcs)
        return self.cp, info

    def release(self) -> None:
        """Resume the plane if the run ends (or fails) while it is frozen."""
        if self.cp is not None and self.frozen_at is not None:
            _signal(_pids(self.workdir), signal.SIGCONT, PROCESS_ORDER)
            (self.workdir / FROZEN).unlink(missing_ok=True)
            self.frozen_at = None


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pvleft-bench-100k"))
    parser.add_argument("--scale", type=int, default=100_000, help="PVs and PVCs in all")
    parser.add_argument("--pvs", type=int, default=10_000, help="the first batch's PVs (run.py's --pvs)")
    parser.add_argument("--pvcs", type=int, default=10_000)
    parser.add_argument("--thaw", action="store_true", help="only resume a plane a killed run left frozen")
    args = parser.parse_args(argv)
    if args.thaw:
        print("thawed" if thaw_if_frozen(args.dir.resolve()) else "not frozen", file=sys.stderr)
        return 0
    thaw_if_frozen(args.dir.resolve())
    cp, started = start_or_attach(args.dir)
    if started:
        (cp.workdir / RECORD).unlink(missing_ok=True)
    print(f"control plane {'started' if started else 'attached'} at {cp.server} in {cp.workdir}", file=sys.stderr)
    record = ensure_loaded(cp, args.scale, args.pvs, args.pvcs)
    print(json.dumps(record, indent=1))
    print(f"{pv_count(cp):,} PVs; export KUBECONFIG={cp.kubeconfig('admin')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
