"""Durations on the command line, parsed exactly as kubectl parses them: Go's time.ParseDuration to the nanosecond
(with its overflow rules), kubectl's --request-timeout (clientcmd.ParseTimeout), and --older-than (the same
grammar plus days)."""

from __future__ import annotations

import argparse
import re
from typing import Optional

from kubectl_pvleft.text import shown

_UNIT_NANOSECONDS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9,
                     "h": 3600 * 10**9}
_INT64 = 1 << 63
_TIMEOUT_WORDS = ("Invalid timeout value. Timeout must be a single integer in seconds, or an integer followed by a "
                  "corresponding time unit (e.g. 1s | 2m | 3h)")  # kubectl's own message


def go_duration(text: str) -> int:
    """Go's time.ParseDuration, to the nanosecond and with its overflow rules; ValueError where Go errs."""
    rest, negative = text, False
    if rest[:1] in ("-", "+"):
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ValueError(text)
    total = 0
    while rest:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        if rest[:1] != "." and not digits:
            raise ValueError(text)
        whole = int(rest[:digits]) if digits else 0
        if whole > _INT64:
            raise ValueError(text)  # leadingInt's overflow
        rest = rest[digits:]
        fraction, scale, after = 0, 1.0, False
        if rest[:1] == ".":
            rest = rest[1:]
            count = len(rest) - len(rest.lstrip("0123456789"))
            after, overflow = count > 0, False
            for c in rest[:count]:  # leadingFraction: digits past what 63 bits hold are dropped
                if overflow or fraction > (_INT64 - 1) // 10 or fraction * 10 + int(c) > _INT64:
                    overflow = True
                    continue
                fraction, scale = fraction * 10 + int(c), scale * 10
            rest = rest[count:]
        if not digits and not after:
            raise ValueError(text)
        unit_length = 0
        while unit_length < len(rest) and rest[unit_length] != "." and not "0" <= rest[unit_length] <= "9":
            unit_length += 1
        unit = _UNIT_NANOSECONDS.get(rest[:unit_length])
        if unit is None:  # a missing or unknown unit
            raise ValueError(text)
        rest = rest[unit_length:]
        if whole > _INT64 // unit:
            raise ValueError(text)
        whole *= unit
        if fraction:
            whole += int(float(fraction) * (float(unit) / scale))  # Go's float64 step, to match it to the ns
            if whole > _INT64:
                raise ValueError(text)
        total += whole
        if total > _INT64:
            raise ValueError(text)
    if negative:
        return -total
    if total > _INT64 - 1:
        raise ValueError(text)
    return total


def parse_request_timeout(text: str) -> Optional[float]:
    """kubectl's --request-timeout (clientcmd.ParseTimeout): a whole number of seconds (Go's ParseInt: a sign
    allowed, ASCII digits only), else a Go duration (1s, 2m, 1m30s, 1.5h, -5s). Zero, a negative duration, or
    anything under a nanosecond means no timeout, as kubectl treats them; nothing else is accepted."""
    if text == "":  # kubectl: an empty value is no timeout given
        return None
    body = text[1:] if text[:1] in ("+", "-") else text
    if body and body.isascii() and body.isdigit() and -_INT64 <= int(text) < _INT64:
        seconds = int(text)
        if seconds >= 0:
            # Go multiplies by time.Second in int64: a count of seconds past 292 years wraps, as it does in kubectl.
            nanoseconds = (seconds * 10**9 + _INT64) % (2 * _INT64) - _INT64
            return nanoseconds / 1e9 if nanoseconds > 0 else None
    try:
        nanoseconds = go_duration(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{_TIMEOUT_WORDS}: {shown(text)!r}") from None
    return nanoseconds / 1e9 if nanoseconds > 0 else None


_DAYS = r"([0-9]*\.?[0-9]*)d"  # a number of days, as one term of a duration: 7d, 1.5d, 1d12h


def parse_age(text: str) -> float:
    """--older-than: kubectl's (Go's) duration syntax plus ``d`` for days (7d, 36h, 1d12h, 90m), in seconds.
    Negative or malformed: one error line, before any request."""
    what = (f"invalid duration {shown(text)!r}: a positive duration such as 7d, 36h, 90m or 1d12h "
            "(units d, h, m, s, ms, us, ns)")
    days = 0.0
    rest = text

    def strip_days(match: re.Match[str]) -> str:
        nonlocal days
        number = match.group(1)
        if number in ("", "."):
            raise argparse.ArgumentTypeError(what)
        days += float(number)
        return ""

    if "d" in text:
        rest = re.sub(_DAYS, strip_days, text)
    try:
        nanoseconds = go_duration(rest) if rest else 0
    except ValueError:
        raise argparse.ArgumentTypeError(what) from None
    if nanoseconds < 0 or rest[:1] == "-" or text[:1] in ("-", "+") or not text:
        raise argparse.ArgumentTypeError(what)
    return days * 86400 + nanoseconds / 1e9
