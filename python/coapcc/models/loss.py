"""Markov models of CoAP reliability under Bernoulli, simple Gilbert and Gilbert-Elliott loss.

These are the analytical models of Makarem's 2021 thesis (chapters 3 and 4), with the printed
typos corrected. One CoAP sender in confirmable mode with NSTART = 1 is always backlogged: a
new message is sent as soon as the previous one is acknowledged or dropped. A transmission
attempt is lost with the probability of the loss process (data and ACK losses are not told
apart). The i-th retransmission is sent after a total wait of ``(b^i - 1)/(b - 1) * T`` where
``T = T_0 (f + 1)/2`` is the mean first timeout, and a message is dropped when the timer armed
with retransmission ``r`` expires.

Every function is vectorised: any argument may be a numpy array, and arguments broadcast
against each other (a 10 000-point grid evaluates in milliseconds). ``r`` may vary over the
grid too. Each function returns a :class:`Metrics` mapping whose keys are the symbols of the
thesis:

========  ==================================================================================
key       meaning
========  ==================================================================================
P_L       observed (application) loss ratio: messages dropped after r retransmissions
P_A       1 - P_L, probability that a message is delivered
E_N       expected transmissions (attempts) per message, delivered or dropped
N_A       attempts per delivered message (the byte overhead counts these)
E_N_OL    expected dropped messages between two deliveries, P_L / (1 - P_L)
D_s       mean delay of a delivered message, from its first transmission to its reception
          by the server: D_ow + (time spent waiting on timeouts)
D_app     mean time the sender spends per message (success or drop)
GP        goodput, delivered messages per second
O         total byte overhead (N_A Z - Y)/Y: non-application bytes per payload byte
O_S       byte overhead of a delivered message alone (the attempts of dropped messages
          removed)
pi_R      stationary probability of the success state R (= per-attempt success probability)
pi        stationary probabilities of the timeout states 2^i T (b^i T), i = 0..r, on the
          last axis (padded with NaN beyond a point's own r)
========  ==================================================================================

The three loss models share one computation: the stationary distribution of the chain of
states ``R`` (an attempt succeeds) and ``b^i T`` (attempt ``i`` of a message is lost), from
which every metric follows (:func:`metrics_from_chain`). Closed forms printed in the thesis
are kept as separate functions (``bernoulli_closed``, ``gilbert_closed``) and tested against
the chain, so each printed equation is checked.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "Metrics",
    "mean_timeout",
    "metrics_from_chain",
    "bernoulli",
    "bernoulli_closed",
    "required_factor",
    "gilbert",
    "gilbert_closed",
    "ge",
    "ge_approx",
    "ge_chain",
    "ge_approx_chain",
    "ge_loss_ratio_closed",
    "SCALAR_KEYS",
]

#: The scalar metrics every model returns (``pi`` is the only array-valued one).
SCALAR_KEYS = ("P_L", "P_A", "E_N", "N_A", "E_N_OL", "D_s", "D_app", "GP", "O", "O_S", "pi_R")

Metrics = dict  # a plain dict of numpy arrays, keyed by the thesis's symbols


def mean_timeout(rto, f=1.5):
    """Mean first timeout ``T = T_0 (f + 1)/2`` (1.25 T_0 for f = 1.5)."""
    return np.asarray(rto, dtype=float) * (np.asarray(f, dtype=float) + 1.0) / 2.0


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


#: Largest r (MAX_RETRANSMIT): the simulator's bound; b^r T stays finite within it.
MAX_R = 255


def _first(a: np.ndarray, bad: np.ndarray) -> str:
    """The first offending value of ``a`` (where ``bad``), as ``%g``: a number, never an array."""
    return f"{float(np.broadcast_to(a, bad.shape)[bad].flat[0]):g}"


def _r_array(r) -> np.ndarray:
    ra = np.asarray(r, dtype=float)
    bad = ~np.isfinite(ra) | (np.mod(ra, 1) != 0) | (ra < 0) | (ra > MAX_R)
    if np.any(bad):
        raise ValueError(f"r (MAX_RETRANSMIT) must be an integer in [0, {MAX_R}], got {_first(ra, bad)}")
    return ra.astype(np.int64)


def _check_prob(name: str, x) -> np.ndarray:
    a = _arr(x)
    bad = ~np.isfinite(a) | (a < 0) | (a > 1)
    if np.any(bad):
        raise ValueError(f"{name} must be a probability in [0, 1], got {_first(a, bad)}")
    return a


def _check_pos(name: str, x, allow_zero: bool = True) -> np.ndarray:
    a = _arr(x)
    bad = ~np.isfinite(a) | ((a < 0) if allow_zero else (a <= 0))
    if np.any(bad):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {_first(a, bad)}")
    return a


def _backoff_sum(b, i):
    """(b^i - 1)/(b - 1): the total wait, in units of T, before retransmission i (i at b = 1)."""
    b = _arr(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b == 1.0, i, (b**i - 1.0) / np.where(b == 1.0, 2.0, b - 1.0))


def metrics_from_chain(pi_R, pi, r, *, T, R, D_ow=None, Z=100.0, Y=48.0, b=2.0) -> Metrics:
    """Every metric from the stationary distribution of the 1-D chain (R, b^i T).

    ``pi`` has the timeout states on its last axis (length ``max(r) + 1``); entries beyond a
    point's own ``r`` are ignored. Goodput is (4.33), the delay (4.34) in its corrected form
    (only the last term divided by b - 1), the overheads (4.28) and ``(N_A Z - Y)/Y``.
    """
    pi_R = _arr(pi_R)
    pi = _arr(pi)
    r = _r_array(r)
    T, R, Z, Y, b = (_arr(x) for x in (T, R, Z, Y, b))
    D_ow = R / 2.0 if D_ow is None else _arr(D_ow)
    n = pi.shape[-1]
    i = np.arange(n, dtype=float)
    r_e = r[..., None]
    valid = i <= r_e
    last = i == r_e
    pi_v = np.where(valid, pi, 0.0)
    pi_r = np.sum(np.where(last, pi, 0.0), axis=-1)
    b_e = b[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        weights = b_e**i
        P_L = pi_r / (pi_r + pi_R)
        # (4.33): the period between two attempts is R after a success, b^i T after loss i.
        GP = pi_R / (pi_R * R + T * np.sum(pi_v * weights, axis=-1))
        below = np.where(i < r_e, pi_v, 0.0)
        # (4.34), corrected: only pi_r's term is divided by b - 1.
        D_s = D_ow + T * (np.sum(below * weights, axis=-1) - pi_r * _backoff_sum(b, r)) / pi_R
        msgs = pi_R + pi_r
        E_N = (pi_R + np.sum(pi_v, axis=-1)) / msgs
        N_A = (pi_R + np.sum(pi_v, axis=-1)) / pi_R
        D_app = (pi_R * R + T * np.sum(pi_v * weights, axis=-1)) / msgs
        O_tot = (N_A * Z - Y) / Y
        # (4.28)
        O_S = (1.0 + np.sum(np.where(i < r_e, pi_v - pi_r[..., None], 0.0), axis=-1) / pi_R) * Z / Y - 1.0
        E_N_OL = pi_r / pi_R
    return {
        "P_L": P_L,
        "P_A": 1.0 - P_L,
        "E_N": E_N,
        "N_A": N_A,
        "E_N_OL": E_N_OL,
        "D_s": D_s,
        "D_app": D_app,
        "GP": GP,
        "O": O_tot,
        "O_S": O_S,
        "pi_R": pi_R,
        "pi": np.where(valid, pi, np.nan),
    }


# --------------------------------------------------------------------------------------------
# Gilbert-Elliott: exact 2-D chain (chapter 4)


def _mat_a_b(p, q, k, h):
    """Transition matrices into loss (A) and success (B) states; V_next = M V_prev."""
    A = np.stack(
        [
            np.stack([(1 - p) * (1 - k), q * (1 - k)], axis=-1),
            np.stack([p * (1 - h), (1 - q) * (1 - h)], axis=-1),
        ],
        axis=-2,
    )
    B = np.stack(
        [np.stack([(1 - p) * k, q * k], axis=-1), np.stack([p * h, (1 - q) * h], axis=-1)],
        axis=-2,
    )
    return A, B


def ge_chain(p, q, k, h, r):
    """Stationary ``(pi_R, pi)`` of the exact GE chain (4.5)-(4.10), O(r) per point.

    ``V_R = B pi_GB`` (4.8) and ``V_i = (I - A^{r+1})^{-1} A^{i+1} V_R`` (4.10), computed by
    repeated multiplication (valid also where the eigenvalues of A coincide). ``p + q`` must
    be positive.
    """
    p, q, k, h = (_check_prob(n, x) for n, x in (("p", p), ("q", q), ("k", k), ("h", h)))
    r = _r_array(r)
    p, q, k, h, r = np.broadcast_arrays(p, q, k, h, r)
    if np.any(p + q == 0):
        raise ValueError("p + q must be > 0 (the Gilbert-Elliott chain needs a stationary distribution)")
    A, B = _mat_a_b(p, q, k, h)
    s = p + q
    stat = np.stack([q / s, p / s], axis=-1)
    V_R = np.einsum("...ij,...j->...i", B, stat)
    n = int(r.max(initial=0)) + 1
    # W_i = A^{i+1} V_R for i = 0..max(r); A^{r+1} is picked per point.
    W = np.empty(V_R.shape[:-1] + (n, 2))
    Apow = np.broadcast_to(np.eye(2), A.shape).copy()
    A_r1 = np.empty_like(A)
    for i in range(n):
        Apow = np.einsum("...ij,...jk->...ik", A, Apow)  # A^{i+1}
        W[..., i, :] = np.einsum("...ij,...j->...i", Apow, V_R)
        sel = (r == i)[..., None, None]
        A_r1 = np.where(sel, Apow, A_r1)
    M = np.eye(2) - A_r1
    with np.errstate(divide="ignore", invalid="ignore"):
        Minv = np.linalg.inv(np.where(np.abs(np.linalg.det(M))[..., None, None] > 0, M, np.eye(2)))
    V = np.einsum("...ij,...nj->...ni", Minv, W)
    pi = V.sum(axis=-1)
    pi_R = V_R.sum(axis=-1)
    # No attempt can ever succeed (e.g. k = h = 0, or an absorbing Bad state with h = 0): every
    # message is r + 1 losses, each timeout state visited equally often.
    dead = pi_R <= 0
    if np.any(dead):
        i = np.arange(n)
        uniform = np.where(i <= r[..., None], 1.0 / (r[..., None] + 1.0), 0.0)
        pi = np.where(dead[..., None], uniform, pi)
        pi_R = np.where(dead, 0.0, pi_R)
    return pi_R, pi


def ge_approx_chain(p, q, k, h, r):
    """Stationary ``(pi_R, pi)`` of the approximate 1-D chain (4.3)-(4.4) (Fig. 4.3).

    Exact iff p = 1 - q, or k = 1 and h = 0, or k = h.
    """
    p, q, k, h = (_check_prob(n, x) for n, x in (("p", p), ("q", q), ("k", k), ("h", h)))
    r = _r_array(r)
    p, q, k, h, r = np.broadcast_arrays(p, q, k, h, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        l_ = (((1 - p) * (1 - k) + p * (1 - h)) * k * q + ((1 - q) * (1 - h) + q * (1 - k)) * h * p) / (
            k * q + h * p
        )
        s_ = (((1 - p) * k + p * h) * (1 - k) * q + ((1 - q) * h + q * k) * (1 - h) * p) / (
            (1 - k) * q + (1 - h) * p
        )
        n = int(r.max(initial=0)) + 1
        i = np.arange(n, dtype=float)
        pi_R = s_ / (l_ + s_)
        pi = (l_ * s_ / ((l_ + s_) * (1 - (1 - s_) ** (r + 1))))[..., None] * (1 - s_[..., None]) ** i
    return pi_R, pi


def _timing(rto, f, T):
    if T is not None:
        return _check_pos("T", T, allow_zero=False)
    return mean_timeout(_check_pos("rto", rto, allow_zero=False), _check_pos("f", f))


def ge(p, q, k, h, *, r=4, rto=None, rtt=0.2, f=1.5, T=None, D_ow=None, Z=100.0, Y=48.0, b=2.0) -> Metrics:
    """Exact Gilbert-Elliott model (chapter 4): p = P(G->B), q = P(B->G), k and h the
    per-attempt **success** probabilities in G and B.

    Timing: give ``rto`` (T_0, s) and ``f`` (ACK_RANDOM_FACTOR), or the mean first timeout
    ``T`` directly. ``D_ow`` defaults to ``rtt/2``.

    >>> round(float(ge(0.1, 0.5, 0.75, 0.25, r=3, T=2.5, rtt=0.5)["P_L"]), 6)
    0.018239
    """
    pi_R, pi = ge_chain(p, q, k, h, r)
    return metrics_from_chain(
        pi_R, pi, r, T=_timing(rto, f, T), R=_check_pos("rtt", rtt), D_ow=D_ow, Z=Z, Y=Y, b=b
    )


def ge_approx(
    p, q, k, h, *, r=4, rto=None, rtt=0.2, f=1.5, T=None, D_ow=None, Z=100.0, Y=48.0, b=2.0
) -> Metrics:
    """The approximate 1-D Gilbert-Elliott chain (§4.2.1), same arguments as :func:`ge`."""
    pi_R, pi = ge_approx_chain(p, q, k, h, r)
    return metrics_from_chain(
        pi_R, pi, r, T=_timing(rto, f, T), R=_check_pos("rtt", rtt), D_ow=D_ow, Z=Z, Y=Y, b=b
    )


def ge_loss_ratio_closed(p, q, k, h, r):
    """P_L by the closed form (4.25) through the Cayley-Hamilton elements of A^{r+1}.

    Undefined where the eigenvalues of A coincide; :func:`ge` is always valid.
    """
    p, q, k, h = (_arr(x) for x in (p, q, k, h))
    r = _r_array(r)
    trA = (1 - p) * (1 - k) + (1 - q) * (1 - h)
    detA = (1 - k) * (1 - h) * ((1 - p) * (1 - q) - p * q)
    disc = np.sqrt(trA**2 / 4 - detA + 0j)
    l1, l2 = trA / 2 - disc, trA / 2 + disc
    n = r + 1
    sigma = ((l2**n - l1**n) / (l2 - l1)).real
    rho = ((l2 * l1**n - l1 * l2**n) / (l2 - l1)).real
    a = rho + (1 - p) * (1 - k) * sigma
    bb = q * (1 - k) * sigma
    c = p * (1 - h) * sigma
    d = rho + (1 - q) * (1 - h) * sigma
    ll = ((l1 * l2) ** n).real
    num = (bb + d) * p * h + (a + c) * q * k - ll * (p * h + q * k)
    den = (bb + 1 - a) * p * h + (c + 1 - d) * q * k
    return num / den


# --------------------------------------------------------------------------------------------
# Bernoulli (§3.1) and simple Gilbert (§3.2): special cases of the GE chain, plus closed forms


def bernoulli(p, *, r=4, rto=None, rtt=0.2, f=1.5, T=None, D_ow=None, Z=100.0, Y=48.0, b=2.0) -> Metrics:
    """Bernoulli loss (§3.1): each attempt is lost independently with probability ``p``.

    Adds ``required_factor`` (3.112) to the metrics.

    >>> m = bernoulli(0.3, r=4, T=2.5, rtt=0.2)
    >>> round(float(m["P_L"]), 6), round(float(m["GP"]), 6)
    (0.00243, 0.51722)
    """
    p = _check_prob("p", p)
    r = _r_array(r)
    p_b, r_b = np.broadcast_arrays(p, r)
    n = int(r_b.max(initial=0)) + 1
    i = np.arange(n, dtype=float)
    # A message reaches attempt i with probability p^i and loses it with p^{i+1}; it makes
    # E_N = sum_{i<=r} p^i attempts. Per attempt, the chain is in b^i T with probability
    # p^{i+1}/E_N and in R with probability (1 - p^{r+1})/E_N = 1 - p.
    inr = i <= r_b[..., None]
    E_N = np.sum(np.where(inr, p_b[..., None] ** i, 0.0), axis=-1)
    pi = p_b[..., None] ** (i + 1) / E_N[..., None]
    pi_R = (1 - p_b ** (r_b + 1)) / E_N
    out = metrics_from_chain(
        pi_R, pi, r_b, T=_timing(rto, f, T), R=_check_pos("rtt", rtt), D_ow=D_ow, Z=Z, Y=Y, b=b
    )
    out["required_factor"] = required_factor(p, r)
    return out


def required_factor(p, r):
    """(3.112): the factor T_2/T_1 that keeps the goodput when MAX_RETRANSMIT goes r -> r + 1
    (Bernoulli loss, b = 2). R cancels. Written with sums, so p = 0.5 needs no special case.

    >>> round(float(required_factor(0.1, 1)), 4)
    0.9765
    """
    p = _check_prob("p", p)
    r = _r_array(r)
    p, r = np.broadcast_arrays(p, r)
    n = int(r.max(initial=0)) + 2
    i = np.arange(n, dtype=float)
    terms = (2 * p[..., None]) ** i
    s_r = np.sum(np.where(i <= r[..., None], terms, 0.0), axis=-1)
    s_r1 = np.sum(np.where(i <= r[..., None] + 1, terms, 0.0), axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (1 - p ** (r + 2)) * s_r / ((1 - p ** (r + 1)) * s_r1)


def bernoulli_closed(p, *, r=4, T=2.5, rtt=0.2, D_ow=None, Z=100.0, Y=48.0) -> Metrics:
    """The printed Bernoulli closed forms (b = 2): (3.1), (3.14)/(3.17), (3.27), (3.30), (3.45),
    (3.53). Defined for 0 < p < 1 (the p = 0.5 branches are (3.17) and (3.27)'s second form)."""
    p, T, R, Z, Y = (_arr(x) for x in (p, T, rtt, Z, Y))
    r = _r_array(r)
    D0 = R / 2 if D_ow is None else _arr(D_ow)
    half = np.isclose(p, 0.5)
    pp = np.where(half, 0.25, p)  # keep the generic branch finite where it is not used
    with np.errstate(divide="ignore", invalid="ignore"):
        geo = (1 - (2 * pp) ** (r + 1)) / (1 - 2 * pp)
        D_s = np.where(
            half,
            D0 + T * ((1 - p) / (1 - p ** (r + 1)) * (r + 1) - 1),  # (3.17)
            D0 + T * ((1 - p) / (1 - p ** (r + 1)) * geo - 1),  # (3.14)
        )
        D_app = np.where(
            half,
            (1 - 0.5 ** (r + 1)) * R + (T / 2) * (r + 1),
            (1 - p ** (r + 1)) * R + p * geo * T,  # (3.27)
        )
        GP = (1 - p ** (r + 1)) / D_app  # (3.30)
        O_tot = (Z - (1 - p) * Y) / ((1 - p) * Y)  # (3.45)
        O_S = (Z - Y) / Y + (Z / Y) * (p ** (r + 1) / (1 - p ** (r + 1))) * (
            (1 - p**r) / (p**r * (1 - p)) - r
        )  # (3.53)
    return {"P_L": p ** (r + 1), "D_s": D_s, "D_app": D_app, "GP": GP, "O": O_tot, "O_S": O_S}


def gilbert(p, q, *, r=4, rto=None, rtt=0.2, f=1.5, T=None, D_ow=None, Z=100.0, Y=48.0, b=2.0) -> Metrics:
    """Simple Gilbert loss (§3.2): Good (attempt succeeds) and Bad (attempt lost) states,
    p = P(G->B), q = P(B->G). The exact GE model with k = 1, h = 0."""
    return ge(p, q, 1.0, 0.0, r=r, rto=rto, rtt=rtt, f=f, T=T, D_ow=D_ow, Z=Z, Y=Y, b=b)


def gilbert_closed(p, q, *, r=4, T=2.5, rtt=0.2, D_ow=None, Z=100.0, Y=48.0) -> Metrics:
    """The printed simple-Gilbert closed forms (b = 2): (3.69), (3.73), (3.87) and its
    corrected closed form (3.86) (q != 0.5), (3.92), (3.102), (3.106), (3.108), (3.109)."""
    p, q, T, R, Z, Y = (_arr(x) for x in (p, q, T, rtt, Z, Y))
    r = _r_array(r)
    D0 = R / 2 if D_ow is None else _arr(D_ow)
    p, q, r = np.broadcast_arrays(p, q, r)
    n = int(r.max(initial=0)) + 1
    i = np.arange(1, n + 1, dtype=float)  # i = 1..max r
    inr = i <= r[..., None]
    u = 1 - q
    with np.errstate(divide="ignore", invalid="ignore"):
        den = 1 - u ** (r + 1)
        E_NOL = p * u**r / den  # (3.69)
        P_L = p * u**r / (1 + (p + q - 1) * u**r)  # (3.73)
        S = np.sum(np.where(inr, u[..., None] ** (i - 1) * (2**i - 1), 0.0), axis=-1)
        D = D0 + p * q / den * S * T  # (3.87)
        D_closed = (
            D0 + (p / den) * (2 * q * (1 - 2**r * u**r) / (2 * q - 1) + u**r - 1) * T
        )  # (3.86) corrected
        GP = den / (p * u**r * (2 ** (r + 1) - 1) * T + den * R + p * q * S * T)  # (3.92)
        O_tot = ((p + q) * Z - q * Y) / (q * Y)  # (3.102)
        B = p * np.sum(
            np.where(inr, q[..., None] / den[..., None] * u[..., None] ** (i - 1) * i, 0.0), axis=-1
        )
        O_ST = ((1 + B) * Z - Y) / Y  # (3.106)
        O_ST_108 = ((1 + p * (r * u ** (r + 1) - (r + 1) * u**r + 1) / (den * q)) * Z - Y) / Y
        O_ST_109 = ((1 + p * (1 - q * r * u**r - u**r) / (den * q)) * Z - Y) / Y
    return {
        "E_N_OL": E_NOL,
        "P_L": P_L,
        "D_s": D,
        "D_s_closed": D_closed,
        "GP": GP,
        "O": O_tot,
        "O_S": O_ST,
        "O_S_108": O_ST_108,
        "O_S_109": O_ST_109,
    }
