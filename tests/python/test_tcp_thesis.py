"""The CoAP-over-TCP thesis's study code: the error-profile fit (coapcc.studies.error_fit)
recovers known parameters, the trace-statement measures (coapcc.studies.tcp_thesis), the
table figures, the claims file, and the preset reaching TCP specs from Python."""

import math

import pandas as pd
import pytest

from coapcc.claims import find_claims
from coapcc.config import ConfigError, SimConfig, compose_spec
from coapcc.studies import error_fit, tcp_thesis, tcp_thesis_figures


class Stub:
    def __init__(self, flows, runs=None):
        self.flows = pd.DataFrame(flows)
        self.runs = pd.DataFrame(runs if runs is not None else flows)


# -- the fit ------------------------------------------------------------------------------


def test_minimise_log_finds_a_known_minimum():
    xs = []

    def f(x):
        xs.append(x)
        return (math.log(x) - math.log(2.3)) ** 2

    x, fx, curve = error_fit.minimise_log(f, (0.5, 1, 2, 4, 8), iterations=20)
    assert abs(x / 2.3 - 1) < 0.01 and fx < 1e-4
    assert sorted(set(xs)) == [c[0] for c in curve]  # every evaluation is reported once
    with pytest.raises(ValueError):
        error_fit.minimise_log(f, (1, 2))


def test_fit_recovers_a_known_sojourn_from_a_synthetic_model():
    # A model whose medians fall with the burst length as the simulator's do; the targets are
    # its values at b = 1.7: the fit must give b back, with zero residuals.
    def model(profile, clients, b, seeds):
        return 500.0 + 300.0 / b + 10.0 * clients

    targets = {c: model("medium", c, 1.7, ()) for c in (1, 4)}
    fit = error_fit.fit_profile("medium", targets, clock="packet", measure=model, iterations=25)
    assert abs(fit.value / 1.7 - 1) < 0.005, fit.value
    assert all(abs(rel) < 1e-3 for _, _, rel in fit.residuals.values())
    assert fit.lines()[0].startswith("medium, packet clock: mean burst 1.70")


def test_fit_recovers_a_known_burst_length_from_simulated_medians():
    # Synthetic "published" medians: the simulator's at a known burst length (2 packets), one
    # cell. The fit with the same seeds (common random numbers) recovers it.
    seeds = tuple(range(1, 13))
    truth = error_fit.median_fct("medium", 1, 2.0, seeds, clock="packet")
    fit = error_fit.fit_profile("medium", {1: truth}, clock="packet", seeds=seeds, iterations=10)
    assert abs(fit.value / 2.0 - 1) < 0.05, fit.value
    assert abs(fit.residuals[1][2]) < 0.01


def test_errors_text_keeps_the_published_average():
    import json

    from coapcc import _native

    for profile, avg in (("medium", 0.10), ("high", 0.18)):
        for clock, value in (("packet", 1.4), ("time", 0.2)):
            m = json.loads(_native.loss_model_json(error_fit.errors_text(profile, value, clock)))
            if clock == "packet":
                share = m["p"] / (m["p"] + m["r"])
                assert abs(1 / m["r"] - value) < 1e-12
            else:
                share = m["burst_mean_s"] / (m["burst_mean_s"] + m["low_mean_s"])
            mean = share * m["loss_burst"] + (1 - share) * m["loss_low"]
            assert abs(mean - avg) < 1e-12, (profile, clock)


# -- the measures of the trace statements ---------------------------------------------------


def test_trace_measures_on_stub_flows():
    flows = {
        "block": ["tcp-newreno", "tcp-newreno", "tcp-bbr", "tcp-bbr"],
        "transmissions": [500, 500, 700, 600],
        "retransmissions": [99, 99, 300, 200],
        "new_after_first_dupack": [0, 4, 300, 10],
        "recovery_retransmits": [99, 101, 20, 10],
        "recovery_rounds": [99, 99, 20, 10],
        "rto_expiries": [0, 0, 6, 2],
        "rto_episode_s": [None, None, 5.0, 7.0],
        "rto_resend_s": [None, None, 3.0, 1.0],
    }
    r = Stub(flows)
    nr = {"block": "tcp-newreno"}
    assert tcp_thesis.new_data_before_first_dupack(r, where=nr) == pytest.approx(1 - 4 / 802)
    assert tcp_thesis.retransmissions_per_recovery_round(r, where=nr) == pytest.approx(200 / 198)
    # Per RTO: 6 episodes of 5 s and 2 of 7 s.
    assert tcp_thesis.seconds_per_rto_episode(r, where={"block": "tcp-bbr"}) == pytest.approx(5.5)
    assert tcp_thesis.seconds_per_rto_episode(r, where=nr) is None
    # Resending: 6 RTOs followed by 3 s of it, 2 by 1 s.
    assert tcp_thesis.seconds_resending_per_rto(r, where={"block": "tcp-bbr"}) == pytest.approx(2.5)
    assert tcp_thesis.seconds_resending_per_rto(r, where=nr) is None
    assert tcp_thesis.new_data_before_first_dupack(r, where={"block": "none"}) is None
    with pytest.raises(KeyError):
        tcp_thesis.retransmissions_per_recovery_round(Stub({"block": ["x"]}), where={"block": "x"})


def test_the_claims_file_parses_and_names_real_measures():
    cf = find_claims("coap-tcp-thesis")
    ids = [c.id for c in cf.claims]
    assert len(ids) == 41 and len(set(ids)) == 41
    assert sum(c.fit for c in cf.claims) == 4
    assert all(c.tolerance == 0.10 for c in cf.claims)
    from coapcc.claims import _resolve

    for c in cf.claims:
        assert callable(_resolve(c.measure)), c.id


# -- figures --------------------------------------------------------------------------------


def test_table_figure_draws_a_box_per_cell_with_the_published_median():
    rows = []
    for block, algo, buf in (
        ("udp", "default", 2500),
        ("tcp-newreno", "newreno", 2500),
        ("tcp-bbr", "bbr", 2500),
    ):
        for i in range(20):
            rows.append(
                {"block": block, "algorithm": algo, "clients": 1, "errors": "none", "buffer_bytes": buf,
                 "fct_s": 30.0 + i + (200 if block == "udp" else 0)}
            )  # fmt: skip
    flows = pd.DataFrame(rows)
    pub = {("udp", 1, 2500, "none", "default"): 285.7}
    fig = tcp_thesis_figures.table_figure(flows, 6, pub)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["Default 2 500", "New Reno 2 500", "BBR 2 500"]
    stars = [ln for ln in ax.lines if ln.get_marker() == "*"]
    assert len(stars) == 1 and list(stars[0].get_ydata()) == [285.7]
    p = tcp_thesis_figures.cell_percentiles(range(1, 21))
    assert p["median"] == 10.5 and p["p95"] == pytest.approx(19.05)


# -- presets from Python --------------------------------------------------------------------


def test_the_preset_reaches_tcp_specs_and_transmission_parameters_are_refused():
    assert compose_spec("newreno", "helsinki2018") == "newreno:preset=helsinki2018"
    assert compose_spec("bbr:iw=2", "helsinki2018") == "bbr:preset=helsinki2018,iw=2"
    with pytest.raises(ConfigError, match="TCP congestion control"):
        compose_spec("newreno", "helsinki2018", {"max_retransmit": 20})
    cfg = SimConfig(transport="tcp", algorithm="newreno", preset="helsinki2018", workload="bulk:1000")
    (spec,) = cfg.resolved_specs()
    assert spec.startswith("newreno:preset=helsinki2018,") and ",iw=4," in spec
    (bare,) = SimConfig(transport="tcp", algorithm="newreno", workload="bulk:1000").resolved_specs()
    assert bare.startswith("newreno:preset=linux,") and ",iw=10," in bare
