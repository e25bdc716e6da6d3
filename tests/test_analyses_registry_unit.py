"""The registry of analyses (kubectl_pvleft/analyses/__init__.py): one entry per command, in the order of
invocation.COMMANDS, each loading the analysis its options ask for, with its own row type."""

from __future__ import annotations

from kubectl_pvleft.analyses import ANALYSES, ANALYSES_BY_NAME
from kubectl_pvleft.invocation import COMMANDS, Analysis, AnalysisOf, Options, Row


def test_every_command_has_its_analysis_in_the_registry_in_order() -> None:
    assert [entry.command for entry in ANALYSES] == list(COMMANDS)
    assert list(ANALYSES_BY_NAME) == [command.name for command in COMMANDS]


def test_each_entry_loads_an_analysis_with_its_own_metrics() -> None:
    for entry in ANALYSES:
        analysis = entry.load(Options())
        assert isinstance(analysis, AnalysisOf), entry.name
        assert analysis.apply(lambda a: a) is analysis  # apply hands over the analysis itself


def test_classes_drift_is_watched_with_rows_of_its_own() -> None:
    """`classes --drift` lists PVs (Drift), the classes do not (ClassRow): two analyses behind one command, the
    registry picks by the options, and each watch report prints its own rows."""
    from kubectl_pvleft.analyses import classes

    entry = ANALYSES_BY_NAME["classes"]
    assert entry.load(Options()) is classes.ANALYSIS
    assert entry.load(Options(drift=True)) is classes.DRIFT

    def headers(analysis: Analysis[Row]) -> list[str]:  # generic in the rows, as SomeAnalysis.apply calls it
        return [column.header for column in analysis.watch_report(Options()).columns]

    assert "CLASSRECLAIMPOLICY" in entry.load(Options(drift=True)).apply(headers)
    assert "PENDINGPVCS" in entry.load(Options()).apply(headers)
    assert classes.ANALYSIS.follow(Options()).primary == "classes"
    assert classes.DRIFT.follow(Options(drift=True)).primary == "volumes"
