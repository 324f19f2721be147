"""Summary statistics of the papers (spec §6): min, p10, p25, median, p75, p90, p95, max.

Percentiles use linear interpolation between closest ranks (``percentile_method = linear``,
AMBIG-T10), i.e. numpy's default method.
"""

from __future__ import annotations

from collections.abc import Iterable

#: Percentiles reported in summary tables, in order.
PERCENTILES = (10, 25, 50, 75, 90)


def describe(values: Iterable[float], percentiles=PERCENTILES) -> dict:
    """``{"n", "p10", "p25", "median", "p75", "p90", "mean", "min", "max"}`` of ``values``
    (NaN are ignored; all NaN when empty)."""
    import numpy as np

    a = np.asarray(list(values) if not hasattr(values, "__array__") else values, dtype=float)
    a = a[~np.isnan(a)]
    out: dict = {"n": int(a.size)}
    if a.size == 0:
        for p in percentiles:
            out["median" if p == 50 else f"p{p}"] = float("nan")
        out.update(mean=float("nan"), min=float("nan"), max=float("nan"))
        return out
    qs = np.percentile(a, percentiles, method="linear")
    for p, q in zip(percentiles, qs):
        out["median" if p == 50 else f"p{p}"] = float(q)
    out.update(mean=float(a.mean()), min=float(a.min()), max=float(a.max()))
    return out
