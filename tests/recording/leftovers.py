"""Wire JSON for the leftovers unit tests: the seed's Released PV, a replaced claim, a Failed PV, a Bound PV."""

from __future__ import annotations

import json
from pathlib import Path

from controlplane import ControlPlane
from scenarios import apply, claim, delete_claim, get, host_path_pv, namespace, seed_mariadb, wait_pv_phase

METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


def record(cluster: ControlPlane, out_dir: Path) -> None:
    seed_mariadb(cluster)
    # Another claim with the dead claim's name: same namespace/name, new uid.
    apply(cluster, namespace("shop"), host_path_pv("shop-pv", storage_class="standard"))
    apply(cluster, claim("shop", "orders"))
    wait_pv_phase(cluster, "shop-pv", "Bound")
    delete_claim(cluster, "shop", "orders")
    wait_pv_phase(cluster, "shop-pv", "Released")
    apply(cluster, claim("shop", "orders"))
    # Delete policy and no deleter for a path outside /tmp: the PV controller leaves it Failed.
    apply(cluster, host_path_pv("scratch-pv", reclaim="Delete", storage_class="gone-class",
                                path="/srv/pvleft-no-such-dir/scratch"))
    apply(cluster, claim("shop", "scratch", storage_class="gone-class"))
    wait_pv_phase(cluster, "scratch-pv", "Bound")
    delete_claim(cluster, "shop", "scratch")
    wait_pv_phase(cluster, "scratch-pv", "Failed")
    # A healthy Bound PV and a never-claimed Available one.
    apply(cluster, host_path_pv("web-pv", storage_class="standard"), host_path_pv("spare-pv", storage_class="standard"))
    apply(cluster, claim("shop", "web", volume_name="web-pv"))
    wait_pv_phase(cluster, "web-pv", "Bound")

    save(out_dir / "leftovers_pvs.json", get(cluster, "/api/v1/persistentvolumes"))
    status, pvcs = cluster.api("GET", "/api/v1/persistentvolumeclaims")
    assert status == 200
    save(out_dir / "leftovers_pvcs.json", pvcs)
    save(out_dir / "leftovers_pvc_metadata.json", metadata_list(cluster, "/api/v1/persistentvolumeclaims"))
    save(out_dir / "leftovers_storageclasses.json", get(cluster, "/apis/storage.k8s.io/v1/storageclasses"))
    status, forbidden = cluster.api("GET", "/api/v1/persistentvolumeclaims", user="pvonly")
    assert status == 403
    save(out_dir / "status_403_pvcs.json", forbidden)


def metadata_list(cluster: ControlPlane, path: str) -> dict:
    """The PartialObjectMetadataList the plugin asks for (the ControlPlane helper only asks for plain JSON)."""
    import urllib.request
    request = urllib.request.Request(cluster.server + path, headers={"Accept": METADATA_ONLY})
    with urllib.request.urlopen(request, context=cluster._ssl_context("admin"), timeout=10) as response:
        return json.loads(response.read())


def save(path: Path, doc: dict) -> None:
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
