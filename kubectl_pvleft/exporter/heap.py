"""Give the C heap's free memory back to the system after a relist.

A relist reads every page of a stream (a page is a megabyte or so of JSON, plus its TLS and gzip buffers) while
the watches of the other streams go on in their own threads. glibc serves those buffers from its heaps, not from
their own mappings (it raises its mmap threshold to the largest block freed so far), and a heap only shrinks from
its top: one block still in use above the freed pages keeps them all. Measured in the soak, Python's own objects
stayed flat across relists (tracemalloc, pymalloc's allocated blocks) while glibc's free-but-mapped bytes grew a
few MiB per outage. ``malloc_trim(0)`` hands every free page of every arena back (MADV_DONTNEED), which is what
Go's scavenger does for client-go after a relist replaces its store. Elsewhere (musl, macOS) there is no such
call and nothing to do.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from typing import Optional


def _malloc_trim() -> Optional[Callable[[int], int]]:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int  # type: ignore[attr-defined]
    return trim


_TRIM = _malloc_trim()


def release_free_memory() -> bool:
    """Return the C heap's free pages to the system; False where the C library has no malloc_trim."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True
