"""The makarem21 study as one tidy table: what its claims, its report and its chapter 5-6
figures read.

The study's runs (:mod:`coapcc.kinds.makarem`: ``coapcc reproduce makarem21`` sweeps them into
a dataset) make one row each in the dataset's ``runs`` table, with a ``part`` column saying
which kind of row it is. The rows of the parts the claims read:

========== ============================================================================
``part``   rows and columns (besides ``part`` and the dataset's ``config_hash``, ``block``, ``seed``...)
========== ============================================================================
table-4.1  one per row of the thesis's Table 4.1 (r = 3): ``row, p, q, k, h, r``, the models'
           ``P_L_exact, P_L_approx, P_L_closed`` and the printed ``paper_exact, paper_approx``
model      the chapter 3-4 curves: ``model`` (bernoulli, gilbert), ``p, q, r, rto, rtt`` and
           ``P_L, D_s, GP, O, O_S``
rtt        one per (study, scenario, algorithm, seed): ``study`` (compare, weights, k-normal,
           k-spurious, or ``sensitivity``), ``variant`` (thesis, or the named choice changed),
           ``scenario, cc, cc_spec, setting, seed``, the counts ``spurious, spurious_messages,
           gave_up, late_acks, transmissions, messages``, ``rmse_ms, mean_rto_ms,
           mean_rtt_ms`` and the replay options ``late_ack, ack_rtt, retransmit_timer,
           rtt_consumption``
resbw      one per (set, variant, algorithm, mean residual bandwidth, replication): ``set``
           (bad-only, set1, set2, variability, stable, backoff-factor), ``variant``, ``cc,
           cc_spec, family`` (backoff, rate, bdp), ``mean_resbw, half_width, replication,
           seed``, ``goodput_pps, overhead, app_loss_ratio, transmissions, delivered, dropped,
           lost, spurious, mean_resbw_pps, gp_ratio`` (goodput / mean residual bandwidth) and
           the choices as the simulator resolved them ``late_ack, ack_rtt, retransmit_timer,
           rtt_draw, loss_rule``
========== ============================================================================

The other parts are the report's: ``model-sim`` (a loss model's values against the
simulator's), and ``rtt-trace`` and ``resbw-trace``, whose message-by-message rows are in the
dataset's ``flows`` table. ``cc`` is the short label of an algorithm (:func:`cc_label`: the
name, and for the chapter 6 runs the parameters beside the ``makarem2021`` preset); ``cc_spec``
the spec that ran.

``coapcc validate makarem21 --dataset DIR`` judges a dataset with the claims of
``experiments/claims/makarem21.toml`` and the measures of :mod:`coapcc.models.claims`. This
module gives each row its values: :func:`table_4_1_row`, :func:`model_row`, :func:`rtt_row`,
:func:`resbw_row`.
"""

from __future__ import annotations

__all__ = [
    "TABLE_4_1",
    "RTT_OPTIONS",
    "RESBW_OPTIONS",
    "RTT_DEFAULTS",
    "cc_label",
    "family",
    "table_4_1_row",
    "model_row",
    "rtt_row",
    "resbw_row",
]

#: The thesis's Table 4.1 (r = 3): p, q, k, h, exact P_L, approximate P_L (printed).
TABLE_4_1 = [
    (0.1, 0.5, 1.0, 0.0, 0.013158, 0.013158),
    (0.1, 0.5, 0.95, 0.05, 0.013129, 0.011279),
    (0.1, 0.5, 0.75, 0.25, 0.018239, 0.016534),
    (0.1, 0.5, 0.4, 0.4, 0.129599, 0.129599),
    (0.1, 0.5, 0.9, 0.4, 0.003700, 0.002897),
    (0.1, 0.1, 0.75, 0.25, 0.096715, 0.090301),
    (0.1, 0.05, 0.75, 0.25, 0.151292, 0.146092),
    (0.1, 0.8, 0.75, 0.25, 0.009399, 0.009321),
    (0.4, 0.6, 0.75, 0.25, 0.041006, 0.041006),
    (0.75, 0.25, 0.75, 0.25, 0.152588, 0.152588),
]

#: The RTT-scenario replay's named choices (:func:`coapcc.models.studies.rtt_scenarios`).
RTT_OPTIONS = ("late_ack", "ack_rtt", "retransmit_timer", "rtt_consumption")
#: The residual-bandwidth simulator's named choices (:func:`coapcc.models.studies.resbw`).
RESBW_OPTIONS = ("late_ack", "ack_rtt", "retransmit_timer", "rtt_draw", "loss_rule")
#: The replay's choices when the file does not set them (the thesis's simulator; the Rust
#: core's defaults), as the ``rtt`` rows name them.
RTT_DEFAULTS = {
    "late_ack": "sample",
    "ack_rtt": "copy",
    "retransmit_timer": "estimate",
    "rtt_consumption": "per-message",
}

_RATE = ("idc-coap", "mbc-coap")
#: The values of one residual-bandwidth run that its table keeps.
RESBW_VALUES = (
    "goodput_pps",
    "overhead",
    "app_loss_ratio",
    "transmissions",
    "delivered",
    "dropped",
    "lost",
    "spurious",
    "mean_resbw_pps",
)


def cc_label(spec: str) -> str:
    """A short label: the name and any parameter beside the ``makarem2021`` preset
    (``"idc-coap:preset=makarem2021,iw=1.1"`` -> ``"idc-coap iw=1.1"``)."""
    name, _, params = spec.partition(":")
    extra = [p for p in params.split(",") if p and p != "preset=makarem2021"]
    return " ".join([name, *extra])


def family(spec: str) -> str:
    """``backoff``, ``rate`` or ``bdp`` (the chapter 6 grouping)."""
    name = spec.partition(":")[0]
    if name in _RATE or name.startswith("idc-coap"):
        return "rate"
    if name == "bdp-coap":
        return "bdp"
    return "backoff"


def table_4_1_row(row: int) -> dict:
    """Row ``row`` (1-10) of Table 4.1: the exact 2-D chain, the approximate 1-D chain and
    the closed form (4.25) against the printed values (r = 3)."""
    from . import loss

    p, q, k, h, ex, ap = TABLE_4_1[row - 1]
    return {
        "P_L_exact": float(loss.ge(p, q, k, h, r=3, T=2.5)["P_L"]),
        "P_L_approx": float(loss.ge_approx(p, q, k, h, r=3, T=2.5)["P_L"]),
        "P_L_closed": float(loss.ge_loss_ratio_closed(p, q, k, h, 3)),
        "paper_exact": ex,
        "paper_approx": ap,
    }


def model_row(
    model: str, p: float, q: float | None, *, r: int, rto: float, rtt: float, Z: float, Y: float
) -> dict:
    """One point of the chapter 3 curves: ``P_L, D_s, GP, O, O_S`` of the ``bernoulli`` or
    ``gilbert`` (with ``q``) model."""
    from . import loss

    kw = dict(r=r, rto=rto, rtt=rtt, Z=Z, Y=Y)
    res = loss.bernoulli(p, **kw) if model == "bernoulli" else loss.gilbert(p, q, **kw)
    return {k: float(res[k]) for k in ("P_L", "D_s", "GP", "O", "O_S")}


def rtt_row(rec: dict, options: dict) -> dict:
    """The values of an ``rtt`` row from one row of
    :func:`coapcc.models.studies.rtt_scenarios` and the replay options it ran with."""
    out = {k: v for k, v in rec.items() if k not in ("scenario", "cc")}
    out.update({k: options.get(k) or RTT_DEFAULTS[k] for k in RTT_OPTIONS})
    return out


def resbw_row(r: dict) -> dict:
    """The values of a ``resbw`` row from one :func:`coapcc.models.studies.resbw` run: its
    measures, ``gp_ratio`` and the choices as the simulator resolved them."""
    out = {k: float(r[k]) for k in RESBW_VALUES}
    out["gp_ratio"] = (
        out["goodput_pps"] / out["mean_resbw_pps"] if out["mean_resbw_pps"] > 0 else float("nan")
    )
    out["cc_resolved"] = r.get("cc_resolved")
    out["truncated"] = bool(r.get("truncated", False))
    out.update({k: r[k] for k in RESBW_OPTIONS if k in r})
    return out
