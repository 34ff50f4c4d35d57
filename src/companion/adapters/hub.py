"""Hub ids: headers and tensors through HTTP range reads against ``HF_ENDPOINT``, after one
short probe of the hub, every request time-bounded (no model is downloaded whole)."""

from __future__ import annotations

import json
import os
import struct
import time

import torch

from ..base.errors import CompanionError
from .hf_folder import (_MAX_HEADER, _ST_DTYPES, _check_shard_set, _merge_headers, _relative_names,
                        parse_safetensors_header)
from .tensor_source import TensorSource, _check_config

def _hub_offline() -> bool:
    try:
        from huggingface_hub import constants

        if constants.HF_HUB_OFFLINE:
            return True
    except Exception:  # pragma: no cover
        pass
    return os.environ.get("HF_HUB_OFFLINE", "0").upper() in ("1", "ON", "YES", "TRUE")


HUB_PROBE_TIMEOUT = 3.0  # seconds for the first contact with the hub
HUB_TIMEOUT = 30.0  # seconds to connect and between bytes, for every later request
HUB_MIN_RATE = 16 << 10  # bytes/s: a request may take its timeout plus its bytes at this rate
HUB_MAX_BODY = 64 << 20  # bytes of a whole-file GET (config.json, the API's JSON, an index)


class HubUnreachable(CompanionError):
    """The hub did not answer at all (no network, a silent proxy, a wrong HF_ENDPOINT)."""


def hub_endpoint() -> str:
    """The hub's base URL: ``HF_ENDPOINT`` (read now, not at import) or huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def _hub_headers() -> dict:
    try:
        from huggingface_hub.utils import build_hf_headers

        return dict(build_hf_headers())
    except Exception:  # pragma: no cover - no token, no huggingface_hub: anonymous
        return {}


def _http_get(url: str, start: int | None = None, nbytes: int | None = None,
              timeout: float = HUB_TIMEOUT) -> tuple[bytes, dict]:
    """One bounded GET (a byte range when ``start`` is given): ``(body, headers)``.

    Every request has a timeout; a range request whose answer is not exactly the bytes
    asked for (a server that ignores ``Range``) is refused rather than read in full.
    """
    import http.client

    try:
        return _http_get_once(url, start, nbytes, timeout)
    except http.client.HTTPException as exc:   # a status line, header or chunk no HTTP server sends
        what = " ".join(str(exc).split())[:80]
        raise CompanionError(f"{url} sent {type(exc).__name__}{f' ({what})' if what else ''}, not an HTTP answer a "
                             "hub gives; is HF_ENDPOINT a Hugging Face hub?") from None


class _Deadline:
    """When the current request must be done (``time.monotonic()``); moved on once the
    headers are in, for the body's own allowance."""

    def __init__(self, at: float):
        self.at = at

    def left(self) -> float:
        return self.at - time.monotonic()


class _DeadlineSocket:
    """A connected socket whose every read waits at most what is left of the request's
    deadline (a socket timeout alone bounds each wait, so a server that trickles its headers
    a byte a second would otherwise never time out)."""

    def __init__(self, sock, deadline: _Deadline, per_wait: float | None):
        self._sock, self._deadline, self._per_wait = sock, deadline, per_wait
        self._readers, self._closed = 0, False

    def __getattr__(self, name):
        return getattr(self._sock, name)

    def recv_into(self, buffer, nbytes=0, flags=0):
        import socket

        left = self._deadline.left()
        if left <= 0:
            raise socket.timeout("timed out")
        self._sock.settimeout(left if self._per_wait is None else min(left, self._per_wait))
        return self._sock.recv_into(buffer, nbytes, flags)

    def makefile(self, mode="r", buffering=None, **_):
        import io
        import socket

        if mode != "rb":  # pragma: no cover - http.client reads answers only as "rb"
            return self._sock.makefile(mode, buffering)
        self._readers += 1
        return io.BufferedReader(socket.SocketIO(self, "rb"), buffering or io.DEFAULT_BUFFER_SIZE)

    def _decref_socketios(self):
        self._readers -= 1
        if self._closed and self._readers <= 0:
            self._sock.close()

    def close(self):
        self._closed = True
        if self._readers <= 0:
            self._sock.close()


def _deadline_connection(base, deadline: _Deadline):
    class Connection(base):
        def connect(self):
            import socket

            left = deadline.left()
            if left <= 0:
                raise socket.timeout("timed out")
            per_wait = self.timeout if isinstance(self.timeout, (int, float)) else None
            self.timeout = left if per_wait is None else min(left, per_wait)
            super().connect()
            self.sock = _DeadlineSocket(self.sock, deadline, per_wait)

    return Connection


def _opener(url: str, deadline: _Deadline):
    """A urllib opener for one request: every connection, redirect and header byte within
    ``deadline``; a redirect back to a URL already visited is a loop, named as one."""
    import http.client
    import socket
    import urllib.request

    class HTTP(urllib.request.HTTPHandler):
        def http_open(self, req):
            return self.do_open(_deadline_connection(http.client.HTTPConnection, deadline), req)

    class HTTPS(urllib.request.HTTPSHandler):
        def https_open(self, req):
            return self.do_open(_deadline_connection(http.client.HTTPSConnection, deadline), req,
                                context=self._context)

    class Redirect(urllib.request.HTTPRedirectHandler):
        max_redirections = 10
        visited = [url]

        def redirect_request(self, req, fp, code, msg, headers, newurl):
            fp.close()  # its body is not read: a redirect's body may be endless
            if newurl in self.visited:
                raise CompanionError(f"{url} answers with a redirect loop (HTTP {code} back to {newurl} "
                                     f"after {len(self.visited)} hop(s)); check HF_ENDPOINT or the mirror.")
            if len(self.visited) > self.max_redirections:
                raise CompanionError(f"{url} redirects more than {self.max_redirections} times (last to "
                                     f"{newurl}); check HF_ENDPOINT or the mirror.")
            if deadline.left() <= 0:
                raise socket.timeout("timed out")
            self.visited = self.visited + [newurl]
            new = super().redirect_request(req, fp, code, msg, headers, newurl)
            if new is not None and not _same_origin(req.full_url, newurl):
                # urllib copies every header into the redirected request: the hub token would
                # go to whatever host the answer names (a CDN, a mirror's storage); as
                # requests and httpx do, it goes only to the host it was meant for
                new.remove_header("Authorization")
                new.remove_header("Cookie")
            return new

    return urllib.request.build_opener(HTTP, HTTPS, Redirect)


def _same_origin(old: str, new: str) -> bool:
    """Whether a redirect from ``old`` to ``new`` stays with the same server: host and port the
    same, and the scheme the same or raised from http to https (the default ports counted as
    such); any other redirect must not carry the credentials sent to ``old``."""
    from urllib.parse import urlsplit

    a, b = urlsplit(old), urlsplit(new)
    ports = {"http": 80, "https": 443}
    try:
        pa, pb = a.port or ports.get(a.scheme), b.port or ports.get(b.scheme)
    except ValueError:   # a port that is no number: not the same server
        return False
    if (a.hostname or "").lower() != (b.hostname or "").lower():
        return False
    if a.scheme == b.scheme:
        return pa == pb
    return (a.scheme, b.scheme) == ("http", "https") and (pa, pb) == (80, 443)


def _http_get_once(url: str, start: int | None, nbytes: int | None, timeout: float) -> tuple[bytes, dict]:
    import urllib.error
    import urllib.request

    headers = _hub_headers()
    if start is not None:
        headers["Range"] = f"bytes={start}-{start + nbytes - 1}"
    req = urllib.request.Request(url, headers=headers)
    t0 = time.monotonic()
    # one deadline for connecting, every redirect and the headers; then the body's allowance
    deadline = _Deadline(t0 + timeout)
    with _opener(url, deadline).open(req, timeout=timeout) as response:
        if start is not None and response.status != 206 and not (start == 0 and response.status == 200
                                                                    and response.length == nbytes):
            raise CompanionError(f"{url} ignored the byte-range request (HTTP {response.status}); "
                                 "a hub mirror must support Range requests.")
        if start is not None and response.status == 206:
            _check_content_range(url, response.headers.get("Content-Range"), start, nbytes)
        limit = HUB_MAX_BODY if start is None else nbytes
        deadline.at = t0 + timeout + (limit + 1) / HUB_MIN_RATE
        data = _read_bounded(response, url, limit, t0, timeout)
        info = {k.lower(): v for k, v in response.headers.items()}
    if start is not None and len(data) != nbytes:
        raise CompanionError(f"range request to {url} returned {len(data)} bytes, not {nbytes}.")
    return data, info


def _check_content_range(url: str, header: str | None, start: int, nbytes: int) -> None:
    """A 206 answer must say it holds exactly the bytes asked for (``Content-Range: bytes
    a-b/total`` with ``a = start`` and ``b = start + nbytes - 1``): a mirror that answers with
    the right count from another offset would otherwise be read as the tensor asked for, and
    score a wrong matrix."""
    import re

    m = re.fullmatch(r"\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*", header or "")
    if not m:
        raise CompanionError(f"{url} answered a byte-range request without a valid Content-Range "
                             f"({str(header)[:60]!r}); a hub mirror must say which bytes it sends.")
    first, last = int(m.group(1)), int(m.group(2))
    if (first, last) != (start, start + nbytes - 1):
        raise CompanionError(f"{url} sent bytes {first}-{last} for a request of bytes {start}-{start + nbytes - 1}; "
                             "a mirror that answers from another offset would give a wrong score. Check HF_ENDPOINT.")


def _read_bounded(response, url: str, limit: int, t0: float, timeout: float) -> bytes:
    """The body of ``response``, refused when it announces or sends more than ``limit``
    bytes (never allocated), and cut off when it arrives slower than ``timeout`` plus its
    bytes at :data:`HUB_MIN_RATE` (the socket's timeout bounds only each wait between bytes,
    so a server trickling one byte at a time would otherwise never time out)."""
    import socket

    length = response.length
    if length is not None and length > limit + 1:
        raise CompanionError(f"{url} announces a body of {length:,} bytes, more than the {limit:,} asked "
                             "for or expected; is HF_ENDPOINT a Hugging Face hub?")
    chunks, total = [], 0
    while True:
        # read1: what has arrived (one socket read), so the deadline is checked while a
        # slow server trickles; read() would wait for the whole amount
        want = min(1 << 16, limit + 1 - total)
        chunk = response.read1(want) if hasattr(response, "read1") else response.read(want)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise CompanionError(f"{url} sent more than the {limit:,} bytes asked for or expected; is "
                                 "HF_ENDPOINT a Hugging Face hub?")
        if time.monotonic() - t0 > timeout + total / HUB_MIN_RATE:
            raise socket.timeout(f"timed out: {total:,} bytes in {time.monotonic() - t0:.0f} s")
    return b"".join(chunks)


def _http_range(url: str, start: int, nbytes: int) -> bytes:
    """``nbytes`` bytes of ``url`` from ``start`` with one HTTP range request."""
    return _http_get(url, start, nbytes)[0]


def _hub_error(exc: Exception, repo_id: str, revision: str | None, endpoint: str,
               timeout: float) -> CompanionError:
    """One line for a failed hub request, naming the cause and what to do."""
    import socket
    import urllib.error

    at = f" at revision {revision}" if revision else ""
    if isinstance(exc, urllib.error.HTTPError):
        if exc.code in (401, 403):
            return CompanionError(
                f"the hub refused access to {repo_id}{at} (HTTP {exc.code}): a gated or private "
                "repository; log in with `hf auth login` and accept its licence on the hub.")
        if exc.code == 404:
            return CompanionError(f"no repository {repo_id!r}{at} on the hub at {endpoint} "
                                  "(HTTP 404); check the owner/name and the revision.")
        return CompanionError(f"the hub at {endpoint} answered HTTP {exc.code} for {repo_id}{at}; "
                              "try again later or pass a local folder.")
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, (socket.timeout, TimeoutError)) or "timed out" in str(reason):
        why = f"no answer within {timeout:g} s"
    else:
        why = str(reason) or type(reason).__name__
    return HubUnreachable(
        f"cannot reach the hub at {endpoint} ({why}) to read {repo_id}; check the network "
        "or proxy, or pass a local folder (set HF_HUB_OFFLINE=1 to never try the hub)."
    )


def probe_hub(repo_id: str, revision: str | None = None,
              timeout: float = HUB_PROBE_TIMEOUT) -> dict:
    """Ask the hub once, with a short timeout, about ``repo_id``: its commit and files.

    Returns the JSON of ``/api/models/<repo_id>/revision/<revision>`` (``sha``,
    ``siblings``).  Raises :class:`HubUnreachable` when the hub does not answer and
    :class:`CompanionError` for a missing, gated or private repository.
    """
    return _probe_hub(repo_id, revision, timeout)[0]


def check_hub_id(repo_id) -> str:
    """``repo_id`` when it is a hub id the hub itself accepts (``name`` or ``owner/name``: letters, digits,
    ``-``, ``_``, ``.``, not at either end, no ``..`` or ``--``, at most 96 characters a part, not ending
    in ``.git``), else a one-line refusal, before any request: the id is put into the request's URL,
    where ``..``, ``?`` or ``#`` would name another resource."""
    from ..base.paths import is_hub_id

    if not is_hub_id(repo_id):
        shown = ascii(repo_id if not isinstance(repo_id, str) or len(repo_id) <= 80 else repo_id[:80] + "...")
        raise CompanionError(f"{shown} is not a hub id: use 'owner/name' of letters, digits, '-', '_' and '.' "
                             "(not at either end, no '..' or '--', at most 96 characters each).")
    return repo_id


def _probe_hub(repo_id: str, revision: str | None, timeout: float) -> tuple[dict, int]:
    import urllib.parse

    check_hub_id(repo_id)
    if revision is not None and (not isinstance(revision, str) or revision in (".", "..")):
        # quote('..', safe='') stays '..': a dot segment, which names the resource above
        raise CompanionError(f"revision {revision!r} is not a branch, tag or commit of {repo_id}; pass one, or none "
                             "for main.")
    endpoint = hub_endpoint()
    rev = urllib.parse.quote(revision or "main", safe="")
    url = f"{endpoint}/api/models/{repo_id}/revision/{rev}"
    try:
        raw, _ = _http_get(url, timeout=timeout)
        info = json.loads(raw)
    except CompanionError:
        raise
    except (OSError, ValueError, RecursionError) as exc:   # RecursionError: JSON nested too deep
        if isinstance(exc, (ValueError, RecursionError)) and not isinstance(exc, OSError):
            raise CompanionError(f"the hub at {endpoint} sent malformed model information for "
                                 f"{repo_id}; is HF_ENDPOINT a Hugging Face hub?") from None
        raise _hub_error(exc, repo_id, revision, endpoint, timeout) from None
    import re

    siblings = info.get("siblings", []) if isinstance(info, dict) else None
    # the commit goes into every later URL: '..' there named another file (the hub's are 40 hex digits)
    if (not isinstance(siblings, list) or not re.fullmatch(r"(?:[0-9a-fA-F]{40})?", str(info.get("sha") or ""))
            or not all(isinstance(s.get("rfilename", ""), str) for s in siblings if isinstance(s, dict))):
        raise CompanionError(f"the hub at {endpoint} sent malformed model information for "
                             f"{repo_id}; is HF_ENDPOINT a Hugging Face hub?")
    return info, len(raw)


def _is_commit(revision) -> bool:
    """A revision that names one commit (40 hexadecimal digits), not a branch or a tag that moves."""
    import re

    return isinstance(revision, str) and re.fullmatch(r"[0-9a-fA-F]{40}", revision) is not None


class HubSafetensorsSource(TensorSource):
    """A hub repository read through HTTP range requests: headers, then q/k tensors only.

    The hub is asked once, with a short timeout, for the repository's commit and file
    list (:func:`probe_hub`); every later request is pinned to that commit and bounded
    by :data:`HUB_TIMEOUT`.  Headers and indexes are validated as for local folders.
    """

    kind = "hub-safetensors"

    def __init__(self, repo_id: str, revision: str | None = None):
        super().__init__(repo_id)
        self.revision = revision
        import logging

        check_hub_id(repo_id)   # a bad id is refused before anything is logged or sent
        # logged (a command line says it on its own output: `companion score` before it reads)
        logging.getLogger("companion.progress").info(
            "reading %s%s from the hub at %s over the network (headers and query/key tensors only; "
            "HF_HUB_OFFLINE=1 forbids it)", repo_id, f" at {revision}" if revision else "", hub_endpoint())
        info, probe_bytes = _probe_hub(repo_id, revision, HUB_PROBE_TIMEOUT)
        self.commit = info.get("sha") or revision or "main"
        if _is_commit(revision) and self.commit.lower() != revision.lower():
            # every later request went to the commit answered, while the scores recorded the pinned one
            raise CompanionError(f"the hub at {hub_endpoint()} answered commit {self.commit} for {repo_id} pinned "
                                 f"at {revision}; a mirror that serves another commit would be scored as the pinned "
                                 "one: check HF_ENDPOINT, or pin the commit the mirror holds.")
        siblings = {s.get("rfilename") for s in info.get("siblings", []) if isinstance(s, dict)}
        endpoint = hub_endpoint()
        try:
            raw, _ = _http_get(self._url("config.json"))
            self.bytes_read = probe_bytes + len(raw)
            try:
                config = json.loads(raw)
            except (ValueError, RecursionError):
                raise CompanionError(f"config.json of {repo_id} on the hub is not valid JSON; "
                                     "the repository is broken.") from None
            self.config = _check_config(config, f"config.json of {repo_id}")
            weight_map = None
            if "model.safetensors" in siblings:
                files = ["model.safetensors"]
            elif "model.safetensors.index.json" in siblings:
                where = f"model.safetensors.index.json of {repo_id}"
                raw, _ = _http_get(self._url("model.safetensors.index.json"))
                self.bytes_read += len(raw)
                try:
                    idx = json.loads(raw)
                except (ValueError, RecursionError):
                    idx = None
                wm = idx.get("weight_map") if isinstance(idx, dict) else None
                if not isinstance(wm, dict) or not wm or not all(
                        isinstance(k, str) and isinstance(v, str) for k, v in wm.items()):
                    raise CompanionError(f"{where} has no weight_map of tensor names to file "
                                         "names; the index is malformed.")
                _relative_names(set(wm.values()), where)
                files = sorted(set(wm.values()))
                _check_shard_set(files, where)
                weight_map = wm
            else:
                raise CompanionError(
                    f"{repo_id} has no model.safetensors or model.safetensors.index.json on the "
                    "hub; for pytorch_model.bin weights download the folder and pass it with "
                    "--allow-pickle.")
            headers = []
            self._header_len: dict[str, int] = {}
            for fname in files:
                url = self._url(fname)
                head, meta = _http_get(url, 0, 8)
                (n,) = struct.unpack("<Q", head)
                total = meta.get("content-range", "").rpartition("/")[2]
                size = int(total) if total.isdigit() else None
                if n > _MAX_HEADER or (size is not None and n > size - 8):
                    raise CompanionError(f"{fname} of {repo_id} is not a valid safetensors file "
                                         f"(header length {n}).")
                try:
                    header = parse_safetensors_header(
                        _http_range(url, 8, n), None if size is None else size - 8 - n)
                except (ValueError, RecursionError) as exc:
                    raise CompanionError(f"{fname} of {repo_id} is not a valid safetensors file "
                                         f"({exc}).") from None
                self._header_len[fname] = n
                self.bytes_read += 8 + n
                headers.append((fname, header))
        except CompanionError:
            raise
        except OSError as exc:
            raise _hub_error(exc, repo_id, revision, endpoint, HUB_TIMEOUT) from None
        self._where = _merge_headers(headers, weight_map, f"the index of {repo_id}")
        self.dtypes = {}
        for name, (fname, info) in self._where.items():
            self.shapes[name] = tuple(info["shape"])
            self.dtypes[name] = info["dtype"]

    def _url(self, fname: str) -> str:
        import urllib.parse

        return (f"{hub_endpoint()}/{self.location}/resolve/"
                f"{urllib.parse.quote(self.commit, safe='')}/{urllib.parse.quote(fname)}")

    def stored_nbytes(self, name: str) -> int:
        start, end = self._where[name][1]["data_offsets"]
        return end - start

    def row_bytes(self, name: str, first: int, n: int) -> bytes:
        """Rows ``first`` to ``first + n`` of a stored tensor: one range request of their bytes."""
        fname, info = self._where[name]
        start, end = info["data_offsets"]
        row = (end - start) // info["shape"][0]
        try:
            raw = _http_range(self._url(fname), 8 + self._header_len[fname] + start + first * row, n * row)
        except CompanionError:
            raise
        except OSError as exc:
            raise _hub_error(exc, self.location, self.revision, hub_endpoint(), HUB_TIMEOUT) from None
        self.bytes_read += n * row
        return bytes(raw)

    def _load(self, name: str) -> torch.Tensor:
        fname, info = self._where[name]
        dtype = _ST_DTYPES.get(info["dtype"])
        if dtype is None:
            raise CompanionError(f"tensor {name!r} has unsupported dtype {info['dtype']}.")
        start, end = info["data_offsets"]
        if end == start:
            return torch.zeros(tuple(info["shape"]), dtype=dtype)
        base = 8 + self._header_len[fname]
        try:
            buf = bytearray(_http_range(self._url(fname), base + start, end - start))
        except CompanionError:
            raise
        except OSError as exc:
            raise _hub_error(exc, self.location, self.revision, hub_endpoint(), HUB_TIMEOUT) from None
        self.bytes_read += end - start
        return torch.frombuffer(buf, dtype=dtype).reshape(tuple(info["shape"]))


