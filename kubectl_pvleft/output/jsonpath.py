"""kubectl's output-template dialect (`-o jsonpath=...`, `-o jsonpath-as-json=...`), to the letter.

A port of k8s.io/client-go/util/jsonpath (parser.go, jsonpath.go): a template prints here what
`kubectl get -o jsonpath=TEMPLATE` prints over the same JSON, quirks included: `{.}` prints nothing,
`['a.b']` means `.a.b`, a `{range}` without `{end}` runs its tail once more on the whole object, and a
template without braces is literal text. Standard JSONPath libraries (jsonpath-ng) speak another language.

Values are what `json.loads` gives. Where Go visits a map in random order (`.*`, `..`) keys go sorted,
the order Go's encoding/json prints them in. Go's printing of values lives in `govalue`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Optional

from kubectl_pvleft.errors import ExecutionError, TemplateError
from kubectl_pvleft.output import govalue
from kubectl_pvleft.output.govalue import INT64_MAX, INT64_MIN, NO_VALUE, GoByte, is_int64

__all__ = ["NO_VALUE", "ExecutionError", "GoByte", "JSONPathTemplate", "TemplateError"]


_DICT_KEY = re.compile(r"'([^']*)'\Z")
_SLICE = re.compile(r"(-?[0-9]*)(:-?[0-9]*)?(:-?[0-9]*)?\Z")
_FILTER = re.compile(r"([^!<>=]+)([!<>=]+)(.+?)\Z")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)\Z")
_TERMINATORS = frozenset(" \t\r\n.,[]$@{}")

# A parsed node: its kind first (parser.go's node types), then what that kind carries.
Node = tuple[Any, ...]



def _atoi(text: str) -> Optional[int]:
    """strconv.Atoi: ASCII digits, an optional sign, int64 range; None where Go fails."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if INT64_MIN <= value <= INT64_MAX else None


class _ParseError(Exception):
    pass


class _Parser:
    """parser.go, scanning by index where Go scans by rune; the same error strings."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.start = text, 0, 0
        self.root: list[Node] = []

    def parse(self) -> list[Node]:
        text = self.text
        while True:
            brace = text.find("{", self.pos)
            self.pos = len(text) if brace < 0 else brace
            if self.pos > self.start:
                self.root.append(("text", self._consume()))
            if brace < 0:
                return self.root
            self.pos += 1
            self._consume()
            action: list[Node] = []
            self.root.append(("list", action))
            self._inside_action(action)

    def _peek(self) -> Optional[str]:
        return self.text[self.pos] if self.pos < len(self.text) else None

    def _next(self) -> Optional[str]:
        ch = self._peek()
        self.pos += ch is not None
        return ch

    def _consume(self) -> str:
        value, self.start = self.text[self.start:self.pos], self.pos
        return value

    def _inside_action(self, cur: list[Node]) -> None:
        while True:
            if self.text.startswith("}", self.pos):
                self.pos += 1
                self._consume()
                return
            if self.text.startswith("[?(", self.pos):
                self._filter(cur)
            elif self.text.startswith("..", self.pos):
                self._recursive(cur)
            else:
                self._character(cur)

    def _character(self, cur: list[Node]) -> None:
        """One step of parseInsideAction that its next character decides."""
        ch = self._next()
        if ch is None or ch in "\r\n":
            raise _ParseError("unclosed action")
        if ch in " @$":
            self._consume()
        elif ch == "[":
            self._array(cur)
        elif ch in "\"'":
            self._quote(cur, ch)
        elif ch == ".":
            self._field(cur)
        elif ch in "+-" or ch.isdecimal():  # isdecimal: Go's unicode.IsDigit (category Nd)
            self.pos -= 1
            self._number(cur)
        elif ch == "_" or ch.isalpha() or ch.isdecimal():
            self.pos -= 1
            self._identifier(cur)
        else:
            shown = f" '{ch}'" if ch.isprintable() else ""
            raise _ParseError(f"unrecognized character in action: U+{ord(ch):04X}{shown}")

    def _scan_to_terminator(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] not in _TERMINATORS:
            self.pos += 1 + (self.text[self.pos] == "\\")  # a backslash keeps the next character
        self.pos = min(self.pos, len(self.text))

    def _identifier(self, cur: list[Node]) -> None:
        while self.pos < len(self.text) and self.text[self.pos] not in _TERMINATORS:
            self.pos += 1
        value = self._consume()
        cur.append(("bool", value == "true") if value in ("true", "false") else ("ident", value))

    def _recursive(self, cur: list[Node]) -> None:
        if cur and cur[-1][0] == "recursive":
            raise _ParseError("invalid multiple recursive descent")
        self.pos += 2
        self._consume()
        cur.append(("recursive",))
        ch = self._peek()
        if ch is not None and (ch == "_" or ch.isalpha() or ch.isdecimal()):
            self._field(cur)

    def _number(self, cur: list[Node]) -> None:
        if self._peek() in ("+", "-"):
            self.pos += 1
        while self.pos < len(self.text) and (self.text[self.pos] == "." or self.text[self.pos].isdecimal()):
            self.pos += 1
        value = self._consume()
        number = _atoi(value)
        if number is not None:
            cur.append(("int", number))
        elif _FLOAT.match(value):
            cur.append(("float", float(value)))
        else:
            raise _ParseError(f"cannot parse number {value}")

    def _array(self, cur: list[Node]) -> None:
        while True:
            ch = self._next()
            if ch is None or ch == "\n":
                raise _ParseError("unterminated array")
            if ch == "]":
                break
        text = self._consume()[1:-1]
        text = ":" if text == "*" else text
        parts = text.split(",")
        if len(parts) > 1:
            cur.append(("union", [_parse_action("[" + part.strip(" ") + "]") for part in parts]))
            return
        key = _DICT_KEY.match(text)
        if key:
            cur.extend(_parse_action("." + key.group(1)))
            return
        cur.append(("array", _slice_params(text)))

    def _filter(self, cur: list[Node]) -> None:
        self.pos += 3
        self._consume()
        begin = end = False
        pair = None
        while True:
            ch = self._next()
            if ch is None or ch == "\n":
                raise _ParseError("unterminated filter")
            if ch in "\"'":
                if not begin:
                    begin, pair = True, ch
                elif self.text[self.pos - 2] != "\\" and ch == pair:
                    end = True
            elif ch == ")" and begin == end:
                break
        if self._next() != "]":
            raise _ParseError("unclosed array expect ]")
        text = self._consume()[:-2]
        match = _FILTER.match(text)
        if match is None:
            cur.append(("filter", _parse_action(text), [], "exists"))
        else:
            cur.append(("filter", _parse_action(match.group(1)), _parse_action(match.group(3)), match.group(2)))

    def _quote(self, cur: list[Node], end: str) -> None:
        while True:
            ch = self._next()
            if ch is None or ch == "\n":
                raise _ParseError("unterminated quoted string")
            if ch == end and self.text[self.pos - 2] != "\\":
                break
        value = self._consume()
        text = govalue.go_unquote(value)
        if text is None:
            raise _ParseError(f"unquote string {value} error invalid syntax")
        cur.append(("text", text))

    def _field(self, cur: list[Node]) -> None:
        self._consume()
        self._scan_to_terminator()
        value = self._consume()
        cur.append(("wildcard",) if value == "*" else ("field", value.replace("\\", "")))


def _slice_params(text: str) -> tuple[tuple[bool, int, bool], ...]:
    """`[start:stop:step]` as three (known, number, derived) bounds; a bound not written is not known."""
    match = _SLICE.match(text)
    if not match:
        raise _ParseError(f"invalid array index {text}")
    start, stop, step = match.groups(default="")
    params: list[tuple[bool, int, bool]] = []
    for digits in (start, stop[1:], step[1:]):
        number = _atoi(digits) if digits else 0
        if number is None:
            raise _ParseError(f"array index {digits} is not a number")
        params.append((bool(digits), number, False))
    if not stop:
        params[1] = (True, params[0][1] + 1, True)  # `[n]` is `[n:n+1]`, marked derived
    return tuple(params)


def _parse_action(text: str) -> list[Node]:
    """parseAction: the nodes of `{text}`'s one action (union members, dict keys, filter sides)."""
    action: list[Node] = _Parser("{" + text + "}").parse()[0][1]
    return action


def _children(value: Any) -> Optional[list[Any]]:
    """What Go's `.*` and `..` visit: map values (by sorted key), list elements, a string's bytes."""
    if isinstance(value, dict):
        return [value[key] for key in sorted(value)]
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return [GoByte(b) for b in value.encode("utf-8", "surrogatepass")]
    return None


def _basic_kind(value: Any) -> str:
    if isinstance(value, GoByte):
        return "uint"
    if isinstance(value, bool):
        return "bool"
    if is_int64(value):
        return "int"
    if isinstance(value, (int, float)):
        return "float"
    return "string" if isinstance(value, str) else "invalid"


def _compare(op: str, left: Any, right: Any, partial: list[Any]) -> bool:
    """The forked text/template comparisons: one basic kind on both sides (ints of either sign mix)."""
    if op not in ("<", ">", "==", "!=", "<=", ">="):
        raise ExecutionError(f"unrecognized filter operator {op}", partial)
    kinds = {_basic_kind(left), _basic_kind(right)}
    if "invalid" in kinds or (op not in ("==", "!=") and kinds == {"bool"}):
        raise ExecutionError("invalid type for comparison", partial)
    if len(kinds) > 1 and kinds != {"int", "uint"}:
        raise ExecutionError("incompatible types for comparison", partial)
    left, right = (float(left), float(right)) if kinds == {"float"} else (left, right)
    outcomes: dict[str, bool] = {"<": left < right, ">": left > right, "==": left == right, "!=": left != right,
                                 "<=": left <= right, ">=": left >= right}
    return outcomes[op]


def _check_slice(first: int, last: int, length: int, stride: int, values: list[Any]) -> None:
    """evalArray's refusals, with its texts; `values` is what Go hands back with the error."""
    if first >= length or first < 0:
        raise ExecutionError(f"array index out of bounds: index {first}, length {length}", values)
    if last > length or last < 0:
        raise ExecutionError(f"array index out of bounds: index {last - 1}, length {length}", values)
    if first > last:
        raise ExecutionError(f"starting index {first} is greater than ending index {last}", values)
    if stride <= 0:
        raise ExecutionError("step must be > 0", values)


class Evaluator:
    """jsonpath.go's JSONPath: the walk, and the range/end bookkeeping FindResults keeps across calls."""

    def __init__(self, nodes: list[Node], allow_missing_keys: bool = True) -> None:
        self.nodes, self.allow_missing_keys = nodes, allow_missing_keys
        # Go narrows parser.Root.Nodes to a tail while it ranges and never restores it: `start` is that tail.
        self.start, self.begin_range, self.in_range, self.end_range = 0, 0, 0, 0
        self.last_end: Optional[int] = None

    def find_results(self, data: Any) -> list[list[Any]]:
        nodes, cur = self.nodes, [data]
        full: list[list[Any]] = []
        i = self.start
        while i < len(nodes):
            results = self._walk(cur, nodes[i])
            if 0 < self.end_range <= self.in_range:
                self.end_range -= 1
                self.last_end = i
                break
            if self.begin_range > 0:
                self.begin_range -= 1
                self.in_range += 1
                for value in results or [NO_VALUE]:  # an empty range is still walked, to find its end
                    self.start = i + 1
                    found = self.find_results(NO_VALUE if value is None else value)
                    full.extend(found if results else [])
                self.in_range -= 1
                if self.last_end is not None and i < self.last_end < len(nodes):
                    i = self.last_end
            else:
                full.append(results)
            i += 1
        return full

    def _walk(self, values: list[Any], node: Node) -> list[Any]:
        kind = node[0]
        if kind == "list":
            for child in node[1]:
                values = self._walk(values, child)
            return values
        if kind == "text":
            return [node[1]]
        if kind in ("int", "float", "bool"):
            return [node[1]] * len(values)
        walk: Callable[[list[Any], Node], list[Any]] = getattr(self, "_" + kind)
        return walk(values, node)

    def _ident(self, values: list[Any], node: Node) -> list[Any]:
        if node[1] == "range":
            self.begin_range += 1
            return values
        if node[1] != "end":
            raise ExecutionError(f"unrecognized identifier {node[1]}", values)
        if self.in_range <= 0:
            raise ExecutionError("not in range, nothing to end")
        self.end_range += 1
        return []

    def _field(self, values: list[Any], node: Node) -> list[Any]:
        results = [value[node[1]] for value in values if isinstance(value, dict) and node[1] in value]
        if values and not results and not self.allow_missing_keys:
            raise ExecutionError(f"{node[1]} is not found")
        return results

    def _array(self, values: list[Any], node: Node) -> list[Any]:
        result: list[Any] = []
        (known0, start, _), (known1, stop, derived1), (known2, step, _) = node[1]
        stride = step if known2 else 1
        for value in values:
            if value is None:
                continue
            if not isinstance(value, list):
                raise ExecutionError(f"{govalue.go_type_name(value)} is not array or slice", values)
            length = len(value)
            first = start if known0 else 0
            first += length if first < 0 else 0
            last = stop if known1 else length
            last += length if last < 0 or (last == 0 and derived1) else 0
            if last == first:
                return result  # as Go does: the inputs after an empty slice are dropped
            _check_slice(first, last, length, stride, values)
            result.extend(value[first:last:stride])
        return result

    def _union(self, values: list[Any], node: Node) -> list[Any]:
        result: list[Any] = []
        for branch in node[1]:
            try:
                result.extend(self._walk(values, ("list", branch)))
            except ExecutionError as exc:
                raise ExecutionError(exc.reason, values) from None
        return result

    def _wildcard(self, values: list[Any], node: Node) -> list[Any]:
        return [child for value in values if value is not None for child in (_children(value) or [])]

    def _recursive(self, values: list[Any], node: Node, result: Optional[list[Any]] = None) -> list[Any]:
        result = [] if result is None else result
        for value in values:
            if isinstance(value, str):  # its bytes have nothing below them, and only what has children is kept
                result += [value] if value else []
                continue
            children = None if value is None else _children(value)
            if children:
                result.append(value)
                self._recursive(children, node, result)
        return result

    def _filter(self, values: list[Any], node: Node) -> list[Any]:
        _, left_nodes, right_nodes, op = node
        results: list[Any] = []
        for value in values:
            if not isinstance(value, list):
                raise ExecutionError(f"{govalue.go_sprint(value)} is not array or slice and cannot be filtered", values)
            for element in value:
                try:
                    lefts = self._walk([element], ("list", left_nodes))
                except ExecutionError as exc:
                    if op != "exists":
                        raise ExecutionError(exc.reason, values) from None
                    lefts = exc.partial  # Go tests what came back with the error, and ignores the error
                if op == "exists":
                    results += [element] if lefts else []
                    continue
                if len(lefts) > 1:
                    raise ExecutionError("can only compare one element at a time", values)
                if not lefts:
                    continue
                try:
                    rights = self._walk([element], ("list", right_nodes))
                except ExecutionError as exc:
                    raise ExecutionError(exc.reason, values) from None
                if len(rights) > 1:
                    raise ExecutionError("can only compare one element at a time", values)
                if rights and _compare(op, lefts[0], rights[0], results):
                    results.append(element)
        return results


class JSONPathTemplate:
    """One `-o jsonpath=TEXT`: parsed once (a bad template raises TemplateError here), rendered per object."""

    def __init__(self, text: str, allow_missing_keys: bool = True) -> None:
        self.text, self.allow_missing_keys = text, allow_missing_keys
        try:
            self.nodes = _Parser(text).parse()
        except _ParseError as exc:
            raise TemplateError(f"error parsing jsonpath {text}, {exc}", str(exc)) from None

    def evaluator(self) -> Evaluator:
        """A fresh run state; reuse one across objects to keep Go's state between calls (custom-columns does)."""
        return Evaluator(self.nodes, self.allow_missing_keys)

    def find_results(self, obj: Any) -> list[list[Any]]:
        """FindResults: one list of values per top-level node, text nodes included."""
        return self.evaluator().find_results(obj)

    def render(self, obj: Any) -> str:
        """Exactly what `kubectl get -o jsonpath=TEXT` prints for `obj` (no newline added)."""
        return "".join(" ".join(govalue.go_json(value) if isinstance(value, (dict, list)) else govalue.go_text(value)
                                for value in results) for results in self._run(obj))

    def render_json(self, obj: Any) -> str:
        """What `kubectl get -o jsonpath-as-json=TEXT` prints: each node's values as an indented JSON array."""
        return "".join(govalue.go_json(results, "    ") + "\n" for results in self._run(obj))

    def _run(self, obj: Any) -> list[list[Any]]:
        try:
            return self.find_results(obj)
        except ExecutionError as exc:
                raise ExecutionError(exc.reason, exc.partial, (
                f"error executing jsonpath {govalue.go_quote(self.text)}: Error executing template: {exc.reason}. "
                "Printing more information for debugging the template:\n"
                f"\ttemplate was:\n\t\t{self.text}\n"
                f"\tobject given to jsonpath engine was:\n\t\t{govalue.go_syntax(obj)}\n\n\n")) from None
