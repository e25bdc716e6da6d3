"""`--cost`, the run: every disk or snapshot priced, from the price file where it has a line, else from its
cloud's price API (each cloud's list fetched at the same time as the others', once per run), and what the prices
rest on. The units, records and the price file it uses are in cost.py."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Optional, Union

from kubectl_pvleft.clouds import CLOUDS
from kubectl_pvleft.clouds.base import Billable, Cloud, CloudError, Need, PricesModule, Rate
from kubectl_pvleft.clouds.cost import (
    AT_MOST,
    BASE,
    CANONICAL,
    PRICE_FILE,
    Line,
    MonthlyCost,
    Priced,
    PriceFile,
    Unpriced,
    bound_needs,
)
from kubectl_pvleft.invocation import FlagValues


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


def price(flags: FlagValues, disks: Sequence[Billable], timeout: float,
          price_file: Optional[PriceFile] = None) -> Costing:
    """Every disk (or snapshot) priced: from the price file where it has a line, else from its cloud's price API (each cloud's
    list fetched at the same time as the others', once per run, read to its last page)."""
    costing = Costing()
    clouds = {cloud.SOURCE: cloud for cloud in CLOUDS}
    modules: dict[str, PricesModule] = {}  # cloud -> its prices module, for the disks of a cloud that has one
    wanted: dict[str, dict[str, list[Need]]] = {}  # cloud -> handle -> needs
    for disk in disks:
        owner = clouds.get(disk.source)
        if owner is None:
            continue
        pricing = prices_of(owner)
        if pricing is None:  # a cloud whose prices are not read yet: said, never 0
            costing.by_handle[disk.handle] = Unpriced(f"kubectl-pvleft does not read {owner.NAME}'s prices yet")
            continue
        modules[disk.source] = pricing
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
    api_rates = _fetch(flags, {cloud: (clouds[cloud].NAME, modules[cloud]) for cloud in from_api}, from_api, timeout,
                       costing)
    for cloud, by_handle in wanted.items():
        for handle, needs in by_handle.items():
            costing.by_handle[handle] = _priced(cloud, needs, from_file.get(cloud, {}), api_rates.get(cloud, {}),
                                                price_file, clouds[cloud].NAME)
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


def prices_of(cloud: Cloud) -> Optional[PricesModule]:
    """A cloud's ``prices`` module, imported now, or None when its prices are not read."""
    return cloud.prices() if cloud.prices is not None else None


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


def _fetch(flags: FlagValues, modules: Mapping[str, tuple[str, PricesModule]], needs: Mapping[str, list[Need]],
           timeout: float, costing: Costing) -> dict[str, Mapping[tuple[str, str, str, bool], Union[Rate, str]]]:
    """Each cloud's price list at the same time, bounded as a census is; one that fails leaves its disks unknown.
    ``modules``: each cloud's name and prices module, by source."""
    from functools import partial

    from kubectl_pvleft.clouds.bounded import run_together

    found: dict[str, Mapping[tuple[str, str, str, bool], Union[Rate, str]]] = {}
    failed: dict[str, str] = {}

    def read(cloud: str) -> Mapping[tuple[str, str, str, bool], Union[Rate, str]]:
        _, prices = modules[cloud]
        return prices.open(flags, timeout).rates(needs[cloud])

    # One bound for them all: they run at the same time, and one past it stops at its next page (clouds/bounded.py).
    outcomes = run_together({cloud: partial(read, cloud) for cloud in modules}, timeout)
    for cloud, outcome in outcomes.items():
        if isinstance(outcome, CloudError):
            failed[cloud] = str(outcome)
        elif isinstance(outcome, Exception):  # an SDK's surprise: still one line, never its text
            failed[cloud] = f"internal error ({type(outcome).__name__})"
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            found[cloud] = outcome
    for cloud, (name, _) in modules.items():
        if cloud not in found and cloud not in failed:
            failed[cloud] = f"did not finish within {timeout:g}s"
        if cloud in failed:
            costing.errors.append(f"{name} prices: {failed[cloud]}")
            found[cloud] = {need.key: f"the {name} price list could not be read ({failed[cloud]})"
                            for need in needs[cloud]}
    return found


def _add_exclusions(costing: Costing, disks: Iterable[Billable], modules: Mapping[str, PricesModule]) -> None:
    """What a priced disk also bills and the price leaves out (a prices module's ``excluded``, where it has one): in
    its JSON, and one warning per reason naming the disks, so a total is never read as the whole bill."""
    from kubectl_pvleft.text import shown as escaped

    names: dict[str, list[str]] = {}
    for disk in disks:
        priced = costing.by_handle.get(disk.handle)
        if not isinstance(priced, MonthlyCost) or disk.source not in modules:
            continue
        excluded = modules[disk.source].excluded
        reason = excluded(disk) if excluded is not None else None
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


