"""Every figure of the reports (matplotlib, no pyplot state: every function returns a
Figure, drawn from an aggregated table, so the report builder can draw them in any process):

* :mod:`.flows`: simulator studies' flows: box plots (FCT, retransmissions, TCP segments),
  confidence intervals, CDFs, retransmissions per exchange;
* :mod:`.traces`: traced runs: one flow's timers, RTT and RTO; a run's goodput, queues and
  TCP sequence numbers over time;
* :mod:`.mesh`: mesh studies (Ancillotti & Bruno's figures);
* :mod:`.sensitivity`: the error-model sensitivity study;
* :mod:`.makarem`: Makarem's model, RTT-scenario and residual-bandwidth figures;
* :mod:`.base`: what they share (:func:`save`, a fixed layout, colours, legends, boxes).
"""

from __future__ import annotations

from ..stats import ci95_half, t95
from .base import save
from .flows import box_figure, box_stats, cdf_curves, cdf_figure, ci_figure, ci_stats, histogram_figure
from .traces import queue_figure, tcp_seq_figure, timeline_figure, trace_figure

__all__ = [
    "box_stats",
    "box_figure",
    "ci_stats",
    "ci_figure",
    "cdf_curves",
    "cdf_figure",
    "histogram_figure",
    "trace_figure",
    "timeline_figure",
    "queue_figure",
    "tcp_seq_figure",
    "save",
    "t95",
    "ci95_half",
]
