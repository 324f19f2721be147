"""The case tables of simulator studies' reports (:mod:`coapcc.reports.sim`): a case is a
panel (the configuration columns that vary, :func:`panel_dims`), a series and a number of
clients. The flows are read with only the fields the report uses, their case columns taken
from their run (:func:`load`); the summary per case (:func:`summary_table`) and Jain's
fairness index are computed from them, and every table lists cases in one order
(:func:`order_cases`)."""

from __future__ import annotations

import json

from ..config import SimConfig
from ..figures import base as FB

__all__ = ["panel_dims", "order_cases", "jain_index", "per_run", "summary_table", "load", "FLOW_FIELDS"]

_CASE_ORDER = ("errors", "workload", "buffer_bytes")
_NOT_DIMS = {"seed", "algorithm", "clients", "groups"}

#: The flows' own fields the report reads (the rest of a dataset stays on disk).
FLOW_FIELDS = (
    "client",
    "group",
    "fct_s",
    "transmissions",
    "retransmissions",
    "unnecessary_retransmissions",
    "completed_exchanges",
    "failed_exchanges",
    "segments_sent",
    "rto_expiries",
)

# -- data preparation -------------------------------------------------------------------------


def _config_columns() -> list[str]:
    return list(SimConfig().flat().keys())


def panel_dims(runs) -> list[str]:
    """Configuration columns (other than algorithm and clients) that vary: the panels. The
    buffer comes last, so that panels run along buffers within a row."""
    dims = []
    for c in ["errors", "workload", *[c for c in _config_columns() if c not in _CASE_ORDER], "buffer_bytes"]:
        if c in _NOT_DIMS or c not in runs:
            continue
        if runs[c].nunique(dropna=False) > 1:
            dims.append(c)
    return dims


def order_cases(df, dims: list[str], series_order: list[str], series_col: str = "series", extra=()):
    """``df`` sorted into the one case order of the report: ``dims`` (numbers ascending,
    others in order of appearance), series in ``series_order``, clients ascending, then
    ``extra`` columns."""
    if not len(df):
        return df
    keys, tmp = [], {}
    for c in dims:
        vals = FB.sorted_values(df[c])
        tmp[f"_o_{c}"] = df[c].map({v: i for i, v in enumerate(vals)})
        keys.append(f"_o_{c}")
    tmp["_o_series"] = df[series_col].map({s: i for i, s in enumerate(series_order)})
    keys += ["_o_series", "clients", *extra]
    return df.assign(**tmp).sort_values(keys, kind="stable").drop(columns=list(tmp)).reset_index(drop=True)


def jain_index(values) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2) of ``values`` (NaN ignored): 1 when all
    are equal, 1/n when one takes everything."""
    import numpy as np

    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0 or not (x * x).sum():
        return float("nan")
    return float(x.sum() ** 2 / (x.size * (x * x).sum()))


def _lookup(values, index):
    """``values`` (indexed by plain case keys) at the summary's ``index`` (whose levels may be
    categories)."""
    import pandas as pd

    plain = pd.MultiIndex.from_tuples([tuple(k) for k in index], names=index.names) if len(index) else index
    out = values.reindex(plain)
    out.index = index
    return out


def _jain_per_run(flows, keys: list[str]):
    """Jain's index of the flows' throughput (completed exchanges / FCT) per ``keys`` group,
    vectorised: (sum x)^2 / (n sum x^2) over the non-NaN x (no copy of the flows table)."""
    import numpy as np
    import pandas as pd

    x = flows["completed_exchanges"].to_numpy(dtype=float) / flows["fct_s"].to_numpy(dtype=float)
    ok = ~np.isnan(x)
    x[~ok] = 0.0
    by = [flows[k] for k in keys]
    parts = pd.DataFrame({"x": x, "x2": x * x, "n": ok.astype(np.int32)}, index=flows.index)
    g = parts.groupby(by, sort=False, observed=True).sum()
    s, s2, n = g["x"], g["x2"], g["n"]
    with np.errstate(all="ignore"):
        out = s * s / (n * s2)
    return out.where((n > 0) & (s2 > 0))


def per_run(flows, series_col: str = "series"):
    """One row per run and series: the run's median FCT and Jain's index of its flows'
    throughput (completed exchanges / FCT)."""
    keys = ["config_hash", series_col]
    g = flows.groupby(keys, sort=False, observed=True)
    out = g["fct_s"].median().rename("fct_run_median").to_frame()
    out["jain"] = _jain_per_run(flows, keys)
    return out.reset_index()


def summary_table(flows, runs, dims: list[str], series_order: list[str] | None = None, quantiles=None):
    """Per case (panel dims x series x clients): runs, flows, FCT median/p10/p25/p75/p90 (s),
    the mean over replications of each run's median FCT with its 95 % confidence half-width,
    Jain's fairness index (mean over runs), median retransmissions and unnecessary
    retransmissions per flow, failed exchanges, mean useful fraction and downlink busy
    fraction. ``quantiles``: the FCT's per case when the caller has them already
    (:func:`coapcc.figures.flows.box_stats`)."""
    import pandas as pd

    from ..stats import ci95_half

    keys = ["series", "clients", *dims]
    if not len(flows):
        return pd.DataFrame()
    f = flows
    g = f.groupby(keys, sort=False, dropna=False, observed=True)
    if quantiles is None:
        qs = g["fct_s"].quantile([0.10, 0.25, 0.50, 0.75, 0.90])  # linear interpolation, NaN ignored
        qs = qs.unstack().rename(columns={0.10: "p10", 0.25: "p25", 0.50: "median", 0.75: "p75", 0.90: "p90"})
    else:
        qs = quantiles.set_index(keys)
    size = g.size()
    df = pd.DataFrame(
        {
            "runs": g["config_hash"].nunique(),
            "flows": size,
            "unfinished": (size - g["fct_s"].count()).astype(int),
        }
    )
    for q in ("median", "p10", "p25", "p75", "p90"):
        df[f"fct_{q}"] = qs[q].reindex(df.index) if quantiles is None else _lookup(qs[q], df.index)
    # per run (and series, for mixed runs): its median FCT and Jain's index, then over the
    # replications of each case
    runs_of = per_run(f)
    case_of = f.drop_duplicates(["config_hash", "series"])[["config_hash", *keys]]
    runs_of = runs_of.merge(case_of, on=["config_hash", "series"])
    run_cols = [c for c in ("useful_fraction", "downlink_busy_fraction") if c in runs]
    runs_of = runs_of.merge(runs[["config_hash", *run_cols]].drop_duplicates("config_hash"), on="config_hash")
    pr = runs_of.groupby(keys, sort=False, dropna=False, observed=True)
    m = pr["fct_run_median"]
    n = m.count()
    df["fct_run_median_mean"] = m.mean()
    half = [ci95_half(sd, k) for sd, k in zip(m.std(), n)]
    df["ci95"] = pd.Series(half, index=n.index)
    df["jain"] = pr["jain"].mean()
    df["retx_median"] = g["retransmissions"].median().astype(float)
    df["unnecessary_median"] = g["unnecessary_retransmissions"].median().astype(float)
    df["unnecessary_mean"] = g["unnecessary_retransmissions"].mean().astype(float)
    df["failed_exchanges"] = g["failed_exchanges"].sum().astype(int)
    if "useful_fraction" in run_cols:
        df["useful_fraction"] = pr["useful_fraction"].mean()
    if "downlink_busy_fraction" in run_cols:
        df["downlink_busy"] = pr["downlink_busy_fraction"].mean()
    df = df.reset_index()
    df = df[[*dims, "series", "clients", *[c for c in df.columns if c not in keys]]]
    for c in ("series", *dims):  # categories (the flows' keys) back to plain values
        if isinstance(df[c].dtype, pd.CategoricalDtype):
            df[c] = df[c].astype(df[c].cat.categories.dtype)
    return order_cases(df, dims, series_order or FB.ordered(flows["series"]))


def load(ds, tag, compare: bool, runs=None):
    """A dataset for the report: the runs table whole and, of the flows, the fields above,
    with the case columns of their run (the panel dimensions among them) and the series
    (the run's label, or "group label in mix" for mixed runs), as categories: the flows are
    most of a dataset, and their case columns repeat their run's. ``runs``: the dataset's runs
    table (``ds.load(flow_columns=()).runs``) when the caller has read it already."""
    import numpy as np
    import pandas as pd

    if runs is None:
        runs = ds.load(flow_columns=()).runs
    if runs.empty:
        raise ValueError(f"{ds.path}: the dataset has no runs yet (run coapcc sweep first)")
    flows = ds.load(columns=("config_hash",), flow_columns=FLOW_FIELDS, sort=False).flows
    dims = panel_dims(runs)
    at = pd.Index(runs["config_hash"]).get_indexer(flows["config_hash"])
    if (at < 0).any():  # flows of a run the runs table does not have: not part of the dataset
        keep = at >= 0
        flows, at = flows[keep].reset_index(drop=True), at[keep]
    # Compact: the run as a category (its codes index the runs table), counters as 32 bits.
    flows["config_hash"] = pd.Categorical.from_codes(at, categories=runs["config_hash"])
    for c in flows.columns:
        col = flows[c]
        if col.dtype.kind in "iu" and len(col) and col.min() >= -(2**31) and col.max() < 2**31:
            flows[c] = col.astype(np.int32)
    for c in dict.fromkeys(["algorithm", "clients", "groups", "buffer_bytes", "workload", "errors", *dims]):
        if c not in runs:
            continue
        col = runs[c]
        if col.dtype.kind in "iu" and col.min() >= -(2**31) and col.max() < 2**31:
            flows[c] = col.to_numpy().astype(np.int32)[at]
        elif col.dtype.kind in "fb":
            flows[c] = col.to_numpy()[at]
        else:
            codes, cats = pd.factorize(col)
            flows[c] = pd.Categorical.from_codes(codes[at], categories=cats)
    # The series of every flow: the run's label, or "group label in mix" for mixed runs.
    # (a mix's labels come from its groups, resolved once per distinct mix, not once per run)
    mixes: dict[tuple[str, str], list[str]] = {}
    labels = []
    for a, g in zip(runs["algorithm"], runs["groups"]):
        if g:
            lbl = mixes.get((a, g))
            if lbl is None:
                groups = tuple(json.loads(g))
                lbl = [f"{gl} in {tag(a)}" for gl in SimConfig(groups=groups, clients=1000).group_labels()]
                mixes[(a, g)] = lbl
            labels.append(lbl)
        else:
            labels.append([tag(a)])
    width = max(len(x) for x in labels)
    table_ = np.array([x + [x[-1]] * (width - len(x)) for x in labels], dtype=object)
    group = flows["group"].fillna(0).astype(int).clip(0, width - 1).to_numpy() if "group" in flows else 0
    codes, cats = pd.factorize(table_[at, group])
    flows["series"] = pd.Categorical.from_codes(codes, categories=cats)
    runs = runs.assign(series=[tag(a) for a in runs["algorithm"]])
    if compare:
        flows["dataset"] = ds.name
        runs["dataset"] = ds.name
    return runs, flows, dims
