"""Makarem (2021) chapter 5 and 6 studies from Python (the work runs in the Rust core).

* :func:`rtt_scenarios`: the Table 5.1 RTT scenarios replayed through RTO algorithms;
  spurious retransmissions and RMSE(RTO, RTT) per scenario and algorithm, as a DataFrame.
* :func:`rtt_trace` and :func:`plot_rto_vs_rtt`: RTO and RTT message by message.
* :func:`resbw`: one residual-bandwidth run; :func:`resbw_curve`: goodput, overhead and
  application loss against the mean residual bandwidth (the chapter 6 curves).

Both simulators run on the one CoAP reliability layer. Its options, named as in the Rust
core, default to the thesis's simulator (``None`` keeps that default):

* ``late_ack``: ``"sample"`` (an ACK after its message was given up still informs the
  algorithm) or ``"ignore"`` (RFC 7252);
* ``ack_rtt``: ``"copy"`` (an ACK's RTT is that of the copy it answers) or ``"original"``
  (counted from the original transmission, CoCoA's weak sample);
* ``retransmit_timer``: ``"estimate"`` (every copy waits the undithered RTO estimate: the
  chapter 5 "RTO-only" runs, the default there) or ``"algorithm"`` (the algorithm's own
  dithering and backoff, the default in the residual-bandwidth runs);
* ``rtt_consumption`` (RTT scenarios): ``"per-message"`` or ``"per-transmission"``;
* ``rtt_draw`` (residual bandwidth): ``"per-transmission"`` or ``"per-period"``;
* ``loss_rule`` (residual bandwidth; the thesis does not state it): ``"rate-check"`` (lost iff
  1/(time since the previous transmission) exceeds the residual bandwidth), ``"delivered"``
  (... since the previous *delivered* transmission: a lost packet does not use the capacity)
  or ``"token-bucket"`` (a one-packet bucket filled at the residual bandwidth).

>>> df = rtt_scenarios(["default", "cocoa"], scenarios=[7], len=2000)   # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["rtt_scenarios", "rtt_trace", "plot_rto_vs_rtt", "resbw", "resbw_curve", "read_trace", "available"]


def _native():
    from .. import _native as n

    if not hasattr(n, "rtt_scenarios_json"):
        raise RuntimeError("this build of coapcc._native has no studies (rerun scripts/setup)")
    return n


def available(spec: str) -> bool:
    """Whether the algorithm registry knows ``spec`` (for studies listing optional ones)."""
    from .. import _native as n

    try:
        n.resolve_algorithm(spec)
    except ValueError:
        return False
    return True


def read_trace(path: str | Path) -> list[float]:
    """An RTT trace file: one RTT in ms per line (``#`` comments; ``seq,rtt`` CSV works)."""
    out = []
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        field = line.replace("\t", " ").replace(",", " ").split()[-1]
        try:
            out.append(float(field))
        except ValueError:
            raise ValueError(f"{path}:{i}: expected an RTT in ms, got {line!r}") from None
    return out


def _request(cc, scenarios, seed, len, trace, scenario33, rtt_floor, options=None) -> dict:
    req: dict = {"cc": list(cc), "scenarios": list(scenarios or []), "seed": int(seed)}
    for key, value in (options or {}).items():
        if value is not None:
            req[key] = str(value)
    if len is not None:
        req["len"] = int(len)
    if trace is not None:
        if isinstance(trace, (str, Path)):
            req["trace_label"] = f"substitute trace {trace}"
            trace = read_trace(trace)
        req["trace"] = [float(x) for x in trace]
    req["scenario33"] = scenario33
    req["rtt_floor"] = rtt_floor
    return req


def rtt_scenarios(
    cc: Sequence[str],
    scenarios: Iterable[int] | None = None,
    *,
    seed: int = 1,
    len: int | None = None,
    trace=None,
    scenario33: str = "table",
    rtt_floor: str = "resample",
    late_ack: str | None = None,
    ack_rtt: str | None = None,
    retransmit_timer: str | None = None,
    rtt_consumption: str | None = None,
):
    """One row per (scenario, algorithm): ``scenario, cc, cc_resolved, spurious,
    spurious_messages, late_acks, rmse_ms, transmissions, messages, gave_up, mean_rto_ms,
    mean_rtt_ms`` (a pandas DataFrame).

    ``scenarios`` defaults to all of Table 5.1 (5 and 6, the unpublished real traces, only when
    ``trace`` — a path or a list of RTTs in ms — is given; results on it are a substitute).
    The replay options (module docs) default to the thesis's simulator.
    """
    import pandas as pd

    opts = dict(
        late_ack=late_ack, ack_rtt=ack_rtt, retransmit_timer=retransmit_timer, rtt_consumption=rtt_consumption
    )
    req = _request(cc, scenarios, seed, len, trace, scenario33, rtt_floor, opts)
    return pd.DataFrame(json.loads(_native().rtt_scenarios_json(json.dumps(req))))


def rtt_trace(
    cc: str,
    scenario: int,
    *,
    seed: int = 1,
    first: int = 0,
    count: int = 1000,
    len: int | None = None,
    trace=None,
    **options,
):
    """Per message: ``i, t_s, rtt_ms, rto_ms, retransmissions`` (a pandas DataFrame);
    ``options`` are :func:`rtt_scenarios`' replay options."""
    import pandas as pd

    req = _request([cc], [scenario], seed, len, trace, "table", "resample", options)
    return pd.DataFrame(json.loads(_native().rtt_trace_json(json.dumps(req), int(first), int(count))))


def plot_rto_vs_rtt(traces: dict, *, title: str = "", ax=None):
    """Plot RTT and each algorithm's RTO against the message index; ``traces`` maps a label to
    an :func:`rtt_trace` DataFrame (all of the same scenario and seed). Returns the figure."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 4))
    first = next(iter(traces.values()))
    ax.plot(first["i"], first["rtt_ms"] / 1e3, color="black", lw=0.8, label="RTT")
    for label, df in traces.items():
        ax.plot(df["i"], df["rto_ms"] / 1e3, lw=1.0, label=f"RTO {label}")
    ax.set_xlabel("message")
    ax.set_ylabel("seconds")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return fig or ax.figure


def resbw(
    cc: str,
    resbw: str,
    *,
    good: str | None = None,
    good_mean_s: float = 60.0,
    bad_mean_s: float = 5.0,
    rtt_ms: str = "normal:500,10",
    duration_s: float = 18_000.0,
    seed: int = 1,
    trace: bool = False,
    late_ack: str | None = None,
    ack_rtt: str | None = None,
    retransmit_timer: str | None = None,
    rtt_draw: str | None = None,
    loss_rule: str | None = None,
) -> dict:
    """One residual-bandwidth run: ``goodput_pps, overhead, app_loss_ratio, transmissions,
    delivered, dropped, lost, spurious, mean_resbw_pps``, the choices it used by name
    (``late_ack, ack_rtt, retransmit_timer, rtt_draw, loss_rule``) and ``trace`` (every
    transmission) when asked. Distributions: ``uniform:A,B``, ``normal:M,SD``, ``fixed:V``.
    The options (module docs) default to the thesis's simulator."""
    req = {
        "cc": cc,
        "resbw": resbw,
        "good": good,
        "good_mean_s": float(good_mean_s),
        "bad_mean_s": float(bad_mean_s),
        "rtt_ms": rtt_ms,
        "duration_s": float(duration_s),
        "seed": int(seed),
        "trace": bool(trace),
    }
    for key, value in (
        ("late_ack", late_ack),
        ("ack_rtt", ack_rtt),
        ("retransmit_timer", retransmit_timer),
        ("rtt_draw", rtt_draw),
        ("loss_rule", loss_rule),
    ):
        if value is not None:
            req[key] = str(value)
    return json.loads(_native().resbw_json(json.dumps(req)))


def resbw_curve(
    ccs: Sequence[str],
    means: Iterable[float],
    *,
    half_width: float = 0.1,
    repetitions: int = 3,
    seed: int = 1,
    **kw,
):
    """Goodput, overhead and application loss against the mean bad-period residual bandwidth:
    for each mean M, bad periods draw ``uniform:max(0, M - half_width),M + half_width``.
    ``kw`` goes to :func:`resbw` (``good``, ``bad_mean_s``, ``duration_s``, ...). One row per
    (cc, mean, repetition); repetition i uses seed ``seed + i``, the same for every algorithm
    (the same network evolution)."""
    import pandas as pd

    from .tables import RESBW_VALUES

    rows = []
    for mean in means:
        dist = f"uniform:{max(0.0, mean - half_width):g},{mean + half_width:g}"
        for cc in ccs:
            for rep in range(repetitions):
                r = resbw(cc, dist, seed=seed + rep, **kw)
                rows.append(
                    {
                        "cc": cc,
                        "mean_resbw": mean,
                        "repetition": rep,
                        **{k: r[k] for k in RESBW_VALUES},
                    }
                )
    return pd.DataFrame(rows)
