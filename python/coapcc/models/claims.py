"""The makarem21 study's own claim measures (``measure = "coapcc.models.claims:NAME"``).

Each is a function ``f(results, **args) -> float | None`` over the study's tidy table (the
dataset's runs, one row per run of :mod:`coapcc.kinds.makarem`; the columns of each ``part`` in
:mod:`coapcc.models.tables`; ``results.runs``), ``None`` when the rows it needs are absent.

* :func:`share`: in how many scenarios of the chapter 5 comparison does one algorithm beat
  another (or all others), by a column averaged over the seeds;
* :func:`level`: a statistic of a column over a range of the mean residual bandwidth;
* :func:`range_ratio`: the ratio of two such levels (one algorithm or family against another);
* :func:`table_4_1_deviation`: the largest distance between a model column of Table 4.1 and
  the printed values.

>>> # share(results, a="makarem-rto", b="pcocoa", column="spurious")  -> 0.72 (say)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..claims import where_rows

__all__ = ["share", "level", "range_ratio", "table_4_1_deviation"]

_OPS = {
    "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y,
    ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y,
}


def _rows(results, part: str, where: Mapping[str, Any] | None = None):
    df = results.runs
    if "part" not in df.columns:
        return df.iloc[0:0]
    df = df[df["part"] == part]
    if df.empty:
        return df
    return where_rows(df, where, "makarem21")


def share(
    results,
    *,
    a: str,
    b: str | Sequence[str],
    column: str = "spurious",
    op: str = "<",
    study: str = "compare",
    variant: str = "thesis",
    scenarios: Sequence[int] | None = None,
    exclude: Sequence[int] = (),
) -> float | None:
    """The share of scenarios in which algorithm ``a``'s ``column`` (mean over seeds) is
    ``op`` that of ``b`` (with a list, the best of them: the minimum for ``<``, the maximum
    for ``>``). ``scenarios`` restricts, ``exclude`` drops scenarios."""
    if op not in _OPS:
        raise ValueError(f"op = {op!r}: expected one of {', '.join(_OPS)}")
    df = _rows(results, "rtt", {"study": study, "variant": variant})
    if df.empty:
        return None
    if scenarios is not None:
        df = df[df["scenario"].isin(list(scenarios))]
    df = df[~df["scenario"].isin(list(exclude))]
    if df.empty:
        return None
    means = df.groupby(["scenario", "cc"])[column].mean().unstack("cc")
    others = [b] if isinstance(b, str) else list(b)
    if a not in means.columns or not all(o in means.columns for o in others):
        return None
    other = means[others].min(axis=1) if op in ("<", "<=") else means[others].max(axis=1)
    hits = [_OPS[op](x, y) for x, y in zip(means[a], other) if not (math.isnan(x) or math.isnan(y))]
    return sum(hits) / len(hits) if hits else None


def _range(df, by: str, lo: float | None, hi: float | None):
    if lo is not None:
        df = df[df[by] >= lo - 1e-9]
    if hi is not None:
        df = df[df[by] <= hi + 1e-9]
    return df


def level(
    results,
    *,
    column: str,
    where: Mapping[str, Any] | None = None,
    set: str = "bad-only",
    variant: str = "thesis",
    by: str = "mean_resbw",
    lo: float | None = None,
    hi: float | None = None,
    stat: str = "median",
) -> float | None:
    """``stat`` (``median``, ``mean``, ``min`` or ``max``) over the ``by`` values in
    ``[lo, hi]`` of ``column`` averaged over the repetitions at each value, for the chapter 6
    rows selected by ``set``, ``variant`` and ``where`` (e.g. ``{cc = "default"}`` or
    ``{family = "backoff"}``; several algorithms are averaged at each value)."""
    df = _rows(results, "resbw", {"set": set, "variant": variant, **dict(where or {})})
    if df.empty:
        return None
    df = _range(df, by, lo, hi)
    if df.empty:
        return None
    per = df.groupby(by)[column].mean()
    per = per[per.notna()]
    if per.empty:
        return None
    fn = {"median": per.median, "mean": per.mean, "min": per.min, "max": per.max}.get(stat)
    if fn is None:
        raise ValueError(f"stat = {stat!r}: expected median, mean, min or max")
    return float(fn())


def range_ratio(results, *, a: Mapping[str, Any], b: Mapping[str, Any], **args) -> float | None:
    """``level(a) / level(b)``: ``a`` and ``b`` are the ``where`` of each; the other arguments
    are :func:`level`'s, shared."""
    x = level(results, where=a, **args)
    y = level(results, where=b, **args)
    if x is None or y is None or y == 0:
        return None
    return x / y


def table_4_1_deviation(results, *, column: str = "P_L_exact", paper: str = "paper_exact") -> float | None:
    """The largest ``|column - paper|`` over the rows of Table 4.1."""
    df = _rows(results, "table-4.1")
    if df.empty:
        return None
    return float((df[column] - df[paper]).abs().max())
