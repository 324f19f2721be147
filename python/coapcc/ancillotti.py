"""Ancillotti & Bruno's Cooja study: the measures its claims use
(``experiments/claims/ancillotti.toml``) and the figures of its sensitivity blocks.

Every measure is ``f(results, **args) -> float | None`` over a dataset of the ``ancillotti``
experiment (:func:`coapcc.load_results`): its ``runs`` table, one row per run, with the
configuration columns (``algorithm``: ``CoAP-CC`` or ``CoCoA+``; ``grid_n``; ``load_kbps``) and
the run's metrics. A *cell* is one (grid, load, algorithm) point of a block: its value is the
mean over the replications of a run metric. Common arguments:

- ``block``: the block whose runs count (default ``monitoring``; a run several blocks share
  counts in each, its ``blocks`` column lists them, ``|``-separated);
- ``where``: column -> value or list of values, as the built-in measures take it;
- ``algorithm``: ``CoAP-CC`` or ``CoCoA+``.

``None`` (the claim is ``missing``) when the runs a measure needs are not in the dataset.

The sensitivity figures (:func:`sensitivity_figures`) draw, for every block named ``sens-*``,
the headline metrics (mean PLR, mean initial RTO, early retransmissions) against the value the
block sweeps. The experiment file names :func:`report_figures`, so the one report builder
draws them after the claims, like every study's own figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from .claims import where_rows

__all__ = [
    "cells",
    "cell_extreme",
    "pair_cells",
    "pair_extreme",
    "share_similar",
    "share_better_where",
    "spread",
    "loss_share",
    "trend",
    "argmax_within",
    "early_share",
    "sensitivity_figures",
    "report_figures",
    "CC",
    "CP",
]

#: The study's algorithm labels (the ``algorithm`` column).
CC, CP = "CoAP-CC", "CoCoA+"
_CELL = ("grid_n", "load_kbps")


def _runs(results, block: str | None = "monitoring", where: Mapping[str, Any] | None = None):
    """The runs of ``block`` matching ``where``."""
    df = results.runs
    if block is not None and len(df):
        if "blocks" not in df.columns:
            raise ValueError("the runs table has no 'blocks' column (not a sweep's dataset)")
        df = df[df["blocks"].astype(str).str.split("|").apply(lambda bs: block in bs)]
    return where_rows(df, where, "runs")


def cells(
    results,
    *,
    column: str,
    block: str | None = "monitoring",
    where=None,
    by: Iterable[str] = (*_CELL, "algorithm"),
):
    """The mean of ``column`` over the replications of every cell (a DataFrame with the ``by``
    columns and ``value``; rows whose value is NaN are left out)."""
    import pandas as pd

    df = _runs(results, block, where)
    by = list(by)
    if column not in results.runs.columns:
        raise ValueError(f"no column {column!r} in the runs table")
    if not len(df):
        return pd.DataFrame(columns=[*by, "value"])
    out = df.groupby(by, sort=True)[column].mean().rename("value").reset_index()
    return out[out["value"].notna()]


def cell_extreme(
    results, *, column: str, stat: str = "max", algorithm: str | None = None, block="monitoring", where=None
):
    """The largest (``stat = "max"``), smallest or mean cell value of ``column``."""
    where = dict(where or {})
    if algorithm is not None:
        where["algorithm"] = algorithm
    c = cells(results, column=column, block=block, where=where)
    if not len(c):
        return None
    return float({"max": c["value"].max, "min": c["value"].min, "mean": c["value"].mean}[stat]())


def pair_cells(
    results,
    *,
    column: str,
    mode: str = "diff",
    a: str = CC,
    b: str = CP,
    block="monitoring",
    where=None,
    min_b: float | None = None,
):
    """Per (grid, load) cell, ``b`` against ``a``: ``diff`` = b − a, ``rel`` = (b − a) / b,
    ``ratio`` = b / a (a DataFrame with ``grid_n``, ``load_kbps``, ``a``, ``b``, ``value``).
    ``min_b`` leaves out the cells where ``b`` is below it (a relative gain of nothing)."""
    c = cells(results, column=column, block=block, where=where)
    if not len(c):
        return None
    wide = c.pivot_table(index=list(_CELL), columns="algorithm", values="value").reset_index()
    if a not in wide.columns or b not in wide.columns:
        return None
    wide = wide.rename(columns={a: "a", b: "b"})[[*_CELL, "a", "b"]].dropna()
    if min_b is not None:
        wide = wide[wide["b"] >= min_b]
    if mode == "diff":
        wide["value"] = wide["b"] - wide["a"]
    elif mode == "rel":
        wide = wide[wide["b"] > 0]
        wide["value"] = (wide["b"] - wide["a"]) / wide["b"]
    elif mode == "ratio":
        wide = wide[wide["a"] > 0]
        wide["value"] = wide["b"] / wide["a"]
    else:
        raise ValueError(f"mode = {mode!r}: expected diff, rel or ratio")
    return wide


def pair_extreme(results, *, column: str, mode: str = "diff", stat: str = "max", **args):
    """The largest, smallest or mean cell value of :func:`pair_cells`."""
    w = pair_cells(results, column=column, mode=mode, **args)
    if w is None or not len(w):
        return None
    return float({"max": w["value"].max, "min": w["value"].min, "mean": w["value"].mean}[stat]())


def share_similar(results, *, column: str = "plr_mean", points: float = 0.10, **args):
    """The share of cells where the two algorithms' values differ by less than ``points``."""
    w = pair_cells(results, column=column, mode="diff", **args)
    if w is None or not len(w):
        return None
    return float((w["value"].abs() < points).mean())


def share_better_where(
    results,
    *,
    column: str = "plr_mean",
    margin: float = 0.01,
    grid_min: float = 5,
    load_min: float = 2.0,
    **args,
):
    """Of the cells where CoCoA+ does better than CoAP-CC by more than ``margin`` (lower
    ``column``), the share in large networks at high load (``grid_n >= grid_min`` and
    ``load_kbps >= load_min``); 1 when there is no such cell."""
    w = pair_cells(results, column=column, mode="diff", **args)
    if w is None or not len(w):
        return None
    better = w[w["value"] < -margin]
    if not len(better):
        return 1.0
    return float(((better["grid_n"] >= grid_min) & (better["load_kbps"] >= load_min)).mean())


def spread(results, *, column: str, algorithm: str, block="monitoring", where=None):
    """(largest − smallest) / mean of ``algorithm``'s cell values of ``column``."""
    c = cells(results, column=column, block=block, where={**dict(where or {}), "algorithm": algorithm})
    if not len(c) or c["value"].mean() == 0:
        return None
    v = c["value"]
    return float((v.max() - v.min()) / v.mean())


def loss_share(results, *, part: Iterable[str], of: Iterable[str], block="monitoring", where=None):
    """``sum(part) / sum(of)`` over the selected runs (e.g. messages lost to the no-caching
    rule among all lost messages)."""
    df = _runs(results, block, where)
    part, of = list(part), list(of)
    for col in (*part, *of):
        if col not in results.runs.columns:
            raise ValueError(f"no column {col!r} in the runs table")
    total = float(df[of].to_numpy().sum()) if len(df) else 0.0
    if total <= 0:
        return None
    return float(df[part].to_numpy().sum()) / total


def trend(results, *, column: str, by: str, group_by: Iterable[str] = (), block="monitoring", where=None):
    """Kendall's tau between ``by`` and the cell values of ``column``, averaged over the groups
    of ``group_by`` (1: grows with ``by``, −1: falls)."""
    from .claims import kendall_tau

    group_by = [group_by] if isinstance(group_by, str) else list(group_by)
    c = cells(
        results,
        column=column,
        block=block,
        where=where,
        by=[*group_by, by] if by not in group_by else group_by,
    )
    if not len(c):
        return None
    taus = []
    groups = c.groupby(group_by, sort=True) if group_by else [((), c)]
    for _, g in groups:
        g = g.sort_values(by)
        t = kendall_tau(g[by].tolist(), g["value"].tolist())
        if t is not None:
            taus.append(t)
    return sum(taus) / len(taus) if taus else None


def argmax_within(
    results,
    *,
    column: str,
    algorithm: str,
    grid_max: float = 4,
    load_max: float = 1.5,
    block="monitoring",
    where=None,
):
    """1 when ``algorithm``'s largest cell value of ``column`` lies in a small network at a low
    rate (``grid_n <= grid_max`` and ``load_kbps <= load_max``), else 0 (also when every cell
    is 0: there is no peak)."""
    c = cells(results, column=column, block=block, where={**dict(where or {}), "algorithm": algorithm})
    if not len(c):
        return None
    if c["value"].max() <= 0:
        return 0.0  # nothing to locate
    top = c.loc[c["value"].idxmax()]
    return float(top["grid_n"] <= grid_max and top["load_kbps"] <= load_max)


def early_share(results, *, algorithm: str, stat: str = "max", block="monitoring", where=None):
    """Early retransmissions as a share of first retransmissions: per cell, the first
    transmissions retransmitted although they had reached the sink and their ACK came back,
    over the units retransmitted at least once (pooled over the cell's runs and clients, from
    the runs' ``early_retransmission_count`` and ``retransmitted_frames`` totals); then the
    largest (``stat``) cell."""
    need = ("early_retransmission_count", "retransmitted_frames")
    if any(c not in results.runs.columns for c in need):
        return None
    df = _runs(results, block, {**dict(where or {}), "algorithm": algorithm})
    if not len(df):
        return None
    g = df.groupby(list(_CELL), sort=True)[list(need)].sum()
    g = g[g["retransmitted_frames"] > 0]
    if not len(g):
        return None
    share = g["early_retransmission_count"] / g["retransmitted_frames"]
    return float({"max": share.max, "min": share.min, "mean": share.mean}[stat]())


# -- sensitivity figures ----------------------------------------------------------------------

#: Configuration columns that never label a sensitivity value (they are the cell's, or the
#: run's identity).
_NOT_SWEPT = {
    "seed", "topology", "traffic", "cc", "algorithm", "grid_n", "load_kbps", "pattern", "tb_s", "event_bytes",
    "blocks", "config_hash", "config_json", "cc_resolved",
}  # fmt: skip

_HEADLINE = (
    ("plr_mean", "PLR (mean over clients)"),
    ("rto_first_s_mean", "initial RTO, mean (s)"),
    ("early_retransmissions_mean", "early retransmissions (share of first transmissions)"),
)


def _swept_label(df, config_cols: list[str], allow: Iterable[str] = ()):
    """A label per run from the configuration columns that vary within ``df`` (besides the
    cell's own columns and the run's seed, unless named in ``allow``): ``key=value, ...``."""
    varying = []
    allow = set(allow)
    for c in config_cols:
        if (c in _NOT_SWEPT and c not in allow) or c not in df.columns:
            continue
        vals = df[c].astype(str)
        if vals.nunique(dropna=False) > 1:
            varying.append(c)
    if not varying:
        return df.assign(swept="(one value)"), []

    def label(row) -> str:
        return ", ".join(f"{c}={_short(row[c])}" for c in varying)

    return df.assign(swept=df.apply(label, axis=1)), varying


def _short(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "–"
        return f"{v:g}"
    return str(v)


def _config_cols(runs_df) -> list[str]:
    """A sweep dataset's configuration columns: those between ``blocks`` and ``config_json``."""
    cols = list(runs_df.columns)
    start = cols.index("blocks") + 1 if "blocks" in cols else 0
    return cols[start : cols.index("config_json")] if "config_json" in cols else cols[start:]


def _sens_blocks(runs_df) -> list[str]:
    if not len(runs_df) or "blocks" not in runs_df.columns:
        return []
    return sorted({b for bs in runs_df["blocks"].astype(str) for b in bs.split("|") if b.startswith("sens-")})


def _sensitivity_block(runs_df, block: str, config_cols: list[str]):
    """The runs of ``block`` labelled by the value they sweep: ``(df, values)``, or None."""
    df = runs_df[runs_df["blocks"].astype(str).str.split("|").apply(lambda bs: block in bs)]
    df = df[df["load_kbps"].notna()]
    if not len(df):
        return None
    # The algorithm label alone distinguishes the study's two specs; a block that sweeps
    # the spec itself (sens-dither) labels by it.
    specs = df.groupby("algorithm")["cc"].nunique()
    cols = [c for c in config_cols if c != "cc"] + (["cc"] if (specs > 1).any() else [])
    df, varying = _swept_label(df, cols, allow=("cc",))
    values = list(dict.fromkeys(df.sort_values(varying or ["swept"])["swept"]))
    return df, values


def _caption(block: str, values: list[str]) -> str:
    legend = "; ".join(f"v{k + 1}: {v}" for k, v in enumerate(values))
    return (
        f"Sensitivity ({block}): mean PLR, mean initial RTO and early retransmissions (means over the "
        f"replications) per grid and load, against the swept value. {legend}."
    )


def _draw_sensitivity(df, values: list[str]):
    """The figure of one ``sens-*`` block (see :func:`sensitivity_figures`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted(df.groupby(list(_CELL)).groups)
    fig, axes = plt.subplots(
        len(_HEADLINE), len(panels), figsize=(3.2 * len(panels), 2.6 * len(_HEADLINE)), squeeze=False
    )
    for j, (n, load) in enumerate(panels):
        cell = df[(df["grid_n"] == n) & (df["load_kbps"] == load)]
        for i, (metric, ylabel) in enumerate(_HEADLINE):
            ax = axes[i][j]
            for alg, g in cell.groupby("algorithm", sort=True):
                m = g.groupby("swept")[metric].mean().reindex(values)
                ax.plot(range(len(values)), m.to_numpy(), marker="o", label=str(alg))
            ax.set_xticks(range(len(values)))
            ax.set_xticklabels([f"v{k + 1}" for k in range(len(values))])
            if i == 0:
                ax.set_title(f"{int(n)}×{int(n)}, {load:g} kbit/s", fontsize=9)
            if j == 0:
                ax.set_ylabel(ylabel, fontsize=8)
            ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def sensitivity_figures(runs_df, config_cols: list[str] | None = None) -> list[tuple[str, str, Any]]:
    """One figure per ``sens-*`` block of a runs table: the headline metrics (rows: mean PLR,
    mean initial RTO, early retransmissions) against the block's swept value (x), per grid and
    load (columns), one line per algorithm; the cell values are means over the replications.
    Returns ``(id, caption, matplotlib figure)``.

    The swept value is read from the configuration columns that vary within the block
    (``config_cols``: the candidates; default the columns between ``blocks`` and
    ``config_json``, a sweep dataset's configuration)."""
    if config_cols is None:
        config_cols = _config_cols(runs_df)
    out = []
    for block in _sens_blocks(runs_df):
        got = _sensitivity_block(runs_df, block, config_cols)
        if got is not None:
            out.append((block, _caption(block, got[1]), _draw_sensitivity(*got)))
    return out


def report_figures(ds) -> list:
    """The sensitivity figures (:func:`sensitivity_figures`) of the dataset ``ds``
    (:class:`coapcc.reports.Dataset`) as the report's figures: the experiment file names this
    function (``figures = ["coapcc.ancillotti:report_figures"]``)."""
    from .reports import Figure

    runs = ds.load(flow_columns=(), sort=False).runs
    config_cols = _config_cols(runs)
    figs = []
    for block in _sens_blocks(runs):
        got = _sensitivity_block(runs, block, config_cols)
        if got is not None:
            df, values = got
            figs.append(
                Figure(
                    block, _caption(block, values), lambda df=df, values=values: _draw_sensitivity(df, values)
                )
            )
    return figs
