"""The JUnit XML schema CI systems read, for validating `-o junit`, fetched from the package index at test time
(nothing of it is committed): the sdist of pytest on PyPI carries Jenkins' junit-10.xsd (the xunit plugin's
schema of the JUnit format Jenkins, GitLab and most CI systems parse) as testing/example_scripts/junit-10.xsd,
which pytest's own junitxml tests validate against. Kept in the user's cache after the first download."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

SDIST = "pytest==8.3.4"
MEMBER = "pytest-8.3.4/testing/example_scripts/junit-10.xsd"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kubectl-pvleft-tests" / "junit-10.xsd"


def junit_xsd() -> Path:
    """The schema's path: PVLEFT_JUNIT_XSD when set, else the cached copy, else downloaded now (pip, from the index)."""
    if os.environ.get("PVLEFT_JUNIT_XSD"):
        return Path(os.environ["PVLEFT_JUNIT_XSD"])
    if CACHE.is_file():
        return CACHE
    with tempfile.TemporaryDirectory() as work:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
                        "--no-binary", ":all:", "--dest", work, SDIST], check=True, timeout=300)
        [archive] = Path(work).glob("pytest-*.tar.gz")
        with tarfile.open(archive) as tar:
            data = tar.extractfile(MEMBER)
            assert data is not None, f"{MEMBER} is not in {archive.name}"
            CACHE.parent.mkdir(parents=True, exist_ok=True)
            partial = CACHE.with_suffix(".part")
            partial.write_bytes(data.read())
            partial.replace(CACHE)
    return CACHE
