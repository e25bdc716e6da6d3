"""The krew archive and manifest generator (plugin/krew.py), without building a bundle: archives are
reproducible, the manifest is generated from the archives' entries and its caveats from the ClusterRole, no
manifest (no sha256) is committed, and versions agree."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import os
import re
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


def _manifest(entries: list[dict], version: str = "") -> str:
    return KREW.render_manifest((ROOT / "plugin" / "krew-manifest.head.yaml").read_text(),
                                version or KREW.package_version(), entries,
                                (ROOT / "plugin" / "clusterrole.yaml").read_text())


def test_no_manifest_is_committed() -> None:
    """A sha256 is true of one archive, and the bundle inside is built per platform on the release runners: a
    committed manifest would carry a sha no archive of HEAD has (krew: "checksum does not match"). The release
    workflow writes it from the archives it built; release.sh writes it into dist/, which git ignores."""
    tracked = subprocess.run(["git", "ls-files", "--", "*.yaml", "*.yml"], cwd=ROOT, capture_output=True,
                             text=True, check=False)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    assert tracked.stdout.strip(), "git ls-files listed nothing: the check would prove nothing"
    holding_a_sha = [path for path in tracked.stdout.split() if re.search(r"^\s*sha256:", (ROOT / path).read_text(), re.M)]
    assert holding_a_sha == []
    assert "/krew-manifest.yaml" in (ROOT / ".gitignore").read_text().split()
    assert 'manifest=${2:-$out/krew-manifest.yaml}' in (ROOT / "plugin" / "release.sh").read_text()


def test_manifest_head_renders_a_krew_manifest() -> None:
    entry = KREW.platform_entry("linux", "amd64", "https://example.invalid/v1/kubectl-pvleft-v1-linux-amd64.tar.gz",
                                "a" * 64)
    manifest = yaml.safe_load(_manifest([entry]))
    spec = manifest["spec"]
    assert manifest["kind"] == "Plugin" and manifest["metadata"]["name"] == "pvleft"
    assert spec["shortDescription"] and "get, list and watch" in spec["description"]
    assert spec["version"] == f"v{kubectl_pvleft.__version__}" and spec["platforms"] == [entry]
    assert "{" not in yaml.safe_dump(manifest)  # every placeholder filled


def test_caveats_name_every_rule_of_the_clusterrole() -> None:
    """Generated from plugin/clusterrole.yaml: every resource of every rule, with its API group, and the verbs."""
    role_text = (ROOT / "plugin" / "clusterrole.yaml").read_text()
    role = yaml.safe_load(role_text)
    # krew.py reads the role as text (no YAML library there): the same rules a YAML parser reads.
    assert KREW.role_rules(role_text) == [(group, rule["resources"], rule["verbs"])
                                          for rule in role["rules"] for group in rule["apiGroups"]]
    caveats = " ".join(KREW.caveats(role_text).split())
    resources = [resource for rule in role["rules"] for resource in rule["resources"]]
    assert len(resources) >= 11 and all(re.search(rf"\b{resource}\b", caveats) for resource in resources)
    for rule in role["rules"]:
        for group in filter(None, rule["apiGroups"]):
            assert f"{rule['resources'][-1]} ({group})" in caveats
    assert caveats.startswith("It needs get, list and watch on ") and "ClusterRole in clusterrole.yaml" in caveats
    # Nothing the role does not grant: every plural-looking word before the colon is one of its resources.
    named = re.sub(r"\([^)]*\)", "", caveats.split(": apply")[0].split(" on ", 1)[1])  # API groups left out
    asked = re.findall(r"\b([a-z]+s)\b", named)
    assert set(asked) <= set(resources), set(asked) - set(resources)
    # A role with another rule gives other caveats: they follow the file.
    grown = role_text + '  - apiGroups: ["apps"]\n    resources: ["statefulsets"]\n    verbs: ["get", "list", "watch"]\n'
    assert "statefulsets (apps)" in " ".join(KREW.caveats(grown).split())
    # What the bundle leaves out, and where it is: no pip inside the bundle, so pipx with extras or the image.
    assert "pipx install 'kubectl-pvleft[serve,mcp,gcp,aws,azure]'" in caveats and "ghcr.io/" in caveats
    assert "pip install" not in caveats


def test_the_bundle_says_where_serve_and_the_clouds_are() -> None:
    """In the krew bundle (PyInstaller sets sys.frozen) there is no pip: the missing extras' lines say what the
    bundle carries and point at pipx with the extra, or the container image; a pip install keeps pip's line."""
    code = ("import sys; sys.frozen = {frozen}\n"
            "from kubectl_pvleft.clouds.aws import census as a; from kubectl_pvleft.clouds.gce import prices as g\n"
            "from kubectl_pvleft.errors import needs_extra\n"
            "print(a.INSTALL_HINT); print(g.INSTALL_HINT); print(needs_extra('serve', 'prometheus_client', 'serve'))")
    lines = {}
    for frozen in (True, False):
        result = subprocess.run([sys.executable, "-c", code.format(frozen=frozen)], capture_output=True, text=True,
                                check=True)
        lines[frozen] = result.stdout.splitlines()
    assert lines[False][0] == "--aws-region needs boto3: pip install 'kubectl-pvleft[aws]'"
    aws, gcp, serve = lines[True]
    assert aws.startswith("--aws-region needs boto3, which the krew bundle does not carry (")
    assert "pipx install 'kubectl-pvleft[aws]'" in aws and "pip install" not in aws
    assert "pipx install 'kubectl-pvleft[gcp]'" in gcp and "pipx install 'kubectl-pvleft[serve]'" in serve
    assert all("container image ghcr.io/kubectl-pvleft/kubectl-pvleft" in line for line in (aws, gcp, serve))


def test_manifest_lists_only_platforms_the_release_workflow_builds() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    built = {(entry["os"], entry["arch"]) for entry in workflow["jobs"]["build"]["strategy"]["matrix"]["include"]}
    assert built == {(o, a) for o in ("linux", "darwin", "windows") for a in ("amd64", "arm64")}
    # The assembling job writes the manifest with the same generator release.sh uses.
    assert "plugin/krew.py manifest" in WORKFLOW.read_text() and "plugin/krew.py archive" in WORKFLOW.read_text()


def test_versions_agree() -> None:
    """The package, the installed metadata, the generated manifest and --version say the same version."""
    version = kubectl_pvleft.__version__
    assert importlib.metadata.version("kubectl-pvleft") == version
    assert yaml.safe_load(_manifest([KREW.platform_entry("linux", "amd64", "u", "0" * 64)]))["spec"]["version"] == (
        f"v{version}")
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
