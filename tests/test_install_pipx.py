"""`pipx install .` as the README says: its own venv under a temporary PIPX_HOME, both console scripts on
its bin folder, the plugin found by kubectl and the completion program too."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kubectl_pvleft

ROOT = Path(__file__).resolve().parent.parent
PIPX = shutil.which("pipx", path=str(Path(sys.executable).parent))

pytestmark = [pytest.mark.install, pytest.mark.integration,
              pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths")]


def sources(where: Path) -> Path:
    """A copy of what a checkout holds for the build: building in the tree would leave build/ behind."""
    src = where / "src"
    src.mkdir()
    for name in ("kubectl_pvleft", "setup.cfg", "pyproject.toml", "README.md", "LICENSE"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, src / name)
    return src


@pytest.mark.timeout(1200)  # a fresh venv and every dependency: minutes on a cold pip cache
def test_pipx_install(tmp_path: Path) -> None:
    assert PIPX, "pipx is in the test extra: run `make install`"
    home, bin_dir = tmp_path / "pipx-home", tmp_path / "pipx-bin"
    env = dict(os.environ, PIPX_HOME=str(home), PIPX_BIN_DIR=str(bin_dir), PIPX_MAN_DIR=str(tmp_path / "man"))
    env.pop("PYTHONPATH", None)
    installed = subprocess.run([PIPX, "install", str(sources(tmp_path))], capture_output=True, text=True, env=env,
                               timeout=900, check=False)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert {"kubectl-pvleft", "kubectl_complete-pvleft"} <= {p.name for p in bin_dir.iterdir()}

    # kubectl finds both on PATH, as it would in ~/.local/bin.
    env["PATH"] = f"{bin_dir}{os.pathsep}{os.path.dirname(shutil.which('kubectl') or 'kubectl')}"
    version = subprocess.run(["kubectl", "pvleft", "--version"], capture_output=True, text=True, env=env, check=False)
    assert (version.returncode, version.stdout.split()) == (0, ["kubectl-pvleft", kubectl_pvleft.__version__])
    complete = subprocess.run(["kubectl", "__complete", "pvleft", "pen"], capture_output=True, text=True, env=env, check=False)
    assert [line.split("\t")[0] for line in complete.stdout.splitlines()] == ["pending", ":4"]
    # pipx's venv runs its own copy of the package, not this tree.
    where = subprocess.run([home / "venvs" / "kubectl-pvleft" / "bin" / "python", "-c",
                            "import kubectl_pvleft; print(kubectl_pvleft.__file__)"], capture_output=True, text=True,
                           cwd=tmp_path, check=False)  # not this checkout's folder, which `python -c` would put on sys.path
    assert Path(where.stdout.strip()).is_relative_to(home), where.stdout + where.stderr
