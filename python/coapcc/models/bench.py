"""Speed of the analytical models over a 10 000-point parameter grid.

``python -m coapcc.models.bench`` prints the median wall time of each model over the grid
(10 000 points per model: p x r x rto for Bernoulli, p x q x r x rto for Gilbert, p x q x k x h x r for GE), and,
as a baseline measured in the same run, the exact GE model evaluated point by point in a Python
loop (on 200 points, scaled to the grid).
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from . import loss


def _median_s(fn, reps: int = 7) -> float:
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main(argv: list[str] | None = None) -> int:
    p = np.linspace(0.02, 0.5, 10)
    q = np.linspace(0.1, 0.9, 10)
    r = np.arange(1, 11)
    rto = np.linspace(0.5, 5, 10)
    # 10 000 points for each model.
    bp, br, brto = (a.ravel() for a in np.meshgrid(np.linspace(0.01, 0.9, 100), r, rto, indexing="ij"))
    gp, gq, gr, grto = (a.ravel() for a in np.meshgrid(p, q, r, rto, indexing="ij"))
    ep, eq, ek, eh, er = (
        a.ravel()
        for a in np.meshgrid(
            p, q, np.linspace(0.6, 1, 10), np.linspace(0, 0.5, 5), np.array([2, 4]), indexing="ij"
        )
    )
    cases = {
        "bernoulli": (len(bp), lambda: loss.bernoulli(bp, r=br, rto=brto, rtt=0.2)),
        "gilbert": (len(gp), lambda: loss.gilbert(gp, gq, r=gr, rto=grto, rtt=0.2)),
        "ge (exact 2-D chain)": (len(ep), lambda: loss.ge(ep, eq, ek, eh, r=er, rto=2.0, rtt=0.2)),
        "ge (approx 1-D chain)": (len(ep), lambda: loss.ge_approx(ep, eq, ek, eh, r=er, rto=2.0, rtt=0.2)),
    }
    print("model evaluation over a parameter grid (median of 7)")
    for name, (n, fn) in cases.items():
        t = _median_s(fn)
        print(f"  {name:<24} {n:>6} points: {t * 1e3:8.1f} ms  ({t / n * 1e6:.2f} us/point)")
    m = 200

    def loop():
        for i in range(m):
            loss.ge(float(ep[i]), float(eq[i]), float(ek[i]), float(eh[i]), r=int(er[i]), rto=2.0, rtt=0.2)

    t_loop = _median_s(loop, reps=3) / m * len(ep)
    t_vec = _median_s(cases["ge (exact 2-D chain)"][1])
    print(
        f"  baseline: ge point by point in a Python loop, {len(ep)} points (scaled from {m}): "
        f"{t_loop * 1e3:.0f} ms; vectorised is {t_loop / t_vec:.0f}x faster"
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
