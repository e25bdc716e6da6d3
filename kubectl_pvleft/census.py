"""`leftovers --project` / `--aws-region`: the second census, cloud disks beside the PersistentVolumes.

Two clients, two findings: the Kubernetes rows come from the API server, the disk rows from the cloud,
and each finding says which client saw it (``source``). A cloud census that fails is one line on
stderr; the Kubernetes findings still print and the exit code says the report is partial. The cloud
SDKs are imported only here, and this module only when one of the flags is given.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any, Optional

from kubectl_pvleft.clouds import CloudDisk, CloudError, CloudFinding, join
from kubectl_pvleft.clouds.refs import volume_ref
from kubectl_pvleft.commands import Options, Result
from kubectl_pvleft.printing import Column, Report, age, utcnow


def open_censuses(options: Options) -> tuple[list[Any], list[str]]:
    """The censuses the flags ask for; a cloud that cannot even be opened is an error line, not a census."""
    censuses, errors = [], []
    if options.flag("project"):
        try:
            from kubectl_pvleft.clouds import gce

            endpoint, credentials = os.environ.get("PVLEFT_COMPUTE_ENDPOINT"), None
            if endpoint:  # a local Compute (tests, a proxy): it never gets the user's Google credentials
                try:
                    from google.auth.credentials import AnonymousCredentials

                    credentials = AnonymousCredentials()
                except ImportError:
                    pass  # open_census says what to install
            censuses.append(gce.open_census(options.flag("project"), zones=options.flag("zone") or (),
                                            regions=options.flag("region") or (), api_endpoint=endpoint,
                                            credentials=credentials))
        except CloudError as exc:
            errors.append(f"Compute Engine census: {exc}")
    if options.flag("aws_region"):
        try:
            from kubectl_pvleft.clouds import aws

            censuses.append(aws.open_census(options.flag("aws_region"), profile=options.flag("aws_profile"),
                                            cluster_name=options.flag("aws_cluster_name")))
        except CloudError as exc:
            errors.append(f"EBS census: {exc}")
    return censuses, errors


def add_cloud_census(outcome: Result, leftovers: Any, options: Options) -> Result:
    """Join every PV (not only the leftovers: a Bound PV's disk is not an orphan) with each cloud's disks."""
    from kubectl_pvleft import leftovers as module

    censuses, errors = open_censuses(options)
    refs = [volume_ref(pv) for pv in leftovers.all_pvs]
    findings: list[CloudFinding] = []
    disks: dict[str, CloudDisk] = {}
    for census in censuses:
        try:
            joined = join(census, refs, census.disks())
        except CloudError as exc:
            errors.append(f"{'Compute Engine' if census.source == 'gce' else 'EBS'} census: {exc}")
            continue
        findings += joined.findings
        disks.update(joined.disks_by_pv)
        outcome.warnings += getattr(census, "notes", [])
    report = module.report(leftovers, disks=disks)
    outcome.report = report
    outcome.sections = [findings_report(findings)]
    outcome.findings += len(findings)
    outcome.errors = errors
    outcome.partial = bool(errors)
    return outcome


def disk_summary(disk: Optional[CloudDisk]) -> Optional[str]:
    """One cell: `gce 20GiB pd-balanced, attached to vm-1` / `aws 8GiB gp3, available`."""
    if disk is None:
        return None
    size = f"{disk.size_gb}GiB" if disk.size_gb is not None else "?GiB"
    use = f"used by {','.join(disk.users)}" if disk.users else "not attached"
    return f"{disk.source} {size} {disk.type or ''}".rstrip() + f", {use}"


def finding_json(finding: CloudFinding) -> dict[str, Any]:
    return {
        "kind": finding.kind,
        "source": finding.source,
        "handle": finding.handle,
        "pv": finding.pv_name,
        "message": finding.message,
        "disk": finding.disk.to_json() if finding.disk else None,
    }


def findings_report(findings: list[CloudFinding], now: Optional[datetime] = None) -> Report[CloudFinding]:
    def disk(attr: str) -> Any:
        return lambda f: getattr(f.disk, attr) if f.disk is not None else None

    def made_for(f: CloudFinding) -> Optional[str]:
        if f.disk is None:
            return None
        p = f.disk.provenance
        claim = "/".join(x for x in (p.get("kubernetes.io/created-for/pvc/namespace"),
                                     p.get("kubernetes.io/created-for/pvc/name")) if x)
        return claim or p.get("kubernetes.io/created-for/pv/name") or p.get("CSIVolumeName")

    columns: list[Column[CloudFinding]] = [
        Column("SOURCE", lambda f: f.source),
        Column("FINDING", lambda f: f.kind),
        Column("DISK", lambda f: f.disk.name if f.disk else f.handle.rsplit("/", 1)[-1]),
        Column("PV", lambda f: f.pv_name),
        Column("LOCATION", disk("location")),
        Column("SIZE", lambda f: f"{f.disk.size_gb}GiB" if f.disk and f.disk.size_gb is not None else None),
        Column("TYPE", disk("type")),
        Column("USERS", lambda f: ",".join(f.disk.users) if f.disk and f.disk.users else None),
        Column("MADE FOR", made_for),
        Column("AGE", lambda f: age(f.disk.created, now or utcnow()) if f.disk else None),
        Column("HANDLE", lambda f: f.handle, wide_only=True),
        Column("MESSAGE", lambda f: f.message, wide_only=True),
    ]
    return Report(rows=findings, columns=columns, to_json=finding_json,
                  name=lambda f: f"{f.source}/{f.handle}", empty_message="No orphaned or missing cloud disks found")
