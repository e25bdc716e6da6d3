"""The template output formats (``-o jsonpath=``, ``jsonpath-as-json=``, ``jsonpath-file=``,
``custom-columns=``, ``custom-columns-file=``) and ``--sort-by``, over the very objects ``-o json`` prints.

The dialect is kubectl's (jsonpath.py, columns.py); this module only adapts it to the output layer, and is
imported only when one of these is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from kubectl_pvleft.errors import TemplateRefused
from kubectl_pvleft.output.custom_columns import parse_custom_columns, parse_custom_columns_file, render_custom_columns
from kubectl_pvleft.output.formats import Formatter, kubectl_list
from kubectl_pvleft.output.jsonpath import JSONPathTemplate
from kubectl_pvleft.output.report import JsonObject, PrintOptions, Report
from kubectl_pvleft.output.sorting import sort_rows as sort_objects

T = TypeVar("T")


def _read(path: str, flag: str) -> str:
    # kubectl's words: "error reading --template F, open F: no such file or directory" (Go's os error text)
    what = "--template" if flag == "jsonpath-file" else "template"
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except IsADirectoryError:
        raise TemplateRefused(f"error reading {what} {path}, read {path}: is a directory") from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise TemplateRefused(f"error reading {what} {path}, open {path}: {reason[:1].lower()}{reason[1:]}") from None
    except UnicodeDecodeError as exc:
        raise TemplateRefused(f"error reading {what} {path}: not UTF-8 text ({exc.reason})") from None


class JSONPathFormatter(Formatter[T]):
    """kubectl runs the template once over the whole List (``{.items[*].name}``); a watch stream, once per object."""

    def __init__(self, report: Report[T], options: PrintOptions) -> None:
        super().__init__(report, options)
        name, _, value = options.output.partition("=")
        text = _read(value, name) if name == "jsonpath-file" else value
        self.as_json = name == "jsonpath-as-json"
        self.template = JSONPathTemplate(text)

    def _render(self, obj: JsonObject) -> str:
        return self.template.render_json(obj) if self.as_json else self.template.render(obj)

    def whole(self, rows: Sequence[T]) -> None:
        self.out.write(self._render(kubectl_list(self.objects(rows))))
        self.out.flush()

    def batch(self, rows: Sequence[T]) -> None:
        for obj in self.objects(rows):
            self.out.write(self._render(obj))
        self.out.flush()


class CustomColumnsFormatter(Formatter[T]):
    def __init__(self, report: Report[T], options: PrintOptions) -> None:
        super().__init__(report, options)
        name, _, value = options.output.partition("=")
        self.columns = parse_custom_columns_file(_read(value, name)) if name == "custom-columns-file" \
            else parse_custom_columns(value)
        self.header_done = options.no_headers

    def batch(self, rows: Sequence[T]) -> None:
        if not rows:
            return
        self.out.write(render_custom_columns(self.columns, self.objects(rows), no_headers=self.header_done))
        self.header_done = True
        self.out.flush()

    def whole(self, rows: Sequence[T]) -> None:
        self.batch(rows)


def check_template(output: str) -> None:
    """Parse a -o template before any request, as kubectl builds its printer first: a broken or oversized
    template is a usage error, not something found after the cluster was read."""
    name, _, value = output.partition("=")
    if name in ("jsonpath", "jsonpath-as-json", "jsonpath-file"):
        JSONPathTemplate(_read(value, name) if name == "jsonpath-file" else value)
    elif name == "custom-columns-file":
        parse_custom_columns_file(_read(value, name))
    elif name == "custom-columns":
        parse_custom_columns(value)


def template_formatter(report: Report[T], options: PrintOptions) -> Formatter[T]:
    if options.format.startswith("jsonpath"):
        return JSONPathFormatter(report, options)
    return CustomColumnsFormatter(report, options)


def sort_rows(report: Report[T], template: str) -> list[T]:
    """kubectl's --sort-by: the JSONPath runs over each row's JSON object; equal keys keep their order."""
    paired = [(report.to_json(row), row) for row in report.rows]
    row_of = {id(obj): row for obj, row in paired}
    return [row_of[id(obj)] for obj in sort_objects([obj for obj, _ in paired], template)]
