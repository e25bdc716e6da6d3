"""deploy/ rendered as operators render it, and validated offline: helm (built from its pinned module by
tests/cluster/helm.sh) and kubectl's kustomize render; kubernetes-validate checks every built-in object against the
Kubernetes 1.37 OpenAPI schemas (strict: a field the kind does not have is an error), and the prometheus-operator's
objects are checked against the openAPIV3Schema of their CRDs (tests/fixtures/crds, as the operator publishes them),
made strict the same way."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "deploy" / "helm" / "kubectl-pvleft"
BASE = ROOT / "deploy" / "base"
HELM_SH = ROOT / "tests" / "cluster" / "helm.sh"
HELM = ROOT / "tests" / "cluster" / "bin" / "helm"
KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"  # its kustomize (v5.6), the newest kubectl on the machine
CRDS = ROOT / "tests" / "fixtures" / "crds"
OPERATOR_CRDS = (CRDS / "monitoring.coreos.com_servicemonitors.yaml", CRDS / "monitoring.coreos.com_prometheusrules.yaml")
# What `helm template` must be told the cluster serves for "auto" to render the operator's objects.
OPERATOR_APIS = ("--api-versions", "monitoring.coreos.com/v1/ServiceMonitor",
                 "--api-versions", "monitoring.coreos.com/v1/PrometheusRule")
KUBERNETES_VERSION = "1.37.0"  # the test plane's minor (tests/cluster/go.mod)


@functools.cache
def helm_binary() -> str:
    """tests/cluster/bin/helm, built by tests/cluster/helm.sh (a no-op once built at the pinned version)."""
    done = subprocess.run(["bash", str(HELM_SH)], capture_output=True, text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return str(HELM)


def helm(*args: str, kubeconfig: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    command = [helm_binary(), *args, *(["--kubeconfig", str(kubeconfig)] if kubeconfig else [])]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    if check:
        assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done


def template(release: str = "pvleft", namespace: str = "pvleft", *args: str) -> list[dict[str, Any]]:
    rendered = helm("template", release, str(CHART), "--namespace", namespace, *args).stdout
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


def kustomize(path: Path = BASE) -> list[dict[str, Any]]:
    rendered = subprocess.run([KUBECTL, "kustomize", str(path)], capture_output=True, text=True, check=True)
    return [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [doc for doc in docs if doc["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind}"
    return found[0]


def kinds(docs: list[dict[str, Any]]) -> set[str]:
    return {doc["kind"] for doc in docs}


def grants(role: dict) -> set[tuple[str, str, str]]:
    """(apiGroup, resource, verb) for every rule; a rule RBAC would widen (names, URLs) is refused here."""
    assert role["kind"] == "ClusterRole" and "aggregationRule" not in role
    triples = set()
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, rule  # no resourceNames, no nonResourceURLs
        triples |= {(group, resource, verb) for group in rule["apiGroups"] for resource in rule["resources"]
                    for verb in rule["verbs"]}
    return triples


def the_kind_table() -> set[tuple[str, str, str]]:
    """What the code reads: every kind of kube/kinds.py KINDS, with every verb api.py speaks."""
    from kubectl_pvleft.kube.kinds import KINDS, VERBS

    return {(kind.group, kind.plural, verb) for kind in KINDS.values() for verb in VERBS}


def _strict(schema: Any) -> Any:
    """A CRD's structural schema made strict, as kubernetes-validate's -strict schemas are: an object that lists its
    properties and does not preserve unknown fields admits no other field (the API server would drop it silently)."""
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    strict = {key: _strict(value) for key, value in schema.items()}
    if "properties" in strict and "additionalProperties" not in strict \
            and not strict.get("x-kubernetes-preserve-unknown-fields"):
        strict["additionalProperties"] = False
    return strict


@functools.cache
def _custom_validators() -> dict[tuple[str, str], Any]:
    import jsonschema

    validators = {}
    for path in OPERATOR_CRDS:
        crd = yaml.safe_load(path.read_text())
        for version in crd["spec"]["versions"]:
            schema = _strict(version["schema"]["openAPIV3Schema"])
            validators[(f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])] = \
                jsonschema.Draft7Validator(schema)
    return validators


def validate_offline(docs: list[dict[str, Any]]) -> None:
    """Every object against its schema; raises AssertionError naming each object and what is wrong with it."""
    import kubernetes_validate

    problems = []
    for doc in docs:
        where = f"{doc.get('kind')} {doc.get('metadata', {}).get('name')}"
        custom = _custom_validators().get((doc.get("apiVersion", ""), doc.get("kind", "")))
        if custom is not None:
            problems += [f"{where}: {'.'.join(map(str, e.absolute_path))}: {e.message}" for e in custom.iter_errors(doc)]
            continue
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            problems.append(f"{where}: {'.'.join(map(str, exc.path))}: {exc.message}")
    assert not problems, "\n".join(problems)
