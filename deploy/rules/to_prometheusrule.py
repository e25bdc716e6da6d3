"""The PrometheusRule of deploy/monitoring from the plain rules file next to this script (one source for the alerts)."""

import sys
from pathlib import Path

import yaml

HEAD = ("# The alerts of deploy/rules/pvleft.rules.yaml for the prometheus-operator; the groups are the same, and\n"
        "# tests/test_serve_rules.py keeps them so. Edit the plain file, then regenerate this one:\n"
        "#   python deploy/rules/to_prometheusrule.py > deploy/monitoring/prometheusrule.yaml\n")


def prometheus_rule(rules: Path) -> str:
    groups = yaml.safe_load(rules.read_text())["groups"]
    doc = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": {"name": "pvleft-exporter"},
           "spec": {"groups": groups}}
    return HEAD + yaml.safe_dump(doc, sort_keys=False, width=120)


if __name__ == "__main__":
    sys.stdout.write(prometheus_rule(Path(__file__).resolve().parent / "pvleft.rules.yaml"))
