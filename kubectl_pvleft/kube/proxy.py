"""Proxies, chosen and spoken to as kubectl (client-go on Go's net/http) does.

Which proxy: the cluster's ``proxy-url`` when the kubeconfig has one (used for every server, loopback too);
else the environment as Go's ``http.ProxyFromEnvironment`` reads it (golang.org/x/net/http/httpproxy):
``HTTPS_PROXY``/``https_proxy`` for an https server, ``HTTP_PROXY``/``http_proxy`` for an http one (the upper
case name first; an empty value counts as unset), minus ``NO_PROXY``/``no_proxy`` and loopback hosts.

How: ``http://`` and ``https://`` proxies get ``CONNECT host:port`` (TLS to the API server then runs inside
the tunnel, exactly as without a proxy); an ``https://`` proxy is reached over TLS first, with the cluster's own
TLS settings, as Go's transport does. ``socks5://`` (and ``socks5h://`` from the environment, which Go treats
alike) sends the host name to the proxy, which resolves it. Credentials in the proxy URL go as
``Proxy-Authorization: Basic`` or SOCKS5 username/password; a proxy URL is only ever shown as ``display``
(credentials replaced by ``<redacted>``).
"""

from __future__ import annotations

import re
import socket
import ssl
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional, Union
from urllib.parse import SplitResult, unquote, urlsplit

from kubectl_pvleft.deadline import Deadline, OutOfTime
from kubectl_pvleft.errors import ConfigError, ConnectionFailed
from kubectl_pvleft.text import shown

if TYPE_CHECKING:  # ipaddress only when a proxy is set in the environment
    from ipaddress import IPv4Address, IPv6Address

DEFAULT_PORTS = {"http": 80, "https": 443, "socks5": 1080, "socks5h": 1080}
KUBECONFIG_SCHEMES = ("http", "https", "socks5")  # client-go's parseProxyURL
MAX_CONNECT_ANSWER = 64 * 1024  # a CONNECT answer's status and headers; a proxy's is a few hundred bytes

SOCKS_REPLIES = {  # RFC 1928 6, in the words of Go's socks package
    1: "general SOCKS server failure", 2: "connection not allowed by ruleset", 3: "network unreachable",
    4: "host unreachable", 5: "connection refused", 6: "TTL expired", 7: "command not supported",
    8: "address type not supported",
}


class ProxyFailed(ConnectionFailed):
    """The proxy refused, failed or could not be reached: one line that names it (never its credentials)."""


class Proxy:
    """A parsed proxy URL. ``display`` is the only form of it that may be shown."""

    def __init__(self, url: str, origin: str) -> None:
        parts = _split(url, origin)
        self.scheme = parts.scheme.lower()
        self.origin = origin  # where it came from: "proxy-url", "HTTPS_PROXY", ...
        try:
            self.host = parts.hostname or ""
            port = parts.port
        except ValueError:  # a port that is not a number, or out of range
            raise ConfigError(f"invalid proxy address {_redacted(parts)} ({origin}): bad port") from None
        if not self.host:
            raise ConfigError(f"invalid proxy address {_redacted(parts)} ({origin}): no host")
        self.port = port if port is not None else DEFAULT_PORTS.get(self.scheme, 0)  # :0 is dialled as :0, as Go does
        self.username = unquote(parts.username) if parts.username is not None else None
        self.password = unquote(parts.password) if parts.password is not None else None
        self.display = _redacted(parts)

    def __repr__(self) -> str:  # never the credentials, even in a debugger or a test's failure message
        return f"Proxy({self.display!r}, {self.origin})"

    def forwards_plain_http(self) -> bool:
        """An http(s) proxy for a plain-HTTP server: Go sends it the request itself (absolute URI), no CONNECT."""
        return self.scheme in ("http", "https")

    def dial(self, host: str, port: int, deadline: Deadline, cap: Optional[float],
             tls: Optional[ssl.SSLContext], tls_name: Optional[str]) -> socket.socket:
        """A socket whose far end is ``host:port``: TCP to the proxy, TLS to it for an https proxy, then
        CONNECT (``tls`` is the API server's context: only a TLS server is tunnelled) or SOCKS5."""
        sock = self._tcp(deadline, cap)
        try:
            if self.scheme == "https":
                sock = self._tls(sock, deadline, cap, tls, tls_name)
            if self.scheme in ("socks5", "socks5h"):
                self._socks5(sock, host, port, deadline, cap)
            else:
                self._connect(sock, host, port, deadline, cap)
            sock.settimeout(None)
            return sock
        except BaseException:
            sock.close()
            raise

    def dial_forward(self, deadline: Deadline, cap: Optional[float],
                     tls: Optional[ssl.SSLContext], tls_name: Optional[str]) -> socket.socket:
        """For a plain-HTTP server: a connection to the proxy itself, which is sent absolute-URI requests."""
        sock = self._tcp(deadline, cap)
        if self.scheme == "https":
            try:
                sock = self._tls(sock, deadline, cap, tls, tls_name)
            except BaseException:
                sock.close()
                raise
        return sock

    # ---- the steps ------------------------------------------------------------------------------------

    def _wait(self, deadline: Deadline, cap: Optional[float]) -> Optional[float]:
        try:
            return deadline.wait(cap)
        except OutOfTime:
            raise ProxyFailed(f"the proxy {self.display} did not answer in time") from None

    def _tcp(self, deadline: Deadline, cap: Optional[float]) -> socket.socket:
        # bytes skip the idna codec, as httpclient._ascii does; typeshed types create_connection's host as str only
        host: Any = self.host.encode("ascii") if self.host.isascii() else self.host
        try:
            sock = socket.create_connection((host, self.port), timeout=self._wait(deadline, cap))
        except TimeoutError:
            raise ProxyFailed(f"the proxy {self.display} did not answer in time") from None
        except socket.gaierror:
            raise ProxyFailed(f"the proxy {self.display} ({self.origin}) is not a known host") from None
        except OSError as exc:
            raise ProxyFailed(f"the proxy {self.display} ({self.origin}) cannot be reached: "
                              f"{_os_words(exc)}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _tls(self, sock: socket.socket, deadline: Deadline, cap: Optional[float],
             context: Optional[ssl.SSLContext], tls_name: Optional[str]) -> socket.socket:
        # Go's transport reaches an https proxy with the cluster's own TLS config (its CA, client certificate,
        # insecure-skip-tls-verify), and its tls-server-name when set, else the proxy's host name.
        context = context or ssl.create_default_context()
        name = tls_name or self.host
        try:
            sock.settimeout(self._wait(deadline, cap))
            return context.wrap_socket(sock, server_hostname=name.encode("ascii") if name.isascii() else name)
        except ssl.SSLCertVerificationError as exc:
            raise ProxyFailed(f"TLS handshake with the proxy {self.display} failed: "
                              f"{exc.verify_message or exc.reason}") from None
        except ssl.SSLError as exc:
            raise ProxyFailed(f"TLS handshake with the proxy {self.display} failed: {exc.reason or exc}") from None
        except TimeoutError:
            raise ProxyFailed(f"the proxy {self.display} did not answer in time") from None
        except OSError as exc:
            raise ProxyFailed(f"the proxy {self.display} closed the connection: {_os_words(exc)}") from None

    def _basic(self) -> str:
        import base64  # only with proxy credentials

        pair = f"{self.username}:{self.password or ''}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")

    def _connect(self, sock: socket.socket, host: str, port: int, deadline: Deadline, cap: Optional[float]) -> None:
        target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}"]
        if self.username is not None:
            lines.append(f"Proxy-Authorization: {self._basic()}")
        _send(self, sock, ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8"), deadline, cap)
        head = b""
        while b"\r\n\r\n" not in head:  # a TLS server does not speak first: nothing follows the blank line
            if len(head) > MAX_CONNECT_ANSWER:
                raise ProxyFailed(f"the proxy {self.display} sent an answer to CONNECT larger than any proxy's")
            data = _recv(self, sock, deadline, cap)
            if not data:
                raise ProxyFailed(f"the proxy {self.display} closed the connection before answering CONNECT")
            head += data
        status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not (parts[1].isascii() and parts[1].isdigit()):
            raise ProxyFailed(f"the proxy {self.display} did not answer CONNECT in HTTP")
        if parts[1] != "200":
            said = " ".join(parts[1:])
            said = shown(said)[:200]
            raise ProxyFailed(f"the proxy {self.display} refused to connect to {target}: {said}")

    def _socks5(self, sock: socket.socket, host: str, port: int, deadline: Deadline, cap: Optional[float]) -> None:
        """RFC 1928 CONNECT (and RFC 1929 username/password), as Go's socks dialer speaks them."""
        methods = b"\x00\x02" if self.username is not None else b"\x00"
        _send(self, sock, b"\x05" + bytes([len(methods)]) + methods, deadline, cap)
        version, method = _exactly(self, sock, 2, deadline, cap)
        if version != 5:
            raise ProxyFailed(f"the proxy {self.display} is not a SOCKS5 proxy")
        if method == 0xFF or method not in methods:
            raise ProxyFailed(f"the proxy {self.display} accepts none of our SOCKS5 authentication methods"
                              + ("" if self.username is not None else " (it may want a user name and password)"))
        if method == 2:
            user = (self.username or "").encode("utf-8")
            password = (self.password or "").encode("utf-8")
            if not user or len(user) > 255 or len(password) > 255:
                raise ProxyFailed(f"the proxy {self.display}: a SOCKS5 user name and password are 1-255 bytes")
            _send(self, sock, b"\x01" + bytes([len(user)]) + user + bytes([len(password)]) + password, deadline, cap)
            if _exactly(self, sock, 2, deadline, cap)[1] != 0:
                raise ProxyFailed(f"the proxy {self.display} refused the user name and password")
        request = b"\x05\x01\x00" + _socks_address(host) + port.to_bytes(2, "big")
        _send(self, sock, request, deadline, cap)
        version, reply, _, kind = _exactly(self, sock, 4, deadline, cap)
        if version != 5:
            raise ProxyFailed(f"the proxy {self.display} is not a SOCKS5 proxy")
        if reply != 0:
            said = SOCKS_REPLIES.get(reply, f"unknown code {reply}")
            raise ProxyFailed(f"the proxy {self.display} could not connect to {host}:{port}: {said}")
        size = {1: 4, 4: 16}.get(kind)
        if size is None:
            size = _exactly(self, sock, 1, deadline, cap)[0] if kind == 3 else -1
        if size < 0:
            raise ProxyFailed(f"the proxy {self.display} sent a malformed SOCKS5 answer")
        _exactly(self, sock, size + 2, deadline, cap)  # the bound address and port, unused


def _socks_address(host: str) -> bytes:
    import ipaddress  # only through a SOCKS proxy

    try:
        ip = ipaddress.ip_address(host)
        return (b"\x01" if ip.version == 4 else b"\x04") + ip.packed
    except ValueError:
        name = host.encode("idna") if not host.isascii() else host.encode("ascii")
        if len(name) > 255:
            raise ProxyFailed(f"the host name {host[:60]}... is too long for SOCKS5") from None
        return b"\x03" + bytes([len(name)]) + name


def _send(proxy: Proxy, sock: socket.socket, data: bytes, deadline: Deadline, cap: Optional[float]) -> None:
    try:
        sock.settimeout(proxy._wait(deadline, cap))
        sock.sendall(data)
    except TimeoutError:
        raise ProxyFailed(f"the proxy {proxy.display} did not answer in time") from None
    except OSError as exc:
        raise ProxyFailed(f"the proxy {proxy.display} closed the connection: {_os_words(exc)}") from None


def _recv(proxy: Proxy, sock: socket.socket, deadline: Deadline, cap: Optional[float], most: int = 4096) -> bytes:
    try:
        sock.settimeout(proxy._wait(deadline, cap))
        return sock.recv(most)
    except TimeoutError:
        raise ProxyFailed(f"the proxy {proxy.display} did not answer in time") from None
    except OSError as exc:
        raise ProxyFailed(f"the proxy {proxy.display} closed the connection: {_os_words(exc)}") from None


def _exactly(proxy: Proxy, sock: socket.socket, size: int, deadline: Deadline, cap: Optional[float]) -> bytes:
    data = b""
    while len(data) < size:
        piece = _recv(proxy, sock, deadline, cap, size - len(data))  # never past this message
        if not piece:
            raise ProxyFailed(f"the proxy {proxy.display} closed the connection mid-handshake")
        data += piece
    return data


def _os_words(exc: OSError) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return (exc.strerror or type(exc).__name__).lower()


# What Go's url.Parse refuses and Python's urlsplit lets through: a control character anywhere (urlsplit drops tabs
# and line breaks silently, so "http://proxy:3128<TAB>" would become another URL), and a "%" that is not an escape
# (golang/go src/net/url/url.go: parse -> "invalid control character in URL"; unescape -> EscapeError).
_CONTROL = r"[\x00-\x1f\x7f]"  # both compiled at first use, by re
_BAD_ESCAPE = r"%(?![0-9A-Fa-f]{2})"


def _split(url: str, origin: str) -> SplitResult:
    safe = "<redacted>@" + url.rsplit("@", 1)[1] if "@" in url else url  # repr() below escapes what is left
    before_query = url.split("?", 1)[0].split("#", 1)[0]  # Go checks the escapes of the query only when asked
    if re.search(_CONTROL, url) or re.search(_BAD_ESCAPE, before_query):
        raise ConfigError(f"invalid proxy address {safe!r} ({origin})")
    try:
        return urlsplit(url)
    except ValueError:  # "http://[::1": an unclosed IPv6 literal
        raise ConfigError(f"invalid proxy address {safe!r} ({origin})") from None


def _redacted(parts: SplitResult) -> str:
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "<redacted>@" + netloc.rsplit("@", 1)[1]
        return parts._replace(netloc=netloc).geturl()
    text = parts.geturl()
    if "@" in text:  # "user:password@host" without "//" parses as a scheme and a path: still never shown
        return f"{parts.scheme}:<redacted>@" + text.rsplit("@", 1)[1]
    return text


# ---- which proxy ------------------------------------------------------------------------------------------


def from_kubeconfig(url: str, where: str) -> Proxy:
    """The cluster's proxy-url (``where``: 'cluster "name"'), refused in kubectl's words, with its URL shown
    without credentials."""
    parts = _split(url, f"proxy-url of {where}")
    shown = _redacted(parts)
    if parts.scheme.lower() not in KUBECONFIG_SCHEMES:
        raise ConfigError(f"invalid 'proxy-url' \"{shown}\" for {where}: unsupported scheme "
                          f"\"{parts.scheme}\", must be http, https, or socks5")
    return Proxy(url, "proxy-url")


def checked_proxy_url(url: Optional[str], where: str) -> Optional[str]:
    """A kubeconfig's proxy-url, validated when the kubeconfig is read (kubectl refuses it before any request)."""
    if url:
        from_kubeconfig(url, where)
    return url


def _env(environ: Mapping[str, str], *names: str) -> tuple[str, str]:
    for name in names:
        value = environ.get(name, "")
        if value:
            return name, value
    return "", ""


def _parse_env_proxy(value: str, name: str) -> Proxy:
    """Go's httpproxy.parseProxy: a value without a scheme or host is taken as http://value."""
    parts = _split(value, name)
    if not parts.scheme or not parts.netloc:
        value = "http://" + value
        parts = _split(value, name)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        # kubectl would CONNECT through it as if it said http://; say so rather than guess along.
        raise ConfigError(f"{name} names a proxy of scheme \"{parts.scheme}\" ({_redacted(parts)}); "
                          "write http://, https:// or socks5://")
    return Proxy(value, name)


def from_environment(server_url: str, environ: Mapping[str, str]) -> Optional[Proxy]:
    """The proxy Go's ProxyFromEnvironment picks for ``server_url`` (with client-go's NO_PROXY CIDRs)."""
    parts = urlsplit(server_url)
    scheme = parts.scheme.lower()
    if scheme == "https":
        name, value = _env(environ, "HTTPS_PROXY", "https_proxy")
    elif scheme == "http":
        name, value = _env(environ, "HTTP_PROXY", "http_proxy")
        if value and environ.get("REQUEST_METHOD"):
            raise ConfigError("refusing to use HTTP_PROXY value in CGI environment; see golang.org/s/cgihttpproxy")
    else:
        return None
    if not value:
        return None
    host, port = _host_port(parts.netloc)
    if not port:
        port = str(DEFAULT_PORTS[scheme])
    if not use_proxy(host, port, _env(environ, "NO_PROXY", "no_proxy")[1]):
        return None
    return _parse_env_proxy(value, name)


def _host_port(netloc: str) -> tuple[str, str]:
    """Go's URL.Hostname() and Port(): the host as written (not lower-cased: Go's proxy choice compares it with
    "localhost" before it lowers it, so https://LOCALHOST goes through the proxy), brackets removed."""
    host = netloc.rpartition("@")[2]
    port = ""
    colon = host.rfind(":")
    if colon >= 0 and host[colon + 1:].isdigit() and "]" not in host[colon:]:
        host, port = host[:colon], host[colon + 1:]
    elif colon >= 0 and colon == len(host) - 1:
        host = host[:colon]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return unquote(host), port


def choose(server_url: str, proxy_url: Optional[str], environ: Mapping[str, str]) -> Optional[Proxy]:
    """The kubeconfig's proxy-url wins over the environment (and is used even for a loopback server)."""
    if proxy_url:
        return from_kubeconfig(proxy_url, "the cluster")
    return from_environment(server_url, environ)


def _ip(text: str) -> Union[IPv4Address, IPv6Address, None]:
    """Go's net.ParseIP, with an IPv4-mapped IPv6 address as its IPv4 address (Go's IP.To4 makes them one: ::ffff:127.0.0.1
    is loopback and inside 127.0.0.0/8, golang/go src/net/ip.go IsLoopback, IPNet.Contains)."""
    import ipaddress  # only when a proxy is set in the environment

    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0] if ":" in text else text)
    except ValueError:
        return None
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return mapped if mapped is not None else ip


def _idna(name: str) -> str:
    if name.isascii():
        return name
    try:
        return ".".join(label.encode("idna").decode("ascii") if label else "" for label in name.split("."))
    except UnicodeError:
        return name


def _split_host_port(entry: str) -> Optional[tuple[str, str]]:
    """Go's net.SplitHostPort, for NO_PROXY entries: None when the entry has no port."""
    if entry.startswith("["):
        end = entry.find("]")
        if end < 0 or not entry[end + 1:].startswith(":"):
            return None
        return entry[1:end], entry[end + 2:]
    if entry.count(":") != 1:
        return None
    host, port = entry.split(":")
    return host, port


def use_proxy(host: str, port: str, no_proxy: str) -> bool:
    """httpproxy's useProxy: False for localhost, loopback IPs and what NO_PROXY names."""
    host = _idna(host)
    if host == "localhost":
        return False
    ip = _ip(host)
    if ip is not None and ip.is_loopback:
        return False
    host = host.strip().lower()
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return False
        if "/" in entry:  # IPv4/CIDR, IPv6/CIDR (client-go's NewProxierWithNoProxyCIDR takes these too)
            import ipaddress

            try:
                network = ipaddress.ip_network(entry, strict=False)
            except ValueError:
                network = None
            if network is not None:
                if ip is not None and ip.version == network.version and ip in network:
                    return False
                continue
        split = _split_host_port(entry)
        entry_host, entry_port = split if split is not None else (entry, "")
        if split is not None and not entry_host:
            continue  # ":1": malformed, ignored
        entry_ip = _ip(entry_host)
        if entry_ip is not None:
            if ip is not None and ip == entry_ip and (not entry_port or entry_port == port):
                return False
            continue
        if not entry_host or ip is not None:  # a domain entry never matches an IP address
            continue
        if entry_host.startswith("*."):
            entry_host = entry_host[1:]
        match_host = not entry_host.startswith(".")
        if match_host:
            entry_host = "." + entry_host
        entry_host = _idna(entry_host)
        if (host.endswith(entry_host) or (match_host and host == entry_host[1:])) and (not entry_port or entry_port == port):
            return False
    return True
