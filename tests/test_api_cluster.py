"""Lists read a page ahead, and several kinds at once, on the real API server: what the audit log saw.

Pages of one object make every list long, so the order of requests shows: the next page is asked for while
the caller still holds the previous one; ``leftovers`` begins its claim list only once the PV list's first
page (its snapshot) is in, and then reads both at the same time; a list dropped half-read stops asking.
"""

from __future__ import annotations

import gc
import json
import socket
import ssl
import time
from collections.abc import Callable
from datetime import datetime

import pytest

from kubectl_pvleft.analyses.leftovers import find_leftovers
from kubectl_pvleft.kube.api import PERSISTENT_VOLUMES, KubeAPI
from kubectl_pvleft.kube.httpclient import Pool, Server, Timeouts
from kubectl_pvleft.kube.httpframing import Cut
from kubectl_pvleft.kube.kubeconfig import Selection, load_connection
from loopback import TcpFake, read_head
from scenarios import apply, host_path_pv, wait_for

PVS = [f"api-page-{i}" for i in range(12)]


def reader_api(cluster, page_size: int = 1) -> KubeAPI:
    return KubeAPI(load_connection(Selection(kubeconfig=str(cluster.kubeconfig("reader")))), page_size=page_size)


def seed(cluster) -> None:
    # A class no claim asks for: these Available PVs must never bind another test's claim.
    apply(cluster, *(host_path_pv(name, storage_class="pvleft-api-pages-only") for name in PVS))


@pytest.fixture(autouse=True, scope="module")
def _remove_the_pages(cluster):
    yield
    cluster.kubectl("delete", "pv", *PVS, "--ignore-not-found", "--wait=false", check=False)


def our_lists_since(cluster, started: datetime) -> list[dict]:
    """Our list requests the audit log has seen complete since ``started``, in the order they were received."""
    events = []
    with cluster.audit_log.open() as log:
        for line in log:
            if "kubectl-pvleft/" not in line or '"ResponseComplete"' not in line:
                continue
            event = json.loads(line)
            if event["verb"] == "list" and _when(event["requestReceivedTimestamp"]) >= started:
                events.append(event)
    return sorted(events, key=lambda e: e["requestReceivedTimestamp"])


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _resource(event: dict) -> str:
    return (event.get("objectRef") or {}).get("resource", "")


def test_the_next_page_is_asked_for_while_the_caller_holds_the_first(cluster) -> None:
    seed(cluster)
    api = reader_api(cluster)
    listing = api.list(PERSISTENT_VOLUMES)
    items = iter(listing)
    first = next(items)
    # The caller has not asked for a second item; the second page is read anyway.
    wait_for("the second page to be requested", lambda: api.transport.requests >= 2, timeout=20)
    names = {first.name, *(pv.name for pv in items)}
    assert set(PVS) <= names
    assert api.transport.requests == len(names)  # one object per page, no page read twice


def test_a_listing_dropped_half_read_stops_asking(cluster) -> None:
    seed(cluster)
    api = reader_api(cluster)
    items = iter(api.list(PERSISTENT_VOLUMES))
    next(items)
    del items
    gc.collect()
    time.sleep(1.0)
    asked = api.transport.requests
    time.sleep(1.5)
    assert api.transport.requests == asked
    assert asked <= 3  # the page given, one read ahead, at most one in flight when it was dropped


def test_leftovers_lists_claims_after_the_pv_snapshot_and_beside_the_pvs(cluster) -> None:
    seed(cluster)
    started = datetime.now().astimezone()
    time.sleep(0.01)
    result = find_leftovers(reader_api(cluster), include_all=True)
    pvs = {row.pv.name for row in result.rows}
    assert pvs >= set(PVS)
    lists = wait_for("the audit log to hold every page",
                     lambda: (lambda found: found if len(found) >= len(pvs) + 2 else None)(
                         our_lists_since(cluster, started)), timeout=20)
    pv_pages = [e for e in lists if _resource(e) == "persistentvolumes"]
    claim_pages = [e for e in lists if _resource(e) == "persistentvolumeclaims"]
    assert pv_pages and claim_pages and any(_resource(e) == "storageclasses" for e in lists)
    # The claim list's snapshot is later than the PV list's: it was asked for after the first PV page was served.
    assert _when(claim_pages[0]["requestReceivedTimestamp"]) >= _when(pv_pages[0]["stageTimestamp"])
    # ... and it was read beside the PVs, not after them: it began before the last PV page was asked for.
    assert claim_pages[0]["requestReceivedTimestamp"] < pv_pages[-1]["requestReceivedTimestamp"]


def test_short_lists_share_one_connection(cluster) -> None:
    """Lists of one page are read one after the other on one kept connection (each new one is a TLS
    handshake): leftovers' three lists on a small cluster open one connection."""
    api = reader_api(cluster, page_size=500)
    find_leftovers(api, include_all=True)  # every PV kept: none is read again
    pool = api.transport._pool
    assert pool is not None and api.transport.requests == 3
    assert len(pool._idle) == 1


# -- TLS framing the API server rarely shows: tiny records, close_notify, a session cut mid-body -------------
# A local TLS server with the control plane's own serving certificate (its SANs include 127.0.0.1).

class _OneTlsAnswer(TcpFake):
    """One connection, then no more: TLS with the plane's serving certificate, the request read, ``answer``."""

    def __init__(self, cluster, answer: Callable[[ssl.SSLSocket], None]) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(str(cluster.pki / "apiserver.crt"), str(cluster.pki / "apiserver.key"))
        self.answer = answer

    def connection(self, conn: socket.socket) -> None:
        self.stop()
        try:
            with self.context.wrap_socket(conn, server_side=True) as tls:
                read_head(tls)
                self.answer(tls)
        except OSError:  # the client hung up after what it needed: its side is the test
            pass


def _tls_server(cluster, answer: Callable[[ssl.SSLSocket], None]) -> int:
    return _OneTlsAnswer(cluster, answer).start().port


def _pool(cluster, port: int) -> Pool:
    context = ssl.create_default_context(cafile=str(cluster.pki / "ca.crt"))
    return Pool(Server(f"https://127.0.0.1:{port}"), context, None)


def test_tls_records_of_a_few_bytes_then_close_notify(cluster) -> None:
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in [b"0123456789"] * 300) + b"0\r\n\r\n"

    def answer(tls: ssl.SSLSocket) -> None:
        wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + body
        for i in range(0, len(wire), 7):  # one TLS record per 7 bytes
            tls.sendall(wire[i:i + 7])
        tls.unwrap()  # close_notify, then the socket closes

    response = _pool(cluster, _tls_server(cluster, answer)).get("/x", [], Timeouts(read=10))
    assert response.read() == b"0123456789" * 300


def test_a_tls_session_closed_mid_body_is_cut(cluster) -> None:
    def answer(tls: ssl.SSLSocket) -> None:
        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part")
        tls.unwrap()

    response = _pool(cluster, _tls_server(cluster, answer)).get("/x", [], Timeouts(read=10))
    with pytest.raises(Cut):
        response.read()


def test_a_user_who_may_list_but_not_get_gets_forbidden_never_absent(cluster) -> None:
    """Real RBAC: every role of the tests granted get, list and watch together, so no 403 on get was ever seen.
    A 403 on get is Forbidden (the caller says "unknown"), never None ("absent"): the seed's first rule."""
    from kubectl_pvleft.errors import Forbidden

    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "listonly-pv"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "listonly-none",
                 "hostPath": {"path": "/tmp/listonly-pv"}}}))
    api = KubeAPI(load_connection(Selection(kubeconfig=str(cluster.kubeconfig("listonly")))))
    try:
        assert "listonly-pv" in {pv.metadata.name for pv in api.list(PERSISTENT_VOLUMES)}  # listing is allowed
        for name in ("listonly-pv", "no-such-pv"):  # whether the PV exists or not, the answer is the 403
            with pytest.raises(Forbidden):
                api.get(PERSISTENT_VOLUMES, name)
    finally:
        api.close()
        cluster.kubectl("delete", "pv", "listonly-pv", "--wait=false", check=False)
