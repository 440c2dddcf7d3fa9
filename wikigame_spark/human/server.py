"""Serve the app until SIGTERM or Ctrl-C, then return, so the caller can record the run.

uvicorn's own handlers re-raise the signal after shutting down, which would kill the process
before the run is recorded; here the signals only ask the server to stop (a second one forces
open connections closed), and :func:`serve` returns normally.
"""

from __future__ import annotations

import contextlib
import logging
import signal

import uvicorn

log = logging.getLogger(__name__)


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self):
        yield


def serve(app, host: str, port: int) -> None:
    """Run ``app`` on host:port until SIGTERM/SIGINT; connections finish or are closed."""
    server = _Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False))

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
