"""What the user asked, typed and frozen, and what a run hands back. Nothing here knows argparse: the command line
turns argv into one ``Invocation``; below it, code reads typed fields.

- ``Flag``: one flag of a subcommand or a cloud, declared as data where it lives (the parser builds argparse from
  it; a boolean is known from its declaration, so ``--flag=false`` works for every boolean).
- ``Command``: a subcommand, declared once: its name, summary, flags, the kind it lists (its scope comes from the
  Kind table) and whether a cloud census may join it. Which analysis it runs is the registry's word
  (``analyses.ANALYSES``, a floor above: this module never imports an analysis).
- ``Invocation``: everything argv said, once parsed; ``Options``: what one context's run is asked (the
  namespace resolved against that context's kubeconfig), the only thing an analysis sees.
- ``Result``: what an analysis's ``run(api, options)`` produced.

- ``Analysis``: what an analysis is to everything above it (a run, --watch, a fleet, serve, mcp): ``run``,
  ``follow``, ``watch_report``, ``served``, ``metrics`` and ``items`` (the TypedDicts of what -o json prints). Each
  analysis module exports one ``ANALYSIS`` meeting it (mypy checks it where it is declared, with the module's own
  row type); ``SomeAnalysis`` is the same seen from the registry, whose entries have different row types (``apply``
  hands one over with its own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Generic, Optional, Protocol, TypeVar, Union

if TYPE_CHECKING:  # --help must not pay for these
    from kubectl_pvleft.kube.api import Reader
    from kubectl_pvleft.kube.kubeconfig import Selection
    from kubectl_pvleft.kube.watch import Follow
    from kubectl_pvleft.output.report import PrintOptions, Report, SomeReport
    from kubectl_pvleft.output.series import FailedDelete, Finding, Gauge, Series
    from kubectl_pvleft.records import ObjectMeta

Row = TypeVar("Row")
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

# Plain classes, not dataclasses: `dataclasses` imports `inspect` and writes each class's methods with exec,
# ~10 ms that --help and every run would pay before doing anything.


class _Frozen:
    __slots__: tuple[str, ...] = ()

    def __init__(self, **values: object) -> None:
        for name in self.__slots__:
            object.__setattr__(self, name, values.pop(name, getattr(type(self), f"_default_{name}", None)))
        if values:
            raise TypeError(f"{type(self).__name__} has no field(s) {', '.join(sorted(values))}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def __hash__(self) -> int:
        return hash(tuple(repr(getattr(self, n)) for n in self.__slots__))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def replace(self: F, **changes: object) -> F:
        return type(self)(**{**{n: getattr(self, n) for n in self.__slots__}, **changes})


# Bound to the class, not its name: typing compiles a name (a ForwardRef) at import, and a run's first compile()
# costs ~0.7 ms of start-up (BENCHMARKS.md, Start-up).
F = TypeVar("F", bound=_Frozen)


BOOLEAN, VALUE, REPEATED = "boolean", "value", "repeated"
DURATION = "duration"  # one value, parsed into seconds (a float) by the command line
NEEDS_CENSUS = "a cloud census"  # a Flag's ``needs``: any flag that asks for a census, whichever cloud's


class Flag(_Frozen):
    """One flag, as data. ``kind``: BOOLEAN (``--x``, ``--x=false``), VALUE (one string), REPEATED (a list) or
    DURATION (``7d``, ``36h``: seconds, a float).
    ``needs``: another flag without which this one means nothing (a usage error). ``pattern``/``what``: the syntax
    its values must have (checked before any call), and what to call a value that does not."""

    __slots__ = ("dest", "help", "kind", "metavar", "name", "needs", "pattern", "what")
    _default_kind = VALUE

    name: str
    dest: str
    kind: str
    help: Optional[str]
    metavar: Optional[str]
    needs: Optional[str]
    pattern: Optional[str]
    what: Optional[str]


# A parsed flag, by its kind: BOOLEAN a bool, VALUE a string, DURATION seconds (a float), REPEATED a tuple of
# strings; None: a VALUE or DURATION not given. ``FlagValues``: every flag of a run by dest (``Invocation.values``).
FlagValue = Union[bool, str, float, tuple[str, ...], None]
FlagValues = Mapping[str, FlagValue]


class FlagSet(_Frozen):
    """Some flags, typed: one field per flag, named by its dest and typed by its kind (see ``FlagValue``), read
    from a run's values with ``of``, so that mypy checks a flag's name and type where it is read. Each set lives
    beside the declarations of its flags (``Flags`` here; the clouds' in their packages); a test holds its fields
    to them. A flag the run does not take is the field's default (False, (), None)."""

    __slots__: tuple[str, ...] = ()

    @classmethod
    def of(cls: type[S], values: FlagValues) -> S:
        return cls(**{name: values[name] for name in cls.__slots__ if name in values})


S = TypeVar("S", bound=FlagSet)  # the class, not its name: see F


class Flags(FlagSet):
    """The subcommands' own flags (``COMMANDS``, ``SERVE``, ``MCP``), typed."""

    __slots__ = ("all", "census_interval", "drift", "exclude_namespaces", "listen", "max_finding_series",
                 "older_than", "stale_after")
    _default_all = _default_drift = False
    _default_exclude_namespaces = ()

    all: bool  # leftovers, claims, snapshots, attachments: every object, not only those with findings
    drift: bool  # classes
    older_than: Optional[float]  # seconds
    exclude_namespaces: tuple[str, ...]
    listen: Optional[str]  # serve, mcp
    census_interval: Optional[str]  # serve: Go durations, checked by the parser
    max_finding_series: Optional[str]
    stale_after: Optional[str]


class SomeAnalysis(Protocol):
    """An analysis whose rows are its own business: what the registry (``analyses.ANALYSES``) holds, since each
    analysis has its own row type. A run, ``served`` and ``items`` need no rows; what pairs a row type across calls
    (--watch: the streams and the report that prints their rows; serve: the rows and their metrics) is done by
    ``apply``, which hands the analysis with its row type to a function generic in it (mypy checks that function
    for every row type at once). ``items``: the types of the objects its -o json prints (TypedDicts, declared beside
    the code that builds them; a cloud's rows imported only when asked): mcp generates its tools' output schemas
    from them."""

    def run(self, api: Reader, options: Options) -> Result: ...

    def served(self, api: Reader) -> Optional[str]: ...

    def apply(self, use: WithAnalysis[T]) -> T: ...

    def items(self) -> tuple[object, ...]: ...


class Analysis(SomeAnalysis, Protocol[Row]):
    """An analysis, as a run, --watch, a fleet and serve see it. ``served``: a line when the kinds it reads are
    not served by this cluster (nothing to check, not an error), else None. ``metrics``: what its rows tell
    /metrics, read in one pass (``judged``: every row judged, ``finding``: which of them are findings)."""

    def follow(self, options: Options) -> Follow[Row]: ...

    def watch_report(self, options: Options) -> Report[Row]: ...

    def metrics(self, judged: Iterable[Row], finding: Callable[[Row], bool]) -> Series: ...


class WithAnalysis(Protocol[T_co]):
    """Something done with an analysis whatever its row type: a function generic in ``Row``, such as
    ``def watch(analysis: Analysis[Row]) -> None``. ``SomeAnalysis.apply`` calls it."""

    def __call__(self, analysis: Analysis[Row], /) -> T_co: ...


def always_served(api: Reader) -> Optional[str]:
    return None


class AnalysisOf(Generic[Row]):
    """An ``Analysis`` made of a module's functions: ``ANALYSIS = AnalysisOf(run, follow, watch_report, metrics,
    items=items)``. ``metrics(judged, is_finding, findings)``: its gauges from the rows that are findings (by
    ``is_finding``), and from the others for the gauges that count what is never a finding, adding what alerts name
    to ``findings``; it reads ``judged`` once, as it comes (a judgment may yield its rows one at a time);
    ``meta``: a row's object, when the analysis counts in pvleft_terminating_objects; ``failed_delete``: a finding
    row's failing backend delete (None when it has none), when the analysis counts in pvleft_delete_failure_info;
    ``items``: see ``SomeAnalysis``."""

    __slots__ = ("failed_delete", "follow", "gauges", "items", "meta", "run", "served", "watch_report")

    def __init__(self, run: Callable[[Reader, Options], Result], follow: Callable[[Options], Follow[Row]],
                 watch_report: Callable[[Options], Report[Row]],
                 metrics: Callable[[Iterable[Row], Callable[[Row], bool], list[Finding]], Iterator[Gauge]],
                 served: Callable[[Reader], Optional[str]] = always_served,
                 meta: Optional[Callable[[Row], ObjectMeta]] = None, *,
                 items: Callable[[], tuple[object, ...]],
                 failed_delete: Optional[Callable[[Row], Optional[FailedDelete]]] = None) -> None:
        self.run, self.follow, self.watch_report, self.served = run, follow, watch_report, served
        self.gauges, self.meta, self.items, self.failed_delete = metrics, meta, items, failed_delete

    def metrics(self, judged: Iterable[Row], finding: Callable[[Row], bool]) -> Series:
        """The series of one judgment, in one pass over its rows: a judgment that yields them one at a time never
        holds them all (the claims': 10,000 rows at once, a transient the exporter's heap kept)."""
        from collections import Counter

        from kubectl_pvleft.output.series import Series

        findings: list[Finding] = []
        terminating: Counter[str] = Counter()
        failed: list[FailedDelete] = []
        meta_of, failed_delete = self.meta, self.failed_delete

        def noted(rows: Iterable[Row]) -> Iterator[Row]:  # what every analysis's findings tell, as they pass
            for row in rows:
                if (meta_of is not None or failed_delete is not None) and finding(row):
                    meta = None if meta_of is None else meta_of(row)
                    if meta is not None and meta.deletion_timestamp is not None:
                        terminating.update(meta.finalizers or ("",))
                    failure = None if failed_delete is None else failed_delete(row)
                    if failure is not None:
                        failed.append(failure)
                yield row

        rows = noted(judged)
        gauges = list(self.gauges(rows, finding, findings))
        for _ in rows:  # what the gauges did not read (none, or a family that stopped early) is still judged
            pass
        return Series(gauges, findings, None if meta_of is None else terminating,
                      None if failed_delete is None else failed)

    def apply(self, use: WithAnalysis[T]) -> T:
        return use(self)


class Command(_Frozen):
    __slots__ = ("census", "census_help", "flags", "kind", "name", "selector_help", "summary")
    _default_flags = ()
    _default_census = False  # a cloud census may join it (the clouds' flags are its flags)
    _default_census_help = "cloud disks beside the PVs"  # what the census adds, as the help's flag group says

    name: str
    summary: str
    flags: tuple[Flag, ...]
    kind: str  # the plural of the kind it lists, a key of kube.api.KINDS
    selector_help: str
    census: bool
    census_help: str

    @property
    def cluster_scoped(self) -> bool:
        """What it lists is cluster-scoped (PVs, classes, snapshot contents): -n narrows, it is not the scope."""
        from kubectl_pvleft.kube.api import KINDS

        return not KINDS[self.kind].namespaced


SHOW_ALL = "all"
ALL = Flag(name="--all", dest=SHOW_ALL, kind=BOOLEAN)
OLDER_THAN = Flag(name="--older-than", dest="older_than", kind=DURATION, metavar="DURATION")
EXCLUDE_NAMESPACE = Flag(name="--exclude-namespace", dest="exclude_namespaces", kind=REPEATED, metavar="NS",
                         help="leave out this namespace (repeatable; glob patterns such as 'kube-*')")

# The annotation (a label or tag on a cloud disk) that marks an object as intentionally kept: never a finding,
# shown with --all with its value as the reason.
KEEP_ANNOTATION = "pvleft.io/keep"

COMMANDS = (
    Command(name="leftovers", summary="PersistentVolumes that survived their claim: Released, Failed, or pointing at a "
                                      "claim that is gone or replaced, with the PV's and its class's reclaim policy",
            kind="persistentvolumes", selector_help="PersistentVolumes",
            flags=(ALL.replace(help="list every PV with the same columns, kept and younger ones too"),
                   OLDER_THAN.replace(help="only PVs in their phase for longer than this (e.g. 7d, 36h); with a "
                                           "cloud census, only disks older than this too"),
                   EXCLUDE_NAMESPACE.replace(help="leave out PVs whose claim is in this namespace (repeatable; "
                                                  "glob patterns such as 'kube-*')")), census=True),
    Command(name="pending", summary="Pending Pods triaged by the controller that owns the blocker, from Pod and PVC "
                                    "evidence",
            kind="pods", selector_help="Pods", flags=(EXCLUDE_NAMESPACE,)),
    Command(name="classes", summary="StorageClasses with their PV/PVC counts, defaults and drift",
            kind="storageclasses", selector_help="StorageClasses",
            flags=(Flag(name="--drift", dest="drift", kind=BOOLEAN,
                        help="list the PVs whose reclaim policy differs from their class's instead of the classes"),)),
    Command(name="claims", summary="PersistentVolumeClaims in trouble: not bound, unused (no Pod mounts it and no workload "
                                   "will), resizing, modify failed, unhealthy, lost",
            kind="persistentvolumeclaims",
            selector_help="PersistentVolumeClaims",
            flags=(ALL.replace(help="list every claim, not only those in trouble (kept and younger ones too, and those "
                                           "unused by design: a workload will mount them again)"),
                   OLDER_THAN.replace(help="unused or pending claims count only when unused (or pending) for longer "
                                           "than this (e.g. 7d, 36h)"),
                   EXCLUDE_NAMESPACE)),
    Command(name="snapshots", summary="VolumeSnapshotContents that survived their snapshot: Retain contents whose "
                                      "VolumeSnapshot is gone or replaced, contents whose class is gone, contents not "
                                      "ready with an error",
            kind="volumesnapshotcontents",
            selector_help="VolumeSnapshotContents",
            flags=(ALL.replace(help="list every VolumeSnapshotContent, not only those with findings (kept and "
                                    "younger ones too)"),
                   OLDER_THAN.replace(help="only contents created longer ago than this (e.g. 7d, 36h)"),
                   EXCLUDE_NAMESPACE.replace(help="leave out contents whose VolumeSnapshot is in this namespace "
                                                  "(repeatable; glob patterns such as 'kube-*')")), census=True,
            census_help="cloud snapshots beside the contents"),
    Command(name="attachments", summary="VolumeAttachments and nodes in trouble: attach/detach errors, detaches held "
                                        "by the attacher's finalizer, missing or NotReady nodes, missing PVs, drivers "
                                        "not registered on a node, nodes at their attach limit",
            kind="volumeattachments",
            selector_help="VolumeAttachments",
            flags=(ALL.replace(help="list every VolumeAttachment and CSINode, not only those in trouble (kept and "
                                    "younger ones too)"),
                   OLDER_THAN.replace(help="only troubles older than this (e.g. 30m, 7d): the error's time, the "
                                           "deletion, the node's last Ready change"))),
)
COMMANDS_BY_NAME = {command.name: command for command in COMMANDS}

# Not an analysis but every analysis at once, kept live and served as Prometheus metrics: a long-running command,
# so it is not among COMMANDS (what a run, a fleet, --watch and completion's kinds iterate over). Its kind only
# decides what -n means: as for the cluster-scoped kinds, it narrows (to one namespace's Pods and claims).
SERVE = Command(
    name="serve", summary="keep every analysis live on watches and serve it as Prometheus metrics (/metrics, /healthz)",
    kind="persistentvolumes", selector_help="objects", census=True,
    flags=(Flag(name="--listen", dest="listen", metavar="[HOST]:PORT", pattern=r"(\[[0-9A-Fa-f:.]+\]|[^\s:\[\]]*):[0-9]{1,5}",
                what="a [HOST]:PORT address", help="where to serve /metrics and /healthz (default :9479, every address)"),
           Flag(name="--census-interval", dest="census_interval", metavar="DURATION",
                help="how often the cloud censuses run, when their flags are given (default 1h)"),
           Flag(name="--max-finding-series", dest="max_finding_series", metavar="N", pattern=r"[0-9]+",
                what="a whole number", help="at most this many pvleft_finding_info series (default 1000); "
                                            "pvleft_finding_series_omitted says how many were left out"),
           Flag(name="--stale-after", dest="stale_after", metavar="DURATION",
                help="/healthz answers 503 while a stream has been down this long (default 2m)")))
# Not a census either: one object's story, told from GETs by name (``why pod/web-0``). One context, printed whole,
# never watched; its KIND/NAME is its one positional argument. Its kind (Pods) decides what -n means: the namespace
# of a Pod or claim, as kubectl's.
WHY = Command(
    name="why", summary="one object's storage story: the chain Pod -> claims -> PV -> VolumeAttachment -> node -> CSI "
                        "driver (or a snapshot content's), each link's state, what blocks and who owns it",
    kind="pods", selector_help="objects")
# Not an analysis either: every analysis as a tool of a Model Context Protocol server, for AI agents (docs/mcp.md).
# Each tool call is one run of that analysis, read-only, as `-o json` would print it; -n and -A set the tools'
# default namespace, as they set a run's.
MCP = Command(
    name="mcp", summary="answer AI agents: every analysis as a read-only tool of a Model Context Protocol server on "
                        "stdin/stdout",
    kind="persistentvolumeclaims", selector_help="objects",
    flags=(Flag(name="--listen", dest="listen", metavar="HOST:PORT",
                pattern=r"(127\.0\.0\.1|localhost|\[::1\]):[0-9]{1,5}", what="a loopback HOST:PORT (127.0.0.1, "
                                                                            "[::1] or localhost; port 0: any free one)",
                help="answer on MCP's streamable HTTP at http://HOST:PORT/mcp instead of stdin/stdout; loopback only "
                     "(no authentication: only this machine's clients may reach it)"),))
SUBCOMMANDS = (*COMMANDS, SERVE, WHY, MCP)
SUBCOMMANDS_BY_NAME = {command.name: command for command in SUBCOMMANDS}


class Invocation(_Frozen):
    """Everything argv said, parsed once. ``flags``: the subcommand's own flags, typed; ``values``: every flag the
    subcommand takes by dest, the clouds' too (what a ``FlagSet`` is read from, and what checks every declared flag
    alike read)."""

    __slots__ = (
        "all_contexts",
        "all_namespaces",
        "chunk_size",
        "clouds",
        "command",
        "contexts",
        "exit_code",
        "field_selector",
        "flags",
        "label_columns",
        "label_selector",
        "max_concurrency",
        "names",
        "namespace",
        "no_headers",
        "output",
        "request_timeout",
        "selection",
        "show_labels",
        "sort_by",
        "values",
        "verbosity",
        "watch",
    )
    _default_all_namespaces = False
    _default_output = "table"
    _default_no_headers = _default_show_labels = _default_watch = _default_exit_code = _default_all_contexts = False
    _default_verbosity = 0
    _default_flags = Flags()
    _default_values: FlagValues = MappingProxyType({})
    _default_contexts = ()
    _default_clouds = ()
    _default_names = ()
    _default_label_columns = ()
    _default_chunk_size = 500  # kubectl's --chunk-size; 0: every list in one answer

    command: Command
    selection: Selection
    namespace: Optional[str]
    all_namespaces: bool
    label_selector: Optional[str]
    field_selector: Optional[str]
    output: str
    no_headers: bool
    show_labels: bool
    sort_by: Optional[str]
    watch: bool
    exit_code: bool
    request_timeout: Optional[float]
    verbosity: int
    flags: Flags
    values: FlagValues
    clouds: tuple[str, ...]  # the sources ("gce", "aws", "azure") whose census the flags ask for
    all_contexts: bool
    contexts: tuple[str, ...]
    max_concurrency: Optional[int]
    names: tuple[str, ...]  # positional NAMEs: only these objects, shown whether or not they have findings
    label_columns: tuple[str, ...]  # -L: a table column for each of these label keys
    chunk_size: int

    @property
    def fleet(self) -> bool:
        return bool(self.all_contexts or self.contexts)

    @property
    def shows_all(self) -> bool:
        """Every object, not only those with findings: --all; NAMEs (a named object is shown as it is); -o junit
        (a testcase per object examined, so CI shows what passed too)."""
        return self.flags.all or bool(self.names) or self.output == "junit"

    def options(self, context_namespace: str) -> Options:
        """What one context's run is asked: kubectl's -n / -A / context-namespace rule for namespaced kinds; for
        cluster-scoped ones -n only narrows (to the claims or snapshots of one namespace)."""
        if self.all_namespaces:
            namespace = None
        elif self.command.cluster_scoped:
            namespace = self.namespace or None
        else:
            namespace = self.namespace or context_namespace
        return Options(namespace=namespace, all_namespaces=self.all_namespaces, label_selector=self.label_selector,
                       field_selector=self.field_selector, wide=self.output == "wide",
                       show_all=self.shows_all, drift=self.flags.drift,
                       flags=self.values, clouds=self.clouds, request_timeout=self.request_timeout,
                       older_than=self.flags.older_than,
                       exclude_namespaces=self.flags.exclude_namespaces, names=self.names,
                       kubeconfig=self.selection.kubeconfig)

    def print_options(self) -> PrintOptions:
        from kubectl_pvleft.output.report import PrintOptions

        return PrintOptions(output=self.output, command=self.command.name,
                            all_namespaces=self.all_namespaces and not self.command.cluster_scoped,
                            no_headers=self.no_headers, show_labels=self.show_labels,
                            label_columns=self.label_columns)


class Options(_Frozen):
    """What one context's run is asked: where to look (``namespace`` None: every namespace, or for cluster-scoped
    kinds: not narrowed), the subcommand's own flags, typed."""

    __slots__ = (
        "all_namespaces",
        "clouds",
        "context",
        "drift",
        "exclude_namespaces",
        "field_selector",
        "flags",
        "kubeconfig",
        "label_selector",
        "names",
        "namespace",
        "older_than",
        "request_timeout",
        "show_all",
        "wide",
    )
    _default_all_namespaces = _default_wide = _default_show_all = _default_drift = False
    _default_flags: FlagValues = MappingProxyType({})
    _default_clouds = ()
    _default_exclude_namespaces = ()
    _default_names = ()

    namespace: Optional[str]
    all_namespaces: bool
    label_selector: Optional[str]
    field_selector: Optional[str]
    wide: bool
    show_all: bool
    drift: bool
    flags: FlagValues  # every flag by dest: what the census reads its clouds' ``FlagSet``s from
    clouds: tuple[str, ...]  # the sources ("gce", "aws", "azure") whose census the flags ask for
    names: tuple[str, ...]  # positional NAMEs: the CLI narrows the rows to them; a cloud looks up only theirs
    request_timeout: Optional[float]
    older_than: Optional[float]  # seconds: younger rows are not findings (None: no threshold)
    exclude_namespaces: tuple[str, ...]  # glob patterns of namespaces left out
    # The context this run reads and the --kubeconfig it came from (the session sets them): whose a cloud disk or
    # snapshot is, by the kubeconfig's names. None where no session is (unit uses).
    context: Optional[str]
    kubeconfig: Optional[str]

    def excluded(self, namespace: Optional[str]) -> bool:
        """The namespace matches an --exclude-namespace pattern (fnmatch, case-sensitive as names are)."""
        if not namespace or not self.exclude_namespaces:
            return False
        from fnmatch import fnmatchcase

        return any(fnmatchcase(namespace, pattern) for pattern in self.exclude_namespaces)


def kept_reason(annotations: Mapping[str, str]) -> Optional[str]:
    """Why the object is intentionally kept (the annotation's value, or a word when it is empty); None: not kept."""
    if KEEP_ANNOTATION not in annotations:
        return None
    return annotations[KEEP_ANNOTATION].strip() or "(no reason given)"


class Result:
    """What a subcommand's run produced: its analysis's report and the sections under it (a cloud census), each
    with its own row type (``SomeReport``: what reads their rows is generic in it)."""

    __slots__ = ("errors", "findings", "not_found", "not_served", "partial", "report", "sections", "warnings")

    def __init__(self, report: SomeReport, findings: int, warnings: Optional[list[str]] = None, partial: bool = False,
                 sections: Optional[list[SomeReport]] = None, errors: Optional[list[str]] = None,
                 not_served: Optional[str] = None) -> None:
        self.report = report
        self.findings = findings
        self.warnings = [] if warnings is None else warnings
        self.partial = partial  # a second census (a cloud) failed: the report is incomplete
        self.sections: list[SomeReport] = [] if sections is None else sections  # printed after the report (a second census)
        self.errors = [] if errors is None else errors  # what made the report partial, one line each
        self.not_served = not_served  # the kinds it reads are not served here: the one line that says so
        self.not_found: dict[str, str] = {}  # positional NAMEs without a row: the line that says why, by name

    def __repr__(self) -> str:
        return f"Result({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"
