"""How far a reader walks to follow one training claim through the code (a static measure).

Starting at ``companion.judge.empirical.training_tests``, every call of a package function
is followed in source order, depth first (each function once, to ``--depth`` levels), and
the module of each function entered is written down (a return to the caller is not a step:
the reader goes on from where the caller's code goes on).  Consecutive entries in one module
are one *stay*; a *climb* is a step into a higher layer than the one just left (the
package's layers, ``.importlinter``, with training's own layers inside ``train``); a
*return* is a step back into a module already left.  A judgement read top to bottom goes
down the layers once: few stays, no returns, climbs only back to the function that
assembles the verdict.

    python bench/claim_walk.py [--start companion.judge.empirical:training_tests] [--depth 2]
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
from pathlib import Path

LAYERS = {"base": 0, "core": 1, "rules": 1, "adapters": 2, "zoo": 2, "train.text": 3.0, "train.models": 3.1,
          "train.runner": 3.2, "train.studies": 3.3, "train.cli": 3.4, "survey": 4, "judge": 5, "book": 6,
          "commands": 7, "cli": 7}


def layer(module: str) -> float:
    parts = module.split(".")[1:]
    for n in (2, 1):
        key = ".".join(parts[:n])
        if key in LAYERS:
            return LAYERS[key]
    raise KeyError(module)


def _source(module: str) -> ast.Module:
    spec = importlib.util.find_spec(module)
    return ast.parse(Path(spec.origin).read_text(encoding="utf-8"))


def _resolve(module: str, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".")[:-level] if not module.endswith("__init__") else module.split(".")
    return ".".join(base + ([name] if name else []))


def _functions(module: str) -> dict:
    tree = _source(module)
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}, tree


def _imports(module: str, nodes) -> dict:
    """name -> (module, attribute or None) for every ``from ... import`` among ``nodes``."""
    names = {}
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.ImportFrom):
                src = _resolve(module, sub.level, sub.module)
                for a in sub.names:
                    target = f"{src}.{a.name}"
                    if importlib.util.find_spec(src) and _is_module(target):
                        names[a.asname or a.name] = (target, None)
                    else:
                        names[a.asname or a.name] = (src, a.name)
    return names


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def walk(module: str, function: str, depth: int) -> list[str]:
    """Modules of the package functions entered, in order, starting at ``module:function``."""
    seen, out = set(), []

    def visit(mod: str, fn: str, level: int):
        if (mod, fn) in seen or not mod.startswith("companion."):
            return
        seen.add((mod, fn))
        funcs, tree = _functions(mod)
        if fn not in funcs:
            return
        out.append(mod)
        if level == depth:
            return
        names = _imports(mod, [tree, funcs[fn]])
        calls = sorted((n for n in ast.walk(funcs[fn]) if isinstance(n, ast.Call)),
                       key=lambda c: (c.lineno, c.col_offset))
        for call in calls:
            f = call.func
            if isinstance(f, ast.Name):
                if f.id in funcs:
                    visit(mod, f.id, level + 1)
                elif f.id in names and names[f.id][1]:
                    visit(names[f.id][0], names[f.id][1], level + 1)
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in names:
                target, attr = names[f.value.id]
                if attr is None:
                    visit(target, f.attr, level + 1)

    visit(module, function, 0)
    return out


def measure(path: list[str]) -> dict:
    stays = [m for i, m in enumerate(path) if i == 0 or path[i - 1] != m]
    climbs = sum(layer(b) > layer(a) for a, b in zip(stays, stays[1:]))
    returns = sum(m in stays[:i - 1] for i, m in enumerate(stays) if i > 1)
    return {"stays": len(stays), "modules": len(set(stays)), "climbs": climbs, "returns": returns,
            "path": stays}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--start", default="companion.judge.empirical:training_tests")
    p.add_argument("--depth", type=int, default=2)
    args = p.parse_args(argv)
    mod, fn = args.start.split(":")
    m = measure(walk(mod, fn, args.depth))
    print(f"{args.start} (depth {args.depth}): {m['stays']} stays in {m['modules']} modules, "
          f"{m['climbs']} climbs back up a layer, {m['returns']} returns to a module already left")
    print(" -> ".join(s.removeprefix("companion.") for s in m["path"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
