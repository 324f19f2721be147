"""Figures of simulator runs' flows, each drawn from an aggregated table (the rows of a
dataset never reach a figure): box plots from their quantiles, confidence intervals from
per-case means, CDFs from quantile curves, histograms from counts.

* :func:`box_figure`: per-flow box plots (boxes at the quartiles, whiskers at p10 / p90, no
  fliers; ANRW 2018 and FASOR paper style), one panel per case, x = number of clients; the
  statistics come from :func:`box_stats`;
* :func:`ci_figure`: the mean over replications of a per-run statistic with its 95 %
  confidence interval (Student t), x = number of clients (:func:`ci_stats`);
* :func:`cdf_figure`: FCT distributions at each panel's largest number of clients
  (:func:`cdf_curves`);
* :func:`histogram_figure`: retransmissions per exchange (ANRW Table 2 style).

Percentiles use linear interpolation between closest ranks (numpy's default).
"""

from __future__ import annotations

from ..stats import ci95_half
from .base import (
    MAX_WIDTH_IN,
    auto_log,
    box_limits,
    boxes,
    colors,
    grid,
    hide_unused,
    layout,
    legend,
    legend_top,
    panel_title,
    panels,
    plain_log_axis,
    sorted_values,
    title_panel,
)

__all__ = [
    "box_stats",
    "box_figure",
    "ci_stats",
    "ci_figure",
    "cdf_curves",
    "cdf_figure",
    "histogram_figure",
]

_Q = (0.10, 0.25, 0.50, 0.75, 0.90)
_QNAMES = ("p10", "p25", "median", "p75", "p90")


def box_stats(flows, value: str, dims: list[str], series_col: str = "series", mask=None):
    """Per case (``dims``, clients, series): the 10th, 25th, 50th, 75th and 90th percentiles
    of ``value`` over its flows (NaN ignored; only the rows of the boolean array ``mask``
    when given), and the value's range over those flows (``attrs["min"]``, ``attrs["max"]``,
    ``attrs["positive"]``: every value > 0), which chooses the axis scale."""
    import numpy as np
    import pandas as pd

    v = flows[value].to_numpy(dtype=float, na_value=np.nan)
    keep = ~np.isnan(v) if mask is None else (~np.isnan(v) & mask)
    cols = [*dims, "clients", series_col]
    if not keep.any():
        out = pd.DataFrame(columns=[*cols, *_QNAMES])
    else:
        # grouped by the key columns themselves: no copy of the flows table
        vals = pd.Series(np.where(keep, v, np.nan), index=flows.index)
        g = vals[keep].groupby([flows[c][keep] for c in cols], sort=False, observed=True)
        qs = g.quantile(list(_Q)).unstack()
        qs.columns = list(_QNAMES)
        out = qs.reset_index()
        for c in cols:  # categories (the flows' keys) back to plain values
            if isinstance(out[c].dtype, pd.CategoricalDtype):
                out[c] = out[c].astype(out[c].cat.categories.dtype)
    x = v[keep]
    out.attrs.update(
        min=float(x.min()) if len(x) else float("nan"),
        max=float(x.max()) if len(x) else float("nan"),
        positive=bool(len(x) and (x > 0).all()),
    )
    return out


def box_figure(stats, ylabel: str, dims: list[str], series: list[str], scale: str = "auto", title: str = ""):
    """Box plots from :func:`box_stats`: one panel per value of ``dims``, x = clients, one box
    per series (in the order of ``series``). Boxes at quartiles, whiskers at p10/p90, no
    fliers. ``scale``: ``log``, ``linear``, ``symlog`` or ``auto`` (log when every value is
    positive and they span more than a factor 20)."""
    from matplotlib.figure import Figure

    series_col = stats.columns[len(dims) + 1]
    keys = list(panels(stats, dims))
    series = [s for s in series if (stats[series_col] == s).any()]
    st = {}
    for r in stats.itertuples(index=False):
        st[tuple(r[: len(dims) + 2])] = {
            "whislo": r[-5],
            "q1": r[-4],
            "med": r[-3],
            "q3": r[-2],
            "whishi": r[-1],
        }
    cmap = colors(series)
    xs_all = sorted_values(stats["clients"]) if len(stats) else []
    n_buf = stats["buffer_bytes"].nunique() if "buffer_bytes" in dims else 4
    pw = min(7.0, max(3.6, 0.22 * len(xs_all) * len(series) + 1.2))
    rows, cols = grid(len(keys), min(n_buf, max(1, int(MAX_WIDTH_IN // pw))))
    fig = Figure(figsize=(pw * cols, 3.4 * rows + 0.6))
    axes = fig.subplots(rows, cols, squeeze=False)
    if scale == "auto":
        a = stats.attrs
        scale = "log" if a.get("positive") and a["max"] / a["min"] > 20 else "linear"
    width = 0.8 / max(1, len(series))
    for i, key in enumerate(keys):
        ax = axes[i // cols][i % cols]
        xs = sorted({k[len(dims)] for k in st if k[: len(dims)] == key})
        # every series of the panel in one call (side by side, they do not overlap)
        drawn, at, face = [], [], []
        for si, s in enumerate(series):
            for xi, x in enumerate(xs):
                b = st.get((*key, x, s))
                if b is not None:
                    drawn.append(b)
                    at.append(xi - 0.4 + width * (si + 0.5))
                    face.append(cmap[s])
        boxes(ax, drawn, at, width, face)
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([str(x) for x in xs])
        ax.set_xlim(-0.6, len(xs) - 0.4)
        ax.set_xlabel("clients")
        ax.set_ylabel(ylabel)
        here = [b for k, b in st.items() if k[: len(dims)] == key]
        if scale == "log":
            ax.set_yscale("log")
            box_limits(ax, here, "log")
            plain_log_axis(ax)
        elif scale == "linear":
            box_limits(ax, here, "linear")
            if max((b["whishi"] for b in here), default=0.0) <= 0:
                ax.set_ylim(0, 1.0)
                ax.text(0.5, 0.5, "none", transform=ax.transAxes, ha="center", va="center", color="0.4")
        elif scale == "symlog":
            from matplotlib.ticker import FuncFormatter

            ax.set_yscale("symlog", linthresh=1.0)
            box_limits(ax, here, "linear")
            ax.set_ylim(bottom=0, top=max(2.0, 1.4 * ax.get_ylim()[1]))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        title_panel(ax, panel_title(dims, key))
        ax.grid(axis="y", alpha=0.3, which="both")
    hide_unused(axes, len(keys), rows, cols)
    lrows = legend(fig, series, cmap)
    if title:
        fig.suptitle(title, y=1.04)
    layout(fig, rows, cols, top=legend_top(lrows))
    return fig


def ci_stats(per_run, value: str, dims: list[str], series_col: str = "series"):
    """Per case (``dims``, clients, series): ``mean``, ``std`` and ``count`` over the
    replications of the per-run statistic ``value``; ``attrs["log"]``: whether its values
    are better on a log axis."""
    per_run = per_run[per_run[value].notna()]
    g = per_run.groupby([*dims, "clients", series_col], sort=False)[value].agg(["mean", "std", "count"])
    out = g.reset_index()
    out.attrs["log"] = bool(auto_log(per_run[value].astype(float)))
    return out


def ci_figure(stats, ylabel: str, dims: list[str], series: list[str]):
    """Mean over replications of a per-run statistic with its 95 % confidence interval
    (Student t over the replications; no bar with a single replication), from
    :func:`ci_stats`: one panel per case, x = clients, one line per series."""
    from matplotlib.figure import Figure

    series_col = stats.columns[len(dims) + 1]
    keys = list(panels(stats, dims))
    series = [s for s in series if (stats[series_col] == s).any()]
    cmap = colors(series)
    n_buf = stats["buffer_bytes"].nunique() if "buffer_bytes" in dims else 4
    rows, cols = grid(len(keys), n_buf)
    fig = Figure(figsize=(4.6 * cols, 3.4 * rows + 0.6))
    axes = fig.subplots(rows, cols, squeeze=False)
    for i, key in enumerate(keys):
        ax = axes[i // cols][i % cols]
        sub = stats
        for c, v in zip(dims, key):
            sub = sub[sub[c] == v]
        xs = sorted(set(sub["clients"]))
        pos = {x: j for j, x in enumerate(xs)}
        for si, s in enumerate(series):
            pts = sub[sub[series_col] == s]
            if not len(pts):
                continue
            x = [pos[c] + (si - (len(series) - 1) / 2) * 0.06 for c in pts["clients"]]
            half = [ci95_half(sd, n, 0.0) for sd, n in zip(pts["std"].fillna(0), pts["count"])]
            ax.errorbar(x, pts["mean"], yerr=half, color=cmap[s], marker="o", ms=4, capsize=3, lw=1)
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([str(x) for x in xs])
        ax.set_xlabel("clients")
        ax.set_ylabel(ylabel)
        if stats.attrs.get("log"):
            ax.set_yscale("log")
            plain_log_axis(ax)
        else:
            ax.set_ylim(bottom=0)
        title_panel(ax, panel_title(dims, key))
        ax.grid(axis="y", alpha=0.3, which="both")
    hide_unused(axes, len(keys), rows, cols)
    lrows = legend(fig, series, cmap, "line")
    layout(fig, rows, cols, top=legend_top(lrows))
    return fig


#: Points of a CDF curve (quantiles of the finished flows; a curve of fewer flows has one
#: point per flow, exactly the empirical CDF).
CDF_POINTS = 512


def cdf_curves(flows, dims: list[str], series_col: str = "series", value: str = "fct_s"):
    """Per panel (``dims``) at its largest number of clients, per series: the FCT
    distribution as ``(x, y)`` step points (``y`` the fraction of all flows, unfinished ones
    included, with FCT <= ``x``): every flow when there are at most :data:`CDF_POINTS`,
    else :data:`CDF_POINTS` quantiles. Returns ``{panel key: (clients, {series: (x, y)})}``
    and, in ``attrs``-like second value, whether a log axis suits the values."""
    import numpy as np

    out = {}
    v = flows[value].astype(float)
    for key in panels(flows, dims):
        sel = np.ones(len(flows), dtype=bool)
        for c, val in zip(dims, key):
            sel &= (flows[c] == val).to_numpy()
        n = int(flows.loc[sel, "clients"].max())
        sel &= (flows["clients"] == n).to_numpy()
        sub_s = flows.loc[sel, series_col].to_numpy()
        sub_v = v[sel].to_numpy()
        curves = {}
        for s in dict.fromkeys(sub_s):
            vals = sub_v[sub_s == s]
            fin = np.sort(vals[~np.isnan(vals)])
            if len(fin) > CDF_POINTS:
                levels = np.linspace(0, 1, CDF_POINTS)
                x = np.quantile(fin, levels)
                y = (1 + levels * (len(fin) - 1)) / len(vals)
            else:
                x = fin
                y = np.arange(1, len(fin) + 1) / len(vals)
            curves[s] = (x, y)
        out[key] = (n, curves)
    fin = v[v.notna()]
    return out, bool(auto_log(fin))


def cdf_figure(curves, log: bool, dims: list[str], series: list[str]):
    """Empirical CDFs of the flow completion time per series, pooled over replications, at
    the largest number of clients of each panel (unfinished flows leave the curve below 1),
    from :func:`cdf_curves`."""
    from matplotlib.figure import Figure

    present = {s for _, cs in curves.values() for s in cs}
    series = [s for s in series if s in present]
    cmap = colors(series)
    keys = list(curves)
    n_buf = len({k[dims.index("buffer_bytes")] for k in keys}) if "buffer_bytes" in dims else 4
    rows, cols = grid(len(keys), n_buf)
    fig = Figure(figsize=(4.6 * cols, 3.3 * rows + 0.6))
    axes = fig.subplots(rows, cols, squeeze=False)
    for i, key in enumerate(keys):
        ax = axes[i // cols][i % cols]
        n, cs = curves[key]
        for s in series:
            if s in cs:
                x, y = cs[s]
                ax.step(x, y, where="post", color=cmap[s], lw=1.2)
        if log:
            from matplotlib.ticker import FuncFormatter, NullFormatter

            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("FCT (s)")
        ax.set_ylabel("fraction of flows")
        title_panel(ax, f"{panel_title(dims, key)} · {n} clients")
        ax.grid(alpha=0.3, which="both")
    hide_unused(axes, len(keys), rows, cols)
    lrows = legend(fig, series, cmap, "line")
    layout(fig, rows, cols, top=legend_top(lrows))
    return fig


def histogram_figure(hist, dims: list[str], series: list[str] | None = None):
    """Share of completed exchanges with k retransmissions, one panel per value of ``dims``
    (at the panel's largest number of clients), bars per algorithm; log scale. ``hist``: the
    counts per case (``dims``, clients, algorithm, retransmissions, count)."""
    from matplotlib.figure import Figure

    keys = panels(hist, dims)
    if series is None:
        from .base import ordered

        series = ordered(hist["algorithm"])
    series = [s for s in series if (hist["algorithm"] == s).any()]
    cmap = colors(series)
    kmax = int(hist.loc[hist["count"] > 0, "retransmissions"].max()) if (hist["count"] > 0).any() else 0
    n_buf = hist["buffer_bytes"].nunique() if "buffer_bytes" in dims else 4
    pw = min(5.5, max(3.6, 0.12 * (kmax + 1) * len(series) + 1.5))
    rows, cols = grid(len(keys), min(n_buf, max(1, int(MAX_WIDTH_IN // pw))))
    fig = Figure(figsize=(pw * cols, 3.2 * rows + 0.6))
    axes = fig.subplots(rows, cols, squeeze=False)
    from matplotlib.collections import PolyCollection

    width = 0.8 / max(1, len(series))
    for i, key in enumerate(keys):
        ax = axes[i // cols][i % cols]
        sub = hist
        for c, v in zip(dims, key):
            sub = sub[sub[c] == v]
        n = max(sub["clients"])
        sub = sub[sub["clients"] == n]
        lo = 100.0
        polys, faces = [], []
        for si, s in enumerate(series):
            h = sub[sub["algorithm"] == s].groupby("retransmissions")["count"].sum()
            if h.sum() == 0:
                continue
            share = 100.0 * h / h.sum()
            share = share[share > 0]
            lo = min(lo, float(share.min()))
            x0 = [k - 0.4 + width * si for k in share.index]
            polys += [
                [(x, 1e-9), (x + width, 1e-9), (x + width, y), (x, y)] for x, y in zip(x0, share.values)
            ]
            faces += [cmap[s]] * len(x0)
        # the panel's bars as one collection (a Rectangle per bar made most of the figure's
        # time; the series stand side by side, so one collection draws the same pixels)
        if polys:
            ax.add_collection(PolyCollection(polys, facecolors=faces, linewidths=0), autolim=False)
        ax.set_yscale("log")
        ax.set_ylim(lo / 1.5, 150.0)
        plain_log_axis(ax)
        ax.set_xlim(-0.6, kmax + 0.6)
        ax.set_xticks(range(0, kmax + 1, max(1, (kmax + 1) // 10)))
        ax.set_xlabel("retransmissions before success")
        ax.set_ylabel("% of exchanges")
        title_panel(ax, f"{panel_title(dims, key)} · {n} clients")
        ax.grid(axis="y", alpha=0.3, which="both")
    hide_unused(axes, len(keys), rows, cols)
    lrows = legend(fig, series, cmap)
    layout(fig, rows, cols, top=legend_top(lrows))
    return fig
