"""Per-exchange traces of the simulator (``coapcc simulate --trace FILE``).

The trace is JSON lines, one record per finished exchange, in simulated-time order::

    {"time_s": 12.3, "client": 0, "group": 0, "exchange": 4, "outcome": "ack",
     "transmissions": [{"sent_s": 9.1, "timer_s": 2.4}, {"sent_s": 11.5, "timer_s": 4.8}],
     "rtt_s": 3.2, "answered_copy": 1, "echoed_copy": 1,
     "cc": {"rto_s": 2.0, "strong": {"srtt_s": .., "rttvar_s": .., "rto_s": .., "samples": 3},
            "weak": null, "slow_rto_s": null, "state": null, "retained_s": null}}

:func:`read_trace` turns it into two tidy tables: exchanges and transmissions.

With ``--trace-queue`` (``coapcc.simulate(..., trace=FILE, trace_queue=True)``) the trace also
has a record at every change of the bottleneck queue (the first rate stage and its tail-drop
buffer) of every link direction::

    {"kind": "queue", "time_s": 0.0251, "link": 0, "direction": "downlink",
     "event": "leave", "size": 94, "bytes": 94, "packets": 1}

A run of the message workload (``workload`` ``periodic``, ``events``, ``none``; ``coapcc mesh
--trace``) writes one record per finished unit instead of the exchange records, in
:attr:`Trace.units`::

    {"t_s":12.300000000,"client":3,"node":5,"exchange":17,"unit":1,"units":3,"bytes":96,
     "event":false,"outcome":"acked","retransmissions":0,"rto_first_s":2.481000000,"rtt_s":0.088000000}

``event`` is ``enqueue`` (admitted), ``drop`` (tail-dropped: it did not fit) or ``leave`` (it
stopped counting in the buffer: last bit out, or start of its serialisation when the in-service
packet does not count); ``bytes`` and ``packets`` are the occupancy after the event, counted as
the buffer's admission test counts it. ``link`` 0 is the main link, k the extra access link
k - 1 of the topology. :func:`read_trace` puts them in :attr:`Trace.queue`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Trace", "read_trace", "run_traced", "QUEUE_COLUMNS", "UNIT_COLUMNS"]


@dataclass
class Trace:
    """A parsed trace.

    ``exchanges``: one row per exchange: ``time_s, client, group, exchange, outcome,
    n_transmissions, first_sent_s, initial_timer_s, rtt_s, answered_copy, cc_rto_s,
    strong_srtt_s, strong_rttvar_s, strong_rto_s, weak_srtt_s, weak_rttvar_s, weak_rto_s,
    slow_rto_s, state, retained_s``.

    ``transmissions``: one row per copy sent: ``client, exchange, copy, sent_s, timer_s,
    expired`` (``expired``: the timer armed with this copy ran out, i.e. a later copy followed
    or the exchange gave up).

    ``units``: one row per unit of the message workload (empty for the other workloads):
    ``t_s, client, node, exchange, unit, units, bytes, event, outcome, retransmissions,
    rto_first_s, rtt_s``.

    ``queue``: the bottleneck queue of every link direction over time, one row per change
    (empty unless the trace was recorded with queue records): ``time_s, link, direction,
    bytes, packets, event, size``, sorted by time (ties in the order they happened). The
    occupancy holds from ``time_s`` until the next row of the same ``(link, direction)``.
    """

    exchanges: Any
    transmissions: Any
    queue: Any = None
    units: Any = None

    def __post_init__(self):
        import pandas as pd

        if self.queue is None:
            self.queue = pd.DataFrame(columns=QUEUE_COLUMNS)
        if self.units is None:
            self.units = pd.DataFrame(columns=UNIT_COLUMNS)

    def flow(self, client: int) -> Trace:
        """The trace of one client (the queue, shared by every client, is kept whole)."""
        return Trace(
            self.exchanges[self.exchanges["client"] == client].reset_index(drop=True),
            self.transmissions[self.transmissions["client"] == client].reset_index(drop=True),
            self.queue,
            self.units[self.units["client"] == client].reset_index(drop=True),
        )


#: Columns of :attr:`Trace.queue`.
QUEUE_COLUMNS = ["time_s", "link", "direction", "bytes", "packets", "event", "size"]
#: Columns of :attr:`Trace.units`.
UNIT_COLUMNS = [
    "t_s",
    "client",
    "node",
    "exchange",
    "unit",
    "units",
    "bytes",
    "event",
    "outcome",
    "retransmissions",
    "rto_first_s",
    "rtt_s",
]


def _records(lines: Iterable[str], clients: set[int] | None, queue: list, units: list):
    for line in lines:
        if not line.strip():
            continue
        rec = json.loads(line)
        if rec.get("kind") == "queue":
            queue.append(rec)
        elif clients is None or rec.get("client") in clients:
            if "unit" in rec:
                units.append(rec)
            else:
                yield rec


def read_trace(path: str | os.PathLike, clients: Iterable[int] | None = None) -> Trace:
    """Read a trace file (optionally only some clients) into a :class:`Trace`.

    >>> t = coapcc.read_trace("trace.jsonl", clients=[0])          # doctest: +SKIP
    >>> t.exchanges[["time_s", "rtt_s", "cc_rto_s"]]                 # doctest: +SKIP
    """
    import pandas as pd

    wanted = set(clients) if clients is not None else None
    ex_rows, tx_rows, q_rows, u_rows = [], [], [], []
    with open(path) as f:
        for rec in _records(f, wanted, q_rows, u_rows):
            txs = rec.get("transmissions") or []
            cc = rec.get("cc") or {}
            row = {
                "time_s": rec.get("time_s"),
                "client": rec.get("client"),
                "group": rec.get("group"),
                "exchange": rec.get("exchange"),
                "outcome": rec.get("outcome"),
                "n_transmissions": len(txs),
                "first_sent_s": txs[0]["sent_s"] if txs else None,
                "initial_timer_s": txs[0]["timer_s"] if txs else None,
                "rtt_s": rec.get("rtt_s"),
                "answered_copy": rec.get("answered_copy"),
                "cc_rto_s": cc.get("rto_s"),
            }
            for est in ("strong", "weak"):
                e = cc.get(est) or {}
                for k in ("srtt_s", "rttvar_s", "rto_s"):
                    row[f"{est}_{k}"] = e.get(k)
            for k in ("slow_rto_s", "state", "retained_s"):
                row[k] = cc.get(k)
            ex_rows.append(row)
            last = len(txs) - 1
            for i, t in enumerate(txs):
                tx_rows.append(
                    {
                        "client": rec.get("client"),
                        "exchange": rec.get("exchange"),
                        "copy": i,
                        "sent_s": t.get("sent_s"),
                        "timer_s": t.get("timer_s"),
                        "expired": i < last or rec.get("outcome") == "give_up",
                    }
                )
    ex = pd.DataFrame(ex_rows)
    tx = pd.DataFrame(tx_rows, columns=["client", "exchange", "copy", "sent_s", "timer_s", "expired"])
    for col in (
        "rtt_s",
        "cc_rto_s",
        "strong_srtt_s",
        "strong_rttvar_s",
        "strong_rto_s",
        "weak_srtt_s",
        "weak_rttvar_s",
        "weak_rto_s",
        "slow_rto_s",
        "retained_s",
    ):
        if col in ex:
            ex[col] = pd.to_numeric(ex[col], errors="coerce")
    q = pd.DataFrame(q_rows, columns=QUEUE_COLUMNS)
    if len(q):
        # Each direction's records are in time order in the file; interleave them by time.
        q = q.sort_values("time_s", kind="stable").reset_index(drop=True)
    q = q.astype({"time_s": float, "link": int, "bytes": int, "packets": int, "size": int})
    return Trace(ex, tx, q, pd.DataFrame(u_rows, columns=UNIT_COLUMNS))


def run_traced(config_json: str, trace_path: str, queue: bool = True) -> str:
    """Run the Rust simulator on ``config_json`` writing its trace to ``trace_path`` (with the
    queue records if ``queue``); returns the report JSON."""
    from . import _native

    return _native.simulate_json(config_json, str(trace_path), queue=queue)
