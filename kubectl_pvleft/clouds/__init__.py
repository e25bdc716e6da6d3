"""The second census: cloud disks beside the PersistentVolumes, one package per cloud behind one typed interface.

A census runs only when the user names its cloud (``--project`` for Compute Engine, ``--aws-region`` for
EBS, ``--azure-subscription`` for Azure managed disks); its SDK is imported only then (inside its modules'
``open``), never at start-up. Two clients, two findings: every finding says which client saw it (``source``).

``CLOUDS`` is the registry: each cloud package's ``CLOUD``, in the order their censuses run and their flags are
listed. What a cloud is (``base.Cloud``) and what its ``census``, ``prices`` and ``snapshots`` modules provide
(``base.CensusModule``, ``PricesModule``, ``SnapshotsModule``, and what their ``open`` returns: ``Census``,
``PriceList``, ``SnapshotCensus``) are Protocols in ``base``, declared once; mypy checks each ``CLOUD`` against
them, and through its accessors each module. A cloud's package ``__init__`` declares it cheaply (the parser reads
its flags on every run a census may join): its modules are imported when a run asks for them.

Adding a cloud: one package here (its ``__init__`` exporting ``CLOUD: Cloud``, its ``names``, its modules), its
``CLOUD`` in ``CLOUDS``, its extra in setup.cfg, its test server (docs/clouds.md). The shared types and the join are
in ``base``; ``census`` runs the asked ones, ``pricing`` prices what they found, ``snapshot_census`` looks up
snapshots.

What a census promises beyond its Protocol:

- A disk is missing only where the PV itself places it and that place was listed in full (``Census.placement``);
  otherwise it is unknown, with the reason.
- ``CloudDisk.kept``: the reason of the cloud's keep label or tag (``pvleft-keep`` on GCE, whose label keys take
  no dot or slash; ``pvleft.io/keep`` on AWS and Azure), None when the disk has none: a kept orphan is never a
  finding.
- ``CloudDisk.other_cluster`` True (a cluster-name flag given, and the tags name other clusters, not this
  one): ``join`` sets the disk aside in ``other_clusters`` instead of calling it an orphan, unless a PV here
  names it (then it is that PV's disk, whoever tagged it).
- A disk a VM uses (``CloudDisk.users``) that no PV names and no CSI driver made for a claim (``made_for`` is None:
  a node's boot or OS disk) is ``not-a-volume``: ``join`` puts it in ``not_volumes``, shown with ``--all`` and
  never a finding.
- ``CloudDisk.use``: the DISK column's words in the cloud's own terms (Azure: Unattached); None: generic.
- A snapshot is missing only on the cloud's own not-found for it, and ``prices.needs`` takes a ``CloudSnapshot``
  too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from kubectl_pvleft.clouds import aws, azure, gce
from kubectl_pvleft.invocation import BOOLEAN, NEEDS_CENSUS, VALUE, Flag, FlagSet

if TYPE_CHECKING:
    from kubectl_pvleft.clouds.base import Cloud

# The clouds, in the order their censuses run and their flags are listed.
CLOUDS: tuple[Cloud, ...] = (gce.CLOUD, aws.CLOUD, azure.CLOUD)
SOURCES = tuple(cloud.SOURCE for cloud in CLOUDS)  # what a price file's `cloud` and Invocation.clouds name them by

# Flags every census shares, listed after the clouds' own: what each leftover disk bills (cost.py; each cloud's
# prices module reads its price API, imported only under --cost).
FLAGS = (
    Flag(name="--cost", dest="cost", kind=BOOLEAN, needs=NEEDS_CENSUS,
         help="price each disk (leftovers) or snapshot (snapshots) the census found per month (a MONTHLY column and "
              "totals), from the clouds' price APIs or --price-file"),
    Flag(name="--price-file", dest="price_file", kind=VALUE, metavar="FILE", needs="--cost",
         help="YAML/JSON prices (cloud, location, type -> unit_price) that take precedence over the price APIs"),
)



class CensusFlags(FlagSet):
    """The flags every census shares (``FLAGS``), typed."""

    __slots__ = ("cost", "price_file")
    _default_cost = False

    cost: bool
    price_file: Optional[str]


def asking_flags() -> list[str]:
    """The flag that asks for each cloud's census (its first), in registry order: what usage errors name."""
    return [cloud.FLAGS[0].name for cloud in CLOUDS]


def one_cluster_flags() -> list[Flag]:
    """The flags that name one cluster as "this" one (a cloud's ``ONE_CLUSTER_FLAGS``): a fleet census, which joins
    against many clusters, refuses them."""
    return [flag for cloud in CLOUDS for flag in cloud.ONE_CLUSTER_FLAGS]


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
    return tuple(flag for cloud in CLOUDS for flag in cloud.FLAGS) + FLAGS
