"""Keep the C heap of a long-running exporter from creeping: few heaps, and their free pages given back.

A relist reads every page of a stream (a page is a megabyte or so of JSON, plus its TLS and gzip buffers) while
the watches of the other streams go on in their own threads. glibc serves those buffers from its heaps, not from
their own mappings (it raises its mmap threshold to the largest block freed so far), and a heap only shrinks from
its top: one block still in use above the freed pages keeps them all. Measured in the soak, Python's own objects
stayed flat across relists (tracemalloc, pymalloc's allocated blocks) while glibc's free-but-mapped bytes grew a
few MiB per outage. ``malloc_trim(0)`` hands every free page of every arena back (MADV_DONTNEED), which is what
Go's scavenger does for client-go after a relist replaces its store. Elsewhere (musl, macOS) there is no such
call and nothing to do.

glibc also gives each thread that starts allocating a heap of its own, up to eight per core: a dozen stream threads
and the list readers they start each kept their own free pages and their own top that one live block pins. Two heaps
for the whole process (``mallopt(M_ARENA_MAX, 2)``, what MALLOC_ARENA_MAX=2 does) kept the soak's RSS within about
a MiB across outages where the per-thread heaps still crept a few MiB each (BENCHMARKS.md, "Exporter soak").

The blocks that are large and short-lived (a list page's body, its inflated pieces, an exposition, a store's
table as it resizes) get mappings of their own again, returned whole when freed: glibc's threshold for that starts
at 128 KiB but rises to the largest such block freed (up to 32 MiB), after which the pages of every relist were
carved from the two heaps and left holes there that malloc_trim could not give back (heap free bytes 6 to 19 MiB
over six minutes under churn, RSS following; with the threshold held at 128 KiB, under 1.2 MiB). Setting it, as
MALLOC_MMAP_THRESHOLD_ does, holds it there.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable, Mapping
from typing import Any, Optional

M_ARENA_MAX = -8  # mallopt's parameters in glibc's malloc.h
M_MMAP_THRESHOLD = -3
HEAPS = 2
LARGE_BLOCK = 128 * 1024  # glibc's own starting threshold, held


def _libc_function(name: str, argtypes: list[Any]) -> Optional[Callable[..., int]]:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        function: Callable[..., int] = getattr(libc, name)
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = argtypes, ctypes.c_int  # type: ignore[attr-defined]
    return function


_TRIM = _libc_function("malloc_trim", [ctypes.c_size_t])
_MALLOPT = _libc_function("mallopt", [ctypes.c_int, ctypes.c_int])


def few_heaps(environ: Mapping[str, str] = os.environ) -> bool:
    """At most HEAPS C heaps for every thread of the process, set before the threads start, and large blocks in
    mappings of their own (``map_large_blocks``); False where the C library has no such setting, or the operator
    chose with MALLOC_ARENA_MAX (left as they set it)."""
    map_large_blocks(environ)
    if _MALLOPT is None or "MALLOC_ARENA_MAX" in environ:
        return False
    return _MALLOPT(M_ARENA_MAX, HEAPS) == 1


def map_large_blocks(environ: Mapping[str, str] = os.environ) -> bool:
    """Blocks of LARGE_BLOCK and more in mappings of their own, whatever was freed before (see the module's
    docstring); False where the C library has no such setting, or the operator chose (MALLOC_MMAP_THRESHOLD_, or
    GLIBC_TUNABLES naming it)."""
    if (_MALLOPT is None or "MALLOC_MMAP_THRESHOLD_" in environ
            or "mmap_threshold" in environ.get("GLIBC_TUNABLES", "")):
        return False
    return _MALLOPT(M_MMAP_THRESHOLD, LARGE_BLOCK) == 1


def release_free_memory() -> bool:
    """Return the C heap's free pages to the system; False where the C library has no malloc_trim."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True
