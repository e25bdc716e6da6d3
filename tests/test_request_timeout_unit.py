"""--request-timeout takes exactly what kubectl takes (clientcmd.ParseTimeout): a whole number of seconds as Go's
strconv.ParseInt reads it, else a duration as Go's time.ParseDuration reads it. Go's own ParseDuration tables are
the data (golang/go, src/time/time_test.go: parseDurationTests and parseDurationErrorTests), in nanoseconds, then
kubectl's rule on top: zero, negative or under a nanosecond means no timeout."""

from __future__ import annotations

import argparse

import pytest

from kubectl_pvleft.cli.parser import go_duration, parse_request_timeout

NS, US, MS, S, M, H = 1, 10**3, 10**6, 10**9, 60 * 10**9, 3600 * 10**9

# parseDurationTests, as Go has them.
GO_DURATIONS = [
    ("0", 0), ("5s", 5 * S), ("30s", 30 * S), ("1478s", 1478 * S),
    ("-5s", -5 * S), ("+5s", 5 * S), ("-0", 0), ("+0", 0),
    ("5.0s", 5 * S), ("5.6s", 5 * S + 600 * MS), ("5.s", 5 * S), (".5s", 500 * MS), ("1.0s", S), ("1.00s", S),
    ("1.004s", S + 4 * MS), ("1.0040s", S + 4 * MS), ("100.00100s", 100 * S + MS),
    ("10ns", 10 * NS), ("11us", 11 * US), ("12\u00b5s", 12 * US), ("12\u03bcs", 12 * US), ("13ms", 13 * MS),
    ("14s", 14 * S), ("15m", 15 * M), ("16h", 16 * H),
    ("3h30m", 3 * H + 30 * M), ("10.5s4m", 4 * M + 10 * S + 500 * MS), ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
    ("1h2m3s4ms5us6ns", H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS), ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
    ("52763797000ns", 52763797000), ("0.3333333333333333333h", 20 * M), ("9007199254740993ns", (1 << 53) + 1),
    ("9223372036854775807ns", (1 << 63) - 1), ("9223372036854775.807us", (1 << 63) - 1),
    ("9223372036s854ms775us807ns", (1 << 63) - 1), ("-9223372036854775808ns", -(1 << 63)),
    ("-9223372036854775.808us", -(1 << 63)), ("-9223372036s854ms775us808ns", -(1 << 63)),
    ("-2562047h47m16.854775808s", -(1 << 63)), ("0.100000000000000000000h", 6 * M),
    ("0.830103483285477580700h", 49 * M + 48 * S + 372539827 * NS),
]

# parseDurationErrorTests (invalid, then overflow), as Go has them (its byte strings as Python text where they are
# text: "\xffff" is not UTF-8, which a command line here cannot carry, so its neighbour "\ufffd" stands in).
GO_ERRORS = ["", "3", "-", "s", ".", "-.", ".s", "+.s", "1d", "\x85\x85", "\ufffd", "\ufffd hello \ufffd world",
             "9223372036854775810ns", "9223372036854775808ns", "-9223372036854775809ns", "9223372036854776us",
             "3000000h", "9223372036854775.808us", "9223372036854ms775us808ns"]


@pytest.mark.parametrize("text, nanoseconds", GO_DURATIONS)
def test_go_parse_duration_table(text: str, nanoseconds: int) -> None:
    assert go_duration(text) == nanoseconds


@pytest.mark.parametrize("text", GO_ERRORS)
def test_go_parse_duration_error_table(text: str) -> None:
    with pytest.raises(ValueError):
        go_duration(text)


@pytest.mark.parametrize("text, nanoseconds", GO_DURATIONS)
def test_every_go_duration_is_a_timeout_as_kubectl_takes_it(text: str, nanoseconds: int) -> None:
    assert parse_request_timeout(text) == (nanoseconds / 1e9 if nanoseconds > 0 else None)


# Checked by hand against kubectl 1.33 (`--request-timeout=X get pv` against a closed port): accepted or
# "Invalid timeout value".
@pytest.mark.parametrize("text, seconds", [
    ("5", 5.0), ("+5", 5.0), ("-0", None), ("0", None), ("", None), ("-1s", None), ("0.5ns", None),
    ("1.5s", 1.5), ("1m30s", 90.0), ("500ms", 0.5),
])
def test_what_kubectl_accepts(text: str, seconds) -> None:
    assert parse_request_timeout(text) == seconds


@pytest.mark.parametrize("text", ["-5", " 5s", "5s ", "\u0665s", "9223372036854775808ns", "1e3s", "soon", "1 m",
                                  "\u0665", "1_000", "0x10"])
def test_what_kubectl_refuses_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="Invalid timeout value"):
        parse_request_timeout(text)


def test_a_count_of_seconds_past_int64_nanoseconds_wraps_as_in_kubectl() -> None:
    # Go's time.Duration(i) * time.Second overflows silently; the wrapped value is what kubectl then uses.
    assert parse_request_timeout("9223372036") == 9223372036.0
    wrapped = (9223372037 * 10**9 + (1 << 63)) % (1 << 64) - (1 << 63)
    assert wrapped < 0 and parse_request_timeout("9223372037") is None
