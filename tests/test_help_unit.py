"""Mistakes and help as kubectl has them, in-process: cobra's did-you-mean (its case-blind distance, then
prefixes), help [COMMAND], every example a real command line, and column legends that name every value the
analyses can put in their state columns. kubectl itself is the oracle in test_suggest_kubectl.py."""

from __future__ import annotations

import shlex

import pytest

from cli_runner import invoke
from kubectl_pvleft.analyses import leftovers
from kubectl_pvleft.cli import helptext
from kubectl_pvleft.cli.parser import parse
from kubectl_pvleft.cli.suggest import levenshtein, suggestions
from kubectl_pvleft.invocation import COMMANDS

PROG = "kubectl pvleft"


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
    # kubectl's layout (cobra's template): description, Examples, Options, Usage, then the line for `options`
    sections = [line for line in via_help.stdout.splitlines() if line in ("Examples:", "Columns:", "Options:", "Usage:")]
    assert sections == ["Examples:", "Columns:", "Options:", "Usage:"]
    assert via_help.stdout.endswith('\nUse "kubectl pvleft options" for a list of global command-line options '
                                    "(applies to all commands).\n")


def test_help_alone_and_an_unknown_topic_as_kubectl() -> None:
    alone = invoke("help")
    assert alone.code == 0 and alone.stdout == invoke("--help").stdout
    unknown = invoke("help", "gett")
    assert unknown.code == 0 and unknown.stdout == "Unknown help topic [`gett`]\n" + alone.stdout


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
    block = text.split("\nColumns:\n")[1].split("\n\n")[0].splitlines()
    assert all(len(line) <= 110 for line in block)
    assert block[0].startswith("  STATUS ") and block[1].startswith("  PROBLEM  ")
    under = block[1].index("unused")  # where PROBLEM's text starts: after the widest header
    assert block[2].startswith(" " * under) and block[2][under] != " "  # a legend's next line starts under its text
