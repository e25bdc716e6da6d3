"""resource.Quantity as the API server parses it (``500Mi`` < ``2Gi``), for comparisons that must not be
string comparisons: the port of apimachinery's resource.ParseQuantity, which ``--sort-by`` and the claim
checks use."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # decimal is imported at the first quantity parsed, not at start-up
    from decimal import Decimal

INT64_MAX = (1 << 63) - 1  # Go's int64, as in jsonpath.py (not imported from there: resize needs no JSONPath)

__all__ = ["parse_quantity"]

_DIGITS = "0123456789"
_SUFFIX_LETTERS = "eEinumkKMGTP"
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}


def _skip(text: str, pos: int, chars: str) -> int:
    """The position after the run of `chars` that starts at `pos`."""
    while pos < len(text) and text[pos] in chars:
        pos += 1
    return pos


def _suffix_shaped(suffix: str) -> bool:
    """parseQuantityString's scan of what follows the number: letters, then an optional sign and digits."""
    pos = _skip(suffix, 0, _SUFFIX_LETTERS)
    pos += pos < len(suffix) and suffix[pos] in "+-"
    return _skip(suffix, pos, _DIGITS) >= len(suffix)


def _quantity_parts(text: str) -> Optional[tuple[bool, str, str, str, str]]:
    """parseQuantityString: (positive, value, numerator, denominator, suffix), or None for ErrFormatWrong."""
    positive, pos = text[:1] != "-", int(text[:1] in ("+", "-"))
    pos = _skip(text, pos, "0")
    if pos >= len(text):
        return positive, "0", "0", "", ""
    start, pos = pos, _skip(text, pos, _DIGITS)
    if pos >= len(text):
        return positive, text, text[start:], "", ""
    num, denom = text[start:pos] or "0", ""
    if text[pos] == ".":
        start, pos = pos + 1, _skip(text, pos + 1, _DIGITS)
        denom = text[start:pos]
        if pos >= len(text):
            return positive, text, num, denom, ""
    value, suffix = text[:pos], text[pos:]
    return (positive, value, num, denom, suffix) if _suffix_shaped(suffix) else None


def _suffix(suffix: str) -> tuple[Optional[int], int]:
    """(base, exponent) of a suffix (`Mi` is (2, 20), `k` and `e3` are (10, 3)); (None, 0) where Go refuses it."""
    for base, suffixes in ((10, _DECIMAL_SUFFIXES), (2, _BINARY_SUFFIXES)):
        if suffix in suffixes:
            return base, suffixes[suffix]
    if len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[+-]?[0-9]+", suffix[1:]):
        exponent = int(suffix[1:])
        if -(1 << 63) <= exponent < (1 << 63):
            return 10, (exponent + (1 << 31)) % (1 << 32) - (1 << 31)  # Go keeps it as an int32
    return None, 0


def _int64_fast_path(base: int, exponent: int, num: str, denom: str) -> bool:
    """Whether Go takes its int64 fast path, which is exact: the digits and the scale fit in an int64."""
    if base == 10:
        fits = 18 - len(num + denom) >= 0 and exponent - len(denom) >= -9
    else:
        fits = exponent >= 0 and not denom and 15 - len(num) - int(exponent * 3 / 10) - 1 >= 0
    return fits and int(num + denom) << (exponent if base == 2 else 0) <= INT64_MAX


def _rounded_as_go(amount: Decimal, base: int) -> Decimal:
    """The slow path's value: rounded up to 1n (Go's smallest scale), and a binary one capped at 2^63-1."""
    import decimal
    exponent = amount.as_tuple().exponent  # an int: the amount is finite (digits, scaled)
    if amount and isinstance(exponent, int) and exponent < -9:
        amount = amount.quantize(decimal.Decimal("1e-9"), rounding=decimal.ROUND_CEILING)
    if base == 2 and amount > INT64_MAX:
        amount = decimal.Decimal(INT64_MAX)
    return amount


@lru_cache(maxsize=4096)  # a sort compares each value many times
def parse_quantity(text: str) -> Optional[Decimal]:
    """resource.ParseQuantity's value as an exact Decimal: rounded up to 1n and binary ones capped at 2^63-1, as
    Go does; None where Go refuses the string (then kubectl compares the strings)."""
    parts = _quantity_parts(text) if text else None
    positive, value, num, denom, suffix = parts or (True, "", "", "", "?")
    base, exponent = _suffix(suffix)
    if base is None:
        return None
    fast = _int64_fast_path(base, exponent, num, denom)
    if not fast and not re.search("[0-9]", value):
        return None  # inf.Dec refuses `.` and its kin
    import decimal  # here, not at start-up
    with decimal.localcontext() as ctx:
        ctx.prec, ctx.Emax, ctx.Emin = decimal.MAX_PREC, decimal.MAX_EMAX, decimal.MIN_EMIN
        amount = decimal.Decimal(num + "." + denom)
        amount = amount.scaleb(exponent) if base == 10 else amount * (1 << exponent)
        amount = amount if fast else _rounded_as_go(amount, base)
        return amount if positive else -amount
