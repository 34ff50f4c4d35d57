"""The README and the recipes say what is true (issue 75).

README.md stays short (at most 700 words, counted as ``wc -w`` counts) and names exactly two
set-up commands, ``make book`` and ``make test``, in code blocks; CI runs the README's test
command.  Every relative link of README.md, CONTRIBUTING.md and docs/*.md points at a file that
exists (and at a heading that exists, where it names one).  In CONTRIBUTING.md every file path
exists, every command of a code block is real (a make target of the Makefile, a `companion`
command line its parser accepts, a module that runs with ``python -m`` and has the options
used, a script, a test file or test), and every `companion...` name in the docs imports.  The
rules-file fields the recipes name are fields of the one file in force (data/verdict_rules.yaml),
and its claims read once are version 2's (data/rules_history/verdict_rules_v2.yaml), unchanged.
The helpers are tested on examples too, so each check is seen to fail when it should.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
RULES_FILE = ROOT / "data" / "verdict_rules.yaml"                        # the one in force (version 4)
RULES_V2 = ROOT / "data" / "rules_history" / "verdict_rules_v2.yaml"      # kept unchanged
MAX_README_WORDS = 700
SETUP_COMMANDS = ["make book", "make test"]
PATH_SUFFIXES = (".md", ".yml", ".yaml", ".csv", ".py", ".sh", ".toml", ".txt", ".cff", ".json", ".cfg")
SKIP_DIRS = {".git", ".venv", "_build", "node_modules", "__pycache__", ".hypothesis", ".pytest_cache"}
# tools a recipe may call that this repository does not provide (checked to be named only)
OUTSIDE_TOOLS = {"sha256sum"}


# ------------------------------------------------------------------------------ helpers
def wc_words(data: bytes) -> int:
    """Words as ``wc -w`` counts them in the C locale: maximal runs of bytes that are not
    ASCII whitespace (space, tab, newline, vertical tab, form feed, carriage return)."""
    return len(re.findall(rb"[^ \t\n\v\f\r]+", data))


def code_blocks(text: str) -> list[dict]:
    """The code blocks of a Markdown text, fenced (``` or ~~~, indented or not) and indented
    (four spaces after a blank line, outside a list): ``{"kind", "lines", "start"}`` with
    ``start`` the index of the block's first line."""
    lines = text.splitlines()
    blocks, i, prev_blank, in_list = [], 0, True, False
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence:
            mark = fence.group(1)
            body, j = [], i + 1
            while j < len(lines) and not lines[j].strip().startswith(mark):
                body.append(lines[j])
                j += 1
            indent = len(line) - len(line.lstrip())
            blocks.append({"kind": "fenced", "start": i + 1,
                           "lines": [b[indent:] if b[:indent].strip() == "" else b.lstrip() for b in body]})
            i, prev_blank = j + 1, False
            continue
        if prev_blank and not in_list and re.match(r"^( {4}|\t)\S", line):
            body, j = [], i
            while j < len(lines) and (re.match(r"^( {4}|\t)", lines[j]) or not lines[j].strip()):
                body.append(lines[j][4:] if lines[j].startswith("    ") else lines[j].lstrip("\t"))
                j += 1
            while body and not body[-1].strip():
                body.pop()
            blocks.append({"kind": "indented", "start": i, "lines": body})
            i, prev_blank = j, True
            continue
        if line.strip():
            if re.match(r"^\s*([-*+]|\d+[.)])\s", line):
                in_list = True
            elif not line.startswith((" ", "\t")):
                in_list = False
        prev_blank = not line.strip()
        i += 1
    return blocks


def prose(text: str) -> str:
    """The text with its code blocks blanked out (line numbers kept)."""
    lines = text.splitlines()
    for b in code_blocks(text):
        first = b["start"] - 1 if b["kind"] == "fenced" else b["start"]
        last = first + len(b["lines"]) + (2 if b["kind"] == "fenced" else 0)
        for k in range(first, min(last, len(lines))):
            lines[k] = ""
    return "\n".join(lines)


def inline_code(text: str) -> list[str]:
    """The inline code spans of the prose (outside code blocks)."""
    return [m.group(2).strip() for m in re.finditer(r"(`+)(.+?)\1", prose(text), re.S)]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    h = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", h).replace(" ", "-")


def heading_slugs(path: Path) -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", prose(path.read_text(encoding="utf-8")), re.M)}


def broken_links(path: Path) -> list[str]:
    """Every relative link of a Markdown file whose target (or heading) does not exist."""
    text = re.sub(r"(`+).+?\1", "", prose(path.read_text(encoding="utf-8")), flags=re.S)
    targets = re.findall(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", text)
    targets += re.findall(r"^\s*\[[^\]]+\]:\s*(\S+)", text, re.M)
    bad = []
    for t in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I):   # http:, https:, mailto:
            continue
        file, _, anchor = t.partition("#")
        where = (path.parent / file).resolve() if file else path
        if not where.exists():
            bad.append(f"{path.name}: {t} (no such file)")
        elif anchor and where.suffix == ".md" and anchor not in heading_slugs(where):
            bad.append(f"{path.name}: {t} (no such heading in {where.name})")
    return bad


def makefile_targets(text: str) -> set[str]:
    targets = set()
    for m in re.finditer(r"^([^\s:=#][^:=#]*?)\s*::?(?!=)", text, re.M):
        targets.update(m.group(1).split())
    return {t for t in targets if not t.startswith(".")}


def makefile_variables(text: str) -> set[str]:
    return set(re.findall(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*(?:\?=|:=|\+=|=)", text, re.M))


def repo_files() -> set[str]:
    """The names of every file of the checkout (build folders and environments left out)."""
    names = set()
    for _, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        names.update(files)
    return names


def path_problem(token: str, names: set[str] | None = None) -> str | None:
    """Why an inline-code token that names a file of the repository does not exist (None: it
    exists, or the token names no file).  ``<...>`` stands for a name to fill in: the folder
    before it must exist."""
    # what the set-up and the build make (.venv/, _build/) is not in a fresh checkout
    if re.search(r"\s", token) or token.startswith(("$", "~", "/", "-", "http", ".venv", "_build")) or "=" in token:
        return None
    if not re.fullmatch(r"[\w.<>*/-]+", token):
        return None
    first = token.split("/")[0]
    is_path = token.endswith(PATH_SUFFIXES) or (("/" in token) and (ROOT / first).exists() and "<" not in first)
    if not is_path:
        return None
    if "<" in token or "*" in token:
        folder = re.split(r"[<*]", token)[0].rsplit("/", 1)[0] if "/" in re.split(r"[<*]", token)[0] else ""
        return None if (ROOT / folder).is_dir() else f"{token}: no folder {folder or '.'}"
    if "/" not in token:   # a bare file name: some file of the checkout has it
        names = repo_files() if names is None else names
        return None if token in names else f"{token}: no file of that name in the checkout"
    return None if (ROOT / token).exists() else f"{token}: no such file or folder"


def resolve_dotted(name: str):
    """Import the longest module prefix of ``companion.a.b.C`` and get the rest as attributes."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        mod = ".".join(parts[:k])
        try:
            obj = importlib.import_module(mod)
        except ModuleNotFoundError as err:
            if err.name and not mod.startswith(err.name) and not err.name.startswith(mod):
                raise
            continue
        for attr in parts[k:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(name)


def _companion_parser():
    from companion.cli import build_parser

    return build_parser()


def _subparsers(parser):
    import argparse

    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return a.choices
    return {}


def companion_problem(argv: list[str], strict: bool) -> str | None:
    """Why ``companion ARGV`` is not a real command line.  ``strict``: the parser must accept it
    whole; otherwise only the subcommands and the options named must exist."""
    parser = _companion_parser()
    if strict:
        try:
            parser.parse_args(argv)
        except SystemExit:
            return f"companion {' '.join(argv)}: the command line parser refuses it"
        if "--claim" in argv:
            key = argv[argv.index("--claim") + 1]
            rules = yaml.safe_load(RULES_FILE.read_text(encoding="utf-8"))
            claims = set(rules["claims"]) | set((rules.get("evidence") or {}).get("claims") or {})
            if key not in claims:
                return f"companion {' '.join(argv)}: no claim {key!r} in the rules file in force"
        return None
    sub, options, rest = parser, set(), list(argv)
    while rest and not rest[0].startswith("-"):
        choices = _subparsers(sub)
        if not choices:
            break
        word = rest.pop(0)
        if word.isupper():      # a placeholder such as COMMAND
            return None
        if word not in choices:
            return f"companion {' '.join(argv)}: no subcommand {word!r}"
        sub = choices[word]
    options = {o for a in sub._actions for o in a.option_strings}
    unknown = [w for w in rest if w.startswith("--") and w.split("=")[0] not in options]
    return f"companion {' '.join(argv)}: unknown options {unknown}" if unknown else None


def make_problem(argv: list[str], makefile: str) -> str | None:
    targets, variables = makefile_targets(makefile), makefile_variables(makefile)
    for word in argv:
        if "=" in word:
            name = word.split("=")[0]
            if name not in variables:
                return f"make {' '.join(argv)}: the Makefile sets no variable {name}"
        elif not word.startswith("-") and word not in targets:
            return f"make {' '.join(argv)}: the Makefile has no target {word!r}"
    return None


def _test_exists(node: str) -> str | None:
    file, _, name = node.partition("::")
    if "PLACEHOLDER" in file:
        folder = file.split("PLACEHOLDER")[0].rsplit("/", 1)[0]
        return None if (ROOT / folder).is_dir() else f"{node}: no folder {folder}"
    if not (ROOT / file).exists():
        return f"{node}: no such test file"
    if name and not re.search(rf"^def {re.escape(name.split('[')[0])}\(", (ROOT / file).read_text(encoding="utf-8"), re.M):
        return f"{node}: no such test in {file}"
    return None


def python_problem(args: list[str]) -> str | None:
    """Why ``python ARGS`` (after the interpreter) is not a real command of this repository."""
    if len(args) < 2 or args[0] != "-m":
        return f"python {' '.join(args)}: a recipe runs modules (python -m), not other forms"
    module, rest = args[1], args[2:]
    if importlib.util.find_spec(module) is None:
        return f"python -m {module}: no such module"
    if module == "pytest":
        skip_next = False
        for word in rest:
            if skip_next:
                skip_next = False
                continue
            if word in ("-p", "-k", "-m", "-n"):
                skip_next = True
                continue
            if word.startswith("--nbval") and importlib.util.find_spec("nbval") is None:
                return "pytest: nbval is not installed"
            if not word.startswith("-"):
                problem = _test_exists(word)
                if problem:
                    return problem
        return None
    if module == "pip":
        return None
    spec = importlib.util.find_spec(module)
    source = Path(spec.origin).read_text(encoding="utf-8") if spec.origin and spec.origin.endswith(".py") else ""
    if spec.submodule_search_locations:        # a package: its __main__ runs
        main = Path(list(spec.submodule_search_locations)[0]) / "__main__.py"
        if not main.is_file():
            return f"python -m {module}: a package without __main__.py"
        source = main.read_text(encoding="utf-8")
    elif '__name__ == "__main__"' not in source and "__name__ == '__main__'" not in source:
        return f"python -m {module}: the module does not run as a script"
    missing = [w for w in rest if w.startswith("--") and f'"{w.split("=")[0]}"' not in source]
    return f"python -m {module}: no option {missing} in its source" if missing else None


def command_problem(line: str, makefile: str) -> str | None:
    """Why one line of a recipe's code block is not a real command (None: it is)."""
    line = re.sub(r"<[^>]*>", "PLACEHOLDER", line.strip())
    if not line or line.startswith("#"):
        return None
    argv = shlex.split(line, comments=True)
    while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
        value = argv.pop(0).split("=", 1)[1]
        if "$PWD/" in value and not (ROOT / value.split("$PWD/", 1)[1]).exists():
            return f"{line}: {value} does not exist"
    if not argv:
        return f"{line}: no command"
    exe, args = argv[0], argv[1:]
    if exe == "make":
        return make_problem(args, makefile)
    if exe in ("companion", ".venv/bin/companion"):
        return companion_problem(args, strict=True)
    if exe in ("python", "python3", ".venv/bin/python"):
        return python_problem(args)
    if exe == "bash":
        return None if args and (ROOT / args[0]).is_file() else f"{line}: no script {args[:1]}"
    if exe == "git":
        if args[:1] == ["add"]:
            missing = [a for a in args[1:] if not a.startswith("-") and "PLACEHOLDER" not in a and not (ROOT / a).exists()]
            return f"{line}: no such files {missing}" if missing else None
        return None if args[:1] in (["commit"], ["log"], ["status"], ["diff"]) else f"{line}: git {args[:1]}?"
    if exe in OUTSIDE_TOOLS:
        return None
    return f"{line}: {exe!r} is no command this repository provides or a recipe may use"


# ------------------------------------------------------------------------------ the helpers fail when they should
def test_the_word_count_is_wc_s():
    assert wc_words(b"make book\n  and\tthen  `make test`.\n") == 6
    assert wc_words(b"") == 0 and wc_words(b" \n\t ") == 0
    assert wc_words("caf\u00e9 na\u00efve".encode()) == 2
    if shutil.which("wc"):
        sample = b"one two\nthree\t four   five\n"
        out = subprocess.run(["wc", "-w"], input=sample, capture_output=True, env={**os.environ, "LC_ALL": "C"})
        assert int(out.stdout.split()[0]) == wc_words(sample) == 5


def test_code_blocks_are_found_fenced_and_indented_but_not_in_a_list():
    text = ("Intro:\n\n    make book\n\nThen\n\n```sh\nmake test\n# comment\n```\n\n"
            "- a list item\n\n    continued, not code\n\n1. step\n\n   ```sh\n   make env\n   ```\n")
    got = [(b["kind"], b["lines"]) for b in code_blocks(text)]
    assert got == [("indented", ["make book"]), ("fenced", ["make test", "# comment"]), ("fenced", ["make env"])]
    assert "make test" not in prose(text) and "Intro:" in prose(text)
    assert inline_code("Use `make book` and ``a `b` c``.\n\n```\n`not this`\n```\n") == ["make book", "a `b` c"]


def test_a_broken_link_a_missing_heading_and_a_missing_path_are_caught(tmp_path):
    (tmp_path / "there.md").write_text("# Where it is\n\n## The reader checks\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md) [ok](there.md#the-reader-checks) [web](https://example.org/x)\n"
                    "[gone](missing.md) [no heading](there.md#nowhere) `[not a link](x.md)`\n")
    assert broken_links(page) == ["page.md: missing.md (no such file)",
                                  "page.md: there.md#nowhere (no such heading in there.md)"]
    assert slug("What `make test` runs") == "what-make-test-runs"
    assert path_problem("data/verdict_rules.yaml") is None
    assert path_problem("data/rules_history/verdict_rules_v2.yaml") is None
    assert path_problem("data/rules_history/verdict_rules_v<N>.yaml") is None
    assert path_problem("data/verdict_rules_v4.yaml") is not None   # moved: the file in force has no version in its name
    assert path_problem("data/verdict_rules_v9.yaml") is not None
    assert path_problem("dta/runs/make_x_runs.sh") is not None
    assert path_problem("book/<name>.md") is None and path_problem("boook/<name>.md") is not None
    assert path_problem("history.csv", {"history.csv"}) is None
    assert path_problem("histroy.csv", {"history.csv"}) is not None
    assert path_problem("MODE/INIT") is None and path_problem("$COMPANION_RUNS_WORK/<run>") is None


def test_a_command_that_does_not_exist_is_caught():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert makefile_targets("a b: c\n\tx\nV := 1\n.PHONY: a\nd:\n") == {"a", "b", "d"}
    assert command_problem("make chapter-times SIZE=gpu CHAPTERS=<name>", makefile) is None
    assert "no target" in command_problem("make no-such-target", makefile)
    assert "no variable" in command_problem("make book NO_SUCH_VARIABLE=1", makefile)
    assert command_problem(".venv/bin/companion verdicts --training", makefile) is None
    assert "refuses" in command_problem(".venv/bin/companion verdicts --no-such-flag", makefile)
    assert "refuses" in command_problem(".venv/bin/companion no-such-command", makefile)
    assert "no claim" in command_problem(".venv/bin/companion verdicts --claim no_such_claim", makefile)
    assert command_problem(".venv/bin/companion verdicts --claim table_1", makefile) is None          # read at looks
    assert command_problem(".venv/bin/companion verdicts --claim objective_swap", makefile) is None   # read once
    assert "no such module" in command_problem(".venv/bin/python -m companion.no_such_module", makefile)
    assert "no option" in command_problem(".venv/bin/python -m companion.train.studies.design_check --wirte", makefile)
    assert "no such test" in command_problem(".venv/bin/python -m pytest tests/test_zoo.py::test_nothing_like_it", makefile)
    assert "no such test file" in command_problem(".venv/bin/python -m pytest tests/test_no_such_file.py", makefile)
    assert "no script" in command_problem("bash data/runs/make_no_such_runs.sh", makefile)
    assert "does not exist" in command_problem("IPYTHONDIR=$PWD/book/_nowhere make book", makefile)
    assert "no command" in command_problem("curl https://example.org", makefile)
    assert companion_problem(["zoo", "fetch", "all"], strict=False) is None
    assert companion_problem(["COMMAND", "--help"], strict=False) is None
    assert "unknown options" in companion_problem(["verdicts", "--trainnig"], strict=False)
    assert "no subcommand" in companion_problem(["zooo", "list"], strict=False)


# ------------------------------------------------------------------------------ README.md
def _readme() -> str:
    return README.read_text(encoding="utf-8")


def test_the_readme_has_at_most_700_words():
    words = wc_words(README.read_bytes())
    assert 0 < words <= MAX_README_WORDS, f"README.md has {words} words (wc -w); at most {MAX_README_WORDS}"
    if shutil.which("wc"):
        out = subprocess.run(["wc", "-w", str(README)], capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
        assert int(out.stdout.split()[0]) == words


def test_the_readme_s_code_blocks_are_exactly_the_two_set_up_commands():
    text = _readme()
    blocks = code_blocks(text)
    commands = [line.strip() for b in blocks for line in b["lines"] if line.strip()]
    assert commands == SETUP_COMMANDS, f"README.md's code blocks hold {commands}; only {SETUP_COMMANDS}"
    assert len(blocks) == 2 and all(len(b["lines"]) == 1 for b in blocks)
    lines = text.splitlines()
    before = {b["lines"][0].strip(): " ".join(lines[max(0, b["start"] - 3):b["start"]]) for b in blocks}
    assert "Build the executed book" in before["make book"], before["make book"]
    assert "Run all tests" in before["make test"], before["make test"]


def test_the_set_up_commands_are_make_targets_and_ci_runs_the_readme_s_test_command():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert {"book", "test"} <= makefile_targets(makefile)
    blocks = code_blocks(_readme())
    test_command = next(b["lines"][0].strip() for b in blocks if "test" in b["lines"][0])
    ci = [ln for ln in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines() if not ln.lstrip().startswith("#")]
    assert any(re.match(rf"^\s*{re.escape(test_command)}(\s|$)", ln) for ln in ci), (
        f".ci/run does not run the README's test command {test_command!r}")


def test_the_readme_names_the_paper_and_the_torch_default_as_the_sources_do():
    text = " ".join(_readme().split())
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    paper = cff["preferred-citation"]
    assert paper["title"] in text, "the README names the paper by its title in CITATION.cff"
    names = [a["family-names"] for a in paper["authors"]]
    assert ", ".join(names[:-1]) + " & " + names[-1] in text
    assert "ICML 2025" in text
    default = re.search(r"^TORCH_SPEC\s*\?=\s*(\S+)", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M).group(1)
    assert f"default `{default}`" in text, f"the README's TORCH_SPEC default is not the Makefile's {default}"


def test_the_readme_links_every_docs_page():
    linked = {Path(t.split("#")[0]).name for t in re.findall(r"\]\((docs/[^)#\s]+)", _readme())}
    pages = {p.name for p in DOCS}
    assert pages, "docs/ holds the details cut from the README"
    assert pages <= linked, f"docs pages the README does not link: {sorted(pages - linked)}"
    assert "CONTRIBUTING.md" in _readme()


# ------------------------------------------------------------------------------ links
@pytest.mark.parametrize("path", [README, CONTRIBUTING, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file_and_heading_that_exist(path):
    assert broken_links(path) == []


@pytest.mark.parametrize("path", [README, CONTRIBUTING, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_companion_name_and_make_command_in_the_prose_is_real(path):
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    problems = []
    for span in inline_code(path.read_text(encoding="utf-8")):
        if re.fullmatch(r"companion(\.[A-Za-z_]\w*)+(\(\))?", span):
            try:
                resolve_dotted(span.removesuffix("()"))
            except (ImportError, AttributeError) as err:
                problems.append(f"{span}: {type(err).__name__}: {err}")
            continue
        argv = span.split()
        while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
            argv.pop(0)
        if argv[:1] == ["make"] and "<" not in span:
            p = make_problem(argv[1:], makefile)
            problems += [p] if p else []
        elif argv[:1] == ["companion"] and len(argv) > 1:
            p = companion_problem([w for w in argv[1:] if w not in ("|", "[", "]")], strict=False)
            problems += [p] if p else []
    assert problems == []


# ------------------------------------------------------------------------------ CONTRIBUTING.md
def _contributing() -> str:
    return CONTRIBUTING.read_text(encoding="utf-8")


def test_there_are_four_recipes_each_with_commands_and_the_tests_that_say_done():
    sections = {title: body for title, body in
                ((p.splitlines()[0], p) for p in re.split(r"^## ", _contributing(), flags=re.M)[1:])}
    titles = [t for t in sections if re.match(r"\d\. ", t)]
    assert [t.split(". ", 1)[1] for t in titles] == [
        "Change the rule that judges a claim", "Add a chapter", "Add a model to the offline zoo",
        "Add a body of training runs"]
    for t in titles:
        body = sections[t]
        assert "**Done when**" in body, t
        done = body.split("**Done when**", 1)[1]
        runs = [ln for b in code_blocks(done) for ln in b["lines"] if "-m pytest" in ln]
        assert runs and all("tests/" in ln or "book/" in ln for ln in runs), t


def test_every_file_path_named_in_the_recipes_exists():
    names = repo_files()
    spans = inline_code(_contributing())
    named = [s for s in spans if s.endswith(PATH_SUFFIXES) or "/" in s]
    assert len(named) >= 40, "the recipes name the files they touch"
    for required in ("_toc.yml", "data/chapters.yaml", "src/companion/book/teaching/exercise_references.py",
                     "src/companion/book/teaching/exercise_checks.py",
                     "src/companion/book/teaching/course_plan.py", "data/chapter_times/colab_budget.csv",
                     "data/verdict_rules.yaml", "data/rules_history/", "book/rules_history.md",
                     "src/companion/zoo/registry.py", "data/runs/scripts.csv", "data/runs/make_chars_runs.sh"):
        assert f"`{required}`" in _contributing(), f"the recipes do not name {required}"
    problems = [p for p in (path_problem(s, names) for s in spans) if p]
    assert problems == []


def test_every_command_in_the_recipes_code_blocks_is_real():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    lines = [ln for b in code_blocks(_contributing()) for ln in b["lines"] if ln.strip()]
    assert len(lines) >= 15
    assert any(ln.strip() == ".venv/bin/companion verdicts --training" for ln in lines)
    problems = [p for p in (command_problem(ln, makefile) for ln in lines) if p]
    assert problems == []


def test_the_tests_and_names_the_recipes_point_at_exist():
    text = _contributing()
    tests = set(re.findall(r"`(test_\w+)`", text))
    assert tests, "the recipes name the tests that enforce them"
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").glob("test_*.py"))
    assert [t for t in tests if not re.search(rf"^def {t}\(", sources, re.M)] == []
    defined = {"NO_QUESTION": "tests/test_answer_boxes.py", "ZOO_PACKAGES": "Makefile",
               "ZOO": "src/companion/zoo/registry.py", "COURSE": "src/companion/book/teaching/course_plan.py",
               "LIVE_RUNS": "src/companion/book/budgets/live_runs.py", "RULES_HISTORY": "src/companion/rules/rulebook.py",
               "RULES_PATH": "src/companion/rules/rulebook.py"}
    for name, file in defined.items():
        assert re.search(rf"`(?:[\w.]+\.)?{name}`", text), f"the recipes no longer name {name}: update this test"
        assert re.search(rf"^{name}\s*(?::[^=\n]*)?(?::=|=)", (ROOT / file).read_text(encoding="utf-8"), re.M), (
            f"{name} is not defined in {file}")


def test_the_rules_file_fields_the_recipes_name_are_the_files_fields():
    from companion.rules.rulebook import RULES_HISTORY, RULES_PATH

    text = _contributing()
    assert RULES_PATH == RULES_FILE and RULES_HISTORY[2] == RULES_V2
    v4 = yaml.safe_load(RULES_FILE.read_text(encoding="utf-8"))
    v2 = yaml.safe_load(RULES_V2.read_text(encoding="utf-8"))
    body_fields = ["label", "pattern", "corpus", "seeds", "steps", "lr", "arms", "secondary_arms",
                   "guard_reference", "plan", "blind", "registered"]
    claim_fields = ["quantity", "test", "candidate", "comparator", "body", "sesoi", "pilot", "fixed", "seen_before"]
    # the loader's checks of a claim read once, as the recipe names them
    read_once_fields = ["claim", "test", "fixed", "seen_before", "sesoi", "amended", "amended_at"]
    bodies = set().union(*(b.keys() for b in v4["bodies"].values()))
    claims = set().union(*(c.keys() for c in v4["claims"].values()))
    once = set().union(*(c.keys() for c in v4["evidence"]["claims"].values()))
    def named(field):  # `field` or `field: value`
        return re.search(rf"`{field}(?::[^`]*)?`", text) is not None

    for f in body_fields:
        assert named(f) and f in bodies, f
    for f in claim_fields + ["below_target"]:
        assert named(f) and f in claims, f
    for f in read_once_fields:
        assert named(f) and f in once, f
    assert v4["version"] == 4 and "version 4" in text
    assert v4["framework"]["design_check"]["table"] == "data/verdict_rules_design.csv"
    assert v4["framework"]["family_check"]["table"] == "data/verdict_rules_family.csv"
    assert set(v4["framework"]["families"]) and "`framework.families`" in text
    assert "`evidence.claims`" in text and "`claims`" in text
    fam = v4["framework"]["families"]["evidence"]
    assert "`tests`" in text and "`alpha`" in text and {"tests", "alpha", "fwer"} <= set(fam)
    assert sorted(fam["members"]) == sorted(v4["evidence"]["claims"])
    # every body is registered by the file in force or by a file of the history the recipe names
    kept = {str(p.relative_to(ROOT)) for p in RULES_HISTORY.values()}
    for key, body in v4["bodies"].items():
        file = body["registered"]["file"]
        assert file == "data/verdict_rules.yaml" or file in kept, (key, file)
        assert (ROOT / file).is_file(), (key, file)
    # the claims read once are version 2's rules, copied unchanged (version 2 itself is never edited)
    assert v2["version"] == 2 and "version 2" in text
    for key, rule in v4["evidence"]["claims"].items():
        # a design registered later for new evidence (the survey's, before its new models were
        # scored) is added beside version 2's fields, which stay as they were
        assert v2["claims"][key] == {k: v for k, v in rule.items() if k != "design"}, key
    assert set(v4["evidence"]["claims"]["survey_encoder_decoder"]["design"]) >= {"units", "members", "check", "fixed"}
    for name, stick in v4["evidence"]["yardsticks"].items():
        assert v2["yardsticks"][name] == stick, name
    # the rule for later changes is quoted from the header of the file in force
    header = " ".join(ln.lstrip("# ") for ln in RULES_FILE.read_text(encoding="utf-8")
                      .split("\nversion:")[0].splitlines())
    quoted = "a change is allowed only if it makes every outcome at most as decided"
    assert quoted in " ".join(header.split()) and quoted in " ".join(text.split())


def test_ci_starts_from_an_empty_cache_of_its_own_and_keeps_no_wheel_copies():
    """What lands is what a newcomer's first `make test` gets; pip's wheel cache would double
    the zoo's 3.6 GB on a CI disk that has run out before."""
    code = "\n".join(ln for ln in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
                     if not ln.lstrip().startswith("#"))
    fresh = code.find('COMPANION_CACHE=$(mktemp -d')
    assert fresh >= 0, ".ci/run does not make an empty cache of its own"
    assert code.find("make env") > fresh, ".ci/run sets its cache only after the set-up ran"
    assert "export COMPANION_CACHE" in code and "export PIP_NO_CACHE_DIR=1" in code
