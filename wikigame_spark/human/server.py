"""Serve the app until SIGTERM or Ctrl-C, then return, so the caller can record the run.

uvicorn's own handlers re-raise the signal after shutting down, which would kill the process
before the run is recorded; here the signals only ask the server to stop (a second one forces
open connections closed), and :func:`serve` returns normally.

Every request must name, in its ``Host`` header, an address the server listens on
(:class:`HostCheck`): a page of another site whose name was made to resolve here (DNS rebinding)
still sends its own name, and is refused.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import signal
import socket
import urllib.parse

import uvicorn

log = logging.getLogger(__name__)

_WILDCARDS = ("", "0.0.0.0", "::")


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self):
        yield


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


class HostCheck:
    """ASGI middleware: answer 400 to a request whose ``Host`` is not ``host:port`` by one of the
    names this machine serves it under. Listening on one address, that address (and ``localhost``
    for a loopback one, the addresses a host name resolves to); on every address (``0.0.0.0``,
    ``::``), any IP address, ``localhost`` and this machine's own names."""

    def __init__(self, app, host: str, port: int) -> None:
        self.app, self.port = app, port
        self.any_ip = host in _WILDCARDS
        names = {host.lower().strip("[]")}
        ip = _ip(host.strip("[]"))
        if self.any_ip or (ip is not None and ip.is_loopback):
            names.add("localhost")
        if self.any_ip:
            names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
        if ip is None and not self.any_ip:
            with contextlib.suppress(OSError):
                names |= {info[4][0].lower() for info in socket.getaddrinfo(host, port)}
            if any((a := _ip(n)) is not None and a.is_loopback for n in names):
                names.add("localhost")
        self.names = frozenset(names)

    def allows(self, host_header: str) -> bool:
        try:
            parts = urllib.parse.urlsplit(f"//{host_header}")
            port = parts.port
        except ValueError:
            return False
        name = (parts.hostname or "").lower()
        if (port or 80) != self.port or not name or parts.username is not None or parts.path:
            return False
        return name in self.names or (self.any_ip and _ip(name) is not None)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if not self.allows(host):
                body = f"{host!r} is not an address of this server\n".encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 400,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def serve(app, host: str, port: int) -> None:
    """Run ``app`` on host:port until SIGTERM/SIGINT; connections finish or are closed."""
    config = uvicorn.Config(HostCheck(app, host, port), host=host, port=port, log_level="warning", access_log=False)
    server = _Server(config)

    def stop(signum, frame) -> None:
        if server.should_exit:
            server.force_exit = True
        server.should_exit = True
        log.info("signal %d: stopping the server", signum)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.run()
    except SystemExit as e:  # uvicorn exits when it cannot listen
        raise ValueError(f"cannot listen on {host}:{port} (is the port in use?)") from e
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
