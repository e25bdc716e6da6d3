"""Kubeconfig text read without PyYAML, whose import costs ~15 ms of every run's start-up.

Two shapes are read here: JSON, and the plain block YAML that kubectl and the cloud CLIs write (``key: value``
lines, ``- `` items, plain or simply quoted scalars). Anything else returns None and the caller reads the text
with PyYAML's SafeLoader as before: anchors, tags, flow collections, block scalars, escapes, comments after a
value, tabs, CR, non-ASCII, numbers other than plain decimal integers, continuation lines. Within these shapes
every value is the one SafeLoader gives (duplicate keys: the last wins), so what a file means never depends
on which reader took it; tests/test_startup_unit.py compares the two on generated and hand-made files.
"""

from __future__ import annotations

import re
from typing import Any, Optional

# Outside the shapes read here: a character other than printable ASCII and LF, and any backslash (an escape).
_OUTSIDE = re.compile(r"[^\n\x20-\x7e]|\\")
# JSON that SafeLoader reads otherwise, or refuses: a key whose ':' is on a later line, a key too long for
# YAML's simple keys (1024 characters).
_JSON_KEY_APART = re.compile(r'"[^"\n]*"[ \n]*\n[ \n]*:')
_JSON_LONG_KEY = re.compile(r'"[^"\n]{1000,}"[ \n]*:')
_NULLS = frozenset(("~", "null", "Null", "NULL"))
_BOOLS = {word: value for words, value in ((("yes", "true", "on"), True), (("no", "false", "off"), False))
          for lower in words for word in (lower, lower.capitalize(), lower.upper())}
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_NOT_PLAIN_START = ",[]{}#&*!|>'\"%@`"  # YAML indicators that cannot begin a plain scalar


class _Unsupported(Exception):
    """Outside the shapes read here: PyYAML reads this text."""


def read(text: str) -> Optional[dict[str, Any]]:
    """The document as SafeLoader would give it, or None when the text is not in a shape read here."""
    if _OUTSIDE.search(text):
        return None
    if text.lstrip(" \n").startswith("{"):
        return _json(text)
    try:
        return _block(text)
    except (_Unsupported, RecursionError):
        return None


def _json(text: str) -> Optional[dict[str, Any]]:
    import json  # JSON kubeconfigs only

    if _JSON_KEY_APART.search(text) or _JSON_LONG_KEY.search(text):
        return None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):  # not JSON (YAML's flow style is wider): PyYAML says what is wrong
        return None
    # YAML 1.1 reads some JSON numbers as strings (1e5): only documents without fractions are read here.
    return doc if isinstance(doc, dict) and not _has_float(doc) else None


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


def _block(text: str) -> Optional[dict[str, Any]]:
    lines: list[tuple[int, str]] = []  # (indent, content) of every line that is not blank or a comment
    for raw in text.split("\n"):
        content = raw.lstrip(" ")
        if not content or content.startswith("#"):
            continue
        if "#" in content:  # a comment after a value, or a '#' PyYAML may read either way
            return None
        lines.append((len(raw) - len(content), content.rstrip(" ")))
    if not lines or lines[0][0] != 0 or lines[0][1].startswith(("---", "...", "%")):
        return None
    doc, end = _node(lines, 0, 0)
    return doc if end == len(lines) and isinstance(doc, dict) else None


def _is_item(content: str) -> bool:
    return content == "-" or content.startswith("- ")


def _node(lines: list[tuple[int, str]], i: int, indent: int) -> tuple[Any, int]:
    return _sequence(lines, i, indent) if _is_item(lines[i][1]) else _mapping(lines, i, indent)


def _mapping(lines: list[tuple[int, str]], i: int, indent: int) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    while i < len(lines) and lines[i][0] == indent and not _is_item(lines[i][1]):
        key, rest = _entry(lines[i][1])
        i += 1
        if rest:
            out[key] = _scalar(rest)
        elif i < len(lines) and (lines[i][0] > indent or (lines[i][0] == indent and _is_item(lines[i][1]))):
            out[key], i = _node(lines, i, lines[i][0])  # a block below the key (a list may sit at its indent)
        else:
            out[key] = None
    if i < len(lines) and lines[i][0] >= indent:  # a continuation line, an item after a scalar, bad indentation
        raise _Unsupported
    return out, i


def _sequence(lines: list[tuple[int, str]], i: int, indent: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    while i < len(lines) and lines[i][0] == indent and _is_item(lines[i][1]):
        body = lines[i][1][2:]
        content = body.lstrip(" ")
        if not content or _is_item(content):  # an item on the lines below, or a list in a list
            raise _Unsupported
        if ": " in content or content.endswith(":"):  # a mapping that starts on the item's line
            lines[i] = (indent + 2 + len(body) - len(content), content)
            value, i = _mapping(lines, i, lines[i][0])
        else:
            value, i = _scalar(content), i + 1
        out.append(value)
    if i < len(lines) and lines[i][0] > indent:
        raise _Unsupported
    return out, i


def _entry(content: str) -> tuple[str, str]:
    key, separator, rest = content.partition(": ")
    if not separator:
        if not content.endswith(":"):
            raise _Unsupported  # a scalar where a key belongs: PyYAML's error
        key, rest = content[:-1], ""
    key = key.rstrip(" ")
    if not key or ":" in key or len(key) > 1000 or not isinstance(_plain(key), str):
        raise _Unsupported
    return key, rest.strip(" ")


def _scalar(text: str) -> Any:
    if text == "{}":
        return {}
    if text == "[]":
        return []
    if text[0] == "'":
        body = text[1:-1]
        if len(text) < 2 or text[-1] != "'" or "'" in body.replace("''", ""):
            raise _Unsupported
        return body.replace("''", "'")
    if text[0] == '"':
        body = text[1:-1]
        if len(text) < 2 or text[-1] != '"' or '"' in body:
            raise _Unsupported
        return body
    return _plain(text)


def _plain(text: str) -> Any:
    """A plain scalar resolved as YAML 1.1 resolves it: null, bool, a decimal int, else a string."""
    first = text[0]
    if first in _NOT_PLAIN_START or (first in "-?:" and text[1:2] in ("", " ")):
        raise _Unsupported
    if ": " in text or text.endswith(":"):
        raise _Unsupported
    if text in _NULLS:
        return None
    if text in _BOOLS:
        return _BOOLS[text]
    if _DECIMAL.fullmatch(text):
        return int(text)
    if first in "+.0123456789<=" or (first == "-" and text[1] in ".0123456789"):
        raise _Unsupported  # a float, an octal, hex or sexagesimal int, a timestamp, a merge key or '='
    return text
