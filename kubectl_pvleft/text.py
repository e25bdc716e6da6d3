"""A user's or a server's text inside our own messages, made safe once: what every layer uses to quote a value
it did not write (a name, a path, a server's message, a flag value)."""

from __future__ import annotations

from typing import Optional, TextIO


def shown(text: str) -> str:
    """Undecodable bytes (surrogate escapes) and control characters escaped, never sent raw to a terminal: a
    hostile object's escape sequences and line breaks are printed as ``\\x1b`` and ``\\n``."""
    if text.isprintable():
        return text
    raw = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in raw)


def one_line(text: str) -> str:
    """Runs of blanks and line breaks as one space: a message that must stay one line."""
    return " ".join(text.split())


def warn(message: str, err: Optional[TextIO] = None) -> None:
    """One ``warning:`` line on stderr, escaped and kept on one line, as the ``error:`` line is: a name from a
    kubeconfig or a server (a context's user name with a line break in it) can never print a line of its own."""
    if err is None:  # above the status line, if one is shown
        from kubectl_pvleft import progress

        progress.line(f"warning: {one_line(shown(message))}")
        return
    print(f"warning: {one_line(shown(message))}", file=err, flush=True)


def cut_at_a_word(text: str, width: int) -> str:
    """``text`` on at most ``width`` characters: cut after a whole word, never inside one, "..." saying it was cut."""
    if len(text) <= width:
        return text
    cut = text[:width - 3].rsplit(" ", 1)[0].rstrip(" ,;:")
    return cut + "..."
