"""A gzip body inflated as it streams, in bounded pieces.

The API server gzips an answer over 128 KiB when asked (``Accept-Encoding: gzip``): a List of 10,000 objects shrinks
4-10x, which matters off the LAN. Inflating piece by piece keeps a page's decoding where it was (one page at a
time); each piece inflates to at most ``PIECE`` bytes, so a gzip bomb meets the caller's size bound after one
piece rather than after it has filled memory.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator

PIECE = 1024 * 1024


def inflate(pieces: Iterable[bytes], broken: Callable[[str], Exception]) -> Iterator[bytes]:
    """The inflated bytes of a gzip stream; ``broken(words)`` is raised for a corrupt or truncated one."""
    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip framing, not zlib's
    try:
        for data in pieces:
            while data and not decoder.eof:
                out = decoder.decompress(data, PIECE)
                data = decoder.unconsumed_tail
                if out:
                    yield out
        if not decoder.eof:
            raise broken("a gzip body cut short")
    except zlib.error:
        raise broken("a broken gzip body") from None
