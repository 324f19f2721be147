"""Typed result of one simulation: tidy pandas tables over the simulator's report.

pandas is imported when a table is first asked for, not when the module is imported.
"""

from __future__ import annotations

import html
import json
import statistics
from functools import cached_property
from typing import Any

from .config import SimConfig

__all__ = ["SimResult", "FLOW_COLUMNS", "TCP_FLOW_COLUMNS", "LINK_COLUMNS"]

#: Per-flow columns of the simulator's report, in order.
FLOW_COLUMNS = (
    "client",
    "group",
    "cc",
    "fct_s",
    "transmissions",
    "retransmissions",
    "unnecessary_retransmissions",
    "failed_exchanges",
)
#: Per-flow columns of a TCP run (``transport = "tcp"``), after :data:`FLOW_COLUMNS`:
#: connection set-up time (s, empty if the handshake never completed), data segments sent,
#: of which retransmitted, RTO expiries, fast retransmits and payload bytes delivered.
TCP_FLOW_COLUMNS = (
    "setup_s",
    "segments_sent",
    "retransmitted_segments",
    "rto_expiries",
    "fast_retransmits",
    "bytes_delivered",
)
#: Per-direction link counters of the simulator's report (packet counts are appended as found).
LINK_COLUMNS = ("offered_bytes", "delivered_bytes", "buffer_drop_bytes", "error_loss_bytes", "busy_fraction")


def _flatten(prefix: str, obj: Any, out: dict) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            _flatten(f"{prefix}_{k}" if prefix else k, v, out)
    else:
        out[prefix] = obj


def link_fields(report: dict) -> dict:
    """``{"downlink_offered_bytes": ..., "uplink_busy_fraction": ..., ...}`` from a report."""
    out: dict = {}
    for direction in ("downlink", "uplink"):
        _flatten(direction, (report.get("links") or {}).get(direction, {}), out)
    return out


class SimResult:
    """The outcome of one run: typed accessors and tidy tables.

    Attributes:
        config: the :class:`~coapcc.SimConfig` that ran (with its seed).
        raw: the simulator's report, as parsed JSON (``coapcc simulate --json``); parsed on
            first access, so a result costs nothing until it is read.

    Tables (pandas DataFrames, built on first access):
        flows: one row per flow (client): ``seed, client, group, label, cc, fct_s,
            transmissions, retransmissions, unnecessary_retransmissions, failed_exchanges``.
        retransmissions_per_exchange: the histogram of completed exchanges by number of
            retransmissions (``retransmissions, exchanges, share``), ANRW Table 2 style.
        links: one row per direction (index ``downlink``, ``uplink``) with the byte and
            packet counters and ``busy_fraction``.

    >>> r = coapcc.simulate(clients=2, exchanges=5, seed=3)          # doctest: +SKIP
    >>> r.flows[["client", "fct_s"]]                                  # doctest: +SKIP
    >>> r.summary()["fct_median"]                                     # doctest: +SKIP
    """

    def __init__(self, config: SimConfig, raw: dict | None = None, *, text: str | None = None):
        if raw is None and text is None:
            raise TypeError("SimResult needs the report: raw (dict) or text (JSON)")
        self.config = config
        self._text = text
        if raw is not None:
            self.__dict__["raw"] = raw

    @cached_property
    def raw(self) -> dict:
        """The simulator's report (parsed on first access)."""
        return json.loads(self._text)

    @property
    def json(self) -> str:
        """The simulator's report as JSON text."""
        return self._text if self._text is not None else json.dumps(self.raw)

    # -- scalars ------------------------------------------------------------------------

    @property
    def seed(self) -> int:
        return int(self.raw.get("config", {}).get("seed", self.config.seed))

    @property
    def useful_fraction(self) -> float:
        return float(self.raw.get("useful_fraction", float("nan")))

    @property
    def sim_time_s(self) -> float:
        return float(self.raw.get("sim_time_s", float("nan")))

    @property
    def wall_s(self) -> float:
        """Wall-clock seconds the simulator took (the only non-deterministic number)."""
        return float(self.raw.get("wall_s", float("nan")))

    # -- tables -------------------------------------------------------------------------

    @cached_property
    def trace(self):
        """The run's trace (a :class:`~coapcc.Trace` read from ``config.trace``: exchanges,
        transmissions and, for a run with ``trace_queue=True``, the link queues over time in
        ``.queue``), or None if the run was not traced."""
        if not self.config.trace:
            return None
        from .trace import read_trace

        return read_trace(self.config.trace)

    @cached_property
    def flows(self):
        """One row per flow, with the run's ``seed`` and the group's ``label``, so the flows of
        several runs concatenate into one table (``pd.concat([r.flows for r in results])``)."""
        import pandas as pd

        rows = self.raw.get("flows", [])
        df = pd.DataFrame(rows)
        if not len(df.columns):
            df = pd.DataFrame(columns=list(FLOW_COLUMNS))
        tcp = self.config.transport == "tcp"
        if tcp:
            for c in TCP_FLOW_COLUMNS:
                if c not in df.columns:
                    df[c] = pd.Series([None] * len(df), dtype="float64" if c == "setup_s" else "Int64")
        labels = self.config.group_labels()
        if "group" in df.columns:
            df.insert(
                df.columns.get_loc("group") + 1,
                "label",
                [labels[g] if 0 <= g < len(labels) else str(g) for g in df["group"].astype(int)],
            )
        df.insert(0, "seed", pd.Series([self.seed] * len(df), dtype="uint64"))
        first = ["seed", "client", "group", "label"]
        cols = [c for c in (*first, *FLOW_COLUMNS, *(TCP_FLOW_COLUMNS if tcp else ())) if c in df.columns]
        cols = list(dict.fromkeys(cols)) + [c for c in df.columns if c not in cols]
        return df[cols]

    def groups_table(self, differences: bool = False):
        """Every group's configuration as the simulator resolved it, side by side (one row per
        group: ``label``, ``clients``, ``algorithm`` and every parameter); see
        :meth:`coapcc.SimConfig.groups_table`."""
        from .config import groups_table

        groups = (self.raw.get("config") or {}).get("groups") or []
        labels = self.config.group_labels()
        return groups_table(
            [(labels[i] if i < len(labels) else str(i), g["clients"], g["cc"]) for i, g in enumerate(groups)],
            differences,
        )

    @cached_property
    def retransmissions_per_exchange(self):
        import pandas as pd

        counts = [int(c) for c in self.raw.get("retransmissions_per_exchange", [])]
        total = sum(counts)
        return pd.DataFrame(
            {
                "retransmissions": list(range(len(counts))),
                "exchanges": counts,
                "share": [c / total if total else float("nan") for c in counts],
            }
        )

    @cached_property
    def links(self):
        import pandas as pd

        links = self.raw.get("links", {})
        rows = {}
        for direction in ("downlink", "uplink"):
            flat: dict = {}
            _flatten("", links.get(direction, {}), flat)
            rows[direction] = flat
        df = pd.DataFrame.from_dict(rows, orient="index")
        df.index.name = "direction"
        return df

    @cached_property
    def messages(self):
        """The message workload's metrics (runs with ``workload`` ``periodic``, ``events`` or
        ``none``): one row per client (``client``, ``messages``, ``lost``, ``plr``, loss causes,
        ``units``, ``retransmissions``, early retransmissions, first RTOs), or None for the
        flow workloads. The run-wide figures (``plr_mean``, ``rto_first_s``...) are in
        ``raw["messages"]`` and :meth:`summary`."""
        import pandas as pd

        m = self.raw.get("messages")
        if m is None:
            return None
        return pd.DataFrame(m["clients"]).rename_axis("client").reset_index()

    def fct(self):
        """Flow completion times in seconds (a pandas Series indexed by client)."""
        return self.flows.set_index("client")["fct_s"]

    def summary(self, by: str | None = None):
        """Headline numbers of the run (a pandas Series), or one row per value of ``by``
        (e.g. ``by="cc"`` for a mixed run) as a DataFrame.

        FCT statistics are over flows: median, p10, p25, p75, p90 (linear interpolation).
        """
        import pandas as pd

        if by is not None:
            rows = {key: _flow_summary(g) for key, g in self.flows.groupby(by, sort=False)}
            df = pd.DataFrame.from_dict(rows, orient="index").rename_axis(by)
            return df.astype({c: "int64" for c in _INT_SUMMARY if c in df.columns})
        s = _flow_summary(self.flows)
        s.update(
            {
                "useful_fraction": self.useful_fraction,
                "downlink_busy_fraction": self.raw.get("links", {}).get("downlink", {}).get("busy_fraction"),
                "uplink_busy_fraction": self.raw.get("links", {}).get("uplink", {}).get("busy_fraction"),
                "sim_time_s": self.sim_time_s,
                "wall_s": self.wall_s,
                "seed": self.seed,
            }
        )
        m = self.raw.get("messages")
        if m is not None:
            s.update({k: v for k, v in m.items() if not isinstance(v, (list, dict)) and v is not None})
        # object dtype: integer counts stay integers next to the float statistics
        return pd.Series(s, name=self.config.label, dtype=object)

    # -- display ------------------------------------------------------------------------

    def __repr__(self) -> str:
        flows = self.raw.get("flows", [])
        fcts = [f["fct_s"] for f in flows if f.get("fct_s") is not None]
        # the median of summary() and of the datasets (linear interpolation: the mean of the
        # two middle values for an even count)
        med = f"{statistics.median(fcts):.3f} s" if fcts else "n/a"
        c = self.config
        return (
            f"<SimResult {c.label} clients={c.clients} buffer={c.buffer_bytes} B "
            f"errors={c.errors} workload={c.workload} seed={self.seed}: "
            f"{len(flows)} flows, median FCT {med}>"
        )

    def _repr_html_(self) -> str:
        c = self.config
        head = (
            f"<b>SimResult</b> &mdash; {html.escape(c.label)}, {c.clients} clients, "
            f"buffer {c.buffer_bytes} B, errors {html.escape(c.errors)}, "
            f"workload {html.escape(c.workload)}, seed {self.seed}"
        )
        return (
            f"<div>{head}<br>{self.summary().to_frame().T.to_html(float_format=lambda x: f'{x:.4g}')}"
            f"<details><summary>configuration</summary><pre>"
            f"{html.escape(json.dumps(self.raw.get('config', {}), indent=2))}</pre></details></div>"
        )


#: Columns of :meth:`SimResult.summary` that are counts.
_INT_SUMMARY = (
    "flows",
    "transmissions",
    "retransmissions",
    "unnecessary_retransmissions",
    "failed_exchanges",
    "seed",
    *TCP_FLOW_COLUMNS[1:],
)


def _flow_summary(flows) -> dict:
    from .stats import describe

    d = describe(flows["fct_s"]) if "fct_s" in flows else describe([])
    out = {"flows": int(len(flows))}
    for k in ("median", "p10", "p25", "p75", "p90"):
        out[f"fct_{k}"] = d[k]
    for col in ("transmissions", "retransmissions", "unnecessary_retransmissions", "failed_exchanges"):
        if col in flows:
            out[col] = int(flows[col].sum())
    for col in TCP_FLOW_COLUMNS[1:]:
        if col in flows and flows[col].notna().any():
            out[col] = int(flows[col].sum())
    if "unnecessary_retransmissions" in flows and len(flows):
        out["unnecessary_retransmissions_median"] = float(flows["unnecessary_retransmissions"].median())
    return out
