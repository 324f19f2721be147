"""The chapter 5/6 studies from Python (coapcc._native -> coapcc-studies) and the makarem21
reproduction."""

import json
import subprocess
import sys

import pytest

import coapcc
from coapcc.models import studies


def test_rtt_scenarios_table():
    df = studies.rtt_scenarios(["default", "cocoa"], scenarios=[7, 35], len=5000, seed=2)
    assert list(df["scenario"]) == [7, 7, 35, 35]
    assert {"scenario", "cc", "spurious", "rmse_ms", "transmissions"} <= set(df.columns)
    assert (df["transmissions"] == 5000 + df["spurious"]).all()
    # Scenario 7 alternates U(100, 300) with N(3000, 100): Default CoAP's 2-3 s timer fires
    # spuriously in the slow periods; in scenario 35 (RTT <= 1 s) it never does.
    d = df.set_index(["scenario", "cc"])
    assert d.loc[(7, "default"), "spurious"] > 1000
    assert d.loc[(35, "default"), "spurious"] == 0
    # Same seed, same result.
    again = studies.rtt_scenarios(["default", "cocoa"], scenarios=[7, 35], len=5000, seed=2)
    assert df.equals(again)


def test_trace_scenarios_need_a_trace(tmp_path):
    with pytest.raises(ValueError, match="never published"):
        studies.rtt_scenarios(["default"], scenarios=[5], len=10)
    f = tmp_path / "rtt.txt"
    f.write_text("# ms\n100\n250\n4000\n")
    df = studies.rtt_scenarios(["default"], scenarios=[5], len=30, trace=f)
    assert df.loc[0, "trace"].startswith("substitute trace") and df.loc[0, "messages"] == 30
    tr = studies.rtt_trace("default", 5, len=30, trace=f, count=6)
    assert list(tr["rtt_ms"]) == [100, 250, 4000, 100, 250, 4000]


def test_resbw_run_and_curve():
    from coapcc.models import backoff_plateau

    r = studies.resbw("default", "fixed:0.5", rtt_ms="fixed:500", duration_s=20000)
    assert r["goodput_pps"] == pytest.approx(float(backoff_plateau(0.5, 2.0, 0)), abs=0.005)  # §7.6
    assert r["loss_rule"] == "delivered" and r["late_ack"] == "sample", "the study's choices, by name"
    # RTO 0.5 s at 1.2 pkt/s. rate-check: the first retransmission (rate >= 1.33 since the lost
    # original) always fails, the second (rate <= 1) passes: j = 1. delivered: the first comes at
    # least 1 s after the last delivery and passes: j = 0.
    kw = dict(rtt_ms="fixed:500", duration_s=20000)
    r = studies.resbw("default:ack_timeout=0.5", "fixed:1.2", loss_rule="rate-check", **kw)
    assert r["goodput_pps"] == pytest.approx(float(backoff_plateau(0.5, 0.5, 1)), abs=0.005)
    r = studies.resbw("default:ack_timeout=0.5", "fixed:1.2", **kw)
    assert r["goodput_pps"] == pytest.approx(float(backoff_plateau(0.5, 0.5, 0)), abs=0.01)
    with pytest.raises(ValueError, match="loss_rule.*rate-check"):
        studies.resbw("default", "fixed:1", loss_rule="leaky")
    with pytest.raises(ValueError, match="resbw"):
        studies.resbw("default", "uniform:3,1")
    with pytest.raises(ValueError, match="unknown algorithm|no-such"):
        studies.resbw("no-such", "fixed:1")
    df = studies.resbw_curve(["default", "pcocoa"], [0.5, 2.1], repetitions=2, duration_s=600)
    assert len(df) == 2 * 2 * 2
    m = df.groupby(["cc", "mean_resbw"])["goodput_pps"].mean()
    assert m[("default", 2.1)] > m[("default", 0.5)]


def test_cli_commands(capfd):
    from coapcc.cli import main

    assert main(["rtt-scenarios", "--cc", "default", "--scenario", "17", "--len", "2000", "--json"]) == 0
    rows = json.loads(capfd.readouterr().out)
    assert rows[0]["scenario"] == 17 and rows[0]["cc"] == "default"
    assert main(["resbw", "--cc", "cocoa", "--resbw", "uniform:0.6,1", "--duration-s", "600", "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert set(out) >= {"goodput_pps", "overhead", "app_loss_ratio", "transmissions", "delivered"}
    assert main(["resbw", "--resbw", "gamma:1", "--duration-s", "10"]) != 0
    assert "invalid distribution" in capfd.readouterr().err


TINY = """
name = "tiny"
kind = "makarem-studies"
seed = 3
[models]
rtt = 0.2
loss = [0.1, 0.3]
gilbert_q = 0.5
rto = [1.0, 2.0]
r = [2, 4]
fixed_rto = 2.0
fixed_r = 4
Z = 100
Y = 48
simulate_messages = 2000
ge_rto = 2.0
ge_r = 4
ge_rtt = 0.5
ge_rows = [[0.1, 0.6, 0.8, 0.2]]
[rtt_scenarios]
cc = ["default", "pcocoa", "no-such-algorithm"]
scenarios = [7, 35]
len = 3000
plot = { scenario = 7, count = 200 }
[[rtt_scenarios.study]]
name = "k"
cc = "pcocoa"
scenarios = [35]
vary = { k = ["3", "4"], k_spurious = ["6"] }
[resbw]
cc = ["default", "cocoa-plus"]
rtt_ms = "normal:500,10"
duration_s = 600
repetitions = 1
half_width = 0.1
bad_only = { means = [0.5, 1.0], bad_mean_s = 5.0 }
good = "uniform:1.7,1.9"
sets = [{ name = "set1", good_mean_s = 60.0, bad_mean_s = 300.0 }]
good_bad_means = [0.5]
backoff_study = { cc = "cocoa", key = "cap", values = ["32", "bogus"], mean = 1.0, half_widths = [0.1, 0.5] }
[quick]
resbw.duration_s = 300
"""


def test_reproduce_makarem21_end_to_end(tmp_path):
    """A makarem-studies file is swept (resumable dataset) and reported like every study."""
    from coapcc.reproduction import main as reproduce_main

    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY)
    out = tmp_path / "out"
    args = [str(cfg), "--out", str(out), "--quick", "--workers", "1", "--no-progress"]
    assert reproduce_main(args) == 0
    for name in (
        "figures/model-loss-ratio.png",
        "model-vs-simulation.csv",
        "model-table-4-3.csv",
        "rtt-scenarios.csv",
        "figures/rtt-rto-vs-rtt-s7.png",
        "rtt-study-k.csv",
        "resbw-bad-only.csv",
        "resbw-set1.csv",
        "report.html",
    ):
        assert (out / name).exists(), name
    import pandas as pd

    sim = pd.read_csv(out / "model-vs-simulation.csv")
    assert len(sim) == 2 * 2 * 4 and sim["within_ci"].mean() >= 0.75
    study = pd.read_csv(out / "rtt-study-k.csv")
    assert sorted(study["setting"].unique()) == ["k=3, k_spurious=6", "k=4, k_spurious=6"]
    report = (out / "report.html").read_text()
    assert "no-such-algorithm" in report and "skipped" in report and "cap=bogus" in report
    bw = pd.read_csv(out / "resbw-bad-only.csv")
    assert len(bw) == 2 * 2
    # The runs are a dataset like any other: every run is there, and a rerun runs nothing.
    res = coapcc.load_results(out)
    assert set(res.runs["part"]) == {"table-4.1", "model", "model-sim", "rtt", "rtt-trace", "resbw"}
    # every model point of [models] (2 models x 2 p x 2 r x 2 RTO) and the ten printed rows
    assert len(res.runs[res.runs["part"] == "model"]) == 16
    assert sorted(res.runs.loc[res.runs["part"] == "table-4.1", "row"]) == list(range(1, 11))
    again = coapcc.sweep(str(cfg), out, quick=True, workers=1, progress=False)
    assert again.ran == 0 and again.done_before == len(res.runs)
    # The RTT scenarios are those of the one-call study (same seed, same scenario).
    one = studies.rtt_scenarios(["default"], [35], seed=3, len=3000)
    mine = res.runs[(res.runs["block"] == "rtt-scenarios") & (res.runs["cc"] == "default")]
    assert mine.set_index("scenario").loc[35, "spurious"] == one.iloc[0]["spurious"]


def test_shipped_file_loads():
    exp = coapcc.find_experiment("makarem21")
    assert exp.kind == "makarem-studies" and exp.seeds == "shared"
    assert len(exp.sections["resbw"]["cc"]) >= 7
    q = exp.quick_variant()
    assert q.sections["resbw"]["duration_s"] < exp.sections["resbw"]["duration_s"]
    assert q.name == "makarem21-quick"


BAD = [
    ('name = "tiny"', 'name = "../../../x"', "name"),
    ('name = "tiny"', 'name = "/abs/x"', "name"),
    ('cc = ["default", "pcocoa", "no-such-algorithm"]', "cc = 5", "rtt_scenarios.cc"),
    ("loss = [0.1, 0.3]", 'loss = ["a"]', "models.loss[0]"),
    ("r = [2, 4]", "r = [1e9]", "models.r[0]"),
    ("r = [2, 4]", "r = [1000000000]", "models.r[0]"),
    ("len = 3000", "len = -1", "rtt_scenarios.len"),
    ("duration_s = 600", "duration_s = 1e300", "resbw.duration_s"),
    ("[models]", "[modles]", "modles"),
]


@pytest.mark.parametrize("old,new,key", BAD, ids=[b[2] for b in BAD])
def test_a_bad_makarem_file_is_a_one_line_error(tmp_path, old, new, key):
    """The probe's cases: each value is checked with the key at fault named, from the API and
    from the command line (exit 2, one line, no traceback, nothing written)."""
    from coapcc import ConfigError

    assert old in TINY
    f = tmp_path / "bad.toml"
    f.write_text(TINY.replace(old, new, 1))
    with pytest.raises(ConfigError) as e:
        coapcc.load_experiment(f)
    assert e.value.key == key, str(e.value)
    r = subprocess.run(
        [sys.executable, "-m", "coapcc", "reproduce", str(f), "--workers", "1", "--no-progress"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


def test_missing_sections_and_binary_files_are_clear_errors(tmp_path):
    from coapcc import ConfigError

    f = tmp_path / "none.toml"
    f.write_text('kind = "makarem-studies"\nname = "x"\n')
    with pytest.raises(ConfigError, match="needs"):
        coapcc.load_experiment(f)
    # A file without [models] is a smaller study, not an error.
    f.write_text(TINY[: TINY.index("[models]")] + TINY[TINY.index("[rtt_scenarios]") :])
    assert "model-sim" not in [b.name for b in coapcc.load_experiment(f).blocks]
    b = tmp_path / "bin.toml"
    b.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ConfigError, match="not a text file"):
        coapcc.load_experiment(b)
