"""The analytical models of Makarem (2021) against every numeric oracle of the specification,
the reductions between the models, and the ``coapcc model`` command."""

import json

import numpy as np
import pytest

from coapcc import models
from coapcc.models import cli as model_cli

REL = 1e-6


def close(x, want, rel=REL, abs_=5e-7):
    """Within ``rel``, or within half a unit of the sixth printed decimal."""
    return float(x) == pytest.approx(want, rel=rel, abs=abs_)


# --- Table 4.1: exact vs approximate P_L, r = 3 (printed; 2e-6 absolute) -------------------

TABLE_4_1 = [
    # p, q, k, h, exact, approx, closed (1 - (kq + hp)/(p + q))^{r+1}
    (0.1, 0.5, 1, 0, 0.013158, 0.013158, 0.000772),
    (0.1, 0.5, 0.95, 0.05, 0.013129, 0.011279, 0.001600000),
    (0.1, 0.5, 0.75, 0.25, 0.018239, 0.016534, 0.012345679),
    (0.1, 0.5, 0.4, 0.4, 0.129600000, 0.129600000, 0.129600),
    (0.1, 0.5, 0.9, 0.4, 0.003700, 0.002897, 0.001129707),
    (0.1, 0.1, 0.75, 0.25, 0.096715, 0.090301, 0.062500),
    (0.1, 0.05, 0.75, 0.25, 0.151292, 0.146092727, 0.115788966),
    (0.1, 0.8, 0.75, 0.25, 0.009399, 0.009321, 0.008717),
    (0.4, 0.6, 0.75, 0.25, 0.041006, 0.041006, 0.041006),
    (0.75, 0.25, 0.75, 0.25, 0.152588, 0.152588, 0.152588),
]


@pytest.mark.parametrize("p,q,k,h,exact,approx,naive", TABLE_4_1)
def test_table_4_1(p, q, k, h, exact, approx, naive):
    assert close(models.ge(p, q, k, h, r=3, T=2.5)["P_L"], exact, rel=0, abs_=2e-6)
    assert close(models.ge_approx(p, q, k, h, r=3, T=2.5)["P_L"], approx, rel=0, abs_=2e-6)
    assert close(models.ge_loss_ratio_closed(p, q, k, h, 3), exact, rel=0, abs_=2e-6)
    assert close((1 - (k * q + h * p) / (p + q)) ** 4, naive, rel=0, abs_=1e-6)


def test_table_4_1_vectorised_in_one_call():
    p, q, k, h, exact, approx, _ = (np.array(c, dtype=float) for c in zip(*TABLE_4_1))
    np.testing.assert_allclose(models.ge(p, q, k, h, r=3, T=2.5)["P_L"], exact, atol=2e-6, rtol=0)
    np.testing.assert_allclose(models.ge_approx(p, q, k, h, r=3, T=2.5)["P_L"], approx, atol=2e-6, rtol=0)


def test_row3_stationary_probabilities():
    m = models.ge(0.1, 0.5, 0.75, 0.25, r=3, T=2.5)
    assert close(m["pi_R"], 0.666667, rel=1e-6)
    for got, want in zip(m["pi"], [0.213493, 0.077167, 0.030288, 0.0123854]):
        assert close(got, want, rel=2e-5)
    # The chain's probabilities sum to 1.
    assert close(m["pi_R"] + np.sum(m["pi"]), 1.0, rel=1e-12)


# --- Bernoulli ------------------------------------------------------------------------------


def test_set_b1():
    m = models.bernoulli(0.3, r=4, T=2.5, rtt=0.2, D_ow=0.1, Z=100, Y=48)
    want = {
        "P_L": 0.00243,
        "D_s": 1.644628,
        "D_app": 1.928714,
        "GP": 0.517220,
        "O_S": 1.950816,
        "O": 1.976190,
    }
    for key, v in want.items():
        assert close(m[key], v, rel=1e-6), key
    c = models.bernoulli_closed(0.3, r=4, T=2.5, rtt=0.2, D_ow=0.1, Z=100, Y=48)
    for key, v in want.items():
        assert close(c[key], v, rel=1e-6), key
    # GE with k = h = 0.7, any p, q, gives the same.
    for p, q in [(0.1, 0.5), (0.7, 0.2), (0.5, 0.5)]:
        g = models.ge(p, q, 0.7, 0.7, r=4, T=2.5, rtt=0.2, D_ow=0.1)
        for key in ("P_L", "GP", "D_s", "O_S"):
            assert close(g[key], want[key], rel=1e-6), (p, q, key)


B2 = [
    # p, r, T_0, D_s, GP
    (0.1, 2, 0.5, 0.1732, 3.6026),
    (0.1, 2, 1, 0.2464, 2.8157),
    (0.1, 2, 2, 0.3928, 1.9596),
    (0.3, 2, 0.5, 0.3563, 1.7310),
    (0.3, 2, 1, 0.6126, 1.0467),
    (0.3, 2, 2, 1.1252, 0.5845),
    (0.5, 4, 0.5, 1.0879, 0.5516),
    (0.5, 4, 1, 2.0758, 0.2919),
    (0.5, 4, 2, 4.0516, 0.1503),
]


@pytest.mark.parametrize("p,r,t0,ds,gp", B2)
def test_set_b2(p, r, t0, ds, gp):
    for m in (
        models.bernoulli(p, r=r, rto=t0, rtt=0.2, D_ow=0.1),
        models.bernoulli_closed(p, r=r, T=1.25 * t0, rtt=0.2, D_ow=0.1),  # (3.14)/(3.17), (3.30)
    ):
        assert round(float(m["D_s"]), 4) == ds
        assert round(float(m["GP"]), 4) == gp


def test_set_b2_extras():
    assert round(float(models.bernoulli(0.1, r=4, rto=2, rtt=0.2, D_ow=0.1)["D_s"]), 4) == 0.4116
    assert round(float(models.bernoulli(0.3, r=3, rto=1, rtt=0.2)["GP"]), 4) == 0.9778


B3 = {
    0.1: [0.9765, 0.9945, 0.9988, 0.9998, 0.9999],
    0.2: [0.9274, 0.9668, 0.9857, 0.9941, 0.9976],
    0.3: [0.8728, 0.9182, 0.9492, 0.9690, 0.9813],
    0.4: [0.8220, 0.8605, 0.8920, 0.9168, 0.9360],
}


def test_set_b3_required_factor():
    p = np.array(list(B3))[:, None]
    r = np.arange(1, 6)[None, :]
    got = np.round(models.required_factor(p, r), 4)
    np.testing.assert_array_equal(got, np.array(list(B3.values())))


def test_required_factor_keeps_goodput():
    # Solving G(T_1, r) = G(T_2, r + 1) with (3.30): the factor does it for any R.
    for p in (0.1, 0.3, 0.5, 0.6):
        for r in (1, 3, 6):
            f = float(models.required_factor(p, r))
            g1 = models.bernoulli(p, r=r, T=2.0, rtt=0.7)["GP"]
            g2 = models.bernoulli(p, r=r + 1, T=2.0 * f, rtt=0.7)["GP"]
            assert close(g1, float(g2), rel=1e-12), (p, r)


def test_typos_3_15_and_4_34_are_not_used():
    # (3.15)/(3.16) equal (3.14) at r - 1: our D_s at r = 4 is 1.644628, at r = 3 1.439097.
    assert close(models.bernoulli(0.3, r=4, T=2.5, rtt=0.2)["D_s"], 1.644628)
    assert close(models.bernoulli(0.3, r=3, T=2.5, rtt=0.2)["D_s"], 1.439097)
    # (4.34) corrected, b = 1.5: 1.361425 (the whole-bracket form would give 2.672329).
    m = models.ge(0.5, 0.5, 0.7, 0.7, r=4, T=2.5, rtt=0.2, D_ow=0.1, b=1.5)
    assert close(m["D_s"], 1.361425)


def test_p_half_branch_and_edges():
    # p = 0.5 uses (3.17) in the closed form; the chain needs no special case.
    a = models.bernoulli(0.5, r=4, T=1.25, rtt=0.2)
    b = models.bernoulli(0.5 + 1e-9, r=4, T=1.25, rtt=0.2)
    assert close(a["D_s"], float(b["D_s"]), rel=1e-6)
    # p = 0: no loss at all; p = 1: nothing is delivered.
    z = models.bernoulli(0.0, r=4, T=2.5, rtt=0.2)
    assert float(z["P_L"]) == 0 and close(z["GP"], 5.0) and close(z["D_s"], 0.1) and close(z["E_N"], 1.0)
    one = models.bernoulli(1.0, r=4, T=2.5, rtt=0.2)
    assert float(one["P_L"]) == 1 and float(one["GP"]) == 0 and close(one["E_N"], 5.0)


# --- Simple Gilbert ---------------------------------------------------------------------------

G1 = [
    # (p, q), E[N_OL], P_L, D, GP, O, O_ST
    ((0.1, 0.5), 0.0064516, 0.0064103, 0.297581, 1.913580, 1.5, 1.432796),
    ((0.3, 0.6), 0.0077595, 0.0076997, 0.586482, 1.194999, 2.125, 2.044172),
    ((0.2, 0.3), 0.0577212, 0.0545713, 0.626261, 0.542120, 2.472222, 1.870960),
]


@pytest.mark.parametrize("pq,enol,pl,d,gp,o,ost", G1)
def test_set_g1(pq, enol, pl, d, gp, o, ost):
    p, q = pq
    kw = dict(r=4, T=0.625, rtt=0.2, D_ow=0.1, Z=100, Y=48)
    closed = models.gilbert_closed(p, q, **kw)
    for m in (models.gilbert(p, q, **kw), models.ge(p, q, 1.0, 0.0, **kw), closed):
        assert close(m["E_N_OL"], enol, rel=2e-5)
        assert close(m["P_L"], pl, rel=2e-5)
        assert close(m["D_s"], d, rel=1e-6)
        assert close(m["GP"], gp, rel=1e-6)
        assert close(m["O"], o, rel=1e-6)
        assert close(m["O_S"], ost, rel=1e-6)
    # The three overhead forms (3.106), (3.108), (3.109) and the corrected (3.86) agree.
    assert close(closed["O_S_108"], ost, rel=1e-6) and close(closed["O_S_109"], ost, rel=1e-6)
    if q != 0.5:  # the closed form of (3.86) divides by 2q - 1
        assert close(closed["D_s_closed"], d, rel=1e-6)


def test_set_g2():
    want = {(2, 0.5): 0.189, (2, 2): 0.457, (4, 0.5): 0.298, (4, 2): 0.890}
    for (r, t0), v in want.items():
        assert round(float(models.gilbert(0.1, 0.5, r=r, rto=t0, rtt=0.2, D_ow=0.1)["D_s"]), 3) == v


def test_gilbert_with_q_one_minus_p_is_bernoulli():
    for p in (0.1, 0.3, 0.6):
        g = models.gilbert(p, 1 - p, r=4, T=2.5, rtt=0.2)
        b = models.bernoulli(p, r=4, T=2.5, rtt=0.2)
        for key in models.SCALAR_KEYS:
            assert close(g[key], float(b[key]), rel=1e-9), (p, key)
        assert close(models.gilbert_closed(p, 1 - p, r=4, T=2.5, rtt=0.2)["P_L"], p**5, rel=1e-9)


# --- Gilbert-Elliott ----------------------------------------------------------------------------


def test_set_e1():
    p_rows = models.ge(np.array([0.1, 0.2, 0.3, 0.5, 0.7]), 0.6, 0.8, 0.2, r=4, T=2.5, rtt=0.5, D_ow=0.25)
    np.testing.assert_allclose(p_rows["P_L"], [0.004012, 0.007994, 0.012178, 0.020880, 0.029717], atol=1e-6)
    np.testing.assert_allclose(p_rows["D_s"], [1.72, 2.32, 2.86, 3.80, 4.57], atol=0.005)
    k_rows = models.ge(0.1, 0.5, np.array([0.4, 0.5, 0.6, 0.7, 0.8]), 0.4, r=4, T=2.5)
    np.testing.assert_allclose(k_rows["P_L"], [0.077760, 0.037134, 0.016148, 0.006472, 0.002562], atol=1e-6)


def test_set_e2():
    got = models.ge(0.1, 0.2, 0.8, 0.2, r=np.arange(1, 5), T=2.5)["P_L"]
    np.testing.assert_array_equal(np.round(got, 4), [0.1837, 0.0978, 0.0570, 0.0349])


def test_set_e3():
    kw = dict(r=3, T=2.5, rtt=0.5, D_ow=0.25, Z=100, Y=48)
    m = models.ge(0.1, 0.5, 0.75, 0.25, **kw)
    assert close(m["GP"], 0.369654) and close(m["D_s"], 1.758556)
    assert close(m["P_L"], 0.018239, rel=2e-5) and close(m["O_S"], 1.970183)
    for b, gp, ds in [(1.5, 0.465773, 1.519604), (2.5, 0.289049, 2.031076)]:
        m = models.ge(0.1, 0.5, 0.75, 0.25, b=b, **kw)
        assert close(m["GP"], gp) and close(m["D_s"], ds), b


def test_reductions_over_a_random_grid():
    rng = np.random.default_rng(4)
    n = 500
    p, q = rng.uniform(0.01, 0.99, n), rng.uniform(0.01, 0.99, n)
    r = rng.integers(0, 9, n)
    kw = dict(T=rng.uniform(0.2, 4, n), rtt=rng.uniform(0.05, 1, n))
    # GE with k = 1, h = 0 is the simple Gilbert closed forms.
    ge, sg = models.ge(p, q, 1.0, 0.0, r=r, **kw), models.gilbert_closed(p, q, r=r, **kw)
    for key in ("P_L", "D_s", "GP", "O", "O_S", "E_N_OL"):
        np.testing.assert_allclose(ge[key], sg[key], rtol=1e-9, err_msg=key)
    # k = h is Bernoulli with p_loss = 1 - k, whatever p and q.
    k = rng.uniform(0.05, 0.95, n)
    ge, be = models.ge(p, q, k, k, r=r, **kw), models.bernoulli(1 - k, r=r, **kw)
    for key in models.SCALAR_KEYS:
        np.testing.assert_allclose(ge[key], be[key], rtol=1e-9, err_msg=key)
    # The approximate chain is exact in the three special cases.
    for args in ((p, 1 - p, k, rng.uniform(0, 1, n)), (p, q, 1.0, 0.0), (p, q, k, k)):
        np.testing.assert_allclose(
            models.ge_approx(*args, r=r, T=1)["P_L"], models.ge(*args, r=r, T=1)["P_L"], rtol=1e-9
        )
    # The Cayley-Hamilton closed form (4.25) agrees with the chain.
    k2, h2 = rng.uniform(0.3, 1, n), rng.uniform(0, 0.6, n)
    np.testing.assert_allclose(
        models.ge_loss_ratio_closed(p, q, k2, h2, r), models.ge(p, q, k2, h2, r=r, T=1)["P_L"], rtol=1e-8
    )


def test_nothing_gets_through():
    # k = h = 0, or an absorbing Bad state with h = 0: every message is dropped after r + 1
    # attempts, nothing is delivered.
    for args in ((0.5, 0.5, 0.0, 0.0), (0.5, 0.0, 0.9, 0.0)):
        m = models.ge(*args, r=3, T=1.0)
        assert float(m["P_L"]) == 1.0 and float(m["GP"]) == 0.0 and close(m["E_N"], 4.0), args


def test_rate_control_formulas():
    # §4.1 (6.1), dw = 0.01: n and GP/ResBW for iw = 1.1, 1.5, 1.7.
    iw = np.array([1.1, 1.5, 1.7])
    np.testing.assert_allclose(models.idc_cycle_length(iw, 0.01), [9.4833, 40.343, 52.797], atol=6e-4)
    np.testing.assert_array_equal(np.round(models.idc_goodput_ratio(iw, 0.01), 4), [0.8621, 0.7910, 0.7436])
    # §4.2: MBC, 8 phases, gains 1.25 / 0.75.
    assert round(float(models.mbc_goodput_ratio()), 4) == 0.6885
    # §7.6 plateaus (RTT 0.5 s).
    assert round(float(models.backoff_plateau(0.5, 2.0, 0)), 4) == 0.3333
    assert round(float(models.backoff_plateau(0.5, 0.5, 0)), 4) == 0.8889
    assert round(float(models.backoff_plateau(0.5, 0.5, 1)), 4) == 0.4211
    assert round(float(models.backoff_plateau(0.5, 0.5, 1, b=2.5)), 4) == 0.3721
    with pytest.raises(ValueError):
        models.idc_goodput_ratio(0.9, 0.01)


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="p must be a probability"):
        models.bernoulli(1.2, r=4, T=1)
    with pytest.raises(ValueError, match=r"an integer in \[0, 255\], got 2.5"):
        models.bernoulli(0.2, r=2.5, T=1)
    with pytest.raises(ValueError, match=r"p must be a probability in \[0, 1\], got 1.5$"):
        models.bernoulli([0.1, 1.5], r=4, T=1)  # the value at fault, not the array
    with pytest.raises(ValueError, match="p \\+ q"):
        models.ge(0.0, 0.0, 0.5, 0.5, r=3, T=1)
    with pytest.raises(ValueError, match="rto"):
        models.ge(0.1, 0.5, 0.5, 0.5, r=3, rto=-1)


# --- the command --------------------------------------------------------------------------------


def test_cli_json_keys_and_values(capsys):
    assert (
        model_cli.main(["bernoulli", "--p", "0.3", "--r", "4", "--rto", "2", "--rtt", "0.2", "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["model"] == "bernoulli"
    assert out["P_L"] == pytest.approx(0.00243) and out["GP"] == pytest.approx(0.517220, rel=1e-6)
    assert out["required_factor"] == pytest.approx(0.9690, abs=1e-4)
    assert (
        model_cli.main(
            [
                "ge",
                "--p",
                "0.1",
                "--q",
                "0.5",
                "--k",
                "0.75",
                "--h",
                "0.25",
                "--r",
                "3",
                "--rto",
                "2",
                "--rtt",
                "0.5",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["P_L"] == pytest.approx(0.018239, abs=2e-6) and out["approx"]["P_L"] == pytest.approx(
        0.016534, abs=2e-6
    )


def test_cli_grid_and_text(capsys):
    assert (
        model_cli.main(
            ["gilbert", "--p", "0.1,0.2", "--q", "0.5", "--r", "2,4", "--rto", "2", "--rtt", "0.2", "--json"]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 4 and {(r["p"], r["r"]) for r in rows} == {(0.1, 2), (0.1, 4), (0.2, 2), (0.2, 4)}
    assert model_cli.main(["bernoulli", "--p", "0.3", "--r", "4", "--rto", "2", "--rtt", "0.2"]) == 0
    assert "P_L" in capsys.readouterr().out


def test_cli_errors(capsys):
    assert model_cli.main(["ge", "--p", "0.1", "--r", "3", "--rto", "2", "--rtt", "0.5"]) == 2
    assert "--q" in capsys.readouterr().err
    assert model_cli.main(["bernoulli", "--p", "1.5", "--r", "3", "--rto", "2", "--rtt", "0.5"]) == 2
    assert "--p: must be a number in [0, 1], got 1.5" in capsys.readouterr().err


# --- model against simulation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "model,params",
    [
        ("bernoulli", dict(p=0.3, r=4, rto=2.0, rtt=0.2)),
        ("gilbert", dict(p=0.2, q=0.3, r=4, rto=0.5, rtt=0.2, f=1.0)),
        ("ge", dict(p=0.1, q=0.5, k=0.75, h=0.25, r=3, rto=2.0, rtt=0.5)),
    ],
)
def test_model_agrees_with_simulation(model, params):
    from coapcc.models.validate import METRICS, simulate_model

    out = simulate_model(model, 20_000, seed=3, **params)
    assert out["messages"] == 20_000
    for key in METRICS:
        v = out[key]
        # A 95 % batch-means interval; 1.5x its half-width keeps the test from being a coin
        # toss per metric while still catching any modelling error of a few percent.
        assert abs(v["sim"] - v["model"]) <= 1.5 * v["ci95"], (key, v)
        assert v["ci95"] < 0.15 * max(abs(v["model"]), 0.02), (key, v)


def test_simulation_detects_a_wrong_model():
    # The same comparison with the loss rate off by a third is far outside the interval.
    from coapcc.models.validate import simulate_model

    out = simulate_model("bernoulli", 20_000, seed=3, p=0.3, r=4, rto=2.0, rtt=0.2)
    wrong = float(models.bernoulli(0.4, r=4, rto=2.0, rtt=0.2)["E_N"])
    assert abs(out["E_N"]["sim"] - wrong) > 3 * out["E_N"]["ci95"]


def test_cli_simulate(capsys):
    assert (
        model_cli.main(
            [
                "bernoulli",
                "--p",
                "0.2",
                "--r",
                "3",
                "--rto",
                "1",
                "--rtt",
                "0.2",
                "--simulate",
                "2000",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["sim"]["messages"] == 2000 and set(out["sim"]["GP"]) == {"sim", "ci95", "model"}
