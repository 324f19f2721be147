"""Fit the unpublished burst sojourn of a two-state error profile to published medians.

The Helsinki testbed's ``medium`` and ``high`` error profiles are published as two loss rates
and an average (testbed spec §1.4): the share of the burst state, π_B, follows; the clock and
the sojourn times do not. The clock is netem's: ``loss gemodel`` steps its two-state chain once
per packet (``loss_gilb_ell`` in Linux's ``net/sched/sch_netem.c``), and the study's second
emulator applied the loss with netem. One number is then left per profile: the mean burst
length b in packets (r = 1/b, p = r π_B / (1 - π_B) keeps the published average). With the
time clock (exponential sojourns, an alternative reading) the number is the mean burst
sojourn T_B in seconds (T_L = T_B (1 - π_B) / π_B).

The CoAP-over-TCP thesis's Default-CoAP-over-UDP column (its Tables 9, 10, 12 and 13: one
102 400-byte Block2 transfer per client, 2 500 B buffer, 1 and 4 clients) is the input; the
New Reno, BBR and CoCoA columns are the check, never the input.

Procedure (:func:`fit_profile`): the simulator runs each published cell at a candidate value
over a fixed set of seeds (common random numbers: the same seeds at every candidate, so the
medians change smoothly with it), and the objective is the sum over the cells of the squared
log ratio of the simulated median transfer time to the published one. A log-spaced grid of
candidates brackets the minimum, and a golden-section search on the log of the value narrows
it (:func:`minimise_log`). The result keeps every evaluation (the objective's curve) and the
residual of each cell. ``scripts/fit-errors`` runs it for both profiles and both clocks and
prints the fitted values and the residuals; the fitted values are the ``helsinki2018``
preset's (``coapcc_link::PRESET_FITS``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

__all__ = [
    "THESIS_DEFAULT_COAP",
    "THESIS_BASE",
    "CLOCKS",
    "Fit",
    "profile_rates",
    "errors_text",
    "median_fct",
    "minimise_log",
    "fit_profile",
]

#: The thesis's Default-CoAP-over-UDP medians, s, 2 500 B buffer: (profile, clients) -> median
#: (Table 9: medium, 1 client; Table 10: high, 1 client; Table 12: medium, 4 clients; Table 13:
#: high, 4 clients).
THESIS_DEFAULT_COAP: dict[tuple[str, int], float] = {
    ("medium", 1): 601.462,
    ("high", 1): 1269.150,
    ("medium", 4): 606.591,
    ("high", 4): 1195.690,
}

#: The rest of the setup: the thesis's Default CoAP and transfer, as the catalogue's
#: coap-tcp-thesis runs it (experiments/coap-tcp-thesis.toml).
THESIS_BASE: dict = {
    "algorithm": "default",
    "error_clock": "packet",
    "preset": "helsinki2018",
    "workload": "bulk:102400",
    "buffer_bytes": 2500,
    "start_jitter_ms": 1000.0,
    "link.rest_of_path_min_ms": 15.0,
    "link.rest_of_path_max_ms": 15.0,
}


def profile_rates(profile: str) -> tuple[float, float, float]:
    """``(loss_low, loss_burst, burst_share)`` of a published two-state profile (the link
    schema's, from Rust)."""
    from .. import _native

    for p in json.loads(_native.link_schema_json())["profiles"]:
        if p["name"] == profile and p.get("kind") == "two_state":
            return float(p["loss_low"]), float(p["loss_burst"]), float(p["burst_share"])
    raise ValueError(f"{profile!r} is not a two-state error profile (medium, high)")


#: The sojourn each clock fits: its unit and a grid of candidates that brackets the published
#: medians (the burst length is at least one packet).
CLOCKS: dict[str, tuple[str, tuple[float, ...]]] = {
    "packet": ("packets", (1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 8.0)),
    "time": ("s", (0.0625, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)),
}


def errors_text(profile: str, value: float, clock: str = "packet") -> str:
    """The explicit error model of ``profile`` (the published average kept): with the packet
    clock ``ge:P,R,K,H`` of mean burst length ``value`` packets, with the time clock
    ``ge-time:T_L,T_B,K,H`` of mean burst sojourn ``value`` seconds."""
    low, burst, pi_b = profile_rates(profile)
    if clock == "packet":
        r = 1.0 / value
        return f"ge:{r * pi_b / (1.0 - pi_b)!r},{r!r},{low!r},{burst!r}"
    if clock == "time":
        return f"ge-time:{value * (1.0 - pi_b) / pi_b!r},{value!r},{low!r},{burst!r}"
    raise ValueError(f"clock {clock!r}: expected packet or time")


def median_fct(
    profile: str,
    clients: int,
    value: float,
    seeds: Sequence[int],
    *,
    clock: str = "packet",
    base: Mapping | None = None,
    workers: int = 2,
) -> float:
    """The median transfer time, pooled over every flow of the runs with ``seeds``, of the
    thesis's Default-CoAP cell with ``profile`` at sojourn ``value`` (:func:`errors_text`)."""
    from ..simulation import simulate

    cfg = {
        **THESIS_BASE,
        **dict(base or {}),
        "clients": clients,
        "errors": errors_text(profile, value, clock),
    }

    def one(seed: int) -> list[float]:
        r = simulate({**cfg, "seed": int(seed)})
        return [x for x in r.flows["fct_s"].tolist() if x == x]

    with ThreadPoolExecutor(max(1, workers)) as ex:
        fcts = sorted(x for xs in ex.map(one, seeds) for x in xs)
    if not fcts:
        raise RuntimeError(f"no flow finished: {profile}, {clients} clients, sojourn {value} ({clock} clock)")
    n = len(fcts)
    return fcts[n // 2] if n % 2 else 0.5 * (fcts[n // 2 - 1] + fcts[n // 2])


@dataclass
class Fit:
    """A fitted sojourn (``value``: packets or seconds, as ``clock`` says), the objective at
    each candidate tried, and each published cell's target, model value and relative residual
    at the fit."""

    profile: str
    clock: str
    value: float
    objective: float
    curve: list[tuple[float, float]] = field(default_factory=list)
    residuals: dict[int, tuple[float, float, float]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """The fit as text: the value, then one line per cell."""
        low, burst, pi_b = profile_rates(self.profile)
        if self.clock == "packet":
            what = f"mean burst {self.value:.3f} packets ({errors_text(self.profile, self.value, 'packet')})"
        else:
            t_l = self.value * (1 - pi_b) / pi_b
            what = f"T_B = {self.value:.3f} s, T_L = {t_l:.3f} s"
        out = [
            f"{self.profile}, {self.clock} clock: {what}; "
            f"loss {low:g} / {burst:g}, burst share {pi_b:.4f}; objective {self.objective:.5f}"
        ]
        for clients, (target, model, rel) in sorted(self.residuals.items()):
            out.append(
                f"  {clients} client{'s' if clients != 1 else ''}: published {target:.3f} s, "
                f"simulated {model:.3f} s, residual {rel * 100:+.2f} %"
            )
        return out


def minimise_log(
    f: Callable[[float], float],
    grid: Iterable[float],
    *,
    iterations: int = 8,
) -> tuple[float, float, list[tuple[float, float]]]:
    """Minimise ``f`` over ``x > 0``: evaluate it on ``grid`` (increasing), then narrow the
    bracket around the best grid point by golden-section search on ``log x``. Returns
    ``(x, f(x), every (x, f(x)) evaluated)``. The best point seen is returned, so a rough
    objective (medians of finitely many runs) never makes the answer worse than the grid's."""
    xs = sorted(float(x) for x in grid)
    if len(xs) < 3 or xs[0] <= 0:
        raise ValueError("the grid needs at least 3 positive points")
    seen: dict[float, float] = {}

    def ev(x: float) -> float:
        if x not in seen:
            seen[x] = float(f(x))
        return seen[x]

    values = [ev(x) for x in xs]
    i = min(range(len(xs)), key=values.__getitem__)
    lo, hi = math.log(xs[max(i - 1, 0)]), math.log(xs[min(i + 1, len(xs) - 1)])
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = ev(math.exp(a)), ev(math.exp(b))
    for _ in range(iterations):
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = ev(math.exp(a))
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = ev(math.exp(b))
    best = min(seen, key=seen.__getitem__)
    return best, seen[best], sorted(seen.items())


def fit_profile(
    profile: str,
    targets: Mapping[int, float],
    *,
    clock: str = "packet",
    seeds: Sequence[int] = tuple(range(1, 41)),
    grid: Iterable[float] | None = None,
    iterations: int = 8,
    measure: Callable[[str, int, float, Sequence[int]], float] | None = None,
    workers: int = 2,
    log=None,
) -> Fit:
    """Fit ``profile``'s sojourn for ``clock`` to ``targets`` (clients -> published median, s).

    ``measure(profile, clients, value, seeds)`` gives the model's median (default:
    :func:`median_fct`, the simulator). ``grid`` defaults to the clock's (:data:`CLOCKS`).
    ``log`` (a file) gets one line per evaluation."""
    if clock not in CLOCKS:
        raise ValueError(f"clock {clock!r}: expected one of {', '.join(CLOCKS)}")
    unit, default_grid = CLOCKS[clock]
    if measure is None:

        def measure(p, c, t, s):
            return median_fct(p, c, t, s, clock=clock, workers=workers)

    cache: dict[tuple[int, float], float] = {}

    def model(clients: int, t_b: float) -> float:
        key = (clients, t_b)
        if key not in cache:
            cache[key] = measure(profile, clients, t_b, seeds)
        return cache[key]

    def objective(t_b: float) -> float:
        j = sum(math.log(model(c, t_b) / target) ** 2 for c, target in targets.items())
        if log is not None:
            cells = ", ".join(f"{c} cl {model(c, t_b):.1f} s" for c in sorted(targets))
            print(f"fit-errors: {profile} {t_b:.4f} {unit}: {cells}; objective {j:.5f}", file=log, flush=True)
        return j

    t_b, j, curve = minimise_log(objective, default_grid if grid is None else grid, iterations=iterations)
    residuals = {c: (target, model(c, t_b), model(c, t_b) / target - 1.0) for c, target in targets.items()}
    return Fit(profile=profile, clock=clock, value=t_b, objective=j, curve=curve, residuals=residuals)
