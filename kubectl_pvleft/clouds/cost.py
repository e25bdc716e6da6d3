"""`--cost`: what each leftover disk bills per month, from the clouds' own price lists or a ``--price-file``.

What every cloud shares lives here: the units (a price is converted to one canonical unit per component:
GiB-month for capacity, IOPS-month for provisioned IOPS, MiB/s-month for provisioned throughput, disk-month for a
price per disk whatever its size, as Azure lists its P/E/S tiers), what a disk or snapshot is priced at (the
``Need`` and ``Rate`` records themselves are base's), the ``--price-file`` reader (it takes precedence: a line there
beats the API), and the totals; pricing.py runs the pricing itself. Each cloud's ``prices`` module
(``base.PricesModule``) says what a disk needs (``needs(disk)``) and reads its price API (``open(flags,
timeout).rates(needs)``); it is imported only under ``--cost``, and its SDK only inside ``open``.

A disk whose price cannot be determined (its size unknown, no SKU for its type and region, the price API
failed) gets an ``Unpriced`` with the reason, never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Optional, TypeVar, Union

from msgspec import Struct, field

# What a price list answers in is declared in base, beside the Protocols that speak it; the clouds' prices modules
# take it from here, with the units.
from kubectl_pvleft.clouds.base import Billable as Billable
from kubectl_pvleft.clouds.base import CloudSnapshot, MonthlyCostJson, UnpricedJson
from kubectl_pvleft.clouds.base import Need as Need
from kubectl_pvleft.clouds.base import Rate as Rate
from kubectl_pvleft.errors import UsageError

if TYPE_CHECKING:
    from kubectl_pvleft.records import Absent

T = TypeVar("T")

CAPACITY, IOPS, THROUGHPUT = "capacity", "iops", "throughput"
# A disk billed as a whole at its size tier's monthly price (Azure's P10, E20, S30 ...): quantity 1, one disk-month.
DISK = "disk"
BASE = (CAPACITY, DISK)  # what a disk that bills is billed for first: by its size, or as a whole
# The unit every rate is converted to, per component: what a disk's own figures count (sizes in GiB, IOPS,
# throughput in MiB/s), so a quantity times a rate is the month's price with no further conversion.
CANONICAL = {CAPACITY: "GiB-month", IOPS: "IOPS-month", THROUGHPUT: "MiBps-month", DISK: "disk-month"}
GIB, GB = 2**30, 10**9
# A unit -> (its component, how many canonical units one of it is). A price per unit divided by that is the
# price per canonical unit: $0.10 per GB-month (10^9 bytes) is $0.10 / (10^9 / 2^30) = $0.1074 per GiB-month.
UNITS: dict[str, tuple[str, float]] = {
    "GiB-month": (CAPACITY, 1.0),
    "GB-month": (CAPACITY, GB / GIB),
    "TiB-month": (CAPACITY, 1024.0),
    "IOPS-month": (IOPS, 1.0),
    "MiBps-month": (THROUGHPUT, 1.0),
    "MBps-month": (THROUGHPUT, 10**6 / 2**20),
    "GiBps-month": (THROUGHPUT, 1024.0),
    "disk-month": (DISK, 1.0),
}
PRICE_FILE = "price file"
# The price-file and Need types of snapshot storage, in every cloud: what a snapshot bills as, by its tier.
SNAPSHOT, ARCHIVE_SNAPSHOT = "snapshot", "archive-snapshot"


class Line(Struct, frozen=True):
    need: Need
    rate: Rate
    amount: float


class MonthlyCost(Struct, frozen=True):
    lines: tuple[Line, ...]
    excludes: Optional[str] = None  # what the disk also bills that is not in the amount (Azure: transactions)

    @property
    def amount(self) -> float:
        return sum(line.amount for line in self.lines)

    @property
    def currency(self) -> str:
        return self.lines[0].rate.currency

    @property
    def by_file(self) -> bool:
        return all(line.rate.source == PRICE_FILE for line in self.lines)

    def to_json(self) -> MonthlyCostJson:
        first = self.lines[0].rate  # the capacity (or per-disk) line: every disk that bills has one, first
        found: MonthlyCostJson = {
            "amount": round(self.amount, 6), "currency": self.currency,
            "unit_price": round(first.unit_price, 9), "unit": CANONICAL[self.lines[0].need.component],
            "price_source": first.source, "sku": first.sku, "price_date": first.date,
            "components": [{
                "component": line.need.component, "quantity": line.need.quantity,
                "unit": CANONICAL[line.need.component], "unit_price": round(line.rate.unit_price, 9),
                "listed_price": line.rate.listed, "listed_unit": line.rate.unit, "amount": round(line.amount, 6),
                "price_source": line.rate.source, "sku": line.rate.sku, "price_date": line.rate.date,
            } for line in self.lines],
        }
        if self.excludes:  # only where a cloud says so: the other clouds' JSON is unchanged
            found["excludes"] = self.excludes
        return found


class Unpriced(Struct, frozen=True):
    reason: str
    # An upper bound, when what bills is unknown and at most a known quantity (an EBS standard snapshot stores at
    # most its full size): shown as "at most", never summed, never the price.
    at_most: Optional[MonthlyCost] = None

    def to_json(self) -> UnpricedJson:
        found: UnpricedJson = {"amount": None, "currency": None, "unknown": self.reason}
        if self.at_most is not None:
            found["at_most"] = self.at_most.to_json()
        return found


Priced = Union[MonthlyCost, Unpriced]


def cell(priced: Optional[Priced]) -> Union[str, Absent, None]:
    """The MONTHLY cell: ``12.34 USD``; ``<unknown>`` (the reason is on stderr and in JSON), or ``at most 5.00 USD``
    when an upper bound is known; nothing when the row has no disk that bills."""
    from kubectl_pvleft.records import Absent

    if priced is None:
        return None
    if isinstance(priced, Unpriced):
        bound = priced.at_most
        return Absent.UNKNOWN if bound is None else f"at most {bound.amount:.2f} {bound.currency}"
    return f"{priced.amount:.2f} {priced.currency}"


def json_of(priced: Optional[Priced]) -> MonthlyCostJson | UnpricedJson | None:
    return None if priced is None else priced.to_json()


def the_one(candidates: Sequence[T], rate_of: Callable[[T], Union[Rate, str]], noun: str, plural: str,
            says: Callable[[str], str]) -> Union[Rate, str]:
    """A price list's entry for one need: exactly one candidate gives its rate; none or several leave the price
    unknown, and ``says("no SKU")`` / ``says("2 SKUs")`` tells why (never the first of several, never a guess)."""
    if len(candidates) != 1:
        return says(f"{len(candidates)} {plural}" if candidates else f"no {noun}")
    return rate_of(candidates[0])


def snapshot_needs(snapshot: CloudSnapshot, cloud: str) -> Union[list[Need], str]:
    """What a snapshot bills for, in every cloud: its stored size, by tier, where it is stored. A str says why it
    cannot be priced (its billed size unknown: never its disk's size in its place)."""
    if snapshot.stored_gib is None:
        return snapshot.unsized or f"{cloud} did not say how much the snapshot stores"
    if snapshot.tier not in ("standard", "archive"):
        return f"no {cloud} price is known for {snapshot.tier} snapshots"
    return [Need(CAPACITY, snapshot.stored_gib, snapshot.location, _snapshot_type(snapshot))]


def _snapshot_type(snapshot: CloudSnapshot) -> str:
    return ARCHIVE_SNAPSHOT if snapshot.tier == "archive" else SNAPSHOT


AT_MOST = "#at-most"  # the key suffix under which an upper bound is priced beside the real needs


def bound_needs(item: Billable) -> Optional[list[Need]]:
    """What an item whose billed quantity is unknown would bill at most: a snapshot's ``bound_gib``."""
    if not isinstance(item, CloudSnapshot) or item.stored_gib is not None or item.bound_gib is None:
        return None
    return [Need(CAPACITY, item.bound_gib, item.location, _snapshot_type(item))]


# -- the price file ------------------------------------------------------------------------------------------

class PriceFile(Struct, frozen=True):
    path: str
    currency: str
    date: Optional[str]
    rates: dict[tuple[str, str, str, str, Optional[bool]], Rate] = field(default_factory=dict)  # (cloud, comp, loc, type, regional)

    def rate(self, cloud: str, need: Need) -> Optional[Rate]:
        """A line for this cloud, component, type and region (or ``*``); a line that names ``regional`` prices only
        disks of that replication, one that does not prices both."""
        for location in (need.location, "*"):
            for regional in (need.regional, None):
                found = self.rates.get((cloud, need.component, location, need.type, regional))
                if found is not None:
                    return found
        return None

    def misfit(self, cloud: str, need: Need) -> Optional[str]:
        """A line for this disk's type and place whose unit prices another component (a P10 tier per GiB-month,
        say): it can never price the disk, and a line that silently never applies looks like a price that did."""
        if need.component not in BASE or self.rate(cloud, need) is not None:
            return None
        for (line_cloud, component, location, kind, _), rate in self.rates.items():
            if (line_cloud, kind) == (cloud, need.type) and location in (need.location, "*") and component != need.component:
                return (f"{rate.sku} prices {cloud} {need.type} in {location} per {rate.unit}, but a {need.type} "
                        f"disk bills per {CANONICAL[need.component]}: the line was not used")
        return None


def read_price_file(path: str, clouds: Collection[str]) -> PriceFile:
    """``--price-file``: YAML or JSON, ``currency``, optional ``date``, and ``prices``: a list of {cloud (one of
    ``clouds``: the registry's sources), location, type, unit_price, unit (default GiB-month), regional (optional)}.
    Anything else is a usage error, one line."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise UsageError(f"--price-file {path}: {exc.strerror or exc}") from None
    import yaml  # JSON is YAML: one reader for both

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise UsageError(f"--price-file {path}: not YAML or JSON{where}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("prices"), list):
        raise UsageError(f"--price-file {path}: expected a mapping with a `prices` list (and `currency`)")
    currency = doc.get("currency")
    if not isinstance(currency, str) or not currency.strip():
        raise UsageError(f"--price-file {path}: `currency` is required (an ISO 4217 code such as USD or EUR)")
    date = doc.get("date")
    prices = PriceFile(path, currency.strip(), None if date is None else str(date))
    for index, entry in enumerate(doc["prices"], 1):
        cloud, component, location, kind, regional, rate = _price_line(path, index, entry, prices, clouds)
        key = (cloud, component, location, kind, regional)
        if key in prices.rates:
            raise UsageError(f"--price-file {path}: prices[{index}] repeats {cloud} {location} {kind} {component}")
        prices.rates[key] = rate
    return prices


def _price_line(path: str, index: int, entry: object, prices: PriceFile,
                clouds: Collection[str]) -> tuple[str, str, str, str, Optional[bool], Rate]:
    where = f"--price-file {path}: prices[{index}]"
    if not isinstance(entry, dict):
        raise UsageError(f"{where}: expected a mapping of cloud, location, type, unit_price")
    unknown = set(entry) - {"cloud", "location", "type", "unit_price", "unit", "regional"}
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    words = {}
    for key in ("cloud", "location", "type"):
        value = entry.get(key)
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"{where}: `{key}` must be a non-empty string")
        words[key] = value.strip()
    if words["cloud"] not in clouds:
        raise UsageError(f"{where}: cloud {words['cloud']!r} is not one of {', '.join(sorted(clouds))}")
    price = entry.get("unit_price")
    if isinstance(price, bool) or not isinstance(price, (int, float)) or price < 0:
        raise UsageError(f"{where}: `unit_price` must be a number, 0 or more")
    unit = entry.get("unit", "GiB-month")
    if unit not in UNITS:
        raise UsageError(f"{where}: unit {unit!r} is not one of {', '.join(UNITS)}")
    regional = entry.get("regional")
    if regional is not None and not isinstance(regional, bool):
        raise UsageError(f"{where}: `regional` must be true or false")
    component, per = UNITS[unit]
    rate = Rate(tiers=((0.0, float(price) / per),), currency=prices.currency, unit=unit, listed=float(price),
                sku=f"{path}:prices[{index}]", source=PRICE_FILE, date=prices.date)
    return words["cloud"], component, words["location"], words["type"], regional, rate


# -- totals ------------------------------------------------------------------------------------------------

class Total(Struct):
    by: str  # "kind", "location", "cloud"
    name: str
    currency: Optional[str]
    disks: int = 0
    amount: float = 0.0
    unknown: int = 0
    by_file: int = 0  # rows the price file priced


def totals(rows: Iterable[tuple[str, Billable, Optional[Priced]]]) -> list[Total]:
    """By finding kind, location and cloud: (kind, disk, its price) per billing row. Unknown prices are counted,
    never summed as 0; a group with several currencies gets one total per currency."""
    groups: dict[tuple[str, str, Optional[str]], Total] = {}
    unknown: dict[tuple[str, str], int] = {}
    for kind, disk, priced in rows:
        for by, name in (("kind", kind), ("location", disk.location), ("cloud", disk.source)):
            if not isinstance(priced, MonthlyCost):
                unknown[(by, name)] = unknown.get((by, name), 0) + 1
                continue
            total = groups.setdefault((by, name, priced.currency), Total(by, name, priced.currency))
            total.disks += 1
            total.amount += priced.amount
            total.by_file += priced.by_file
    for (by, name), count in unknown.items():
        matching = [t for (b, n, _), t in groups.items() if (b, n) == (by, name)]
        if matching:
            matching[0].unknown += count
        else:
            groups[(by, name, None)] = Total(by, name, None, unknown=count)
    order = {"kind": 0, "location": 1, "cloud": 2}
    return sorted(groups.values(), key=lambda t: (order[t.by], t.name, t.currency or ""))
