"""`--cost`: what each leftover disk bills per month, from the clouds' own price lists or a ``--price-file``.

What every cloud shares lives here: the units (a price is converted to one canonical unit per component:
GiB-month for capacity, IOPS-month for provisioned IOPS, MiB/s-month for provisioned throughput, disk-month for a
price per disk whatever its size, as Azure lists its P/E/S tiers), the rates and
what a disk needs priced, the ``--price-file`` reader (it takes precedence: a line there beats the API), and the
totals. Each cloud's ``prices`` module says what a disk needs (``needs(disk)``) and reads its price API
(``open(flags, timeout).rates(needs)``); it is imported only under ``--cost``, and its SDK only inside ``open``.

A disk whose price cannot be determined (its size unknown, no SKU for its type and region, the price API
failed) gets an ``Unpriced`` with the reason, never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import import_module
from typing import Any, Optional, TypeVar, Union

from msgspec import Struct, field

from kubectl_pvleft.clouds.base import CloudDisk, CloudError, CloudSnapshot
from kubectl_pvleft.errors import UsageError

T = TypeVar("T")
# What --cost prices: a disk (leftovers) or a snapshot (snapshots); both say their source, handle, name, location.
Billable = Union[CloudDisk, CloudSnapshot]

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


class Need(Struct, frozen=True):
    """One quantity of a disk that bills: ``quantity`` in the component's canonical unit, priced by the rate
    listed for (component, location, type, regional). ``location`` is where price lists place it (a region)."""

    component: str
    quantity: float
    location: str
    type: str
    regional: bool = False

    @property
    def key(self) -> tuple[str, str, str, bool]:
        return (self.component, self.location, self.type, self.regional)


class Rate(Struct, frozen=True):
    """A price per canonical unit, by tier (from what quantity each price applies), and where it came from."""

    tiers: tuple[tuple[float, float], ...]  # (from quantity, price per canonical unit), ascending
    currency: str
    unit: str  # the unit the source lists its price in, as it spells it ("GiBy.mo", "GB-Mo", "GiB-month")
    listed: float  # the first tier's price in that unit, as listed
    sku: str  # the SKU id, the product's SKU, or "FILE:LINE" of a price-file entry
    source: str  # "Cloud Billing Catalog API", "AWS Price List Query API", "price file"
    date: Optional[str] = None  # when the price took effect (or the price file's date)

    @property
    def unit_price(self) -> float:
        return self.tiers[0][1]

    def charge(self, quantity: float) -> float:
        """The quantity priced tier by tier: each tier's price applies from its start to the next one's."""
        total = 0.0
        for index, (start, price) in enumerate(self.tiers):
            end = self.tiers[index + 1][0] if index + 1 < len(self.tiers) else quantity
            if quantity > start:
                total += (min(quantity, end) - start) * price
        return total


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

    def to_json(self) -> dict[str, Any]:
        first = self.lines[0].rate  # the capacity (or per-disk) line: every disk that bills has one, first
        found = {
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

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"amount": None, "currency": None, "unknown": self.reason}
        if self.at_most is not None:
            found["at_most"] = self.at_most.to_json()
        return found


Priced = Union[MonthlyCost, Unpriced]


def cell(priced: Optional[Priced]) -> Any:
    """The MONTHLY cell: ``12.34 USD``; ``<unknown>`` (the reason is on stderr and in JSON), or ``at most 5.00 USD``
    when an upper bound is known; nothing when the row has no disk that bills."""
    from kubectl_pvleft.records import Absent

    if priced is None:
        return None
    if isinstance(priced, Unpriced):
        bound = priced.at_most
        return Absent.UNKNOWN if bound is None else f"at most {bound.amount:.2f} {bound.currency}"
    return f"{priced.amount:.2f} {priced.currency}"


def json_of(priced: Optional[Priced]) -> Optional[dict[str, Any]]:
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


def read_price_file(path: str) -> PriceFile:
    """``--price-file``: YAML or JSON, ``currency``, optional ``date``, and ``prices``: a list of {cloud, location,
    type, unit_price, unit (default GiB-month), regional (optional)}. Anything else is a usage error, one line."""
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
        cloud, component, location, kind, regional, rate = _price_line(path, index, entry, prices)
        key = (cloud, component, location, kind, regional)
        if key in prices.rates:
            raise UsageError(f"--price-file {path}: prices[{index}] repeats {cloud} {location} {kind} {component}")
        prices.rates[key] = rate
    return prices


def _price_line(path: str, index: int, entry: Any,
                prices: PriceFile) -> tuple[str, str, str, str, Optional[bool], Rate]:
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
    clouds = {module.SOURCE for module in _cloud_modules()}
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


def _cloud_modules() -> list[Any]:
    from kubectl_pvleft.clouds import cloud_modules

    return cloud_modules()


# -- pricing ------------------------------------------------------------------------------------------------

class Costing:
    """What ``--cost`` found: a price (or the reason for none) per disk handle, and what the prices rest on."""

    __slots__ = ("by_handle", "errors", "sources", "warnings")

    def __init__(self) -> None:
        self.by_handle: dict[str, Priced] = {}
        self.errors: list[str] = []  # a price list that could not be read: the report is partial
        self.warnings: list[str] = []
        self.sources: dict[str, set[str]] = {}  # source -> the dates of the prices used from it

    def of(self, disk: Optional[Billable]) -> Optional[Priced]:
        return None if disk is None else self.by_handle.get(disk.handle)


def check(flags: Mapping[str, Any]) -> Optional[PriceFile]:
    """The price file, read before any cluster or cloud is asked anything: a bad one is a usage error."""
    path = flags.get("price_file")
    return read_price_file(path) if path else None


def price(flags: Mapping[str, Any], disks: Sequence[Billable], timeout: float,
          price_file: Optional[PriceFile] = None) -> Costing:
    """Every disk (or snapshot) priced: from the price file where it has a line, else from its cloud's price API (each cloud's
    list fetched at the same time as the others', once per run, read to its last page)."""
    costing = Costing()
    modules = {module.SOURCE: module for module in _cloud_modules()}
    wanted: dict[str, dict[str, list[Need]]] = {}  # cloud -> handle -> needs
    for disk in disks:
        module = modules.get(disk.source)
        if module is None:
            continue
        pricing = prices_of(module)
        if pricing is None:  # a cloud whose package has no prices module yet: said, never 0
            costing.by_handle[disk.handle] = Unpriced(f"kubectl-pvleft does not read {module.NAME}'s prices yet")
            continue
        needs = pricing.needs(disk)
        if isinstance(needs, str):
            costing.by_handle[disk.handle] = Unpriced(needs)
            bound = bound_needs(disk)
            if bound is not None:  # priced beside the others, shown as a bound only
                wanted.setdefault(disk.source, {})[disk.handle + AT_MOST] = bound
            continue
        wanted.setdefault(disk.source, {})[disk.handle] = needs
        for need in needs:
            misfit = price_file.misfit(disk.source, need) if price_file else None
            if misfit is not None and misfit not in costing.warnings:
                costing.warnings.append(misfit)
    from_file: dict[str, dict[tuple[str, str, str, bool], Rate]] = {}
    from_api: dict[str, list[Need]] = {}
    for cloud, by_handle in wanted.items():
        for needs in by_handle.values():
            if not _capacity_priced_by_file(cloud, needs, price_file):
                from_api.setdefault(cloud, []).extend(needs)
                continue
            for need in needs:
                rate = price_file.rate(cloud, need) if price_file else None
                if rate is not None:
                    from_file.setdefault(cloud, {})[need.key] = rate
    api_rates = _fetch(flags, {cloud: modules[cloud] for cloud in from_api}, from_api, timeout, costing)
    for cloud, by_handle in wanted.items():
        for handle, needs in by_handle.items():
            costing.by_handle[handle] = _priced(cloud, needs, from_file.get(cloud, {}), api_rates.get(cloud, {}),
                                                price_file, modules[cloud].NAME)
    for key in [k for k in costing.by_handle if k.endswith(AT_MOST)]:
        most, handle = costing.by_handle.pop(key), key[:-len(AT_MOST)]
        reason = costing.by_handle[handle]
        if isinstance(most, MonthlyCost) and isinstance(reason, Unpriced):
            costing.by_handle[handle] = Unpriced(reason.reason, at_most=most)
    _add_exclusions(costing, disks, modules)
    for priced in costing.by_handle.values():
        if isinstance(priced, Unpriced) and priced.at_most is not None:
            priced = priced.at_most
        if isinstance(priced, MonthlyCost):
            for line in priced.lines:
                costing.sources.setdefault(_source_name(line.rate, price_file), set()).add(line.rate.date or "")
    _say_why_unknown(costing, disks)
    return costing


def prices_of(cloud: Any) -> Any:
    """A cloud package's ``prices`` module, or None when it has none."""
    from importlib.util import find_spec

    name = cloud.__name__ + ".prices"
    return import_module(name) if find_spec(name) is not None else None


def _capacity_priced_by_file(cloud: str, needs: Sequence[Need], price_file: Optional[PriceFile]) -> bool:
    """A disk the price file prices is priced by it alone: its IOPS or throughput are never mixed with another
    currency or list; one the file lacks makes the disk unknown, and says so."""
    return bool(price_file and any(n.component in BASE and price_file.rate(cloud, n) for n in needs))


def _priced(cloud: str, needs: Sequence[Need], file_rates: Mapping[tuple[str, str, str, bool], Rate],
            api_rates: Mapping[tuple[str, str, str, bool], Union[Rate, str]], price_file: Optional[PriceFile],
            name: str) -> Priced:
    by_file = _capacity_priced_by_file(cloud, needs, price_file)
    lines = []
    for need in needs:
        if by_file:
            rate: Union[Rate, str, None] = file_rates.get(need.key)
            if rate is None:
                return Unpriced(f"{price_file.path if price_file else 'the price file'} prices {need.type} capacity "
                                f"in {need.location} but not its {need.component} ({CANONICAL[need.component]})")
        else:
            rate = api_rates.get(need.key)
            if rate is None:
                return Unpriced(f"the {name} price list was not read")
        if isinstance(rate, str):
            return Unpriced(rate)
        lines.append(Line(need, rate, rate.charge(need.quantity)))
    currencies = {line.rate.currency for line in lines}
    if len(currencies) > 1:
        return Unpriced(f"its components are priced in several currencies ({', '.join(sorted(currencies))})")
    return MonthlyCost(tuple(lines))


def _fetch(flags: Mapping[str, Any], modules: Mapping[str, Any], needs: Mapping[str, list[Need]], timeout: float,
           costing: Costing) -> dict[str, Mapping[tuple[str, str, str, bool], Union[Rate, str]]]:
    """Each cloud's price list at the same time, bounded as a census is; one that fails leaves its disks unknown."""
    import threading

    found: dict[str, Mapping[tuple[str, str, str, bool], Union[Rate, str]]] = {}
    failed: dict[str, str] = {}

    def read(cloud: str) -> None:
        try:
            prices = import_module(modules[cloud].__name__ + ".prices")
            found[cloud] = prices.open(flags, timeout).rates(needs[cloud])
        except CloudError as exc:
            failed[cloud] = str(exc)
        except Exception as exc:  # an SDK's surprise: still one line, never a thread's traceback (nor its text)
            failed[cloud] = f"internal error ({type(exc).__name__})"

    import time

    workers = [threading.Thread(target=read, args=(cloud,), name=f"prices-{cloud}", daemon=True) for cloud in modules]
    for worker in workers:
        worker.start()
    deadline = time.monotonic() + timeout  # one bound for them all: they run at the same time
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
    for cloud, module in modules.items():
        if cloud not in found and cloud not in failed:
            failed[cloud] = f"did not finish within {timeout:g}s"
        if cloud in failed:
            costing.errors.append(f"{module.NAME} prices: {failed[cloud]}")
            found[cloud] = {need.key: f"the {module.NAME} price list could not be read ({failed[cloud]})"
                            for need in needs[cloud]}
    return found


def _add_exclusions(costing: Costing, disks: Iterable[Billable], modules: Mapping[str, Any]) -> None:
    """What a priced disk also bills and the price leaves out (a prices module's optional ``excluded(disk)``): in
    its JSON, and one warning per reason naming the disks, so a total is never read as the whole bill."""
    from kubectl_pvleft.text import shown as escaped

    names: dict[str, list[str]] = {}
    for disk in disks:
        priced = costing.by_handle.get(disk.handle)
        if not isinstance(priced, MonthlyCost) or disk.source not in modules:
            continue
        excluded = getattr(prices_of(modules[disk.source]), "excluded", None)
        reason = excluded(disk) if excluded else None
        if reason:
            costing.by_handle[disk.handle] = MonthlyCost(priced.lines, reason)
            names.setdefault(reason, []).append(escaped(disk.name))
    for reason, which in names.items():
        shown = ", ".join(which[:5]) + (f" and {len(which) - 5} more" if len(which) > 5 else "")
        costing.warnings.append(f"monthly cost of {shown} leaves out {reason}")


def _source_name(rate: Rate, price_file: Optional[PriceFile]) -> str:
    return f"price file {price_file.path}" if rate.source == PRICE_FILE and price_file else rate.source


def _say_why_unknown(costing: Costing, disks: Iterable[Billable]) -> None:
    """One warning per reason, naming the disks: the table shows only <unknown>."""
    from kubectl_pvleft.text import shown as escaped

    names: dict[str, list[str]] = {}
    for disk in disks:
        priced = costing.by_handle.get(disk.handle)
        if isinstance(priced, Unpriced):  # a Name tag is anyone's text: never a raw terminal escape on stderr
            names.setdefault(priced.reason, []).append(escaped(disk.name))
    for reason, which in names.items():
        shown = ", ".join(which[:5]) + (f" and {len(which) - 5} more" if len(which) > 5 else "")
        costing.warnings.append(f"monthly cost unknown for {shown}: {reason}")


def provenance_note(costing: Costing) -> Optional[str]:
    """Which lists the figures come from, and how fresh they are."""
    if not costing.sources:
        return None
    parts = []
    for source, dates in sorted(costing.sources.items()):
        known = sorted(d for d in dates if d)
        when = (f"prices effective {known[-1]}" if len(known) == 1 else
                f"prices effective {known[0]} to {known[-1]}" if known else "no date given")
        parts.append(f"{source} ({when})")
    return "monthly costs from " + "; ".join(parts)


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
