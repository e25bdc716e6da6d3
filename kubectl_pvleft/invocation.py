"""How every subcommand is declared, the same way: its name, its arguments, and a module with

- ``run(api, options) -> Result``: the one-shot reads and the pure analysis (rows, findings, warnings);
- ``follow(options) -> watch.Follow``: the streams ``--watch`` keeps open and the same analysis over them;
- ``watch_report(options) -> Report``: how a watch line looks.

The CLI owns dispatch, printing, exit codes and the watch loop; it imports a subcommand's module only
when that subcommand runs, so ``--help`` and usage errors cost nothing.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:  # --help must not pay for the output layer
    from kubectl_pvleft.output.report import Report

# Plain classes, not dataclasses: `dataclasses` imports `inspect` and writes each class's methods with exec,
# ~10 ms that --help and every run would pay before doing anything.


class _Plain:
    __slots__: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # as a dataclass with eq: unhashable unless frozen


class _Frozen(_Plain):
    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    __delattr__ = __setattr__  # type: ignore[assignment]

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in self.__slots__))


class Options(_Frozen):
    """What a subcommand is asked: where to look, and its own flags (``args``)."""

    __slots__ = ("namespace", "all_namespaces", "args", "label_selector", "field_selector", "wide")

    def __init__(self, namespace: Optional[str], all_namespaces: bool, args: argparse.Namespace,
                 label_selector: Optional[str] = None, field_selector: Optional[str] = None, wide: bool = False) -> None:
        put = object.__setattr__
        put(self, "namespace", namespace)  # None: every namespace
        put(self, "all_namespaces", all_namespaces)
        put(self, "args", args)
        put(self, "label_selector", label_selector)
        put(self, "field_selector", field_selector)
        put(self, "wide", wide)

    def flag(self, name: str, default: Any = None) -> Any:
        return getattr(self.args, name, default)


class Result(_Plain):
    """What a subcommand's run produced."""

    __slots__ = ("report", "findings", "warnings", "partial", "sections", "errors")

    def __init__(self, report: Report[Any], findings: int, warnings: Optional[list[str]] = None, partial: bool = False,
                 sections: Optional[list[Report[Any]]] = None, errors: Optional[list[str]] = None) -> None:
        self.report = report
        self.findings = findings
        self.warnings = [] if warnings is None else warnings
        self.partial = partial  # a second census (a cloud) failed: the report is incomplete
        self.sections = [] if sections is None else sections  # printed after the report (a second census)
        self.errors = [] if errors is None else errors  # what made the report partial, one line each


class Command(_Frozen):
    __slots__ = ("name", "summary", "module", "arguments", "cluster_scoped", "selector_help")

    def __init__(self, name: str, summary: str, module: str,
                 arguments: Callable[[argparse.ArgumentParser], None] = lambda parser: None,
                 cluster_scoped: bool = False, selector_help: str = "") -> None:
        put = object.__setattr__
        put(self, "name", name)
        put(self, "summary", summary)
        put(self, "module", module)
        put(self, "arguments", arguments)
        put(self, "cluster_scoped", cluster_scoped)  # PVs and classes: -n narrows, it is not the scope
        put(self, "selector_help", selector_help)  # what -l selects in this subcommand

    def load(self) -> Any:
        from importlib import import_module

        return import_module(self.module)


def _leftovers(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="list every PV with the same columns")
    cloud = p.add_argument_group("second census: cloud disks beside the PVs (only with these flags)")
    cloud.add_argument("--project", action="append", default=[], metavar="PROJECT",
                       help="Compute Engine project(s) whose disks to list beside the PVs (repeatable; needs "
                            "kubectl-pvleft[gcp] and Application Default Credentials)")
    cloud.add_argument("--zone", action="append", default=[], metavar="ZONE", help="only these zones (with --project)")
    cloud.add_argument("--region", action="append", default=[], metavar="REGION",
                       help="only these regions (with --project)")
    cloud.add_argument("--aws-region", action="append", default=[], metavar="REGION",
                       help="AWS region(s) whose EBS volumes to list beside the PVs (repeatable; needs "
                            "kubectl-pvleft[aws] and AWS credentials)")
    cloud.add_argument("--aws-profile", metavar="PROFILE", help="the AWS profile (default: AWS_PROFILE, then the chain)")
    cloud.add_argument("--aws-cluster-name", metavar="NAME",
                       help="this cluster's name in EBS tags: volumes tagged for other clusters are told apart")


def _pending(p: argparse.ArgumentParser) -> None:
    pass


def _classes(p: argparse.ArgumentParser) -> None:
    p.add_argument("--drift", action="store_true",
                   help="list the PVs whose reclaim policy differs from their class's instead of the classes")


def _claims(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="list every claim, not only those in trouble")


def _snapshots(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="list every VolumeSnapshotContent, not only those with findings")


COMMANDS = (
    Command("leftovers", "PersistentVolumes that survived their claim: Released, Failed, or pointing at a claim that "
                         "is gone or replaced, with the PV's and its class's reclaim policy",
            "kubectl_pvleft.analyses.leftovers", _leftovers, cluster_scoped=True, selector_help="PersistentVolumes"),
    Command("pending", "Pending Pods triaged by the controller that owns the blocker, from Pod and PVC evidence",
            "kubectl_pvleft.analyses.pending", _pending, selector_help="Pods"),
    Command("classes", "StorageClasses with their PV/PVC counts, defaults and drift",
            "kubectl_pvleft.analyses.classes", _classes, cluster_scoped=True, selector_help="StorageClasses"),
    Command("claims", "PersistentVolumeClaims in trouble: not bound, resizing, modify failed, unhealthy, lost",
            "kubectl_pvleft.analyses.claims", _claims, selector_help="PersistentVolumeClaims"),
    Command("snapshots", "VolumeSnapshotContents that survived their snapshot: Retain contents whose VolumeSnapshot "
                         "is gone or replaced, contents whose class is gone, contents not ready with an error",
            "kubectl_pvleft.analyses.snapshots", _snapshots, cluster_scoped=True, selector_help="VolumeSnapshotContents"),
)
