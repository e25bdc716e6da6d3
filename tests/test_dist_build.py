"""The release's Python half, as the release procedure builds it: an sdist and a wheel from this checkout with
`python -m build` (in its own isolated build environment, as PyPI's builders do), checked with `twine check
--strict` (the metadata and the README as the package index renders it), holding every module and both
console scripts. Nothing is uploaded."""

from __future__ import annotations

import email
import email.message
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


def _metadata(dist: Path) -> email.message.Message:
    version = kubectl_pvleft.__version__
    with zipfile.ZipFile(dist / f"kubectl_pvleft-{version}-py3-none-any.whl") as wheel:
        return email.message_from_bytes(wheel.read(f"kubectl_pvleft-{version}.dist-info/METADATA"))


def test_wheel_metadata_is_what_the_package_index_shows(dist: Path) -> None:
    """Core Metadata 2.4 (packaging.python.org, core-metadata): the license as a PEP 639 SPDX expression with
    its file, never the legacy License field or a License :: classifier; project URLs, classifiers, keywords."""
    metadata = _metadata(dist)
    assert metadata["Metadata-Version"] == "2.4"
    assert metadata["License-Expression"] == "Apache-2.0" and metadata.get_all("License-File") == ["LICENSE"]
    assert metadata["License"] is None and not [c for c in metadata.get_all("Classifier") if c.startswith("License ::")]
    with zipfile.ZipFile(dist / f"kubectl_pvleft-{kubectl_pvleft.__version__}-py3-none-any.whl") as wheel:
        shipped = wheel.read(f"kubectl_pvleft-{kubectl_pvleft.__version__}.dist-info/licenses/LICENSE")
    assert shipped == (ROOT / "LICENSE").read_bytes()
    urls = dict(url.split(", ", 1) for url in metadata.get_all("Project-URL"))
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(urls)
    assert all(url.startswith("https://github.com/kubectl-pvleft/kubectl-pvleft") for url in urls.values())
    assert urls["Documentation"].endswith("/docs/reference.md") and (ROOT / "docs" / "reference.md").is_file()
    classifiers = metadata.get_all("Classifier")
    assert {"Environment :: Console", "Intended Audience :: System Administrators",
            "Programming Language :: Python :: 3 :: Only", "Programming Language :: Python :: 3.10"} <= set(classifiers)
    # Every classifier is one the index knows (trove-classifiers, which twine does not check).
    import trove_classifiers

    assert set(classifiers) <= trove_classifiers.classifiers
    # The oldest Python classified is the one Requires-Python allows.
    assert metadata["Requires-Python"] == ">=3.10"
    keywords = [k.strip() for k in metadata["Keywords"].split(",")]
    assert {"kubernetes", "kubectl", "kubectl-plugin", "krew"} <= set(keywords) and all(keywords)


def test_sdist_builds_the_same_package(dist: Path) -> None:
    version = kubectl_pvleft.__version__
    with tarfile.open(dist / f"kubectl_pvleft-{version}.tar.gz") as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"setup.cfg", "pyproject.toml", "README.md", "LICENSE", "kubectl_pvleft/cli/main.py"} <= names
