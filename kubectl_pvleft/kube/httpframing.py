"""What an HTTP/1.1 answer may look like before the client trusts it (RFC 9112): the bounds on its head, chunk sizes
and Content-Length read strictly, and the failures a connection or an answer can end in, each one line."""

from __future__ import annotations

from typing import Optional, Protocol

from kubectl_pvleft.text import shown

MAX_HEADER_BYTES = 256 * 1024  # one status or header line longer than this is not an API server's
MAX_HEAD_BYTES = 1024 * 1024  # the status line and all headers together (kubectl stops at 10 MB; 1 MiB is 50x
                              # what an API server sends, audit and priority-and-fairness headers included)
MAX_HEADER_LINES = 1000
MAX_CHUNK_SIZE_DIGITS = 16  # a chunk size is at most 2^64-1: more hex digits are not a size
RESETS = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)  # the peer ended it, abruptly


class HTTPFailure(Exception):
    """The exchange failed before an answer was complete."""


class ConnectFailed(HTTPFailure):
    """No TCP connection: refused, unreachable, no such host."""


class TLSFailed(HTTPFailure):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TimedOut(HTTPFailure):
    """Connecting, or waiting for the next byte, took longer than allowed."""


class Cut(HTTPFailure):
    """The connection ended mid-answer, or what came is not HTTP/1.1."""


class Closed(Cut):
    """The server closed or reset the connection (not a TLS alert, not a timeout)."""

    def __init__(self, words: str, reset: bool = False) -> None:
        super().__init__(words)
        self.reset = reset


class NoAnswer(Cut):
    """The connection was closed or reset before any byte of the answer: the request may be sent again."""

    def __init__(self, words: str, reset: bool = False) -> None:
        super().__init__(words)
        self.reset = reset


class Malformed(HTTPFailure):
    """The answer breaks HTTP/1.1's framing (RFC 9112): its words say how, e.g. "a malformed chunk size"."""


class TooLarge(HTTPFailure):
    """The answer is larger than any API server's would be (headers, a page, a watch event)."""


def no_answer(exc: BaseException) -> NoAnswer:
    reset = isinstance(exc, RESETS) or (isinstance(exc, Closed) and exc.reset)
    return NoAnswer(f"the server {'reset' if reset else 'closed'} the connection before answering", reset)


def chunk_size(line: bytes) -> int:
    """A chunk-size line's size (RFC 9112 7.1: 1*HEXDIG, then optional extensions after ';'): a sign, a space
    inside the digits, or more digits than a 64-bit size has is a broken answer, never a size."""
    digits = line.split(b";", 1)[0].rstrip(b" \t")
    if not digits or len(digits) > MAX_CHUNK_SIZE_DIGITS or digits.strip(b"0123456789abcdefABCDEF"):
        raise Malformed("a malformed chunk size")
    return int(digits, 16)


def framing(status: int, headers: dict[str, str]) -> tuple[bool, Optional[int]]:
    """(chunked, Content-Length) as RFC 9112 6.3 reads them; anything it calls unrecoverable is Malformed."""
    if status in (204, 304) or 100 <= status < 200:
        return False, 0
    encoding = headers.get("transfer-encoding")
    if encoding is not None:
        codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
        if codings != ["chunked"]:  # gzip is asked for as Content-Encoding, never as a transfer coding
            raise Malformed(f"a Transfer-Encoding this client does not speak ({_shown(encoding)})")
        return True, None  # chunked wins over any Content-Length (RFC 9112 6.3, rule 3)
    length = headers.get("content-length")
    if length is None:
        return False, None
    values = {v.strip() for v in length.split(",")}  # repeated headers were joined with ", "
    value = values.pop() if len(values) == 1 else ""
    if not value or len(value) > 19 or not value.isascii() or not value.isdigit():
        raise Malformed(f"a malformed Content-Length ({_shown(length)})")
    return False, int(value)


def _shown(value: str, limit: int = 40) -> str:
    text = shown(value)
    return text if len(text) <= limit else text[:limit] + "..."


class LineReader(Protocol):
    """Where an answer's head is read from: a connection's next line, its CRLF stripped."""

    def line(self) -> bytes: ...


def read_head(connection: LineReader) -> tuple[int, str, dict[str, str]]:
    lines, size = 0, 0
    while True:
        status_line = connection.line()
        lines, size = lines + 1, size + len(status_line) + 2  # endless 1xx answers count too
        parts = status_line.split(b" ", 2)
        if (len(parts) < 2 or parts[0] not in (b"HTTP/1.1", b"HTTP/1.0") or len(parts[1]) != 3
                or not parts[1].isdigit() or not parts[1].isascii()):
            raise Malformed("not an HTTP/1.1 answer")
        status = int(parts[1])
        headers: dict[str, str] = {}
        while True:
            line = connection.line()
            if not line:
                break
            lines, size = lines + 1, size + len(line) + 2
            if lines > MAX_HEADER_LINES or size > MAX_HEAD_BYTES:
                raise TooLarge(f"headers over {MAX_HEADER_LINES} lines or {MAX_HEAD_BYTES // 1024} KiB")
            name, colon, value = line.partition(b":")
            if not colon or not name or name != name.strip():  # RFC 9112 5.1: no space before the colon
                raise Malformed("a malformed header line")
            key = name.strip().decode("latin-1").lower()
            value_text = value.strip().decode("latin-1")
            headers[key] = f"{headers[key]}, {value_text}" if key in headers else value_text
        if not 100 <= status < 200:  # a 1xx (100 Continue) is followed by the real answer
            return status, parts[2].decode("latin-1") if len(parts) > 2 else "", headers
