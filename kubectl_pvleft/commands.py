"""How every subcommand is declared, the same way: its name, its arguments, and a module with

- ``run(api, options) -> Result``: the one-shot reads and the pure analysis (rows, findings, warnings);
- ``follow(options) -> watch.Follow``: the streams ``--watch`` keeps open and the same analysis over them;
- ``watch_report(options) -> Report``: how a watch line looks.

The CLI owns dispatch, printing, exit codes and the watch loop; it imports a subcommand's module only
when that subcommand runs, so ``--help`` and usage errors cost nothing.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:  # --help must not pay for the output layer
    from kubectl_pvleft.printing import Report


@dataclass(frozen=True)
class Options:
    """What a subcommand is asked: where to look, and its own flags (``args``)."""

    namespace: Optional[str]  # None: every namespace
    all_namespaces: bool
    args: argparse.Namespace
    label_selector: Optional[str] = None
    field_selector: Optional[str] = None
    wide: bool = False

    def flag(self, name: str, default: Any = None) -> Any:
        return getattr(self.args, name, default)


@dataclass
class Result:
    report: Report[Any]
    findings: int
    warnings: list[str] = field(default_factory=list)
    partial: bool = False  # a second census (a cloud) failed: the report is incomplete
    sections: list[Report[Any]] = field(default_factory=list)  # printed after the report (a second census)
    errors: list[str] = field(default_factory=list)  # what made the report partial, one line each


@dataclass(frozen=True)
class Command:
    name: str
    summary: str
    module: str
    arguments: Callable[[argparse.ArgumentParser], None] = lambda parser: None
    cluster_scoped: bool = False  # PVs and classes: -n narrows, it is not the scope
    selector_help: str = ""  # what -l selects in this subcommand

    def load(self) -> Any:
        return importlib.import_module(self.module)


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
            "kubectl_pvleft.leftovers", _leftovers, cluster_scoped=True, selector_help="PersistentVolumes"),
    Command("pending", "Pending Pods triaged by the controller that owns the blocker, from Pod and PVC evidence",
            "kubectl_pvleft.pending", _pending, selector_help="Pods"),
    Command("classes", "StorageClasses with their PV/PVC counts, defaults and drift",
            "kubectl_pvleft.classes", _classes, cluster_scoped=True, selector_help="StorageClasses"),
    Command("claims", "PersistentVolumeClaims in trouble: not bound, resizing, modify failed, unhealthy, lost",
            "kubectl_pvleft.claims", _claims, selector_help="PersistentVolumeClaims"),
    Command("snapshots", "VolumeSnapshotContents that survived their snapshot: Retain contents whose VolumeSnapshot "
                         "is gone or replaced, contents whose class is gone, contents not ready with an error",
            "kubectl_pvleft.snapshots", _snapshots, cluster_scoped=True, selector_help="VolumeSnapshotContents"),
)
