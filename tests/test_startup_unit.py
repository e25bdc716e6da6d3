"""Start-up: what a run imports (issue #10), and the PyYAML-free kubeconfig reader that makes it cheaper.

Speed itself is measured in BENCHMARKS.md; these tests pin what is imported, which a change can break silently:
each runs the CLI in a fresh interpreter and lists sys.modules afterwards.
"""

from __future__ import annotations

import datetime
import functools
import json
import math
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_pvleft.invocation import SUBCOMMANDS
from kubectl_pvleft.kube.plainyaml import Refused, read, read_yaml, resolve
from loopback import free_port

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # YAML 1.1's typing, the reference where go-yaml agrees
ERROR = "<error>"
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml writes the test texts (the pure-Python one was 7 s)

# Never needed by a one-shot run printing a table or JSON: each is imported only by the path that needs it.
NOT_ON_COMMON_PATH = (
    "yaml", "yaml.emitter", "yaml.dumper", "tabulate",  # a plain kubeconfig is read without PyYAML; tables are ours
    "kubectl_pvleft.output.jsonpath", "kubectl_pvleft.output.custom_columns", "kubectl_pvleft.output.sorting",
    "kubectl_pvleft.output.govalue", "kubectl_pvleft.output.templates",  # -o jsonpath/custom-columns
    "kubectl_pvleft.output.watchprint",  # --watch
    "kubectl_pvleft.cli.fleet", "kubectl_pvleft.cli.completion",  # --contexts, __complete
    # a census and its SDK only under a cloud's flags (the clouds' declarations, read for their flags, are tiny);
    # resize sizes only when a claim resizes
    "kubectl_pvleft.clouds.census", "kubectl_pvleft.clouds.base", "kubectl_pvleft.clouds.gce.census",
    "kubectl_pvleft.clouds.aws.census", "kubectl_pvleft.clouds.azure.census", "kubectl_pvleft.records.quantity",
    "kubectl_pvleft.records.workloads",  # claims reads the workloads only for a claim no Pod mounts
    "google", "boto3", "botocore", "azure", "msal",  # the clouds' SDKs
    # --cost's pricing and the price APIs' SDKs: only under --cost
    "kubectl_pvleft.clouds.cost", "kubectl_pvleft.clouds.gce.prices", "kubectl_pvleft.clouds.aws.prices",
    "google.cloud.billing_v1",
    "subprocess",  # exec credential plugins only
    "urllib3", "http.client", "email",  # our own HTTP/1.1 client (httpclient.py) replaced them
    "logging", "dataclasses", "queue", "shutil", "tempfile",  # -v's log is ours; Structs; a Condition; help only
    "encodings.idna",  # ASCII host names go to socket and ssl as bytes
    # `mcp` alone: the MCP SDK and what it brings (pydantic, anyio, starlette), and our server over it
    "mcp", "mcp_types", "pydantic", "anyio", "starlette", "kubectl_pvleft.cli.mcp_server",
)
# Records whose Struct classes only some commands decode (each class costs start-up): imported by those alone.
RECORDS_READ_BY = {"kubectl_pvleft.records.nodes": ("attachments",), "kubectl_pvleft.records.snapshots": ("snapshots",),
                   "kubectl_pvleft.records.pods": ("claims", "pending")}
NOT_FOR_HELP = ("msgspec", "dataclasses", "inspect", "kubectl_pvleft.kube.kubeconfig", "kubectl_pvleft.output.printer",
                "kubectl_pvleft.kube.api", "kubectl_pvleft.kube.transport", "json", "yaml", "tabulate", "mcp", "mcp_types",
                "pydantic", "kubectl_pvleft.cli.mcp_server",
                # the registry (kubectl_pvleft.analyses) is read; no analysis is imported before its command runs
                "kubectl_pvleft.analyses.leftovers", "kubectl_pvleft.analyses.pending", "kubectl_pvleft.analyses.classes",
                "kubectl_pvleft.analyses.claims", "kubectl_pvleft.analyses.snapshots", "kubectl_pvleft.analyses.attachments")


def kubeconfig_text(server: str) -> str:
    """The shape `kubectl config view --raw` writes."""
    return textwrap.dedent(f"""\
        apiVersion: v1
        clusters:
        - cluster:
            server: {server}
          name: test
        contexts:
        - context:
            cluster: test
            namespace: default
            user: reader
          name: test
        current-context: test
        kind: Config
        preferences: {{}}
        users:
        - name: reader
          user:
            token: not-a-real-token
        """)


def modules_after(argv: list[str], tmp_path: Path, setup: str = "") -> tuple[set[str], str]:
    """The modules a fresh interpreter holds after cli.main(argv), and what it printed on stderr."""
    code = textwrap.dedent(f"""\
        import sys
        {setup}
        from kubectl_pvleft.cli.main import main
        try:
            code = main({argv!r})
        except SystemExit as exc:  # --help
            code = exc.code
        modules = sorted(sys.modules)  # before this harness imports json
        import json
        print("MODULES " + json.dumps([code, modules]), file=sys.__stdout__)
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, check=False)
    _, modules = json.loads(done.stdout.rpartition("MODULES ")[2])
    return set(modules), done.stderr


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    # What the libraries we must import bring themselves (msgspec 0.14 on Python 3.10 imports subprocess,
    # through platform) is theirs, not ours: only the rest is checked.
    return sorted(m for m in modules - library_modules() if any(m == n or m.startswith(n + ".") for n in names))


@functools.lru_cache(maxsize=1)
def library_modules() -> frozenset[str]:
    code = "import sys, argparse, socket, ssl, urllib.parse, msgspec, msgspec.json; print(' '.join(sys.modules))"
    # check=True: a child that failed would leave an empty baseline, and the libraries' modules counted as ours.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin"}, check=True)
    return frozenset(done.stdout.split())


@pytest.mark.parametrize("command", ["claims", "leftovers", "classes", "pending", "snapshots", "attachments"])
@pytest.mark.integration  # a fresh interpreter: a child process
def test_a_one_shot_run_imports_only_what_it_runs(tmp_path: Path, command: str) -> None:
    # A closed port: the run fails at its first request, after everything a run needs is imported.
    config = tmp_path / "config"
    config.write_text(kubeconfig_text(f"https://127.0.0.1:{free_port()}"))
    modules, stderr = modules_after([command, "-n", "nothing-here", "--kubeconfig", str(config), "-o", "json"],
                                    tmp_path)
    assert stderr.startswith("error: ") and "Traceback" not in stderr, stderr
    assert "kubectl_pvleft.kube.kubeconfig" in modules and "kubectl_pvleft.kube.plainyaml" in modules
    assert loaded(modules, NOT_ON_COMMON_PATH) == []
    assert loaded(modules, tuple(m for m, users in RECORDS_READ_BY.items() if command not in users)) == []


def collector_at_exit(argv: list[str], call: str, tmp_path: Path) -> tuple[str, str, int]:
    """How a fresh interpreter that ran the CLI through `call` ("entry" as the console script, "main" as a library)
    ends: whether the cyclic collector is on, whether objects are frozen, and whether it left through os._exit
    (FAST) or the interpreter's teardown (SLOW); its stderr and exit code."""
    code = textwrap.dedent(f"""\
        import atexit, gc, os, sys
        def state(how):
            print("COLLECTOR", gc.isenabled(), gc.get_freeze_count() > 0, how, file=sys.__stdout__, flush=True)
        leave = os._exit
        os._exit = lambda code: (state("FAST"), leave(code))
        atexit.register(state, "SLOW")
        sys.argv = ["kubectl-pvleft", *{argv!r}]
        from kubectl_pvleft.cli.main import entry, main
        {call}() if {call!r} == "entry" else sys.exit(main(sys.argv[1:]))
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, check=False)
    return done.stdout.rpartition("COLLECTOR ")[2].strip(), done.stderr, done.returncode


@pytest.mark.integration  # a fresh interpreter: a child process
def test_the_console_script_holds_the_collector_while_starting_and_skips_the_teardown(tmp_path: Path) -> None:
    """entry() turns the cyclic collector off for start-up (BENCHMARKS.md, Start-up); a run that reached its
    connection has it on again, start-up's objects frozen, for the work; a one-shot run that is done leaves through
    os._exit with its exit code and its output said. main(), as a library calls it, leaves the collector and the
    interpreter's exit alone; so does help (no run)."""
    config = tmp_path / "config"
    config.write_text(kubeconfig_text(f"https://127.0.0.1:{free_port()}"))
    run = ["claims", "--kubeconfig", str(config)]  # fails at its first request, after the connection is made
    for call, expected in (("entry", "True True FAST"), ("main", "True False SLOW")):
        state, stderr, code = collector_at_exit(run, call, tmp_path)
        assert stderr.startswith("error: ") and "Traceback" not in stderr and code == 1, (call, stderr, code)
        assert state == expected, call
    state, _, code = collector_at_exit(["--help"], "entry", tmp_path)
    assert (state, code) == ("False False SLOW", 0)  # help exits without a collection, through the usual exit


@pytest.mark.integration  # a fresh interpreter: a child process
def test_a_run_builds_only_its_own_subcommands_parser(tmp_path: Path) -> None:
    """Each subcommand's argparse parser costs start-up (BENCHMARKS.md, Start-up): a run builds the one it names;
    --help and a word that names no subcommand get them all."""
    code = textwrap.dedent("""\
        import sys
        from kubectl_pvleft.cli.parser import parse, run_parser
        try:
            parse(sys.argv[1:], "kubectl pvleft")
        except BaseException:  # --help exits; a usage error raises
            pass
        print("BUILT", " ".join(run_parser("kubectl pvleft").subcommands.choices))
        """)
    every = " ".join(c.name for c in SUBCOMMANDS)
    for argv, built in ((["-n", "x", "claims", "-o", "json"], "claims"), (["--help"], every), (["claim"], every)):
        done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=tmp_path,
                              timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, check=False)
        assert done.stdout.rpartition("BUILT ")[2].strip() == built, (argv, done.stdout, done.stderr)


@pytest.mark.integration  # a fresh interpreter: a child process
def test_a_table_is_printed_without_tabulate_or_yaml(tmp_path: Path) -> None:
    setup = textwrap.dedent("""\
        from kubectl_pvleft.output.printer import print_result
        from kubectl_pvleft.output.report import Column, PrintOptions, Report
        print_result(Report(rows=[("pv-1", "Released")], columns=[Column("NAME", lambda r: r[0]),
                                                                  Column("STATUS", lambda r: r[1])],
                            to_json=dict, name=lambda r: r[0]), [], PrintOptions())
        """).replace("\n", "\n        ")
    modules, _ = modules_after(["--help"], tmp_path, setup=setup)
    assert "kubectl_pvleft.output.printer" in modules
    assert loaded(modules, ("tabulate", "yaml", "kubectl_pvleft.output.templates", "kubectl_pvleft.output.jsonpath")) == []


@pytest.mark.integration  # a fresh interpreter: a child process
def test_help_and_usage_errors_import_no_run_machinery(tmp_path: Path) -> None:
    modules, _ = modules_after(["--help"], tmp_path)
    assert loaded(modules, NOT_FOR_HELP) == []
    modules, stderr = modules_after(["claims", "--no-such-flag"], tmp_path)
    assert stderr.startswith("error: unknown flag: --no-such-flag")
    assert loaded(modules, NOT_FOR_HELP) == []
    for argv in (["mcp", "--help"], ["help", "mcp"]):  # the MCP SDK is the server's, not its help's
        modules, _ = modules_after(argv, tmp_path)
        assert loaded(modules, NOT_FOR_HELP) == [], argv
    modules, stderr = modules_after(["mcp", "-o", "json"], tmp_path)  # nor a usage error's
    assert stderr.startswith("error: -o/--output cannot be used with mcp")
    assert loaded(modules, ("mcp", "mcp_types", "pydantic", "kubectl_pvleft.cli.mcp_server")) == []


@pytest.mark.integration  # a fresh interpreter: a child process
def test_a_kubeconfig_outside_the_plain_shapes_is_still_read_with_pyyaml(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(kubeconfig_text(f"https://127.0.0.1:{free_port()}").replace("preferences: {}",
                                                                                    "preferences: &p {}\nx: *p"))
    modules, stderr = modules_after(["claims", "--kubeconfig", str(config)], tmp_path)
    assert stderr.startswith("error: ") and "yaml" in modules


# -- the plain reader gives what read_yaml gives, and both what SafeLoader gives where go-yaml agrees --------


SCALARS = ["", " ", "a", "default", "https://127.0.0.1:6443", "https://[::1]:6443", "yes", "No", "ON", "off", "y",
           "true", "False", "null", "~", "Null", "nul", "0", "-0", "+1", "12", "012", "09", "0x1f", "0o7", "1_000",
           "1.5", "1e5", "-1e-5", ".5", ".inf", "-.inf", ".nan", "1:30", "2024-01-02", "2024-01-02T03:04:05Z", "<<",
           "=", "-", "--region", "-x", "?x", ":x", "a: b", "a:b", "a #b", "a#b", "#a", "'", "''", '"', "a'b",
           'a"b', "a  b", " lead", "trail ", "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t", "{}", "[]", "[a]", "{a: b}",
           "&a", "*a", "!tag", "|", ">", "%", "@", "`", ",", "a,b", "a[0]", "é", "tab\there", "line\nbreak",
           "back\\slash", "-1", "1.", "6443", "eks", "get-token", "x" * 1100,
           "0b-1", "-0b-1", "0O7", "1e400", ".NaN", ".nAn", "yES", "+.5", "1__0", "0x", "08", "-.nan", "2001-12-14 21:59:43"]
KEYS = ["name", "cluster", "server", "user", "a b", "on", "1", "-k", "k-", "x" * 1100, "<<", "a:b", "", "é"]


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.random()
    if depth < 3 and kind < 0.25:
        return {rng.choice(KEYS + SCALARS[:30]): random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if depth < 3 and kind < 0.4:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind < 0.5:
        return rng.choice([None, True, False, 0, 7, -3, 1.5, 10 ** 20])
    return rng.choice(SCALARS)


def texts_of(doc: Any, rng: random.Random) -> list[str]:
    """The same document written the ways tools write kubeconfigs, and by hand: plain-style YAML from
    PyYAML's dumper, scalars written unquoted as people do, and JSON."""
    dumped = yaml.dump(doc, Dumper=DUMPER, default_flow_style=False, sort_keys=rng.random() < 0.5, width=10 ** 6)
    indented = yaml.dump(doc, Dumper=DUMPER, default_flow_style=False, indent=4, width=10 ** 6)
    wrapped = yaml.dump(doc, Dumper=DUMPER, default_flow_style=False, width=rng.choice([8, 20]))  # continued lines
    unquoted = dumped.replace("'", "") if rng.random() < 0.5 else dumped.replace("'", '"')
    return [dumped, indented, wrapped, unquoted, json.dumps(doc), json.dumps(doc, indent=rng.choice([1, 2, 4]))]


# Where kubectl's YAML reader (go-yaml v2, tests/test_kubeconfig_scalars_unit.py has kubectl's own answers)
# types a plain scalar otherwise than SafeLoader's YAML 1.1: the text, SafeLoader's value, kubectl's value.
TYPED_DIFFERENTLY: dict[str, tuple[Any, Any]] = {
    "y": ("y", True), "Y": ("Y", True), "n": ("n", False), "N": ("N", False),
    "0o7": ("0o7", 7), "0o17": ("0o17", 15), "09": ("09", 9.0), "08": ("08", 8.0),
    "1e3": ("1e3", 1000.0), "1e5": ("1e5", 100000.0), "-1e-5": ("-1e-5", -1e-05), "1e+20": ("1e+20", 1e20),
    "1.e5": ("1.e5", 100000.0), "0xFFFFFFFFFFFFFFFFFFFF": (0xFFFFFFFFFFFFFFFFFFFF, "0xFFFFFFFFFFFFFFFFFFFF"),
    "1:30": (90, "1:30"), "190:20:30": (685230, "190:20:30"),
    "2024-01-02": (datetime.date(2024, 1, 2), "2024-01-02"), "2001-12-14": (datetime.date(2001, 12, 14), "2001-12-14"),
    "2024-01-02T03:04:05Z": (datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
                             "2024-01-02T03:04:05Z"),
    "2001-12-14 21:59:43": (datetime.datetime(2001, 12, 14, 21, 59, 43), "2001-12-14 21:59:43"),
    "+.5": ("+.5", 0.5), "0O7": ("0O7", 7), "0b-1": ("0b-1", -1),  # Go's number syntax
    "<<": (ERROR, "<<"), "=": (ERROR, "="),  # SafeLoader: no constructor for the merge and value tags
}


def safe_scalar(text: str) -> Any:
    """A plain scalar as SafeLoader types it."""
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(yaml.ScalarNode(loader.resolve(yaml.ScalarNode, text, (True, False)), text))
    except yaml.YAMLError:
        return ERROR


def same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and repr(a) == repr(b)  # 1 is not True, nan is nan


@pytest.mark.parametrize("text", sorted(set(SCALARS + KEYS + list(TYPED_DIFFERENTLY)) - {""}))
def test_a_plain_scalar_is_typed_as_safe_loader_types_it_or_as_a_recorded_difference(text: str) -> None:
    if text.strip(" ") != text or text[0] in ",[]{}#&*!|>'\"%@`" or any(c in text for c in "\n\t#") or ": " in text:
        return  # not a plain scalar
    theirs, ours = safe_scalar(text), resolve(text)
    if text in TYPED_DIFFERENTLY:
        assert (theirs, ours) == TYPED_DIFFERENTLY[text] and not same(theirs, ours)
    else:
        assert same(theirs, ours), (text, theirs, ours)


def plain_scalars(text: str) -> list[tuple[str, bool]]:
    """Every plain scalar of the text, and whether it is a map key. A tag SafeLoader does not know is a
    recorded difference too: go-yaml reads the node as untagged ("!tag x" is "x"), SafeLoader refuses it."""
    found: list[tuple[str, bool]] = []
    nodes: list[tuple[Any, bool]] = [(yaml.compose(text, Loader=yaml.SafeLoader), False)]
    while nodes:
        node, is_key = nodes.pop()
        if node is None:  # an empty document
            continue
        if not node.tag.startswith("tag:yaml.org,2002:"):
            found.append(("=", is_key))  # typed differently, as "=" is
        elif isinstance(node, yaml.ScalarNode) and node.style is None:
            found.append((node.value, is_key))
        elif isinstance(node, yaml.SequenceNode):
            nodes.extend((item, False) for item in node.value)
        elif isinstance(node, yaml.MappingNode):
            nodes.extend(pair for key, value in node.value for pair in ((key, True), (value, False)))
    return found


def typed_alike(text: str, is_key: bool) -> bool:
    """go-yaml and SafeLoader give this scalar the same value, and it survives kubectl's conversion to JSON
    unchanged (a key is a string, a value not NaN nor an infinity)."""
    ours = resolve(text)
    if not same(safe_scalar(text), ours):
        return False
    return isinstance(ours, str) if is_key else not (isinstance(ours, float) and not math.isfinite(ours))


def outcome(reader: Any, text: str) -> Any:
    try:
        return reader(text)
    except Refused:
        return "refused"
    except (yaml.YAMLError, ValueError, RecursionError):
        return ERROR


def check_document(text: str) -> bool:
    """read() gives what read_yaml() gives (or leaves the text to it), and read_yaml what SafeLoader gives when
    every plain scalar is typed alike. True when the document is one where they agree."""
    ours, fast = outcome(read_yaml, text), outcome(read, text)
    assert fast is None or same_document(fast, ours), (text, fast, ours)
    try:
        alike = all(typed_alike(value, is_key) for value, is_key in plain_scalars(text))
    except yaml.YAMLError:
        return ours == ERROR
    if not alike:
        return False
    theirs = outcome(lambda t: yaml.load(t, Loader=LOADER), text)
    assert same_document(theirs, ours), (text, theirs, ours)
    return True


def same_document(a: Any, b: Any) -> bool:
    return a == b and json.dumps(a, default=repr) == json.dumps(b, default=repr)  # order and types too


def test_generated_documents_read_as_kubectl_reads_them() -> None:
    rng = random.Random(20261203)
    read_here = alike = 0
    for _ in range(1200):  # x5 texts each
        doc = {rng.choice(KEYS): random_value(rng) for _ in range(rng.randint(1, 5))}
        for text in texts_of(doc, rng):
            alike += check_document(text)
            read_here += isinstance(outcome(read, text), dict)
    assert read_here > 1200  # the plain reader takes a good share of them, not only the trivial ones
    assert alike > 1200  # and most are documents where go-yaml and SafeLoader agree


@pytest.mark.parametrize("text", [
    "a: 1\na: 2\n",  # duplicate keys: the last wins, in the first one's place
    "b: 1\na: 2\nb: 3\n",
    "a:\n- x\n- y\nb: z\n",  # a list at its key's indent (what kubectl writes)
    "a:\n  - x\n  -   y: 1\n      z: 2\n",
    "a:\n  b: 1\n c: 2\n",  # bad indentation: PyYAML's error
    "a: x\n  continued\n",  # a folded plain scalar
    "a: x\n  y\n  z\nb: 1\n", "a: 1\n  2\n", "a:   x  \n     y  \n", "a: x\n\n  y\n", "a: x\n  # c\n  y\n",
    "a: x\n  b: c\n", "a: x\n  - y\n", "a: x\n  'y'\n", "a: 'x\n  y'\n", "- a\n  b\n", "a:\n- b: x\n   y\n",
    "a:\n  b: x\n  y\n", "a:\n  b: x\n   y\nc: d\n", "a: x\n y:\n", "a: yes\n  no\n", "a: {}\n  x\n",
    "a: x\n- y\n",
    "- a\n- b\n",  # not a mapping at the top
    "a: 'it''s'\nb: \"q\"\nc: ''\n",
    "a: 'x' y\n", "a: 'x\n", "a: \"x\" y\n",
    "a: &anchor {b: 1}\nc: *anchor\n",
    "a: !!str 1\n", "a: |\n  text\n", "a: >\n  text\n",
    "# comment\na: 1 # trailing\n", "# only a comment\n", "", "\n\n",
    "---\na: 1\n", "a: 1\n...\n", "%YAML 1.1\n---\na: 1\n",
    "a:\tb\n", "a: b\r\nc: d\r\n", "\ufeffa: 1\n",
    "a:b\n", "a : b\n", "a  :  b  \n", "a:\n", "a:\n\n  b: 1\n", "? a\n: b\n",
    "a:\n  -\n    b: 1\n", "a:\n- - x\n", "a: - x\n", "a: [1, 2]\nb: {c: d}\n",
    '{"a": 1, "a": 2}', '{"a": 1e5}', '{"a": 1.5}', '{"a"\n: 1}', '{"a": "\\u00e9"}', '{"a": NaN}',
    '{"a": [1, 2,]}', '  {"a": {"b": [true, null, "x"]}}\n', '{"' + "k" * 1100 + '": 1}', "{a: 1}",
    '{"a": 1}\n---\n', '{"a": 1} trailing',
])
def test_hand_made_documents_read_as_kubectl_reads_them(text: str) -> None:
    check_document(text)


def test_the_shapes_tools_write_are_read_without_pyyaml() -> None:
    plain = kubeconfig_text("https://127.0.0.1:6443")
    assert read(plain) == yaml.load(plain, Loader=LOADER) and read(plain) is not None
    exec_user = plain.replace("    token: not-a-real-token\n", textwrap.indent(textwrap.dedent("""\
        exec:
          apiVersion: client.authentication.k8s.io/v1beta1
          args:
          - --region
          - eu-west-1
          - eks
          - get-token
          command: aws
          env:
          - name: AWS_PROFILE
            value: prod
          interactiveMode: IfAvailable
          provideClusterInfo: false
        """), "    "))
    assert read(exec_user) == yaml.load(exec_user, Loader=LOADER) and read(exec_user) is not None
    # gcloud container clusters get-credentials: the installHint goes on over a second, more indented line.
    gke_user = plain.replace("    token: not-a-real-token\n", textwrap.indent(textwrap.dedent("""\
        exec:
          apiVersion: client.authentication.k8s.io/v1beta1
          command: gke-gcloud-auth-plugin
          installHint: Install gke-gcloud-auth-plugin for use with kubectl by following
            https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin
          provideClusterInfo: true
        """), "    "))
    assert read(gke_user) == yaml.load(gke_user, Loader=LOADER) and read(gke_user) is not None
    as_json = json.dumps(yaml.safe_load(exec_user), indent=2)
    assert read(as_json) == json.loads(as_json)
