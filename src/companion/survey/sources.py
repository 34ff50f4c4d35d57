"""Where the survey finds a checkpoint's weights (:func:`resolve_source`): a local folder,
the offline zoo, an installed package, the Hugging Face cache or the hub; and the
fingerprint of what it read."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

__all__ = ["Unavailable", "SurveySource", "resolve_source"]


class Unavailable(Exception):
    """The checkpoint cannot be reached here; the message says why and what would help."""


@dataclass
class SurveySource:
    """Where one checkpoint's weights will be read from."""

    location: str
    kind: str  # "local", "package", "hub-cache" or "hub"
    revision: str | None = None


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on")


def _package_path(spec: str) -> Path:
    """``pkg:module[/file]`` -> a path, without importing the module."""
    module, _, rel = spec[len("pkg:"):].partition("/")
    try:
        found = importlib.util.find_spec(module) if module else None
    except (ImportError, ValueError):   # 'pkg:..' is a relative module name: a raw ImportError
        found = None
    if found is None or not found.submodule_search_locations:
        raise Unavailable(f"the package {module!r} is not installed "
                          f"(pip install --no-deps {module.replace('_', '-')}).")
    root = Path(list(found.submodule_search_locations)[0])
    if rel:
        path = root / rel
        inside = os.path.realpath(path)
        if os.path.commonpath([inside, os.path.realpath(root)]) != os.path.realpath(root):
            # 'pkg:mod//etc/passwd' and 'pkg:mod/../../x' named a path outside the package
            raise Unavailable(f"{spec!r} names a path outside the installed package {module!r}; name a file inside it "
                              "(pkg:module/relative/path).")
    else:
        # gt_* packages keep their model folder in a 'model' subfolder
        path = root / "model" if (root / "model").is_dir() else root
    if not path.exists():
        raise Unavailable(f"{path} is missing from the installed package {module!r}.")
    return path


def resolve_source(entry: pd.Series | dict, local_dir: str | Path | None = None,
                   online: bool | None = None) -> SurveySource:
    """Find the weights of one catalog entry, or raise :class:`Unavailable` with the reason.

    Order: ``<local_dir>/<key>`` or ``<local_dir>/<owner>--<name>`` (a folder or a
    ``.gguf`` file); the catalog's ``local`` column (``pkg:module[/file]``); the Hugging
    Face cache; the hub itself when ``online`` (default: unless ``HF_HUB_OFFLINE`` is set).
    """
    key, hub_id = entry["key"], entry["hub_id"]
    if not isinstance(hub_id, str) or not hub_id:   # an empty cell read by pandas is NaN
        raise Unavailable(f"{key}: the entry has no hub id ({hub_id!r}); give it as 'owner/name'.")
    revision = entry.get("revision")
    revision = revision if isinstance(revision, str) and revision else None   # NaN went to the hub as a revision
    zoo_name = _zoo_name_of(entry)
    if local_dir is not None:
        root = Path(local_dir)
        for name in (key, hub_id.replace("/", "--")):
            # '../x' reached beside local_dir; a key that is no text (NaN, a number) raised a raw TypeError
            if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
                continue
            for cand in (root / name, root / f"{name}.gguf"):
                if cand.exists():
                    return SurveySource(str(cand), "local", revision)
    local = entry.get("local")
    local = local if isinstance(local, str) else ""   # an empty cell read by pandas is NaN, not text
    if local.startswith("pkg:"):
        try:
            return SurveySource(str(_package_path(local)), "package", revision)
        except Unavailable:
            pass  # fall through to the cache and the hub
    elif local and not local.startswith("zoo:"):
        if Path(local).exists():
            return SurveySource(local, "local", revision)
    if zoo_name is not None:
        from ..zoo import registry as zoo
        from ..base.errors import CompanionError

        model = zoo.zoo_model(zoo_name)
        only_zoo = local.startswith("zoo:")  # otherwise the cache or the hub may have it
        try:
            if not zoo.reader_available(model):
                raise Unavailable(f"zoo model {zoo_name}: its reader ({model.reader_module}) "
                                  "is not part of this installation.")
            return SurveySource(str(zoo.zoo_path(zoo_name)), "zoo", revision)
        except (Unavailable, CompanionError) as exc:
            if only_zoo:
                raise Unavailable(str(exc)) from None
    try:
        from huggingface_hub import snapshot_download

        folder = snapshot_download(hub_id, revision=revision, local_files_only=True)
        return SurveySource(folder, "hub-cache", revision)
    except Exception:
        pass
    if online is None:
        online = not _hub_offline()
    if online:
        from ..adapters.hub import check_hub_id
        from ..base.errors import CompanionError

        try:
            check_hub_id(hub_id)
        except CompanionError as exc:
            raise Unavailable(f"{key}: {exc}") from None
        return SurveySource(hub_id, "hub", revision)
    raise Unavailable(
        f"{hub_id}: not in a local folder, an installed package or the Hugging Face cache, "
        "and the hub is off (HF_HUB_OFFLINE=1 or --offline). Run online, or download it and "
        "pass --local-dir."
    )


def _zoo_name_of(entry) -> str | None:
    """The zoo model behind a survey entry (``local = "zoo:NAME"`` or a zoo ``catalog_key``)."""
    from ..zoo.registry import ZOO

    local = str(entry.get("local") or "")
    if local.startswith("zoo:"):
        return local[len("zoo:"):]
    for m in ZOO.values():
        if m.catalog_key == entry["key"]:
            return m.name
    return None


def _fingerprint(location: str) -> str | None:
    """sha256 (first 16 hex digits) of a local weight file, or of a folder's weight files."""
    path = Path(location)
    if not path.exists():
        return None
    if not (path.is_file() or path.is_dir()):   # a FIFO or a device: nothing to hash (iterdir raised)
        return None
    files = [path] if path.is_file() else sorted(
        p for p in path.iterdir()
        if p.suffix in (".safetensors", ".bin", ".gguf") and p.is_file())
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                h.update(block)
    return "sha256:" + h.hexdigest()[:16]
