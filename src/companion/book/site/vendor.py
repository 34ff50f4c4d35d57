"""Front-end files from the npm registry, pinned and checked against the registry's sha512.

The book and its checks use two npm packages, fetched once at set-up and used offline:
reveal.js (the lecture slides, :mod:`companion.book.editions.slides`) and axe-core (the accessibility
audit of the reader checks, :mod:`companion.book.checks.a11y`).  :func:`npm_package` fetches one with
``npm pack``, checks the tarball against the integrity string the registry publishes
(``npm view <name>@<version> dist.integrity``) before anything is extracted, and keeps the
files under the cache (``$COMPANION_CACHE/vendor``).  A mismatch is an error naming both
digests; nothing is used then.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

__all__ = ["integrity_of", "npm_package", "AXE_VERSION", "AXE_INTEGRITY", "vendor_axe"]

AXE_VERSION = "4.10.3"
#: the npm registry's integrity string for axe-core 4.10.3 (``npm view axe-core@4.10.3 dist.integrity``)
AXE_INTEGRITY = "sha512-Xm7bpRXnDSX2YE2YFfBk2FnF0ep6tmG7xPh8iHee8MIcrgq762Nkce856dYtJYLkuIoYZvGfTs/PbZhideTcEg=="


def integrity_of(data: bytes) -> str:
    """The npm integrity string (``sha512-<base64>``) of a tarball's bytes."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def check_integrity(tgz: Path, name: str, version: str, integrity: str) -> None:
    """Raise if the tarball's sha512 differs from the registry's integrity string."""
    digest = integrity_of(Path(tgz).read_bytes())
    if digest != integrity:
        raise RuntimeError(f"{name} {version} from npm has digest {digest}, expected "
                           f"{integrity}; not using it")


def extract(tgz: Path, dest: Path, prefix: str) -> Path:
    """The files of the tarball under ``package/<prefix>`` extracted into ``dest`` (returned)."""
    with tempfile.TemporaryDirectory(dir=Path(dest).parent) as tmp:
        part = Path(tmp) / "x"
        root = f"package/{prefix}".rstrip("/")
        with tarfile.open(tgz) as tar:
            members = [m for m in tar.getmembers() if m.isfile() and
                       (m.name == root or m.name.startswith(root + "/"))]
            if not members:
                raise RuntimeError(f"{tgz.name} has no file under {root}")
            try:   # a member that would land outside its folder (``..``, an absolute path) stops it
                tar.extractall(part, members=members, filter="data")
            except tarfile.TarError as err:
                raise RuntimeError(f"{tgz.name}: {' '.join(str(err).split())}; not using it") from None
        shutil.move(str(part / root), dest)
    return Path(dest)


def npm_package(name: str, version: str, integrity: str, prefix: str, check_file: str,
                cache: Path | None = None) -> Path:
    """``<cache>/<name>-<version>``: the package's files under ``prefix`` (``""``: all of
    ``package/``), fetched from the npm registry once and checked against ``integrity``.

    ``check_file`` (relative to the returned folder) marks a complete earlier fetch.
    """
    from ...base.cache import cache_dir, ensure_dir

    cache = ensure_dir(cache) if cache is not None else cache_dir("vendor")
    dest = cache / f"{name}-{version}"
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):   # never read, emptied or written through
        kind = "symbolic link" if dest.is_symlink() else "file" if dest.is_file() else "FIFO, device or socket"
        raise RuntimeError(f"{dest} is a {kind}, where the cache keeps "
                           f"{name} {version}'s files; remove it (the package is fetched again), or copy the "
                           "files there as a folder.")
    if (dest / check_file).is_file():
        return dest
    if dest.is_dir() and any(dest.iterdir()):   # a copy made by hand (as the refusals below suggest), never emptied
        raise RuntimeError(f"{dest} holds files but no {check_file}, so it is no complete copy of {name} {version}, and "
                           f"it is left as it is; copy the package's whole {prefix or 'package'}/ folder there, or "
                           "remove the folder and the package is fetched again.")
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        try:
            subprocess.run(["npm", "pack", f"{name}@{version}", "--pack-destination", tmp, "--silent"],
                           check=True, capture_output=True, text=True, timeout=300)
        except FileNotFoundError as err:
            raise RuntimeError(f"fetching {name} needs npm (Node.js); install it, or copy {name} "
                               f"{version}'s {prefix or 'package'}/ folder to {dest}") from err
        except subprocess.CalledProcessError as err:
            raise RuntimeError(f"npm could not fetch {name} {version}: {err.stderr.strip()[-300:]}") from err
        tgz = next(Path(tmp).glob(f"{name}-*.tgz"), None)
        if tgz is None:
            raise RuntimeError(f"npm pack wrote no tarball of {name} {version}; check npm's registry settings, or "
                               f"copy {name} {version}'s {prefix or 'package'}/ folder to {dest}")
        check_integrity(tgz, name, version, integrity)
        if dest.is_dir():   # empty (checked above): the extracted folder takes its place
            dest.rmdir()
        extract(tgz, dest, prefix)
    if not (dest / check_file).is_file():
        raise RuntimeError(f"{name} {version} from npm lacks {check_file}")
    return dest


def vendor_axe(cache: Path | None = None) -> Path:
    """``axe.min.js`` of axe-core :data:`AXE_VERSION` (fetched once, sha512-checked)."""
    return npm_package("axe-core", AXE_VERSION, AXE_INTEGRITY, "", "axe.min.js", cache) / "axe.min.js"


if __name__ == "__main__":  # python -m companion.book.site.vendor: fetch axe-core (reveal.js: slides --vendor-only)
    print(vendor_axe())
