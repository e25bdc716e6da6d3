"""--request-timeout takes what kubectl takes: Go's durations (checked by hand against kubectl 1.33:
`.5s` and `5.s` are accepted, `.s` is refused) or a bare number of seconds."""

from __future__ import annotations

import argparse

import pytest

from kubectl_pvleft.flags import parse_request_timeout


@pytest.mark.parametrize("text, seconds", [
    (".5s", 0.5), ("5.s", 5.0), ("1.5s", 1.5), ("1m30s", 90.0), ("500ms", 0.5), ("2h", 7200.0), ("10", 10.0),
    ("1\u00b5s", 1e-6), ("1\u03bcs", 1e-6), ("0", None), ("0s", None),
])
def test_go_durations_and_bare_seconds(text: str, seconds: float) -> None:
    assert parse_request_timeout(text) == seconds


@pytest.mark.parametrize("text", [".s", "s", "-1s", "1x", "5. s", "1m 30s", ""])
def test_what_kubectl_refuses_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_request_timeout(text)
