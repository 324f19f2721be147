"""``coapcc.mesh``: one run of the multi-hop 802.15.4 mesh study (``coapcc mesh``: the
general simulator's engine over ``coapcc-mesh``'s network).

(The module is ``coapcc.meshsim`` so that importing it never shadows the ``coapcc.mesh``
function.)

The model, its parameters and its mapping to Ancillotti & Bruno's Cooja study are in
``docs/mesh.md``. A run is a pure function of its configuration (seed included).

>>> r = coapcc.mesh("grid:4", "cocoa-plus:preset=ancillotti-cooja", "periodic:2",
...                 duration_s=600, seed=1)                              # doctest: +SKIP
>>> r.plr_mean, r.clients[["node", "hops", "plr"]]                      # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from . import _native

__all__ = ["mesh", "MeshResult", "mesh_config"]


def mesh_config(preset: str = "ancillotti-cooja", **options: Any) -> dict:
    """The full mesh configuration of ``preset`` with ``options`` applied.

    Options are top-level keys (``topology``, ``cc``, ``traffic``, ``message_bytes``,
    ``duration_s``, ``seed``...) or dotted keys into the sections, given as
    ``**{"radio.capture_db": None}`` or with ``__`` (``mac__queue_packets=4``). Raises
    ``ValueError`` naming an unknown key.
    """
    cfg = json.loads(_native.mesh_config_json(preset))
    for key, value in options.items():
        parts = key.replace("__", ".").split(".")
        node = cfg
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                raise ValueError(f"unknown mesh parameter {key!r}")
            node = node[part]
        if parts[-1] not in node:
            raise ValueError(f"unknown mesh parameter {key!r}; valid here: {', '.join(sorted(node))}")
        node[parts[-1]] = value
    return cfg


@dataclass(frozen=True)
class MeshResult:
    """The report of one mesh run, with tidy tables.

    ``report`` is the simulator's JSON object (as ``coapcc mesh --json``); ``clients`` has one
    row per client; ``summary`` one row of scalar metrics; ``loss_causes`` one row per cause.
    """

    report: dict
    config: dict = field(repr=False)

    @property
    def plr_mean(self) -> float:
        """Mean per-client packet loss ratio."""
        return self.report["plr_mean"]

    @property
    def plr_max(self) -> float:
        """Largest per-client packet loss ratio."""
        return self.report["plr_max"]

    @property
    def clients(self):
        """Per-client table (pandas DataFrame): node, hops, messages, lost, plr, causes,
        retransmissions per frame, early retransmissions, RTOs of first transmissions."""
        import pandas as pd

        return pd.DataFrame(self.report["clients"])

    @property
    def summary(self):
        """One-row table of the run's scalar metrics and its main parameters."""
        import pandas as pd

        r = self.report
        row = {
            "topology": self.config["topology"],
            "cc": self.config["cc"],
            "traffic": self.config["traffic"],
            "message_bytes": self.config["message_bytes"],
            "seed": self.config["seed"],
            "clients": len(r["clients"]),
            "plr_mean": r["plr_mean"],
            "plr_max": r["plr_max"],
            "plr_event_mean": r["plr_event_mean"],
            "plr_event_max": r["plr_event_max"],
            "retransmissions_per_frame_mean": r["retransmissions_per_frame_mean"],
            "retransmissions_per_frame_max": r["retransmissions_per_frame_max"],
            "retransmissions_per_message_mean": r["retransmissions_per_message_mean"],
            "early_retransmissions_mean": r["early_retransmissions_mean"],
            "early_retransmissions_max": r["early_retransmissions_max"],
            "sim_time_s": r["sim_time_s"],
            "wall_s": r["wall_s"],
        }
        for name in ("rto_first_s", "rtt_strong_s", "rtt_weak_s"):
            s = r[name] or {}
            for q in ("mean", "median", "p90", "max"):
                row[f"{name}_{q}"] = s.get(q)
        return pd.DataFrame([row])

    @property
    def loss_causes(self):
        """One row per loss cause: ``cause``, ``count``, ``unit`` (message or packet)."""
        import pandas as pd

        units = {"no_caching": "message", "coap_give_up": "message"}
        return pd.DataFrame(
            [
                {"cause": k, "count": v, "unit": units.get(k, "packet")}
                for k, v in self.report["loss_causes"].items()
            ]
        )


def mesh(
    topology: str = "grid:6",
    cc: str = "default:preset=ancillotti-cooja",
    traffic: str = "periodic:1",
    *,
    preset: str = "ancillotti-cooja",
    trace: str | os.PathLike | None = None,
    **options: Any,
) -> MeshResult:
    """Run one mesh simulation and return a :class:`MeshResult`.

    ``topology`` is ``grid:N``, ``grid:NxM``, ``chain:N``, ``ring:N``, ``dumbbell:K,M`` or
    ``file:PATH``; ``cc`` any registry algorithm ``NAME[:key=value,...]``; ``traffic``
    ``periodic:LOAD_KBPS`` or ``events:TB_S,SIZE_B``. Other options as in
    :func:`mesh_config` (``duration_s=600, seed=3, **{"mac.queue_packets": 4}``). Raises
    ``ValueError`` with a one-line message for a configuration that cannot run. The
    simulator runs in this process with the GIL released.
    """
    cfg = mesh_config(preset, topology=topology, cc=cc, traffic=traffic, **options)
    text = _native.mesh_json(json.dumps(cfg), None if trace is None else os.fspath(trace))
    return MeshResult(report=json.loads(text), config=cfg)
