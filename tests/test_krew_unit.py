"""The krew package: the archive release.sh builds installs as the manifest says and runs through kubectl."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import yaml

import kubectl_pvleft

ROOT = Path(__file__).resolve().parent.parent


def test_archive_matches_manifest_and_runs_through_kubectl(tmp_path: Path) -> None:
    manifest_copy = tmp_path / "krew-manifest.yaml"
    shutil.copy(ROOT / "krew-manifest.yaml", manifest_copy)
    out = subprocess.run(["bash", str(ROOT / "plugin" / "release.sh"), str(tmp_path / "dist"), str(manifest_copy)],
                         check=True, capture_output=True, text=True).stdout.split()
    archive, sha = Path(out[0]), out[1]
    manifest = yaml.safe_load(manifest_copy.read_text())
    assert manifest["kind"] == "Plugin" and manifest["metadata"]["name"] == "pvleft"
    assert manifest["spec"]["version"] == f"v{kubectl_pvleft.__version__}"
    platform = manifest["spec"]["platforms"][0]
    assert platform["sha256"] == sha
    assert platform["uri"].endswith(f"/v{kubectl_pvleft.__version__}/{archive.name}")

    # Install the way krew does: extract, copy each `from` to its `to`, put `bin` on PATH.
    unpacked, installed = tmp_path / "unpacked", tmp_path / "installed"
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    installed.mkdir()
    for entry in platform["files"]:
        source = unpacked / entry["from"]
        target = installed / entry["to"] / (source.name if entry["to"] == "." else "")
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
    assert (installed / platform["bin"]).is_file()
    env = dict(os.environ, PATH=f"{installed}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(["kubectl", "pvleft", "leftovers", "--help"], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: kubectl pvleft leftovers")


def test_committed_manifest_is_complete() -> None:
    manifest = yaml.safe_load((ROOT / "krew-manifest.yaml").read_text())
    platform = manifest["spec"]["platforms"][0]
    assert len(platform["sha256"]) == 64 and set(platform["sha256"]) <= set("0123456789abcdef")
    assert manifest["spec"]["shortDescription"] and "get, list and watch" in manifest["spec"]["description"]
