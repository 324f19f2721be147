"""The makarem21 claims: the study table (coapcc.models.tables, the rows of the study's
runs), its measures (coapcc.models.claims) and the claims file, judged through `coapcc
validate --dataset`."""

import math

import pandas as pd
import pytest

from coapcc.claims import find_claims, measure
from coapcc.models import claims as mc
from coapcc.models import makarem21, tables


class Results:
    def __init__(self, df):
        self.runs = df
        self.flows = df


def hand_table():
    rows = []
    # Chapter 5: scenario -> (spurious of a, of b) per seed; RMSE a < b everywhere.
    spur = {1: ((10, 12), (20, 20)), 2: ((30, 30), (20, 22)), 9: ((5, 5), (6, 4))}
    for sid, (a, b) in spur.items():
        for seed in (1, 2):
            for cc, s, rmse in (("makarem-rto", a[seed - 1], 100.0), ("pcocoa", b[seed - 1], 200.0)):
                rows.append(
                    dict(
                        part="rtt",
                        study="compare",
                        variant="thesis",
                        scenario=sid,
                        cc=cc,
                        seed=seed,
                        spurious=s,
                        rmse_ms=rmse,
                    )
                )
    # Chapter 6: default 0.3 at every mean, idc-coap 0.1 x mean; app loss 0.2 / 0.02 below 0.3.
    for mean in (0.1, 0.2, 0.3, 1.0, 1.5):
        for rep in (0, 1):
            rows.append(
                dict(
                    part="resbw",
                    set="bad-only",
                    variant="thesis",
                    cc="default",
                    family="backoff",
                    mean_resbw=mean,
                    repetition=rep,
                    goodput_pps=0.3 + 0.02 * rep,
                    app_loss_ratio=0.2 if mean <= 0.3 else 0.0,
                )
            )
            rows.append(
                dict(
                    part="resbw",
                    set="bad-only",
                    variant="thesis",
                    cc="idc-coap",
                    family="rate",
                    mean_resbw=mean,
                    repetition=rep,
                    goodput_pps=0.8 * mean,
                    app_loss_ratio=0.02 if mean <= 0.3 else 0.0,
                )
            )
    rows.append(dict(part="table-4.1", row=1, P_L_exact=0.0131584, paper_exact=0.013158))
    rows.append(dict(part="table-4.1", row=2, P_L_exact=0.0131300, paper_exact=0.013129))
    return Results(pd.DataFrame(rows))


def test_measures_on_a_hand_made_table():
    r = hand_table()
    # Seed means: scenario 1: 11 vs 20 (a fewer), 2: 30 vs 21, 9: 5 vs 5 (a tie is not fewer).
    assert mc.share(r, a="makarem-rto", b="pcocoa", column="spurious") == pytest.approx(1 / 3)
    assert mc.share(r, a="makarem-rto", b="pcocoa", column="spurious", exclude=[9]) == pytest.approx(1 / 2)
    assert mc.share(r, a="makarem-rto", b="pcocoa", column="spurious", op=">", scenarios=[2]) == 1.0
    assert mc.share(r, a="makarem-rto", b=["pcocoa"], column="rmse_ms") == 1.0
    assert mc.share(r, a="makarem-rto", b="cocoa-plus") is None, "an algorithm not run: no data"
    # Levels: default's goodput is 0.31 on average at every mean; the median over 0.6-1.6 too.
    assert mc.level(r, column="goodput_pps", where={"cc": "default"}, lo=0.6, hi=1.6) == pytest.approx(0.31)
    assert mc.level(r, column="goodput_pps", where={"cc": "idc-coap"}, stat="max") == pytest.approx(1.2)
    assert mc.level(r, column="goodput_pps", where={"cc": "nothing"}) is None
    # IDC's application loss at 0.1-0.3 is a tenth of the backoff family's.
    ratio = mc.range_ratio(
        r, a={"cc": "idc-coap"}, b={"family": "backoff"}, column="app_loss_ratio", lo=0.1, hi=0.3, stat="mean"
    )
    assert ratio == pytest.approx(0.1)
    assert mc.table_4_1_deviation(r) == pytest.approx(1e-6, rel=1e-6)
    with pytest.raises(ValueError, match="op"):
        mc.share(r, a="makarem-rto", b="pcocoa", op="!=")


def test_claims_file_parses_and_every_measure_resolves():
    cf = find_claims("makarem21")
    assert cf.study == "makarem21" and len(cf.claims) >= 40
    ids = {c.id for c in cf.claims}
    for need in (
        "M1-exact-1",
        "M1-approx-10",
        "M2",
        "M3",
        "M4-most",
        "M4-except",
        "C5-cocoa-plus",
        "M5-iw1.5",
        "M5-iw-order",
        "M5-mbc",
        "M6-cocoa-plus",
        "M7-idc-loss",
        "M7-mbc-loss",
        "M8-small",
        "M8-near-2",
    ):
        assert need in ids, need
    empty = Results(pd.DataFrame({"part": pd.Series(dtype=str)}))
    for c in cf.claims:
        if c.measure.startswith("coapcc.models.claims:"):
            assert measure(c, empty) is None, c.id  # resolvable, and no data is no data


def test_table_4_1_rows_match_the_printed_values():
    for i in range(1, len(tables.TABLE_4_1) + 1):
        r = tables.table_4_1_row(i)
        assert abs(r["P_L_exact"] - r["paper_exact"]) <= 1e-6 + 1e-12, r
        assert abs(r["P_L_approx"] - r["paper_approx"]) <= 1e-6 + 1e-12, r
        assert math.isclose(r["P_L_closed"], r["P_L_exact"], rel_tol=1e-9)


SMALL = """
name = "small"
kind = "makarem-studies"
seed = 1
[models]
rtt = 0.2
loss = [0.1, 0.3]
gilbert_q = 0.5
rto = [1.0, 2.0]
r = [2, 4, 6]
fixed_rto = 2.0
fixed_r = 4
Z = 100
Y = 48
simulate_messages = 200
[rtt_scenarios]
cc = ["makarem-rto:preset=makarem2021", "pcocoa:preset=makarem2021", "cocoa-plus:preset=makarem2021"]
scenarios = [1, 9, 35]
len = 2000
seeds = 2
plot = { scenario = 35, count = 50 }
[[rtt_scenarios.study]]
name = "k-normal"
cc = "makarem-rto:preset=makarem2021"
scenarios = [35]
vary = { k = ["3", "4"] }
[resbw]
cc = ["default:preset=makarem2021", "idc-coap:preset=makarem2021"]
rtt_ms = "normal:500,10"
duration_s = 1800
repetitions = 1
half_width = 0.1
bad_only = { means = [0.2, 0.7, 1.0], bad_mean_s = 5.0 }
stable = { cc = ["idc-coap:preset=makarem2021"], means = [1.0], duration_s = 18000 }
loss_rule = "delivered"
[sensitivity]
rtt = [
  { name = "late_ack=ignore", late_ack = "ignore" },
  { name = "pcocoa block2=literal", cc = ["makarem-rto:preset=makarem2021", "pcocoa:preset=makarem2021,block2=literal"] },
]
readings = [{ name = "loss_rule=rate-check", loss_rule = "rate-check" }]
"""


def test_study_table_swept_and_judged_through_validate(tmp_path):
    """The study's runs, swept like every experiment, make the table the claims read; the
    file's choices and the sensitivity variants reach every run they name."""
    import coapcc
    from coapcc.validation import validate

    f = tmp_path / "small.toml"
    f.write_text(SMALL)
    coapcc.sweep(str(f), tmp_path / "ds", workers=1, progress=False)
    df = coapcc.load_results(tmp_path / "ds").runs
    assert df["config_hash"].is_unique
    assert set(df["part"]) == {"table-4.1", "model", "model-sim", "rtt", "rtt-trace", "resbw"}
    assert len(df[df["part"] == "model"]) == 2 * 2 * 3 * 2
    rtt = df[df["part"] == "rtt"]
    assert sorted(rtt["study"].unique()) == ["compare", "k-normal", "sensitivity"]
    assert len(rtt[rtt["study"] == "compare"]) == 3 * 3 * 2
    assert set(rtt.loc[rtt["study"] == "compare", "cc"]) == {"makarem-rto", "pcocoa", "cocoa-plus"}
    assert (rtt.loc[rtt["variant"] == "late_ack=ignore", "late_acks"] == 0).all()
    assert set(rtt.loc[rtt["variant"] == "late_ack=ignore", "late_ack"]) == {"ignore"}
    assert set(rtt.loc[rtt["variant"] == "thesis", "late_ack"]) == {"sample"}
    # An entry with its own specs: those algorithms only, on every comparison scenario.
    lit = rtt[rtt["variant"] == "pcocoa block2=literal"]
    assert set(lit["cc"]) == {"makarem-rto", "pcocoa"} and len(lit) == 2 * 3
    assert set(lit.loc[lit["cc"] == "pcocoa", "cc_spec"]) == {"pcocoa:preset=makarem2021,block2=literal"}
    bw = df[df["part"] == "resbw"]
    assert set(bw["family"]) == {"backoff", "rate"} and (bw["gp_ratio"] > 0).all()
    # The whole chapter 6 study again under the other reading, each row saying its rule.
    assert set(bw.loc[bw["variant"] == "thesis", "loss_rule"]) == {"delivered"}
    other = bw[bw["variant"] == "loss_rule=rate-check"]
    assert set(other["loss_rule"]) == {"rate-check"} and len(other) == len(bw[bw["variant"] == "thesis"])
    assert set(other["set"]) == {"bad-only", "stable"}
    by = makarem21.judge_readings(df, ["loss_rule=rate-check"])
    assert set(by["reading"]) == {"delivered (preset)", "rate-check"}
    assert set(by["claim"]) <= {
        c.id for c in find_claims("makarem21").claims if c.id.startswith(makarem21.CH6_CLAIMS)
    }
    m5 = by[by["claim"] == "M5-iw1.5"].set_index("reading")["reproduced"]
    assert m5["delivered (preset)"] == pytest.approx(m5["rate-check"], rel=0.02), (
        "IDC's (6.1) does not depend on it"
    )
    verdicts = {v.claim.id: v for v in validate("makarem21", dataset=tmp_path / "ds", progress=False)}
    for cid in ("M1-exact-3", "M1-approx-7", "CH3-delay-p", "CH3-overhead-r", "M3", "M5-iw1.5", "M6-default"):
        assert verdicts[cid].verdict == "holds", (cid, verdicts[cid].reproduced)
    # Runs the small table does not have: missing, not an error.
    for cid in ("M6-4state", "M7-variability-100", "M8-near-2"):
        assert verdicts[cid].verdict == "missing", cid


@pytest.mark.parametrize(
    "old,new,key",
    [
        ('loss_rule = "delivered"', 'loss_rule = "bogus"', "resbw.loss_rule"),
        ('late_ack = "ignore"', 'late_ack = "never"', "sensitivity.rtt[0].late_ack"),
        (
            '"pcocoa:preset=makarem2021,block2=literal"]',
            '"pcocoa:preset=makarem2021,block2=literal", 1]',
            "sensitivity.rtt[1].cc[2]",
        ),
        ("seeds = 2", "seeds = 0", "rtt_scenarios.seeds"),
        ("stable = { cc", "stable = { mean = 1, cc", "resbw.stable.mean"),
    ],
)
def test_a_bad_choice_is_a_one_line_error_naming_the_key(tmp_path, old, new, key):
    import coapcc
    from coapcc import ConfigError

    f = tmp_path / "bad.toml"
    assert old in SMALL
    f.write_text(SMALL.replace(old, new, 1))
    with pytest.raises(ConfigError) as e:
        coapcc.load_experiment(f)
    assert e.value.key == key, str(e.value)


def test_labels_and_families():
    assert tables.cc_label("idc-coap:preset=makarem2021,iw=1.1") == "idc-coap iw=1.1"
    assert tables.cc_label("default") == "default"
    assert [tables.family(s) for s in ("mbc-coap:m=3", "bdp-coap", "cocoa-plus:preset=makarem2021")] == [
        "rate",
        "bdp",
        "backoff",
    ]
