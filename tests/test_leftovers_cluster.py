"""`leftovers` against the real control plane: the PV controller, not us, decides what is Released."""

from __future__ import annotations

import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from plugin_runner import PLUGIN, items, jsonl, run_plugin
from scenarios import apply, claim, claim_uid, delete_claim, host_path_pv, namespace, seed_mariadb, wait_pv_phase

# The seed's line, byte for byte: the first seven keys of our row must be exactly these.
SEED_LINE = ('{"name": "mariadb-pv", "phase": "Released", "reclaim": "Retain", "claim": "mariadb/mariadb", '
             '"claim_missing": true, "storage_class": "standard", "capacity": "250Mi"}')


def seed_keys(row: dict) -> str:
    return json.dumps(dict(list(row.items())[:7]))


def row_for(rows: list[dict], name: str) -> dict:
    matches = [r for r in rows if r["name"] == name]
    assert len(matches) == 1, f"{name} not reported once in {[r['name'] for r in rows]}"
    return matches[0]


@pytest.fixture(scope="module")
def mariadb(cluster):
    dead_uid = seed_mariadb(cluster)
    yield dead_uid
    cluster.kubectl("delete", "namespace", "mariadb", "--wait=false", check=False)
    cluster.kubectl("delete", "pv", "mariadb-pv", "--wait=false", check=False)


def test_seed_scenario_through_kubectl(cluster, mariadb) -> None:
    result = run_plugin(cluster.kubeconfig("reader"), "leftovers", "-o", "jsonl", via_kubectl=True, check=True)
    row = row_for(jsonl(result.stdout), "mariadb-pv")
    assert seed_keys(row) == SEED_LINE
    assert row["claim_uid"] == mariadb
    assert (row["claim_state"], row["class_reclaim"], row["driver"]) == ("missing", "Retain", "hostPath")
    assert row["last_phase_transition_time"]
    assert result.stderr == ""


def test_table_and_wide_columns(cluster, mariadb) -> None:
    table = run_plugin(cluster.kubeconfig("reader"), "leftovers", check=True).stdout.splitlines()
    assert table[0].split() == ["NAME", "STATUS", "RECLAIM", "CLASS", "RECLAIM", "CLAIM", "CLAIM", "STATE",
                                "STORAGECLASS", "CAPACITY", "AGE"]
    line = next(row for row in table if row.startswith("mariadb-pv "))
    assert line.split()[:8] == ["mariadb-pv", "Released", "Retain", "Retain", "mariadb/mariadb", "missing",
                                "standard", "250Mi"]
    wide = run_plugin(cluster.kubeconfig("reader"), "leftovers", "-o", "wide", check=True).stdout.splitlines()
    assert wide[0].split()[-7:] == ["CLAIM", "UID", "DRIVER", "VOLUME", "HANDLE", "REASON", "NEXT"]
    wide_line = next(row for row in wide if row.startswith("mariadb-pv "))
    assert mariadb in wide_line and "/tmp/pvleft/mariadb-pv" in wide_line
    assert "   kubectl describe pv mariadb-pv; kubectl get events -A --field-selector involvedObject.uid=" in wide_line


def test_name_output_and_exit_code(cluster, mariadb) -> None:
    result = run_plugin(cluster.kubeconfig("reader"), "leftovers", "-o", "name", "--exit-code")
    assert result.returncode == 3
    assert "persistentvolume/mariadb-pv" in result.stdout.splitlines()
    ok = run_plugin(cluster.kubeconfig("reader"), "leftovers", "-n", "no-such-namespace", "--exit-code")
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "No resources found\n")


def test_replaced_claim_is_not_missing(cluster, mariadb) -> None:
    apply(cluster, claim("mariadb", "mariadb"))
    try:
        new_uid = claim_uid(cluster, "mariadb", "mariadb")
        row = row_for(jsonl(run_plugin(cluster.kubeconfig("reader"), "leftovers", "-o", "jsonl", check=True).stdout),
                      "mariadb-pv")
        assert (row["phase"], row["claim_missing"], row["claim_state"]) == ("Released", False, "replaced")
        assert row["claim_uid"] == mariadb != new_uid
        # The new claim really cannot bind while the old pointer lives.
        pvc = json.loads(cluster.kubectl("get", "pvc", "-n", "mariadb", "mariadb", "-o", "json").stdout)
        assert pvc["status"]["phase"] == "Pending"
    finally:
        delete_claim(cluster, "mariadb", "mariadb")


def test_pvc_blind_user_gets_null_never_true(cluster, mariadb) -> None:
    result = run_plugin(cluster.kubeconfig("pvonly"), "leftovers", "-o", "jsonl")
    assert result.returncode == 0
    row = row_for(jsonl(result.stdout), "mariadb-pv")
    assert row["claim_missing"] is None and row["claim_state"] == "unknown"
    assert all(r["claim_missing"] is not True for r in jsonl(result.stdout))
    warnings = result.stderr.splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("warning: cannot list persistentvolumeclaims")
    assert "claim_missing: null" in warnings[0]


def test_impersonation_sends_user_and_every_group(cluster, mariadb) -> None:
    blind = run_plugin(cluster.kubeconfig("admin"), "leftovers", "--as", "pvleft-pvonly-user", "-o", "jsonl")
    assert row_for(jsonl(blind.stdout), "mariadb-pv")["claim_missing"] is None
    cluster.kubectl("create", "clusterrolebinding", "pvleft-test-group-reader", "--clusterrole=pvleft-reader",
                    "--group=pvleft-readers-second-group")
    try:
        seen = run_plugin(cluster.kubeconfig("admin"), "leftovers", "--as", "someone", "--as-group", "first-group",
                          "--as-group", "pvleft-readers-second-group", "-o", "jsonl", check=True)
        assert row_for(jsonl(seen.stdout), "mariadb-pv")["claim_missing"] is True
    finally:
        cluster.kubectl("delete", "clusterrolebinding", "pvleft-test-group-reader")


def test_namespaced_role_cannot_list_pvs(cluster, mariadb) -> None:
    result = run_plugin(cluster.kubeconfig("namespaced"), "leftovers")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith('error: persistentvolumes is forbidden: User "pvleft-namespaced-user"')
    assert "ClusterRole" in result.stderr


def test_delete_policy_without_deleter_leaves_a_failed_pv(cluster) -> None:
    apply(cluster, namespace("lo-failed"), host_path_pv("lo-failed-pv", reclaim="Delete", storage_class="lo-none",
                                                          path="/srv/pvleft-no-such-dir/lo-failed-pv"))
    try:
        apply(cluster, claim("lo-failed", "data", storage_class="lo-none"))
        wait_pv_phase(cluster, "lo-failed-pv", "Bound")
        delete_claim(cluster, "lo-failed", "data")
        wait_pv_phase(cluster, "lo-failed-pv", "Failed")
        row = row_for(items(run_plugin(cluster.kubeconfig("reader"), "leftovers", "-o", "json", check=True).stdout),
                      "lo-failed-pv")
        assert (row["phase"], row["reclaim"], row["claim_state"]) == ("Failed", "Delete", "missing")
        assert row["class_reclaim"] is None and row["class_missing"] is True
        assert row["message"]  # the controller says why it could not delete
        table = run_plugin(cluster.kubeconfig("reader"), "leftovers", check=True).stdout
        assert any(row.split()[:4] == ["lo-failed-pv", "Failed", "Delete", "<missing>"] for row in table.splitlines())
    finally:
        cluster.kubectl("delete", "namespace", "lo-failed", "--wait=false", check=False)
        cluster.kubectl("delete", "pv", "lo-failed-pv", "--wait=false", check=False)


def test_all_lists_bound_pvs_too(cluster) -> None:
    apply(cluster, namespace("lo-bound"), host_path_pv("lo-bound-pv", storage_class="lo-bound"))
    try:
        apply(cluster, claim("lo-bound", "data", storage_class="lo-bound"))
        wait_pv_phase(cluster, "lo-bound-pv", "Bound")
        default = jsonl(run_plugin(cluster.kubeconfig("reader"), "leftovers", "-o", "jsonl", check=True).stdout)
        assert "lo-bound-pv" not in {r["name"] for r in default}
        every = jsonl(run_plugin(cluster.kubeconfig("reader"), "leftovers", "--all", "-o", "jsonl", check=True).stdout)
        row = row_for(every, "lo-bound-pv")
        assert (row["phase"], row["claim_state"], row["claim_missing"]) == ("Bound", "present", False)
        narrowed = jsonl(run_plugin(cluster.kubeconfig("reader"), "leftovers", "--all", "-n", "lo-bound", "-o",
                                    "jsonl", check=True).stdout)
        assert [r["name"] for r in narrowed] == ["lo-bound-pv"]
    finally:
        cluster.kubectl("delete", "namespace", "lo-bound", "--wait=true", "--timeout=60s", check=False)
        cluster.kubectl("delete", "pv", "lo-bound-pv", "--wait=false", check=False)


def test_wrong_ca_and_bad_token_are_one_line_errors(cluster, tmp_path: Path) -> None:
    config = cluster.kubeconfig("reader").read_text()
    import yaml
    doc = yaml.safe_load(config)
    other_ca = tmp_path / "other-ca.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(tmp_path / "k"),
                    "-out", str(other_ca), "-subj", "/CN=not-the-cluster-ca", "-days", "1"],
                   check=True, capture_output=True)
    doc["clusters"][0]["cluster"].pop("certificate-authority-data", None)
    doc["clusters"][0]["cluster"]["certificate-authority"] = str(other_ca)
    (tmp_path / "wrong-ca").write_text(yaml.safe_dump(doc))
    result = run_plugin(tmp_path / "wrong-ca", "leftovers")
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: TLS handshake with https://127.0.0.1:")

    doc = yaml.safe_load(config)
    doc["users"][0]["user"] = {"token": "not-a-real-token"}
    (tmp_path / "bad-token").write_text(yaml.safe_dump(doc))
    result = run_plugin(tmp_path / "bad-token", "leftovers")
    assert (result.returncode, result.stderr) == (1, "error: You must be logged in to the server (Unauthorized)\n")


BULK = 1200


@pytest.fixture(scope="module")
def many_pvs(cluster):
    """The Released PV is created first and sorts last, so it sits on the third page of 500."""
    apply(cluster, namespace("lo-bulk"), host_path_pv("zz-oldest-leftover", storage_class="lo-bulk"))
    apply(cluster, claim("lo-bulk", "old", storage_class="lo-bulk"))
    wait_pv_phase(cluster, "zz-oldest-leftover", "Bound")
    delete_claim(cluster, "lo-bulk", "old")
    wait_pv_phase(cluster, "zz-oldest-leftover", "Released")
    chunks = [[host_path_pv(f"bulk-{i:05d}", storage_class="lo-bulk-avail", labels={"pvleft-test": "bulk"})
               for i in range(start, min(start + 150, BULK))] for start in range(0, BULK, 150)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda chunk: apply(cluster, *chunk), chunks))
    yield
    cluster.kubectl("delete", "pv", "-l", "pvleft-test=bulk", "--wait=false", timeout=300)
    # Best gone before the next module reads the shared plane: pv-protection releases them one by one (one worker,
    # an update each: ~40 s on a quiet machine, minutes on a loaded one), and meanwhile every PV list differs from
    # the last. Not a failure if they are still going: tests after this compare only their own objects.
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        status, found = cluster.api("GET", "/api/v1/persistentvolumes?labelSelector=pvleft-test%3Dbulk&limit=1")
        if status == 200 and not found["items"]:
            break
        time.sleep(2)
    cluster.kubectl("delete", "pv", "zz-oldest-leftover", "--wait=false", check=False)
    cluster.kubectl("delete", "namespace", "lo-bulk", "--wait=false", check=False)


def test_pagination_reaches_the_last_page(cluster, many_pvs) -> None:
    before = cluster.audit_log.stat().st_size
    rows = jsonl(run_plugin(cluster.kubeconfig("reader"), "leftovers", "-o", "jsonl", check=True).stdout)
    assert row_for(rows, "zz-oldest-leftover")["phase"] == "Released"
    every = jsonl(run_plugin(cluster.kubeconfig("reader"), "leftovers", "--all", "-o", "jsonl", check=True).stdout)
    assert sum(1 for r in every if r["name"].startswith("bulk-")) == BULK
    # The server saw a first page with limit=500 and follow-up pages with continue tokens.
    with cluster.audit_log.open() as log:
        log.seek(before)
        uris = [json.loads(line)["requestURI"] for line in log if '"pvleft-reader-user"' in line]
    pv_lists = [u for u in uris if u.startswith("/api/v1/persistentvolumes?")]
    assert all("limit=500" in u for u in pv_lists)
    assert sum("continue=" in u for u in pv_lists) >= 4  # two runs, at least two follow-up pages each


def test_closed_pipe_exits_quietly(cluster, many_pvs) -> None:
    command = f"{PLUGIN} leftovers --all --kubeconfig {cluster.kubeconfig('reader')} | head -n 2"
    result = subprocess.run(["bash", "-o", "pipefail", "-c", command], check=False, capture_output=True, text=True,
                            timeout=120)
    assert len(result.stdout.splitlines()) == 2
    assert result.stderr == ""
    assert result.returncode in (0, 141)


def test_in_cluster_config_with_a_service_account_token(cluster, mariadb, tmp_path: Path) -> None:
    """No kubeconfig anywhere: the plugin uses the Pod's ServiceAccount files and KUBERNETES_SERVICE_*."""
    cluster.kubectl("create", "serviceaccount", "pvleft", "-n", "mariadb")
    cluster.kubectl("create", "clusterrolebinding", "pvleft-sa-reader", "--clusterrole=pvleft-reader",
                    "--serviceaccount=mariadb:pvleft")
    try:
        account = tmp_path / "serviceaccount"
        account.mkdir()
        (account / "token").write_text(cluster.kubectl("create", "token", "pvleft", "-n", "mariadb").stdout.strip())
        (account / "ca.crt").write_bytes((cluster.pki / "ca.crt").read_bytes())
        (account / "namespace").write_text("mariadb")
        port = cluster.server.rsplit(":", 1)[1]
        env = {"HOME": str(tmp_path), "KUBECONFIG": "", "PVLEFT_SERVICEACCOUNT_DIR": str(account),
               "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port}
        result = run_plugin(None, "leftovers", "-o", "jsonl", env=env)
        assert result.returncode == 0, result.stderr
        assert row_for(jsonl(result.stdout), "mariadb-pv")["claim_missing"] is True
        # The namespace comes from the ServiceAccount: claims in it are what `claims` reads by default.
        claims = run_plugin(None, "claims", "--all", "-o", "json", env=env)
        assert claims.returncode == 0, claims.stderr
        assert {item["namespace"] for item in items(claims.stdout)} <= {"mariadb"}
    finally:
        cluster.kubectl("delete", "clusterrolebinding", "pvleft-sa-reader", check=False)


def test_kubeconfig_list_first_file_wins_and_context_picks_the_user(cluster, mariadb) -> None:
    pvonly, admin = cluster.kubeconfig("pvonly"), cluster.kubeconfig("admin")
    # pvonly's current-context comes first: claims cannot be read.
    blind = run_plugin(None, "leftovers", "-o", "jsonl", env={"KUBECONFIG": f"{pvonly}:{admin}"})
    assert row_for(jsonl(blind.stdout), "mariadb-pv")["claim_missing"] is None
    # Same list, the admin context chosen by name from the second file.
    seeing = run_plugin(None, "leftovers", "-o", "jsonl", "--context", "pvleft-admin",
                        env={"KUBECONFIG": f"{pvonly}:{admin}"})
    assert row_for(jsonl(seeing.stdout), "mariadb-pv")["claim_missing"] is True
    # --user overrides the context's user: the admin context with pvonly's credentials is blind again.
    overridden = run_plugin(None, "leftovers", "-o", "jsonl", "--context", "pvleft-admin",
                            "--user", "pvleft-pvonly-user", env={"KUBECONFIG": f"{pvonly}:{admin}"})
    assert row_for(jsonl(overridden.stdout), "mariadb-pv")["claim_missing"] is None


def test_json_items_agree_with_kubectls_own_view_of_the_same_pvs(cluster, mariadb) -> None:
    """Every key of `-o json` that restates a field of the PV is compared with what kubectl reads from the server
    (a bug dropping or mistyping a key passed both cluster files before)."""
    def kubectls() -> dict[str, dict]:
        return {pv["metadata"]["name"]: pv for pv in json.loads(cluster.kubectl("get", "pv", "-o", "json").stdout)["items"]}

    # Other tests' PVs may be changing meanwhile (the binder at work): only a PV that kubectl saw unchanged before
    # and after our read is compared (same resourceVersion), so the comparison is never a race.
    before = kubectls()
    ours = items(run_plugin(cluster.kubeconfig("reader"), "leftovers", "--all", "-o", "json", check=True).stdout)
    after = kubectls()
    steady = {name for name, pv in after.items()
              if before.get(name, {}).get("metadata", {}).get("resourceVersion") == pv["metadata"]["resourceVersion"]}
    assert ours and {row["name"] for row in ours} <= set(before) | set(after)
    compared = [row for row in ours if row["name"] in steady]
    assert any(row["name"] == "mariadb-pv" for row in compared)
    for row in compared:
        pv = after[row["name"]]
        spec, status = pv["spec"], pv.get("status", {})
        ref = spec.get("claimRef") or {}
        csi = spec.get("csi") or {}
        assert row["phase"] == status.get("phase"), row["name"]
        assert row["reclaim"] == spec.get("persistentVolumeReclaimPolicy"), row["name"]
        assert row["claim"] == (f"{ref['namespace']}/{ref['name']}" if ref.get("name") else None), row["name"]
        assert row["claim_uid"] == ref.get("uid"), row["name"]
        assert row["storage_class"] == (spec.get("storageClassName") or None), row["name"]
        assert row["capacity"] == spec.get("capacity", {}).get("storage"), row["name"]
        if csi:
            assert (row["driver"], row["volume_handle"]) == (csi.get("driver"), csi.get("volumeHandle")), row["name"]
        assert row["reason"] == status.get("reason") and row["message"] == status.get("message"), row["name"]
        assert row["last_phase_transition_time"] == status.get("lastPhaseTransitionTime"), row["name"]


def test_first_file_wins_for_each_named_cluster_user_and_context(cluster, mariadb, tmp_path: Path) -> None:
    """Two files both define a cluster, a user and a context of the same names: the first file's entries win,
    each on its own (kubectl's merge), with kubectl's `config view --minify` as the oracle."""
    import yaml

    admin = yaml.safe_load(cluster.kubeconfig("admin").read_text())
    good_cluster, good_user = admin["clusters"][0]["cluster"], admin["users"][0]["user"]
    dead = {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}

    def config(cluster_body: dict, user_body: dict, namespace: str) -> dict:
        return {"apiVersion": "v1", "kind": "Config",
                "clusters": [{"name": "shared", "cluster": cluster_body}],
                "users": [{"name": "shared-user", "user": user_body}],
                "contexts": [{"name": "shared-ctx", "context": {"cluster": "shared", "user": "shared-user",
                                                                "namespace": namespace}}]}

    first, second = tmp_path / "first", tmp_path / "second"
    first.write_text(yaml.safe_dump(config(good_cluster, good_user, "mariadb")))
    second.write_text(yaml.safe_dump(config(dead, {"token": "not-a-token"}, "elsewhere")))
    for order, works in ((f"{first}:{second}", True), (f"{second}:{first}", False)):
        env = {"KUBECONFIG": order}
        view = json.loads(subprocess.run(["kubectl", "config", "view", "--minify", "--raw", "-o", "json",
                                          "--context", "shared-ctx"], capture_output=True, text=True,
                                         env={**os.environ, **env}, check=True).stdout)
        assert view["clusters"][0]["cluster"]["server"] == (good_cluster if works else dead)["server"]
        result = run_plugin(None, "leftovers", "-o", "jsonl", "--context", "shared-ctx", env=env)
        if works:
            assert result.returncode == 0 and row_for(jsonl(result.stdout), "mariadb-pv")["claim_missing"] is True
        else:
            assert result.returncode == 1 and "127.0.0.1:1" in result.stderr
