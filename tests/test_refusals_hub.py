"""The hub client and what names a model on it: malformed model information from the hub,
an endpoint that does not speak HTTP, a source that is neither an existing path nor a hub
id, ``--revision`` given with a local folder, each one line.  (The online mirror's range
answers, deadline and redirects: tests/test_online_hub.py.)"""

from __future__ import annotations

import contextlib
import json
import threading

import pytest

import malformed as bad
from one_line import one_line_error


# ---------------------------------------------------------------- a local path or a hub id


def test_revision_with_a_local_folder_is_refused_not_ignored(tmp_path, capsys):
    bad.tiny_llama(tmp_path, layers=1)
    one_line_error(["score", str(tmp_path), "--revision", "v2.0", "--quiet"], capsys, "--revision", "local path")


@pytest.mark.parametrize("source, words", [
    ("a" * 5000, "cannot be looked up as a path"),
    ("~no-such-user-anywhere/model", "neither an existing path nor a hub id"),
])
def test_a_source_the_system_cannot_look_up_is_one_line(capsys, monkeypatch, source, words):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    line = one_line_error(["score", source, "--quiet"], capsys, words)
    assert len(line) < 600



# ---------------------------------------------------------------- malformed hub answers


def _answering_hub(monkeypatch, api: dict):
    from companion.adapters import hub

    def get(url, start=None, nbytes=None, timeout=None):
        if "/api/models/" in url:
            return json.dumps(api).encode(), {}
        if url.endswith("config.json"):
            return json.dumps({"model_type": "llama"}).encode(), {}
        raise AssertionError(f"asked for {url}")

    monkeypatch.setattr(hub, "_hub_offline", lambda: False)
    monkeypatch.setattr(hub, "_http_get", get)


@pytest.mark.parametrize("api", [
    {"sha": 5, "siblings": [{"rfilename": "model.safetensors"}]},
    {"sha": ["abc"], "siblings": []},
    {"sha": "abc", "siblings": [{"rfilename": ["model.safetensors"]}]},
    {"sha": "abc", "siblings": [{"rfilename": {"a": 1}}]},
])
def test_malformed_model_information_from_the_hub_is_one_line(monkeypatch, capsys, api):
    _answering_hub(monkeypatch, api)
    one_line_error(["score", "someone/model", "--quiet"], capsys, "malformed model information")


@pytest.mark.parametrize("answer, words", [
    (b"HELLO WORLD\r\n\r\n", "not an HTTP answer"),
    (b"{}", "not an HTTP answer"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "not an HTTP answer"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70000 + b"\r\n\r\n", "not an HTTP answer"),
    (b"HTTP/1.1 200 OK\r\n" + b"X: a\r\n" * 200 + b"\r\n", "not an HTTP answer"),
])
def test_a_hub_that_does_not_speak_http_is_one_line(monkeypatch, capsys, answer, words):
    import socket

    from companion.adapters import hub

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with contextlib.suppress(OSError):
                conn.recv(65536)
                conn.sendall(answer)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    monkeypatch.setattr(hub, "_hub_offline", lambda: False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    try:
        one_line_error(["score", "someone/model", "--quiet"], capsys, words, within_s=30)
    finally:
        server.close()
