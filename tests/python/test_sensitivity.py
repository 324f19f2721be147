"""The error-model sensitivity study (coapcc.sensitivity): the burst-sojourn derivation keeps
each profile's average loss, a tiny study produces its tables and figure, transfer rows the
simulator rejects are skipped with their reason, and the study is deterministic."""

import json

import pandas as pd
import pytest

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
    with pytest.raises(ValueError, match="positive"):
        sens.ge_time_errors("medium", 0)
    with pytest.raises(ValueError, match="no two-state chain"):
        sens.ge_time_errors("low", 1.0)
    with pytest.raises(ValueError, match="unknown error profile"):
        sens.profile_chain("severe")
    with pytest.raises(ValueError, match=">= 1 packet"):
        sens.study(burst_packets=[0.5])


def test_study_takes_the_fasor18_error_block():
    st = sens.study(quick=True)
    assert st.base["preset"] == "helsinki2018"
    assert (st.base["clients"], st.base["buffer_bytes"], st.base["exchanges"]) == (10, 2500, 50)
    assert st.profiles == ("medium", "high")
    assert st.workloads == ("continuous", "random")
    assert [v for v in st.variants if v.is_default]
    assert len(set(st.seeds)) == sens.QUICK_SEEDS


REJECTED = sens.Transfer("pigeon", {"workload": "bulk:102400", "transport": "carrier-pigeon"})
ACCEPTED = sens.Transfer("one Default flow", {"algorithm": "default", "clients": 1})


def _tiny(**kw):
    return sens.study(
        seeds=2,
        t_b=(0.5, 1.0),
        burst_packets=(5.0,),
        base={"exchanges": 3},
        workloads=("continuous",),
        transfers=[REJECTED, ACCEPTED],
        **kw,
    )


@pytest.fixture(scope="module")
def tiny_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("sens")
    res = sens.run_study(_tiny(), workers=1)
    page = sens.write_outputs(res, out)
    return res, out, page


def test_tiny_study_writes_table_figure_and_summary(tiny_out):
    res, out, page = tiny_out
    for name in (
        "sensitivity.csv",
        "transfers.csv",
        "runs.csv",
        "sensitivity.png",
        "sensitivity.svg",
        "summary.md",
    ):
        assert (out / name).stat().st_size > 0, name
    assert (out / "sensitivity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (out / "sensitivity.svg").read_bytes()[:1000]
    assert page.name == "summary.html" and "data:image/png;base64," in page.read_text()
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
    # every run: 2 profiles x 3 settings x (3 algorithms + 1 accepted transfer) x 2 seeds
    assert len(res.runs) == 2 * 3 * 4 * 2 and not res.failed
    assert res.runs.loc[res.runs["part"] == "gain", "flows"].eq(10).all()


def test_rejected_transfer_is_skipped_with_its_reason(tiny_out):
    res, out, _ = tiny_out
    assert [label for label, _ in res.skipped] == ["pigeon"]
    reason = res.skipped[0][1]
    assert "\n" not in reason and ("transport" in reason or "workload" in reason)
    transfers = pd.read_csv(out / "transfers.csv")
    assert set(transfers["transfer"]) == {"one Default flow"}
    assert len(transfers) == 2 * 3 and transfers["fct_median_s"].gt(0).all()
    md = (out / "summary.md").read_text()
    assert "**pigeon**: skipped" in md and reason in md
    assert "pigeon" not in set(res.runs["label"])


def test_listed_transfers_run_or_are_skipped_cleanly():
    # the study's own Block2 / TCP rows: accepted once the simulator has them, else a reason
    st = sens.study(quick=True)
    for t in sens.TRANSFERS:
        reason = sens.check_transfer(t, st.base)
        assert reason is None or (reason and "\n" not in reason)


def test_study_is_deterministic_whatever_the_workers(tiny_out, tmp_path):
    _, out, _ = tiny_out
    again = sens.run_study(_tiny(), workers=2)
    sens.write_outputs(again, tmp_path)
    for name in ("sensitivity.csv", "transfers.csv", "runs.csv"):
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name
    assert again.workers == 2


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


def test_cli_usage_errors(capsys):
    with pytest.raises(SystemExit) as e:
        reproduce_main(["sensitivity", "--workers", "0"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        reproduce_main(["sensitivity", "--t-b", "fast"])
    assert e.value.code == 2
    assert "comma-separated numbers" in capsys.readouterr().err
