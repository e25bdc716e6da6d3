"""The krew archive and manifest, generated: never a hand-edited hash.

``archive``  packs one platform's bundle with LICENSE, clusterrole.yaml and the completion wrapper into
             ``kubectl-pvleft-VERSION-OS-ARCH.tar.gz`` reproducibly (sorted, mtime 0, owner 0, normalized
             modes, symlinks followed since krew extracts none, gzip without name or time), and writes the
             manifest's platform entry for it beside it (``.platform.json``: selector, uri, sha256, files, bin).
``manifest`` writes krew-manifest.yaml from plugin/krew-manifest.head.yaml and every platform entry of
             this version in a folder: the release workflow runs it on all platforms' entries, release.sh on one.
             The caveats are generated from plugin/clusterrole.yaml, so they name every rule the role has.

No manifest is committed: a sha256 is only true of the archive it was computed from, and the bundle inside is
built per platform on the release runners (PyInstaller's output depends on the Python and libraries of the
machine), so a committed one could never be proved. The release workflow writes krew-manifest.yaml and
publishes it beside the archives.

Standard library only, so any CI runner's Python runs it. Usage: python plugin/krew.py --help
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import platform
import re
import stat
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME = "kubectl-pvleft"
DOWNLOAD_BASE = "https://github.com/kubectl-pvleft/kubectl-pvleft/releases/download"
COMPLETION_WRAPPER = "kubectl_complete-pvleft"
MACHINE_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def package_version() -> str:
    """``vX.Y.Z`` from kubectl_pvleft/__init__.py, read as text: building must not need the dependencies."""
    text = (ROOT / "kubectl_pvleft" / "__init__.py").read_text()
    match = re.search(r'^__version__\s*=\s*"([^"]+)"', text, re.M)
    if not match:
        raise SystemExit("error: no __version__ in kubectl_pvleft/__init__.py")
    return "v" + match.group(1)


def host_platform() -> tuple[str, str]:
    os_name = {"Linux": "linux", "Darwin": "darwin", "Windows": "windows"}.get(platform.system())
    arch = MACHINE_ARCH.get(platform.machine().lower())
    if not os_name or not arch:
        raise SystemExit(f"error: no krew platform for {platform.system()}/{platform.machine()}")
    return os_name, arch


def _entries(stage: list[tuple[str, Path]]) -> list[tuple[str, Path]]:
    """(name in the archive, path on disk) for every file and folder, parents first, sorted by name."""
    found: list[tuple[str, Path]] = []
    for name, path in stage:
        found.append((name, path))
        if path.is_dir():
            for dirpath, dirnames, filenames in os.walk(path, followlinks=True):
                dirnames.sort()
                rel = Path(dirpath).relative_to(path).as_posix()
                prefix = name if rel == "." else f"{name}/{rel}"
                found += [(f"{prefix}/{d}", Path(dirpath, d)) for d in dirnames]
                found += [(f"{prefix}/{f}", Path(dirpath, f)) for f in filenames]
    return sorted(found, key=lambda entry: entry[0])


def write_archive(stage: list[tuple[str, Path]], archive: Path) -> str:
    """Pack the staged paths reproducibly; return the archive's sha256."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    with open(archive, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, path in _entries(stage):
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            mode = path.stat().st_mode  # follows symlinks: krew extracts only files and folders
            if stat.S_ISDIR(mode):
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.mode = 0o755 if mode & 0o111 else 0o644
                info.size = path.stat().st_size
                with open(path, "rb") as data:
                    tar.addfile(info, data)
    return hashlib.sha256(archive.read_bytes()).hexdigest()


def platform_entry(os_name: str, arch: str, uri: str, sha256: str) -> dict:
    exe = ".exe" if os_name == "windows" else ""
    files = [{"from": f"{NAME}/*", "to": "."}, {"from": "LICENSE", "to": "."}, {"from": "clusterrole.yaml", "to": "."}]
    if os_name != "windows":  # the wrapper is a POSIX shell script
        files.append({"from": COMPLETION_WRAPPER, "to": "."})
    return {"selector": {"matchLabels": {"os": os_name, "arch": arch}}, "uri": uri, "sha256": sha256,
            "files": files, "bin": NAME + exe}


def cmd_archive(args: argparse.Namespace) -> None:
    bundle = Path(args.bundle)
    os_name, arch = (args.os, args.arch) if args.os and args.arch else host_platform()
    exe = ".exe" if os_name == "windows" else ""
    if not (bundle / (NAME + exe)).is_file():
        raise SystemExit(f"error: {bundle} holds no {NAME}{exe}: build it with plugin/build-bundle.sh")
    version = args.version or package_version()
    stage = [(NAME, bundle), ("LICENSE", ROOT / "LICENSE"), ("clusterrole.yaml", ROOT / "plugin" / "clusterrole.yaml")]
    if os_name != "windows":
        stage.append((COMPLETION_WRAPPER, ROOT / "plugin" / COMPLETION_WRAPPER))
    name = f"{NAME}-{version}-{os_name}-{arch}.tar.gz"
    archive = Path(args.out) / name
    sha256 = write_archive(stage, archive)
    entry = platform_entry(os_name, arch, f"{args.download_base}/{version}/{name}", sha256)
    Path(f"{archive}.platform.json").write_text(json.dumps(entry, indent=2) + "\n")
    print(f"{archive} {sha256}")


def _platform_yaml(entry: dict) -> str:
    labels = "".join(f"        {key}: {value}\n" for key, value in entry["selector"]["matchLabels"].items())
    files = "".join(f"    - from: {f['from']}\n      to: {f['to']}\n" for f in entry["files"])
    return (f"  - selector:\n      matchLabels:\n{labels}"
            f"    uri: {entry['uri']}\n    sha256: {entry['sha256']}\n    files:\n{files}    bin: {entry['bin']}\n")


def role_rules(text: str) -> list[tuple[str, list[str], list[str]]]:
    """(apiGroup, resources, verbs) of each rule of clusterrole.yaml, read as text (this script needs no YAML
    library): the role is written with one-line flow lists, which tests/test_krew_unit.py holds against a YAML
    parser's reading."""
    rules: list[tuple[str, list[str], list[str]]] = []
    for block in re.split(r"^  - ", text.split("\nrules:\n", 1)[1], flags=re.M)[1:]:
        lists = {key: re.findall(r'"([^"]*)"', value)
                 for key, value in re.findall(r"^\s*(apiGroups|resources|verbs): \[(.*)\]\s*$", block, re.M)}
        rules += [(group, lists["resources"], lists["verbs"]) for group in lists["apiGroups"]]
    return rules


def _words(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def caveats(role_text: str) -> str:
    """What a krew user must do before the first run, from the role itself, and what the bundle leaves out."""
    rules = role_rules(role_text)
    verbs = sorted({verb for _, _, rule_verbs in rules for verb in rule_verbs},
                   key=["get", "list", "watch"].index)  # anything else would fail here: the role is read-only
    groups = [f"{_words(resources)}" + (f" ({group})" if group else "") for group, resources, _ in rules]
    needs = (f"It needs {_words(verbs)} on {'; '.join(groups)}: apply the pvleft-reader ClusterRole in "
             "clusterrole.yaml (in the plugin's folder) and bind it.")
    rest = ("This program carries the cluster commands. serve (the Prometheus exporter), mcp and the cloud "
            "censuses (--project, --aws-region, --azure-subscription) need the Python package with their extras, "
            "e.g. pipx install 'kubectl-pvleft[serve,mcp,gcp,aws,azure]'; the container image "
            "ghcr.io/kubectl-pvleft/kubectl-pvleft has serve and the censuses.")
    lines = [line for paragraph in (needs, rest) for line in [*_wrap(paragraph), ""]][:-1]
    return "".join(f"    {line}\n" if line else "\n" for line in lines)


def _wrap(text: str, width: int = 100) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line]


def render_manifest(head: str, version: str, entries: list[dict], role_text: str) -> str:
    if not entries:
        raise SystemExit(f"error: no platform entries for {version}: run `plugin/krew.py archive` first")
    entries = sorted(entries, key=lambda e: (e["selector"]["matchLabels"]["os"], e["selector"]["matchLabels"]["arch"]))
    head = head.replace("{version}", version).replace("    {caveats}\n", caveats(role_text))
    return head.rstrip("\n") + "\n  platforms:\n" + "".join(map(_platform_yaml, entries))


def cmd_manifest(args: argparse.Namespace) -> None:
    version = args.version or package_version()
    entries = [json.loads(p.read_text()) for p in sorted(Path(args.platforms).glob(f"{NAME}-{version}-*.platform.json"))]
    head = (ROOT / "plugin" / "krew-manifest.head.yaml").read_text()
    role = (ROOT / "plugin" / "clusterrole.yaml").read_text()
    Path(args.out).write_text(render_manifest(head, version, entries, role))
    print(f"{args.out}: {len(entries)} platform(s)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="plugin/krew.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("archive", help="pack one platform's bundle and write its manifest entry")
    p.add_argument("--bundle", required=True, help="the PyInstaller folder (dist/kubectl-pvleft)")
    p.add_argument("--out", required=True, help="folder for the archive and its .platform.json")
    p.add_argument("--os", help="krew os (default: this machine's)")
    p.add_argument("--arch", help="krew arch (default: this machine's)")
    p.add_argument("--version", help="vX.Y.Z (default: the package's)")
    p.add_argument("--download-base", default=DOWNLOAD_BASE, help="release download URL, without /VERSION/FILE")
    p.set_defaults(run=cmd_archive)
    p = sub.add_parser("manifest", help="write the krew manifest from every platform entry of this version")
    p.add_argument("--platforms", required=True, help="folder holding the .platform.json files")
    p.add_argument("--out", required=True, help="the manifest to write")
    p.add_argument("--version", help="vX.Y.Z (default: the package's)")
    p.set_defaults(run=cmd_manifest)
    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    sys.exit(main())
