"""The krew install, end to end and offline: krew and validate-krew-manifest built from sigs.k8s.io/krew at a
pinned version, the archive and manifest plugin/release.sh makes, `krew install --manifest --archive` into a
temporary KREW_ROOT, and the installed program run through kubectl with a PATH that holds no Python at all.
It must print what the pip-installed plugin prints."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import kubectl_pvleft
from plugin_runner import run_plugin
from scenarios import apply, namespace, seed_mariadb
from test_completion_unit import subcommands

ROOT = Path(__file__).resolve().parent.parent
KREW_VERSION = "v0.4.3"  # the newest release the Go module proxy serves
PIP_BIN = Path(sys.executable).parent

# Building the bundle (PyInstaller) and krew from source take minutes on a cold cache: past the default bound.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the krew archive CI proves is linux")]


def run(command: list, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, check=False, **kwargs)
    assert result.returncode == 0, f"{command} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def krew_tools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gobin = tmp_path_factory.mktemp("gobin")
    run(["go", "install", f"sigs.k8s.io/krew/cmd/krew@{KREW_VERSION}",
         f"sigs.k8s.io/krew/cmd/validate-krew-manifest@{KREW_VERSION}"],
        env=dict(os.environ, GOBIN=str(gobin), GOFLAGS="-mod=mod"), timeout=1200)
    return gobin


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The archive and the manifest plugin/release.sh generates, the manifest named as krew-index wants it."""
    out = tmp_path_factory.mktemp("release")
    manifest = out / "pvleft.yaml"
    run(["bash", ROOT / "plugin" / "release.sh", out, manifest],
        env=dict(os.environ, BUNDLE_DIR=str(out / "bundle")), timeout=1800)
    archives = list(out.glob(f"kubectl-pvleft-v{kubectl_pvleft.__version__}-linux-*.tar.gz"))
    assert len(archives) == 1, archives
    return archives[0], manifest


@pytest.fixture(scope="module")
def krew_root(tmp_path_factory: pytest.TempPathFactory, krew_tools: Path, release: tuple[Path, Path]) -> Path:
    archive, manifest = release
    root = tmp_path_factory.mktemp("krew-root")
    run([krew_tools / "krew", "install", f"--manifest={manifest}", f"--archive={archive}"],
        env=dict(os.environ, KREW_ROOT=str(root), KREW_NO_UPGRADE_CHECK="1"), timeout=300)
    return root


@pytest.fixture(scope="module")
def no_python_path(tmp_path_factory: pytest.TempPathFactory, krew_root: Path) -> str:
    """kubectl's folder holds python3 here, so kubectl gets a folder of its own."""
    only_kubectl = tmp_path_factory.mktemp("only-kubectl")
    (only_kubectl / "kubectl").symlink_to(os.path.realpath(shutil.which("kubectl") or "kubectl"))
    path = f"{only_kubectl}{os.pathsep}{krew_root / 'bin'}"
    for name in ("python", "python3", f"python3.{sys.version_info.minor}", "sh", "env"):
        assert shutil.which(name, path=path) is None, name
    return path


def test_manifest_is_generated_from_the_archive(release: tuple[Path, Path]) -> None:
    import hashlib

    archive, manifest = release
    doc = yaml.safe_load(manifest.read_text())
    [platform] = doc["spec"]["platforms"]
    assert platform["sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert platform["uri"].endswith(f"/v{kubectl_pvleft.__version__}/{archive.name}")
    assert platform["selector"] == {"matchLabels": {"os": "linux", "arch": "amd64"}}
    assert doc["spec"]["version"] == f"v{kubectl_pvleft.__version__}"


def test_a_second_build_gives_the_manifests_sha(release: tuple[Path, Path], tmp_path: Path) -> None:
    """On one machine the bundle and its archive are byte for byte reproducible (PYTHONHASHSEED, mtime 0, sorted
    entries): building again gives the sha256 the manifest carries. Another machine's Python and libraries give
    another bundle, which is why no manifest is committed and each release runner writes its own entry."""
    _, manifest = release
    again = tmp_path / "again"
    run(["bash", ROOT / "plugin" / "build-bundle.sh", again], timeout=1800)
    packed = run([sys.executable, ROOT / "plugin" / "krew.py", "archive", "--bundle", again / "kubectl-pvleft",
                  "--out", tmp_path / "out"])
    [platform] = yaml.safe_load(manifest.read_text())["spec"]["platforms"]
    assert packed.stdout.split()[1] == platform["sha256"]


def test_validate_krew_manifest(krew_tools: Path, release: tuple[Path, Path], tmp_path: Path) -> None:
    _, manifest = release
    # Installing from the manifest's URI needs the network: krew install --archive does that part below.
    result = run([krew_tools / "validate-krew-manifest", "-manifest", manifest, "-skip-install"])
    assert "structural validation OK" in result.stderr
    # The validator does check what krew-index checks: a file named other than metadata.name fails.
    misnamed = tmp_path / "kubectl-pvleft.yaml"
    shutil.copy(manifest, misnamed)
    refused = subprocess.run([krew_tools / "validate-krew-manifest", "-manifest", misnamed, "-skip-install"],
                             capture_output=True, text=True, check=False)
    assert refused.returncode != 0 and 'plugin should be named "kubectl-pvleft"' in refused.stderr


@pytest.fixture(scope="module")
def validator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """krew-index's validator alone (no bundle, no krew): what checks the committed manifest."""
    gobin = tmp_path_factory.mktemp("validator")
    run(["go", "install", f"sigs.k8s.io/krew/cmd/validate-krew-manifest@{KREW_VERSION}"],
        env=dict(os.environ, GOBIN=str(gobin), GOFLAGS="-mod=mod"), timeout=1200)
    return gobin / "validate-krew-manifest"


def test_every_platforms_manifest_is_ready_to_submit(validator: Path, tmp_path: Path) -> None:
    """The manifest the release workflow assembles from all six platforms' entries (plugin/krew.py manifest, as
    in .github/workflows/release.yml), as the krew-index pull request carries it (plugins/pvleft.yaml). The
    archives here are stand-ins: the validator checks the manifest's structure, and the caveats generated from
    clusterrole.yaml."""
    entries = tmp_path / "entries"
    entries.mkdir()
    version = f"v{kubectl_pvleft.__version__}"
    for os_name in ("linux", "darwin", "windows"):
        for arch in ("amd64", "arm64"):
            bundle = tmp_path / f"{os_name}-{arch}" / "kubectl-pvleft"
            bundle.mkdir(parents=True)
            exe = bundle / ("kubectl-pvleft.exe" if os_name == "windows" else "kubectl-pvleft")
            exe.write_bytes(b"stand-in")
            run([sys.executable, ROOT / "plugin" / "krew.py", "archive", "--bundle", bundle, "--out", entries,
                 "--os", os_name, "--arch", arch])
    submitted = tmp_path / "pvleft.yaml"
    run([sys.executable, ROOT / "plugin" / "krew.py", "manifest", "--platforms", entries, "--out", submitted])
    assert len(yaml.safe_load(submitted.read_text())["spec"]["platforms"]) == 6
    assert yaml.safe_load(submitted.read_text())["spec"]["version"] == version
    result = run([validator, "-manifest", submitted, "-skip-install"])
    assert "structural validation OK" in result.stderr
    broken = tmp_path / "broken" / "pvleft.yaml"
    broken.parent.mkdir()
    broken.write_text(submitted.read_text().replace("shortDescription:", "shortDescriptions:"))
    refused = subprocess.run([validator, "-manifest", broken, "-skip-install"], capture_output=True, text=True,
                             check=False)
    assert refused.returncode != 0


def test_krew_installs_the_archive_with_its_license(krew_root: Path) -> None:
    # krew's record of the install (`krew list` would need the index, which is a git clone).
    receipt = yaml.safe_load((krew_root / "receipts" / "pvleft.yaml").read_text())
    assert receipt["metadata"]["name"] == "pvleft" and receipt["spec"]["version"] == f"v{kubectl_pvleft.__version__}"
    store = krew_root / "store" / "pvleft" / f"v{kubectl_pvleft.__version__}"
    # What validate-krew-manifest checks after its own install: a LICENSE file among the installed files.
    assert (store / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert (store / "clusterrole.yaml").is_file() and (store / "kubectl_complete-pvleft").is_file()
    assert os.path.realpath(krew_root / "bin" / "kubectl-pvleft") == str(store / "kubectl-pvleft")


def _pip_plugin(*args: str) -> subprocess.CompletedProcess:
    return run(["kubectl", "pvleft", *args], env=dict(os.environ, PATH=f"{PIP_BIN}{os.pathsep}{os.environ['PATH']}"))


def _bundle(path: str, home: Path, *args: str) -> subprocess.CompletedProcess:
    return run(["kubectl", "pvleft", *args], env={"PATH": path, "HOME": str(home)}, timeout=120)


def _without_age(table: str) -> list[list[str]]:
    """Table cells without the AGE column, which ticks between two runs."""
    rows = [re.split(r" {3,}", line.rstrip()) for line in table.splitlines()]
    age = rows[0].index("AGE")
    return [row[:age] + row[age + 1:] for row in rows]


def test_bundle_runs_without_python_and_prints_what_pip_prints(cluster, no_python_path: str, tmp_path: Path) -> None:
    seed_mariadb(cluster, ns="krew-mariadb", pv="krew-mariadb-pv")
    reader = str(cluster.kubeconfig("reader"))
    assert _bundle(no_python_path, tmp_path, "--version").stdout == _pip_plugin("--version").stdout
    assert _bundle(no_python_path, tmp_path, "--version").stdout.strip().endswith(kubectl_pvleft.__version__)

    bundled = _bundle(no_python_path, tmp_path, "leftovers", "--kubeconfig", reader)
    piped = _pip_plugin("leftovers", "--kubeconfig", reader)
    assert "krew-mariadb-pv" in bundled.stdout
    assert _without_age(bundled.stdout) == _without_age(piped.stdout)
    assert bundled.stderr == piped.stderr
    for output in ("jsonl", "yaml"):
        assert (_bundle(no_python_path, tmp_path, "leftovers", "--kubeconfig", reader, "-o", output).stdout
                == _pip_plugin("leftovers", "--kubeconfig", reader, "-o", output).stdout)
    # Errors are the same one line, with the same exit code.
    missing = [tmp_path / "missing.kubeconfig"]
    bad = subprocess.run(["kubectl", "pvleft", "leftovers", "--kubeconfig", *missing], capture_output=True,
                         text=True, env={"PATH": no_python_path, "HOME": str(tmp_path)}, check=False)
    bad_pip = run_plugin(missing[0], "leftovers")
    assert (bad.returncode, bad.stderr) == (bad_pip.returncode, bad_pip.stderr) and bad.returncode != 0


def test_completion_through_the_krew_install(cluster, krew_root: Path, no_python_path: str, tmp_path: Path) -> None:
    # As the README says: copy the wrapper from the plugin's folder to a folder on PATH.
    store = krew_root / "store" / "pvleft" / f"v{kubectl_pvleft.__version__}"
    on_path = tmp_path / "bin"
    on_path.mkdir()
    shutil.copy(store / "kubectl_complete-pvleft", on_path)
    env = {"PATH": f"{no_python_path}{os.pathsep}{on_path}", "HOME": str(tmp_path)}

    def complete(*words: str) -> list[str]:
        out = run(["kubectl", "__complete", "pvleft", *words], env=env).stdout.splitlines()
        assert out[-1].startswith(":")
        return [line.split("\t")[0] for line in out[:-1]]

    assert complete("") == subcommands()
    assert "--all-namespaces" in complete("claims", "--a")
    apply(cluster, namespace("krew-completion"))
    assert complete("--kubeconfig", str(cluster.kubeconfig("admin")), "-n", "krew-c") == ["krew-completion"]
