"""Per-exchange traces of the simulator (``coapcc simulate --trace FILE``).

The trace is JSON lines, one record per finished exchange, in simulated-time order::

    {"time_s": 12.3, "client": 0, "group": 0, "exchange": 4, "outcome": "ack",
     "transmissions": [{"sent_s": 9.1, "timer_s": 2.4}, {"sent_s": 11.5, "timer_s": 4.8}],
     "rtt_s": 3.2, "answered_copy": 1, "echoed_copy": 1,
     "cc": {"rto_s": 2.0, "strong": {"srtt_s": .., "rttvar_s": .., "rto_s": .., "samples": 3},
            "weak": null, "slow_rto_s": null, "state": null, "retained_s": null}}

:func:`read_trace` turns it into two tidy tables: exchanges and transmissions.

A CoAP-over-TCP run's trace has the TCP sender's events instead of exchanges (keys ``flow``
and ``event``; :attr:`Trace.tcp`).

A run of the message workload (``workload`` ``periodic``, ``events``, ``none``; ``coapcc mesh
--trace``) writes one record per finished unit instead of the exchange records, in
:attr:`Trace.units`::

    {"t_s":12.300000000,"client":3,"node":5,"exchange":17,"unit":1,"units":3,"bytes":96,
     "event":false,"outcome":"acked","retransmissions":0,"rto_first_s":2.481000000,"rtt_s":0.088000000}

With ``--trace-queue`` (``coapcc.simulate(..., trace=FILE, trace_queue=True)``) the trace also
has a record at every change of the bottleneck queue (the first rate stage and its tail-drop
buffer) of every link direction::

    {"kind": "queue", "time_s": 0.0251, "link": 0, "direction": "downlink",
     "event": "leave", "size": 94, "bytes": 94, "packets": 1}

``event`` is ``enqueue`` (admitted), ``drop`` (tail-dropped: it did not fit) or ``leave`` (it
stopped counting in the buffer: last bit out, or start of its serialisation when the in-service
packet does not count); ``bytes`` and ``packets`` are the occupancy after the event, counted as
the buffer's admission test counts it. ``link`` 0 is the main link, k the extra access link
k - 1 of the topology. :func:`read_trace` puts them in :attr:`Trace.queue`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Trace", "read_trace", "run_traced", "QUEUE_COLUMNS", "TCP_COLUMNS", "UNIT_COLUMNS"]


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

    ``tcp``: the TCP sender events of a CoAP-over-TCP run (empty otherwise), in file order:
    :data:`TCP_COLUMNS` (``flow`` is the client).
    """

    exchanges: Any
    transmissions: Any
    queue: Any = None
    tcp: Any = None
    units: Any = None

    def __post_init__(self):
        import pandas as pd

        if self.queue is None:
            self.queue = pd.DataFrame(columns=QUEUE_COLUMNS)
        if self.tcp is None:
            self.tcp = pd.DataFrame(columns=TCP_COLUMNS)
        if self.units is None:
            self.units = pd.DataFrame(columns=UNIT_COLUMNS)

    def flow(self, client: int) -> Trace:
        """The trace of one client (the queue, shared by every client, is kept whole)."""
        return Trace(
            self.exchanges[self.exchanges["client"] == client].reset_index(drop=True),
            self.transmissions[self.transmissions["client"] == client].reset_index(drop=True),
            self.queue,
            self.tcp[self.tcp["flow"] == client].reset_index(drop=True),
            self.units[self.units["client"] == client].reset_index(drop=True),
        )


#: Columns of :attr:`Trace.queue`.
QUEUE_COLUMNS = ["time_s", "link", "direction", "bytes", "packets", "event", "size"]
#: Columns of :attr:`Trace.tcp`.
TCP_COLUMNS = [
    "time_s", "flow", "event", "seq", "len", "cwnd", "ssthresh", "in_flight", "pacing_rate",
    "bbr_state", "ca_state", "rto_s",
]  # fmt: skip
#: Columns of :attr:`Trace.units`.
UNIT_COLUMNS = [
    "t_s", "client", "node", "exchange", "unit", "units", "bytes", "event", "outcome",
    "retransmissions", "rto_first_s", "rtt_s",
]  # fmt: skip
_EX_FLOATS = ("rtt_s", "cc_rto_s", "slow_rto_s", "retained_s")
_EST_KEYS = ("srtt_s", "rttvar_s", "rto_s")


def _schema():
    """Every record kind's fields (exchange, TCP event, queue) as one Arrow schema."""
    import pyarrow as pa

    f64, i64, txt = pa.float64(), pa.int64(), pa.string()
    est = pa.struct([(k, f64) for k in _EST_KEYS])
    cc = pa.struct(
        [
            ("rto_s", f64),
            ("strong", est),
            ("weak", est),
            ("slow_rto_s", f64),
            ("state", txt),
            ("retained_s", f64),
        ]
    )
    return pa.schema(
        [
            ("kind", txt), ("time_s", f64), ("client", i64), ("group", i64), ("exchange", i64),
            ("outcome", txt),
            ("transmissions", pa.list_(pa.struct([("sent_s", f64), ("timer_s", f64)]))),
            ("rtt_s", f64), ("answered_copy", i64), ("cc", cc),
            ("link", i64), ("direction", txt), ("event", txt), ("size", i64), ("bytes", i64), ("packets", i64),
            ("flow", i64), ("seq", i64), ("len", i64), ("cwnd", i64), ("ssthresh", i64), ("in_flight", i64),
            ("pacing_rate", f64), ("bbr_state", txt), ("ca_state", txt), ("rto_s", f64),
        ]
    )  # fmt: skip


def _unit_schema():
    """The message workload's unit records as an Arrow schema (their ``event`` is a boolean:
    whether the message was a global event's)."""
    import pyarrow as pa

    f64, i64 = pa.float64(), pa.int64()
    return pa.schema(
        [
            ("t_s", f64), ("client", i64), ("node", i64), ("exchange", i64), ("unit", i64),
            ("units", i64), ("bytes", i64), ("event", pa.bool_()), ("outcome", pa.string()),
            ("retransmissions", i64), ("rto_first_s", f64), ("rtt_s", f64),
        ]
    )  # fmt: skip


def _read_json(source, schema, path):
    import pyarrow.json as pj

    opts = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        return pj.read_json(source, parse_options=opts)
    except Exception as e:  # noqa: BLE001 - pyarrow's ArrowInvalid: a line that is not JSON
        raise ValueError(f"{path}: not a coapcc trace ({e})") from None


def _read_table(path):
    """The trace file as Arrow tables (pyarrow's JSON reader: the records are parsed in C++,
    several times faster than ``json.loads`` line by line): the records of :func:`_schema`
    and the unit records of :func:`_unit_schema` (or None when there are none)."""
    if os.path.getsize(path) == 0:
        return _schema().empty_table(), None
    try:
        return _read_json(path, _schema(), path), None
    except ValueError:
        with open(path, "rb") as f:
            data = f.read()
        if b'"unit":' not in data:
            raise
    # A message workload's trace: its unit records (whose ``event`` is not a queue event's)
    # are read apart from the others.
    lines = data.splitlines(keepends=True)
    units = b"".join(line for line in lines if b'"unit":' in line)
    rest = b"".join(line for line in lines if b'"unit":' not in line)
    table = _read_json(io.BytesIO(rest), _schema(), path) if rest.strip() else _schema().empty_table()
    return table, _read_json(io.BytesIO(units), _unit_schema(), path)


def _np(col):
    """An Arrow column as numpy: int64 or float64 without nulls; with nulls, float (NaN)."""
    return col.to_numpy(zero_copy_only=False)


def read_trace(path: str | os.PathLike, clients: Iterable[int] | None = None) -> Trace:
    """Read a trace file (optionally only some clients) into a :class:`Trace`.

    >>> t = coapcc.read_trace("trace.jsonl", clients=[0])          # doctest: +SKIP
    >>> t.exchanges[["time_s", "rtt_s", "cc_rto_s"]]                 # doctest: +SKIP
    """
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    t, u = _read_table(path)
    kind = t.column("kind")
    is_queue = pc.fill_null(pc.equal(kind, "queue"), False)
    is_tcp = pc.and_(pc.invert(is_queue), pc.is_valid(t.column("flow")))
    is_ex = pc.invert(pc.or_(is_queue, is_tcp))
    ex_t = t.filter(is_ex)
    if clients is not None:
        ex_t = ex_t.filter(
            pc.is_in(ex_t.column("client"), value_set=pa.array(sorted(set(clients)), pa.int64()))
        )

    # exchanges
    txs = ex_t.column("transmissions")
    n_tx = pc.fill_null(pc.list_value_length(txs), 0).to_numpy()
    flat = pc.list_flatten(txs)
    sent, timer = _np(pc.struct_field(flat, "sent_s")), _np(pc.struct_field(flat, "timer_s"))
    start = np.cumsum(n_tx) - n_tx  # each exchange's first copy in the flat list
    has = n_tx > 0
    first_sent = np.full(len(n_tx), np.nan)
    first_timer = np.full(len(n_tx), np.nan)
    first_sent[has], first_timer[has] = sent[start[has]], timer[start[has]]
    cc = ex_t.column("cc")
    ex = {
        "time_s": _np(ex_t.column("time_s")),
        "client": _np(ex_t.column("client")),
        "group": _np(ex_t.column("group")),
        "exchange": _np(ex_t.column("exchange")),
        "outcome": ex_t.column("outcome").to_pandas(),
        "n_transmissions": n_tx.astype(np.int64),
        "first_sent_s": first_sent,
        "initial_timer_s": first_timer,
        "rtt_s": _np(ex_t.column("rtt_s")),
        "answered_copy": _np(ex_t.column("answered_copy")),
        "cc_rto_s": _np(pc.struct_field(cc, "rto_s")),
    }
    for est in ("strong", "weak"):
        e = pc.struct_field(cc, est)
        for k in _EST_KEYS:
            ex[f"{est}_{k}"] = _np(pc.struct_field(e, k))
    ex["slow_rto_s"] = _np(pc.struct_field(cc, "slow_rto_s"))
    state = pc.struct_field(cc, "state")
    # no state at all: None, as a table of records without one has it
    ex["state"] = state.to_pandas() if state.null_count < len(state) else [None] * len(state)
    ex["retained_s"] = _np(pc.struct_field(cc, "retained_s"))
    exchanges = pd.DataFrame(ex)

    # transmissions: one row per copy; a copy's timer expired when a later copy followed or
    # the exchange gave up
    par = np.repeat(np.arange(len(n_tx)), n_tx)
    copy_no = np.arange(len(flat)) - start[par]
    gave_up = (ex_t.column("outcome").to_numpy(zero_copy_only=False) == "give_up")[par]
    transmissions = pd.DataFrame(
        {
            "client": exchanges["client"].to_numpy()[par],
            "exchange": exchanges["exchange"].to_numpy()[par],
            "copy": copy_no.astype(np.int64),
            "sent_s": sent,
            "timer_s": timer,
            "expired": (copy_no < n_tx[par] - 1) | gave_up,
        },
        columns=["client", "exchange", "copy", "sent_s", "timer_s", "expired"],
    )

    # queue records: each direction's are in time order in the file; interleave them by time
    q_t = t.filter(is_queue).select(QUEUE_COLUMNS)
    q = q_t.to_pandas()
    if len(q):
        q = q.sort_values("time_s", kind="stable").reset_index(drop=True)
    q = q.astype({"time_s": float, "link": int, "bytes": int, "packets": int, "size": int})
    tcp = t.filter(is_tcp).select(TCP_COLUMNS).to_pandas()
    units = None
    if u is not None:
        if clients is not None:
            u = u.filter(pc.is_in(u.column("client"), value_set=pa.array(sorted(set(clients)), pa.int64())))
        units = u.select(UNIT_COLUMNS).to_pandas()
    return Trace(exchanges, transmissions, q, tcp, units)


def run_traced(config_json: str, trace_path: str, queue: bool = True) -> str:
    """Run the Rust simulator on ``config_json`` writing its trace to ``trace_path`` (with the
    queue records if ``queue``); returns the report JSON."""
    from . import _native

    return _native.simulate_json(config_json, str(trace_path), queue=queue)
