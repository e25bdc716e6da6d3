"""One formatter per plain output format (table, wide, json, yaml, jsonl, name), each printing a whole report
or a stream of row batches (``--watch``). Tables are aligned by kubectl's tabwriter (``tabwriter.align``)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Generic, TextIO, TypeVar

from kubectl_pvleft.output.report import JsonObject, PrintOptions, Report, SomeReport, labels_text, safe_text, word
from kubectl_pvleft.output.tabwriter import align, padded_line

T = TypeVar("T")


class Formatter(Generic[T]):
    def __init__(self, report: Report[T], options: PrintOptions) -> None:
        self.report, self.options = report, options

    @property
    def out(self) -> TextIO:
        return self.options.out or sys.stdout

    def whole(self, rows: Sequence[T]) -> None:
        self.batch(rows)
        self.out.flush()

    def batch(self, rows: Sequence[T]) -> None:
        """Print rows that arrived together, flushed at once (``--watch``)."""
        raise NotImplementedError

    def objects(self, rows: Sequence[T]) -> list[JsonObject]:
        return [self.report.to_json(r) for r in rows]


class TableFormatter(Formatter[T]):
    """kubectl's tabwriter: left-aligned columns, three spaces apart. A whole report is aligned as one;
    a stream pads each cell to the widest seen so far (like ``kubectl get -w``) and prints the header once."""

    def __init__(self, report: Report[T], options: PrintOptions) -> None:
        super().__init__(report, options)
        self.columns = [c for c in report.columns if options.wide or not c.wide_only]
        self.headers = [c.header for c in self.columns]
        if report.context is not None:
            self.headers.insert(0, "CONTEXT")
        if self._with_namespace:
            self.headers.insert(int(report.context is not None), "NAMESPACE")
        # -L: a column per label key, headed by its last path segment in capitals, before LABELS (kubectl's
        # printers: formatLabelHeaders, then --show-labels).
        self.label_keys = options.label_columns if report.labels is not None else ()
        self.headers.extend(key.rsplit("/", 1)[-1].upper() for key in self.label_keys)
        if options.show_labels and report.labels is not None:
            self.headers.append("LABELS")
        self.widths: list[int] = []
        self.header_done = options.no_headers

    @property
    def _with_namespace(self) -> bool:
        return self.options.all_namespaces and self.report.namespace is not None

    def cells(self, row: T) -> list[str]:
        cells = [word(c.cell(row), c.empty) for c in self.columns]
        namespace, context, labels = self.report.namespace, self.report.context, self.report.labels
        if self._with_namespace and namespace is not None:
            cells.insert(0, safe_text(namespace(row) or ""))
        if context is not None:
            cells.insert(0, safe_text(context(row)))
        if labels is not None and (self.label_keys or self.options.show_labels):
            own = labels(row) or {}
            cells.extend(safe_text(own.get(key, "")) for key in self.label_keys)
            if self.options.show_labels:
                cells.append(labels_text(own))
        return cells

    def whole(self, rows: Sequence[T]) -> None:
        if not rows:
            print(self.report.empty_message, file=self.options.err or sys.stderr)
            return
        # Every column as wide as its widest cell (the header's, when printed) plus three spaces, at least six:
        # kubectl's tabwriter. Widths count characters, as Go's counts runes: cells are escaped, one-line text.
        lines = [[cell.strip() for cell in self.cells(r)] for r in rows]
        self.widths = align(lines if self.header_done else [self.headers, *lines])
        self._print(lines)
        self.out.flush()

    def batch(self, rows: Sequence[T]) -> None:
        lines = [self.cells(r) for r in rows]
        self.widths = align(lines if self.header_done else [self.headers, *lines], self.widths)
        self._print(lines)
        self.out.flush()

    def _print(self, lines: list[list[str]]) -> None:
        if lines and not self.header_done:
            print(self._line(self.headers), file=self.out)
            self.header_done = True
        for cells in lines:
            print(self._line(cells), file=self.out)

    def _line(self, cells: Sequence[str]) -> str:
        return padded_line(cells, self.widths)


def kubectl_list(items: Sequence[JsonObject]) -> dict[str, object]:
    """The List kubectl prints, keys in kubectl's order."""
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


# kubectl's List around the items, as json.dumps(kubectl_list(items), indent=4) and PyYAML write it: the items are
# written one by one between these, so memory holds one object's text at a time, never the whole document.
_JSON_HEAD, _JSON_TAIL = '{\n    "apiVersion": "v1",\n    "items": [', ',\n    "kind": "List",\n    "metadata": {\n' \
    '        "resourceVersion": ""\n    }\n}\n'
_YAML_HEAD, _YAML_TAIL = "apiVersion: v1\nitems:\n", 'kind: List\nmetadata:\n  resourceVersion: ""\n'


def indented_json(obj: object) -> str:
    """``json.dumps(obj, indent=4, ensure_ascii=False)``, byte for byte, at a fraction of its CPU: with an indent the
    json module encodes in pure Python (a third of the CPU of printing 1,000 leftovers went there). Its C encoder
    writes the compact text, numbers and escapes as json writes them, and msgspec lays it out with json's indent,
    copying every token as it is (tests/test_printing_unit.py holds them equal, every character and float).
    NaN and Infinity, which are not JSON to msgspec, take json's own indenting."""
    import json  # not for tables

    import msgspec

    compact = json.dumps(obj, ensure_ascii=False)
    try:
        return msgspec.json.format(compact.encode("utf-8", "surrogatepass"), indent=4).decode("utf-8", "surrogatepass")
    except msgspec.DecodeError:
        return json.dumps(obj, indent=4, ensure_ascii=False)


class JsonFormatter(Formatter[T]):
    def whole(self, rows: Sequence[T]) -> None:
        """The List, streamed: each object encoded and written as it comes, byte for byte what encoding the whole
        List at once writes (tests/test_printing_unit.py compares them)."""
        out = self.out
        out.write(_JSON_HEAD)
        empty = True
        for row in rows:
            text = indented_json(self.report.to_json(row))
            out.write(("\n        " if empty else ",\n        ") + text.replace("\n", "\n        "))
            empty = False
        out.write(("]" if empty else "\n    ]") + _JSON_TAIL)
        out.flush()

    def batch(self, rows: Sequence[T]) -> None:
        for obj in self.objects(rows):
            print(indented_json(obj), file=self.out)
        self.out.flush()


def yaml_text(doc: object) -> str:
    """A document as kubectl prints YAML: block style, keys in their order, go-yaml's double quotes."""
    import yaml  # only for -o yaml

    class KubectlDumper(yaml.SafeDumper):
        # kubectl's YAML (go-yaml) quotes with double quotes where PyYAML uses single: resourceVersion: ""
        def choose_scalar_style(self) -> str:
            style = super().choose_scalar_style()
            return '"' if style == "'" else style

    return yaml.dump(doc, Dumper=KubectlDumper, sort_keys=False, default_flow_style=False, allow_unicode=True)


class YamlFormatter(Formatter[T]):
    def _dump(self, doc: object) -> str:
        return yaml_text(doc)

    def whole(self, rows: Sequence[T]) -> None:
        """The List, streamed as the JSON one is: each object dumped as a one-item sequence, which is how PyYAML
        writes that item inside the List's ``items``."""
        out = self.out
        empty = True
        for row in rows:
            out.write((_YAML_HEAD if empty else "") + self._dump([self.report.to_json(row)]))
            empty = False
        out.write(("apiVersion: v1\nitems: []\n" if empty else "") + _YAML_TAIL)
        out.flush()

    def batch(self, rows: Sequence[T]) -> None:
        for obj in self.objects(rows):
            self.out.write("---\n" + self._dump(obj))
        self.out.flush()


class JsonLinesFormatter(Formatter[T]):
    def batch(self, rows: Sequence[T]) -> None:
        import json

        for obj in self.objects(rows):
            print(json.dumps(obj, ensure_ascii=False), file=self.out)
        self.out.flush()


class NameFormatter(Formatter[T]):
    def batch(self, rows: Sequence[T]) -> None:
        for row in rows:
            print(safe_text(self.report.name(row)), file=self.out)
        self.out.flush()


class DocumentFormatter(Formatter[T]):
    """-o markdown and -o junit: one document of a run's reports (``document``: the format's), never a stream (the
    command line refuses them with --watch)."""

    def __init__(self, report: Report[T], options: PrintOptions,
                 document: Callable[[Sequence[SomeReport], PrintOptions], None]) -> None:
        super().__init__(report, options)
        self.document = document

    def whole(self, rows: Sequence[T]) -> None:
        self.document([self.report.with_rows(rows)], self.options)

    def batch(self, rows: Sequence[T]) -> None:
        raise NotImplementedError(f"-o {self.options.format} is a whole report")
