"""The ``companion`` command line.

Subcommands live in :mod:`companion.commands`: every module there that defines
``register(subparsers)`` adds one (it sets ``func`` on its parser).  A new subcommand is a
new module; this file does not change.  :class:`~companion.base.errors.CompanionError` is
printed as one line on stderr with exit status 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from .base.errors import CompanionError

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    from . import commands

    parser = argparse.ArgumentParser(
        prog="companion",
        description="Symmetry and directionality of self-attention (Saponati et al., ICML 2025).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(module, "register"):
            module.register(sub)
    return parser


def _refused_a_read(exc: OSError) -> bool:
    """Whether a permission error was a refused read: the file it names exists and this user
    may not read it (a refused write names a file that is missing or readable, or a folder)."""
    import errno
    import os

    if exc.errno not in (errno.EACCES, errno.EPERM) or not exc.filename:
        return False
    path = os.fsdecode(exc.filename)
    return os.path.isfile(path) and not os.access(path, os.R_OK)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from .base.progress import command_line

    try:
        with command_line():   # waits and progress of library code go to this command's stderr
            return int(args.func(args) or 0)
    except CompanionError as exc:
        print(f"companion {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        import errno

        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM):
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        if _refused_a_read(exc):
            print(f"companion {args.command}: error: cannot read{where}: {exc.strerror or exc}; give "
                  "yourself read access to it (or copy it somewhere you can read). Nothing was "
                  "written.", file=sys.stderr)
            return 2
        fix = ("free some space or point COMPANION_CACHE / --out elsewhere" if exc.errno in (errno.ENOSPC, errno.EDQUOT)
               else "choose a folder you can write to (COMPANION_CACHE, --out)")
        print(f"companion {args.command}: error: {exc.strerror or exc}{where}; {fix}. Nothing half-written "
              "was kept.", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
