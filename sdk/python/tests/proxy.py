"""A tiny TCP proxy in front of the gateway that misbehaves on the connections a test picks."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Literal
from urllib.parse import urlsplit

#: `forward`: relay both ways. `reset`: close the connection as soon as it is accepted.
#: `drop_response`: relay the request, let the gateway answer, then close without relaying it.
Behaviour = Literal["forward", "reset", "drop_response"]


def _read_request(connection: socket.socket) -> bytes:
    """One HTTP request (its headers and a Content-Length body) from `connection`."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        for sock in (source, target):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class TcpProxy:
    """Listens on 127.0.0.1; `behaviour(n)` decides the fate of the n-th connection (from 0).

    `requests` holds the first request of every connection that got as far as sending one.
    """

    def __init__(self, upstream_url: str, behaviour: Callable[[int], Behaviour]) -> None:
        parts = urlsplit(upstream_url)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._behaviour = behaviour
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._lock = threading.Lock()
        self.connections = 0
        self.requests: list[bytes] = []
        self._closed = False
        threading.Thread(target=self._accept, name="tcp-proxy", daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                number = self.connections
                self.connections += 1
            threading.Thread(
                target=self._serve, args=(client, self._behaviour(number)), daemon=True
            ).start()

    def _serve(self, client: socket.socket, behaviour: Behaviour) -> None:
        if behaviour == "reset":
            client.close()
            return
        request = _read_request(client)
        with self._lock:
            self.requests.append(request)
        upstream = socket.create_connection(self._upstream)
        upstream.sendall(request)
        if behaviour == "drop_response":
            self._await_answer(upstream)
            upstream.close()
            client.close()
            return
        threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()
        _pump(client, upstream)

    @staticmethod
    def _await_answer(upstream: socket.socket) -> None:
        """Read until the gateway's status line and headers arrived: the request was handled."""
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = upstream.recv(65536)
            if not chunk:
                return
            data += chunk
