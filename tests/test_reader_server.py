"""The reader checks' local web server: a browser that leaves a page while a file is still
being sent resets the connection; that prints no traceback into the check's output."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import socket
import struct
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _reader_conftest():
    spec = importlib.util.spec_from_file_location("reader_conftest", ROOT / "tests" / "reader" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reset_mid_file(server_class, tmp_path, capfd) -> str:
    """What the server prints when a client resets the connection halfway through a file."""
    (tmp_path / "big.bin").write_bytes(b"x" * (32 << 20))
    handler = functools.partial(_reader_conftest()._QuietHandler, directory=str(tmp_path))
    server = server_class(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = socket.create_connection(server.server_address)
        client.sendall(b"GET /big.bin HTTP/1.0\r\n\r\n")
        client.recv(100)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))   # a reset, not a close
        client.close()
        time.sleep(1.0)
    finally:
        server.shutdown()
        server.server_close()
    return capfd.readouterr().err


def test_a_reset_connection_prints_nothing_where_the_plain_server_prints_a_traceback(tmp_path, capfd):
    printed = _reset_mid_file(http.server.ThreadingHTTPServer, tmp_path, capfd)
    assert "ConnectionResetError" in printed or "BrokenPipeError" in printed, printed
    assert _reset_mid_file(_reader_conftest()._QuietServer, tmp_path, capfd) == ""
