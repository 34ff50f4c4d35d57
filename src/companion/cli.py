"""The ``companion`` command line.

Subcommands live in :mod:`companion.commands`: every module there that defines
``register(subparsers)`` adds one (it sets ``func`` on its parser).  A new subcommand is a
new module; this file does not change.  :class:`~companion.base.errors.CompanionError` is
printed as one line on stderr with exit status 2, never as a traceback; a character of it that
is not printable (a newline or an escape sequence in a path or a model's config) is written as
its escape.  A misspelt command, action or option is refused under the usage of the command it
was given to, with the closest name it may have meant.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from .base.errors import CompanionError

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose refusal of a choice it does not know names the closest one."""

    def error(self, message: str):
        import re

        from .commands import near, shown

        m = re.search(r"invalid choice: '(.*)' \(choose from (.*)\)$", message, re.S)
        if m:
            message += near(m.group(1), re.findall(r"'([^']*)'", m.group(2)))
        super().error(shown(message))


def _deepest(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``args`` were parsed for: ``companion zoo fetch``'s, not
    ``companion``'s."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, subs[0].dest, None) if subs else None
        if chosen not in (subs[0].choices if subs else {}):
            return parser
        parser = subs[0].choices[chosen]


def _refuse_unknown(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> None:
    """Refuse arguments no parser took, under the usage of the command they were given to, with
    the option meant where one is close (``--clam`` -> ``--claim``)."""
    from .commands import near

    sub = _deepest(parser, args)
    options = [o for a in sub._actions for o in a.option_strings if o.startswith("--")]
    hint = next((near(x.split("=")[0], options) for x in extra if x.startswith("--")
                 and near(x.split("=")[0], options)), "")
    sub.error(f"unrecognized arguments: {' '.join(extra)}{hint}")


def build_parser() -> argparse.ArgumentParser:
    from . import commands

    parser = _Parser(
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
    args, extra = parser.parse_known_args(argv)
    if extra:
        _refuse_unknown(parser, args, extra)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from .base.progress import command_line

    try:
        with command_line():   # waits and progress of library code go to this command's stderr
            return int(args.func(args) or 0)
    except CompanionError as exc:
        from .commands import shown

        print(f"companion {args.command}: error: {shown(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:
        import errno

        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM):
            raise
        from .commands import shown

        where = f" ({shown(exc.filename)})" if exc.filename else ""
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
