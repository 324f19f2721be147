"""Pages as blocks: the fenced blocks of a Markdown page, their markers, and how an output is
compared with the output the page shows.

A block's kind comes from its fence's language:

* ``sh``, ``bash``, ``shell``: a shell script; it must exit 0 (its output is not compared);
* ``console``: a transcript; lines starting with ``$ `` are commands (a line ending in ``\\``
  continues on the next), the lines after a command are its output, compared after masking;
* ``python``, ``py``: Python code; it must not raise. If it holds ``>>>`` prompts (and always for
  ``pycon``), it is a session: each statement's output (an expression's repr, what it prints,
  or ``Name: message`` for an exception) is compared with the lines shown under it; a statement
  with no line under it must only not raise;
* anything else (``text``, ``toml``, ``json``, ``rust``, no language): not run.

Markers are HTML comments (invisible when rendered) on the lines right above a fence (blank
lines between are allowed), one or more directives separated by ``;``::

    <!-- docs-check: skip "why it cannot run in CI" -->
    <!-- docs-check: long "what it runs" -->      run only by `scripts/docs-check --long`
    <!-- docs-check: root -->                     needs root (namespaces, TUN): skipped when not
                                                  root, unless CI=true, where it then fails
    <!-- docs-check: file NAME -->                the block is the file NAME in the page's folder
                                                  (written before the page's first block runs)
    <!-- docs-check: timeout SECONDS -->          instead of the default 120 s per block/command
                                                  (3 600 s for a long one)
    <!-- docs-check: before "COMMAND" -->         run COMMAND first (exit 0), unseen by readers:
                                                  what a reader did before, e.g. make a dataset

A page-level ``<!-- docs-check: skip-page "why" -->`` anywhere in a page skips all of it, and a
generated region is the text between ``<!-- docs-check: generated "COMMAND" -->`` and
``<!-- docs-check: end -->``: it must equal COMMAND's output (``--update`` rewrites it).
"""

from __future__ import annotations

import difflib
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

SHELL_LANGS = {"sh", "bash", "shell"}
PYTHON_LANGS = {"python", "py"}
DIRECTIVES = {"skip", "long", "root", "file", "timeout", "before", "skip-page", "generated", "end"}

MARKER = re.compile(r"^\s*<!--\s*docs-check:\s*(?P<body>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)[^`]*$")


class MarkerError(ValueError):
    """A marker the runner cannot read: reported as a failure of its page."""


@dataclass
class Block:
    page: str  # path relative to the repository
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    directives: dict = field(default_factory=dict)

    @property
    def kind(self) -> str | None:
        """``shell``, ``console``, ``python``, ``session`` (``>>>``), or None (not run)."""
        if "file" in self.directives:
            return "file"
        if self.lang in SHELL_LANGS:
            return "shell"
        if self.lang == "console":
            return "console"
        if self.lang == "pycon":
            return "session"
        if self.lang in PYTHON_LANGS:
            return "session" if any(ln.startswith(">>>") for ln in self.text.splitlines()) else "python"
        return None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass
class Region:
    """A generated region: lines ``start+1 .. end-1`` must equal ``command``'s output."""

    page: str
    start: int  # 1-based line of the `generated` marker
    end: int  # 1-based line of the `end` marker
    command: str
    text: str


@dataclass
class Page:
    path: str
    blocks: list[Block]
    regions: list[Region]
    skip: str | None = None  # the reason of a skip-page marker
    errors: list[str] = field(default_factory=list)


def outside_fences(text: str):
    """(line number, line) of every line outside fenced code blocks (the fences' own lines
    left out too)."""
    fence = None
    for i, line in enumerate(text.splitlines(), 1):
        if fence:
            if line.strip().startswith(fence):
                fence = None
            continue
        f = FENCE.match(line)
        if f:
            fence = f.group("fence")
            continue
        yield i, line


def parse_directives(body: str) -> dict:
    """``skip "why"; timeout 30`` -> {"skip": "why", "timeout": "30"}."""
    out: dict = {}
    for part in re.split(r';(?=(?:[^"]*"[^"]*")*[^"]*$)', body):  # `;` outside quotes
        part = part.strip()
        if not part:
            continue
        try:
            words = shlex.split(part)
        except ValueError as e:
            raise MarkerError(f"unreadable marker {part!r}: {e}") from None
        name, args = words[0], words[1:]
        if name not in DIRECTIVES:
            raise MarkerError(f"unknown directive {name!r} (known: {', '.join(sorted(DIRECTIVES))})")
        if name in ("skip", "long", "skip-page", "generated", "before") and len(args) != 1:
            raise MarkerError(f'{name} needs one quoted argument: {name} "..."')
        if name in ("file", "timeout") and len(args) != 1:
            raise MarkerError(f"{name} needs one argument")
        if name == "timeout" and not re.fullmatch(r"\d+(\.\d+)?", args[0]):
            raise MarkerError(f"timeout needs a number of seconds, got {args[0]!r}")
        if name == "file" and (args[0].startswith("/") or ".." in Path(args[0]).parts):
            raise MarkerError(f"file needs a relative name inside the page's folder, got {args[0]!r}")
        out[name] = args[0] if args else True
    return out


def parse_page(path: Path, rel: str) -> Page:
    """Every fenced block of a page with the directives above it, and its generated regions."""
    lines = path.read_text(encoding="utf-8").splitlines()
    page = Page(rel, [], [])
    pending: dict = {}  # directives waiting for the next fence
    region: tuple[int, str] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line)
        if m:
            try:
                d = parse_directives(m.group("body"))
            except MarkerError as e:
                page.errors.append(f"{rel}:{i + 1}: {e}")
                d = {}
            if "skip-page" in d:
                page.skip = d.pop("skip-page")
            if "generated" in d:
                if region:
                    page.errors.append(f"{rel}:{i + 1}: generated region inside another one")
                region = (i + 1, d.pop("generated"))
            elif "end" in d:
                if not region:
                    page.errors.append(f"{rel}:{i + 1}: 'end' without a 'generated' marker")
                else:
                    start, cmd = region
                    text = "\n".join(lines[start:i]).strip("\n")
                    page.regions.append(Region(rel, start, i + 1, cmd, text))
                    region = None
                d.pop("end")
            pending.update(d)
            i += 1
            continue
        f = FENCE.match(line)
        if f:
            indent, fence = f.group("indent"), f.group("fence")
            body = []
            j = i + 1
            while j < len(lines):
                close = lines[j].strip()
                if close.startswith(fence[0] * len(fence)) and not close.strip(fence[0]):
                    break
                body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j].lstrip())
                j += 1
            if j == len(lines):
                page.errors.append(f"{rel}:{i + 1}: unclosed code fence")
            page.blocks.append(Block(rel, i + 1, f.group("info").lower(), "\n".join(body) + "\n", pending))
            pending = {}
            i = j + 1
            continue
        if line.strip() and pending:
            page.errors.append(f"{rel}:{i}: a docs-check marker must sit right above a code fence")
            pending = {}
        i += 1
    if region:
        page.errors.append(f"{rel}:{region[0]}: generated region without its 'end' marker")
    if pending:
        page.errors.append(f"{rel}: a docs-check marker at the end of the page, with no block")
    return page


# ---------------------------------------------------------------------------------------------
# Console transcripts and Python sessions


def console_commands(text: str) -> list[tuple[int, str, str]]:
    """``$ cmd`` lines of a transcript -> (offset of the command's line, command, expected)."""
    out: list[tuple[int, str, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("$ ") or ln == "$":
            start, cmd = i, [ln[2:]]
            while cmd[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                nxt = lines[i]
                cmd.append(nxt[2:] if nxt.startswith("> ") else nxt)
            out.append((start, "\n".join(cmd), []))
        elif out:
            out[-1][2].append(ln)
        elif ln.strip():
            out.append((i, "", [ln]))  # output before any command: reported as an error
        i += 1
    return [(o, c, "\n".join(e)) for o, c, e in out]


def session_examples(text: str) -> list[tuple[int, str, str]]:
    """``>>>`` statements of a session -> (offset of the first line, source, expected output).

    ``...`` right after a statement's lines continues the statement; after output lines it is
    the any-lines wildcard (as in doctest). Lines before the first ``>>>`` are code too.
    """
    out: list[list] = []
    for i, ln in enumerate(text.splitlines()):
        if ln.startswith(">>>"):
            out.append([i, [ln[4:]], []])
        elif out and (ln.startswith("... ") or ln == "...") and not out[-1][2]:
            out[-1][1].append(ln[4:])
        elif out:
            out[-1][2].append(ln)
        elif ln.strip():
            out.append([i, [ln], []])
    return [(o, "\n".join(src), "\n".join(exp)) for o, src, exp in out]


# ---------------------------------------------------------------------------------------------
# Comparison

#: Run-dependent values, replaced in both the shown and the actual output before comparing.
#: Each is (what, pattern, replacement). Everything else a page shows is compared as it is;
#: ``...`` stands for any text within a line, or for any lines when alone on its line.
MASKS: list[tuple[str, re.Pattern, str]] = [
    (
        "a simulation's wall time and speed-up (`simulated 221.2 s in 0.002 s (118934x)`)",
        re.compile(r"\bin \d+(?:\.\d+)? s \(\d+x\)"),
        "in <wall> s (<speed>x)",
    ),
    (
        'a measured duration in JSON (`"wall_s": 0.01`, `elapsed_s`, `cpu_s`)',
        re.compile(r'"(wall_s|elapsed_s|cpu_s)":\s*-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?'),
        r'"\1": <t>',
    ),
    (
        "a command's own wall time (`done in 12.3 s`, `2600 runs in 11.6 s`, `runs 1.1 s, report 2.0 s`)",
        re.compile(r"\b(done in|runs in|runs|report) \d+(?:\.\d+)? s\b"),
        r"\1 <t> s",
    ),
]


def mask(text: str) -> str:
    for _, pattern, repl in MASKS:
        text = pattern.sub(repl, text)
    return text


def _normalise(text: str, blanks: bool = False) -> list[str]:
    """Lines without trailing blanks or blank lines at either end; with ``blanks``, every run
    of blanks inside a line as one space (columns that widen do not make a page wrong)."""
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").split("\n")]
    if blanks:
        lines = [re.sub(r"[ \t]+", " ", ln) for ln in lines]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def _pattern(expected: list[str]) -> re.Pattern:
    parts = []
    for ln in expected:
        if ln.strip() == "...":  # (blanks are runs of one space here)
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(piece) for piece in ln.split("...")) + r"\n")
    return re.compile("".join(parts))


def matches(expected: str, actual: str) -> bool:
    """Does ``actual`` match ``expected`` (masked, trailing spaces and blank edges ignored)?"""
    exp = _normalise(mask(expected), blanks=True)
    act = _normalise(mask(actual), blanks=True)
    return _pattern(exp).fullmatch("".join(ln + "\n" for ln in act)) is not None


def diff(expected: str, actual: str) -> str:
    """A unified diff of the shown output against the actual one, both masked."""
    exp = _normalise(mask(expected))
    act = _normalise(mask(actual))
    return "\n".join(difflib.unified_diff(exp, act, "shown", "actual", lineterm="", n=2))
