"""Figures of mesh studies (``kind = "mesh"``): Ancillotti & Bruno's figures (the mapping is
in docs/mesh.md), drawn from the runs table's per-point aggregates:

* :func:`ci_points` / :func:`ci_figure`: the mean over replications of run metrics against
  an axis, one line per algorithm, 95 % confidence intervals, one panel per grid or load;
* :func:`box_points` / :func:`box_figure`: distributions drawn from each run's quantiles
  (the median over replications of each run's p10 / p25 / median / p75 / p90).
"""

from __future__ import annotations

import math

from ..stats import mean_ci
from .base import box_limits, boxes, colors, layout, legend, legend_top

__all__ = ["ci_points", "ci_figure", "box_points", "box_figure"]

_Q = ("p10", "p25", "median", "p75", "p90")


def fmt_x(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def ci_points(df, x: str, cols: list[str], panel: str, series: str = "algorithm"):
    """Per (panel, series, x) and column of ``cols``: the mean over the runs and its 95 %
    confidence half-width (0 with one run)."""
    import pandas as pd

    rows = []
    for (pv, s, xv), g in df.groupby([panel, series, x], sort=False):
        for col in cols:
            m, h, _ = mean_ci(g[col])
            if not math.isnan(m):
                rows.append(
                    {
                        "panel": pv,
                        "series": s,
                        "x": xv,
                        "col": col,
                        "mean": m,
                        "half": 0.0 if math.isnan(h) else h,
                    }
                )
    return pd.DataFrame(rows, columns=["panel", "series", "x", "col", "mean", "half"])


def ci_figure(
    points,
    ys: list[tuple[str, str]],
    panels: list,
    series: list,
    xs: list,
    panel_fmt,
    xlabel: str,
    x_fmt=fmt_x,
):
    """One row per (column, label) in ``ys``, one panel per value of ``panels``: the mean
    over replications of the column against x (positions of ``xs``), one line per series,
    95 % CI bars; from :func:`ci_points`."""
    from matplotlib.figure import Figure

    cmap = colors(series)
    pos = {v: i for i, v in enumerate(xs)}
    fig = Figure(figsize=(max(4.2, 3.6 * len(panels)) + 0.4, 2.9 * len(ys) + 0.6))
    axes = fig.subplots(len(ys), len(panels), squeeze=False)
    for ri, (col, ylabel) in enumerate(ys):
        for pi, pv in enumerate(panels):
            ax = axes[ri][pi]
            sub = points[(points["panel"] == pv) & (points["col"] == col)]
            for si, s in enumerate(series):
                p = sub[sub["series"] == s]
                if len(p):
                    px = [pos[v] + (si - (len(series) - 1) / 2) * 0.08 for v in p["x"]]
                    ax.errorbar(
                        px,
                        p["mean"],
                        yerr=p["half"],
                        color=cmap[s],
                        marker="o",
                        ms=4,
                        capsize=3,
                        lw=1,
                        label=s,
                    )
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels([x_fmt(v) for v in xs])
            ax.set_ylim(bottom=0)
            ax.grid(axis="y", alpha=0.3)
            if ri == 0:
                ax.set_title(panel_fmt(pv), fontsize=10)
            if ri == len(ys) - 1:
                ax.set_xlabel(xlabel)
            if pi == 0:
                ax.set_ylabel(ylabel)
    lrows = legend(fig, series, cmap, "line", ncol=len(series))
    layout(fig, len(ys), len(panels), top=legend_top(lrows), hgap=0.55)
    return fig


def box_points(long, panel: str, x: str, series: str):
    """Per (panel, x, series): the median over replications of each run's p10 / p25 / median
    / p75 / p90. ``long`` has columns panel, x, series and those quantiles."""
    g = long.groupby([panel, x, series], sort=False)[list(_Q)].median()
    return g.dropna().reset_index().rename(columns={panel: "panel", x: "x", series: "series"})


def box_figure(points, panels: list, series: list, xs: list, panel_fmt, xlabel: str, ylabel: str):
    """Box plots (whiskers at p10 and p90, no fliers) from :func:`box_points`: one panel per
    value of ``panels``, x positions ``xs``, one box per series."""
    from matplotlib.figure import Figure

    cmap = colors(series)
    fig = Figure(figsize=(max(4.2, (0.35 * len(xs) * len(series) + 1.4)) * len(panels) + 0.4, 3.6))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    width = 0.8 / max(1, len(series))
    for pi, pv in enumerate(panels):
        ax = axes[pi]
        sub = points[points["panel"] == pv]
        drawn = []
        for xi, xv in enumerate(xs):
            for si, s in enumerate(series):
                g = sub[(sub["x"] == xv) & (sub["series"] == s)]
                if g.empty:
                    continue
                q = g.iloc[0]
                st = {
                    "whislo": q["p10"],
                    "q1": q["p25"],
                    "med": q["median"],
                    "q3": q["p75"],
                    "whishi": q["p90"],
                }
                boxes(ax, [st], [xi - 0.4 + width * (si + 0.5)], width, cmap[s])
                drawn.append(st)
        box_limits(ax, drawn, "linear")
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([fmt_x(v) for v in xs])
        ax.set_xlim(-0.6, len(xs) - 0.4)
        ax.set_xlabel(xlabel)
        ax.set_title(panel_fmt(pv), fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        if pi == 0:
            ax.set_ylabel(ylabel)
    lrows = legend(fig, series, cmap, ncol=len(series))
    layout(fig, 1, len(panels), top=legend_top(lrows))
    return fig
