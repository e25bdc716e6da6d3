"""The fetch layer's paging rules over real HTTP: limit/continue, and a 410 on a continue token."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_runner import invoke
from fake_apiserver import CONTINUE_EXPIRED, FakeAPIServer
from kubectl_pvleft.errors import Expired
from kubectl_pvleft.kube.api import PERSISTENT_VOLUMES, KubeAPI
from kubectl_pvleft.kube.kubeconfig import Selection, load_connection
from plugin_runner import jsonl
from wire import load

PVS = load("leftovers_pvs")


def paged(expire: set[str]):
    """Serve the recorded PVs two per page; answer 410 for each continue token in `expire` (once)."""
    pages = [PVS["items"][i:i + 2] for i in range(0, len(PVS["items"]), 2)]

    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        token = query.get("continue", [""])[0]
        if token in expire:
            expire.discard(token)
            return 410, CONTINUE_EXPIRED
        index = int(token or 0)
        meta = {"resourceVersion": str(100 + index)}
        if index + 1 < len(pages):
            meta["continue"] = str(index + 1)
        return 200, {"kind": "PersistentVolumeList", "apiVersion": "v1", "metadata": meta, "items": pages[index]}

    return handler


def api_for(server: FakeAPIServer, tmp_path: Path) -> KubeAPI:
    return KubeAPI(load_connection(Selection(kubeconfig=str(server.kubeconfig(tmp_path / "kc")))), page_size=2)


def names(api: KubeAPI) -> list[str]:
    return [pv.name for pv in api.list(PERSISTENT_VOLUMES)]


def test_every_page_is_read_with_limit_and_continue(tmp_path: Path) -> None:
    with FakeAPIServer(paged(set())) as server:
        assert names(api_for(server, tmp_path)) == [o["metadata"]["name"] for o in PVS["items"]]
    assert server.requests[0] == "/api/v1/persistentvolumes?limit=2"
    assert server.requests[1:] == [f"/api/v1/persistentvolumes?limit=2&continue={i}" for i in (1, 2)]


def test_expired_continue_restarts_once_without_duplicates(tmp_path: Path) -> None:
    with FakeAPIServer(paged({"2"})) as server:
        got = names(api_for(server, tmp_path))
    assert got == [o["metadata"]["name"] for o in PVS["items"]]
    assert [r.split("?")[1] for r in server.requests] == [
        "limit=2", "limit=2&continue=1", "limit=2&continue=2", "limit=2", "limit=2&continue=1", "limit=2&continue=2"]


def test_second_expiry_is_a_clear_error(tmp_path: Path) -> None:
    always = {"2"}

    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        # The PV list only: leftovers reads its claims (here the same pages) whole before the PVs' third page.
        if query.get("continue", [""])[0] == "2" and path.endswith("/persistentvolumes"):
            return 410, CONTINUE_EXPIRED
        always.add("2")
        return paged(set())(path, query)

    with FakeAPIServer(handler) as server:
        with pytest.raises(Expired, match="expired twice while paging"):
            names(api_for(server, tmp_path))
        result = invoke("leftovers", "--kubeconfig", str(server.kubeconfig(tmp_path / "kc2")))
    assert result.returncode == 1
    assert result.stderr.startswith("error: the list of /api/v1/persistentvolumes expired twice")


def test_other_server_errors_end_the_run(tmp_path: Path) -> None:
    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        if "persistentvolumeclaims" in path:
            return 500, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500,
                         "reason": "InternalError", "message": "etcdserver: request timed out"}
        return paged(set())(path, query)

    with FakeAPIServer(handler) as server:
        result = invoke("leftovers", "-o", "jsonl", "--kubeconfig", str(server.kubeconfig(tmp_path / "kc")))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == ("error: etcdserver: request timed out (list /api/v1/persistentvolumeclaims: HTTP 500)\n")


def test_forbidden_claims_are_unknown_with_one_warning(tmp_path: Path) -> None:
    forbidden = load("status_403_pvcs")

    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        if "persistentvolumeclaims" in path:
            return 403, forbidden
        if "storageclasses" in path:
            return 200, load("leftovers_storageclasses")
        return paged(set())(path, query)

    with FakeAPIServer(handler) as server:
        result = invoke("leftovers", "-o", "jsonl", "--kubeconfig", str(server.kubeconfig(tmp_path / "kc")))
    assert result.returncode == 0
    assert {row["claim_missing"] for row in jsonl(result.stdout)} == {None}
    assert len(result.stderr.splitlines()) == 1 and "pvleft-pvonly-user" in result.stderr


def test_a_403_on_get_is_forbidden_never_absent(tmp_path: Path) -> None:
    """Never infer 404 from 403: get() returns None only when the server says 404 (a bug turning a 403 into None
    would make leftovers call a re-read claim missing, and nothing else caught it)."""
    from fake_apiserver import status as status_body
    from kubectl_pvleft.errors import Forbidden

    def handler(path: str, query: dict) -> tuple[int, dict]:
        if path.endswith("/forbidden"):
            return 403, status_body(403, "Forbidden", 'persistentvolumes "forbidden" is forbidden: User "u" cannot '
                                                      'get resource "persistentvolumes"')
        return 404, status_body(404, "NotFound", 'persistentvolumes "gone" not found')

    with FakeAPIServer(handler) as server:
        api = api_for(server, tmp_path)
        assert api.get(PERSISTENT_VOLUMES, "gone") is None
        with pytest.raises(Forbidden):
            api.get(PERSISTENT_VOLUMES, "forbidden")


def test_changed_hands_over_held_objects_undecoded(tmp_path: Path) -> None:
    """A relist of objects the caller holds at the same resourceVersion gives their uids, not second copies."""
    from kubectl_pvleft.kube.api import Unchanged

    with FakeAPIServer(paged(set())) as server:
        api = api_for(server, tmp_path)
        held = {pv.metadata.uid: pv.metadata.resource_version for pv in list(api.list(PERSISTENT_VOLUMES))[:3]}
        changed = list(api.list(PERSISTENT_VOLUMES).changed(lambda uid, version: held.get(uid) == version))
    assert [item.uid for item in changed if isinstance(item, Unchanged)] == list(held)
    rest = [item for item in changed if not isinstance(item, Unchanged)]
    assert [pv.name for pv in rest] == [o["metadata"]["name"] for o in PVS["items"][3:]]
    assert len(changed) == len(PVS["items"])


def test_changed_decodes_an_object_held_at_another_version(tmp_path: Path) -> None:
    with FakeAPIServer(paged(set())) as server:
        api = api_for(server, tmp_path)
        first = PVS["items"][0]["metadata"]
        changed = list(api.list(PERSISTENT_VOLUMES).changed(lambda uid, version: uid == first["uid"] and
                                                             version == first["resourceVersion"] + "0"))
    assert changed[0].name == first["name"]  # decoded: the caller's copy is older


def test_a_list_past_its_bound_of_objects_is_refused_page_by_page(tmp_path: Path) -> None:
    """``max_items`` (serve's bound on what one stream may hold): the list stops at the page that passes it, with
    the objects of the pages before handed over; without it the same list is read whole."""
    from kubectl_pvleft.errors import Oversized

    with FakeAPIServer(paged(set())) as server:
        api = api_for(server, tmp_path)
        assert len(list(api.list(PERSISTENT_VOLUMES))) == len(PVS["items"]) > 3
        got = []
        with pytest.raises(Oversized, match="passed 3 objects"):
            got.extend(api.list(PERSISTENT_VOLUMES, max_items=3).changed(lambda uid, version: False))
    assert len(got) == 2  # the first page; the second (objects 3 and 4) passes the bound


def test_an_object_of_more_than_16_mib_in_a_list_is_refused_before_it_is_decoded(tmp_path: Path) -> None:
    from kubectl_pvleft.errors import Oversized

    huge = {**PVS["items"][0], "metadata": {**PVS["items"][0]["metadata"],
                                            "annotations": {"a": "x" * (16 * 1024 * 1024 + 1)}}}

    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        return 200, {"kind": "PersistentVolumeList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                     "items": [PVS["items"][1], huge]}

    with FakeAPIServer(handler) as server, pytest.raises(Oversized, match="an object of more than 16 MiB"):
        list(api_for(server, tmp_path).list(PERSISTENT_VOLUMES).changed(lambda uid, version: False))


def test_a_sifted_list_decodes_whole_only_the_objects_kept(tmp_path: Path) -> None:
    """``Listing.sifted``: each object is judged on its view and decoded whole only when kept. A PV that is not kept
    carries a field its whole record refuses: the sifted list never decodes it, the whole list stops on it."""
    from kubectl_pvleft.errors import BadResponse
    from kubectl_pvleft.kube.api import SiftedPage
    from kubectl_pvleft.records import PersistentVolume, VolumeView

    spare = next(o for o in PVS["items"] if o["status"]["phase"] == "Available")
    broken = {**spare, "spec": {**spare["spec"], "capacity": "not a map"}}
    served = [broken if o is spare else o for o in PVS["items"]]

    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        index = int(query.get("continue", ["0"])[0])
        meta = {"resourceVersion": "7", **({"continue": str(index + 2)} if index + 2 < len(served) else {})}
        return 200, {"kind": "PersistentVolumeList", "apiVersion": "v1", "metadata": meta,
                     "items": served[index:index + 2]}

    with FakeAPIServer(handler) as server:
        api = api_for(server, tmp_path)
        pages = list(api.list(PERSISTENT_VOLUMES).sifted(VolumeView))
        kept = [pv for page in pages for pv in page.kept(lambda view: view.phase in ("Released", "Failed"))]
        with pytest.raises(BadResponse, match="not what list expects"):
            list(api.list(PERSISTENT_VOLUMES))
    assert all(isinstance(page, SiftedPage) for page in pages) and len(pages) == 3
    assert kept == [PersistentVolume.from_wire(o) for o in served if o["status"]["phase"] in ("Released", "Failed")]


def test_a_sifted_list_restarted_after_a_410_gives_each_object_once(tmp_path: Path) -> None:
    from kubectl_pvleft.records import VolumeView

    with FakeAPIServer(paged({"2"})) as server:
        api = api_for(server, tmp_path)
        got = [pv.name for page in api.list(PERSISTENT_VOLUMES).sifted(VolumeView) for pv in page.kept(lambda view: True)]
    assert got == [o["metadata"]["name"] for o in PVS["items"]]
    assert [r.split("?")[1] for r in server.requests][3:] == ["limit=2", "limit=2&continue=1", "limit=2&continue=2"]
