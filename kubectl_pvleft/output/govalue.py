"""Go's printing of decoded JSON values, as kubectl's printers use it: fmt's %v, %#v and %q, strconv's quoting
and unquoting, encoding/json's escaping, and the Go type a decoded value has. Shared by the JSONPath dialect,
custom-columns and --sort-by, so all three print and compare values as kubectl does.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from kubectl_pvleft.errors import TemplateError


class GoByte(int):
    """A uint8: what `.*` and `..` yield for each byte of a string, since Go indexes strings by byte."""


class _NoValue:
    """Go's invalid reflect.Value: what a template runs on inside an empty range or on a null range element."""

    def __repr__(self) -> str:
        return "<invalid reflect.Value>"


NO_VALUE: Any = _NoValue()
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def is_int64(value: Any) -> bool:
    """A JSON integer Go decodes as int64 (a larger one it decodes as float64)."""
    return isinstance(value, int) and not isinstance(value, bool) and INT64_MIN <= value <= INT64_MAX


def _digits(value: float) -> tuple[str, int]:
    """Shortest round-trip digits d1d2... and point position p, value = 0.d1d2... x 10^p (as Go's strconv)."""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    stripped = digits.lstrip("0")
    return stripped.rstrip("0"), len(whole) + int(exponent or 0) - (len(digits) - len(stripped))


def _format_e(digits: str, point: int) -> str:
    exponent = point - 1
    return f"{digits[0]}{'.' + digits[1:] if len(digits) > 1 else ''}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"


def _format_f(digits: str, point: int) -> str:
    whole = digits[:point].ljust(point, "0") if point > 0 else "0"
    fraction = "".join(digits[k] if 0 <= k < len(digits) else "0" for k in range(point, len(digits)))
    return whole + ("." + fraction if fraction else "")


def go_float(value: float, json_style: bool = False) -> str:
    """strconv.FormatFloat(v, 'g', -1, 64), which fmt's %v prints; or encoding/json's form with json_style."""
    if value != value or value in (float("inf"), float("-inf")):
        text = "NaN" if value != value else ("+Inf" if value > 0 else "-Inf")
        if not json_style:
            return text
        raise TemplateError(f"json: unsupported value: {text}")
    sign = "-" if repr(value).startswith("-") else ""
    if value == 0:
        return sign + "0"
    digits, point = _digits(value)
    if json_style:
        if abs(value) < 1e-6 or abs(value) >= 1e21:
            return sign + re.sub(r"e-0(\d)\Z", r"e-\1", _format_e(digits, point))
        return sign + _format_f(digits, point)
    return sign + (_format_e(digits, point) if not -4 <= point - 1 < 6 else _format_f(digits, point))


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_JSON_SPECIAL = re.compile('["\\\\<>&\u2028\u2029\x00-\x1f\ud800-\udfff]')


def _json_string(text: str) -> str:
    def escape(match: re.Match[str]) -> str:
        ch = match.group(0)
        if ch in _JSON_ESCAPES:
            return _JSON_ESCAPES[ch]
        return "\\ufffd" if "\ud800" <= ch <= "\udfff" else f"\\u{ord(ch):04x}"  # HTML-safe, as Go escapes
    return '"' + _JSON_SPECIAL.sub(escape, text) + '"'


def go_json(value: Any, indent: Optional[str] = None) -> str:
    """encoding/json's Marshal, or MarshalIndent(v, "", indent): sorted keys, <>& escaped."""
    out: list[str] = []
    _append_json(out, value, indent, "\n")
    return "".join(out)


def _append_json(out: list[str], value: Any, indent: Optional[str], newline: str) -> None:
    if isinstance(value, (dict, list, tuple)):
        _append_json_container(out, value, indent, newline)
    else:
        out.append(_json_scalar(value))


def _json_scalar(value: Any) -> str:
    if value is None or value is NO_VALUE:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(int(value)) if is_int64(value) else go_float(float(value), json_style=True)
    if isinstance(value, str):
        return _json_string(value)
    raise TypeError(f"not a decoded JSON value: {type(value).__name__}")


def _append_json_container(out: list[str], value: Any, indent: Optional[str], newline: str) -> None:
    """An object (keys sorted) or an array; with an indent, each member on its own line one level deeper."""
    is_map = isinstance(value, dict)
    opening, closing = ("{", "}") if is_map else ("[", "]")
    inner = None if indent is None else newline + indent
    out.append(opening)
    for index, item in enumerate(sorted(value) if is_map else value):
        out.append(("," if index else "") + (inner or ""))
        if is_map:
            out.append(_json_string(item) + (":" if indent is None else ": "))
            item = value[item]
        _append_json(out, item, indent, inner or newline)
    out.append((newline if value and indent is not None else "") + closing)


def go_sprint(value: Any) -> str:
    """fmt.Sprint: `map[k:v ...]` with sorted keys, `[a b]`, `<nil>`, floats as %g."""
    if value is None or value is NO_VALUE:
        return "<nil>" if value is None else "<invalid reflect.Value>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(int(value)) if is_int64(value) else go_float(float(value))
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{go_sprint(value[key])}" for key in sorted(value)) + "]"
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(go_sprint(item) for item in value) + "]"
    return str(value)


def go_text(value: Any) -> str:
    """How client-go's PrintResults writes a scalar: strings raw, null as `null`."""
    return "null" if value is None else "<no value>" if value is NO_VALUE else go_sprint(value)


_QUOTE_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
                  '"': '\\"', "\\": "\\\\"}


def go_quote(text: str) -> str:
    """strconv.Quote (fmt's %q and a string's %#v)."""
    out = []
    for ch in text:
        ch = "\ufffd" if "\ud800" <= ch <= "\udfff" else ch  # Go decoded a lone surrogate escape as U+FFFD
        code = ord(ch)
        if ch in _QUOTE_ESCAPES:
            out.append(_QUOTE_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def go_syntax(value: Any, element: bool = False) -> str:
    """fmt's %#v of a decoded JSON value; `element` for one held in an interface{} (a map value, a list item)."""
    if isinstance(value, dict):
        return "map[string]interface {}{" + ", ".join(
            f"{go_quote(key)}:{go_syntax(value[key], True)}" for key in sorted(value)) + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_syntax(item, True) for item in value) + "}"
    if isinstance(value, str):
        return go_quote(value)
    if value is None:
        return "interface {}(nil)" if element else "<nil>"
    return go_sprint(value)


def go_type_name(value: Any) -> str:
    """The Go type of a decoded JSON value, as client-go's errors name it."""
    for kind, name in ((GoByte, "uint8"), (bool, "bool"), (str, "string"), (dict, "map[string]interface {}"),
                       (list, "[]interface {}")):
        if isinstance(value, kind):
            return name
    return ("int64" if is_int64(value) else "float64") if isinstance(value, (int, float)) else "interface {}"


_UNQUOTE_SIMPLE = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92}
_UNQUOTE_HEX_SIZES = {"x": 2, "u": 4, "U": 8}


def go_unquote(quoted: str) -> Optional[str]:
    """client-go's UnquoteExtend (strconv.Unquote, either quote); None where Go says `invalid syntax`."""
    quote, body = quoted[0], quoted[1:-1]
    if len(quoted) < 2 or quoted[-1] != quote:
        return None
    if "\\" not in body and quote not in body:
        return body
    out, i = bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch == quote:
            return None
        if ch == "\\":
            after = _unquote_escape(body, i + 1, quote, out)
            if after is None:
                return None
            i = after
        else:
            out += ch.encode("utf-8", "surrogatepass")
            i += 1
    return out.decode("utf-8", "replace")


def _unquote_escape(body: str, i: int, quote: str, out: bytearray) -> Optional[int]:
    """Appends the bytes of the escape whose letter is body[i] (after a backslash); the index after the escape,
    or None where Go says `invalid syntax`."""
    if i >= len(body):
        return None
    esc, i = body[i], i + 1
    if esc in _UNQUOTE_SIMPLE or (esc in "'\"" and esc == quote):
        out.append(_UNQUOTE_SIMPLE.get(esc, ord(esc)))
        return i
    if esc in _UNQUOTE_HEX_SIZES:
        return _unquote_hex(body, i, esc, out)
    if esc in "01234567":
        return _unquote_octal(body, i - 1, out)
    return None


def _unquote_hex(body: str, i: int, esc: str, out: bytearray) -> Optional[int]:
    """`\\xHH` (a raw byte), `\\uHHHH` or `\\UHHHHHHHH` (a code point, in UTF-8) whose digits start at body[i]."""
    size = _UNQUOTE_HEX_SIZES[esc]
    digits = body[i:i + size]
    if not re.fullmatch(f"[0-9a-fA-F]{{{size}}}", digits):
        return None
    code = int(digits, 16)
    if esc == "x":
        out.append(code)  # a raw byte, as Go's \x is
    elif code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        return None
    else:
        out += chr(code).encode("utf-8")
    return i + size


def _unquote_octal(body: str, start: int, out: bytearray) -> Optional[int]:
    """`\\OOO`: three octal digits from body[start], a byte (so at most \\377)."""
    digits = body[start:start + 3]
    if not re.fullmatch(r"[0-7]{3}", digits) or int(digits, 8) >= 256:
        return None
    out.append(int(digits, 8))
    return start + 3
