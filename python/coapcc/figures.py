"""The report's figures (matplotlib, no pyplot state: every function returns a Figure).

* :func:`box_figure`: per-flow box plots (boxes at the quartiles, whiskers at p10 / p90, no
  fliers; ANRW 2018 and FASOR paper style), one panel per case, x = number of clients;
* :func:`ci_figure`: the mean over replications of a per-run statistic with its 95 %
  confidence interval (Student t), x = number of clients;
* :func:`cdf_figure`: empirical CDFs of the flow completion time;
* :func:`histogram_figure`: retransmissions per exchange (ANRW Table 2 style);
* :func:`trace_figure`: timers, RTT and RTO of one flow over time;
* :func:`timeline_figure`: goodput and retransmissions of a whole traced run over time;
* :func:`queue_figure`: the bottleneck queue of each link direction of a traced run over time.

Percentiles use linear interpolation between closest ranks (numpy's default).
"""

from __future__ import annotations

import io
import math
from typing import Any

__all__ = [
    "box_figure",
    "ci_figure",
    "cdf_figure",
    "histogram_figure",
    "trace_figure",
    "timeline_figure",
    "queue_figure",
    "save",
    "t95",
    "ci95_half",
]

#: Two-sided 95 % Student t quantiles by degrees of freedom (1-30); 1.96 beyond.
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t95(dof: int) -> float:
    """Two-sided 95 % quantile of Student's t with ``dof`` degrees of freedom."""
    if dof < 1:
        return float("nan")
    return _T95[dof - 1] if dof <= len(_T95) else 1.96


def ci95_half(sd: float, n: int, single: float = float("nan")) -> float:
    """Half-width of the 95 % confidence interval (Student t) of the mean of ``n`` values whose
    sample standard deviation is ``sd``; ``single`` when there are fewer than two values."""
    return t95(int(n) - 1) * sd / math.sqrt(n) if n > 1 else single


def save(fig, stem, formats=("png", "svg", "pdf")) -> dict[str, bytes]:
    """Encode ``fig`` in every format (PNG at 90 dpi); returns ``{format: bytes}`` and writes
    ``stem.<format>`` when ``stem`` is a path."""
    out = {}
    for fmt in formats:
        buf = io.BytesIO()
        # no bbox_inches="tight": every figure lays itself out (tight_layout), and a tight
        # bounding box would draw the figure twice per format
        fig.savefig(buf, format=fmt, dpi=90, metadata=_metadata(fmt))
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


def _ordered(values) -> list:
    """Distinct values in order of first appearance."""
    import pandas as pd

    return list(pd.unique(pd.Series(list(values) if not hasattr(values, "dtype") else values)))


def _sorted_values(series) -> list:
    vals = [v.item() if hasattr(v, "item") else v for v in _ordered(series)]
    try:
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            return sorted(vals)
    except TypeError:
        pass
    return vals


def _panels(df, dims: list[str]) -> list[tuple]:
    """The panel keys present in ``df``, ordered dimension by dimension (numbers ascending,
    everything else in order of appearance)."""
    if not dims:
        return [()]
    orders = [{v: i for i, v in enumerate(_sorted_values(df[c]))} for c in dims]
    keys = [
        tuple(v.item() if hasattr(v, "item") else v for v in r)
        for r in df[dims].drop_duplicates().itertuples(index=False)
    ]
    return sorted(keys, key=lambda k: tuple(o[v] for o, v in zip(orders, k)))


def _plain_log_axis(ax) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator

    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(fmt)
    ax.yaxis.set_minor_locator(LogLocator(subs=(2, 5)))
    lo, hi = ax.get_ylim()
    ax.yaxis.set_minor_formatter(fmt if hi / max(lo, 1e-12) < 200 else FuncFormatter(lambda v, _: ""))


def _fmt_value(col: str, v: Any) -> str:
    if col == "buffer_bytes":
        return f"buffer {int(v)} B"
    if col == "errors":
        return f"errors {v}"
    if col == "workload":
        return str(v)
    return f"{col}={v}"


def _panel_title(dims: list[str], key: tuple) -> str:
    return " · ".join(_fmt_value(c, v) for c, v in zip(dims, key)) or "all runs"


def _colors(series: list[str]) -> dict[str, Any]:
    import matplotlib

    cmap = matplotlib.colormaps["tab10"] if len(series) <= 10 else matplotlib.colormaps["tab20"]
    return {s: cmap(i % cmap.N) for i, s in enumerate(series)}


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return buf.getvalue()


#: Widest figure, inches: wider ones would be scaled down until their text is unreadable.
_MAX_WIDTH_IN = 16.0


def _grid(n_panels: int, n_cols_hint: int) -> tuple[int, int]:
    cols = max(1, min(n_panels, n_cols_hint, 4))
    rows = (n_panels + cols - 1) // cols
    return rows, cols


def box_figure(
    flows,
    value: str,
    ylabel: str,
    dims: list[str],
    series_col: str = "series",
    scale: str = "auto",
    title: str = "",
):
    """Box plots of ``value`` per flow: one panel per value of ``dims``, x = clients, one box per
    ``series_col``. Boxes at quartiles, whiskers at p10/p90, no fliers."""
    from matplotlib.figure import Figure

    flows = flows[flows[value].notna()]
    panels = _panels(flows, dims)
    series = _ordered(flows[series_col])
    keys = [*dims, "clients", series_col]
    grouped = flows.assign(_v=flows[value].astype(float)).groupby(keys, sort=False)["_v"]
    qs = grouped.quantile([0.10, 0.25, 0.50, 0.75, 0.90]).unstack()  # linear interpolation (AMBIG-T10)
    stats = {
        k if isinstance(k, tuple) else (k,): {
            "whislo": r[0.10],
            "q1": r[0.25],
            "med": r[0.50],
            "q3": r[0.75],
            "whishi": r[0.90],
            "fliers": [],
        }
        for k, r in qs.iterrows()
    }
    colors = _colors(series)
    xs_all = _sorted_values(flows["clients"])
    n_buf = flows["buffer_bytes"].nunique() if "buffer_bytes" in dims else 4
    pw = min(7.0, max(3.6, 0.22 * len(xs_all) * len(series) + 1.2))
    rows, cols = _grid(len(panels), min(n_buf, max(1, int(_MAX_WIDTH_IN // pw))))
    fig = Figure(figsize=(pw * cols, 3.4 * rows + 0.6))
    axes = fig.subplots(rows, cols, squeeze=False)
    values = flows[value].astype(float)
    if scale == "auto":
        pos = values[values > 0]
        scale = "log" if len(pos) == len(values) and len(pos) and pos.max() / pos.min() > 20 else "linear"
    for i, key in enumerate(panels):
        ax = axes[i // cols][i % cols]
        xs = sorted({k[len(dims)] for k in stats if k[: len(dims)] == key})
        width = 0.8 / max(1, len(series))
        for si, s in enumerate(series):  # one bxp call per series and panel
            boxes = [(xi, stats.get((*key, x, s))) for xi, x in enumerate(xs)]
            boxes = [(xi, st) for xi, st in boxes if st is not None]
            if not boxes:
                continue
            _boxes(
                ax,
                [st for _, st in boxes],
                [xi - 0.4 + width * (si + 0.5) for xi, _ in boxes],
                width,
                colors[s],
            )
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([str(x) for x in xs])
        ax.set_xlim(-0.6, len(xs) - 0.4)
        ax.set_xlabel("clients")
        ax.set_ylabel(ylabel)
        if scale == "log":
            ax.set_yscale("log")
            _plain_log_axis(ax)
        elif scale == "linear":
            top = max((st["whishi"] for k, st in stats.items() if k[: len(dims)] == key), default=0.0)
            ax.set_ylim(bottom=0, top=None if top > 0 else 1.0)
            if top <= 0:
                ax.text(0.5, 0.5, "none", transform=ax.transAxes, ha="center", va="center", color="0.4")
        elif scale == "symlog":
            from matplotlib.ticker import FuncFormatter

            ax.set_yscale("symlog", linthresh=1.0)
            ax.set_ylim(bottom=0, top=max(2.0, 1.4 * ax.get_ylim()[1]))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_title(_panel_title(dims, key), fontsize=10)
        ax.grid(axis="y", alpha=0.3, which="both")
    for j in range(len(panels), rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    _legend(fig, series, colors)
    if title:
        fig.suptitle(title, y=1.04)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def histogram_figure(hist, dims: list[str]):
    """Share of completed exchanges with k retransmissions, one panel per value of ``dims``
    (at the panel's largest number of clients), bars per algorithm; log scale."""
    from matplotlib.figure import Figure

    panels = _panels(hist, dims)
    series = _ordered(hist["algorithm"])
    colors = _colors(series)
    kmax = int(hist.loc[hist["count"] > 0, "retransmissions"].max()) if (hist["count"] > 0).any() else 0
    n_buf = hist["buffer_bytes"].nunique() if "buffer_bytes" in dims else 4
    pw = min(5.5, max(3.6, 0.12 * (kmax + 1) * len(series) + 1.5))
    rows, cols = _grid(len(panels), min(n_buf, max(1, int(_MAX_WIDTH_IN // pw))))
    fig = Figure(figsize=(pw * cols, 3.2 * rows + 0.6))
    axes = fig.subplots(rows, cols, squeeze=False)
    width = 0.8 / max(1, len(series))
    for i, key in enumerate(panels):
        ax = axes[i // cols][i % cols]
        sub = hist
        for c, v in zip(dims, key):
            sub = sub[sub[c] == v]
        n = max(sub["clients"])
        sub = sub[sub["clients"] == n]
        for si, s in enumerate(series):
            h = sub[sub["algorithm"] == s].groupby("retransmissions")["count"].sum()
            if h.sum() == 0:
                continue
            share = 100.0 * h / h.sum()
            share = share[share > 0]
            ax.bar(
                [k - 0.4 + width * (si + 0.5) for k in share.index],
                share.values,
                width=width,
                color=colors[s],
                label=s,
            )
        ax.set_yscale("log")
        _plain_log_axis(ax)
        ax.set_xlim(-0.6, kmax + 0.6)
        ax.set_xticks(range(0, kmax + 1, max(1, (kmax + 1) // 10)))
        ax.set_xlabel("retransmissions before success")
        ax.set_ylabel("% of exchanges")
        ax.set_title(f"{_panel_title(dims, key)} · {n} clients", fontsize=10)
        ax.grid(axis="y", alpha=0.3, which="both")
    for j in range(len(panels), rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    _legend(fig, series, colors)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def trace_figure(traces: list[tuple[str, str, Any]]):
    """One panel per (algorithm, description, flow trace): timers, RTT and RTO over time."""
    from matplotlib.figure import Figure

    n = len(traces)
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig = Figure(figsize=(7.5 * cols, 3.4 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    for i, (alg, desc, tr) in enumerate(traces):
        ax = axes[i // cols][i % cols]
        tx, ex = tr.transmissions, tr.exchanges
        first = tx[tx["copy"] == 0]
        ax.scatter(
            first["sent_s"],
            first["timer_s"],
            s=12,
            marker="o",
            facecolors="none",
            edgecolors="tab:blue",
            label="timer of 1st transmission",
        )
        exp = tx[(tx["copy"] > 0) | tx["expired"]]
        exp = exp[exp["expired"]]
        if len(exp):
            ax.scatter(
                exp["sent_s"], exp["timer_s"], s=14, marker="x", color="tab:red", label="expired timer"
            )
        ok = ex[ex["rtt_s"].notna()]
        ax.plot(
            ok["time_s"],
            ok["rtt_s"],
            ".-",
            color="tab:green",
            markersize=3,
            linewidth=0.8,
            label="RTT (1st transmission to response)",
        )
        ax.step(
            ex["time_s"],
            ex["cc_rto_s"],
            where="post",
            color="black",
            linewidth=1.0,
            label="RTO for the next exchange",
        )
        ax.set_xlabel("time (s)")
        ax.set_ylabel("seconds")
        ax.set_yscale("log")
        _plain_log_axis(ax)
        ax.set_title(f"{alg}: {desc}", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        if i == 0:
            ax.legend(fontsize=7, loc="upper left")
    for j in range(n, rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    fig.tight_layout()
    return fig


def _legend(fig, series: list[str], colors: dict, kind: str = "patch", ncol: int | None = None) -> None:
    """One legend above the panels: a coloured patch (``kind="patch"``) or a line with a marker
    (``"line"``) per series, in ``ncol`` columns (at most six by default)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if kind == "line":
        handles = [Line2D([], [], color=colors[s], marker="o", label=s) for s in series]
    else:
        handles = [Patch(facecolor=colors[s], label=s) for s in series]
    fig.legend(
        handles=handles,
        loc="upper center",
        ncol=min(len(series), 6) if ncol is None else ncol,
        frameon=False,
        bbox_to_anchor=(0.5, 1.0),
    )


def _boxes(ax, stats: list[dict], positions: list[float], width: float, color) -> None:
    """Draw one series' boxes from precomputed statistics (``Axes.bxp``'s dictionaries:
    ``whislo``, ``q1``, ``med``, ``q3``, ``whishi``; whiskers at the 10th and 90th percentiles,
    no fliers) at ``positions``, filled with ``color``: the boxes as one polygon collection and
    the whiskers, caps and medians as one line collection, so a figure of hundreds of boxes
    has a few artists (``bxp`` makes six per box, most of a report's drawing time)."""
    from matplotlib.collections import LineCollection, PolyCollection

    if not stats:
        return
    w = width * 0.85
    boxes, lines, medians = [], [], []
    for st, x in zip(stats, positions):
        lo, hi = x - w / 2, x + w / 2
        boxes.append([(lo, st["q1"]), (hi, st["q1"]), (hi, st["q3"]), (lo, st["q3"])])
        cap = w / 4
        lines += [
            [(x, st["q1"]), (x, st["whislo"])],
            [(x, st["q3"]), (x, st["whishi"])],
            [(x - cap, st["whislo"]), (x + cap, st["whislo"])],
            [(x - cap, st["whishi"]), (x + cap, st["whishi"])],
        ]
        medians.append([(lo, st["med"]), (hi, st["med"])])
    ax.add_collection(
        PolyCollection(boxes, facecolors=[color], edgecolors="black", linewidths=0.8, alpha=0.85),
        autolim=True,
    )
    ax.add_collection(LineCollection(lines, colors="black", linewidths=0.8), autolim=True)
    ax.add_collection(LineCollection(medians, colors="black", linewidths=1.2), autolim=True)
    ax.autoscale_view()


def _auto_log(values) -> bool:
    pos = values[values > 0]
    return len(pos) == len(values) and len(pos) > 0 and pos.max() / pos.min() > 20


def ci_figure(per_run, value: str, ylabel: str, dims: list[str], series_col: str = "series"):
    """Mean over replications of the per-run statistic ``value`` with its 95 % confidence
    interval (Student t over the replications; no bar with a single replication): one panel
    per case, x = clients, one line per series."""
    from matplotlib.figure import Figure

    per_run = per_run[per_run[value].notna()]
    panels = _panels(per_run, dims)
    series = _ordered(per_run[series_col])
    colors = _colors(series)
    g = per_run.groupby([*dims, "clients", series_col], sort=False)[value].agg(["mean", "std", "count"])
    n_buf = per_run["buffer_bytes"].nunique() if "buffer_bytes" in dims else 4
    rows, cols = _grid(len(panels), n_buf)
    fig = Figure(figsize=(4.6 * cols, 3.4 * rows + 0.6))
    axes = fig.subplots(rows, cols, squeeze=False)
    log = _auto_log(per_run[value].astype(float))
    for i, key in enumerate(panels):
        ax = axes[i // cols][i % cols]
        sub = g
        for c, v in zip(dims, key):
            sub = sub.xs(v, level=c, drop_level=True) if len(sub) else sub
        xs = sorted({k[0] for k in sub.index})
        pos = {x: j for j, x in enumerate(xs)}
        for si, s in enumerate(series):
            pts = sub[sub.index.get_level_values(series_col) == s] if len(sub) else sub
            if not len(pts):
                continue
            x = [pos[k[0]] + (si - (len(series) - 1) / 2) * 0.06 for k in pts.index]
            half = [ci95_half(sd, n, 0.0) for sd, n in zip(pts["std"].fillna(0), pts["count"])]
            ax.errorbar(x, pts["mean"], yerr=half, color=colors[s], marker="o", ms=4, capsize=3, lw=1)
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([str(x) for x in xs])
        ax.set_xlabel("clients")
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
            _plain_log_axis(ax)
        else:
            ax.set_ylim(bottom=0)
        ax.set_title(_panel_title(dims, key), fontsize=10)
        ax.grid(axis="y", alpha=0.3, which="both")
    for j in range(len(panels), rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    _legend(fig, series, colors, "line")
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig


def cdf_figure(flows, dims: list[str], series_col: str = "series"):
    """Empirical CDF of the flow completion time per series, pooled over replications, at the
    largest number of clients of each panel (unfinished flows leave the curve below 1)."""
    import numpy as np
    from matplotlib.figure import Figure

    panels = _panels(flows, dims)
    series = _ordered(flows[series_col])
    colors = _colors(series)
    n_buf = flows["buffer_bytes"].nunique() if "buffer_bytes" in dims else 4
    rows, cols = _grid(len(panels), n_buf)
    fig = Figure(figsize=(4.6 * cols, 3.3 * rows + 0.6))
    axes = fig.subplots(rows, cols, squeeze=False)
    fct = flows["fct_s"].astype(float)
    log = _auto_log(fct[fct.notna()])
    for i, key in enumerate(panels):
        ax = axes[i // cols][i % cols]
        sub = flows
        for c, v in zip(dims, key):
            sub = sub[sub[c] == v]
        n = max(sub["clients"])
        sub = sub[sub["clients"] == n]
        for s in series:
            v = sub.loc[sub[series_col] == s, "fct_s"].astype(float)
            if not len(v):
                continue
            x = np.sort(v.dropna().to_numpy())
            y = np.arange(1, len(x) + 1) / len(v)
            ax.step(x, y, where="post", color=colors[s], lw=1.2)
        if log:
            from matplotlib.ticker import FuncFormatter, NullFormatter

            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("FCT (s)")
        ax.set_ylabel("fraction of flows")
        ax.set_title(f"{_panel_title(dims, key)} · {n} clients", fontsize=10)
        ax.grid(alpha=0.3, which="both")
    for j in range(len(panels), rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    _legend(fig, series, colors, "line")
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig


def timeline_figure(runs: list[tuple[str, str, Any]], bins: int = 40):
    """Per traced run (label, description, :class:`~coapcc.Trace` of every client): goodput
    (completed exchanges per second, all clients) and retransmissions sent per second over
    time, in equal time bins; linear axes."""
    import numpy as np

    fig, axes = _run_panels(len(runs))
    for i, (ax, (label, desc, tr)) in enumerate(zip(axes, runs)):
        ex, tx = tr.exchanges, tr.transmissions
        end = float(max(ex["time_s"].max() if len(ex) else 0.0, tx["sent_s"].max() if len(tx) else 0.0))
        edges = np.linspace(0.0, max(end, 1e-9), bins + 1)
        width = edges[1] - edges[0]
        ok = ex[ex["outcome"] != "give_up"]["time_s"].astype(float)
        good, _ = np.histogram(ok, edges)
        retx, _ = np.histogram(tx[tx["copy"] > 0]["sent_s"].astype(float), edges)
        mid = (edges[:-1] + edges[1:]) / 2
        ax.plot(mid, good / width, color="tab:blue", lw=1.3, label="goodput (exchanges/s)")
        ax.plot(mid, retx / width, color="tab:red", lw=1.0, ls="--", label="retransmissions/s")
        _time_panel(ax, end, "per second", f"{label}: {desc}")
        if i == 0:
            ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig


def queue_figure(runs: list[tuple[str, str, Any]]):
    """Per traced run (label, description, :class:`~coapcc.Trace` with queue records): the
    occupancy of the bottleneck buffer of each link direction (bytes) over time, as the exact
    step function of the trace; linear axes. Runs without queue records are left out; returns
    None if none has any."""
    runs = [r for r in runs if r[2].queue is not None and len(r[2].queue)]
    if not runs:
        return None
    colors = {"uplink": "tab:orange", "downlink": "tab:blue"}
    fig, axes = _run_panels(len(runs))
    for ax, (label, desc, tr) in zip(axes, runs):
        q = tr.queue
        end = float(q["time_s"].max())
        if tr.exchanges is not None and len(tr.exchanges):
            end = max(end, float(tr.exchanges["time_s"].max()))
        for (link, direction), d in q.groupby(["link", "direction"], sort=True):
            name = direction if link == 0 else f"access link {link} {direction}"
            # Start empty at 0 and hold the last value to the end of the run.
            t = [0.0, *d["time_s"].astype(float).tolist(), end]
            b = [0, *d["bytes"].tolist()]
            b.append(b[-1])
            ls = "-" if link == 0 else ":"
            ax.step(t, b, where="post", lw=0.9, ls=ls, color=colors.get(direction), label=name)
        _time_panel(ax, end, "queue (bytes)", f"{label}: {desc}")
        ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig


def _run_panels(n: int):
    """A figure with one panel per traced run, two per row: the figure and the ``n`` axes in
    run order (a last unused cell is hidden)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5 * min(n, 2), 3.2 * ((n + 1) // 2)))
    grid = fig.subplots((n + 1) // 2, min(n, 2), squeeze=False)
    axes = [grid[i // 2][i % 2] for i in range(grid.size)]
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def _time_panel(ax, end: float, ylabel: str, title: str) -> None:
    """A per-run panel over the run's time: linear axes from 0, time in seconds."""
    ax.set_ylim(bottom=0)
    ax.set_xlim(0, end)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)


def tcp_seq_figure(panels: list[tuple[str, str, list[dict]]]):
    """One panel per (algorithm, description, TCP trace records of one flow): the sequence
    number of every data segment sent over time (retransmissions marked) and the congestion
    window, the study's sequence/cwnd plot."""
    from matplotlib.figure import Figure

    n = len(panels)
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig = Figure(figsize=(7.5 * cols, 3.4 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    for i, (alg, desc, recs) in enumerate(panels):
        ax = axes[i // cols][i % cols]
        first, again = ([], []), ([], [])
        for r in recs:
            if r.get("len", 0) <= 0 or r.get("event") not in ("send", "retransmit"):
                continue
            target = again if r["event"] == "retransmit" else first
            target[0].append(r["time_s"])
            target[1].append(r["seq"] / 1024)
        ax.scatter(first[0], first[1], s=4, color="tab:blue", label="segment sent")
        if again[0]:
            ax.scatter(again[0], again[1], s=14, marker="x", color="tab:red", label="retransmission")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("sequence number (KiB)")
        ax.set_title(f"{alg}: {desc}", fontsize=9)
        cw = [(r["time_s"], r["cwnd"]) for r in recs if r.get("cwnd") is not None]
        if cw:
            ax2 = ax.twinx()
            ax2.step([t for t, _ in cw], [c for _, c in cw], where="post", color="tab:green", lw=0.8)
            ax2.set_ylabel("cwnd (segments)", color="tab:green")
        ax.legend(loc="upper left", fontsize=7)
    for j in range(n, rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    fig.tight_layout()
    return fig
