"""``coapcc report``: the papers' figures and a self-contained HTML report from a dataset.

Figures (matplotlib, Agg; see docs/reports.md for the mapping to the papers' figures):

* ``fct``: flow completion time box plots (boxes at the quartiles, whiskers at p10 / p90, no
  fliers; ANRW 2018 and FASOR paper style), one panel per buffer x workload (x errors...),
  x axis = number of clients, one box per algorithm;
* ``fct-mixed``: the same for mixed runs, one box per algorithm within the mix;
* ``retransmissions`` and ``unnecessary``: retransmissions and unnecessary retransmissions
  per flow, same layout;
* ``histogram``: retransmissions per exchange (share of completed exchanges that needed k
  retransmissions; ANRW Table 2 style), at the largest number of clients of each panel;
* ``trace``: RTO and RTT over time of one flow per algorithm, from a trace that the report
  records itself by re-running one run of the dataset with tracing on (same seed, so the
  same run).

Percentiles use linear interpolation between closest ranks (AMBIG-T10).
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from .config import SimConfig, to_native
from .dataset import Results, load_results
from .runner import RunnerLike

__all__ = ["report", "main", "FIGURES"]

#: Figure ids and their captions (the paper mapping is in docs/reports.md).
FIGURES = {
    "fct": "Flow completion time (FCT) per flow, pooled over replications. Boxes: quartiles; "
    "line: median; whiskers: 10th and 90th percentiles; no outliers drawn.",
    "fct-mixed": "Mixed runs: FCT per flow, one box per algorithm sharing the link.",
    "retransmissions": "Retransmissions per flow (all copies after the first, over the flow's exchanges).",
    "unnecessary": "Unnecessary retransmissions per flow (copy k is unnecessary iff an earlier copy reached "
    "the server and its response reached the client).",
    "histogram": "Retransmissions per exchange: share of the completed exchanges that needed exactly k "
    "retransmissions, pooled over flows and replications, at the largest number of clients "
    "of each panel.",
    "trace": "One flow per algorithm over time: the timer armed with each transmission (circles: first "
    "transmission; crosses: timers that expired and caused a retransmission), the RTT of each "
    "exchange (from the first transmission to the response) and the RTO the next exchange "
    "starts from.",
}

_CASE_ORDER = ("errors", "workload", "buffer_bytes")
_NOT_DIMS = {"seed", "algorithm", "clients", "groups"}


# -- data preparation -------------------------------------------------------------------------


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


def _config_columns() -> list[str]:
    return list(SimConfig().flat().keys())


def _panel_dims(runs) -> list[str]:
    """Configuration columns (other than algorithm and clients) that vary: the panels. The
    buffer comes last, so that panels run along buffers within a row."""
    dims = []
    for c in ["errors", "workload", *[c for c in _config_columns() if c not in _CASE_ORDER], "buffer_bytes"]:
        if c in _NOT_DIMS or c not in runs:
            continue
        if runs[c].nunique(dropna=False) > 1:
            dims.append(c)
    return dims


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


def _grid(n_panels: int, n_cols_hint: int) -> tuple[int, int]:
    cols = max(1, min(n_panels, n_cols_hint, 4))
    rows = (n_panels + cols - 1) // cols
    return rows, cols


# -- figures ------------------------------------------------------------------------------------


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
    from matplotlib.patches import Patch

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
    rows, cols = _grid(len(panels), n_buf)
    pw = min(7.0, max(3.6, 0.22 * len(xs_all) * len(series) + 1.2))
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
        for xi, x in enumerate(xs):
            for si, s in enumerate(series):
                st = stats.get((*key, x, s))
                if st is None:
                    continue
                pos = xi - 0.4 + width * (si + 0.5)
                art = ax.bxp(
                    [st],
                    positions=[pos],
                    widths=width * 0.85,
                    showfliers=False,
                    patch_artist=True,
                    manage_ticks=False,
                    medianprops={"color": "black", "linewidth": 1.2},
                )
                for b in art["boxes"]:
                    b.set_facecolor(colors[s])
                    b.set_alpha(0.85)
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([str(x) for x in xs])
        ax.set_xlim(-0.6, len(xs) - 0.4)
        ax.set_xlabel("clients")
        ax.set_ylabel(ylabel)
        if scale == "log":
            ax.set_yscale("log")
            _plain_log_axis(ax)
        elif scale == "symlog":
            from matplotlib.ticker import FuncFormatter

            ax.set_yscale("symlog", linthresh=1.0)
            ax.set_ylim(bottom=0, top=max(2.0, 1.4 * ax.get_ylim()[1]))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_title(_panel_title(dims, key), fontsize=10)
        ax.grid(axis="y", alpha=0.3, which="both")
    for j in range(len(panels), rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    fig.legend(
        handles=[Patch(facecolor=colors[s], label=s) for s in series],
        loc="upper center",
        ncol=min(len(series), 6),
        frameon=False,
        bbox_to_anchor=(0.5, 1.0),
    )
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
    rows, cols = _grid(len(panels), n_buf)
    pw = min(5.5, max(3.6, 0.12 * (kmax + 1) * len(series) + 1.5))
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
    from matplotlib.patches import Patch

    fig.legend(
        handles=[Patch(facecolor=colors[s], label=s) for s in series],
        loc="upper center",
        ncol=min(len(series), 6),
        frameon=False,
        bbox_to_anchor=(0.5, 1.0),
    )
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


# -- tables ---------------------------------------------------------------------------------------


def summary_table(flows, runs, dims: list[str]):
    """Per case (series x clients x panel dims): runs, flows, FCT median/p10/p25/p75/p90 (s),
    median retransmissions and unnecessary retransmissions per flow, failed exchanges, mean
    useful fraction and downlink busy fraction."""
    import pandas as pd

    from .stats import describe

    keys = ["series", "clients", *dims]
    run_cols = ["config_hash", "useful_fraction", "downlink_busy_fraction", "truncated"]
    run_info = runs[[c for c in run_cols if c in runs]]
    rows = []
    for key, g in flows.groupby(keys, sort=False, dropna=False):
        d = describe(g["fct_s"].astype(float))
        hashes = g["config_hash"].unique()
        r = run_info[run_info["config_hash"].isin(hashes)]
        row = dict(zip(keys, key))
        row.update(
            {
                "runs": len(hashes),
                "flows": len(g),
                "unfinished": int(g["fct_s"].isna().sum()),
                "fct_median": d["median"],
                "fct_p10": d["p10"],
                "fct_p25": d["p25"],
                "fct_p75": d["p75"],
                "fct_p90": d["p90"],
                "retx_median": float(g["retransmissions"].median()),
                "unnecessary_median": float(g["unnecessary_retransmissions"].median()),
                "unnecessary_mean": float(g["unnecessary_retransmissions"].mean()),
                "failed_exchanges": int(g["failed_exchanges"].sum()),
            }
        )
        if "useful_fraction" in r:
            row["useful_fraction"] = float(r["useful_fraction"].mean())
        if "downlink_busy_fraction" in r:
            row["downlink_busy"] = float(r["downlink_busy_fraction"].mean())
        rows.append(row)
    df = pd.DataFrame(rows)
    if len(df):
        order = {s: i for i, s in enumerate(_ordered(flows["series"]))}
        df = df.assign(_o=df["series"].map(order)).sort_values([*dims, "_o", "clients"], kind="stable")
        df = df.drop(columns="_o").reset_index(drop=True)
    return df


def _html_table(df, floatfmt: str = "{:.4g}", max_rows: int | None = None) -> str:
    cols = list(df.columns)
    out = [
        "<div class='scroll'><table><thead><tr>",
        *[f"<th>{html.escape(str(c))}</th>" for c in cols],
        "</tr></thead><tbody>",
    ]
    for i, rec in enumerate(df.itertuples(index=False)):
        if max_rows is not None and i >= max_rows:
            out.append(f"<tr><td colspan='{len(cols)}'>... {len(df) - max_rows} more rows</td></tr>")
            break
        cells = []
        for v in rec:
            if isinstance(v, float):
                s = "" if v != v else floatfmt.format(v)
            else:
                s = str(v)
            cells.append(f"<td>{html.escape(s)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _versions() -> dict[str, str]:
    from importlib import metadata

    from . import __version__

    out = {"coapcc": __version__, "python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("numpy", "pandas", "pyarrow", "matplotlib", "dask", "distributed", "tqdm"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


# -- traces -----------------------------------------------------------------------------------


def _pick_trace_runs(res: Results, trace_run: str | None) -> list:
    """Runs to trace: ``trace_run`` (a config hash) or, for each algorithm, replication 0 of
    one congested point (smallest buffer, first workload, error-free if present, the largest
    number of clients up to 100)."""
    runs = res.runs
    if trace_run:
        sel = runs[runs["config_hash"].str.startswith(trace_run)]
        if sel.empty:
            raise ValueError(f"--trace-run {trace_run}: no such run in {res.path}")
        return [sel.iloc[0]]
    single = runs[(runs["groups"] == "") & (runs["replication"] == 0)]
    if single.empty:
        single = runs
    for col, pick in (("buffer_bytes", min), ("workload", None), ("errors", None)):
        vals = _ordered(single[col].tolist())
        v = pick(vals) if pick else ("none" if col == "errors" and "none" in vals else vals[0])
        single = single[single[col] == v]
    clients = sorted(single["clients"].unique())
    small = [c for c in clients if c <= 100]
    n = max(small) if small else min(clients)
    single = single[single["clients"] == n]
    out = []
    for alg in _ordered(single["algorithm"].tolist()):
        out.append(single[single["algorithm"] == alg].iloc[0])
    return out


def _traces(res: Results, rows: list, runner_trace, log) -> tuple[list, list[dict]]:
    """Record (or reuse) a trace of each run in ``rows``; returns the figure inputs and notes."""
    from .runner import run_with_trace
    from .trace import read_trace

    tdir = res.path / "traces"
    tdir.mkdir(exist_ok=True)
    panels, notes = [], []
    flows = res.flows
    for row in rows:
        h = row["config_hash"]
        path = tdir / f"{h}.jsonl"
        cfg = SimConfig.from_flat(row.to_dict())
        reproduced = None
        if not path.exists():
            tmp = tdir / f".{h}.{os.getpid()}.tmp"
            print(f"report: tracing run {h} ({cfg.label}, {cfg.clients} clients)", file=log, flush=True)
            rep = json.loads((runner_trace or run_with_trace)(json.dumps(to_native(cfg)), str(tmp)))
            os.replace(tmp, path)
            mine = sorted((f["client"], f["fct_s"], f["transmissions"]) for f in rep["flows"])
            theirs = flows[flows["config_hash"] == h].sort_values("client")
            theirs = sorted(
                zip(theirs["client"].tolist(), theirs["fct_s"].tolist(), theirs["transmissions"].tolist())
            )
            reproduced = mine == theirs
        fl = flows[flows["config_hash"] == h]
        # The flow with the most retransmissions (ties: lowest client) shows the timers at work.
        fl = fl.sort_values(["retransmissions", "client"], ascending=[False, True])
        client = int(fl.iloc[0]["client"]) if len(fl) else 0
        tr = read_trace(path, clients=[client])
        desc = (
            f"client {client} of {cfg.clients}, buffer {cfg.buffer_bytes} B, {cfg.workload}, "
            f"errors {cfg.errors}, seed {cfg.seed}"
        )
        panels.append((cfg.label, desc, tr))
        notes.append(
            {
                "algorithm": cfg.label,
                "config_hash": h,
                "client": client,
                "trace": str(path.name),
                "reproduces dataset run": "yes"
                if reproduced
                else ("(trace reused)" if reproduced is None else "NO"),
            }
        )
    return panels, notes


# -- the report ---------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1500px;
padding:0 1em;color:#222}
h1{font-size:1.6em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.82em;margin:.5em 0}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:right} th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}
figure{margin:1em 0} figure img{max-width:100%;height:auto;border:1px solid #eee}
.scroll{overflow-x:auto;max-width:100%}
figcaption{font-size:.9em;color:#444;max-width:1100px}
pre{background:#f7f7f7;padding:.6em;overflow:auto;font-size:.8em;max-height:40em}
details{margin:.5em 0} .muted{color:#666}
"""

# Sets data-figures-loaded on <body> once every image has decoded (used by the headless
# browser test; harmless elsewhere).
_JS = """
<script>
(function(){
  function check(){
    var imgs = Array.prototype.slice.call(document.images);
    var ok = imgs.length > 0 && imgs.every(function(i){ return i.complete && i.naturalWidth > 0; });
    document.body.setAttribute('data-figures-loaded', ok ? String(imgs.length) : 'no');
  }
  if (document.readyState === 'complete') check(); else window.addEventListener('load', check);
})();
</script>
"""


def report(
    path: str | os.PathLike,
    out: str | os.PathLike | None = None,
    *,
    trace: bool = True,
    trace_run: str | None = None,
    runner: RunnerLike = None,
    title: str | None = None,
    log=None,
) -> Path:
    """Write the HTML report of the dataset at ``path`` (default ``path/report.html``, with the
    figures also saved as ``path/figures/*.png``) and return its path.

    ``trace``: record a trace (one run per algorithm, re-run with tracing on) for the RTO/RTT
    figure; ``trace_run``: the config hash (or a prefix) of the run to trace instead.
    ``runner``: a callable ``(config_json, trace_path) -> report_json`` replacing the simulator
    for the traced run.

    >>> coapcc.report("results/anrw18")                       # doctest: +SKIP
    PosixPath('results/anrw18/report.html')
    """
    log = log or sys.stderr
    import matplotlib

    matplotlib.use("Agg")
    t0 = time.perf_counter()
    res = load_results(path)
    runs, flows = res.runs, res.flows
    if runs.empty:
        raise ValueError(f"{path}: the dataset has no runs yet (run coapcc sweep first)")
    out = Path(out) if out is not None else res.path / "report.html"
    figdir = out.parent / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    meta = res.experiment
    name = meta.get("name") or runs["experiment"].iloc[0]
    dims = _panel_dims(runs)

    flows = flows.copy()
    mixed = flows["groups"] != ""
    flows["series"] = flows["algorithm"].where(~mixed, flows["cc"] + " in " + flows["algorithm"])
    single_flows = flows[~mixed]
    mixed_flows = flows[mixed]

    figures: list[tuple[str, str, bytes]] = []  # (id, caption, png)

    def add(fig_id: str, fig, extra: str = "") -> None:
        png = _png(fig)
        (figdir / f"{fig_id}.png").write_bytes(png)
        figures.append((fig_id, FIGURES[fig_id] + extra, png))

    if len(single_flows):
        add("fct", box_figure(single_flows, "fct_s", "FCT (s)", dims))
    if len(mixed_flows):
        add("fct-mixed", box_figure(mixed_flows, "fct_s", "FCT (s)", dims))
    if len(single_flows):
        add(
            "retransmissions",
            box_figure(single_flows, "retransmissions", "retransmissions per flow", dims, scale="symlog"),
        )
        add(
            "unnecessary",
            box_figure(
                single_flows,
                "unnecessary_retransmissions",
                "unnecessary retransmissions per flow",
                dims,
                scale="symlog",
            ),
        )
    hist = res.histogram
    hist = hist[hist["config_hash"].isin(runs.loc[runs["groups"] == "", "config_hash"])]
    if len(hist):
        add("histogram", histogram_figure(hist, dims))
    trace_notes: list[dict] = []
    if trace:
        try:
            panels, trace_notes = _traces(res, _pick_trace_runs(res, trace_run), runner, log)
            if panels:
                add("trace", trace_figure(panels))
        except Exception as e:  # noqa: BLE001 - the rest of the report is still useful
            print(f"report: warning: no trace figure: {type(e).__name__}: {e}", file=log)
            trace_notes = [{"error": f"{type(e).__name__}: {e}"}]

    summary = summary_table(
        flows, runs.assign(downlink_busy_fraction=runs.get("downlink_busy_fraction")), dims
    )
    summary.to_csv(out.parent / "summary.csv", index=False)

    # Retransmissions-per-exchange table (counts), one row per case.
    hist_all = res.histogram
    kmax = (
        int(hist_all.loc[hist_all["count"] > 0, "retransmissions"].max())
        if (hist_all["count"] > 0).any()
        else 0
    )
    hkeys = ["algorithm", "clients", *dims]
    htab = (
        hist_all[hist_all["retransmissions"] <= kmax]
        .pivot_table(index=hkeys, columns="retransmissions", values="count", aggfunc="sum", sort=False)
        .reset_index()
    )
    htab.columns = [str(c) for c in htab.columns]

    # Points: the exact configuration of each grid point (replication 0's config JSON).
    point_rows = runs.sort_values(["block_index", "point", "replication"]).drop_duplicates(["block", "point"])
    versions = _versions()
    produced_by = (
        ", ".join(sorted(runs["coapcc_version"].astype(str).unique())) if "coapcc_version" in runs else "?"
    )
    reps = runs.groupby("point_hash")["replication"].nunique()
    title = title or meta.get("title") or f"coapcc report: {name}"

    h: list[str] = []
    h.append(
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body>"
    )
    h.append(f"<h1>{html.escape(title)}</h1>")
    if meta.get("description"):
        h.append(f"<p>{html.escape(meta['description'])}</p>")
    overview = [
        ("experiment", name),
        ("dataset", str(res.path)),
        ("runs", len(runs)),
        ("flows", len(flows)),
        ("grid points", runs["point_hash"].nunique()),
        ("replications per point", f"{reps.min()}–{reps.max()}" if reps.min() != reps.max() else reps.min()),
        ("base seed", meta.get("seed", "?")),
        ("simulator wall time (sum over runs)", f"{runs['wall_s'].sum():.1f} s"),
        ("runs produced by coapcc", produced_by),
        ("report generated", time.strftime("%Y-%m-%d %H:%M:%S %Z")),
    ]
    h.append(
        "<table>"
        + "".join(
            f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in overview
        )
        + "</table>"
    )
    if runs.get("truncated") is not None and runs["truncated"].fillna(False).astype(bool).any():
        h.append(
            f"<p><b>Warning:</b> {int(runs['truncated'].fillna(False).astype(bool).sum())} runs hit "
            f"max_sim_time_s and were truncated.</p>"
        )
    h.append("<h2>Figures</h2>")
    for fig_id, caption, png in figures:
        b64 = base64.b64encode(png).decode()
        h.append(
            f"<figure id='fig-{fig_id}'><img alt='{fig_id}' src='data:image/png;base64,{b64}'>"
            f"<figcaption><b>{fig_id}.</b> {html.escape(caption)}</figcaption></figure>"
        )
        if fig_id == "trace" and trace_notes:
            import pandas as pd

            h.append(_html_table(pd.DataFrame(trace_notes)))
    if trace and not any(f[0] == "trace" for f in figures) and trace_notes:
        h.append(f"<p class='muted'>No trace figure: {html.escape(str(trace_notes[0].get('error')))}</p>")

    h.append(
        "<h2>Summary per case</h2><p class='muted'>FCT in seconds over flows, pooled over "
        "replications (linear-interpolation percentiles). retx / unnecessary: per flow. useful_fraction: "
        "useful share of the downlink bytes; downlink_busy: link utilisation. Also in summary.csv.</p>"
    )
    h.append(_html_table(summary))
    h.append(
        "<h2>Retransmissions per exchange</h2><p class='muted'>Completed exchanges by number of "
        "retransmissions (columns), pooled over flows and replications.</p>"
    )
    h.append(f"<details><summary>{len(htab)} cases</summary>{_html_table(htab, '{:.0f}')}</details>")

    h.append("<h2>Configuration</h2>")
    if meta:
        h.append("<p>Experiment: base seed, blocks and grids as swept.</p>")
    toml_path = res.path / "experiment.toml"
    if toml_path.exists():
        h.append(
            f"<details open><summary>experiment.toml</summary><pre>{html.escape(toml_path.read_text())}</pre>"
            "</details>"
        )
    first = json.loads(runs["config_json"].iloc[0])
    h.append(
        "<details><summary>Fully resolved simulator configuration of the first run</summary>"
        f"<pre>{html.escape(json.dumps(first, indent=2))}</pre></details>"
    )
    h.append(
        f"<details><summary>All {len(point_rows)} grid points: exact simulator configuration "
        "(replication 0; the other replications differ only in the seed)</summary>"
    )
    for _, r in point_rows.iterrows():
        h.append(
            f"<details><summary>{html.escape(r['block'])} #{r['point']}: {html.escape(r['algorithm'])}, "
            f"{r['clients']} clients, buffer {r['buffer_bytes']} B, {html.escape(r['workload'])}, errors "
            f"{html.escape(r['errors'])} <span class='muted'>(point {r['point_hash']})</span></summary>"
            f"<pre>{html.escape(json.dumps(json.loads(r['config_json']), indent=1))}</pre></details>"
        )
    h.append("</details>")
    seeds = runs[
        [
            "block",
            "point",
            "replication",
            "algorithm",
            "clients",
            "buffer_bytes",
            "workload",
            "errors",
            "seed",
            "config_hash",
            "wall_s",
        ]
    ]
    h.append(
        "<h2>Seeds</h2><p class='muted'>Seed of every run (derived from the base seed, the point's "
        "configuration and the replication index); config_hash names the run's files in the dataset.</p>"
    )
    h.append(f"<details><summary>{len(seeds)} runs</summary>{_html_table(seeds, '{:.3f}')}</details>")
    h.append("<h2>Software</h2>")
    h.append(
        "<table>"
        + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in versions.items())
        + "</table>"
    )
    h.append(f"<p class='muted'>Report built in {time.perf_counter() - t0:.1f} s.</p>")
    h.append(_JS)
    h.append("</body></html>")
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text("\n".join(h))
    os.replace(tmp, out)
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="coapcc report",
        description="Figures, summary tables and a self-contained HTML report of a "
        "results dataset (from coapcc sweep).",
    )
    p.add_argument("dataset", help="results dataset directory (e.g. results/anrw18)")
    p.add_argument(
        "--out", "-o", default=None, metavar="FILE", help="HTML file (default: DATASET/report.html)"
    )
    p.add_argument("--no-trace", action="store_true", help="skip the traced run and the RTO/RTT figure")
    p.add_argument(
        "--trace-run", default=None, metavar="HASH", help="config hash (prefix) of the run to trace"
    )
    p.add_argument("--title", default=None, help="report title")
    a = p.parse_args(argv)
    try:
        path = report(a.dataset, a.out, trace=not a.no_trace, trace_run=a.trace_run, title=a.title)
    except (FileNotFoundError, ValueError) as e:
        print(f"coapcc report: error: {e}", file=sys.stderr)
        return 2
    print(path)
    return 0
