"""Real proxies on loopback for the proxy tests: squid (HTTP CONNECT, with and without Basic proxy auth) and
danted (SOCKS5), each from a config of its own in a directory of its own, on a free 127.0.0.1 port.

squid resolves names from its own hosts file first (``hosts_file``), so a server named PROXY_ONLY_NAME can be
reached only through it: a request that bypassed the proxy fails to resolve. danted resolves with the
system's resolver, so the SOCKS tests show the proxy was used by danted's own log of the connection instead.
squid runs as root here and drops to the ``proxy`` user: everything it writes is in a directory that user owns.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional

from loopback import free_port

SQUID = shutil.which("squid") or "/usr/sbin/squid"
DANTED = shutil.which("danted") or "/usr/sbin/danted"
NCSA_AUTH = "/usr/lib/squid/basic_ncsa_auth"
PROXY_ONLY_NAME = "apiserver.proxy-only.test"  # resolves only in squid's hosts file
REFUSED_NAME = "refused.proxy-only.test"  # squid answers 403 to a CONNECT to it
PROXY_USER, PROXY_PASSWORD = "pvleft", "pr0xy-s3cret-pw"


def available() -> bool:
    return all(os.access(p, os.X_OK) for p in (SQUID, DANTED, NCSA_AUTH))


def _wait_listening(port: int, proc: subprocess.Popen, log: Path, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited ({proc.returncode}): {log.read_text(errors='replace')[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{proc.args[0]} did not listen on {port}: {log.read_text(errors='replace')[-2000:]}")


class _Daemon:
    proc: Optional[subprocess.Popen] = None
    log: Path

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)


class Squid(_Daemon):
    """squid on 127.0.0.1:port; ``auth=True`` asks every client for Basic proxy credentials."""

    def __init__(self, auth: bool = False, tls: Optional[tuple[Path, Path]] = None) -> None:
        # Not under pytest's tmp_path: that is private to root, and squid's proxy user must reach its files.
        self.dir, self.auth = Path(tempfile.mkdtemp(prefix="pvleft-squid-")), auth
        self.tls = tls  # (certificate, key): clients reach this squid over TLS (an https:// proxy)
        self.port = free_port()
        self.log = self.dir / "cache.log"
        self.access_log = self.dir / "access.log"

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def url_with_credentials(self, user: str = PROXY_USER, password: str = PROXY_PASSWORD) -> str:
        return f"{'https' if self.tls else 'http'}://{user}:{password}@127.0.0.1:{self.port}"

    def start(self) -> Squid:
        (self.dir / "hosts").write_text(f"127.0.0.1 {PROXY_ONLY_NAME} {REFUSED_NAME}\n")
        auth = ""
        if self.auth:
            hashed = subprocess.run(["openssl", "passwd", "-apr1", PROXY_PASSWORD], check=True,
                                    capture_output=True, text=True).stdout.strip()
            (self.dir / "htpasswd").write_text(f"{PROXY_USER}:{hashed}\n")
            auth = (f"auth_param basic program {NCSA_AUTH} {self.dir / 'htpasswd'}\n"
                    "auth_param basic realm pvleft-test\n"
                    "acl authed proxy_auth REQUIRED\n"
                    "http_access deny !authed\n")
        listen = f"http_port 127.0.0.1:{self.port}\n"
        if self.tls:
            for source, name in zip(self.tls, ("proxy.crt", "proxy.key"), strict=True):
                shutil.copyfile(source, self.dir / name)
                shutil.chown(self.dir / name, "proxy", "proxy")
            listen = (f"https_port 127.0.0.1:{self.port} tls-cert={self.dir / 'proxy.crt'} "
                      f"tls-key={self.dir / 'proxy.key'}\n")
        (self.dir / "squid.conf").write_text(
            listen +
            f"pid_filename {self.dir / 'squid.pid'}\n"
            f"cache_log {self.log}\n"
            f"access_log stdio:{self.access_log}\n"
            "cache_store_log none\n"
            "logfile_rotate 0\n"
            f"coredump_dir {self.dir}\n"
            "cache deny all\n"
            "pinger_enable off\n"
            "shutdown_lifetime 0 seconds\n"
            f"hosts_file {self.dir / 'hosts'}\n"
            "dns_nameservers 127.0.0.1\n"  # nothing listens there: only the hosts file resolves
            f"acl refused dstdomain {REFUSED_NAME}\n"
            "http_access deny refused\n"
            + auth +
            "http_access allow localhost\n"
            "http_access deny all\n")
        for path in (self.dir, self.log, self.access_log):
            path.touch() if path != self.dir else None
            shutil.chown(path, "proxy", "proxy")  # squid drops to the proxy user before it writes
        with (self.dir / "stderr.log").open("wb") as stderr:  # the child has its own copy once started
            self.proc = subprocess.Popen([SQUID, "-N", "-f", str(self.dir / "squid.conf")],
                                         stdout=subprocess.DEVNULL, stderr=stderr)
        _wait_listening(self.port, self.proc, self.log)
        return self

    def tunnels(self) -> list[str]:
        """The CONNECT targets squid logged (one per tunnel it opened, "host:port")."""
        return [line.split()[6] for line in self.access_log.read_text().splitlines() if " CONNECT " in line]

    def log_lines(self) -> list[str]:
        return self.access_log.read_text().splitlines()


class Danted(_Daemon):
    """danted (SOCKS5, no authentication) on 127.0.0.1:port, logging every connection it passes."""

    def __init__(self, username_auth: bool = False) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="pvleft-danted-"))
        # socksmethod username checks the system's password database: no test user is made there, so this
        # danted refuses every user name and password (it shows the RFC 1929 exchange and its refusal).
        self.username_auth = username_auth
        self.port = free_port()
        self.log = self.dir / "danted.log"

    @property
    def url(self) -> str:
        return f"socks5://127.0.0.1:{self.port}"

    def start(self) -> Danted:
        self.log.touch()
        (self.dir / "danted.conf").write_text(
            f"logoutput: {self.log}\n"
            f"internal: 127.0.0.1 port = {self.port}\n"
            "external: 127.0.0.1\n"
            "clientmethod: none\n"
            f"socksmethod: {'username' if self.username_auth else 'none'}\n"
            "user.privileged: root\n"
            "user.unprivileged: nobody\n"
            "client pass {\n  from: 127.0.0.0/8 to: 0.0.0.0/0\n  log: error\n}\n"
            "socks pass {\n  from: 127.0.0.0/8 to: 127.0.0.0/8\n  command: connect\n  log: connect error\n}\n"
            "socks block {\n  from: 0.0.0.0/0 to: 0.0.0.0/0\n  log: connect error\n}\n")
        with (self.dir / "stderr.log").open("wb") as stderr:  # the child has its own copy once started
            self.proc = subprocess.Popen([DANTED, "-f", str(self.dir / "danted.conf"), "-p", str(self.dir / "danted.pid")],
                                         stdout=subprocess.DEVNULL, stderr=stderr)
        _wait_listening(self.port, self.proc, self.log)
        return self

    def passed(self) -> list[str]:
        """danted's log lines for the connections it passed."""
        return [line for line in self.log.read_text().splitlines() if "pass(" in line]
