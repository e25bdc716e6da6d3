"""kubectl's JSONPath dialect, custom-columns and --sort-by, on recorded wire JSON and hand-made objects.

Every expected string here is what client-go v0.37 (util/jsonpath, kubectl's sorter and custom-columns
printer, resource.ParseQuantity) gives for the same input; tests/test_jsonpath_kubectl.py compares with the
kubectl binary itself on a real control plane.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubectl_pvleft.errors import UsageError
from kubectl_pvleft.output.custom_columns import (
    parse_custom_columns,
    parse_custom_columns_file,
    relaxed_jsonpath_expression,
    render_custom_columns,
)
from kubectl_pvleft.output.govalue import go_syntax
from kubectl_pvleft.output.jsonpath import ExecutionError, JSONPathTemplate, TemplateError
from kubectl_pvleft.output.sorting import sort_key, sort_rows
from kubectl_pvleft.output.tabwriter import tabwrite
from kubectl_pvleft.records.quantity import parse_quantity

WIRE = Path(__file__).parent / "fixtures" / "wire"
PVS = json.loads((WIRE / "leftovers_pvs.json").read_text())

HAND = {
    "int": 7, "neg": -3, "float": 1.5, "whole": 2.0, "million": 1000000.0, "tiny": 0.00001, "huge": 1e21,
    "yes": True, "nothing": None, "html": '<a href="x">&</a>', "sep": "a\u2028b", "ctl": "tab\there\x01\x7f",
    "floats": [1e21, 1e-7, 1e20, 0.5, 2.0, 1000000.0, -0.25],
    "list": [1, "two", None, {"k": "v"}, [3]],
    "map": {"b": 2, "a": {"z": None}},
    "people": [{"name": "ann", "age": 30}, {"name": "bob", "age": 25.5}, {"name": "cy"}, None, {"name": "dee", "age": 41}],
    "dotted.key": "dk", "l": [1, 2],
}
OBJECTS = {"pvs": PVS, "hand": HAND}

RENDERS = [
    ("pvs", "{.items[*].metadata.name}", "mariadb-pv scratch-pv shop-pv spare-pv web-pv"),
    ("pvs", '{range .items[*]}{.metadata.name}{"\\t"}{.status.phase}{"\\n"}{end}',
     "mariadb-pv\tReleased\nscratch-pv\tFailed\nshop-pv\tReleased\nspare-pv\tAvailable\nweb-pv\tBound\n"),
    ("pvs", '{.items[?(@.spec.persistentVolumeReclaimPolicy=="Delete")].metadata.name}', "scratch-pv"),
    ("pvs", '{.items[?(@.status.phase!="Released")].spec.claimRef.name}', "scratch web"),
    ("pvs", "{.items[?(@.spec.claimRef)].metadata.name}", "mariadb-pv scratch-pv shop-pv web-pv"),
    ("pvs", "{.items[0].spec.capacity} {.items[-1].metadata.name} {.items[-2:].metadata.name}",
     '{"storage":"250Mi"} web-pv spare-pv web-pv'),
    ("pvs", "{.items[1:3].metadata.name}|{.items[::2].metadata.name}|{.items[0,4].metadata.name}",
     "scratch-pv shop-pv|mariadb-pv shop-pv web-pv|mariadb-pv web-pv"),
    ("pvs", "{..claimRef.name}", "mariadb scratch orders web"),
    ("pvs", "{.items[0].metadata.annotations.pv\\.kubernetes\\.io/bound-by-controller}", "yes"),
    ("pvs", "{.items[0].metadata.annotations['pv.kubernetes.io/bound-by-controller']}", ""),  # means .pv.kubernetes...
    ("pvs", "{.kind} {.metadata} {.items[0].nope}|{.nope.deeper[0]}|{.}|", 'PersistentVolumeList {"resourceVersion":"298"} |||'),
    ("pvs", ".items[*].metadata.name", ".items[*].metadata.name"),  # no braces: literal text, as in kubectl
    ("hand", "{.int} {.neg} {.float} {.whole} {.million} {.tiny} {.huge}", "7 -3 1.5 2 1e+06 1e-05 1e+21"),
    ("hand", "{.yes} {.nothing} {.html} {.ctl}", 'true null <a href="x">&</a> tab\there\x01\x7f'),
    ("hand", "{.map} {.list}", '{"a":{"z":null},"b":2} [1,"two",null,{"k":"v"},[3]]'),
    ("hand", "{.floats}", "[1e+21,1e-7,100000000000000000000,0.5,2,1000000,-0.25]"),
    ("hand", "{.floats[*]}", "1e+21 1e-07 1e+20 0.5 2 1e+06 -0.25"),
    ("hand", "{@.people[0]}", '{"age":30,"name":"ann"}'),
    ("hand", "{.list[*]}|{.list[1:3]}|{.list[]}|{.list[::2]}", '1 two null {"k":"v"} [3]|two null|1|1 null [3]'),
    ("hand", "{.people[?(@.age)].name} {.people[?(@.name==\"bob\")].age} {.people[?(@.name>\"b\")].name}",
     "ann bob dee 25.5 bob cy dee"),
    ("hand", "{..name} {.people[0].name.*}", "ann bob cy dee 97 110 110"),  # a string's bytes, as Go indexes it
    ("hand", "{.dotted\\.key}|{['dotted.key']}|{$['int']}", "dk||7"),
    ("hand", '{"a\\tb"}{\'x\'}{"\\u00e9\\x41\\101"}{5}{-2}{1.5}{true}', "a\tbxéAA5-21.5true"),
    ("hand", "{range .people[*]}{.name}:{.age};{end}", "ann:30;bob:25.5;cy:;:;dee:41;"),
    ("hand", "{range .l[*]}<{@}>", '<1><2><{"ctl":"tab\\there\\u0001\x7f","dotted.key":"dk","float":1.5,'
     '"floats":[1e+21,1e-7,100000000000000000000,0.5,2,1000000,-0.25],'
     '"html":"\\u003ca href=\\"x\\"\\u003e\\u0026\\u003c/a\\u003e","huge":1e+21,"int":7,"l":[1,2],"list":[1,"two",null,'
     '{"k":"v"},[3]],"map":{"a":{"z":null},"b":2},"million":1000000,"neg":-3,"nothing":null,"people":[{"age":30,"name":"ann"},'
     '{"age":25.5,"name":"bob"},{"name":"cy"},null,{"age":41,"name":"dee"}],"sep":"a\\u2028b",'
     '"tiny":0.00001,"whole":2,"yes":true}>'),
    ("hand", "{range .people[*]}{range .name}[{@}]{end},{end}", "[ann],[bob],[cy],,[dee],"),
    ("hand", "{range .nope[*]}never{end}after", "after"),
    ("hand", "{.people[?(@.nope)]}{.map.a.z}", "null"),
]


@pytest.mark.parametrize("name, template, expected", RENDERS)
def test_render_prints_what_kubectl_prints(name: str, template: str, expected: str) -> None:
    assert JSONPathTemplate(template).render(OBJECTS[name]) == expected


RENDERS_JSON = [
    ("pvs", "{.items[*].metadata.name}{.kind}",
     '[\n    "mariadb-pv",\n    "scratch-pv",\n    "shop-pv",\n    "spare-pv",\n    "web-pv"\n]\n'
     '[\n    "PersistentVolumeList"\n]\n'),
    ("pvs", "{.items[0].spec.capacity}{.nope}", '[\n    {\n        "storage": "250Mi"\n    }\n]\n[]\n'),
    ("hand", '{.list}{"\\n"}', '[\n    [\n        1,\n        "two",\n        null,\n        {\n            "k": "v"\n        },\n'
     '        [\n            3\n        ]\n    ]\n]\n[\n    "\\n"\n]\n'),
    ("hand", "{.html}{.map.a}",
     '[\n    "\\u003ca href=\\"x\\"\\u003e\\u0026\\u003c/a\\u003e"\n]\n[\n    {\n        "z": null\n    }\n]\n'),
]


@pytest.mark.parametrize("name, template, expected", RENDERS_JSON)
def test_render_json_prints_what_jsonpath_as_json_prints(name: str, template: str, expected: str) -> None:
    assert JSONPathTemplate(template).render_json(OBJECTS[name]) == expected


PARSE_ERRORS = [
    ("{.items[", "unterminated array"),
    ("{.items[0].metadata.name", "unclosed action"),
    ("{.a\n}", "unclosed action"),
    ('{"abc}', "unterminated quoted string"),
    ("{.a[?(@.b==1)}", "unclosed array expect ]"),
    ("{.a[?(@.b==1}", "unterminated filter"),
    ("{%}", "unrecognized character in action: U+0025 '%'"),
    ("{\t}", "unrecognized character in action: U+0009"),
    ("{....a}", "invalid multiple recursive descent"),
    ("{1.2.3}", "cannot parse number 1.2.3"),
    ("{.a[x]}", "invalid array index x"),
    ("{.a[1:2:3:4]}", "invalid array index 1:2:3:4"),
    ("{.a[-]}", "array index - is not a number"),
    ('{"\\q"}', 'unquote string "\\q" error invalid syntax'),
    ("{.a[0,x]}", "invalid array index x"),
]


@pytest.mark.parametrize("template, reason", PARSE_ERRORS)
def test_a_bad_template_is_refused_with_kubectls_text(template: str, reason: str) -> None:
    with pytest.raises(TemplateError) as raised:
        JSONPathTemplate(template)
    assert str(raised.value) == f"error parsing jsonpath {template}, {reason}"
    assert raised.value.reason == reason
    assert isinstance(raised.value, UsageError) and raised.value.exit_code == 1  # kubectl exits 1


EXECUTION_ERRORS = [
    ("{end}", "not in range, nothing to end"),
    ("{foo}", "unrecognized identifier foo"),
    ("{.list[9]}", "array index out of bounds: index 9, length 5"),
    ("{.list[-6]}", "array index out of bounds: index -1, length 5"),
    ("{.list[3:1]}", "starting index 3 is greater than ending index 1"),
    ("{.list[::0]}", "step must be > 0"),
    ("{.map[0]}", "map[string]interface {} is not array or slice"),
    ("{.int[?(@.x)]}", "7 is not array or slice and cannot be filtered"),
    ("{.people[*][?(@.name)]}", "map[age:30 name:ann] is not array or slice and cannot be filtered"),
    ("{.people[?(@.age>26)]}", "incompatible types for comparison"),
    ("{.people[?(@.name<true)]}", "incompatible types for comparison"),
    ("{.people[?(@.age=26)]}", "unrecognized filter operator ="),
    ("{.people[?(@.age==@)]}", "invalid type for comparison"),
]


@pytest.mark.parametrize("template, reason", EXECUTION_ERRORS)
def test_a_template_that_fails_on_the_object_says_what_kubectl_says(template: str, reason: str) -> None:
    with pytest.raises(ExecutionError) as raised:
        JSONPathTemplate(template).render(HAND)
    assert raised.value.reason == reason
    assert str(raised.value).startswith(f"error executing jsonpath {json.dumps(template)}: Error executing template: "
                                        f"{reason}. Printing more information for debugging the template:\n")


def test_execution_error_carries_the_object_as_go_prints_it() -> None:
    obj = {"a": [1, 2.5, None, True], "s": 'caf\u00e9 "q"\n\u2028', "m": {}, "l": []}
    with pytest.raises(TemplateError) as raised:
        JSONPathTemplate("{.a[9]}").render(obj)
    assert str(raised.value) == (
        'error executing jsonpath "{.a[9]}": Error executing template: array index out of bounds: index 9, length 4. '
        "Printing more information for debugging the template:\n\ttemplate was:\n\t\t{.a[9]}\n"
        "\tobject given to jsonpath engine was:\n\t\tmap[string]interface {}{\"a\":[]interface {}{1, 2.5, "
        'interface {}(nil), true}, "l":[]interface {}{}, "m":map[string]interface {}{}, "s":"café \\"q\\"\\n\\u2028"}'
        "\n\n\n")
    assert go_syntax(None) == "<nil>"


def test_map_wildcards_visit_keys_sorted() -> None:
    # Go visits a map in random order here; we take the order encoding/json prints keys in.
    assert JSONPathTemplate("{.map.*}|{.map..z}").render(HAND) == '{"z":null} 2|null'


def test_missing_keys_are_empty_unless_refused() -> None:
    assert JSONPathTemplate("[{.people[0].nope}]").render(HAND) == "[]"
    strict = JSONPathTemplate("{.people[0].nope}", allow_missing_keys=False)
    with pytest.raises(ExecutionError) as raised:
        strict.render(HAND)
    assert raised.value.reason == "nope is not found"
    # An existence filter ignores the error of its own test, as client-go does.
    assert JSONPathTemplate("{.people[?(@.age)].name}", allow_missing_keys=False).render(HAND) == "ann bob dee"


def test_find_results_groups_values_by_top_level_node() -> None:
    assert JSONPathTemplate("a{.l[*]}{.nope}").find_results(HAND) == [["a"], [1, 2], []]


# ---- custom-columns ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("expression", ["a.b", ".a.b", "{a.b}", "{.a.b}"])
def test_relaxed_expressions_become_one_template(expression: str) -> None:
    assert relaxed_jsonpath_expression(expression) == "{.a.b}"


def test_custom_columns_cells_as_kubectl_prints_them() -> None:
    columns = parse_custom_columns("NAME:.metadata.name,CLAIM:.spec.claimRef.name,CAP:.spec.capacity,"
                                   "MODES:.spec.accessModes,MODE:spec.accessModes[*],EMPTY:")
    assert [(c.header, c.template.text) for c in columns][:2] == [("NAME", "{.metadata.name}"),
                                                                   ("CLAIM", "{.spec.claimRef.name}")]
    assert render_custom_columns(columns, PVS["items"]) == (
        "NAME         CLAIM     CAP                  MODES             MODE            EMPTY\n"
        "mariadb-pv   mariadb   map[storage:250Mi]   [ReadWriteOnce]   ReadWriteOnce   <none>\n"
        "scratch-pv   scratch   map[storage:250Mi]   [ReadWriteOnce]   ReadWriteOnce   <none>\n"
        "shop-pv      orders    map[storage:250Mi]   [ReadWriteOnce]   ReadWriteOnce   <none>\n"
        "spare-pv     <none>    map[storage:250Mi]   [ReadWriteOnce]   ReadWriteOnce   <none>\n"
        "web-pv       web       map[storage:250Mi]   [ReadWriteOnce]   ReadWriteOnce   <none>\n")


def test_custom_columns_print_go_values_and_escape_the_terminal() -> None:
    columns = parse_custom_columns("L:.list,ALL:.list[*],M:.map,F:.million,T:.tiny,N:.nothing,X:.esc")
    row = dict(HAND, esc="\x1b[31mred\r")
    assert render_custom_columns(columns, [row, None], no_headers=True) == (
        "[1 two <nil> map[k:v] [3]]   1,two,<nil>,map[k:v],[3]   map[a:map[z:<nil>] b:2]   1e+06    1e-05    "
        "<nil>    ^[[31mred\\r\n"
        "<none>                       <none>                     <none>                    <none>   <none>   <none>   <none>\n")


def test_custom_columns_file_is_two_lines_of_words() -> None:
    columns = parse_custom_columns_file("NAME\t  CLAIM\r\n{.metadata.name}   spec.claimRef.name\n")
    assert [(c.header, c.template.text) for c in columns] == [("NAME", "{.metadata.name}"),
                                                               ("CLAIM", "{.spec.claimRef.name}")]


CUSTOM_COLUMN_ERRORS = [
    (parse_custom_columns, "", "custom-columns format specified but no custom columns given"),
    (parse_custom_columns, "NAME", "unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>"),
    (parse_custom_columns, "A:.a,B", "unexpected custom-columns spec: B, expected <header>:<json-path-expr>"),
    (parse_custom_columns, "A:{.a}{.b}", "unexpected path string, expected a 'name1.name2' or '.name1.name2' or "
                                         "'{name1.name2}' or '{.name1.name2}'"),
    (parse_custom_columns, "A:.a[", "unterminated array"),
    (parse_custom_columns_file, "", "invalid template, missing header line. Expected format is one line of space "
                                    "separated headers, one line of space separated column specs."),
    (parse_custom_columns_file, "A B\n", "invalid template, missing spec line. Expected format is one line of space "
                                         "separated headers, one line of space separated column specs."),
    (parse_custom_columns_file, "A B\n.a\n", "number of headers (2) and field specifications (1) don't match"),
]


@pytest.mark.parametrize("parse, spec, message", CUSTOM_COLUMN_ERRORS)
def test_custom_columns_refusals_use_kubectls_text(parse, spec: str, message: str) -> None:
    with pytest.raises(TemplateError) as raised:
        parse(spec)
    assert str(raised.value) == message


def test_a_column_failing_on_an_object_says_what_kubectl_says() -> None:
    with pytest.raises(TemplateError) as raised:
        render_custom_columns(parse_custom_columns("A:.spec.accessModes[5]"), PVS["items"])
    assert str(raised.value) == "array index out of bounds: index 5, length 1"


def test_tabwriter_remembers_widths_across_a_line_break_in_a_cell() -> None:
    assert tabwrite("LONGER_HEADER\tX\n<none>\ta\nfirst\nsecond\tb\n") == (
        "LONGER_HEADER   X\n<none>          a\nfirst\nsecond          b\n")
    assert tabwrite("a\tb\tc\nlonger\td\n") == "a        b     c\nlonger   d\n"  # columns are blocks of lines


# ---- --sort-by ----------------------------------------------------------------------------------------------------


QUANTITIES = [("500Mi", 524288000), ("2Gi", 2147483648), ("0.5Gi", 536870912), ("1e3", 1000), ("+1k", 1000),
              ("1.5n", "2E-9"), ("1e-10", "1E-9"), ("9Ei", 2 ** 63 - 1), ("-1.5m", "-0.0015"), ("m", 0),
              ("1K", None), ("abc", None), ("", None), ("1.5Ki", 1536), ("12e", None), (".", 0)]


@pytest.mark.parametrize("text, value", QUANTITIES)
def test_quantities_parse_as_apimachinery_parses_them(text: str, value) -> None:
    from decimal import Decimal
    parsed = parse_quantity(text)
    assert parsed == (None if value is None else Decimal(value) if isinstance(value, str) else value)


def rows(*values) -> list[dict]:
    return [{"id": index, "v": value} if value != "-" else {"id": index} for index, value in enumerate(values)]


SORTS = [
    (rows("2Gi", "500Mi", "10Gi", "1Gi"), [1, 3, 0, 2]),  # quantity-aware: 500Mi < 1Gi < 2Gi < 10Gi
    (rows("b", "10", "a", "9"), [3, 1, 2, 0]),  # 9 < 10 as quantities; "10" < "a" and "9" < "b" as strings
    (rows(10, 9, 100, -1), [3, 1, 0, 2]),
    (rows(0.5, -2.5, 3.25), [1, 0, 2]),
    (rows("2026-12-02T16:00:09Z", "2025-01-01T00:00:00Z", "2026-12-02T16:00:06Z"), [1, 2, 0]),
    (rows("x", "-", None, "a", "x"), [1, 2, 3, 0, 4]),  # missing first, then null; equal values keep their order
]


@pytest.mark.parametrize("data, order", SORTS)
def test_sort_rows_orders_as_kubectl(data: list[dict], order: list[int]) -> None:
    assert [row["id"] for row in sort_rows(data, ".v")] == order
    assert [row["id"] for row in sorted(data, key=sort_key("{.v}"))] == order


def test_sort_by_on_recorded_pvs() -> None:
    by_time = [pv["metadata"]["name"] for pv in sort_rows(PVS["items"], ".metadata.creationTimestamp")]
    assert by_time == ["mariadb-pv", "shop-pv", "scratch-pv", "spare-pv", "web-pv"]
    by_claim = [pv["metadata"]["name"] for pv in sort_rows(PVS["items"], "spec.claimRef.name")]
    assert by_claim == ["spare-pv", "mariadb-pv", "shop-pv", "scratch-pv", "web-pv"]


SORT_ERRORS = [
    (rows(1, "a"), ".v", "Field {.v} in *unstructured.Unstructured is an unsortable type: interface, "
                         "err: unsortable interface: interface"),
    (rows(1, 2.5), ".v", "Field {.v} in *unstructured.Unstructured is an unsortable type: interface, "
                         "err: unsortable interface: interface"),
    (rows({"a": 1}, {"a": 2}), ".v", "Field {.v} in *unstructured.Unstructured is an unsortable type: interface, "
                                     "err: unsortable type: map[string]interface {}"),
    (rows(True, False), ".v", "Field {.v} in *unstructured.Unstructured is an unsortable type: interface, "
                              "err: unsortable type: bool"),
    (rows("-", "-"), ".v", 'couldn\'t find any field with path "{.v}" in the list of objects'),
    (rows(1, 2), "{.a}{.b}", "unexpected path string, expected a 'name1.name2' or '.name1.name2' or "
                             "'{name1.name2}' or '{.name1.name2}'"),
    (rows(1, 2), ".v[", "unterminated array"),
    (rows(1, 2), ".v[3]", "int64 is not array or slice"),
]


@pytest.mark.parametrize("data, field, message", SORT_ERRORS)
def test_sort_by_refusals_use_kubectls_text(data: list[dict], field: str, message: str) -> None:
    with pytest.raises(TemplateError) as raised:
        sort_rows(data, field)
    assert str(raised.value) == message


def test_sorting_nothing_is_nothing() -> None:
    assert sort_rows([], ".v") == []
