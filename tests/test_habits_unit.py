"""kubectl's habits and output a person can act on, in-process: did-you-mean, help [COMMAND], examples and
column legends, the table's clause-aware cut, the -o registry, -o markdown and -o junit, read-only next looks."""

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
from kubectl_pvleft.cli import helptext
from kubectl_pvleft.cli.parser import parse
from kubectl_pvleft.cli.suggest import levenshtein, suggestions
from kubectl_pvleft.invocation import COMMANDS
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


# -- did you mean ----------------------------------------------------------------------------------------

def test_levenshtein_is_cobras_case_blind_edit_distance() -> None:
    assert levenshtein("gett", "get") == 1 and levenshtein("hepl", "help") == 2 and levenshtein("GET", "get") == 0
    assert levenshtein("", "abc") == 3 and levenshtein("kitten", "sitting") == 3


def test_suggestions_by_distance_and_by_prefix_in_declared_order() -> None:
    commands = [c.name for c in COMMANDS]
    assert suggestions("pendng", commands) == ["pending"]
    assert suggestions("l", commands) == ["leftovers"]  # a prefix, however far
    assert suggestions("clams", commands) == ["claims"]
    assert suggestions("claases", commands) == ["classes"]
    assert suggestions("zzzzzz", commands) == []


def test_a_mistyped_subcommand_gets_cobras_words_and_a_usage_exit() -> None:
    result = invoke("pendng")
    assert result.code == 2 and result.stdout == ""
    assert result.stderr == ('error: unknown command "pendng" for "kubectl pvleft"\n'
                             "\nDid you mean this?\n\tpending\n")
    far = invoke("zzzzzzzz")
    assert far.code == 2 and far.stderr == 'error: unknown command "zzzzzzzz" for "kubectl pvleft"\n'


def test_a_mistyped_flag_gets_the_same_words() -> None:
    result = invoke("leftovers", "--namespce", "x")
    assert result.code == 2
    assert result.stderr == ("error: unknown flag: --namespce (see 'kubectl pvleft leftovers --help')\n"
                             "\nDid you mean this?\n\t--namespace\n")
    # A subcommand's own flags are candidates; a flag's value never appears (it may be a secret).
    drift = invoke("classes", "--drfit")
    assert "\t--drift\n" in drift.stderr
    secret = invoke("leftovers", "--tokn=hunter2")
    assert "hunter2" not in secret.stderr and "\t--token\n" in secret.stderr


# -- help ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_help_command_is_the_subcommands_help(command: str) -> None:
    via_help, via_flag = invoke("help", command), invoke(command, "--help")
    assert via_help.code == via_flag.code == 0 and via_help.stdout == via_flag.stdout
    assert "\nexamples:\n" in via_help.stdout and "\ncolumns:\n" in via_help.stdout


def test_help_alone_and_an_unknown_topic_as_kubectl() -> None:
    alone = invoke("help")
    assert alone.code == 0 and alone.stdout == invoke("--help").stdout
    unknown = invoke("help", "gett")
    assert unknown.code == 0 and unknown.stdout.startswith("Unknown help topic [`gett`]\nusage: ")


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_every_example_is_a_real_command_line(command: str) -> None:
    examples = helptext.EXAMPLES[command]
    assert len(examples) >= 3
    for line in examples:
        words = shlex.split(line.split(" > ")[0])
        assert words[:3] == ["kubectl", "pvleft", command], line
        invocation = parse(words[2:], PROG)  # raises on a flag that does not exist
        assert invocation is not None and invocation.command.name == command


def legend(command: str) -> str:
    return " ".join(text for _, text in helptext.LEGENDS[command])


def test_legends_name_every_value_the_analyses_can_put_in_their_state_columns() -> None:
    from kubectl_pvleft.analyses import claims, classes, snapshots
    from kubectl_pvleft.analyses.pending import rules

    assert all(v in legend("leftovers") for v in (leftovers.MISSING, leftovers.REPLACED, leftovers.PRESENT,
                                                  leftovers.UNKNOWN, *leftovers.LEFTOVER_PHASES))
    assert all(v in legend("pending") for v in (rules.SCHEDULER, rules.PV_CONTROLLER, rules.ATTACH_DETACH,
                                                rules.KUBELET, rules.EPHEMERAL_CONTROLLER, rules.NO_SIGNAL))
    assert claims.PENDING in problem_values() and claims.RESIZE_NOT_STARTED in problem_values()
    assert all(v in legend("classes") for v in (classes.MULTIPLE_DEFAULTS, classes.MISSING_CLASS,
                                               classes.MISSING_CSIDRIVER, classes.RECLAIM_DRIFT, classes.CSI,
                                               classes.IN_TREE, classes.EXTERNAL, classes.NO_PROVISIONER))
    assert all(v in legend("snapshots") for v in (snapshots.MISSING, snapshots.REPLACED, snapshots.PRESENT,
                                                 snapshots.RETAINED_ORPHAN, snapshots.CLASS_MISSING,
                                                 snapshots.NOT_READY))


def problem_values() -> list[str]:
    """The values `help claims` lists for PROBLEM: the comma-separated words before the legend's first sentence
    end, each without its parenthesized gloss."""
    text = dict(helptext.LEGENDS["claims"])["PROBLEM"]
    depth, plain = 0, ""
    for char in text:  # the glosses hold commas and full stops of their own
        depth += {"(": 1, ")": -1}.get(char, 0)
        plain += char if depth == 0 and char != ")" else ""
    return [v.strip() for v in plain.split(". ")[0].split(",")]


def test_help_claims_lists_exactly_the_problems_the_code_can_give() -> None:
    """Both ways: every kind claim_problems.problems() can give (PROBLEM_KINDS, built from the tables it reads) is
    in `help claims`, and the legend names nothing else; and every Problem(...) the module builds takes its kind
    from those constants or tables, so a new kind cannot bypass PROBLEM_KINDS."""
    import ast
    import inspect

    from kubectl_pvleft.analyses import claim_problems

    assert sorted(problem_values()) == sorted(claim_problems.PROBLEM_KINDS)
    assert claim_problems.UNUSED in problem_values()
    kinds = {name for name, value in vars(claim_problems).items() if name.isupper() and value in
             claim_problems.PROBLEM_KINDS}
    tree = ast.parse(inspect.getsource(claim_problems))
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "Problem":
            first = call.args[0]
            # A constant of the module, or `kind` read from one of its tables (RESIZE_STATUSES, CONDITIONS...).
            assert (isinstance(first, ast.Name) and (first.id in kinds or first.id == "kind")) or (
                isinstance(first, ast.Subscript) and getattr(first.value, "id", "") in (
                    "PHASE_PROBLEMS", "CONDITIONS")), ast.unparse(call)


def test_legend_lines_are_wrapped_under_their_column() -> None:
    text = invoke("help", "claims").stdout
    block = text.split("\ncolumns:\n")[1].split("\n\n")[0].splitlines()
    assert all(len(line) <= 110 for line in block)
    assert block[0].startswith("  STATUS ") and block[1].startswith("  PROBLEM  ")
    assert block[2].startswith(" " * 11) and block[2][11] != " "  # a legend's next line starts under its text


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
