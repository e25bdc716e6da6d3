"""The krew archive and manifest generator (plugin/krew.py) and the committed manifest, without building a bundle:
archives are reproducible, the manifest is generated from the archives' entries, and versions agree."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

import kubectl_pvleft
from cli_runner import Result, invoke

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def _load_krew():
    spec = importlib.util.spec_from_file_location("krew_generator", ROOT / "plugin" / "krew.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KREW = _load_krew()


def krew(*args: str) -> Result:
    """`python plugin/krew.py ARGS` in this process: its main() with stdout and stderr captured. A SystemExit
    carrying a message ends as the interpreter ends it: the message on stderr, exit code 1."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = KREW.main(list(args)) or 0
        except SystemExit as exc:
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return Result(code, out.getvalue(), err.getvalue())


def fake_bundle(where: Path, exe: str = "kubectl-pvleft") -> Path:
    bundle = where / "kubectl-pvleft"
    (bundle / "_internal" / "lib").mkdir(parents=True)
    (bundle / exe).write_bytes(b"\x7fELF not really")
    (bundle / exe).chmod(0o700)
    (bundle / "_internal" / "lib" / "data.txt").write_text("data\n")
    (bundle / "_internal" / "lib" / "data.txt").chmod(0o600)
    (bundle / "_internal" / "alias.txt").symlink_to("lib/data.txt")
    return bundle


def archive(bundle: Path, out: Path, *extra: str) -> tuple[Path, str]:
    result = krew("archive", "--bundle", str(bundle), "--out", str(out), *extra)
    assert result.code == 0, result
    path, sha = result.stdout.split()
    return Path(path), sha


def test_archive_is_reproducible_and_holds_what_krew_extracts(tmp_path: Path) -> None:
    first, sha1 = archive(fake_bundle(tmp_path / "a"), tmp_path / "out1", "--os", "linux", "--arch", "amd64")
    bundle_b = fake_bundle(tmp_path / "b")
    os.utime(bundle_b / "kubectl-pvleft", (1, 1))  # other mtimes, same content
    second, sha2 = archive(bundle_b, tmp_path / "out2", "--os", "linux", "--arch", "amd64")
    assert first.read_bytes() == second.read_bytes() and sha1 == sha2 == hashlib.sha256(first.read_bytes()).hexdigest()
    assert first.name == f"kubectl-pvleft-v{kubectl_pvleft.__version__}-linux-amd64.tar.gz"

    with tarfile.open(first) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert list(members) == sorted(members)
    assert {"LICENSE", "clusterrole.yaml", "kubectl_complete-pvleft", "kubectl-pvleft/kubectl-pvleft",
            "kubectl-pvleft/_internal/lib/data.txt"} <= set(members)
    # krew extracts only files and folders: the symlink is stored as the file it points to.
    assert members["kubectl-pvleft/_internal/alias.txt"].isfile()
    assert all(m.mtime == 0 and m.uid == 0 and m.gid == 0 and m.uname == "" for m in members.values())
    assert members["kubectl-pvleft/kubectl-pvleft"].mode == 0o755
    assert members["kubectl-pvleft/_internal/lib/data.txt"].mode == 0o644
    assert first.read_bytes()[4:8] == b"\0\0\0\0"  # gzip header without a timestamp

    entry = json.loads(Path(f"{first}.platform.json").read_text())
    assert entry["sha256"] == sha1 and entry["bin"] == "kubectl-pvleft"
    assert entry["uri"] == ("https://github.com/kubectl-pvleft/kubectl-pvleft/releases/download/"
                            f"v{kubectl_pvleft.__version__}/{first.name}")


def test_windows_archive_runs_the_exe_and_has_no_shell_wrapper(tmp_path: Path) -> None:
    path, _ = archive(fake_bundle(tmp_path, "kubectl-pvleft.exe"), tmp_path / "out", "--os", "windows", "--arch", "amd64")
    entry = json.loads(Path(f"{path}.platform.json").read_text())
    assert entry["bin"] == "kubectl-pvleft.exe"
    assert "kubectl_complete-pvleft" not in {f["from"] for f in entry["files"]}


def test_manifest_lists_every_platform_entry_of_this_version(tmp_path: Path) -> None:
    out = tmp_path / "out"
    shas = {}
    for os_name, arch in (("linux", "arm64"), ("darwin", "amd64"), ("linux", "amd64")):
        shas[os_name, arch] = archive(fake_bundle(tmp_path / f"{os_name}-{arch}"), out, "--os", os_name, "--arch", arch)[1]
    archive(fake_bundle(tmp_path / "old"), out, "--os", "linux", "--arch", "amd64", "--version", "v0.0.1")  # not listed
    manifest = tmp_path / "pvleft.yaml"
    assert krew("manifest", "--platforms", str(out), "--out", str(manifest)).code == 0
    doc = yaml.safe_load(manifest.read_text())
    platforms = doc["spec"]["platforms"]
    assert [(p["selector"]["matchLabels"]["os"], p["selector"]["matchLabels"]["arch"]) for p in platforms] == [
        ("darwin", "amd64"), ("linux", "amd64"), ("linux", "arm64")]
    assert all(p["sha256"] == shas[p["selector"]["matchLabels"]["os"], p["selector"]["matchLabels"]["arch"]]
               for p in platforms)
    assert doc["spec"]["version"] == f"v{kubectl_pvleft.__version__}"


def test_manifest_refuses_to_be_written_without_archives(tmp_path: Path) -> None:
    result = krew("manifest", "--platforms", str(tmp_path), "--out", str(tmp_path / "m.yaml"))
    assert result.returncode != 0 and "no platform entries" in result.stderr and not (tmp_path / "m.yaml").exists()


def test_committed_manifest() -> None:
    manifest = yaml.safe_load((ROOT / "krew-manifest.yaml").read_text())
    spec = manifest["spec"]
    assert manifest["kind"] == "Plugin" and manifest["metadata"]["name"] == "pvleft"
    assert spec["shortDescription"] and "get, list and watch" in spec["description"]
    # Caveats say only what is really needed: the ClusterRole, no Python or pip.
    assert "ClusterRole" in spec["caveats"] and not any(w in spec["caveats"].lower() for w in ("python", "pip "))
    for platform in spec["platforms"]:
        assert len(platform["sha256"]) == 64 and set(platform["sha256"]) <= set("0123456789abcdef")
        labels = platform["selector"]["matchLabels"]
        archive = f"kubectl-pvleft-{spec['version']}-{labels['os']}-{labels['arch']}.tar.gz"
        assert platform["uri"].endswith(f"/{spec['version']}/{archive}")
    # The head the generator starts from is the committed manifest's top, word for word.
    head = (ROOT / "plugin" / "krew-manifest.head.yaml").read_text().replace("{version}", spec["version"])
    assert (ROOT / "krew-manifest.yaml").read_text().startswith(head.rstrip("\n") + "\n  platforms:\n")


def test_committed_manifest_is_what_the_generator_writes() -> None:
    """Stale = not what `make release` (plugin/krew.py manifest) would write for this version from the same
    platform entries: a version bump, a changed head or generator not carried into the committed file."""
    committed = (ROOT / "krew-manifest.yaml").read_text()
    entries = yaml.safe_load(committed)["spec"]["platforms"]
    head = (ROOT / "plugin" / "krew-manifest.head.yaml").read_text()
    rendered = KREW.render_manifest(head, KREW.package_version(), entries)
    assert committed == rendered, "krew-manifest.yaml is stale: run `make release` and commit krew-manifest.yaml"
    # The check can fail: another version renders another manifest.
    assert KREW.render_manifest(head, "v9.9.9", entries) != committed


def test_manifest_lists_only_platforms_the_release_workflow_builds() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    built = {(entry["os"], entry["arch"]) for entry in workflow["jobs"]["build"]["strategy"]["matrix"]["include"]}
    assert built == {(o, a) for o in ("linux", "darwin", "windows") for a in ("amd64", "arm64")}
    listed = {(p["selector"]["matchLabels"]["os"], p["selector"]["matchLabels"]["arch"])
              for p in yaml.safe_load((ROOT / "krew-manifest.yaml").read_text())["spec"]["platforms"]}
    assert listed and listed <= built
    # The assembling job writes the manifest with the same generator release.sh uses.
    assert "plugin/krew.py manifest" in WORKFLOW.read_text() and "plugin/krew.py archive" in WORKFLOW.read_text()


def test_versions_agree() -> None:
    """The package, the installed metadata, the manifest and --version say the same version."""
    version = kubectl_pvleft.__version__
    assert importlib.metadata.version("kubectl-pvleft") == version
    assert yaml.safe_load((ROOT / "krew-manifest.yaml").read_text())["spec"]["version"] == f"v{version}"
    shown = invoke("--version")
    assert shown.returncode == 0 and shown.stdout.split()[-1] == version


@pytest.mark.integration
def test_python_m_prints_the_version() -> None:
    shown = subprocess.run([sys.executable, "-m", "kubectl_pvleft", "--version"], capture_output=True, text=True, check=False)
    assert shown.returncode == 0 and shown.stdout.split()[-1] == kubectl_pvleft.__version__


@functools.cache
def console_scripts() -> dict[str, str]:
    """This distribution's console scripts (reading every installed distribution's entry points takes ~0.1 s)."""
    return {ep.name: ep.value for ep in importlib.metadata.entry_points(group="console_scripts")
            if ep.dist is not None and ep.dist.name == "kubectl-pvleft"}


@pytest.mark.parametrize("name", ["kubectl-pvleft", "kubectl_complete-pvleft"])
def test_console_scripts_declared(name: str) -> None:
    assert name in console_scripts()
