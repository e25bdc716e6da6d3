"""Kubeconfig text typed as kubectl types it, and read without PyYAML where it can be (PyYAML's import costs
~15 ms of every run's start-up).

kubectl reads a kubeconfig through sigs.k8s.io/yaml: go-yaml v2 resolves each plain scalar its own way (YAML 1.1
with Go's number syntax: `y`, `n` and `on` are booleans, `0o17`, `0b101`, `09` and `1e3` numbers, while `1:30`,
`2001-12-14` and `0x` with 20 digits stay strings, unlike PyYAML's SafeLoader), the document becomes JSON (a map
key that is a number or a boolean becomes its text: `y:` is "true", `1e3:` "1000"; a null or uint64 key, a NaN or
an infinity anywhere refuses the file) and is decoded into client-go's structs, which kubeconfig.py checks. `read`
and `read_yaml` give that JSON document, or raise `Refused` where kubectl refuses the file.

Two shapes are read here without PyYAML: JSON, and the plain block YAML that kubectl and the cloud CLIs write
(``key: value`` lines, ``- `` items, plain or simply quoted scalars, a plain value continued on more indented
lines as gcloud writes a GKE context's installHint). Anything else returns None from `read`, and
`read_yaml` reads it with PyYAML's parser and go-yaml's typing: anchors, tags, flow collections, block scalars,
escapes, comments after a value, tabs, CR, non-ASCII, other continuation lines, non-decimal floats in JSON. Both give
the same document for the same text (duplicate keys: the last wins); tests/test_startup_unit.py compares them,
and compares both with SafeLoader where YAML 1.1 and go-yaml agree; tests/test_kubeconfig_scalars_unit.py holds
kubectl's own answers.
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any, ClassVar, Optional

# Outside the shapes read here: a character other than printable ASCII and LF, and any backslash (an escape).
_OUTSIDE = re.compile(r"[^\n\x20-\x7e]|\\")
# The patterns below are text, compiled by re (and cached there) at their first use: an ordinary kubeconfig needs
# none of them, and each compile costs start-up.
# JSON that YAML reads otherwise, or refuses: a key whose ':' is on a later line, a key too long for YAML's simple
# keys (1024 characters).
_JSON_KEY_APART = r'"[^"\n]*"[ \n]*\n[ \n]*:'
_JSON_LONG_KEY = r'"[^"\n]{1000,}"[ \n]*:'
_NOT_PLAIN_START = ",[]{}#&*!|>'\"%@`"  # YAML indicators that cannot begin a plain scalar

# go-yaml v2's resolve table (resolve.go): these words exactly, in these spellings only.
_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_BOOLS = {word: value for words, value in ((("y", "yes", "true", "on"), True), (("n", "no", "false", "off"), False))
          for lower in words for word in (lower, lower.capitalize(), lower.upper())}
_SPECIAL_FLOATS = {sign + word: value for words, sign, value in (
    ((".nan", ".NaN", ".NAN"), "", math.nan), ((".inf", ".Inf", ".INF"), "", math.inf),
    ((".inf", ".Inf", ".INF"), "+", math.inf), ((".inf", ".Inf", ".INF"), "-", -math.inf)) for word in words}
# strconv.ParseInt(s, 0, 64) and ParseUint's syntax once go-yaml has removed every '_'.
_GO_INT = r"([-+]?)(?:0[xX]([0-9a-fA-F]+)|0[oO]([0-7]+)|0[bB]([01]+)|(0[0-7]*)|([1-9][0-9]*))"
_GO_FLOAT = r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"  # go-yaml's yamlStyleFloat
_DOT_FLOAT = r"\.[0-9]+(?:[eE][-+]?[0-9]+)?"  # what strconv.ParseFloat reads of a scalar starting '.'
_INT64 = 1 << 63
_UINT64 = 1 << 64


class Refused(ValueError):
    """kubectl refuses this document before looking at what it says (the text says what and where)."""


class _Unsupported(Exception):
    """Outside the shapes read here: read_yaml reads this text."""


def resolve(text: str) -> Any:
    """A plain scalar as go-yaml v2 resolves it into an interface{}: null, a bool, an int (a uint64 above int64's
    range), a float, else the text itself (timestamps too)."""
    if text in _NULLS:
        return None
    if text in _BOOLS:
        return _BOOLS[text]
    if text in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[text]
    first = text[0]
    if first == ".":  # strconv.ParseFloat of the text as written
        number = _finite(text) if re.fullmatch(_DOT_FLOAT, text) else None
    elif first in "+-0123456789":
        plain = text.replace("_", "")
        number = _go_int(plain)
        if number is None and re.fullmatch(_GO_FLOAT, plain):
            number = _finite(plain)
        if number is None and plain.startswith(("0b", "-0b")):  # ParseInt(digits, 2), a sign allowed after "0b"
            digits = plain[2:] if plain[0] == "0" else "-" + plain[3:]
            number = _go_int_base2(digits)
    else:
        number = None
    return text if number is None else number


def _go_int(text: str) -> Optional[int]:
    match = re.fullmatch(_GO_INT, text)
    if match is None:
        return None
    sign, hexadecimal, octal, binary, zero_octal, decimal = match.groups()
    value = (int(hexadecimal, 16) if hexadecimal else int(octal, 8) if octal else int(binary, 2) if binary
             else int(zero_octal, 8) if zero_octal else int(decimal))
    value = -value if sign == "-" else value
    if -_INT64 <= value < _INT64 or (not sign and value < _UINT64):  # ParseInt, else ParseUint (no sign)
        return value
    return None


def _go_int_base2(text: str) -> Optional[int]:
    if not re.fullmatch(r"[-+]?[01]+", text):
        return None
    value = int(text, 2)
    return value if -_INT64 <= value < _INT64 else None


def _finite(text: str) -> Optional[float]:
    value = float(text)
    return value if math.isfinite(value) else None  # out of range: ParseFloat's error, and the text stays a string


class _RefusedKey(str):
    """A map key kubectl cannot read (null, a uint64, a list or map): kept in its place, so that check_json
    refuses the document naming where it is. Its text (NUL, never in a kubeconfig) matches no real key."""

    reason: str


def map_key(key: Any) -> str:
    """A map key as sigs.k8s.io/yaml writes it into JSON."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int) and key < _INT64:
        return str(key)
    if isinstance(key, float):
        return _float32_text(key)
    refused = _RefusedKey(f"\0{id(key)}")
    kind = "null" if key is None else f"the uint64 {key}" if isinstance(key, int) else f"a {type(key).__name__}"
    refused.reason = f"a map key is {kind}, which kubectl cannot read (quote it)"
    return refused


def _float32_text(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 32): the shortest digits that give the same float32."""
    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.copysign(math.inf, value)
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    sign = "-" if math.copysign(1.0, single) < 0 else ""
    if single == 0:
        return sign + "0"
    for precision in range(1, 10):
        written = f"{abs(single):.{precision - 1}e}"
        if struct.unpack("f", struct.pack("f", float(written)))[0] == abs(single):
            break
    mantissa, exponent_text = written.split("e")
    digits, exponent = mantissa.replace(".", "").rstrip("0") or "0", int(exponent_text)
    if exponent < -4 or exponent >= 6:  # %e, at least two exponent digits
        fraction = "." + digits[1:] if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{fraction}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    point = exponent + 1
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def check_json(value: Any, where: str = "", seen: Optional[set[int]] = None) -> None:
    """Refused where Go's json.Marshal refuses the converted document: a NaN or an infinity, anywhere. (A list or
    map an alias repeats is looked at once: a billion laughs costs no more than its text.)"""
    if isinstance(value, float) and not math.isfinite(value):
        raise Refused(f"{where or 'the document'} is .nan or .inf, which kubectl cannot read (quote it)")
    if not isinstance(value, (dict, list)):
        return
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    for key, item in value.items() if isinstance(value, dict) else enumerate(value):
        if isinstance(key, _RefusedKey):
            raise Refused(f"{where or 'the document'}: {key.reason}")
        check_json(item, f"{where}[{key}]" if isinstance(value, list) else f"{where}.{key}" if where else str(key), seen)


def read(text: str) -> Optional[dict[str, Any]]:
    """The document as kubectl would see it, or None when the text is not in a shape read here."""
    if _OUTSIDE.search(text):
        return None
    if text.lstrip(" \n").startswith("{"):
        doc = _json(text)
    else:
        try:
            doc = _block(text)
        except (_Unsupported, RecursionError):
            return None
    if doc is not None:
        _within_depth(doc)
        check_json(doc)
    return doc


def _within_depth(doc: Any) -> None:
    from kubectl_pvleft.kube.nesting import TooDeep, check_depth

    try:
        check_depth(doc)
    except TooDeep as exc:
        raise Refused(str(exc)) from None


def _json(text: str) -> Optional[dict[str, Any]]:
    import json  # JSON kubeconfigs only

    if re.search(_JSON_KEY_APART, text) or re.search(_JSON_LONG_KEY, text):
        return None
    try:
        doc = json.loads(text, parse_constant=_not_json)
    except ValueError:  # not JSON (YAML's flow style is wider): read_yaml says what is wrong
        return None
    except RecursionError:  # nested past Python's own limit, so past the bound too
        from kubectl_pvleft.kube.nesting import TooDeep

        raise Refused(str(TooDeep())) from None
    _within_depth(doc)
    # go-yaml reads every JSON number as ParseInt/ParseFloat do, except those out of their range ("1e400" is a
    # string to it): only documents without such numbers are read here.
    return doc if isinstance(doc, dict) and not _has_wide_number(doc) else None


def _not_json(constant: str) -> None:
    raise ValueError(constant)  # NaN and Infinity: Python's json reads them, YAML reads them as strings


def _has_wide_number(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return not -_INT64 <= value < _UINT64
    if isinstance(value, dict):
        return any(_has_wide_number(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_wide_number(v) for v in value)
    return False


def _block(text: str) -> Optional[dict[str, Any]]:
    lines: list[tuple[int, str]] = []  # (indent, content) of every line that is not blank or a comment
    foldable = False  # the line before ends in a plain scalar that a more indented line continues
    for raw in text.split("\n"):
        content = raw.lstrip(" ")
        if not content or content.startswith("#"):
            foldable = False  # a blank line in a folded scalar is a line break in it: read_yaml's
            continue
        if " #" in content:  # a comment after a value ('#' not after a space is text: a URL's fragment)
            return None
        indent, content = len(raw) - len(content), content.rstrip(" ")
        if foldable and indent > lines[-1][0] and _continues(content):
            lines[-1] = (lines[-1][0], f"{lines[-1][1]} {content}")  # YAML folds the line break into a space
            continue
        foldable = _ends_in_plain_value(content)
        lines.append((indent, content))
    if not lines or lines[0][0] != 0 or lines[0][1].startswith(("---", "...", "%")):
        return None
    doc, end = _node(lines, 0, 0)
    return doc if end == len(lines) and isinstance(doc, dict) else None


def _ends_in_plain_value(content: str) -> bool:
    """``key: value`` with a plain value: what a more indented line may continue (gcloud writes the exec
    plugin's installHint over two lines). Not after ``- ``, where the item's own indent is not the line's."""
    _, separator, rest = content.partition(": ")
    rest = rest.strip(" ")
    return bool(separator and rest) and not _is_item(content) and rest[0] not in _NOT_PLAIN_START


def _continues(content: str) -> bool:
    """A line that can only be the continuation of a plain scalar: no indicator first, no key in it."""
    return content[0] not in _NOT_PLAIN_START + "-?:" and ": " not in content and not content.endswith(":")


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
    if not key or ":" in key or len(key) > 1000:
        raise _Unsupported
    return map_key(_plain(key)), rest.strip(" ")


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
    """A plain scalar, resolved as go-yaml resolves it."""
    first = text[0]
    if first in _NOT_PLAIN_START or (first in "-?:" and text[1:2] in ("", " ")):
        raise _Unsupported
    if ": " in text or text.endswith(":") or text == "<<":  # "<<" is a merge key: read_yaml merges
        raise _Unsupported
    return resolve(text)


# A double-quoted "\/": YAML 1.2's escape, which libyaml and PyYAML read and go-yaml v2 refuses.
_SLASH_ESCAPE = r"(?<!\\)(?:\\\\)*\\/"
_PLAIN_TAG = "tag:kubectl-pvleft,2026:plain"  # every plain scalar, resolved by resolve() instead of YAML 1.1


def read_yaml(text: str) -> Any:
    """Any YAML text, typed as kubectl types it: PyYAML parses (with libyaml when present), go-yaml's rules type.
    yaml.YAMLError for what does not parse, Refused for what kubectl refuses."""
    import yaml  # only for the YAML read() leaves: anchors, flow style, block scalars, tags, escapes, ...

    if "\\/" in text:
        _refuse_slash_escape(text, yaml)
    try:
        node, loader = _first_document(text, _go_loader())
    except yaml.composer.ComposerError as exc:
        if "duplicate anchor" not in str(exc.context or ""):
            raise
        node, loader = _first_document(text, _go_loader(anchors_redefined=True))
    try:
        if node is None:
            return None
        _check_aliases(node, yaml)
        doc = loader.construct_document(node)
    finally:
        loader.dispose()
    _within_depth(doc)
    check_json(doc)
    return doc


def _first_document(text: str, loader_class: type) -> tuple[Any, Any]:
    """The first document's node and its loader: go-yaml v2 (sigs.k8s.io/yaml's Unmarshal) decodes the first
    document of a stream and never looks at what follows a ``---``."""
    loader = loader_class(text)
    try:
        return (loader.get_node() if loader.check_node() else None), loader
    except BaseException:
        loader.dispose()
        raise


def _check_aliases(root: Any, yaml: Any) -> None:
    """go-yaml v2's guards, before anything is built: an anchor inside its own value, and a document whose
    aliases give more than their share of what is decoded (its "excessive aliasing", against alias bombs)."""
    aliases = _alias_edges(root, yaml)
    decoded, through_alias = 1, 0  # the document node
    pending: list[tuple[Any, int, bool]] = [(root, 0, True)]  # (node, alias depth, counted by go-yaml)
    while pending:
        node, depth, counted = pending.pop()
        if counted:
            decoded, through_alias = decoded + 1, through_alias + (depth > 0)
            if through_alias > 100 and decoded > 1000 and through_alias / decoded > _allowed_alias_ratio(decoded):
                raise Refused("document contains excessive aliasing")
        children = _children(node, yaml)
        for index in reversed(range(len(children))):
            child = children[index]
            if _is_merge_key(child, yaml):
                continue  # go-yaml merges without decoding the "<<" key itself
            if (id(node), index) in aliases:
                pending.append((child, depth + 1, True))
                pending.append((None, depth, True))  # the alias node, decoded first
            else:  # a list merged by "<<": only its items are decoded
                merged_list = index % 2 == 1 and isinstance(node, yaml.MappingNode) \
                    and _is_merge_key(children[index - 1], yaml) and isinstance(child, yaml.SequenceNode)
                pending.append((child, depth, not merged_list))


def _alias_edges(root: Any, yaml: Any) -> set[tuple[int, int]]:
    """(parent, index) of every child reached by an alias: in document order, a node met before."""
    met: set[int] = set()
    on_path: set[int] = set()
    edges: set[tuple[int, int]] = set()
    pending: list[tuple[Any, Any, int]] = [(root, None, 0)]
    while pending:
        node, parent, index = pending.pop()
        if parent is _LEAVE:
            on_path.discard(id(node))
            continue
        if id(node) in met:
            if id(node) in on_path:
                raise Refused("an anchor's value contains itself")
            edges.add((id(parent), index))
            continue
        met.add(id(node))
        on_path.add(id(node))
        pending.append((node, _LEAVE, 0))
        children = _children(node, yaml)
        pending.extend((children[i], node, i) for i in reversed(range(len(children))))
    return edges


_LEAVE = object()  # in _alias_edges: the walk leaves this node


def _children(node: Any, yaml: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _is_merge_key(node: Any, yaml: Any) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:merge"


def _allowed_alias_ratio(decoded: int) -> float:
    """go-yaml v2's allowedAliasRatio: 99% of a document up to 400,000 decoded nodes may come through aliases,
    falling to 10% at 4,000,000."""
    if decoded <= 400_000:
        return 0.99
    if decoded >= 4_000_000:
        return 0.10
    return 0.99 - 0.89 * (decoded - 400_000) / 3_600_000


def _refuse_slash_escape(text: str, yaml: Any) -> None:
    for token in yaml.scan(text, Loader=yaml.SafeLoader):
        if isinstance(token, yaml.ScalarToken) and token.style == '"' \
                and re.compile(_SLASH_ESCAPE).search(text, token.start_mark.index, token.end_mark.index):
            raise Refused(f"line {token.start_mark.line + 1}: found unknown escape character (\\/ is not an "
                          "escape to kubectl's YAML reader)")


_LOADERS: dict[bool, type] = {}


def _go_loader(anchors_redefined: bool = False) -> type:
    """PyYAML's safe loader with go-yaml v2's typing: plain scalars by resolve(), map keys by map_key(), a tag it
    does not know read as no tag (a string, a list, a map), the explicit !!int, !!float, !!bool and !!null checked
    as go-yaml checks them, merge keys merged in go-yaml's order. ``anchors_redefined``: PyYAML's own composer in
    Python, taught go-yaml's rule that an anchor defined again names its new value from there on (libyaml's
    composer, faster, refuses the document)."""
    if anchors_redefined in _LOADERS:
        return _LOADERS[anchors_redefined]
    import yaml

    base = yaml.SafeLoader if anchors_redefined else getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class GoLoader(base):  # type: ignore[misc,valid-type]
        # PyYAML's own class-level tables, replaced for this loader alone (shared by every instance, by design).
        yaml_implicit_resolvers: ClassVar[dict[Any, Any]] = {"<": [("tag:yaml.org,2002:merge", re.compile(r"<<$"))],
                                   None: [(_PLAIN_TAG, re.compile(""))]}
        yaml_constructors: ClassVar[dict[Any, Any]] = {tag: constructor for tag, constructor in base.yaml_constructors.items()
                             if tag not in ("tag:yaml.org,2002:set", "tag:yaml.org,2002:omap",
                                            "tag:yaml.org,2002:pairs", "tag:yaml.org,2002:timestamp")}

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[str, Any]:
            out: dict[str, Any] = {}
            self._decode_into(node, out, deep)
            return out

        def _decode_into(self, node: Any, out: dict[str, Any], deep: bool) -> None:
            """go-yaml v2's decoder.mapping: the pairs in order, each setting its key; a merge key ("<<") decodes its
            map into the same map where it stands, so it overrides the keys set before it and is overridden by those
            after; a list of maps is merged last item first, so the first one wins (go.yaml.in/yaml/v2 decode.go,
            decoder.merge). PyYAML's flatten_mapping lets the explicit keys win wherever they stand."""
            for key_node, value_node in node.value:
                if not _is_merge_key(key_node, yaml):
                    out[map_key(self.construct_object(key_node, deep=True))] = self.construct_object(value_node, deep=deep)
                elif isinstance(value_node, yaml.MappingNode):
                    self._decode_into(value_node, out, deep)
                elif isinstance(value_node, yaml.SequenceNode) and all(
                        isinstance(item, yaml.MappingNode) for item in value_node.value):
                    for item in reversed(value_node.value):
                        self._decode_into(item, out, deep)
                else:
                    raise Refused(f"line {value_node.start_mark.line + 1}: map merge requires map or sequence of maps "
                                  "as the value")

        if anchors_redefined:
            def compose_node(self, parent: Any, index: Any) -> Any:
                if not self.check_event(yaml.AliasEvent):
                    anchor = self.peek_event().anchor
                    if anchor is not None:
                        self.anchors.pop(anchor, None)  # go-yaml: the newest definition wins
                return super().compose_node(parent, index)

    def untagged(loader: Any, node: Any) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return node.value
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_mapping(node, deep=True)

    def typed(tag: str, accept: Any) -> None:
        def construct(loader: Any, node: Any) -> Any:
            value = resolve(node.value) if isinstance(node, yaml.ScalarNode) else node
            if not accept(value):
                raise Refused(f"line {node.start_mark.line + 1}: a value tagged !!{tag} is not one")  # never the value
            return float(value) if tag == "float" else value
        GoLoader.add_constructor(f"tag:yaml.org,2002:{tag}", construct)

    GoLoader.add_constructor(_PLAIN_TAG, lambda loader, node: resolve(node.value))
    GoLoader.add_constructor(None, untagged)
    GoLoader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: node.value)  # a string to go-yaml
    GoLoader.add_constructor("tag:yaml.org,2002:binary", lambda loader, node: base.construct_yaml_binary(
        loader, node).decode("utf-8", "replace"))
    typed("int", lambda v: isinstance(v, int) and not isinstance(v, bool))
    typed("float", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))
    typed("bool", lambda v: isinstance(v, bool))
    typed("null", lambda v: v is None)
    _LOADERS[anchors_redefined] = GoLoader
    return GoLoader
