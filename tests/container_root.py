"""The Containerfile carried out without its base image, which no registry here serves: its instructions parsed, the
build stage's COPY and RUN done in a bubblewrap sandbox over a stand-in base, and the final stage's runtime contract
(USER, ENV, ENTRYPOINT, CMD, WORKDIR) applied to a process in a sandbox whose root is read-only and holds no shell.

The stand-in base is laid out as python:3.12-slim is: the interpreter that runs these tests in /usr/local/bin with
python3 and python beside it, its standard library in /usr/local/lib without tests or bytecode (the official image
deletes both), an /etc/passwd without uid 65532; the C libraries are the host's, bound read-only. It is named for
what it is and tagged as nothing: this proves the Containerfile's own steps and its runtime contract, not
python:3.12-slim itself (another Python version, the host's Debian libraries).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
CONTAINERFILE = ROOT / "Containerfile"
# python:3.12-slim's PATH, which the final stage's `ENV PATH=...:$PATH` extends.
BASE_PATH = "/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
BASE_ENV = {"PATH": BASE_PATH, "LANG": "C.UTF-8"}
# The build step reaches PyPI as this machine does: its pip configuration (index, CA) and proxies; not a
# find-links directory, a path of the host's that the build stage does not have.
PASSED_TO_BUILD = ("PIP_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")
NOT_PASSED = ("PIP_FIND_LINKS",)
SERVICEACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
# The official image removes the standard library's tests and bytecode; the stand-in does the same.
STRIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "test", "tests", "idlelib", "tkinter", "turtledemo",
                                  "site-packages", "dist-packages")


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


def parse(text: str) -> list[Stage]:
    """Dockerfile syntax as far as this Containerfile uses it: comments, backslash continuations, one stage per FROM."""
    logical, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    stages: list[Stage] = []
    for line in logical:
        word, _, rest = line.strip().partition(" ")
        word, rest = word.upper(), rest.strip()
        if word == "FROM":
            base, _, name = rest.partition(" AS ") if " AS " in rest else rest.partition(" as ")
            stages.append(Stage(base.strip(), name.strip() or None))
        else:
            assert stages, f"{word} before FROM"
            stages[-1].instructions.append((word, rest))
    return stages


def env_of(stage: Stage, base_env: dict[str, str]) -> dict[str, str]:
    """ENV key=value pairs, each value expanded against the environment so far ($PATH is the base's)."""
    env = dict(base_env)
    for rest in stage.all("ENV"):
        for pair in shlex.split(rest):
            key, _, value = pair.partition("=")
            for known in sorted(env, key=len, reverse=True):
                value = value.replace("${" + known + "}", env[known]).replace("$" + known, env[known])
            env[key] = value
    return env


def exec_form(rest: str) -> list[str]:
    """ENTRYPOINT/CMD in exec form (a JSON array): what runs with no shell to interpret it."""
    parsed = json.loads(rest)
    assert isinstance(parsed, list) and all(isinstance(a, str) for a in parsed), f"not exec form: {rest}"
    return parsed


@dataclass
class Interpreter:
    """This run's base interpreter: the stand-in places it as the official image does (/usr/local)."""
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


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _place(base: Path, path: Path) -> Path:
    target = base / path.relative_to("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def make_stand_in(base: Path, python: Interpreter) -> None:
    """The stand-in base's own files under `base`; the host's C libraries come in as binds (system_binds)."""
    local = base / "usr/local"
    (local / "lib").mkdir(parents=True)
    (local / "bin").mkdir()
    _link_or_copy(str(python.executable), str(local / "bin" / python.version))
    for name in ("python3", "python"):
        (local / "bin" / name).symlink_to(python.version)
    shutil.copytree(python.stdlib, local / "lib" / python.version, ignore=STRIPPED, copy_function=_link_or_copy)
    for library in python.shared:
        if library.is_symlink():
            _place(base, library).symlink_to(os.readlink(library))
        else:
            _link_or_copy(str(library), str(_place(base, library)))
    if python.wheels:
        shutil.copytree(python.wheels, _place(base, python.wheels), copy_function=_link_or_copy)
    etc = base / "etc"
    etc.mkdir()
    # As the official image: root and nobody known, uid 65532 not (Kubernetes then sets HOME=/).
    (etc / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    (etc / "group").write_text("root:x:0:\nnogroup:x:65534:\n")
    (etc / "hosts").write_text("127.0.0.1\tlocalhost\n::1\tlocalhost\n")
    if Path("/etc/ld.so.cache").exists():
        shutil.copy2("/etc/ld.so.cache", etc / "ld.so.cache")
    (base / "opt").mkdir()
    for path in [base, *base.rglob("*")]:  # as an image's layers: world-readable, root-owned, only root may write
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)


def system_binds() -> list[str]:
    """The base image's C libraries: the host's multiarch library directories (the interpreter was linked against
    them), not all of /usr/lib, which holds the host's own Python and more."""
    args: list[str] = []
    for directory in [*sorted(Path("/usr/lib").glob("*-linux-gnu*")), Path("/usr/lib64")]:
        if directory.is_dir() and not directory.is_symlink():
            args += ["--ro-bind", str(directory), str(directory)]
    for top in ("lib", "lib64"):
        host = Path("/", top)
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{top}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{top}"]
    return args


def base_binds(base: Path, etc: bool = True) -> list[str]:
    """The stand-in's top-level entries (and /usr's), each bound read-only over the C libraries."""
    args = system_binds()
    for entry in sorted(base.iterdir()):
        if entry.name == "usr":
            args += [arg for sub in sorted(entry.iterdir()) for arg in ("--ro-bind", str(sub), f"/usr/{sub.name}")]
        elif entry.name != "opt" and (etc or entry.name != "etc"):
            args += ["--ro-bind", str(entry), f"/{entry.name}"]
    return args


def copied_sources(stage: Stage, workdir: Path) -> None:
    """The build stage's COPY instructions, from the checkout into its WORKDIR (only what they name), with
    Docker's meaning: a directory's contents go to the destination; files go into it when it ends in / ."""
    for rest in stage.all("COPY"):
        *sources, destination = shlex.split(rest)
        assert not any(s.startswith("--") for s in sources), rest
        target = workdir / destination
        for source in sources:
            origin = ROOT / source
            if origin.is_dir():
                shutil.copytree(origin, target, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
            else:
                into = destination.endswith("/") or len(sources) > 1
                (target if into else target.parent).mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, target / origin.name if into else target)


def setenv(env: dict[str, str]) -> list[str]:
    return [arg for key, value in sorted(env.items()) for arg in ("--setenv", key, value)]


@dataclass
class Image:
    """What the Containerfile made: the stand-in base, the final stage's /opt, and its runtime configuration."""
    base: Path
    opt: Path
    env: dict[str, str]
    user: tuple[int, int]
    entrypoint: list[str]
    cmd: list[str]
    workdir: str
    exposed: list[str]
    build_log: str

    def sandbox(self, argv: list[str], binds: list[str] = (), env: Optional[dict[str, str]] = None) -> list[str]:
        """bwrap as a container runtime with readOnlyRootFilesystem: the image's files read-only, a read-only
        tmpfs for the rest of /, /proc and /dev of its own; its own PID namespace with the entrypoint as PID 1,
        as in a Pod (a PID 1 without a SIGTERM handler ignores SIGTERM). Run it as the image's USER."""
        return ["bwrap", "--unshare-all", "--share-net", "--die-with-parent", "--as-pid-1", *base_binds(self.base),
                "--ro-bind", str(self.opt), "/opt", *binds, "--proc", "/proc", "--dev", "/dev",
                "--perms", "1777", "--dir", "/tmp", "--remount-ro", "/", "--clearenv",
                *setenv(env if env is not None else self.env), "--chdir", self.workdir, "--", *argv]


def build(workdir: Path) -> Image:
    """The Containerfile's two stages over the stand-in base, in `workdir` (which uid 65532 must be able to reach)."""
    stages = parse(CONTAINERFILE.read_text())
    assert len(stages) == 2 and stages[0].base == stages[1].base, [s.base for s in stages]
    builder, final = stages
    base = workdir / "base"
    make_stand_in(base, Interpreter.current())
    inside = builder.one("WORKDIR")
    src, built = workdir / "src", workdir / "build-opt"
    copied_sources(builder, src)
    built.mkdir()
    env = {**env_of(builder, {**BASE_ENV, "HOME": "/root"}),
           **{k: v for k, v in os.environ.items() if k.startswith(PASSED_TO_BUILD) and k not in NOT_PASSED}}
    log = ""
    for run in builder.all("RUN"):  # as root, as a build stage without USER; /bin/sh for the shell form
        argv = exec_form(run) if run.startswith("[") else ["/bin/sh", "-c", run]
        done = subprocess.run(["bwrap", "--unshare-pid", "--die-with-parent", *base_binds(base, etc=False),
                               "--ro-bind", "/etc", "/etc", "--ro-bind", os.path.realpath("/bin/sh"), "/bin/sh",
                               "--bind", str(built), "/opt", "--bind", str(src), inside, "--tmpfs", "/tmp",
                               "--proc", "/proc", "--dev", "/dev", "--chdir", inside, "--clearenv", *setenv(env),
                               "--", *argv], capture_output=True, text=True, timeout=1200, check=False)
        log += f"RUN {run}\n{done.stdout}{done.stderr}"
        assert done.returncode == 0, log
    opt = workdir / "opt"
    for rest in final.all("COPY"):  # COPY --from=<the build stage> /opt/... /opt/...
        flag, source, target = shlex.split(rest)
        assert flag == f"--from={builder.name}" and source.startswith("/opt/") and target.startswith("/opt/"), rest
        shutil.copytree(built / source[len("/opt/"):], opt / target[len("/opt/"):], symlinks=True)
    opt.chmod(0o755)
    uid, _, gid = final.one("USER").partition(":")
    return Image(base=base, opt=opt, env=env_of(final, BASE_ENV), user=(int(uid), int(gid or uid)),
                 entrypoint=exec_form(final.one("ENTRYPOINT")), cmd=exec_form(final.one("CMD")),
                 workdir=(final.all("WORKDIR") or ["/"])[-1], exposed=final.one("EXPOSE").split(), build_log=log)


def tree(*tops: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under `tops` with its mode, size and mtime: the same before and after = nothing was written."""
    seen = {}
    for top in tops:
        for path in [top, *top.rglob("*")]:
            st = path.lstat()
            seen[str(path)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return seen
