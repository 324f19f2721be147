"""Makarem (2021): analytical loss models of CoAP reliability, and the thesis's studies.

* :mod:`coapcc.models.loss`: Bernoulli, simple Gilbert and Gilbert-Elliott (exact 2-D chain and
  approximate 1-D chain) models, vectorised over parameter grids.
* :mod:`coapcc.models.rate`: closed-form goodput of the chapter 6 schemes (backoff plateaus,
  IDC-CoAP (6.1), MBC-CoAP).
* :mod:`coapcc.models.cli`: the ``coapcc model`` command (``--simulate N`` compares with the
  simulator, :mod:`coapcc.models.validate`).
* :mod:`coapcc.models.studies`: the RTT-scenario (chapter 5) and residual-bandwidth (chapter 6)
  studies, which run in the Rust core (``coapcc-studies``).
* ``coapcc reproduce makarem21``: the studies as one sweep (:mod:`coapcc.kinds.makarem`) and its
  report (:mod:`coapcc.reports.makarem`).

>>> from coapcc import models
>>> round(float(models.bernoulli(0.3, r=4, T=2.5, rtt=0.2)["D_s"]), 6)
1.644628
"""

from .loss import (
    SCALAR_KEYS,
    bernoulli,
    bernoulli_closed,
    ge,
    ge_approx,
    ge_approx_chain,
    ge_chain,
    ge_loss_ratio_closed,
    gilbert,
    gilbert_closed,
    mean_timeout,
    metrics_from_chain,
    required_factor,
)
from .rate import backoff_plateau, idc_cycle_length, idc_goodput_ratio, mbc_goodput_ratio

__all__ = [
    "SCALAR_KEYS",
    "backoff_plateau",
    "idc_cycle_length",
    "idc_goodput_ratio",
    "mbc_goodput_ratio",
    "bernoulli",
    "bernoulli_closed",
    "ge",
    "ge_approx",
    "ge_approx_chain",
    "ge_chain",
    "ge_loss_ratio_closed",
    "gilbert",
    "gilbert_closed",
    "mean_timeout",
    "metrics_from_chain",
    "required_factor",
]
