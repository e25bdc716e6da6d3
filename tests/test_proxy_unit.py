"""Which proxy, by Go's rules: golang.org/x/net/http/httpproxy's own test table (proxy_test.go) as data.

Go's ProxyFunc(config)(url) is ``from_environment(url, environ)`` here; a case's ``want`` is the proxy URL Go
returns (``None`` for none). Two documented differences: a value of a scheme Go does not speak (``foo://``,
which Go's transport would CONNECT through as if it were http://) is refused here in one line, and an
unparsable value (which Go ignores) is refused too.
"""

from __future__ import annotations

import pytest

from cli_runner import invoke
from kubectl_pvleft.errors import ConfigError
from kubectl_pvleft.kube.proxy import Proxy, choose, from_environment, from_kubeconfig, use_proxy

# (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, CGI, request URL, the proxy Go picks)
PROXY_FOR_URL = [
    ("127.0.0.1:8080", "", "", False, "", "http://127.0.0.1:8080"),
    ("cache.corp.example.com:1234", "", "", False, "", "http://cache.corp.example.com:1234"),
    ("cache.corp.example.com", "", "", False, "", "http://cache.corp.example.com"),
    ("localhost", "", "", False, "", "http://localhost"),  # a single label is not a scheme
    ("https://cache.corp.example.com", "", "", False, "", "https://cache.corp.example.com"),
    ("http://127.0.0.1:8080", "", "", False, "", "http://127.0.0.1:8080"),
    ("https://127.0.0.1:8080", "", "", False, "", "https://127.0.0.1:8080"),
    ("socks5://127.0.0.1", "", "", False, "", "socks5://127.0.0.1"),
    ("http.proxy.tld", "secure.proxy.tld", "", False, "http://insecure.tld/", "http://http.proxy.tld"),
    ("http.proxy.tld", "secure.proxy.tld", "", False, "https://secure.tld/", "http://secure.proxy.tld"),
    ("http.proxy.tld", "https://secure.proxy.tld", "", False, "https://secure.tld/", "https://secure.proxy.tld"),
    ("http.proxy.tld", "", "", False, "https://secure.tld/", None),
    ("http.proxy.tld", "", "", False, "ftp://insecure.tld/", None),
    ("", "https://secure.proxy.tld", "", True, "https://secure.tld/", "https://secure.proxy.tld"),
    ("", "", "", False, "", None),
    ("proxy", "", "example.com", False, "http://example.com/", None),
    ("proxy", "", ".example.com", False, "http://example.com/", "http://proxy"),
    ("proxy", "", "ample.com", False, "http://example.com/", "http://proxy"),
    ("proxy", "", "example.com", False, "http://foo.example.com/", None),
    ("proxy", "", ".foo.com", False, "http://example.com/", "http://proxy"),
    ("proxy", "", ".示例.com", False, "http://www.示例.com", None),
    ("proxy", "", "xn--fsq092h.com", False, "http://www.示例.com", None),
    ("proxy", "", "示例.com", False, "http://www.xn--fsq092h.com", None),
    ("proxy", "", "example.com", False, "http://[1000::%25.example.com]:123", "http://proxy"),
    # Go 1.22+ speaks socks5h as socks5 (kubectl 1.33 is built with Go 1.24): accepted from the environment.
    ("socks5h://127.0.0.1", "", "", False, "", "socks5h://127.0.0.1"),
]


def environ(http: str, https: str, no_proxy: str, cgi: bool) -> dict[str, str]:
    env = {"HTTP_PROXY": http, "HTTPS_PROXY": https, "NO_PROXY": no_proxy}
    if cgi:
        env["REQUEST_METHOD"] = "GET"
    return env


@pytest.mark.parametrize("http,https,no_proxy,cgi,url,want", PROXY_FOR_URL)
def test_proxy_for_url(http, https, no_proxy, cgi, url, want):
    proxy = from_environment(url or "http://example.com", environ(http, https, no_proxy, cgi))
    assert (proxy.display if proxy else None) == want


def test_http_proxy_is_refused_in_a_cgi_environment():
    with pytest.raises(ConfigError, match=r"refusing to use HTTP_PROXY value in CGI environment"):
        from_environment("http://example.com", environ("http://10.1.2.3:8080", "", "", True))


def test_a_scheme_go_would_treat_as_http_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r'HTTP_PROXY names a proxy of scheme "foo" \(foo://host\)'):
        from_environment("http://example.com", environ("foo://host", "", "", False))


@pytest.mark.parametrize("upper,lower,want", [
    ("http://upper:1", "http://lower:1", "http://upper:1"),  # the upper-case name first
    ("", "http://lower:1", "http://lower:1"),  # an empty value counts as unset
    (None, "http://lower:1", "http://lower:1"),
])
def test_upper_case_first(upper, lower, want):
    env = {"https_proxy": lower, **({"HTTPS_PROXY": upper} if upper is not None else {})}
    proxy = from_environment("https://example.com", env)
    assert proxy is not None and proxy.display == want


def test_no_proxy_lower_case():
    assert from_environment("https://example.com", {"HTTPS_PROXY": "p:1", "no_proxy": "example.com"}) is None


NO_PROXY = ("foobar.com, .barbaz.net, *.wildcard.io, 192.168.1.1, 192.168.1.2:81, 192.168.1.3:80, 10.0.0.0/30, "
            "2001:db8::52:0:1, [2001:db8::52:0:2]:443, [2001:db8::52:0:3]:80, 2002:db8:a::45/64")

USE_PROXY = [  # httpproxy's UseProxyTests: (host, whether a proxy is used for host:80)
    ("localhost", False), ("127.0.0.1", False), ("127.0.0.2", False), ("[::1]", False), ("[::2]", True),
    ("192.168.1.1", False), ("192.168.1.2", True), ("192.168.1.3", False), ("192.168.1.4", True),
    ("10.0.0.2", False), ("[2001:db8::52:0:1]", False), ("[2001:db8::52:0:2]", True),
    ("[2001:db8::52:0:3]", False), ("[2002:db8:a::123]", False), ("[fe80::424b:c8be:1643:a1b6]", True),
    ("barbaz.net", True), ("www.barbaz.net", False), ("foobar.com", False), ("www.foobar.com", False),
    ("foofoobar.com", True), ("baz.com", True), ("localhost.net", True), ("local.localhost", True),
    ("barbarbaz.net", True), ("wildcard.io", True), ("nested.wildcard.io", False), ("awildcard.io", True),
]


@pytest.mark.parametrize("host,used", USE_PROXY)
def test_use_proxy(host, used):
    assert use_proxy(host.strip("[]"), "80", NO_PROXY) is used


@pytest.mark.parametrize("host,used", USE_PROXY)
def test_a_star_means_no_proxy_at_all(host, used):
    assert use_proxy(host.strip("[]"), "80", "*") is False


def test_a_malformed_no_proxy_entry_is_ignored():
    assert use_proxy("example.com", "80", ":1") is True


def test_a_domain_entry_never_matches_an_ip():
    assert use_proxy("10.1.2.3", "443", "2.3") is True


def test_proxy_url_wins_over_the_environment_and_is_used_for_loopback():
    proxy = choose("https://127.0.0.1:6443", "http://squid:3128", {"HTTPS_PROXY": "http://other:1"})
    assert proxy is not None and (proxy.display, proxy.origin) == ("http://squid:3128", "proxy-url")
    assert choose("https://127.0.0.1:6443", None, {"HTTPS_PROXY": "http://other:1"}) is None


@pytest.mark.parametrize("scheme,port", [("http", 80), ("https", 443), ("socks5", 1080)])
def test_default_ports(scheme, port):
    assert Proxy(f"{scheme}://proxy.example", "proxy-url").port == port


def test_credentials_are_read_and_never_shown():
    proxy = Proxy("http://us%40er:p%3Ass@proxy.example:3128", "HTTPS_PROXY")
    assert (proxy.username, proxy.password) == ("us@er", "p:ss")
    assert proxy.display == "http://<redacted>@proxy.example:3128"
    assert "p:ss" not in repr(proxy) and "p%3Ass" not in repr(proxy)


@pytest.mark.parametrize("url,scheme", [("socks5h://u:hunter2@h:1080", "socks5h"), ("ftp://u:hunter2@h", "ftp"),
                                        ("u:hunter2@h:1", "u")])
def test_proxy_url_schemes_kubectl_refuses(url, scheme):
    with pytest.raises(ConfigError) as caught:
        from_kubeconfig(url, 'cluster "c"')
    message = str(caught.value)
    assert message.startswith(f"invalid 'proxy-url' \"{scheme}")
    assert message.endswith(f'for cluster "c": unsupported scheme "{scheme}", must be http, https, or socks5')
    assert "hunter2" not in message


def test_a_bad_proxy_url_is_one_error_line_before_any_request(tmp_path):
    path = tmp_path / "config"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1', proxy-url: 'socks5h://u:hunter2@h:1'}}]\n"
        "users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n")
    result = invoke("leftovers", "--kubeconfig", str(path))
    assert result.code == 1
    assert result.stderr.splitlines() == [
        "error: invalid 'proxy-url' \"socks5h://<redacted>@h:1\" for cluster \"c\": unsupported scheme \"socks5h\", "
        "must be http, https, or socks5"]


def _silent_listener():
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # the kernel completes the TCP handshake; nobody ever reads or answers
    return listener


@pytest.mark.parametrize("scheme", ["http", "socks5"])
def test_a_proxy_that_never_answers_ends_at_the_request_timeout(tmp_path, scheme):
    listener = _silent_listener()
    try:
        port = listener.getsockname()[1]
        path = tmp_path / "config"
        path.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
            f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true, "
            f"proxy-url: '{scheme}://127.0.0.1:{port}'}}}}]\n"
            "users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n")
        result = invoke("leftovers", "--kubeconfig", str(path), "--request-timeout", "300ms")
    finally:
        listener.close()
    assert result.code == 1
    assert result.stderr.splitlines() == [f"error: the proxy {scheme}://127.0.0.1:{port} did not answer in time"]



def test_a_proxy_url_without_a_host_is_refused_without_its_credentials():
    with pytest.raises(ConfigError) as caught:
        from_kubeconfig("http:u:hunter2@h:1", 'cluster "c"')
    assert str(caught.value) == "invalid proxy address http:<redacted>@h:1 (proxy-url): no host"


@pytest.mark.parametrize("value", ["http://u:hunter2@[::1", "http://[::1"])
def test_an_unparsable_proxy_value_is_one_line_without_its_credentials(value):
    for call in (lambda: from_environment("https://example.com", {"HTTPS_PROXY": value}),
                 lambda: from_kubeconfig(value, 'cluster "c"')):
        with pytest.raises(ConfigError, match=r"^invalid proxy address '") as caught:
            call()
        assert "hunter2" not in str(caught.value)


# Answers of Go's own ProxyFunc (golang.org/x/net/http/httpproxy proxy.go: config.useProxy, canonicalAddr), asked
# on this machine with x/net v0.57.0, the version tests/cluster/go.mod pins: what kubectl does with each.
@pytest.mark.parametrize("server,want", [
    ("https://[::ffff:127.0.0.1]:6443", None),  # IPv4-mapped loopback: net.IP.IsLoopback looks at To4()
    ("https://[::1]:6443", None),
    ("https://localhost:6443", None),
    ("https://LOCALHOST", "http://proxy:3128"),  # useProxy compares with "localhost" before it lower-cases
])
def test_loopback_as_go_sees_it(server, want):
    proxy = from_environment(server, {"HTTPS_PROXY": "proxy:3128"})
    assert (proxy.display if proxy else None) == want


def test_an_ipv4_mapped_address_is_inside_an_ipv4_no_proxy_cidr():
    """Go's IPNet.Contains takes an IPv4-mapped address as its IPv4 address (golang/go src/net/ip.go)."""
    assert from_environment("https://[::ffff:10.1.2.3]:6443", {"HTTPS_PROXY": "proxy", "NO_PROXY": "10.0.0.0/8"}) is None


def test_port_zero_is_dialled_as_zero_not_as_the_default():
    """Go's ProxyFunc hands back http://proxy:0 and the transport dials port 0; never port 80 instead."""
    assert Proxy("http://proxy:0", "HTTPS_PROXY").port == 0
    assert Proxy("http://proxy", "HTTPS_PROXY").port == 80


@pytest.mark.parametrize("value", ["http://proxy:3128\t", "http://proxy\n:3128", "http://%zz", "http://u:p%zz@proxy",
                                   "http://proxy/%zz"])
def test_a_value_go_cannot_parse_is_refused_never_trimmed(value):
    """url.Parse refuses a control character and a "%" that is no escape (golang/go src/net/url/url.go parse,
    unescape), and kubectl then ignores the variable. Python's urlsplit drops tabs and line breaks and keeps "%zz";
    here such a value is one error line (docs/networks: a deliberate refusal), never another proxy than the one
    written, and never its credentials."""
    with pytest.raises(ConfigError, match=r"^invalid proxy address '") as caught:
        from_environment("https://example.com", {"HTTPS_PROXY": value})
    assert "p%zz" not in str(caught.value)
    assert "\t" not in str(caught.value) and "\n" not in str(caught.value)
