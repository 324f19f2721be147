"""The error-model sensitivity study (coapcc.sensitivity): the burst-sojourn derivation keeps
each profile's average loss, a tiny study produces its tables and figure, transfer rows the
simulator rejects are skipped with their reason, and the study is deterministic."""

import json

import pandas as pd
import pytest

import coapcc
from coapcc import _native
from coapcc import sensitivity as sens
from coapcc.reproduction import main as reproduce_main


def _model(errors, clock="time", burst=5.0):
    return json.loads(_native.loss_model_json(errors, clock, burst))


def _mean_loss(m):
    if m["model"] == "gilbert_elliott_time":
        pi = m["burst_mean_s"] / (m["burst_mean_s"] + m["low_mean_s"])
    else:
        pi = m["p"] / (m["p"] + m["r"])
    return pi * m["loss_burst"] + (1 - pi) * m["loss_low"]


@pytest.mark.parametrize("profile,average", [("medium", 0.10), ("high", 0.18)])
@pytest.mark.parametrize("t_b", [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 0.37])
def test_burst_sojourn_keeps_the_average_loss(profile, average, t_b):
    m = _model(sens.ge_time_errors(profile, t_b))
    named = _model(profile)
    assert m["model"] == "gilbert_elliott_time"
    assert m["burst_mean_s"] == t_b
    # the state loss rates are the profile's, and the average loss is the published one
    assert (m["loss_low"], m["loss_burst"]) == (named["loss_low"], named["loss_burst"])
    assert _mean_loss(m) == pytest.approx(average, abs=1e-12)
    assert m["low_mean_s"] == pytest.approx(sens.low_sojourn(profile, t_b))
    assert m["low_mean_s"] / t_b == pytest.approx(named["low_mean_s"] / named["burst_mean_s"], rel=1e-12)


@pytest.mark.parametrize("profile", ["medium", "high"])
def test_default_sojourn_is_the_named_profile_bit_for_bit(profile):
    assert _model(sens.ge_time_errors(profile, sens.DEFAULT_T_B)) == _model(profile)


def test_default_sojourn_runs_exactly_as_the_named_profile():
    from coapcc import simulate

    base = {"algorithm": "fasor", "clients": 4, "exchanges": 5, "seed": 9}
    named = simulate(base, errors="high").raw["flows"]
    assert named == simulate(base, errors=sens.ge_time_errors("high", 1.0)).raw["flows"]
    assert named != simulate(base, errors=sens.ge_time_errors("high", 0.2)).raw["flows"]
    # Under helsinki2018 the named profile is the preset's fitted chain (link schema).
    fits = json.loads(_native.link_schema_json())["preset_fits"]
    t_b = next(
        f["value"]
        for f in fits
        if (f["preset"], f["profile"], f["clock"]) == ("helsinki2018", "high", "time")
    )
    h18 = {**base, "preset": "helsinki2018"}
    assert (
        simulate(h18, errors="high").raw["flows"]
        == simulate(h18, errors=sens.ge_time_errors("high", t_b)).raw["flows"]
    )


@pytest.mark.parametrize("profile", ["medium", "high"])
@pytest.mark.parametrize("burst", [1.0, 2.0, 5.0, 20.0])
def test_packet_clock_variant_is_the_named_profile_bit_for_bit(profile, burst):
    assert _model(sens.ge_packet_errors(profile, burst)) == _model(profile, "packet", burst)


@pytest.mark.parametrize("profile,average", [("medium", 0.10), ("high", 0.18)])
@pytest.mark.parametrize("burst", [1.0, 2.0, 5.0, 20.0])
def test_packet_clock_variant_keeps_the_average_loss(profile, average, burst):
    fields = sens.Variant("packet", burst).fields(profile)
    m = _model(fields["errors"], fields["error_clock"])
    assert m["model"] == "gilbert_elliott"
    assert m["r"] == pytest.approx(1 / burst)
    assert _mean_loss(m) == pytest.approx(average, abs=1e-12)


def test_bad_sojourns_and_profiles_are_clear_errors():
    from coapcc import ConfigError
    from coapcc.kinds.sensitivity import SensitivityConfig

    with pytest.raises(ValueError, match="positive"):
        sens.ge_time_errors("medium", 0)
    with pytest.raises(ValueError, match="no two-state chain"):
        sens.ge_time_errors("low", 1.0)
    with pytest.raises(ValueError, match="unknown error profile"):
        sens.profile_chain("severe")
    for fields, key in (
        ({"error_profile": "medium", "burst_packets": 0.5}, "burst_packets"),
        ({"error_profile": "medium", "t_b_s": -1}, "t_b_s"),
        ({"error_profile": "medium"}, "t_b_s"),
        ({"error_profile": "severe", "t_b_s": 1.0}, "error_profile"),
        ({"error_profile": "medium", "t_b_s": 1.0, "errors": "high"}, "errors"),
    ):
        with pytest.raises(ConfigError) as e:
            SensitivityConfig.from_dict(fields)
        assert e.value.key == key


def test_study_takes_the_fasor18_error_block():
    exp = coapcc.find_experiment("sensitivity")
    fasor = coapcc.find_experiment("fasor18")
    errors = next(b for b in fasor.blocks if b.name == "errors")
    base = {**fasor.base, **errors.base}
    assert {k: exp.base[k] for k in base} == base
    assert exp.seed == fasor.seed and exp.seeds == "shared"
    assert set(errors.grid["errors"]) == set(exp.blocks[0].grid["error_profile"])
    assert set(errors.grid["workload"]) == set(exp.blocks[0].grid["workload"])
    q = exp.quick_variant()
    assert q.replications == 8 and sum(1 for r in q.runs() if r.replication == 0) * 8 == len(q.runs())


TINY = """
name = "tiny-sens"
kind = "sensitivity"
seed = 5
seeds = "shared"
replications = 2
[base]
preset = "helsinki2018"
exchanges = 3
clients = 10
buffer_bytes = 2500
[[block]]
name = "gain-time"
[block.grid]
error_profile = ["medium", "high"]
t_b_s = [0.5, 1.0]
workload = ["continuous"]
algorithm = ["default", "cocoa", "fasor"]
[[block]]
name = "gain-packet"
[block.grid]
error_profile = ["medium", "high"]
burst_packets = [5.0]
workload = ["continuous"]
algorithm = ["default", "cocoa", "fasor"]
[[block]]
name = "transfer"
[block.base]
part = "transfer"
label = "one Default flow"
algorithm = "default"
clients = 1
[block.grid]
error_profile = ["medium", "high"]
t_b_s = [0.5, 1.0]
"""


@pytest.fixture(scope="module")
def tiny_out(tmp_path_factory):
    d = tmp_path_factory.mktemp("sens")
    f = d / "tiny.toml"
    f.write_text(TINY)
    coapcc.sweep(str(f), d / "out", workers=1, progress=False)
    page = coapcc.report(d / "out")
    return d / "out", page, f


def test_tiny_study_writes_table_figure_and_summary(tiny_out):
    out, page, _ = tiny_out
    for name in ("sensitivity.csv", "transfers.csv", "figures/sensitivity.png", "summary.md"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "figures" / "sensitivity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert page.name == "report.html" and "data:image/png;base64," in page.read_text()
    table = pd.read_csv(out / "sensitivity.csv")
    # 2 profiles x 3 settings (2 sojourns, 1 burst length) x 1 workload x 2 baselines
    assert len(table) == 12
    assert set(table["baseline"]) == {"Default", "CoCoA"}
    assert table["fct_ratio"].gt(0).all() and table["seeds"].eq(2).all()
    row = table[
        (table["profile"] == "medium") & (table["t_b_s"] == 0.5) & (table["baseline"] == "CoCoA")
    ].iloc[0]
    assert row["fct_ratio"] == pytest.approx(
        row["fasor_fct_median_s"] / row["baseline_fct_median_s"], rel=1e-5
    )
    assert row["t_l_s"] == pytest.approx(2.0)
    assert table["default_setting"].sum() == 2 * 2 * 2  # T_B = 1 s and 5 packets, per profile and baseline
    res = coapcc.load_results(out)
    # every run: 2 profiles x (3 settings x 3 algorithms + 2 transfer settings) x 2 seeds
    assert len(res.runs) == 2 * (3 * 3 + 2) * 2
    assert res.runs.loc[res.runs["part"] == "gain", "flows"].eq(10).all()
    # seeds are shared: every algorithm and setting meets the same two
    assert sorted(set(res.runs["seed"])) == [5, 6]
    transfers = pd.read_csv(out / "transfers.csv")
    assert set(transfers["transfer"]) == {"one Default flow"}
    assert len(transfers) == 2 * 2 and transfers["fct_median_s"].gt(0).all()


def test_study_is_deterministic_whatever_the_workers(tiny_out, tmp_path):
    out, _, f = tiny_out
    coapcc.sweep(str(f), tmp_path / "again", workers=2, progress=False)
    coapcc.report(tmp_path / "again")
    for name in ("sensitivity.csv", "transfers.csv"):
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes(), name


def test_conclusions_use_the_intervals():
    rows = []
    # FCT: FASOR clearly faster at 1 s and 5 s, clearly slower at 0.1 s, unclear at 2 s
    fct = {0.1: (1.2, 1.1, 1.3), 1.0: (0.8, 0.7, 0.9), 2.0: (0.95, 0.85, 1.05), 5.0: (0.7, 0.6, 0.8)}
    for t_b, (r, lo, hi) in fct.items():
        rows.append(
            {"profile": "high", "workload": "random", "baseline": "Default", "clock": "time", "t_b_s": t_b,
             "burst_packets": float("nan"), "fct_ratio": r, "fct_ratio_lo": lo, "fct_ratio_hi": hi,
             "retx_ratio": 0.5, "retx_ratio_lo": 0.4, "retx_ratio_hi": 0.6, "default_setting": t_b == 1.0}
        )  # fmt: skip
    c = {x["metric"]: x for x in sens.conclusions(pd.DataFrame(rows))}
    f = c["median FCT"]
    assert (f["at_default"], f["direction"]) == (0.8, -1)
    assert (f["same"], f["unclear"], f["reversed"]) == ([1.0, 5.0], [2.0], [0.1])
    assert f["verdict"] == "reverses at 0.1 s"
    assert c["retransmissions per flow"]["verdict"] == "holds at every setting"


def test_cli_takes_the_flags_of_every_entry(capsys):
    with pytest.raises(SystemExit) as e:
        reproduce_main(["sensitivity", "--workers", "0"])
    assert e.value.code == 2
    assert reproduce_main(["sensitivity", "--quick", "--list"]) == 0
    assert "sensitivity-quick: 640 runs" in capsys.readouterr().out
