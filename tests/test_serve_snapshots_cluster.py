"""`serve` and the snapshot CRDs coming and going while it runs, against a real control plane of this module's own
(installing and deleting CRDs must not change what other tests see).

Before the CRDs the snapshot analysis is "not served", never "zero findings", and no outage for /healthz; once the
CRDs are installed (as a cluster installs the CSI snapshotter later) its findings appear without a restart; once
they are deleted the findings go with them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane import ControlPlane, OwnPlane
from prometheus_server import exporter, fetch, samples
from recording.snapshots import CRD_NAMES, GROUP, install_crds
from recording.snapshots import build as build_scenario
from scenarios import wait_for

pytestmark = pytest.mark.cluster

P = "serve-snap-"


@pytest.fixture(scope="module")
def plane(own_plane: OwnPlane) -> Iterator[ControlPlane]:
    with own_plane("serve-snapshots-plane") as plane:
        yield plane


def metrics(target: str) -> str:
    status, body = fetch(f"http://{target}/metrics")
    assert status == 200, body
    return body


def by_analysis(exposition: str, name: str) -> dict[str, float]:
    return {labels["analysis"]: value for labels, value in samples(exposition, name)}


def snapshot_series(exposition: str) -> dict[str, Any]:
    return {"served": by_analysis(exposition, "pvleft_analysis_served").get("snapshots"),
            "findings": by_analysis(exposition, "pvleft_findings").get("snapshots"),
            "contents": sum(v for _, v in samples(exposition, "pvleft_leftover_snapshot_contents")),
            "info": [labels["name"] for labels, _ in samples(exposition, "pvleft_finding_info")
                     if labels["analysis"] == "snapshots"],
            "stream_served": {labels["stream"]: v for labels, v in samples(exposition, "pvleft_stream_served")
                              if labels["stream"].startswith("volumesnapshot")}}


def test_snapshot_crds_installed_then_deleted_while_serving(plane: ControlPlane, tmp_path: Path) -> None:
    with exporter(plane.kubeconfig("reader"), "--stale-after", "5s", log=tmp_path / "serve.log") as target:
        before = wait_for("snapshots not served", lambda: (s := snapshot_series(metrics(target)))["served"] == 0 and s)
        assert before["findings"] is None and before["contents"] == 0 and before["info"] == []  # absent, not zero
        assert before["stream_served"]["volumesnapshotcontents"] == 0
        leftovers = by_analysis(metrics(target), "pvleft_analysis_served")["leftovers"]
        assert leftovers == 1

        install_crds(plane)
        build_scenario(plane, P)
        # The scenario's objects arrive one by one as watch events: wait for all of them, not the first finding.
        after = wait_for("snapshot findings", lambda: (s := snapshot_series(metrics(target)))["findings"]
                         and s["contents"] >= 3 and f"{P}orphan" in s["info"] and s, timeout=60)
        assert after["served"] == 1 and set(after["stream_served"].values()) == {1}
        assert fetch(f"http://{target}/healthz")[0] == 200

        plane.kubectl("delete", "--wait=true", *(f"crd/{name}.{GROUP}" for name in CRD_NAMES))
        gone = wait_for("snapshots not served again", lambda: (s := snapshot_series(metrics(target)))["served"] == 0
                        and s, timeout=60)
        assert gone["findings"] is None and gone["contents"] == 0 and gone["info"] == []
        assert fetch(f"http://{target}/healthz")[0] == 200
