"""A TCP proxy on loopback that behaves like a slow link: a one-way delay and a shared rate each way.

Used by compression.py in place of `tc qdisc ... netem` on a veth pair, because this machine's kernel has
no netem (`tc qdisc add ... netem` answers "Specified qdisc kind is unknown"; tbf is there, but it only
limits the rate). Every byte the client or the server sends is held until the link would have carried
it: bytes leave in order, at most ``rate`` bits per second per direction for all connections together
(the plugin reads several lists at once over several connections, and they share one link), and each
arrives ``delay`` seconds after it left. What it does not model: TCP's slow start and loss (the sockets
on either side are loopback ones with large windows), so the figures are a link's best case. It also
counts the bytes that crossed it each way, which is the TLS traffic as it would be on the wire.
"""

from __future__ import annotations

import collections
import socket
import threading
import time
from typing import Optional

PIECE = 64 * 1024  # one read from a socket
QUEUED_MAX = 4 * 1024 * 1024  # bytes in flight per direction and connection before the reader waits


class Direction:
    """One way of the link: when it is next free, and how many bytes it has carried."""

    def __init__(self, rate_bits: Optional[float], delay: float) -> None:
        self.rate_bits, self.delay = rate_bits, delay
        self.free_at = 0.0
        self.bytes = 0
        self._lock = threading.Lock()

    def due(self, size: int) -> float:
        """When `size` bytes handed over now reach the other end: after the bytes before them have left,
        their own serialisation time, and the delay."""
        with self._lock:
            self.bytes += size
            now = time.monotonic()
            start = max(now, self.free_at)
            self.free_at = start + (size * 8 / self.rate_bits if self.rate_bits else 0.0)
            return self.free_at + self.delay


class _Pipe:
    """Bytes from one socket to another through a Direction: a reader that stamps them, a writer that
    sends each piece when it is due (and the end of the stream when that is due)."""

    def __init__(self, source: socket.socket, target: socket.socket, direction: Direction) -> None:
        self.source, self.target, self.direction = source, target, direction
        self.queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self.queued = 0
        self.ready = threading.Condition()

    def start(self) -> list[threading.Thread]:
        threads = [threading.Thread(target=self._read, daemon=True), threading.Thread(target=self._write, daemon=True)]
        for thread in threads:
            thread.start()
        return threads

    def _read(self) -> None:
        while True:
            try:
                data = self.source.recv(PIECE)
            except OSError:
                data = b""
            with self.ready:
                while self.queued > QUEUED_MAX:
                    self.ready.wait()
                self.queue.append((self.direction.due(len(data)) if data else time.monotonic() + self.direction.delay,
                                   data))
                self.queued += len(data)
                self.ready.notify_all()
            if not data:
                return

    def _write(self) -> None:
        while True:
            with self.ready:
                while not self.queue:
                    self.ready.wait()
                due, data = self.queue.popleft()
                self.queued -= len(data)
                self.ready.notify_all()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                if not data:
                    self.target.shutdown(socket.SHUT_WR)
                    return
                self.target.sendall(data)
            except OSError:
                self.source.close()  # the reader's next recv fails and ends it
                return


class LinkShaper:
    """Listens on 127.0.0.1 (an ephemeral port) and forwards each connection to `upstream` over the link."""

    def __init__(self, upstream: tuple[str, int], delay_ms: float, rate_mbit: Optional[float]) -> None:
        self.upstream = upstream
        self.up = Direction(rate_mbit * 1e6 if rate_mbit else None, delay_ms / 1000)
        self.down = Direction(rate_mbit * 1e6 if rate_mbit else None, delay_ms / 1000)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def counters(self) -> tuple[int, int, int]:
        """(bytes sent to the server, bytes sent to the client, connections) so far."""
        return self.up.bytes, self.down.bytes, self.connections

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        # The client's first bytes leave one round trip after it connected (SYN, SYN-ACK), as over a real link.
        time.sleep(self.up.delay + self.down.delay)
        try:
            server = socket.create_connection(self.upstream)
        except OSError:
            client.close()
            return
        for sock in (client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threads = _Pipe(client, server, self.up).start() + _Pipe(server, client, self.down).start()
        for thread in threads:
            thread.join()
        client.close()
        server.close()

    def close(self) -> None:
        self.listener.close()
