"""The Helsinki CoAP-over-TCP thesis's trace statements as claim measures.

Each measure is ``f(results, *, where=...) -> float | None`` (:mod:`coapcc.claims`), reading
per-flow columns the TCP transport reports (``docs/tcp.md``):

- ``new_after_first_dupack``: new data segments the server sent after the first duplicate ACK;
- ``recovery_retransmits``, ``recovery_rounds``: segments retransmitted in fast recovery and
  its round trips (the ACKs that advanced the cumulative ACK point in it);
- ``rto_expiries``, ``rto_episode_s``, ``rto_resend_s``: retransmission timeouts, the mean
  length of their loss episodes (from the RTO until everything sent before it is
  acknowledged, or the next RTO), and the mean time from an RTO to the last segment its
  episode resent (the resending itself).

Pooled over the selected flows (every flow of every replication), as the thesis pools its
runs. ``None`` when the selection has no flow (or, for a ratio, no denominator).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "new_data_before_first_dupack",
    "retransmissions_per_recovery_round",
    "seconds_per_rto_episode",
    "seconds_resending_per_rto",
]


def _flows(results, where: Mapping[str, Any] | None):
    df = results.flows
    for col, want in dict(where or {}).items():
        if col not in df.columns:
            raise KeyError(f"where: no column {col!r} in the flows table")
        df = df[df[col].isin(want if isinstance(want, list) else [want])]
    return df


def _need(df, *cols: str) -> bool:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise KeyError(f"the flows table has no {', '.join(missing)} (a TCP dataset of this version has)")
    return len(df) > 0


def new_data_before_first_dupack(results, *, where: Mapping[str, Any] | None = None) -> float | None:
    """Share of the new data segments (first transmissions) sent before the first duplicate
    ACK arrived: 1 when, as the thesis says of New Reno at 28 200 B, all new data goes out in
    slow start before the first duplicate ACK."""
    df = _flows(results, where)
    if not _need(df, "transmissions", "retransmissions", "new_after_first_dupack"):
        return None
    new = float((df["transmissions"] - df["retransmissions"]).sum())
    return None if new <= 0 else 1.0 - float(df["new_after_first_dupack"].sum()) / new


def retransmissions_per_recovery_round(results, *, where: Mapping[str, Any] | None = None) -> float | None:
    """Segments retransmitted per round trip of fast recovery: 1 when, as without SACK, each
    partial ACK repairs one hole ("then one segment per round trip")."""
    df = _flows(results, where)
    if not _need(df, "recovery_retransmits", "recovery_rounds"):
        return None
    rounds = float(df["recovery_rounds"].sum())
    return None if rounds <= 0 else float(df["recovery_retransmits"].sum()) / rounds


def seconds_per_rto_episode(results, *, where: Mapping[str, Any] | None = None) -> float | None:
    """Mean loss episode per retransmission timeout, seconds: each flow's mean episode
    weighted by its RTOs ("each RTO is followed by roughly 5 s of resending")."""
    return _per_rto(results, where, "rto_episode_s")


def _per_rto(results, where, column: str) -> float | None:
    df = _flows(results, where)
    if not _need(df, "rto_expiries", column):
        return None
    df = df[df[column].notna() & (df["rto_expiries"] > 0)]
    n = float(df["rto_expiries"].sum())
    return None if n <= 0 else float((df[column] * df["rto_expiries"]).sum()) / n


def seconds_resending_per_rto(results, *, where: Mapping[str, Any] | None = None) -> float | None:
    """Mean seconds of resending after a retransmission timeout: from the RTO to the last
    segment its loss episode retransmitted, each flow's mean weighted by its RTOs ("each RTO
    is followed by roughly 5 s of resending": the go-back-N resending of what was
    outstanding, which a sequence plot shows as retransmissions; the wait for their ACKs
    after the last one is not resending)."""
    return _per_rto(results, where, "rto_resend_s")
