"""The Containerfile built for real by buildah (Debian's package), over a stand-in for its base image, which no
registry reachable here serves; then the built image's root filesystem and configuration, for a runtime to run.

The stand-in is laid out as python:3.12-slim is: the interpreter that runs these tests in /usr/local/bin with
python3 and python beside it, its standard library in /usr/local/lib without tests or bytecode (the official image
deletes both), the C libraries it and the manylinux wheels load, an /etc/passwd without uid 65532, /tmp. It has no
shell: the Containerfile needs none, at build time (RUN in exec form) or at run time. It carries this machine's CA
bundle and pip.conf, the network of the build step being this machine's. The Containerfile's base is an ARG whose
default is python:3.12-slim: the stand-in is passed as that ARG under its own name, and nothing is tagged
python:3.12-slim. This proves the Containerfile's own steps, as a builder reads them, and its runtime contract; not
python:3.12-slim itself (another Python version, the host's Debian libraries).

buildah keeps its images in a storage of the test's own (vfs driver, chroot isolation: no daemon, no overlay).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
CONTAINERFILE = ROOT / "Containerfile"
# python:3.12-slim's environment (its PATH does name /usr/local/bin twice), which `ENV PATH=...:$PATH` extends.
BASE_ENV = ["PATH=/usr/local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"]
BASE_ARG = "PYTHON_IMAGE"
STAND_IN = "localhost/pvleft-test-stand-in-python:test"
BUILT = "localhost/kubectl-pvleft:test"
SERVICEACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
# The official image removes the standard library's tests and bytecode; the stand-in does the same.
STRIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "test", "tests", "idlelib", "tkinter", "turtledemo",
                                  "site-packages", "dist-packages")
# The C libraries a manylinux wheel may load from the system (the policy's list), beside what ldd finds.
MANYLINUX_LIBS = ("libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0", "libutil.so.1",
                  "libresolv.so.2", "libgcc_s.so.1", "libstdc++.so.6", "libz.so.1", "libnss_files.so.2",
                  "libnss_dns.so.2")


@dataclass
class Stage:
    base: str
    name: Optional[str]
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [rest for word, rest in self.instructions if word == keyword]

    def one(self, keyword: str) -> str:
        found = self.all(keyword)
        assert len(found) == 1, f"{keyword}: {found}"
        return found[0]


def parse(text: str) -> tuple[list[str], list[Stage]]:
    """Dockerfile syntax as far as the Containerfile uses it: comments, backslash continuations, the ARGs before
    the first FROM, one stage per FROM. For the unit tests' reading of it; buildah does the build."""
    logical, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    args: list[str] = []
    stages: list[Stage] = []
    for line in logical:
        word, _, rest = line.strip().partition(" ")
        word, rest = word.upper(), rest.strip()
        if word == "FROM":
            base, _, name = rest.partition(" AS ") if " AS " in rest else rest.partition(" as ")
            stages.append(Stage(base.strip(), name.strip() or None))
        elif not stages:
            assert word == "ARG", f"{word} before FROM"
            args.append(rest)
        else:
            stages[-1].instructions.append((word, rest))
    return args, stages


def exec_form(rest: str) -> list[str]:
    """RUN/ENTRYPOINT/CMD in exec form (a JSON array): what runs with no shell to interpret it."""
    parsed = json.loads(rest)
    assert isinstance(parsed, list) and all(isinstance(a, str) for a in parsed), f"not exec form: {rest}"
    return parsed


@dataclass
class Interpreter:
    """This run's base interpreter, which the stand-in places as the official image does (/usr/local)."""
    executable: Path
    version: str
    stdlib: Path
    shared: list[Path]
    wheels: Optional[Path]

    @classmethod
    def current(cls) -> Interpreter:
        executable = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        libdir = Path(sysconfig.get_config_var("LIBDIR") or "/nonexistent")
        # A shared libpython stays where the binary's RUNPATH looks (a pyenv build); Debian's is static.
        shared = sorted(libdir.glob("libpython3*.so*")) if not str(libdir).startswith("/usr/lib") else []
        # Debian's ensurepip takes pip's wheel from /usr/share/python-wheels (python3-pip-whl).
        wheels = Path("/usr/share/python-wheels") if str(stdlib).startswith("/usr/lib/") else None
        return cls(executable, f"python{sys.version_info[0]}.{sys.version_info[1]}", stdlib, shared,
                   wheels if wheels and wheels.is_dir() else None)


def _copy(source: Path, root: Path) -> None:
    """`source` into `root` at the same path, a symlink as a symlink (and what it points at too)."""
    target = root / source.relative_to("/")
    if target.exists() or target.is_symlink():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_symlink():
        target.symlink_to(os.readlink(source))
        _copy(source.parent / os.readlink(source), root)
    else:
        shutil.copy2(source, target)


def _shared_libraries(binaries: list[Path], extra_dirs: list[Path]) -> set[Path]:
    env = {**os.environ, "LD_LIBRARY_PATH": ":".join(map(str, extra_dirs))}
    found: set[Path] = set()
    for binary in binaries:
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, env=env, check=False).stdout
        for line in out.splitlines():
            path = line.split("=>")[-1].split("(")[0].strip()
            if path.startswith("/"):
                found.add(Path(path))
    multiarch = {p.parent for p in found if p.name.startswith("libc.so")}
    return found | {d / name for d in multiarch for name in MANYLINUX_LIBS if (d / name).exists()}


def make_stand_in(base: Path, python: Interpreter) -> None:
    """The stand-in base's root filesystem, under `base`."""
    local = base / "usr/local"
    (local / "lib").mkdir(parents=True)
    (local / "bin").mkdir()
    shutil.copy2(python.executable, local / "bin" / python.version)
    for name in ("python3", "python"):
        (local / "bin" / name).symlink_to(python.version)
    shutil.copytree(python.stdlib, local / "lib" / python.version, ignore=STRIPPED)
    for library in python.shared:
        _copy(library, base)
    if python.wheels:
        shutil.copytree(python.wheels, base / python.wheels.relative_to("/"), symlinks=True)
    for top in ("lib", "lib64", "bin", "sbin"):  # a merged-/usr host: its library paths go through these
        if Path("/", top).is_symlink():
            (base / top).symlink_to(os.readlink(Path("/", top)))
            (base / top).resolve().mkdir(parents=True, exist_ok=True)
    dynload = sorted((local / "lib" / python.version / "lib-dynload").glob("*.so"))
    for library in _shared_libraries([local / "bin" / python.version, *dynload], [p.parent for p in python.shared]):
        if not str(library).startswith(str(base)):
            _copy(library, base)
    etc = base / "etc"
    (etc / "ssl" / "certs").mkdir(parents=True)
    # As the official image: root and nobody known, uid 65532 not (Kubernetes then sets HOME=/).
    (etc / "passwd").write_text("root:x:0:0:root:/root:/usr/sbin/nologin\n"
                                "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    (etc / "group").write_text("root:x:0:\nnogroup:x:65534:\n")
    (etc / "hosts").write_text("127.0.0.1\tlocalhost\n::1\tlocalhost\n")
    for network in ("/etc/ssl/certs/ca-certificates.crt", "/etc/pip.conf"):  # the build step's way to PyPI
        if Path(network).is_file():
            shutil.copy2(network, etc / network.removeprefix("/etc/"))
    for empty in ("tmp", "proc", "dev", "sys", "root"):
        (base / empty).mkdir(exist_ok=True)
    (base / "tmp").chmod(0o1777)
    for path in [base, *base.rglob("*")]:  # as an image's layers: world-readable, only root may write
        if path.is_dir() and not path.is_symlink() and path != base / "tmp":
            path.chmod(0o755)


@dataclass
class Image:
    """What buildah built: its root filesystem and the configuration a runtime reads (OCI image config)."""
    root: Path
    config: dict
    build_log: str
    workdir: Path  # uid 65532 can reach what is put here

    @property
    def env(self) -> dict[str, str]:
        return dict(pair.split("=", 1) for pair in self.config["Env"])

    @property
    def user(self) -> tuple[int, int]:
        uid, _, gid = self.config["User"].partition(":")
        return int(uid), int(gid or uid)

    def sandbox(self, argv: list[str], binds: list[str] = (), env: Optional[dict[str, str]] = None) -> list[str]:
        """bwrap as a container runtime with readOnlyRootFilesystem: the image's entries read-only on a read-only
        tmpfs /, /proc and /dev of its own; its own PID namespace with the entrypoint as PID 1, as in a Pod (a PID 1
        without a SIGTERM handler ignores SIGTERM). The caller runs it as the image's USER."""
        mounts: list[str] = []
        for entry in sorted(self.root.iterdir()):
            if entry.is_symlink():
                mounts += ["--symlink", os.readlink(entry), f"/{entry.name}"]
            elif entry.name not in ("proc", "dev", "sys"):
                mounts += ["--ro-bind", str(entry), f"/{entry.name}"]
        environment = env if env is not None else self.env
        return ["bwrap", "--unshare-all", "--share-net", "--die-with-parent", "--as-pid-1", *mounts, *binds,
                "--proc", "/proc", "--dev", "/dev", "--remount-ro", "/", "--clearenv",
                *[a for key, value in sorted(environment.items()) for a in ("--setenv", key, value)],
                "--chdir", self.config.get("WorkingDir") or "/", "--", *argv]


def buildah(storage: Path, *args: str, timeout: float = 120) -> str:
    """buildah on the test's own storage (vfs: plain directories), never the machine's."""
    done = subprocess.run(["buildah", "--root", str(storage / "root"), "--runroot", str(storage / "run"),
                           "--storage-driver", "vfs", *args], capture_output=True, text=True, timeout=timeout,
                          check=False)
    assert done.returncode == 0, f"buildah {' '.join(args)}\n{done.stdout}{done.stderr}"
    return done.stdout


def build(workdir: Path) -> Image:
    """The stand-in base, then the Containerfile over it; `workdir` must be reachable by uid 65532, which the
    runtime binds the image's files as."""
    storage = workdir / "storage"
    base = workdir / "stand-in"
    make_stand_in(base, Interpreter.current())
    container = buildah(storage, "from", "scratch").strip()
    buildah(storage, "copy", container, f"{base}/", "/")
    buildah(storage, "config", *[a for pair in BASE_ENV for a in ("--env", pair)], container)
    buildah(storage, "commit", "--quiet", "--rm", container, STAND_IN)
    log = buildah(storage, "bud", "--isolation", "chroot", "--build-arg", f"{BASE_ARG}={STAND_IN}",
                  "--file", str(CONTAINERFILE), "--tag", BUILT, str(ROOT), timeout=1200)
    config = json.loads(buildah(storage, "inspect", "--type", "image", BUILT))["OCIv1"]["config"]
    running = buildah(storage, "from", BUILT).strip()
    root = Path(buildah(storage, "mount", running).strip())
    # containers/storage makes its directories private to root; this storage is the test's own, and uid 65532
    # must reach the image's files to bind them.
    for parent in [p for p in root.parents if storage in (p, *p.parents)]:
        parent.chmod(parent.stat().st_mode | 0o111)
    return Image(root=root, config=config, build_log=log, workdir=workdir)


def tree(*tops: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under `tops` with its mode, size and mtime: the same before and after = nothing was written."""
    seen = {}
    for top in tops:
        for path in [top, *top.rglob("*")]:
            st = path.lstat()
            seen[str(path)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return seen
