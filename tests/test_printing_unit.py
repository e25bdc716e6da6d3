"""kubectl's table conventions, AGE format and the structured outputs."""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone

import pytest
import yaml

from kubectl_pvleft.output.report import Column, Report, age, human_duration, truncate, word
from reports import render


@pytest.mark.parametrize("seconds, text", [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (59, "59s"), (119, "119s"), (120, "2m"), (125, "2m5s"),
    (599, "9m59s"), (600, "10m"), (3 * 3600 - 1, "179m"), (3 * 3600, "3h"), (3 * 3600 + 60, "3h1m"),
    (8 * 3600, "8h"), (47 * 3600, "47h"), (48 * 3600, "2d"), (49 * 3600, "2d1h"), (8 * 86400, "8d"),
    (729 * 86400, "729d"), (730 * 86400, "2y"), (731 * 86400, "2y1d"), (8 * 365 * 86400, "8y"),
])
def test_human_duration_matches_kubectl(seconds: int, text: str) -> None:
    assert human_duration(timedelta(seconds=seconds)) == text


def test_age_of_unknown_time() -> None:
    assert word(age(None, datetime.now(timezone.utc))) == "<unknown>"


ROWS = [{"name": "a", "phase": "Released", "note": None, "extra": "x"},
        {"name": "much-longer-name", "phase": "Bound", "note": "n", "extra": "y"}]


def sample(rows=ROWS) -> Report[dict]:
    return Report(
        rows=rows,
        columns=[Column("NAME", lambda r: r["name"]), Column("STATUS", lambda r: r["phase"]),
                 Column("NOTE", lambda r: r["note"]), Column("EXTRA", lambda r: r["extra"], wide_only=True)],
        to_json=lambda r: r, name=lambda r: f"thing/{r['name']}", namespace=lambda r: "ns1",
    )


def rendered(report: Report[dict], fmt: str, **kw) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    render(report, fmt, out=out, err=err, **kw)
    return out.getvalue(), err.getvalue()


def test_table_is_kubectl_shaped() -> None:
    out, err = rendered(sample(), "table")
    assert out.splitlines() == [
        "NAME               STATUS     NOTE",
        "a                  Released   <none>",
        "much-longer-name   Bound      n",
    ]
    assert err == ""


def test_wide_adds_columns_and_all_namespaces_adds_namespace() -> None:
    out, _ = rendered(sample(), "wide", all_namespaces=True)
    assert out.splitlines()[0].split() == ["NAMESPACE", "NAME", "STATUS", "NOTE", "EXTRA"]
    assert out.splitlines()[1].split() == ["ns1", "a", "Released", "<none>", "x"]


def test_no_headers() -> None:
    out, _ = rendered(sample(), "table", no_headers=True)
    assert out.splitlines()[0].split() == ["a", "Released", "<none>"]


def test_empty_table_says_so_on_stderr_only() -> None:
    out, err = rendered(sample([]), "table")
    assert out == "" and err == "No resources found\n"


def test_json_is_a_kubectl_list() -> None:
    out, _ = rendered(sample(), "json")
    assert json.loads(out) == {"apiVersion": "v1", "kind": "List", "items": ROWS, "metadata": {"resourceVersion": ""}}
    assert list(json.loads(out)) == ["apiVersion", "items", "kind", "metadata"]  # kubectl's key order
    out, _ = rendered(sample([]), "json")
    assert json.loads(out)["items"] == []


def test_yaml_jsonl_and_name() -> None:
    assert yaml.safe_load(rendered(sample(), "yaml")[0])["items"] == ROWS
    assert [json.loads(line) for line in rendered(sample(), "jsonl")[0].splitlines()] == ROWS
    assert rendered(sample(), "name")[0] == "thing/a\nthing/much-longer-name\n"


def test_truncate_keeps_one_line() -> None:
    assert truncate("a\nb  c", 20) == "a b c"
    assert truncate("x" * 30, 10) == "xxxxxxx..."
    assert truncate(None, 5) is None


# -- -o json and -o yaml stream the List, byte for byte what the whole document writes ---------------------------

def _json_values():
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | \
        st.text(max_size=12)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=12)


def _streamed_and_whole(objects: list, fmt: str) -> tuple[str, str]:
    from kubectl_pvleft.output.formats import JsonFormatter, YamlFormatter, kubectl_list, yaml_text
    from kubectl_pvleft.output.report import PrintOptions

    out = io.StringIO()
    report: Report = Report(rows=objects, columns=(), to_json=lambda o: o, name=lambda o: "")
    formatter = {"json": JsonFormatter, "yaml": YamlFormatter}[fmt](report, PrintOptions(output=fmt, out=out))
    formatter.whole(iter(objects))  # rows as they come: a generator, never a list held whole
    whole = json.dumps(kubectl_list(objects), indent=4, ensure_ascii=False) + "\n" if fmt == "json" \
        else yaml_text(kubectl_list(objects))
    return out.getvalue(), whole


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_the_streamed_list_is_the_whole_document_written_at_once(fmt: str) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(st.dictionaries(st.text(max_size=8), _json_values(), max_size=4), max_size=4))
    def check(objects: list) -> None:
        streamed, whole = _streamed_and_whole(objects, fmt)
        assert streamed == whole

    check()
    for objects in ([], [{}], [{"name": "a\nb", "ü": ["ß", {}], "n": None}], [{"a": []}, {"b": {"c": "yes"}}]):
        streamed, whole = _streamed_and_whole(objects, fmt)
        assert streamed == whole, objects


def test_indented_json_is_json_dumps_with_an_indent() -> None:
    """-o json lays out the json module's compact text with msgspec: the same text as json.dumps(indent=4) for every
    code point (escapes, lone surrogates a server's JSON may carry), every float json writes its own way (1e+16,
    1e-07), and NaN or Infinity, which only json's own indenting takes."""
    from hypothesis import HealthCheck, given, settings

    from kubectl_pvleft.output.formats import indented_json

    every = "".join(chr(c) for c in range(0x110000))
    for start in range(0, len(every), 4096):
        doc = {every[start:start + 64]: [every[start:start + 4096], {}, []], "n": None}
        assert indented_json(doc) == json.dumps(doc, indent=4, ensure_ascii=False)
    for number in (1e16, 1e-7, -0.0, 0.1, 5e-324, 1.7976931348623157e308, 2**70, float("nan"), float("inf"),
                   -float("inf")):
        doc = {"cost": number, "nested": [{"x": number}]}
        assert indented_json(doc) == json.dumps(doc, indent=4, ensure_ascii=False)

    @settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(_json_values())
    def check(value: object) -> None:
        assert indented_json(value) == json.dumps(value, indent=4, ensure_ascii=False)

    check()
