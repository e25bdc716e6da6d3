"""kubectl's printers around its JSONPath dialect: `-o custom-columns`, `-o custom-columns-file`, `--sort-by`,
and the Go printing of decoded JSON they and `jsonpath` share (fmt's %v, %#v and %q, encoding/json).

Ported from kubectl's pkg/cmd/get (customcolumn.go, sorter.go) and cli-runtime's printers, so cells, order
and error texts are kubectl's. The quantities --sort-by compares are parsed in `quantity`.
"""

from __future__ import annotations

import re
from functools import cmp_to_key
from typing import Any, Callable, Iterable, NamedTuple, Optional

from kubectl_pvleft.output.jsonpath import NO_VALUE, ExecutionError, GoByte, JSONPathTemplate, TemplateError, is_int64
from kubectl_pvleft.records.quantity import parse_quantity

# ---- Go's printing of decoded JSON values ---------------------------------------------------------------------


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
    def escape(match: re.Match) -> str:
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


def _append_json(out: list, value: Any, indent: Optional[str], newline: str) -> None:
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


def _append_json_container(out: list, value: Any, indent: Optional[str], newline: str) -> None:
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
    if not re.fullmatch(r"[0-9a-fA-F]{%d}" % size, digits):
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


# ---- custom-columns -------------------------------------------------------------------------------------------

_RELAXED = re.compile(r"\{\.?([^{}]+)\}\Z|\.?([^{}]+)\Z")


def relaxed_jsonpath_expression(expression: str) -> str:
    """RelaxedJSONPathExpression: `a.b`, `.a.b`, `{a.b}` and `{.a.b}` all become `{.a.b}`."""
    if not expression:
        return expression
    match = _RELAXED.match(expression)
    if match is None:
        raise TemplateError("unexpected path string, expected a 'name1.name2' or '.name1.name2' or "
                            "'{name1.name2}' or '{.name1.name2}'")
    return "{.%s}" % (match.group(1) or match.group(2))


class CustomColumn(NamedTuple):
    header: str
    template: JSONPathTemplate  # its .text is the relaxed expression, e.g. `{.spec.capacity.storage}`


def _column(header: str, expression: str) -> CustomColumn:
    text = relaxed_jsonpath_expression(expression)
    try:
        return CustomColumn(header, JSONPathTemplate(text))
    except TemplateError as exc:
        raise TemplateError(exc.reason) from None  # kubectl prints the parser's bare text here


# kubectl's tabwriter recurses once per column; so does ours. 256 columns is far past any table a person reads,
# and a bound here keeps 1,000 columns an error line rather than a RecursionError.
MAX_CUSTOM_COLUMNS = 256


def _bounded(columns: list[CustomColumn]) -> list[CustomColumn]:
    if len(columns) > MAX_CUSTOM_COLUMNS:
        raise TemplateError(f"custom-columns: at most {MAX_CUSTOM_COLUMNS} columns ({len(columns)} given)")
    return columns


def parse_custom_columns(spec: str) -> list[CustomColumn]:
    """`-o custom-columns=NAME:.metadata.name,CLAIM:.spec.claimRef.name`."""
    if not spec:
        raise TemplateError("custom-columns format specified but no custom columns given")
    parts = spec.split(",")
    if len(parts) > MAX_CUSTOM_COLUMNS:  # counted before any is parsed: each parse costs
        raise TemplateError(f"custom-columns: at most {MAX_CUSTOM_COLUMNS} columns ({len(parts)} given)")
    columns = []
    for part in parts:
        header, colon, expression = part.partition(":")
        if not colon:
            raise TemplateError(f"unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>")
        columns.append(_column(header, expression))
    return columns


_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"  # unicode.IsSpace, which bufio.ScanWords splits on


def parse_custom_columns_file(text: str) -> list[CustomColumn]:
    """`-o custom-columns-file=FILE`'s content: a line of headers, a line of expressions, whitespace-separated."""
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    if text.endswith("\n") or not text:
        lines.pop()  # bufio.Scanner yields no empty last line
    expected = "Expected format is one line of space separated headers, one line of space separated column specs."
    if not lines:
        raise TemplateError(f"invalid template, missing header line. {expected}")
    if len(lines) < 2:
        raise TemplateError(f"invalid template, missing spec line. {expected}")
    headers, specs = ([word for word in re.split(f"[{_GO_SPACE}]+", line) if word] for line in lines[:2])
    if len(headers) != len(specs):
        raise TemplateError(f"number of headers ({len(headers)}) and field specifications ({len(specs)}) don't match")
    return _bounded([_column(header, spec) for header, spec in zip(headers, specs)])


def _cell(evaluator: Any, obj: Any) -> str:
    try:
        found = evaluator.find_results(obj)
    except ExecutionError as exc:
        raise TemplateError(exc.reason) from None
    values = ["<none>"] if not found or not found[0] else []
    values += [go_sprint(value).replace("\x1b", "^[").replace("\r", "\\r")  # EscapeTerminal
               for results in found for value in results]
    return ",".join(values)


def custom_column_cells(columns: list[CustomColumn], obj: Any) -> list[str]:
    """One object's cells: `<none>` where nothing matched, several matches joined by `,`, values as Go's %v."""
    return [_cell(column.template.evaluator(), obj) for column in columns]


def render_custom_columns(columns: list[CustomColumn], objects: Iterable[Any], no_headers: bool = False) -> str:
    """What kubectl prints for `-o custom-columns` over these objects (a List's items), aligned as its tabwriter."""
    # One evaluator per column for all rows: client-go keeps its run state between objects, and so do we.
    evaluators = [column.template.evaluator() for column in columns]
    lines = [] if no_headers else ["\t".join(column.header for column in columns)]
    lines += ["\t".join(_cell(evaluator, obj) for evaluator in evaluators) for obj in objects]
    return tabwrite("".join(line + "\n" for line in lines))


def tabwrite(text: str, minwidth: int = 6, padding: int = 3) -> str:
    """kubectl's tabwriter (liggitt/tabwriter: text/tabwriter with RememberWidths), padding with spaces."""
    writer = _TabWriter(minwidth, padding)
    for piece in re.split("([\t\v\n\f])", text):
        writer.feed(piece)
    writer.flush()
    return "".join(writer.out)


class _TabWriter:
    def __init__(self, minwidth: int, padding: int) -> None:
        self.minwidth, self.padding, self.out, self.maxwidths = minwidth, padding, [], []
        self.lines: list[list[str]] = [[]]
        self.cell, self.widths = "", []

    def feed(self, piece: str) -> None:
        if piece not in ("\t", "\v", "\n", "\f"):
            self.cell += piece
            return
        line = self.lines[-1]
        line.append(self.cell)
        self.cell = ""
        if piece in "\n\f":
            self.lines.append([])
            if piece == "\f" or len(line) == 1:
                self.flush()  # a one-cell line cannot change any column: Go flushes there

    def flush(self) -> None:
        if self.cell:
            self.lines[-1].append(self.cell)
        self.cell = ""
        self._format(0, len(self.lines))
        self.lines, self.widths = [[]], []

    def _format(self, line0: int, line1: int) -> None:
        column, this = len(self.widths), line0
        while this < line1:
            if column >= len(self.lines[this]) - 1:  # a line's last cell belongs to no column
                this += 1
                continue
            self._write_lines(line0, this)
            line0, width = this, self.minwidth
            while this < line1 and column < len(self.lines[this]) - 1:
                width = max(width, len(self.lines[this][column]) + self.padding)
                this += 1
            if len(self.maxwidths) < len(self.widths):
                self.maxwidths += self.widths[len(self.maxwidths):]
            if len(self.maxwidths) == len(self.widths):
                self.maxwidths.append(width)
            else:
                width = self.maxwidths[column] = max(width, self.maxwidths[column])
            self.widths.append(width)
            self._format(line0, this)
            self.widths.pop()
            line0 = this
        self._write_lines(line0, line1)

    def _write_lines(self, line0: int, line1: int) -> None:
        for index in range(line0, line1):
            for j, cell in enumerate(self.lines[index]):
                self.out.append(cell + (" " * (self.widths[j] - len(cell)) if j < len(self.widths) else ""))
            self.out.append(self.cell if index + 1 == len(self.lines) else "\n")


# ---- --sort-by ------------------------------------------------------------------------------------------------


class _Unsortable(Exception):
    """A pair kubectl's isLess refuses (it then exits through klog)."""


def _less(left: tuple, right: tuple) -> bool:
    """sorter.go's isLess on (value, Go type, quantity) of values out of decoded JSON, each an interface{} to Go."""
    (value, kind, quantity), (other, other_kind, other_quantity) = left, right
    if value is None or other is None:
        return value is None and other is not None
    if kind == "uint8":
        return int(value) < int(other)
    if kind not in ("int64", "float64", "string"):
        raise _Unsortable(f"unsortable type: {'invalid' if value is NO_VALUE else kind}")
    if other_kind != kind:
        raise _Unsortable("unsortable interface: interface")
    if quantity is not None and other_quantity is not None:
        return quantity < other_quantity
    return value < other


def sort_key(template_text: str) -> Callable[[Any], Any]:
    """A key for `sorted(rows, key=...)` that orders as `kubectl get --sort-by=TEMPLATE`: rows without the field
    first, then null, then values: numbers by value, strings by quantity when both parse as one (500Mi < 2Gi)
    else bytewise (RFC 3339 times sort chronologically so). Comparing values kubectl cannot order raises
    TemplateError. Python's sort is stable, so equal keys keep their input order."""
    field = relaxed_jsonpath_expression(template_text)
    try:
        template = JSONPathTemplate(field)
    except TemplateError as exc:
        raise TemplateError(exc.reason) from None

    def compare(left: tuple, right: tuple) -> int:
        if left[0] or right[0]:  # missing
            return right[0] - left[0]
        try:
            return -1 if _less(left[1:], right[1:]) else (1 if _less(right[1:], left[1:]) else 0)
        except _Unsortable as exc:
            raise TemplateError(f"Field {field} in *unstructured.Unstructured is an unsortable type: "
                                f"{'interface' if left[1] is not NO_VALUE else 'invalid'}, err: {exc}") from None

    wrapped = cmp_to_key(compare)

    def key(row: Any) -> Any:
        try:
            found = template.find_results(row)
        except ExecutionError as exc:
            raise TemplateError(exc.reason) from None
        if not found or not found[0]:
            return wrapped((True, None, "", None))
        value = found[0][0]
        return wrapped((False, value, go_type_name(value), parse_quantity(value) if isinstance(value, str) else None))

    key.field = field  # type: ignore[attr-defined]
    return key


def sort_rows(rows: Iterable[Any], template_text: str) -> list:
    """kubectl's --sort-by over these rows, with its refusal when no row has the field at all."""
    rows = list(rows)
    key = sort_key(template_text)
    keys = [key(row) for row in rows]
    if rows and all(k.obj[0] for k in keys):
        raise TemplateError(f"couldn't find any field with path {go_quote(key.field)} in the list of objects")
    order = sorted(range(len(rows)), key=keys.__getitem__)
    return [rows[index] for index in order]
