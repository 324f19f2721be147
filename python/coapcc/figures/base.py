"""What every figure of the reports shares: encoding (:func:`save`), a fixed layout
(:func:`layout`), colours, legends, panels and box drawing.

No pyplot state: every figure is a :class:`matplotlib.figure.Figure` of its own, so figures
can be drawn in any process and in any order.
"""

from __future__ import annotations

import io
import math
from typing import Any

__all__ = ["save", "layout", "DPI", "MAX_WIDTH_IN", "TITLE_Y"]

#: Resolution of every figure file (and of the PNG embedded in the report).
DPI = 90
#: Widest figure, inches: wider ones would be scaled down until their text is unreadable.
MAX_WIDTH_IN = 16.0


def save(fig, stem, formats=("png", "svg", "pdf")) -> dict[str, bytes]:
    """Encode ``fig`` in every format (PNG at :data:`DPI` dpi); returns ``{format: bytes}``
    and writes ``stem.<format>`` when ``stem`` is a path."""
    out = {}
    for fmt in formats:
        buf = io.BytesIO()
        # no bbox_inches="tight": every figure is laid out already (layout), and a tight
        # bounding box would draw the figure twice per format
        fig.savefig(buf, format=fmt, dpi=DPI, metadata=_metadata(fmt))
        out[fmt] = buf.getvalue()
        if stem is not None:
            stem.with_suffix(f".{fmt}").write_bytes(out[fmt])
    return out


def _metadata(fmt: str) -> dict:
    # No creation date: the same figure gives the same bytes.
    if fmt == "pdf":
        return {"CreationDate": None, "ModDate": None}
    if fmt == "svg":
        return {"Date": None}
    return {}


def layout(
    fig,
    rows: int,
    cols: int,
    *,
    top: float = 0.75,
    bottom: float = 0.55,
    left: float = 0.85,
    right: float = 0.2,
    wgap: float = 0.85,
    hgap: float = 0.9,
) -> None:
    """Place the figure's ``rows`` x ``cols`` panels with margins and gaps given in inches
    (room for a legend above, titles, tick labels and axis labels). Nothing is measured:
    ``tight_layout`` lays out every label of every panel to place them, and that was most of
    a report's drawing time."""
    w, h = fig.get_size_inches()
    aw = max(0.5, (w - left - right - wgap * (cols - 1)) / cols)
    ah = max(0.5, (h - top - bottom - hgap * (rows - 1)) / rows)
    fig.subplots_adjust(
        left=min(0.45, left / w),
        right=max(0.55, 1 - right / w),
        bottom=min(0.45, bottom / h),
        top=max(0.55, 1 - top / h),
        wspace=wgap / aw if cols > 1 else 0.2,
        hspace=hgap / ah if rows > 1 else 0.2,
    )


def legend_top(rows: int, title: bool = True) -> float:
    """Inches above the panels for a legend of ``rows`` rows (:func:`legend`) and panel titles."""
    return 0.12 + 0.24 * max(rows, 1) + (0.3 if title else 0.0)


def legend(fig, series: list[str], colors: dict, kind: str = "patch", ncol: int | None = None) -> int:
    """One legend above the panels: a coloured patch (``kind="patch"``) or a line with a marker
    (``"line"``) per series, in ``ncol`` columns (at most six by default), fewer when they
    would not fit the figure's width; returns its number of rows (for :func:`legend_top`)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if kind == "line":
        handles = [Line2D([], [], color=colors[s], marker="o", label=s) for s in series]
    else:
        handles = [Patch(facecolor=colors[s], label=s) for s in series]
    # an entry is about 0.085 in per character at the legend's font size, plus its handle
    entry = 0.085 * max((len(str(s)) for s in series), default=1) + 0.75
    fit = max(1, int(fig.get_size_inches()[0] // entry))
    ncol = max(1, min(len(series), 6 if ncol is None else ncol, fit))
    fig.legend(handles=handles, loc="upper center", ncol=ncol, frameon=False, bbox_to_anchor=(0.5, 1.0))
    return math.ceil(max(len(series), 1) / ncol)


def colors(series: list[str]) -> dict[str, Any]:
    """A colour per series (tab10, or tab20 beyond ten series)."""
    import matplotlib

    cmap = matplotlib.colormaps["tab10"] if len(series) <= 10 else matplotlib.colormaps["tab20"]
    return {s: cmap(i % cmap.N) for i, s in enumerate(series)}


def ordered(values) -> list:
    """Distinct values in order of first appearance."""
    import pandas as pd

    return list(pd.unique(pd.Series(list(values) if not hasattr(values, "dtype") else values)))


def sorted_values(series) -> list:
    """Distinct values: numbers ascending, anything else in order of appearance."""
    vals = [v.item() if hasattr(v, "item") else v for v in ordered(series)]
    try:
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            return sorted(vals)
    except TypeError:
        pass
    return vals


def panels(df, dims: list[str]) -> list[tuple]:
    """The panel keys present in ``df``, ordered dimension by dimension (numbers ascending,
    everything else in order of appearance)."""
    if not dims:
        return [()]
    orders = [{v: i for i, v in enumerate(sorted_values(df[c]))} for c in dims]
    keys = [
        tuple(v.item() if hasattr(v, "item") else v for v in r)
        for r in df[dims].drop_duplicates().itertuples(index=False)
    ]
    return sorted(keys, key=lambda k: tuple(o[v] for o, v in zip(orders, k)))


def grid(n_panels: int, n_cols_hint: int) -> tuple[int, int]:
    """Rows and columns of a grid of ``n_panels`` (at most four columns)."""
    cols = max(1, min(n_panels, n_cols_hint, 4))
    rows = (n_panels + cols - 1) // cols
    return rows, cols


def hide_unused(axes, used: int, rows: int, cols: int) -> None:
    for j in range(used, rows * cols):
        axes[j // cols][j % cols].set_visible(False)


def plain_log_axis(ax) -> None:
    """A log y axis labelled in plain numbers: ticks at 1, 2 and 5 times each power of ten
    when the axis spans less than a factor 200, else at the powers of ten. Fixed ticks, no
    minor ones: matplotlib's log locators made half of a figure's drawing time. Call it once
    the axis has its limits."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    lo, hi = ax.get_ylim()
    lo = max(lo, 1e-12)
    if hi <= lo:
        return
    steps = (1, 2, 5) if hi / lo < 200 else (1,)
    ticks = [
        m * 10.0**e
        for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
        for m in steps
        if lo <= m * 10.0**e <= hi
    ]
    if len(ticks) < 2:  # a narrow range: matplotlib's own choice, labelled plainly
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        return
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_locator(NullLocator())


def log_x(ax, values) -> None:
    """A log x axis with a tick at each of ``values`` and no minor ticks (matplotlib's
    automatic log ticks cost most of a small figure's drawing time)."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

    values = list(values)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(values))
    ax.xaxis.set_major_formatter(FixedFormatter([f"{v:g}" for v in values]))
    ax.xaxis.set_minor_locator(NullLocator())
    if len(values) == 1:
        ax.set_xlim(values[0] / 2, values[0] * 2)
    ax.grid(True, alpha=0.3)


def auto_log(values) -> bool:
    """Whether positive ``values`` spanning more than a factor 20 are better on a log axis."""
    pos = values[values > 0]
    return len(pos) == len(values) and len(pos) > 0 and pos.max() / pos.min() > 20


def fmt_value(col: str, v: Any) -> str:
    if col == "buffer_bytes":
        return f"buffer {int(v)} B"
    if col == "errors":
        return f"errors {v}"
    if col == "workload":
        return str(v)
    return f"{col}={v}"


#: A panel title's height, in axes coordinates: just above the panel, where matplotlib's own
#: placement puts it when nothing is drawn above the axes. That placement measures every tick
#: label of the panel on each draw (a sixth of an empty panel's drawing time), to move the title
#: above a top x axis or a y axis offset text ("1e6") that these panels never have.
TITLE_Y = 1.0


def title_panel(ax, text: str) -> None:
    """A panel's title (at :data:`TITLE_Y`), smaller when it would overrun a narrow panel."""
    width = ax.get_position().width * ax.figure.get_size_inches()[0]
    ax.set_title(text, fontsize=10 if len(text) * 0.075 <= width else 8, y=TITLE_Y)


def panel_title(dims: list[str], key: tuple) -> str:
    return " · ".join(fmt_value(c, v) for c, v in zip(dims, key)) or "all runs"


def boxes(ax, stats: list[dict], positions: list[float], width: float, color) -> None:
    """Draw boxes from precomputed statistics (``Axes.bxp``'s dictionaries: ``whislo``,
    ``q1``, ``med``, ``q3``, ``whishi``; whiskers at the 10th and 90th percentiles, no fliers)
    at ``positions``, filled with ``color`` (one colour, or one per box: a panel's series side
    by side, which do not overlap): the boxes as one polygon collection, the whiskers and caps
    as one line collection and the medians as another, so a panel of dozens of boxes has three
    artists (``bxp`` makes six per box, most of a report's drawing time; a collection per
    series, a fixed cost per collection drawn). The axes' limits are left to the caller
    (:func:`box_limits`): autoscaling after every collection cost more than drawing them."""
    from matplotlib.collections import LineCollection, PolyCollection

    if not stats:
        return
    w = width * 0.85
    polys, lines, medians = [], [], []
    for st, x in zip(stats, positions):
        lo, hi = x - w / 2, x + w / 2
        polys.append([(lo, st["q1"]), (hi, st["q1"]), (hi, st["q3"]), (lo, st["q3"])])
        cap = w / 4
        lines += [
            [(x, st["q1"]), (x, st["whislo"])],
            [(x, st["q3"]), (x, st["whishi"])],
            [(x - cap, st["whislo"]), (x + cap, st["whislo"])],
            [(x - cap, st["whishi"]), (x + cap, st["whishi"])],
        ]
        medians.append([(lo, st["med"]), (hi, st["med"])])
    faces = color if isinstance(color, list) else [color]
    ax.add_collection(
        PolyCollection(polys, facecolors=faces, edgecolors="black", linewidths=0.8, alpha=0.85),
        autolim=False,
    )
    ax.add_collection(LineCollection(lines, colors="black", linewidths=0.8), autolim=False)
    ax.add_collection(LineCollection(medians, colors="black", linewidths=1.2), autolim=False)


def box_limits(ax, stats, scale: str) -> None:
    """The y range of a panel of boxes (``stats``: their dictionaries): from 0 (linear) or
    a little below the lowest whisker (log) to a little above the highest."""
    los = [st["whislo"] for st in stats if math.isfinite(st["whislo"])]
    his = [st["whishi"] for st in stats if math.isfinite(st["whishi"])]
    if not los or not his:  # no box
        return
    lo, hi = min(los), max(his)
    if scale == "log":
        lo = lo if lo > 0 else hi / 10
        ax.set_ylim(lo / 1.25, hi * 1.25 if hi > lo else lo * 10)
    else:
        ax.set_ylim(min(0.0, lo), hi * 1.05 if hi > 0 else 1.0)
