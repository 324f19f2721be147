"""Timings quoted in the pages come from BENCHMARKS.md, with its date, and from nowhere else.

A *timing claim* is a sentence (outside code blocks) with a word of measurement (took, wall,
CPU, real time, speed-up, cost, per event, ns/packet, measured, median, or a citation of
BENCHMARKS.md) and durations
(``11.3 ms``, ``25.6 s``), in a paragraph that holds a date (``YYYY-MM-DD``). Every duration of
a claim must appear, as written (spaces inside numbers ignored), in a row of BENCHMARKS.md's
tables that carries the claim's date (the sentence's own, else the paragraph's). It is a net
for quoted measurements, not a parser of English: a sentence about simulated durations that
uses a word of measurement is a claim too, and is best reworded.
"""

from __future__ import annotations

import re
from pathlib import Path

from .blocks import outside_fences
from .run import Result

DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
MEASURE = re.compile(
    r"\b(took|takes|wall|CPU|real time|speed-up|costs?|per event|ns/packet|per packet|measured|timed|medians?)\b",
    re.I,
)
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s")
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`*])")
DURATION = re.compile(r"(?<![\w.])(\d{1,3}(?:[  ]\d{3})*(?:\.\d+)?|\d+(?:\.\d+)?)\s?(ns|µs|us|ms|s|min)\b")
BENCHMARKS = "BENCHMARKS.md"
EXCLUDED = {BENCHMARKS, "docs/benchmarks-history.md"}


def _norm(number: str, unit: str) -> str:
    return re.sub(r"[  ]", "", number) + unit


def paragraphs(text: str):
    """(first line, text) of every paragraph outside fenced blocks; a list item starts one,
    and a fenced block ends one."""
    para: list[str] = []
    start = 0
    prev = 0
    for i, line in outside_fences(text):
        if para and i != prev + 1:  # a fenced block came between
            yield start, " ".join(para)
            para = []
        prev = i
        if not line.strip() or LIST_ITEM.match(line):
            if para:
                yield start, " ".join(para)
            para = []
            if not line.strip():
                continue
        if not para:
            start = i
        para.append(line.strip())
    if para:
        yield start, " ".join(para)


def benchmark_rows(repo: Path) -> list[tuple[set[str], set[str]]]:
    """(dates, durations) of every table row of BENCHMARKS.md."""
    rows = []
    for line in (repo / BENCHMARKS).read_text(encoding="utf-8").splitlines():
        if line.startswith("|"):
            rows.append((set(DATE.findall(line)), {_norm(n, u) for n, u in DURATION.findall(line)}))
    return rows


def claims(text: str):
    """(line, dates, durations) of every timing claim of a page (line: its paragraph's)."""
    for line, para in paragraphs(text):
        para_dates = DATE.findall(para)
        if not para_dates:
            continue
        for sentence in SENTENCE.split(para):
            if not MEASURE.search(sentence) and "BENCHMARKS.md" not in sentence:
                continue
            durations = [_norm(n, u) for n, u in DURATION.findall(DATE.sub("", sentence))]
            if durations:
                yield line, DATE.findall(sentence) or para_dates, durations


def check_timings(repo: Path, pages: list[str] | None = None) -> list[Result]:
    from .__main__ import default_pages

    rows = benchmark_rows(repo)
    out = []
    for page in pages or default_pages(repo):
        if page in EXCLUDED:
            continue
        for line, dates, durations in claims((repo / page).read_text(encoding="utf-8")):
            missing = [d for d in durations if not any(d in figs and set(dates) & ds for ds, figs in rows)]
            where = f"{page}:{line}"
            if missing:
                out.append(
                    Result(
                        where,
                        "timing",
                        "failed",
                        f"quotes {', '.join(missing)} ({', '.join(dates)}): not in a table row of "
                        f"{BENCHMARKS} with that date",
                    )
                )
            else:
                out.append(Result(where, "timing", "passed"))
    return out
