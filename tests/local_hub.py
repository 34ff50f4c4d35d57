"""Test helper: a Hugging Face hub imitation on 127.0.0.1, serving folders of files.

It answers the endpoints the hub path uses:

* ``GET /api/models/<owner>/<name>/revision/<rev>``: ``{"id", "sha", "siblings"}``;
* ``GET|HEAD /<owner>/<name>/resolve/<rev>/<file>``: the file, honouring ``Range: bytes=a-b``
  (``206`` with ``Content-Range``), with ``ETag`` and ``X-Repo-Commit`` headers.

It counts the body bytes it sends, binds to 127.0.0.1 only, runs in a daemon thread and
shuts itself down after ``lifetime`` seconds at the latest.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class LocalHub:
    def __init__(self, repos: dict[str, Path], lifetime: float = 120.0, range_shift: int = 0,
                 range_header: str | None = None):
        """``range_shift``: a lying mirror that answers a range request with as many bytes from
        ``shift`` further on (its Content-Range honest about them); ``range_header``: a fixed
        Content-Range it sends instead (e.g. none at all: ``""``)."""
        self.repos = {k: Path(v) for k, v in repos.items()}
        self.range_shift, self.range_header = range_shift, range_header
        self.bytes_served = 0
        self.requests: list[tuple[str, str, str]] = []  # (method, path, range)
        self._lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output quiet
                pass

            def _send(self, code, body: bytes, headers=(), head=False):
                self.send_response(code)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    with hub._lock:  # counted before sending, so a client never sees it lag
                        hub.bytes_served += len(body)
                    self.wfile.write(body)

            def _handle(self, head=False):
                path = unquote(self.path.split("?")[0])
                rng = self.headers.get("Range", "")
                with hub._lock:
                    hub.requests.append((self.command, path, rng))
                m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/revision/([^/]+)", path)
                if m:
                    folder = hub.repos.get(m.group(1))
                    if folder is None:
                        return self._send(404, b'{"error": "Repository not found"}')
                    info = {"id": m.group(1), "sha": COMMIT, "siblings": [
                        {"rfilename": p.name} for p in sorted(folder.iterdir()) if p.is_file()]}
                    return self._send(200, json.dumps(info).encode(),
                                      [("Content-Type", "application/json")], head)
                m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
                folder = hub.repos.get(m.group(1)) if m else None
                if folder is None or not (folder / m.group(3)).is_file() or ".." in m.group(3):
                    return self._send(404, b"Entry not found", [("X-Error-Code", "EntryNotFound")])
                data = (folder / m.group(3)).read_bytes()
                headers = [("ETag", '"' + hashlib.sha256(data).hexdigest() + '"'),
                           ("X-Repo-Commit", COMMIT), ("Accept-Ranges", "bytes")]
                r = re.fullmatch(r"bytes=(\d+)-(\d*)", rng)
                if r:
                    start = int(r.group(1))
                    end = min(int(r.group(2)) if r.group(2) else len(data) - 1, len(data) - 1)
                    if start >= len(data):
                        return self._send(416, b"", [("Content-Range", f"bytes */{len(data)}")])
                    if hub.range_shift and start + hub.range_shift + (end - start) < len(data):
                        start, end = start + hub.range_shift, end + hub.range_shift
                    if hub.range_header is None:
                        headers.append(("Content-Range", f"bytes {start}-{end}/{len(data)}"))
                    elif hub.range_header:
                        headers.append(("Content-Range", hub.range_header))
                    return self._send(206, data[start:end + 1], headers, head)
                return self._send(200, data, headers, head)

            def do_GET(self):
                self._handle()

            def do_HEAD(self):
                self._handle(head=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._timer = threading.Timer(lifetime, self.close)
        self._timer.daemon = True

    def __enter__(self):
        self._thread.start()
        self._timer.start()
        return self

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def __exit__(self, *exc):
        self._timer.cancel()
        self.close()


class SilentServer:
    """A socket on 127.0.0.1 that accepts connections and never answers (a silent proxy)."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()


class HostileServer:
    """An HTTP server on 127.0.0.1 that answers every request with ``behaviour``:

    ``"trickle"``: a 200 with a small Content-Length, then one byte every 2 s;
    ``"terabyte"``: a 200 announcing 10^12 bytes, then a few bytes and silence;
    ``"endless"``: a chunked 200 that streams JSON-looking bytes without end;
    ``"slow-headers"``: a status line, then one header byte a second (each wait shorter than
    any socket timeout);
    ``"redirect-loop"``: a 302 back to the very URL asked for;
    ``"slow-redirects"``: after one second, a 302 to a new URL, without end;
    ``"redirect-endless-body"``: a 302 to a new URL whose chunked body never ends;
    ``"deep-json"``: a 200 whose JSON nests 100,000 lists deep.
    It runs in daemon threads and stops with the ``with`` block.
    """

    def __init__(self, behaviour: str):
        self.behaviour = behaviour
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        import time

        try:
            request = conn.recv(65536)
            if self.behaviour == "trickle":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 400\r\n\r\n")
                while not self.stop.is_set():
                    conn.sendall(b"{")
                    time.sleep(2)
            elif self.behaviour == "terabyte":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n{\"a\": ")
                self.stop.wait(60)
            elif self.behaviour == "slow-headers":
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                while not self.stop.is_set():
                    conn.sendall(b"X")
                    time.sleep(1)
            elif self.behaviour in ("redirect-loop", "slow-redirects"):
                path = request.split(b" ")[1].decode() if request.count(b" ") >= 2 else "/"
                if self.behaviour == "slow-redirects":
                    self.stop.wait(1)
                    path = path.split("?")[0] + "?" + str(time.monotonic_ns())
                conn.sendall(f"HTTP/1.1 302 Found\r\nLocation: {self.url}{path}\r\n"
                             "Content-Length: 0\r\nConnection: close\r\n\r\n".encode())
            elif self.behaviour == "redirect-endless-body":
                conn.sendall(f"HTTP/1.1 302 Found\r\nLocation: {self.url}/elsewhere\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n".encode())
                chunk = b"10000\r\n" + b" " * 65536 + b"\r\n"
                while not self.stop.is_set():
                    conn.sendall(chunk)
            elif self.behaviour == "deep-json":
                body = b"[" * 100_000 + b"]" * 100_000
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            elif self.behaviour == "endless":
                conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                block = b" " * 65536
                chunk = f"{len(block):x}\r\n".encode() + block + b"\r\n"
                while not self.stop.is_set():
                    conn.sendall(chunk)
        except OSError:
            pass
        finally:
            conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.sock.close()
