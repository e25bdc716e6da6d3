"""The Containerfile, built by buildah over a stand-in for its base image (no registry is reachable here, nor a
container engine; see tests/container_root.py for what stands in and why), and its runtime contract as deploy/base
states it: the exporter runs in-cluster (the Pod's ServiceAccount files at their real path, bound to the ClusterRole
deploy/base binds) as uid and gid 65532 with no supplementary group and no capability, as PID 1, on a read-only
root holding no shell; it answers /healthz and /metrics with a finding of the test plane, ends on SIGTERM, leaves
the image's files as they were and, by the audit log, only read the API.

bubblewrap (Debian's package) is the runtime: uid 65532 gets its own user, mount and PID namespaces, and the
network stays the host's so that the control plane on loopback is reachable.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import container_root
from container_root import SERVICEACCOUNT, Image
from loopback import free_port
from scenarios import apply, host_path_pv, wait_for

DEPLOYMENT = container_root.ROOT / "deploy" / "base" / "deployment.yaml"
BINDING = container_root.ROOT / "deploy" / "base" / "clusterrolebinding.yaml"
NAMESPACE, ACCOUNT = "container-sa", "pvleft"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not (shutil.which("bwrap") and shutil.which("buildah")),
                       reason="needs Debian's buildah and bubblewrap packages (apt-get install buildah bubblewrap)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="runs the image's process as uid 65532: needs root to switch to it"),
]


@pytest.fixture(scope="module")
def image() -> Iterator[Image]:
    # Not pytest's tmp_path: that is private to root, and uid 65532 must reach the image's files to bind them.
    workdir = Path(tempfile.mkdtemp(prefix="pvleft-image-"))
    workdir.chmod(0o755)
    try:
        built = container_root.build(workdir)
        yield built
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def as_image_user(image: Image, argv: list[str], **kwargs) -> subprocess.Popen[str]:
    uid, gid = image.user
    return subprocess.Popen(argv, user=uid, group=gid, extra_groups=[], text=True, **kwargs)


def site_packages(image: Image) -> Path:
    (found,) = (image.root / "opt" / "pvleft" / "lib").glob("python3*/site-packages")
    return found


def test_the_image_is_configured_as_the_containerfile_says_and_its_entrypoint_needs_no_shell(image: Image) -> None:
    config = image.config
    assert config["User"] == "65532:65532" and list(config["ExposedPorts"]) == ["9479/tcp"]
    assert config["Entrypoint"] == ["/opt/pvleft/bin/kubectl-pvleft"] and config["Cmd"] == ["serve"]
    assert image.env["PATH"].startswith("/opt/pvleft/bin:/usr/local/bin:") and image.env["PYTHONDONTWRITEBYTECODE"] == "1"
    script = image.root / config["Entrypoint"][0].lstrip("/")
    # Exec form, and a console script the kernel starts from its #! line (pip writes a /bin/sh trampoline instead
    # when the venv's path is too long for one): nothing on the way needs a shell.
    assert script.read_text().splitlines()[0] == "#!/opt/pvleft/bin/python", script.read_text()[:200]
    python = image.root / "opt" / "pvleft" / "bin" / "python"
    assert os.readlink(python) == "/usr/local/bin/python"  # the base's, which the final stage has too
    assert not [p for p in ("bin/sh", "usr/bin/sh", "bin/bash", "usr/bin/bash", "bin/busybox")
                if (image.root / p).exists()]
    installed = {p.name.split("-")[0].lower() for p in site_packages(image).glob("*.dist-info")}
    # the package, the serve extra and the two cloud extras the Containerfile names
    assert {"kubectl_pvleft", "prometheus_client", "waitress", "google_cloud_compute", "google_cloud_billing",
            "boto3"} <= installed
    assert not (site_packages(image) / "kubectl_pvleft" / "__init__.py").is_symlink()  # installed, not linked


PROBE = """
import os, shutil, sys
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
denied = {}
for path in ("/", "/tmp", "/opt/pvleft", "/usr/local/lib", os.environ["HOME"]):
    try:
        open(os.path.join(path, "written-by-the-probe"), "w").close()
    except OSError as exc:
        denied[path] = exc.strerror
print(json.dumps({"ids": [os.getuid(), os.getgid(), os.getgroups()], "pid": os.getpid(),
                  "shell": [shutil.which(s) for s in ("sh", "bash", "dash", "busybox")] + [os.path.exists("/bin/sh")],
                  "cap_eff": status["CapEff"].strip(), "no_new_privs": status["NoNewPrivs"].strip(), "denied": denied}))
"""


def test_the_sandbox_is_the_contract(image: Image) -> None:
    """The runtime itself is checked: as the image's USER, nothing anywhere on / is writable and no shell exists."""
    env = {**image.env, "HOME": "/"}
    probe = as_image_user(image, image.sandbox(["/opt/pvleft/bin/python", "-c", "import json" + PROBE], env=env),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = probe.communicate(timeout=60)
    assert probe.returncode == 0, err
    seen = json.loads(out)
    assert seen["ids"] == [*deployment_ids(), []] and seen["pid"] == 1
    assert seen["shell"] == [None, None, None, None, False]
    assert seen["cap_eff"] == "0000000000000000" and seen["no_new_privs"] == "1"
    assert seen["denied"] == dict.fromkeys(("/", "/tmp", "/opt/pvleft", "/usr/local/lib"), "Read-only file system")


def pod_spec() -> dict:
    return yaml.safe_load(DEPLOYMENT.read_text())["spec"]["template"]["spec"]


def deployment_ids() -> list[int]:
    """The uid and gid the Deployment runs as: the image's USER must be them (runAsNonRoot refuses uid 0)."""
    context = pod_spec()["securityContext"]
    assert context["runAsNonRoot"] is True and context["runAsUser"] != 0
    return [context["runAsUser"], context["runAsGroup"]]


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


def service_account_files(cluster, directory: Path, uid: int, gid: int) -> None:
    """What the kubelet projects: a token readable by the Pod's runAsUser only, the CA and the namespace."""
    directory.mkdir(mode=0o755)
    token = directory / "token"
    token.write_text(cluster.kubectl("create", "token", ACCOUNT, "-n", NAMESPACE).stdout.strip())
    token.chmod(0o600)
    os.chown(token, uid, gid)
    (directory / "ca.crt").write_bytes((cluster.pki / "ca.crt").read_bytes())
    (directory / "namespace").write_text(NAMESPACE)
    for name in ("ca.crt", "namespace"):
        (directory / name).chmod(0o644)


def descendant_running(parent: int, program: str) -> int:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    todo = list(children.get(parent, []))
    while todo:
        pid = todo.pop()
        try:
            if program.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                return pid
        except OSError:
            continue
        todo += children.get(pid, [])
    raise AssertionError(f"no process running {program} under {parent}")


def test_serve_in_cluster_as_65532_on_a_read_only_root(cluster, image: Image, tmp_path: Path) -> None:
    role = yaml.safe_load(BINDING.read_text())["roleRef"]["name"]  # the ClusterRole deploy/base binds
    cluster.kubectl("create", "namespace", NAMESPACE, check=False)
    cluster.kubectl("create", "serviceaccount", ACCOUNT, "-n", NAMESPACE)
    cluster.kubectl("create", "clusterrolebinding", "container-pvleft", f"--clusterrole={role}",
                    f"--serviceaccount={NAMESPACE}:{ACCOUNT}")
    account = image.workdir / "serviceaccount"
    service_account_files(cluster, account, *image.user)
    pv = host_path_pv("container-leftover", storage_class="container-none", size="2Gi")
    pv["spec"]["claimRef"] = {"namespace": "container-gone", "name": "gone", "uid": "00000000-0000-0000-0000-0000000000c0"}
    apply(cluster, pv)
    # The Deployment's arguments, on a free port: the network is the host's, where 9479 may be taken.
    args = pod_spec()["containers"][0]["args"]
    assert f"--listen=:{next(iter(image.config['ExposedPorts'])).split('/')[0]}" in args
    port = free_port()
    args = [f"--listen=:{port}" if a.startswith("--listen=") else a for a in args]
    env = {**image.env, "HOME": "/", "HOSTNAME": "pvleft-exporter", "KUBERNETES_SERVICE_HOST": "127.0.0.1",
           "KUBERNETES_SERVICE_PORT": cluster.server.rsplit(":", 1)[1], "PVLEFT_SERVE_JUDGE_SECONDS": "0.2"}
    before = container_root.tree(image.root)
    log = (tmp_path / "serve.log").open("w+")
    entrypoint = image.config["Entrypoint"]
    process = as_image_user(image, image.sandbox(entrypoint + args, ["--ro-bind", str(account), SERVICEACCOUNT],
                                                 env=env), stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for("the exporter's /healthz (or its end)",
                 lambda: process.poll() is not None or fetch(f"{url}/healthz") == (200, "ok\n"), timeout=90)
        assert process.poll() is None, "serve ended"
        found = wait_for("the leftover's series", lambda: 'name="container-leftover"' in fetch(f"{url}/metrics")[1]
                         and fetch(f"{url}/metrics")[1], timeout=60)
        assert "pvleft_stream_up" in found and 'analysis="leftovers"' in found
        pid = descendant_running(process.pid, entrypoint[0])
        status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        uid, gid = deployment_ids()
        assert status["Uid"].split() == [str(uid)] * 4 and status["Gid"].split() == [str(gid)] * 4
        assert status["Groups"].strip() == "" and status["CapEff"].strip() == "0000000000000000"
        assert status["NSpid"].split()[-1] == "1"  # PID 1 of its namespace, as a container's entrypoint
        os.kill(pid, signal.SIGTERM)  # what the kubelet sends; PID 1 ignores it unless it handles it
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.seek(0)
        output = log.read()
        print(output)  # shown when a test fails
        cluster.kubectl("delete", "pv", "container-leftover", "--wait=false", check=False)
        cluster.kubectl("delete", "clusterrolebinding", "container-pvleft", check=False)
        cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)
    assert "Traceback" not in output and "Read-only file system" not in output and "ermission denied" not in output
    assert container_root.tree(image.root) == before  # the image's files: none added, none changed
    events = cluster.audit_events(f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}")
    verbs = {e["verb"] for e in events if e.get("user", {}).get("username") == f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"}
    assert {"list", "watch"} <= verbs <= {"get", "list", "watch"}, sorted(verbs)
