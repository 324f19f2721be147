"""The statistics of every report, in one place: summary percentiles (min, p10, p25, median,
p75, p90, max) and 95 % confidence intervals of a mean (Student t).

Percentiles use linear interpolation between closest ranks (``percentile_method = linear``,
AMBIG-T10), i.e. numpy's default method.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["PERCENTILES", "describe", "t95", "ci95_half", "mean_ci"]

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


def mean_ci(values) -> tuple[float, float, int]:
    """Mean, 95 % confidence half-width (Student t; NaN with one value) and count of the
    finite values of ``values`` (None and NaN ignored)."""
    import numpy as np

    v = np.asarray([x for x in values if x is not None], dtype=float)
    v = v[np.isfinite(v)]
    n = len(v)
    if n == 0:
        return math.nan, math.nan, 0
    if n == 1:
        return float(v[0]), math.nan, 1
    return float(v.mean()), float(ci95_half(v.std(ddof=1), n)), n


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
