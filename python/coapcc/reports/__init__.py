"""What a report is made of: the document every study kind's report function returns to the
one report builder (:mod:`coapcc.reporting`), which draws its figures, writes its files and
renders it through the one template (``templates/report.html.j2``, strict).

A kind's report function (:attr:`coapcc.kinds.StudyKind.report`) is called as
``f(ctx: Context) -> Report``. It reads its datasets through ``ctx`` (only the columns it
needs), computes its tables, and describes its figures as :class:`Figure` items whose
``draw`` callable makes a matplotlib figure from an aggregated table (the builder calls
them, several at a time in worker processes). It writes no file and builds no HTML.

A report is a title, an overview, warnings, and :class:`Section` s, each a list of items:
:class:`Figure`, :class:`Table`, :class:`Text`, :class:`Code` (a collapsible block of text),
:class:`KeyValues`, :class:`Details` (a collapsible group of items) and sub-sections. CSV tables written beside the report are :attr:`Report.files`. The
builder puts the claims table first when the study has claims
(:mod:`coapcc.reports.claims`), and the software versions last.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "Report",
    "Section",
    "Figure",
    "Table",
    "Text",
    "Code",
    "KeyValues",
    "Details",
    "Context",
    "Dataset",
    "table",
]


@dataclass
class Table:
    """A table: column names and rows of display strings. ``collapsed``: shown folded under
    this summary line (``<details>``)."""

    columns: list[str]
    rows: list[list[str]]
    caption: str = ""
    collapsed: str = ""
    kind: str = field(default="table", init=False)


def table(df, floatfmt: str = "{:.4g}", *, caption: str = "", collapsed: str = "", nan: str = "") -> Table:
    """A :class:`Table` of the DataFrame ``df`` (floats formatted with ``floatfmt``, NaN as
    ``nan``)."""
    rows = []
    for rec in df.itertuples(index=False):
        cells = []
        for v in rec:
            if isinstance(v, float):
                cells.append(nan if v != v else floatfmt.format(v))
            else:
                cells.append(str(v))
        rows.append(cells)
    return Table([str(c) for c in df.columns], rows, caption=caption, collapsed=collapsed)


@dataclass
class Figure:
    """A figure: ``draw()`` returns a matplotlib :class:`~matplotlib.figure.Figure` (called
    by the builder, possibly in another process: it must only draw). ``notes``: a table
    shown under it."""

    id: str
    caption: str
    draw: Callable[[], Any]
    notes: Table | None = None
    kind: str = field(default="figure", init=False)
    #: Filled by the builder: the embedded PNG (base64) and the other files written.
    png_b64: str = field(default="", init=False)
    files: list = field(default_factory=list, init=False)


@dataclass
class Text:
    """A paragraph (``muted``: in grey, for explanations of a table)."""

    text: str
    muted: bool = False
    kind: str = field(default="text", init=False)


@dataclass
class Code:
    """A collapsible block of preformatted text (a configuration, an experiment file)."""

    title: str
    text: str
    open: bool = False
    kind: str = field(default="code", init=False)


@dataclass
class KeyValues:
    """A two-column table of (key, value) pairs."""

    pairs: list
    kind: str = field(default="kv", init=False)


@dataclass
class Details:
    """A collapsible group of items under a summary line."""

    title: str
    items: list = field(default_factory=list)
    open: bool = False
    kind: str = field(default="details", init=False)


@dataclass
class Section:
    """A heading and its items (figures, tables, texts, code blocks, sub-sections)."""

    id: str
    title: str
    items: list = field(default_factory=list)
    kind: str = field(default="section", init=False)

    def add(self, *items) -> Section:
        self.items.extend(i for i in items if i is not None)
        return self

    def figures(self) -> Iterable[Figure]:
        for i in self.items:
            if isinstance(i, Figure):
                yield i
            elif isinstance(i, (Section, Details)):
                yield from Section.figures(i)


@dataclass
class Report:
    """A study's report (see the module's documentation)."""

    title: str
    description: str = ""
    #: (key, value) pairs shown under the title.
    overview: list = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Notes of the study (algorithms skipped, figures left out and why), as a list.
    notes: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    #: Figures left out, as (figure id, why) pairs.
    omitted: list[tuple[str, str]] = field(default_factory=list)
    #: Files written beside the report: name -> DataFrame (as CSV) or text.
    files: dict[str, Any] = field(default_factory=dict)

    def figures(self) -> list[Figure]:
        return [f for s in self.sections for f in s.figures()]


@dataclass
class Dataset:
    """One dataset of the report: its folder, its name in the report (tags its series when
    two are compared) and its ``experiment.json``."""

    path: Path
    name: str
    experiment: dict

    def load(self, columns=None, flow_columns=None, sort: bool = True):
        """:func:`coapcc.load_results` of this dataset, only the columns asked for."""
        from ..dataset import load_results

        return load_results(self.path, columns=columns, flow_columns=flow_columns, sort=sort)


@dataclass
class Context:
    """What a kind's report function gets: the datasets (one, or two to compare), and the
    report's options."""

    datasets: list[Dataset]
    out: Path
    trace: bool = True
    trace_run: str | None = None
    runner: Any = None
    title: str | None = None
    log: Any = None
    #: ``progress(text)``: a line of progress on the log (nothing when quiet).
    progress: Callable[[str], None] = lambda text: None
    #: The sweep outcome of ``coapcc reproduce`` (for the overview), or None.
    outcome: Any = None
    #: ``draw(figure)``: start drawing a figure now, while the report goes on (optional: the
    #: builder draws every figure of the document at the end anyway).
    draw: Callable[[Any], None] = lambda figure: None
    #: ``run(fn)``: start ``fn()`` now in a process of its own (when the builder has them),
    #: while the report goes on; returns a job whose ``result()`` is ``fn()``'s value. A
    #: forked process runs ``fn`` (nothing of it is pickled); its value is pickled back, so a
    #: large one (a section of thousands of rows) costs the report the time to read it.
    run: Callable[[Callable[[], Any]], Any] = field(default=None)

    def __post_init__(self):
        if self.run is None:
            from ..drawing import Job

            self.run = Job

    @property
    def compare(self) -> bool:
        return len(self.datasets) > 1

    def tag(self, value: str, i: int) -> str:
        """``value`` tagged with dataset ``i``'s name when two datasets are compared."""
        return f"{value} [{self.datasets[i].name}]" if self.compare else value

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.datasets]


def dataset_names(paths: list[os.PathLike], experiments: list[dict]) -> list[str]:
    """The datasets' names in a report: the experiments' names, or the folders' names when
    those are equal, or ``A: name`` and ``B: name``."""
    names = [e.get("name") or Path(p).name for p, e in zip(paths, experiments)]
    if len(set(names)) < len(names):
        names = [Path(p).name for p in paths]
    if len(set(names)) < len(names):
        names = [f"{chr(65 + i)}: {n}" for i, n in enumerate(names)]
    return names
