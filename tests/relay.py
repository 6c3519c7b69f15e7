"""A TCP relay on 127.0.0.1 to a real server, for the faults a server cannot be asked to make: it can go
silent (every byte taken, none passed on or answered, no connection closed — a hung host, a network that
drops packets) or refuse (every connection closed, new ones too), then pass traffic again."""

from __future__ import annotations

import contextlib
import socket
import threading
from urllib.parse import urlsplit


class Relay:
    def __init__(self, target: tuple[str, int], port: int = 0) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", port))
        self.port = self.listener.getsockname()[1]
        self.mode = "pass"  # pass, silent or refuse
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def silence(self) -> None:
        """From now on nothing gets through, either way, and nothing is closed."""
        self.mode = "silent"

    def refuse(self) -> None:
        """Every connection closed, and each new one at once."""
        self.mode = "refuse"
        with self._lock:
            for end in self._open:
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
            self._open.clear()

    def resume(self) -> None:
        """Traffic passes again (new connections; one that lost bytes while silent stays broken)."""
        self.mode = "pass"

    def close(self) -> None:
        self.refuse()
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.mode == "refuse":
                client.close()
                continue
            with self._lock:
                self._open.append(client)
            if self.mode == "silent":  # a server that took the connection and never says a word
                threading.Thread(target=self._pipe, args=(client, None), daemon=True).start()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open.append(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket | None) -> None:
        try:
            while data := source.recv(65536):
                if self.mode == "pass" and sink is not None:
                    sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                if end is not None:
                    with contextlib.suppress(OSError):
                        end.shutdown(socket.SHUT_RDWR)


def relay_to(url: str) -> Relay:
    """A relay to the server of URL (a PostgreSQL ledger's, say)."""
    parts = urlsplit(url)
    return Relay((parts.hostname, parts.port or 5432))


def through(relay: Relay, url: str) -> str:
    """URL with RELAY's address for the server's."""
    parts = urlsplit(url)
    return url.replace(f"{parts.hostname}:{parts.port}", f"127.0.0.1:{relay.port}", 1)
