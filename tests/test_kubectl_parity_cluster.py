"""kubectl's flags through the plugin, each compared with what kubectl itself does on the same objects of the
real control plane (issue #12): connection flags, selectors (done by the server), --sort-by, the template
formats and their errors, --show-labels, pflag's boolean forms, kubectl's blank cells and List, --watch on
every subcommand, and -v. Our rows are not kubectl's objects, so a template is compared with the equivalent
kubectl template (`.name` here is `.metadata.name` there) and must give the same text.

Everything here is named with this module's own `kp-` prefix; other tests' objects may share the cluster,
so comparisons keep to ours (selected by the `kp-set` label or the namespace)."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from plugin_runner import PLUGIN, Watch, items, run_plugin
from recording.classes_claims import bound_csi_claim, cleanup, resize_failed_status, write_status
from scenarios import apply, claim, delete_claim, host_path_pv, namespace, storage_class, wait_for, wait_pv_phase

pytestmark = pytest.mark.cluster

P = f"kp-{uuid.uuid4().hex[:5]}-"
NS = f"{P}ns"
SET = f"kp-set={P.rstrip('-')}"  # every PV and claim of this module carries it
PV_SIZES = {"pv-a": "500Mi", "pv-b": "2Gi", "pv-c": "1Gi", "pv-d": "10Gi"}
PV_LABELS = {"pv-a": {"team": "a", "tier": "gold"}, "pv-b": {"team": "b"}, "pv-c": {"team": "c"}, "pv-d": {}}
# Claims made in this order, a second apart, so name order and creation order differ.
CLAIMS = (("c-z", {"team": "a"}), ("c-m", {"team": "b"}), ("c-a", {}))
SELECTORS = ("team=a", "team!=a", "team in (a,b)", "!team")


# -- helpers ----------------------------------------------------------------------------------------

def kubectl(cluster, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return cluster.kubectl(*args, kubeconfig="reader", check=check)


def names(stdout: str) -> list[str]:
    """`-o name` lines without the kind: `persistentvolume/x` -> `x`."""
    return [line.split("/", 1)[1] for line in stdout.splitlines() if line.strip()]


def mine(found: list[str]) -> list[str]:
    return [n for n in found if n.startswith(P)]


def mine_lines(stdout: str) -> list[str]:
    """`-o name` lines of this module's objects, kind and all (`storageclass.storage.k8s.io/kp-...`)."""
    return sorted(line for line in stdout.splitlines() if line.partition("/")[2].startswith(P))


def plugin(cluster, *args: str, user: str = "reader", **kw: Any) -> subprocess.CompletedProcess:
    return run_plugin(cluster.kubeconfig(user), *args, **kw)


def cells(table: str, column: str) -> dict[str, str]:
    """NAME -> the cell under `column` in a kubectl-style table (columns start where their header starts;
    headers such as CLAIM STATE hold one space, columns are three apart)."""
    lines = table.splitlines()
    starts = [(m.start(), m.group()) for m in re.finditer(r"\S+(?: \S+)*", lines[0])]
    headers = [h for _, h in starts]
    index = headers.index(column)
    begin = starts[index][0]
    end = starts[index + 1][0] if index + 1 < len(starts) else None
    return {line.split()[0]: line[begin:end].strip() for line in lines[1:] if line.strip()}


def after_error(stderr: str) -> str:
    """kubectl's message after `error: ` (cobra's flag errors say `Error: `), first line only."""
    first = stderr.strip().splitlines()[0]
    return re.sub(r"^(error|Error): ", "", first)


class AuditTail:
    """The audit events written since it was made (the audit log is written before the client sees a reply)."""

    def __init__(self, cluster) -> None:
        self.path = Path(cluster.audit_log)
        self.offset = self.path.stat().st_size

    def events(self, user_agent: str = "kubectl-pvleft/") -> list[dict[str, Any]]:
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            lines = handle.read().splitlines()
        events = [json.loads(line) for line in lines if line.strip()]
        return [e for e in events if e.get("userAgent", "").startswith(user_agent)]


def query(event: dict[str, Any]) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(event["requestURI"]).query).items()}


def list_path(event: dict[str, Any]) -> str:
    return urlsplit(event["requestURI"]).path


# -- the objects --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def objects(cluster) -> Iterator[dict[str, Any]]:
    set_key, set_value = SET.split("=")
    pvs = [host_path_pv(f"{P}{name}", size=size, storage_class=f"{P}std",
                        labels={set_key: set_value, **PV_LABELS[name]}) for name, size in PV_SIZES.items()]
    try:
        apply(cluster, namespace(NS), storage_class(f"{P}std", reclaim="Retain"),
              storage_class(f"{P}wait", binding="WaitForFirstConsumer"), *pvs)
        for kind, name, labels in (("sc", f"{P}std", "team=a"), ("sc", f"{P}wait", "team=b")):
            cluster.kubectl("label", kind, name, labels)
        # A Released PV that still names its claim: kubectl's CLAIM cell shows it, an unclaimed PV's is blank.
        apply(cluster, host_path_pv(f"{P}pv-rel", storage_class=f"{P}std", labels={set_key: set_value},
                                    claim=(NS, "gone")), claim(NS, "gone", storage_class=f"{P}std"))
        wait_pv_phase(cluster, f"{P}pv-rel", "Bound")
        delete_claim(cluster, NS, "gone")
        wait_pv_phase(cluster, f"{P}pv-rel", "Released")
        for index, (name, labels) in enumerate(CLAIMS):
            if index:
                time.sleep(1.1)  # creationTimestamp has whole seconds
            pvc = claim(NS, f"{P}{name}", size=("1Gi", "2Gi", "500Mi")[index], storage_class=f"{P}wait")
            pvc["metadata"]["labels"] = {set_key: set_value, **labels}
            apply(cluster, pvc)
        wait_for("the default ServiceAccount", lambda: cluster.kubectl(
            "get", "serviceaccount", "default", "-n", NS, check=False).returncode == 0)
        for pod, labels, claim_name in (("pod-a", {"team": "a"}, f"{P}c-z"), ("pod-b", {"team": "b"}, f"{P}c-m"),
                                        ("pod-n", {}, f"{P}no-such-claim")):
            apply(cluster, {"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": f"{P}{pod}", "namespace": NS, "labels": labels},
                            "spec": {"containers": [{"name": "c", "image": "busybox"}],
                                     "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim_name}}]}})
        pending = ("get", "pods", "-n", NS, "--field-selector=status.phase=Pending", "-o", "name")
        wait_for("the Pods to be Pending", lambda: len(kubectl(cluster, *pending).stdout.split()) == 3)
        yield {"pvs": sorted(f"{P}{n}" for n in (*PV_SIZES, "pv-rel"))}
    finally:
        cleanup(cluster, P)


@pytest.fixture(scope="module")
def token(cluster, objects) -> Iterator[str]:
    """A ServiceAccount with the pvleft-reader ClusterRole: a bearer token the server accepts."""
    cluster.kubectl("create", "serviceaccount", f"{P}sa", "-n", NS)
    cluster.kubectl("create", "clusterrolebinding", f"{P}sa-reader", "--clusterrole=pvleft-reader",
                    f"--serviceaccount={NS}:{P}sa")
    try:
        yield cluster.kubectl("create", "token", f"{P}sa", "-n", NS).stdout.strip()
    finally:
        cluster.kubectl("delete", "clusterrolebinding", f"{P}sa-reader", "--ignore-not-found", check=False)


def no_kubeconfig(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"KUBECONFIG": str(tmp_path / "nowhere" / "config"), "HOME": str(home)}


def bare(args: list[str], env: dict[str, str], kubectl_binary: str = "kubectl") -> subprocess.CompletedProcess:
    """kubectl with no kubeconfig either, the same environment as the plugin."""
    return subprocess.run([kubectl_binary, *args], capture_output=True, text=True, env=dict(os.environ, **env),
                          timeout=60, check=False)


def plugin_bare(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return run_plugin(None, *args, env=env)


# -- connection flags -----------------------------------------------------------------------------------

def test_server_and_token_with_no_kubeconfig_at_all(cluster, objects, token, tmp_path: Path) -> None:
    env = no_kubeconfig(tmp_path)
    ca = str(cluster.pki / "ca.crt")
    expected = items(plugin(cluster, "leftovers", "--all", "-l", SET, "-o", "json", check=True).stdout)
    assert sorted(row["name"] for row in expected) == objects["pvs"]
    for tls in (["--certificate-authority", ca], ["--insecure-skip-tls-verify"],
                ["--certificate-authority", ca, "--tls-server-name", "kubernetes.default"]):
        result = plugin_bare("leftovers", "--all", "-l", SET, "-o", "json", "-s", cluster.server, "--token", token,
                             *tls, env=env)
        assert (result.returncode, result.stderr) == (0, ""), (tls, result.stderr)
        assert items(result.stdout) == expected, tls
        theirs = bare(["get", "pv", "-l", SET, "-o", "name", "-s", cluster.server, "--token", token, *tls], env)
        assert theirs.returncode == 0, theirs.stderr
        assert names(theirs.stdout) == [row["name"] for row in expected]
        assert token not in result.stdout + result.stderr


def test_tls_server_name_is_what_the_certificate_is_checked_against(cluster, objects, token, tmp_path: Path) -> None:
    env = no_kubeconfig(tmp_path)
    flags = ["-s", cluster.server, "--token", token, "--certificate-authority", str(cluster.pki / "ca.crt"),
             "--tls-server-name", f"{P}not-in-the-certificate.example"]
    ours = plugin_bare("leftovers", "--all", *flags, env=env)
    theirs = bare(["get", "pv", *flags], env)
    assert (ours.returncode, theirs.returncode, ours.stdout) == (1, 1, "")
    for stderr in (ours.stderr, theirs.stderr):
        assert f"{P}not-in-the-certificate.example" in stderr
    assert len(ours.stderr.splitlines()) == 1 and token not in ours.stderr


def test_client_certificate_and_key_flags(cluster, objects, tmp_path: Path) -> None:
    env = no_kubeconfig(tmp_path)
    pki = cluster.pki
    flags = ["-s", cluster.server, "--certificate-authority", str(pki / "ca.crt"),
             "--client-certificate", str(pki / "reader.crt"), "--client-key", str(pki / "reader.key")]
    ours = plugin_bare("claims", "--all", "-n", NS, "-o", "json", *flags, env=env)
    assert (ours.returncode, ours.stderr) == (0, ""), ours.stderr
    with_kubeconfig = plugin(cluster, "claims", "--all", "-n", NS, "-o", "json", check=True)
    assert items(ours.stdout) == items(with_kubeconfig.stdout)
    theirs = bare(["get", "pvc", "-n", NS, "-o", "name", *flags], env)
    assert sorted(names(theirs.stdout)) == sorted(row["name"] for row in items(ours.stdout))


def test_certificate_authority_with_insecure_is_refused_as_kubectl_refuses_it(cluster, token, tmp_path: Path) -> None:
    env = no_kubeconfig(tmp_path)
    flags = ["-s", cluster.server, "--token", token, "--certificate-authority", str(cluster.pki / "ca.crt"),
             "--insecure-skip-tls-verify"]
    ours = plugin_bare("leftovers", *flags, env=env)
    theirs = bare(["get", "pv", *flags], env)
    assert (ours.returncode, theirs.returncode, ours.stdout) == (1, 1, "")
    assert ours.stderr == theirs.stderr == (
        "error: specifying a root certificates file with the insecure flag is not allowed\n")


def test_as_uid_impersonates_like_kubectl(cluster, objects) -> None:
    audit = AuditTail(cluster)
    flags = ["--as", "pvleft-reader-user", "--as-uid", f"{P}uid"]
    ours = plugin(cluster, "leftovers", "--all", "-l", SET, "-o", "json", *flags, user="admin", check=True)
    assert items(ours.stdout) == items(plugin(cluster, "leftovers", "--all", "-l", SET, "-o", "json",
                                              check=True).stdout)
    cluster.kubectl("get", "pv", "-l", SET, *flags)

    def pv_lists(agent: str) -> list[dict[str, Any]]:
        return [e for e in audit.events(agent) if list_path(e) == "/api/v1/persistentvolumes"]

    ours_seen, theirs_seen = pv_lists("kubectl-pvleft/"), pv_lists("kubectl")
    theirs_seen = [e for e in theirs_seen if not e["userAgent"].startswith("kubectl-pvleft/")]
    assert ours_seen and theirs_seen
    assert ours_seen[0]["impersonatedUser"] == theirs_seen[0]["impersonatedUser"]
    assert ours_seen[0]["impersonatedUser"]["uid"] == f"{P}uid"
    assert ours_seen[0]["user"]["username"] == "pvleft-admin"


def test_as_uid_without_as_is_refused_before_any_request(cluster, objects) -> None:
    audit = AuditTail(cluster)
    for flag in (["--as-uid", f"{P}uid"], ["--as-group", f"{P}group"]):
        ours = plugin(cluster, "leftovers", *flag, user="admin")
        theirs = cluster.kubectl("get", "pv", *flag, check=False)
        assert (ours.returncode, theirs.returncode, ours.stdout) == (1, 1, "")
        # error: requesting uid, groups or user-extra for pvleft-admin without impersonating a user
        assert after_error(ours.stderr) == after_error(theirs.stderr)
    assert audit.events() == []


# -- selectors ----------------------------------------------------------------------------------------

def test_label_selectors_select_what_kubectl_selects_on_the_server(cluster, objects) -> None:
    audit = AuditTail(cluster)
    expected_pvs = {"team=a": ["pv-a"], "team!=a": ["pv-b", "pv-c", "pv-d", "pv-rel"],
                    "team in (a,b)": ["pv-a", "pv-b"], "!team": ["pv-d", "pv-rel"]}
    for selector in SELECTORS:
        ours = names(plugin(cluster, "leftovers", "--all", "-l", selector, "-o", "name", check=True).stdout)
        theirs = names(kubectl(cluster, "get", "pv", "-l", selector, "-o", "name").stdout)
        assert sorted(mine(ours)) == sorted(mine(theirs)) == [f"{P}{n}" for n in expected_pvs[selector]], selector

        for ours_args, kind in ((["claims", "--all", "-A"], ["pvc", "-A"]), (["classes"], ["sc"]),
                                (["leftovers", "--all"], ["pv"])):
            ours_text = plugin(cluster, *ours_args, "-l", selector, "-o", "name", check=True).stdout
            theirs_text = kubectl(cluster, "get", *kind, "-l", selector, "-o", "name").stdout
            assert mine_lines(ours_text) == mine_lines(theirs_text), (selector, kind)

        ours_pods = [(r["namespace"], r["pod"]) for r in items(
            plugin(cluster, "pending", "-A", "-l", selector, "-o", "json", check=True).stdout)]
        theirs_pods = [tuple(line.split()) for line in kubectl(
            cluster, "get", "pods", "-A", "--field-selector=status.phase=Pending", "-l", selector,
            "-o", "custom-columns=NS:.metadata.namespace,NAME:.metadata.name", "--no-headers").stdout.splitlines()]
        assert sorted(p for p in ours_pods if p[0] == NS) == sorted(p for p in theirs_pods if p[0] == NS), selector
    claims_a = names(plugin(cluster, "claims", "--all", "-A", "-l", "team=a", "-o", "name", check=True).stdout)
    assert mine(claims_a) == [f"{P}c-z"]
    classes_b = names(plugin(cluster, "classes", "-l", "team in (b)", "-o", "name", check=True).stdout)
    assert mine(classes_b) == [f"{P}wait"]
    pods_ab = items(plugin(cluster, "pending", "-A", "-l", "team in (a,b)", "-o", "json", check=True).stdout)
    assert sorted(r["pod"] for r in pods_ab if r["namespace"] == NS) == [f"{P}pod-a", f"{P}pod-b"]

    # Selected by the server: each selector went out as labelSelector on the kind it selects.
    sent: dict[str, set[str]] = {}
    for event in audit.events():
        selector = query(event).get("labelSelector")
        if selector is not None and event["verb"] == "list":
            sent.setdefault(list_path(event), set()).add(selector)
    for path in ("/api/v1/persistentvolumes", "/api/v1/persistentvolumeclaims", "/api/v1/pods",
                 "/apis/storage.k8s.io/v1/storageclasses"):
        assert set(SELECTORS) <= sent.get(path, set()), path


def test_field_selector_on_claims(cluster, objects) -> None:
    audit = AuditTail(cluster)
    selector = f"metadata.name={P}c-m"
    ours = names(plugin(cluster, "claims", "--all", "-A", "--field-selector", selector, "-o", "name",
                        check=True).stdout)
    theirs = names(kubectl(cluster, "get", "pvc", "-A", "--field-selector", selector, "-o", "name").stdout)
    assert ours == theirs == [f"{P}c-m"]
    assert any(query(e).get("fieldSelector") == selector for e in audit.events()
               if list_path(e) == "/api/v1/persistentvolumeclaims")


def test_a_selector_the_server_refuses(cluster, objects) -> None:
    # kubectl wraps the server's words in its own ("Unable to find ... that match label selector ..."); the
    # server's reason is the same text in both.
    for flag, value in (("-l", "team in (a"), ("-l", "team=a=b"), ("--field-selector", "spec.x=y")):
        ours = plugin(cluster, "leftovers", "--all", flag, value)
        theirs = kubectl(cluster, "get", "pv", flag, value, check=False)
        assert (ours.returncode, ours.stdout, theirs.returncode) == (1, "", 1)
        assert len(ours.stderr.splitlines()) == 1 and "HTTP 400" in ours.stderr
        reason = after_error(ours.stderr).rsplit(" (list ", 1)[0]
        assert theirs.stderr.strip().endswith(reason), (reason, theirs.stderr)


# -- --sort-by ----------------------------------------------------------------------------------------

def test_sort_by_capacity_is_quantity_order_like_kubectl(cluster, objects) -> None:
    ours = names(plugin(cluster, "leftovers", "--all", "-l", SET, "--sort-by", ".capacity", "-o", "name",
                        check=True).stdout)
    theirs = names(kubectl(cluster, "get", "pv", "-l", SET, "--sort-by=.spec.capacity.storage", "-o", "name").stdout)
    assert ours == theirs == [f"{P}{n}" for n in ("pv-rel", "pv-a", "pv-c", "pv-b", "pv-d")]
    braces = names(plugin(cluster, "leftovers", "--all", "-l", SET, "--sort-by", "{.capacity}", "-o", "name",
                          check=True).stdout)
    assert braces == ours


def test_sort_by_name_and_creation_time_on_claims(cluster, objects) -> None:
    for ours_key, their_key, order in ((".name", ".metadata.name", ("c-a", "c-m", "c-z")),
                                       (".creation_timestamp", ".metadata.creationTimestamp", ("c-z", "c-m", "c-a"))):
        ours = names(plugin(cluster, "claims", "--all", "-n", NS, "--sort-by", ours_key, "-o", "name",
                            check=True).stdout)
        theirs = names(kubectl(cluster, "get", "pvc", "-n", NS, f"--sort-by={their_key}", "-o", "name").stdout)
        assert ours == theirs == [f"{P}{n}" for n in order], ours_key


def test_sort_by_a_missing_field_fails_like_kubectl(cluster, objects) -> None:
    # With -o name: kubectl's table (a server-side Table) says "No resources found" and exits 0 instead.
    ours = plugin(cluster, "claims", "--all", "-n", NS, "--sort-by", ".no_such_field", "-o", "name")
    theirs = kubectl(cluster, "get", "pvc", "-n", NS, "--sort-by=.no_such_field", "-o", "name", check=False)
    assert (ours.returncode, ours.stdout) == (1, "") and theirs.returncode == 1
    assert ours.stderr == theirs.stderr  # error: couldn't find any field with path "{.no_such_field}" ...


# -- -o jsonpath / jsonpath-as-json / custom-columns (and the -file forms) --------------------------------

# Our template over our rows, and the kubectl template that says the same over kubectl's objects.
TEMPLATES = (
    ("jsonpath={.items[*].name}", "jsonpath={.items[*].metadata.name}"),
    ('jsonpath={range .items[*]}{.name}{"\\t"}{.capacity}{"\\n"}{end}',
     'jsonpath={range .items[*]}{.metadata.name}{"\\t"}{.spec.capacity.storage}{"\\n"}{end}'),
    ("jsonpath-as-json={.items[*].capacity}", "jsonpath-as-json={.items[*].spec.capacity.storage}"),
    ("jsonpath={.items[0].name}", "jsonpath={.items[0].metadata.name}"),
    ('jsonpath={.items[?(@.capacity=="2Gi")].name}',
     'jsonpath={.items[?(@.spec.capacity.storage=="2Gi")].metadata.name}'),
    ("custom-columns=NAME:.name,CAPACITY:.capacity,CLASS:.storage_class",
     "custom-columns=NAME:.metadata.name,CAPACITY:.spec.capacity.storage,CLASS:.spec.storageClassName"),
)


@pytest.mark.parametrize("ours, theirs", TEMPLATES, ids=[t[0].split("=")[0] + str(i) for i, t in enumerate(TEMPLATES)])
def test_template_gives_kubectls_text(cluster, objects, ours: str, theirs: str) -> None:
    mine_ = plugin(cluster, "leftovers", "--all", "-l", SET, "-o", ours)
    kubectls = kubectl(cluster, "get", "pv", "-l", SET, "-o", theirs)
    assert (mine_.returncode, mine_.stderr) == (0, "")
    assert mine_.stdout == kubectls.stdout and mine_.stdout.strip()


def test_custom_columns_claim_is_kubectls_claim_ref(cluster, objects) -> None:
    ours = plugin(cluster, "leftovers", "--all", "-l", SET, "-o", "custom-columns=NAME:.name,CLAIM:.claim",
                  check=True).stdout
    theirs = kubectl(cluster, "get", "pv", "-l", SET, "-o",
                     "custom-columns=NAME:.metadata.name,NS:.spec.claimRef.namespace,CLAIM:.spec.claimRef.name").stdout
    assert ours.splitlines()[0].split() == ["NAME", "CLAIM"]
    claimed = {line.split()[0]: f"{line.split()[1]}/{line.split()[2]}" for line in theirs.splitlines()[1:]
               if "<none>" not in line}
    assert claimed == {f"{P}pv-rel": f"{NS}/gone"}
    assert {line.split()[0]: line.split()[1] for line in ours.splitlines()[1:] if line.split()[0] in claimed} == claimed
    assert [line.split()[0] for line in ours.splitlines()[1:]] == [line.split()[0] for line in theirs.splitlines()[1:]]


def test_template_files(cluster, objects, tmp_path: Path) -> None:
    for fmt, ours_text, theirs_text in (
            ("jsonpath-file", '{range .items[*]}{.name} {.phase}{"\\n"}{end}',
             '{range .items[*]}{.metadata.name} {.status.phase}{"\\n"}{end}'),
            ("custom-columns-file", "NAME   STATUS\n.name  .phase\n",
             "NAME   STATUS\n.metadata.name  .status.phase\n")):
        (tmp_path / "ours").write_text(ours_text)
        (tmp_path / "theirs").write_text(theirs_text)
        ours = plugin(cluster, "leftovers", "--all", "-l", SET, "-o", f"{fmt}={tmp_path / 'ours'}", check=True)
        theirs = kubectl(cluster, "get", "pv", "-l", SET, "-o", f"{fmt}={tmp_path / 'theirs'}")
        assert ours.stdout == theirs.stdout and f"{P}pv-rel Released" in " ".join(ours.stdout.split())


BAD_OUTPUTS = (
    "jsonpath={.items[*].name", "jsonpath={.items[?(@.x==]}", "jsonpath={.items[0:x]}", "jsonpath-as-json={.items[",
    "custom-columns=NAME", "custom-columns=NAME:.name,X", "custom-columns=NAME:{.items",
    "jsonpath=", "jsonpath-as-json=", "custom-columns=", "jsonpath-file=", "custom-columns-file=",
    "jsonpath-file=/kp-no-such-template", "custom-columns-file=/kp-no-such-template",
)


@pytest.mark.parametrize("output", BAD_OUTPUTS)
def test_bad_template_says_what_kubectl_says(cluster, objects, output: str) -> None:
    ours = plugin(cluster, "leftovers", "--all", "-l", SET, "-o", output)
    theirs = kubectl(cluster, "get", "pv", "-l", SET, "-o", output, check=False)
    assert ours.returncode == theirs.returncode == 1 and ours.stdout == ""
    assert len(ours.stderr.splitlines()) == 1 and ours.stderr.startswith("error: ")
    assert after_error(ours.stderr) == after_error(theirs.stderr)


def test_template_execution_error_starts_as_kubectls(cluster, objects) -> None:
    # kubectl then dumps its own objects over several lines; ours is one line with our objects.
    ours = plugin(cluster, "leftovers", "--all", "-l", SET, "-o", "jsonpath={end}")
    theirs = kubectl(cluster, "get", "pv", "-l", SET, "-o", "jsonpath={end}", check=False)
    head = 'error executing jsonpath "{end}": Error executing template: not in range, nothing to end.'
    assert after_error(ours.stderr).startswith(head) and after_error(theirs.stderr).startswith(head)
    assert (ours.returncode, len(ours.stderr.splitlines())) == (1, 1)


# -- --show-labels, blank cells, the List -----------------------------------------------------------------

def test_show_labels_is_kubectls_labels_cell(cluster, objects) -> None:
    ours = cells(plugin(cluster, "leftovers", "--all", "-l", SET, "--show-labels", check=True).stdout, "LABELS")
    theirs = cells(kubectl(cluster, "get", "pv", "-l", SET, "--show-labels").stdout, "LABELS")
    assert ours == theirs and sorted(ours) == objects["pvs"]
    assert ours[f"{P}pv-a"] == f"{SET},team=a,tier=gold"
    for command, kind in ((["claims", "--all", "-n", NS], "pvc"), (["classes", "-l", "team"], "sc"),
                          (["pending", "-n", NS], "pods")):
        ours = cells(plugin(cluster, *command, "--show-labels", check=True).stdout, "LABELS")
        theirs = cells(kubectl(cluster, "get", kind, *command[-2:], "--show-labels").stdout, "LABELS")
        assert {k: v for k, v in ours.items() if k.startswith(P)} == {k: v for k, v in theirs.items()
                                                                       if k.startswith(P)} != {}


def test_claim_cell_blank_where_kubectl_leaves_it_blank(cluster, objects) -> None:
    ours = cells(plugin(cluster, "leftovers", "--all", "-l", SET, check=True).stdout, "CLAIM")
    theirs = cells(kubectl(cluster, "get", "pv", "-l", SET).stdout, "CLAIM")
    assert ours == theirs
    assert ours[f"{P}pv-d"] == "" and ours[f"{P}pv-rel"] == f"{NS}/gone"
    # No class and no reason: STORAGECLASS and (wide) REASON are blank in kubectl's table too.
    pv = host_path_pv(f"{P}pv-noclass", labels={"kp-blank": P.rstrip("-")})
    del pv["spec"]["storageClassName"]
    apply(cluster, pv)
    selector = f"kp-blank={P.rstrip('-')}"
    for column, wide in (("CLAIM", []), ("STORAGECLASS", []), ("REASON", ["-o", "wide"])):
        ours = cells(plugin(cluster, "leftovers", "--all", "-l", selector, *wide, check=True).stdout, column)
        theirs = cells(kubectl(cluster, "get", "pv", "-l", selector, *wide).stdout, column)
        assert ours == theirs == {f"{P}pv-noclass": ""}, column


def test_json_list_is_kubectls_list(cluster, objects) -> None:
    ours = json.loads(plugin(cluster, "leftovers", "--all", "-l", SET, "-o", "json", check=True).stdout)
    theirs = json.loads(kubectl(cluster, "get", "pv", "-l", SET, "-o", "json").stdout)
    assert list(ours) == list(theirs) == ["apiVersion", "items", "kind", "metadata"]
    assert {k: ours[k] for k in ("apiVersion", "kind", "metadata")} == \
        {k: theirs[k] for k in ("apiVersion", "kind", "metadata")} == \
        {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}}
    assert [o["name"] for o in ours["items"]] == [o["metadata"]["name"] for o in theirs["items"]]
    tail = 'kind: List\nmetadata:\n  resourceVersion: ""\n'  # go-yaml's double quotes, not PyYAML's ''
    ours_yaml = plugin(cluster, "leftovers", "--all", "-l", SET, "-o", "yaml", check=True).stdout
    theirs_yaml = kubectl(cluster, "get", "pv", "-l", SET, "-o", "yaml").stdout
    assert ours_yaml.startswith("apiVersion: v1\nitems:\n") and theirs_yaml.startswith("apiVersion: v1\nitems:\n")
    assert ours_yaml.endswith(tail) and theirs_yaml.endswith(tail)


# -- pflag's boolean forms ------------------------------------------------------------------------------

def test_pflag_boolean_forms(cluster, objects) -> None:
    every = names(plugin(cluster, "claims", "--all", "--all-namespaces=true", "-l", SET, "-o", "name",
                         check=True).stdout)
    assert every == names(kubectl(cluster, "get", "pvc", "--all-namespaces=true", "-l", SET, "-o", "name").stdout)
    assert sorted(every) == sorted(f"{P}{n}" for n, _ in CLAIMS)
    table = plugin(cluster, "claims", "--all", "-A=false", "-n", NS, "--no-headers=true", check=True).stdout
    theirs = kubectl(cluster, "get", "pvc", "-A=false", "-n", NS, "--no-headers=true").stdout
    assert [line.split()[0] for line in table.splitlines()] == [line.split()[0] for line in theirs.splitlines()]
    assert not table.startswith("NAME") and len(table.splitlines()) == 3
    once = plugin(cluster, "leftovers", "--all", "-l", SET, "--watch=false", "-o", "name", timeout=60, check=True)
    assert names(once.stdout) == names(kubectl(cluster, "get", "pv", "-l", SET, "--watch=false", "-o", "name").stdout)
    for flag in ("-A=maybe", "--all-namespaces=maybe", "--watch=2", "-w=yes", "--no-headers=on"):
        ours = plugin(cluster, "claims", flag)
        theirs = kubectl(cluster, "get", "pvc", flag, check=False)
        assert (ours.returncode, ours.stdout, theirs.returncode) == (2, "", 1), flag
        assert after_error(ours.stderr) == after_error(theirs.stderr), flag


# -- --watch ------------------------------------------------------------------------------------------

def started(watches: list[Watch], cluster, *args: str, ready: Any) -> Watch:
    watch = Watch(cluster.kubeconfig("reader"), *args, settle=0.2)
    watches.append(watch)
    watch.until("the initial list", ready)
    return watch


def test_watch_leftovers_shows_a_pv_turning_released(cluster, objects, watches) -> None:
    watch = started(watches, cluster, "leftovers", "-w", ready=lambda d: d["name"] == f"{P}pv-rel")
    pv = f"{P}pv-w"
    apply(cluster, host_path_pv(pv, storage_class=f"{P}std", claim=(NS, "w-gone")),
          claim(NS, "w-gone", storage_class=f"{P}std"))
    wait_pv_phase(cluster, pv, "Bound")
    delete_claim(cluster, NS, "w-gone")
    line = watch.until(f"{pv} Released", lambda d: d["name"] == pv)
    assert (line["change"], line["phase"], line["claim"], line["claim_missing"]) == (
        "appeared", "Released", f"{NS}/w-gone", True)
    assert watch.proc.poll() is None
    assert watch.interrupt() == (130, "")


def test_watch_claims_shows_a_failed_resize(cluster, objects, watches) -> None:
    ns, cls, driver = f"{P}resize", f"{P}csi", f"{P}csi.example.com"
    apply(cluster, namespace(ns), storage_class(cls, provisioner=driver, reclaim="Retain", expansion=True))
    bound_csi_claim(cluster, ns, "grow", storage_class=cls, driver=driver)
    watch = started(watches, cluster, "claims", "-A", "-w", ready=lambda d: d["name"] == f"{P}c-z")
    # As the resizer would write it, as admin through the status subresource.
    write_status(cluster, ns, "grow", resize_failed_status())
    # No Pod uses the claim, so it may already be a row (unused): the resize then changes it.
    line = watch.until("the failed resize", lambda d: (d["namespace"], d["name"]) == (ns, "grow")
                       and bool(d["allocated_resource_statuses"]))
    assert line["change"] in ("appeared", "changed")
    assert line["allocated_resource_statuses"] == {"storage": "ControllerResizeInfeasible"}
    assert "resize-failed" in [problem["kind"] for problem in line["problems"]]
    assert watch.interrupt() == (130, "")


def test_watch_classes_shows_a_second_default(cluster, objects, watches) -> None:
    first, second = f"{P}default-1", f"{P}default-2"
    apply(cluster, storage_class(first, default=True))
    watch = started(watches, cluster, "classes", "--watch", ready=lambda d: d["name"] == first)
    apply(cluster, storage_class(second, default=True))
    line = watch.until(second, lambda d: d["name"] == second)
    assert line["change"] == "appeared" and line["is_default"] is True
    assert "multiple-defaults" in [finding["kind"] for finding in line["findings"]]
    assert watch.interrupt() == (130, "")


def test_watch_into_a_closed_pipe_exits_quietly(cluster, objects) -> None:
    command = [PLUGIN, "classes", "-w", "-o", "jsonl", "--kubeconfig", str(cluster.kubeconfig("reader"))]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        readable, _, _ = select.select([proc.stdout], [], [], 60)
        assert readable and json.loads(proc.stdout.readline())["change"] == "appeared"
        proc.stdout.close()  # what `| head -1` does once it has its line
        apply(cluster, storage_class(f"{P}after-the-reader-left"))  # the next line meets the closed pipe
        assert proc.wait(timeout=60) == 141
        assert proc.stderr.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- -v ---------------------------------------------------------------------------------------------

RESPONSE = re.compile(r'"Response" verb="GET" url="([^"]+)" status="200 OK"')


def _minor(kubectl: str) -> int:
    """The minor version kubectl itself reports (`version --client -o json`), 0 when it does not answer so."""
    import json

    done = subprocess.run([kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=60, check=False)
    try:
        return int("".join(c for c in json.loads(done.stdout)["clientVersion"]["minor"] if c.isdigit()))
    except (ValueError, KeyError, TypeError):
        return 0


def structured_kubectl() -> str:
    """A kubectl that logs requests as `"Response" verb=... url=... status=...` (1.33+). The kubectl on PATH is
    asked for its version; gcloud's dispatcher (which answers 1.32 without a server) keeps its versions beside it
    as kubectl.1.NN, and the newest of those is taken when the one on PATH is older."""
    on_path = shutil.which("kubectl") or "kubectl"
    if _minor(on_path) >= 33:
        return on_path
    real = Path(os.path.realpath(on_path))
    found = sorted((_minor(str(p)), str(p)) for p in real.parent.glob("kubectl.1.*"))
    if not found or found[-1][0] < 33:
        pytest.fail("no kubectl 1.33+ on this machine to compare -v=6 lines with: the oracle is missing")
    return found[-1][1]


def test_v6_logs_each_request_as_kubectl_does(cluster, objects) -> None:
    newer = structured_kubectl()
    ours = plugin(cluster, "classes", "-l", "team", "-v", "6", check=True)
    theirs = subprocess.run([newer, "--kubeconfig", str(cluster.kubeconfig("reader")), "get", "sc", "-l", "team",
                             "-v=6"], capture_output=True, text=True, timeout=60, check=False)
    assert theirs.returncode == 0, theirs.stderr
    our_urls = [m.group(1) for m in map(RESPONSE.search, ours.stderr.splitlines()) if m]
    their_urls = [m.group(1) for m in map(RESPONSE.search, theirs.stderr.splitlines()) if m]
    classes_url = f"{cluster.server}/apis/storage.k8s.io/v1/storageclasses?labelSelector=team&limit=500"
    assert classes_url in our_urls and classes_url in their_urls
    line = next(logged for logged in ours.stderr.splitlines() if classes_url in logged)
    assert re.fullmatch(r'I\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ round_trippers\.go(:\d+)?\] "Response" verb="GET" '
                        r'url="[^"]+" status="200 OK" milliseconds=\d+', line), line
    assert f"{P}std " in ours.stdout and "Response" not in ours.stdout
    # A refusal is logged the same way: status="403 Forbidden".
    refused = plugin(cluster, "claims", "-A", "-v", "6", user="pvonly")
    theirs = subprocess.run([newer, "--kubeconfig", str(cluster.kubeconfig("pvonly")), "get", "pvc", "-A", "-v=6"],
                            capture_output=True, text=True, timeout=60, check=False)
    forbidden = re.compile(r'"Response" verb="GET" url="([^"]+)" status="403 Forbidden"')
    assert refused.returncode == theirs.returncode == 1
    our_403 = [m.group(1) for m in map(forbidden.search, refused.stderr.splitlines()) if m]
    their_403 = [m.group(1) for m in map(forbidden.search, theirs.stderr.splitlines()) if m]
    assert our_403 and our_403[0] == their_403[0] == f"{cluster.server}/api/v1/persistentvolumeclaims?limit=500"


def test_v9_masks_the_token_as_kubectl_does(cluster, objects, token, tmp_path: Path) -> None:
    newer = structured_kubectl()
    env = no_kubeconfig(tmp_path)
    flags = ["-s", cluster.server, "--token", token, "--certificate-authority", str(cluster.pki / "ca.crt")]
    ours = plugin_bare("classes", "-l", "team", "-v", "9", *flags, env=env)
    theirs = bare(["get", "sc", "-l", "team", "-v=9", *flags], env, kubectl_binary=newer)
    assert ours.returncode == theirs.returncode == 0, ours.stderr[-2000:]
    for stderr in (ours.stderr, theirs.stderr):
        assert '-H "Authorization: Bearer <masked>"' in stderr
    assert token not in ours.stderr and token not in ours.stdout
    assert any(RESPONSE.search(logged) for logged in ours.stderr.splitlines())
