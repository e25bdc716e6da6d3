"""The registry of ``-o`` formats: the command line validates ``-o`` against it, completion offers it, the
printer maps each name to its formatter (a test holds the two to the same names). Only names here, so the
command line can check ``-o`` without importing any formatter."""

from __future__ import annotations

# Whole reports for people and CI (a ticket, a test report): never with --watch.
DOCUMENT_FORMATS = ("markdown", "junit")
PLAIN_FORMATS = ("table", "wide", "json", "yaml", "jsonl", "name", *DOCUMENT_FORMATS)
# Formats that carry their template or spec after "=": kubectl's JSONPath dialect and custom columns.
TEMPLATE_FORMATS = ("jsonpath", "jsonpath-as-json", "jsonpath-file", "custom-columns", "custom-columns-file")
# kubectl's Go templates: named so the refusal can say what to use instead.
REFUSED_FORMATS = ("go-template", "go-template-file", "template", "templatefile")

HELP = ("table (default), wide, json, yaml, jsonl, name, markdown, junit, jsonpath=TEMPLATE, jsonpath-as-json=TEMPLATE, "
        "jsonpath-file=FILE, custom-columns=SPEC, custom-columns-file=FILE")
