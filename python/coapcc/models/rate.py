"""Closed-form goodput of the chapter 6 schemes under the residual-bandwidth loss rule.

* :func:`backoff_plateau`: the stepwise goodput of backoff-based algorithms. If every original
  transmission fails the rate check and retransmission j + 1 is the first to pass it (j = 0: the
  first retransmission), the sender delivers 1/(RTT + sum_{i=0}^{j} b^i T) messages per second,
  with T = T_0 (f + 1)/2 the mean dithered initial timer.
* :func:`idc_goodput_ratio`: IDC-CoAP's steady state (6.1) under a stable residual bandwidth:
  between two losses the spacing shrinks from iw/ResBW by (1 - dw) per ACK down to 1/ResBW, so
  n = -log(iw)/log(1 - dw) and GP/ResBW = (dw/iw) n / (1 - (1 - dw)^(n + 1)) (n real).
* :func:`mbc_goodput_ratio`: the thesis's approximation of MBC-CoAP's steady state,
  GP/ResBW = (c - 1)/((c - 2) g_p + 1 + g_p/g_v) for a cycle of c phases with probing gain g_p
  and preventive gain g_v (0.6885 with the thesis's 8 phases, 1.25 and 0.75).

All functions broadcast over numpy arrays.
"""

from __future__ import annotations

import numpy as np

__all__ = ["backoff_plateau", "idc_goodput_ratio", "idc_cycle_length", "mbc_goodput_ratio"]


def backoff_plateau(rtt, rto, j, *, b=2.0, f=1.5):
    """Goodput (messages/s) when retransmission ``j + 1`` is the first to pass the rate check.

    >>> round(float(backoff_plateau(0.5, 2.0, 0)), 4)
    0.3333
    """
    rtt, rto, b, f = (np.asarray(x, dtype=float) for x in (rtt, rto, b, f))
    j = np.asarray(j)
    if np.any(j < 0):
        raise ValueError(f"j must be >= 0, got {j!r}")
    T = rto * (f + 1) / 2
    n = j + 1  # timers 0..j
    total = np.where(b == 1.0, n, (b**n - 1) / np.where(b == 1.0, 2.0, b - 1.0)) * T
    return 1.0 / (rtt + total)


def idc_goodput_ratio(iw=1.5, dw=0.01):
    """GP/ResBW of IDC-CoAP in steady state, (6.1); the cycle length n is
    :func:`idc_cycle_length`.

    >>> round(float(idc_goodput_ratio(1.5, 0.01)), 4)
    0.791
    """
    iw, dw = np.asarray(iw, dtype=float), np.asarray(dw, dtype=float)
    if np.any(iw <= 1) or np.any(dw <= 0) or np.any(dw >= 1):
        raise ValueError("IDC steady state needs iw > 1 and 0 < dw < 1")
    n = idc_cycle_length(iw, dw)
    return (dw / iw) * n / (1 - (1 - dw) ** (n + 1))


def idc_cycle_length(iw=1.5, dw=0.01):
    """ACKs between two losses of IDC-CoAP in steady state, n = -log(iw)/log(1 - dw)."""
    iw, dw = np.asarray(iw, dtype=float), np.asarray(dw, dtype=float)
    return -np.log(iw) / np.log1p(-dw)


def mbc_goodput_ratio(probe=1.25, preventive=0.75, phases=8):
    """The thesis's approximation of MBC-CoAP's GP/ResBW.

    >>> round(float(mbc_goodput_ratio()), 4)
    0.6885
    """
    probe, preventive = np.asarray(probe, dtype=float), np.asarray(preventive, dtype=float)
    c = np.asarray(phases, dtype=float)
    return (c - 1) / ((c - 2) * probe + 1 + probe / preventive)
