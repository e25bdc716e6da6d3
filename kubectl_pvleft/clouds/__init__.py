"""The second census: cloud disks beside the PersistentVolumes, one package per cloud behind one interface.

A census runs only when the user names its cloud (``--project`` for Compute Engine, ``--aws-region`` for
EBS, ``--azure-subscription`` for Azure managed disks); its SDK is imported only then (``importlib`` inside the
module's ``open_census``), never at start-up.
Two clients, two findings: every finding says which client saw it (``source``).

Contract for a cloud (``gce/``, ``aws/``, ``azure/``): its package's ``__init__`` declares, cheaply (the parser
reads it on every ``leftovers`` run), and its ``census`` module implements (imported only when the census runs):

- ``NAME`` (how messages name the census), ``SOURCE`` (``"gce"``, ``"aws"``, ``"azure"``: JSON ``source``), ``FLAGS`` (its
  ``invocation.Flag``s, the first one the flag that asks for it), ``DRIVERS`` (the CSI drivers and in-tree
  sources whose PVs it answers for), ``EXTRA`` (the setup.cfg extra that installs its SDK);
- ``asked(flags) -> bool``: whether the parsed flags ask for this census;
- ``census.open(flags, timeout) -> Census``: builds the SDK client (imported there); raises
  ``CloudError`` (one line, what is missing and how to get it) when credentials or the SDK are absent;
- optionally ``census.made_by(item) -> list[(cluster, evidence)]``: the clusters a disk's or snapshot's tags,
  labels or description say made it (it reads their ``provenance`` and ``handle``), and
  ``census.kubeconfig_cluster(name) -> Optional[str]``: the cluster a kubeconfig context or cluster name names in
  this cloud's tools' words (a census tells which context reaches the cluster that made an orphan);
- optionally ``census.other_clusters_note(disks, flags) -> str``: what it set aside as other clusters' disks
  (``base.other_clusters_note`` in the cloud's words);
- optionally ``ONE_CLUSTER_FLAGS``: its flags that name one cluster as "this" one (``--aws-cluster-name``),
  refused with ``--all-contexts``/``--contexts``;
- optionally ``SNAPSHOT_DRIVERS`` and a ``snapshots`` module, for ``snapshots`` with the cloud's flags:
  ``snapshots.open(flags, timeout).look_up(handles) -> base.SnapshotLookup`` (read-only; a snapshot is missing only
  on the cloud's own not-found for it), and its ``prices.needs`` takes a ``CloudSnapshot`` too; optionally, for the
  reverse census (``snapshot_census.orphans``), ``snapshots.made_by_csi(snapshot) -> bool`` and
  ``open(...).every() -> Iterator[CloudSnapshot]`` (every snapshot the account owns, every page), and optionally
  ``snapshots.match_key(handle) -> str`` (handles compared through it: Azure's ARM IDs are case-insensitive).

Adding a cloud: one package here, its name in ``CLOUD_MODULES``, its extra in setup.cfg, its test server. The
shared types and the join are in ``base``; ``census`` runs the asked ones.

- ``Census.source``: ``"gce"``, ``"aws"`` or ``"azure"``.
- ``Census.handle_of(pv: VolumeRef) -> Optional[str]``: the canonical handle a PV names on this cloud (the
  same string ``CloudDisk.handle`` carries for that disk), or None when the PV is not this cloud's.
- ``Census.placement(pv: VolumeRef, handle: str) -> base.Placement``: for a PV whose disk was not seen, where
  the PV itself places it (its handle, its topology) and whether that place was listed in full (every page read, no
  error, no refusal, no filter that left it out). Only then is the disk missing; otherwise it is unknown, with the
  reason. A location the census was asked for is never taken to be the PV's: a bare EBS volume id names no region,
  an in-tree PD no project.
- ``Census.disks() -> Iterator[CloudDisk]``: every disk, paginated to the last page, read-only calls only.
  Raises ``CloudError`` (a 403 names the missing permission).
- ``Census.notes``: lines for stderr about what the census could not tell (printed as warnings).
- ``CloudDisk.kept``: the reason of the cloud's keep label or tag (``pvleft-keep`` on GCE, whose label keys take
  no dot or slash; ``pvleft.io/keep`` on AWS), None when the disk has none: a kept orphan is never a finding.
- ``CloudDisk.other_cluster`` True (AWS with ``--aws-cluster-name``: the tags name other clusters, not this
  one): ``join`` sets the disk aside in ``other_clusters`` instead of calling it an orphan, unless a PV here
  names it (then it is that PV's disk, whoever tagged it).
- A disk a VM uses (``CloudDisk.users``) that no PV names and no CSI driver made for a claim (``made_for`` is None:
  a node's boot or OS disk) is ``not-a-volume``: ``join`` puts it in ``not_volumes``, shown with ``--all`` and
  never a finding.
- Optional: ``Census.match_key(handle) -> str`` (handles are compared through it: Azure's ARM IDs are
  case-insensitive); ``CloudDisk.use`` (the DISK column's words in the cloud's own terms).
"""

from __future__ import annotations

from typing import Any

from kubectl_pvleft.invocation import BOOLEAN, NEEDS_CENSUS, VALUE, Flag

# The clouds, in the order their censuses run and their flags are listed.
CLOUD_MODULES = ("kubectl_pvleft.clouds.gce", "kubectl_pvleft.clouds.aws", "kubectl_pvleft.clouds.azure")

# Flags every census shares, listed after the clouds' own: what each leftover disk bills (cost.py; each cloud's
# prices module reads its price API, imported only under --cost).
FLAGS = (
    Flag(name="--cost", dest="cost", kind=BOOLEAN, needs=NEEDS_CENSUS,
         help="price each disk (leftovers) or snapshot (snapshots) the census found per month (a MONTHLY column and "
              "totals), from the clouds' price APIs or --price-file"),
    Flag(name="--price-file", dest="price_file", kind=VALUE, metavar="FILE", needs="--cost",
         help="YAML/JSON prices (cloud, location, type -> unit_price) that take precedence over the price APIs"),
)


def cloud_modules() -> list[Any]:
    from importlib import import_module

    return [import_module(name) for name in CLOUD_MODULES]


def asking_flags() -> list[str]:
    """The flag that asks for each cloud's census (its first), in registry order: what usage errors name."""
    return [cloud.FLAGS[0].name for cloud in cloud_modules()]


def one_cluster_flags() -> list[Flag]:
    """The flags that name one cluster as "this" one (a cloud's optional ``ONE_CLUSTER_FLAGS``): a fleet census,
    which joins against many clusters, refuses them."""
    return [flag for cloud in cloud_modules() for flag in getattr(cloud, "ONE_CLUSTER_FLAGS", ())]


def installed(extra: str) -> bool:
    """Every package setup.cfg's ``extra`` names is installed (read from this package's metadata, nothing imported):
    whether a census could run here, for the MCP tools that offer its flags only then."""
    from importlib.metadata import PackageNotFoundError, requires, version

    try:
        wanted = [r for r in requires("kubectl-pvleft") or () if f'extra == "{extra}"' in r.replace("'", '"')]
    except PackageNotFoundError:  # run from a source tree that was never installed: nothing can be said
        return False
    for requirement in wanted:
        name = requirement.split(";")[0].strip()
        for stop in "<>=!~[ (":
            name = name.split(stop)[0]
        try:
            version(name)
        except PackageNotFoundError:
            return False
    return bool(wanted)


def census_flags() -> tuple[Flag, ...]:
    """Every cloud's flags, then the shared ones: what a command a census may join takes."""
    return tuple(flag for cloud in cloud_modules() for flag in cloud.FLAGS) + FLAGS
