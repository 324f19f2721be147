"""Claims as data: parsing, the built-in measures, the verdict logic (on stub results) and
`coapcc validate` end to end on a tiny experiment."""

import json
import subprocess
import textwrap

import pandas as pd
import pytest

from coapcc.claims import (
    Claim,
    ClaimsError,
    claims_catalogue,
    evaluate,
    kendall_tau,
    load_claims,
    parse_claims,
    verdict,
)
from conftest import COAPCC, subprocess_env


class Stub:
    """A stand-in for coapcc.Results: a flows and a runs table."""

    def __init__(self, flows, runs=None):
        self.flows = pd.DataFrame(flows)
        self.runs = pd.DataFrame(runs if runs is not None else flows)


def claim(**kw):
    base = {"id": "c", "text": "t", "paper": 1.0, "measure": "stat", "expect": "approx", "tolerance": 0.1}
    base.update(kw)
    return parse_claims({"study": "s", "claim": [base]}).claims[0]


# -- verdicts -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reproduced, expected",
    [
        (1.0, "holds"),
        (1.1, "holds"),
        (0.9, "holds"),
        (1.1001, "off"),
        (0.5, "off"),
        (-3.0, "off"),
        (None, "missing"),
    ],
)
def test_approx_is_within_a_relative_tolerance_and_never_reversed(reproduced, expected):
    assert verdict(claim(paper=1.0, tolerance=0.1), reproduced) == expected


def test_approx_with_an_absolute_tolerance_and_a_value_apart_from_the_paper():
    c = claim(paper="about 0.33 pkt/s", value=0.33, tolerance=None, abs_tolerance=0.02)
    assert verdict(c, 0.349) == "holds"
    assert verdict(c, 0.351) == "off"


@pytest.mark.parametrize(
    "expect, value, neutral, reproduced, expected",
    [
        (">", 0.3, 0.0, 0.31, "holds"),
        (">", 0.3, 0.0, 0.3, "off"),  # strict
        (">=", 0.3, 0.0, 0.3, "holds"),
        (">", 0.3, 0.0, 0.1, "off"),  # right direction, too small
        (">", 0.3, 0.0, -0.01, "reversed"),
        ("<", 0.0, 0.0, -2.0, "holds"),
        ("<", 0.0, 0.0, 0.5, "reversed"),
        ("<=", 0.5, 0.5, 0.7, "reversed"),
        ("<", 0.5, 1.0, 0.7, "off"),  # above the bound, below the neutral point
    ],
)
def test_comparisons_hold_or_point_the_other_way(expect, value, neutral, reproduced, expected):
    c = claim(paper="direction", expect=expect, value=value, neutral=neutral, tolerance=None)
    assert verdict(c, reproduced) == expected


def test_between():
    c = claim(paper="0.3-0.4", expect="between", value=[0.3, 0.4], tolerance=None)
    assert [verdict(c, r) for r in (0.29, 0.3, 0.35, 0.4, 0.41)] == ["off", "holds", "holds", "holds", "off"]


# -- parsing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, message",
    [
        ({"expect": "about"}, "expect = 'about'"),
        ({"tolerance": None}, "needs 'tolerance'"),
        ({"tolerance": -1}, "non-negative"),
        ({"paper": "words"}, "needs a number"),
        ({"expect": "between", "value": [2, 1], "tolerance": None}, "lo must not exceed hi"),
        ({"expect": "between", "value": 3, "tolerance": None}, r"value = \[lo, hi\]"),
        ({"measure": "nosuch"}, "measure = 'nosuch'"),
        ({"colour": "red"}, "unknown key"),
        ({"id": ""}, "'id' must be a non-empty string"),
    ],
)
def test_malformed_claims_are_refused_with_the_key(change, message):
    raw = {"id": "c1", "text": "t", "paper": 1.0, "measure": "stat", "tolerance": 0.1}
    raw.update(change)
    raw = {k: v for k, v in raw.items() if v is not None}
    with pytest.raises(ClaimsError, match=message):
        parse_claims({"study": "s", "claim": [raw]})


def test_file_level_errors(tmp_path):
    with pytest.raises(ClaimsError, match="'study'"):
        parse_claims({"claim": []})
    with pytest.raises(ClaimsError, match="no \\[\\[claim\\]\\]"):
        parse_claims({"study": "s"})
    one = {"id": "x", "text": "t", "paper": 1, "measure": "stat", "tolerance": 0.1}
    with pytest.raises(ClaimsError, match="appears twice"):
        parse_claims({"study": "s", "claim": [one, one]})
    bad = tmp_path / "bad.toml"
    bad.write_text("study = \n")
    with pytest.raises(ClaimsError, match="not valid TOML"):
        load_claims(bad)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ClaimsError, match="not a text file"):
        load_claims(binary)


def test_every_packaged_claims_file_parses_and_names_a_catalogue_entry():
    import coapcc

    cat = coapcc.catalogue()
    for name, path in claims_catalogue().items():
        cf = load_claims(path)
        assert cf.study in cat, f"{path}: study {cf.study!r} is not in the catalogue"
        assert cf.claims, name


# -- measures -------------------------------------------------------------------------------

FLOWS = [
    # two runs per (alg, size); fct per flow
    {"config_hash": "a1", "alg": "x", "size": 3, "fct_s": 1.0},
    {"config_hash": "a1", "alg": "x", "size": 3, "fct_s": 3.0},
    {"config_hash": "a2", "alg": "x", "size": 3, "fct_s": 5.0},
    {"config_hash": "b1", "alg": "x", "size": 6, "fct_s": 10.0},
    {"config_hash": "c1", "alg": "y", "size": 3, "fct_s": 2.0},
    {"config_hash": "d1", "alg": "y", "size": 6, "fct_s": 1.0},
]


def run(c: Claim):
    [v] = evaluate([c], Stub(FLOWS))
    return v


def test_a_note_travels_with_its_verdict_and_lists_under_the_text_table_when_off():
    from coapcc.validation import format_verdicts

    stub = Stub({"fct_s": [1.0, 3.0]})
    off = claim(id="off-one", note="why it is off", args={"column": "fct_s", "stat": "max"})
    held = claim(id="held-one", note="context only", args={"column": "fct_s", "stat": "min"})
    vs = evaluate([off, held], stub)
    assert [v.verdict for v in vs] == ["off", "holds"]
    assert [v.to_dict()["note"] for v in vs] == ["why it is off", "context only"]
    text = format_verdicts(vs)
    assert "off-one: why it is off" in text and "context only" not in text


def test_stat_selects_rows_and_takes_the_statistic():
    assert (
        run(claim(args={"column": "fct_s", "stat": "median", "where": {"alg": "x", "size": 3}})).reproduced
        == 3.0
    )
    assert (
        run(claim(args={"column": "fct_s", "stat": "max", "where": {"alg": ["x", "y"]}})).reproduced == 10.0
    )
    assert run(claim(args={"column": "fct_s", "stat": "count", "where": {"size": 6}})).reproduced == 2.0
    assert run(claim(args={"column": "fct_s", "stat": "p50", "where": {"alg": "y"}})).reproduced == 1.5
    # per run first (run a1: mean 2, run a2: 5), then the median of those
    per_run = {"column": "fct_s", "stat": "max", "per_run": "mean", "where": {"alg": "x", "size": 3}}
    assert run(claim(args=per_run)).reproduced == 5.0


def test_no_matching_rows_is_missing_and_a_bad_column_is_an_error():
    v = run(claim(args={"column": "fct_s", "where": {"alg": "z"}}))
    assert v.verdict == "missing" and v.reproduced is None
    with pytest.raises(ClaimsError, match="claim c: .*no column 'nope'"):
        run(claim(args={"column": "nope"}))
    with pytest.raises(ClaimsError, match="where: no column 'colour'"):
        run(claim(args={"column": "fct_s", "where": {"colour": 1}}))


def test_diff_ratio_trend_fraction():
    both = {"column": "fct_s", "stat": "mean"}
    d = claim(
        measure="diff",
        expect=">",
        value=0,
        tolerance=None,
        args={**both, "a": {"where": {"alg": "x"}}, "b": {"where": {"alg": "y"}}},
    )
    assert run(d).reproduced == pytest.approx(19 / 4 - 1.5)
    assert run(d).verdict == "holds"
    r = claim(measure="ratio", args={**both, "a": {"where": {"alg": "y"}}, "b": {"where": {"alg": "x"}}})
    assert run(r).reproduced == pytest.approx(1.5 / (19 / 4))
    t = claim(
        measure="trend", expect=">", value=0, tolerance=None, args={**both, "by": "size", "group_by": "alg"}
    )
    # x grows with size (tau 1), y shrinks (tau -1): the mean is 0, neither holds nor reversed
    assert run(t).reproduced == 0.0 and run(t).verdict == "off"
    tx = claim(
        measure="trend",
        expect=">",
        value=0,
        tolerance=None,
        args={**both, "by": "size", "where": {"alg": "x"}},
    )
    assert run(tx).reproduced == 1.0
    f = claim(
        measure="fraction",
        expect=">=",
        value=0.5,
        tolerance=None,
        args={
            **both,
            "group_by": "size",
            "op": "<",
            "a": {"where": {"alg": "y"}},
            "b": {"where": {"alg": "x"}},
        },
    )
    assert run(f).reproduced == 1.0  # y below x at size 3 (2 < 3) and at 6 (1 < 10)


def test_kendall_tau():
    assert kendall_tau([1, 2, 3], [1, 2, 3]) == 1.0
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0
    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert kendall_tau([1], [1]) is None


def test_a_study_measure_is_a_module_function(tmp_path, monkeypatch):
    (tmp_path / "mystudy.py").write_text(
        "def twice(results, column):\n    return 2 * results.flows[column].max()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    c = claim(measure="mystudy:twice", paper=20.0, args={"column": "fct_s"})
    assert run(c).reproduced == 20.0 and run(c).verdict == "holds"
    with pytest.raises(ClaimsError, match="measure 'mystudy:nothing'"):
        run(claim(measure="mystudy:nothing"))


# -- the command ----------------------------------------------------------------------------


def test_validate_runs_the_study_and_prints_paper_reproduction_verdict(tmp_path, tiny_file):
    claims = tmp_path / "tiny-claims.toml"
    claims.write_text(
        textwrap.dedent(
            f"""
            study = "{tiny_file}"
            source = "a test"

            [[claim]]
            id = "every-exchange-completes"
            text = "each flow completes its 4 exchanges"
            paper = 4
            expect = "approx"
            abs_tolerance = 0
            measure = "stat"
            args = {{ column = "completed_exchanges", stat = "min" }}

            [[claim]]
            id = "six-clients-slower"
            text = "six clients finish later than one"
            paper = "slower"
            expect = ">"
            value = 0
            measure = "diff"
            args = {{ column = "fct_s", stat = "median", a = {{ where = {{ clients = 6 }} }}, b = {{ where = {{ clients = 1 }} }} }}

            [[claim]]
            id = "impossible"
            text = "one client is slower than six"
            paper = "slower"
            expect = ">"
            value = 0
            measure = "diff"
            args = {{ column = "fct_s", stat = "median", a = {{ where = {{ clients = 1 }} }}, b = {{ where = {{ clients = 6 }} }} }}
            """
        )
    )
    out = tmp_path / "ds"
    cmd = [*COAPCC, "validate", str(claims), "--quick", "--out", str(out), "--no-progress", "--workers", "1"]
    p = subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=subprocess_env())
    assert p.returncode == 1, p.stderr  # one claim is reversed
    rows = json.loads(p.stdout)
    assert [r["claim"] for r in rows] == ["every-exchange-completes", "six-clients-slower", "impossible"]
    assert {k for r in rows for k in r} >= {"claim", "paper", "reproduced", "verdict"}
    # the quick variant has clients = [6] only: the comparison with one client has no data
    assert [r["verdict"] for r in rows] == ["holds", "missing", "missing"]
    assert rows[0]["reproduced"] == 4.0
    # the same dataset judged again without running anything, now in text
    p2 = subprocess.run(
        [*COAPCC, "validate", str(claims), "--dataset", str(out)],
        capture_output=True,
        text=True,
        env=subprocess_env(),
    )
    assert p2.returncode == 1
    assert "every-exchange-completes" in p2.stdout and "1 holds, 2 missing of 3 claims" in p2.stdout
    # the full variant has both client counts
    full = tmp_path / "full"
    p3 = subprocess.run(
        [*COAPCC, "validate", str(claims), "--out", str(full), "--no-progress", "--workers", "1", "--json"],
        capture_output=True,
        text=True,
        env=subprocess_env(),
    )
    verdicts = [r["verdict"] for r in json.loads(p3.stdout)]
    assert verdicts == ["holds", "holds", "reversed"], p3.stderr


def test_validate_usage_errors_exit_2(tmp_path):
    p = subprocess.run(
        [*COAPCC, "validate", "nosuchstudy"], capture_output=True, text=True, env=subprocess_env()
    )
    assert p.returncode == 2 and "no claims for 'nosuchstudy'" in p.stderr
    p = subprocess.run(
        [*COAPCC, "validate", "x.toml", "--workers", "0"],
        capture_output=True,
        text=True,
        env=subprocess_env(),
    )
    assert p.returncode == 2 and "--workers: must be an integer in [1, 1024], got 0" in p.stderr
