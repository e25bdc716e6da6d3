"""The release's Python half, as the release procedure builds it: an sdist and a wheel from this checkout with
`python -m build` (in its own isolated build environment, as PyPI's builders do), checked with `twine check
--strict` (the metadata and the README as the package index renders it), holding every module and both
console scripts. Nothing is uploaded."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import kubectl_pvleft

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(ROOT)],
                            check=False, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out


def test_sdist_and_wheel_pass_twine_check(dist: Path) -> None:
    version = kubectl_pvleft.__version__
    built = sorted(p.name for p in dist.iterdir())
    assert built == [f"kubectl_pvleft-{version}-py3-none-any.whl", f"kubectl_pvleft-{version}.tar.gz"]
    result = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, sorted(dist.iterdir()))],
                            check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.count("PASSED") == 2, result.stdout + result.stderr


def test_wheel_holds_every_module_and_both_console_scripts(dist: Path) -> None:
    version = kubectl_pvleft.__version__
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "kubectl_pvleft").rglob("*.py")}
    with zipfile.ZipFile(dist / f"kubectl_pvleft-{version}-py3-none-any.whl") as wheel:
        names = set(wheel.namelist())
        entry_points = wheel.read(f"kubectl_pvleft-{version}.dist-info/entry_points.txt").decode()
        metadata = wheel.read(f"kubectl_pvleft-{version}.dist-info/METADATA").decode()
    assert modules <= names, sorted(modules - names)
    assert not [n for n in names if n.startswith("tests/")]
    assert "kubectl-pvleft = kubectl_pvleft.cli.main:entry" in entry_points
    assert "kubectl_complete-pvleft = kubectl_pvleft.cli.completion:main" in entry_points
    assert f"Version: {version}" in metadata and "Description-Content-Type: text/markdown" in metadata


def test_sdist_builds_the_same_package(dist: Path) -> None:
    version = kubectl_pvleft.__version__
    with tarfile.open(dist / f"kubectl_pvleft-{version}.tar.gz") as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"setup.cfg", "pyproject.toml", "README.md", "LICENSE", "kubectl_pvleft/cli/main.py"} <= names
