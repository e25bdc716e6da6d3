"""The read-only ClusterRole is derived from what the code reads: every shipped copy (the plugin's, the kustomize
base's, the Helm chart's) grants exactly the kinds of the Kind table (kubectl_pvleft/kube/kinds.py KINDS), each
with the verbs api.py speaks (VERBS), and nothing else: no kind the code never reads, no wildcard, no write.

RBAC authorizes a request by (apiGroup, resource, verb) alone (k8s.io/kubernetes plugin/pkg/auth/authorizer/rbac
rbac.go RuleAllows: VerbMatches, APIGroupMatches, ResourceMatches), so that triple is what is compared. A kind
added to the table (or a role rule added by hand) fails here until the other side follows."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

from deploy_manifests import grants, the_kind_table
from kubectl_pvleft.kube.kinds import KINDS

ROOT = Path(__file__).resolve().parent.parent
ROLES = (ROOT / "plugin" / "clusterrole.yaml", ROOT / "deploy" / "base" / "clusterrole.yaml",
         ROOT / "deploy" / "helm" / "kubectl-pvleft" / "files" / "clusterrole.yaml")


def test_every_shipped_role_grants_exactly_the_kinds_the_code_reads() -> None:
    wanted = the_kind_table()
    assert ("", "persistentvolumes", "list") in wanted and len(wanted) == 3 * len(KINDS)
    for path in ROLES:
        role = yaml.safe_load(path.read_text())
        granted = grants(role)
        assert not any("*" in triple for triple in granted), path
        assert granted - wanted == set(), f"{path} grants what no code reads"
        assert wanted - granted == set(), f"{path} lacks what the code reads"


def test_the_kind_table_is_every_kind_the_package_builds() -> None:
    """A Kind made anywhere but kinds.py would be read without the role knowing: every Kind(...) call is there,
    and each one's resource is in KINDS (a metadata-only view shares its kind's resource and verbs)."""
    from kubectl_pvleft.kube import kinds

    package = ROOT / "kubectl_pvleft"
    for source in package.rglob("*.py"):
        calls = [node for node in ast.walk(ast.parse(source.read_text()))
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Kind"]
        assert not calls or source == package / "kube" / "kinds.py", f"{source}: a Kind outside the Kind table"
    built = {(value.group, value.plural) for value in vars(kinds).values() if isinstance(value, kinds.Kind)}
    assert built == {(kind.group, kind.plural) for kind in KINDS.values()}


def test_the_group_of_a_kind_is_the_one_rbac_names() -> None:
    groups = {plural: kind.group for plural, kind in KINDS.items()}
    assert groups.items() >= {("persistentvolumes", ""), ("storageclasses", "storage.k8s.io"),
                              ("volumesnapshots", "snapshot.storage.k8s.io")}
