"""One status per claim on every surface: find each status the built book states for a claim
and compare it with the verdict table.

Data flow: the built pages (HTML of the site and of the slides; the generated notebooks'
text cells and their code cells' outputs, :func:`notebook_statuses`) -> :func:`stated_statuses`
and the table readers (claim, status, where) -> :func:`disagreements` against
the table of :func:`companion.judge.claims.all_verdicts` (and the survey's two halves).

A status is *stated* for a claim in two shapes, the two the book uses:

* inline, a claim's paper name followed in the same clause by a colon and a status word:
  "Cor. S1.13: inconclusive (after Holm)", "Verdict for Thm. S1.14 at this size: premise fails";
* in a table whose header has a column named ``Status``: the row's claim (the first cell that
  names one) and the cell under that header.

A per-test outcome shown beside a status is labelled as such ("test alone: refuted", a
column headed "outcome"), and those labels are not statuses: a clause whose words before the
colon say "alone", "outcome" or "before" is skipped.  A label naming another version of the
rules is no exemption: earlier versions' readings belong on one page, the appendix "How the
rules changed" (:data:`HISTORY_PAGES`), which the surfaces' check leaves out; anywhere else a
second status word for a claim is a disagreement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

from ...base.errors import CompanionError

__all__ = ["HISTORY_PAGES", "STATUS_WORDS", "aliases", "Stated", "stated_statuses", "table_statuses",
           "markdown_table_statuses", "notebook_statuses", "disagreements", "html_text"]

#: the one page that shows earlier rules versions' readings (its name, without a suffix)
HISTORY_PAGES = ("rules_history",)

#: every status word, longest first so that "holds, size open" is never read as "holds"
STATUS_WORDS = ("inconclusive (after Holm)", "holds with a correction", "holds, size open", "not testable here",
                "premise fails", "inconclusive", "negligible", "refuted", "holds")

#: words between a claim's name and the colon that mark what follows as something other than
#: the claim's status (a per-test outcome, another version's reading, a quoted old verdict)
NOT_A_STATUS = re.compile(r"\b(alone|outcome|outcomes|before|once read|reads? as|"
                          r"per[- ]test|body|bodies|pilot|premise at)\b", re.I)

def _spaced(word: str) -> str:
    """``word`` as a pattern in which each space is any run of white space (a line break or a
    no-break space included), so a status or a name set over two lines, or joined by a no-break
    space, is read as it is written."""
    return r"\s+".join(re.escape(w) for w in word.split(" "))


#: a status word in any case and spacing ("Refuted", "holds,\nsize open" are statuses a reader reads)
_STATUS_RE = "(?i:" + "|".join(_spaced(s) for s in STATUS_WORDS) + ")"

#: spaces other than the plain one (no-break, thin, ideographic, ...): read as a plain space
_OTHER_SPACES = re.compile(r"[\xa0\u1680\u2000-\u200a\u202f\u205f\u3000]")


def _canonical(found: str) -> str:
    """The status word of :data:`STATUS_WORDS` that ``found`` spells, in any case or spacing."""
    said = " ".join(found.split()).lower()
    return next((w for w in STATUS_WORDS if w.lower() == said), found)


def aliases(claims: dict) -> dict:
    """``{name: key}``: the names a page may use for each claim, from the claim's text
    ("Thm. 2.3 / S1.12: ..." gives "Thm. 2.3 / S1.12", "Thm. 2.3" and "Thm. S1.12"; the
    survey's halves "Fig. 2, symmetry" and "Fig. 2, directionality" map to ``key (half)``).

    ``claims``: ``{key: claim text}``.  Two claims that would share a name are an error."""
    out: dict[str, str] = {}

    def add(name, key):
        name = name.strip()
        if not name:
            return
        if out.get(name, key) != key:
            raise CompanionError(f"the name {name!r} is used by two claims, {out[name]} and {key}; "
                                 "give one of them a name of its own in its claim text.")
        out[name] = key

    for key, text in claims.items():
        head = str(text).split(":")[0].strip()
        add(head, key)
        parts = [p.strip() for p in head.split(" / ")]
        if len(parts) > 1 and " " in parts[0]:           # "Thm. 2.3 / S1.12", "Remark S1.15 / Eq. S119"
            kind = parts[0].split(" ")[0]
            add(parts[0], key)
            for p in parts[1:]:
                if re.fullmatch(r"[A-Z]?\d[\w.]*", p):        # "S1.12" after "Thm. 2.3": "Thm. S1.12"
                    add(f"{kind} {p}", key)
    if "survey_encoder_decoder" in claims:
        for half in ("symmetry", "directionality"):
            add(f"Fig. 2, {half}", f"survey_encoder_decoder ({half})")
            add(f"Fig. 2 {half}", f"survey_encoder_decoder ({half})")
    return out


@dataclass(frozen=True)
class Stated:
    """A status a surface states for a claim."""

    key: str
    name: str
    status: str
    where: str
    context: str


def _name_pattern(names) -> re.Pattern:
    alt = "|".join(_spaced(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])({alt})(?![\w])")


def stated_statuses(text: str, names: dict, where: str = "") -> list[Stated]:
    """The inline statements ``<claim name> ...: <status>`` of ``text`` (plain text, one line
    or many); the words between the name and the colon stay within one clause (at most 70
    characters, no colon, no full stop ending a sentence)."""
    if not names:
        return []
    text = _OTHER_SPACES.sub(" ", text)   # one character for one: the offsets stay
    pat = _name_pattern(names)
    out = []
    for m in pat.finditer(text):
        rest = text[m.end():m.end() + 160]
        s = re.match(rf"([^:\n]{{0,70}}?):\s*\**\s*({_STATUS_RE})(?![\w-])", rest)
        if not s:
            continue
        between = s.group(1)
        if re.search(r"[.;!?]\s+[A-Z]", between) or pat.search(between) or NOT_A_STATUS.search(between):
            continue
        ctx = text[max(0, m.start() - 40):m.end() + s.end() + 10].replace("\n", " ")
        name = " ".join(m.group(1).split())
        out.append(Stated(names[name], name, _canonical(s.group(2)), where, ctx))
    return out


class _Tables(HTMLParser):
    """Tables of an HTML page as lists of rows of cell texts (header rows included), laid out
    as a browser lays them out: a cell spanning columns (``colspan``) fills each of them, and
    one spanning rows (``rowspan``, as pandas writes a MultiIndex) fills its column in each
    row it spans."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[str]]] = []
        self._stack: list[list[list[str]]] = []
        self._spans: list[dict[int, list]] = []   # per open table: column -> [rows left, text]
        self._cell: list[str] | None = None
        self._span = 1
        self._rowspan = 1

    @staticmethod
    def _count(value, limit: int) -> int:
        return max(1, min(int(value), limit)) if str(value or "").strip().isdigit() else 1

    def _fill(self) -> None:
        """Put the cells spanning down from rows above into the current row, at its end."""
        row, spans = self._stack[-1][-1], self._spans[-1]
        while len(row) in spans:
            col = len(row)
            row.append(spans[col][1])
            spans[col][0] -= 1
            if not spans[col][0]:
                del spans[col]

    def _end_row(self) -> None:
        if self._stack and self._stack[-1] and self._spans[-1]:
            self._fill()

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._stack.append([])
            self._spans.append({})
        elif tag == "tr" and self._stack:
            self._end_row()
            self._stack[-1].append([])
        elif tag in ("td", "th") and self._stack and self._stack[-1]:
            self._cell = []
            a = dict(attrs)
            # a cell spanning columns fills each of them, as a browser lays the row out
            self._span = self._count(a.get("colspan"), 1000)
            self._rowspan = self._count(a.get("rowspan"), 10000)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._stack and self._stack[-1]:
            self._fill()
            row = self._stack[-1][-1]
            text = re.sub(r"\s+", " ", "".join(self._cell)).strip()
            if self._rowspan > 1:
                for col in range(len(row), len(row) + self._span):
                    self._spans[-1][col] = [self._rowspan - 1, text]
            row.extend([text] * self._span)
            self._cell = None
        elif tag == "tr" and self._stack:
            self._end_row()
        elif tag == "table" and self._stack:
            self._end_row()
            self.tables.append(self._stack.pop())
            self._spans.pop()

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def table_statuses(html: str, names: dict, where: str = "") -> list[Stated]:
    """The statuses of the tables of ``html`` that have a column headed ``Status`` (not
    headed by another version of the rules): for each row, the first cell naming a claim and
    the cell under that header (which must be a status word, or the row is reported with
    the cell's text, so a table that puts something else there fails the comparison)."""
    parser = _Tables()
    parser.feed(html)
    return _statuses_of_tables(parser.tables, names, where)


def _pipe_cells(line: str) -> list[str]:
    """The cells of one row of a Markdown pipe table (a ``\\|`` inside a cell kept as ``|``)."""
    line = line.strip()
    line = line[1:] if line.startswith("|") else line
    line = line[:-1] if line.endswith("|") and not line.endswith("\\|") else line
    return [re.sub(r"\s+", " ", c.replace("\\|", "|")).strip() for c in re.split(r"(?<!\\)\|", line)]


def markdown_table_statuses(text: str, names: dict, where: str = "") -> list[Stated]:
    """As :func:`table_statuses`, for the pipe tables of Markdown text (a notebook's text
    cells): a header row, a row of dashes, then the body rows up to the first line that is no
    row.  Emphasis marks around a cell are dropped."""
    tables, lines, i = [], text.splitlines(), 0
    while i + 1 < len(lines):
        head, rule = lines[i], lines[i + 1]
        if "|" in head and re.fullmatch(r"\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*", rule):
            rows, i = [_pipe_cells(head)], i + 2
            while i < len(lines) and "|" in lines[i] and lines[i].strip():
                rows.append(_pipe_cells(lines[i]))
                i += 1
            tables.append([[c.strip("*_ ") for c in row] for row in rows])
        else:
            i += 1
    return _statuses_of_tables(tables, names, where)


def notebook_statuses(cells: list, names: dict, where: str = "") -> list[Stated]:
    """Every status a notebook states: the inline statements and pipe tables of its text
    cells, and the tables (HTML) and inline statements (plain text) of its code cells'
    outputs, as a reader of the notebook sees them.  ``cells``: the notebook's ``cells``
    (nbformat's JSON)."""
    def joined(value) -> str:
        return "".join(value) if isinstance(value, list) else str(value or "")

    out = []
    for n, cell in enumerate(cells):
        at = f"{where} (cell {n})"
        if cell.get("cell_type") == "markdown":
            text = joined(cell.get("source")).replace("**", "")
            out += stated_statuses(text, names, at) + markdown_table_statuses(text, names, at)
            continue
        for output in cell.get("outputs", []) or []:
            data = output.get("data", {}) or {}
            if "text/html" in data:
                html = joined(data["text/html"])
                out += table_statuses(html, names, at) + stated_statuses(html_text(html), names, at)
            elif "text/markdown" in data:
                text = joined(data["text/markdown"]).replace("**", "")
                out += stated_statuses(text, names, at) + markdown_table_statuses(text, names, at)
            elif output.get("output_type") == "stream" or "text/plain" in data:
                out += stated_statuses(joined(output.get("text") or data.get("text/plain")), names, at)
    return out


def _statuses_of_tables(tables: list, names: dict, where: str) -> list[Stated]:
    pat = _name_pattern(names) if names else None
    out = []
    for table in tables:
        if not table or pat is None:
            continue
        head = table[0]
        # a header with a colon or a footnote mark after it ('Status:', 'Status¹', 'Status *') is still
        # the status column; one naming another version of the rules ('Status (v1)') is not
        cols = [i for i, h in enumerate(head)
                if re.fullmatch(r"(the )?status( now)?[\s:*\u2020\u2021\u00b9\u00b2\u00b3\u2070-\u2079\d]*",
                                h.strip(), re.I)]
        if not cols:
            continue
        c = cols[0]
        for row in table[1:]:
            if len(row) <= c:
                continue
            row = [_OTHER_SPACES.sub(" ", cell) for cell in row]
            named = next((pat.search(cell) for i, cell in enumerate(row) if i != c and pat.search(cell)), None)
            if named is None:
                continue
            cell = row[c].strip().strip("*").strip()
            m = re.match(rf"({_STATUS_RE})(?![\w-])", cell)
            name = " ".join(named.group(1).split())
            out.append(Stated(names[name], name, _canonical(m.group(1)) if m else cell, where, " | ".join(row)))
    return out


def html_text(html: str) -> str:
    """The visible text of an HTML page (scripts, styles and the navigation left out),
    block elements on lines of their own."""
    html = re.sub(r"(?s)<!--.*?(-->|$)", " ", html)   # a comment is no text, whatever '>' it holds
    html = re.sub(r"(?is)<(script|style|nav|head)\b.*?</\1>", " ", html)
    html = re.sub(r"(?i)<br\s*/?>|</(p|li|div|h\d|tr|td|th|dt|dd|caption|figcaption|summary)>", "\n", html)
    text = re.sub(r"<[^>]+>", "", html)
    from html import unescape

    return re.sub(r"[ \t\r\f\v]+", " ", _OTHER_SPACES.sub(" ", unescape(text)))


def disagreements(stated, table: dict) -> list[str]:
    """One line per statement whose status differs from ``table`` (``{key: status}``,
    halves as ``key (half)``), or whose claim the table does not hold."""
    out = []
    for s in stated:
        if s.key not in table:
            out.append(f"{s.where}: {s.name} is stated as {s.status!r}, but no status table holds {s.key!r}")
        elif table[s.key] != s.status:
            out.append(f"{s.where}: {s.name} is stated as {s.status!r}; its status is {table[s.key]!r} "
                       f"(in: ...{s.context}...)")
    return out
