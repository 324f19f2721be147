"""``coapcc.mesh``: one run of ``coapcc mesh`` (the simulator with the message workload
over a multi-hop 802.15.4 mesh, ``coapcc-mesh``'s network).

(The module is ``coapcc.meshsim`` so that importing it never shadows the ``coapcc.mesh``
function.)

The model, its parameters and its mapping to Ancillotti & Bruno's Cooja study are in
``docs/mesh.md``. A run is a pure function of its configuration (seed included).

>>> r = coapcc.mesh("grid:4", "cocoa-plus:preset=ancillotti-cooja", "periodic:2",
...                 duration_s=600, seed=1)                              # doctest: +SKIP
>>> r.plr_mean, r.clients[["node", "hops", "plr"]]                      # doctest: +SKIP
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import _native
from .config import ConfigError, canonical_json

__all__ = ["mesh", "MeshResult", "mesh_config", "MeshConfig", "report_metrics", "DEFAULT_PRESET"]

#: Preset of a mesh configuration that names none (the Cooja study's, as ``coapcc mesh``).
DEFAULT_PRESET = "ancillotti-cooja"


def mesh_config(preset: str = DEFAULT_PRESET, **options: Any) -> dict:
    """The full mesh configuration of ``preset`` with ``options`` applied (by the simulator:
    ``coapcc_sim::mesh_command::MeshRun``).

    Options are top-level keys (``topology``, ``cc``, ``traffic``, ``message_bytes``,
    ``duration_s``, ``seed``...) or dotted keys into the sections, given as
    ``**{"radio.capture_db": None}`` or with ``__`` (``mac__queue_packets=4``). Raises
    :class:`~coapcc.ConfigError` (a ``ValueError``) naming an unknown key or preset.
    """
    dotted = {key.replace("__", "."): value for key, value in options.items()}
    try:
        return json.loads(_native.mesh_config_json(preset, json.dumps(dotted)))
    except _native.ConfigError as e:
        raise ConfigError(e.key, e.problem) from None


#: Short labels of the Cooja study's algorithms (the ``cc`` spec's name, before ``:``).
CC_LABELS = {"default": "CoAP-CC", "cocoa-plus": "CoCoA+"}


def _cc_label(cc: str) -> str:
    name = cc.split(":", 1)[0]
    return CC_LABELS.get(name, name)


def _grid_n(topology: str) -> float:
    kind, _, arg = topology.partition(":")
    if kind == "grid" and "x" not in arg:
        try:
            return float(int(arg))
        except ValueError:
            pass
    return math.nan


def _nodes(topology: str) -> int:
    kind, _, arg = topology.partition(":")
    try:
        if kind == "grid":
            n, _, m = arg.partition("x")
            return int(n) * int(m or n)
        if kind in ("chain", "ring"):
            return int(arg)
        if kind == "dumbbell":
            k, m = arg.split(",")
            return 2 * int(k) + int(m) + 2
    except ValueError:
        pass
    return 1


def _flatten(section: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """A section's fields as ``prefix_field`` columns, nested sections flattened the same way
    (``radio_mrm_capture_effect``); a section set to ``null`` is one column of ``None``."""
    out: dict[str, Any] = {}
    for k, v in section.items():
        if isinstance(v, Mapping):
            out.update(_flatten(v, f"{prefix}_{k}"))
        else:
            out[f"{prefix}_{k}"] = v
    return out


def _traffic_columns(traffic: str) -> dict:
    kind, _, arg = traffic.partition(":")
    row = {"pattern": kind, "load_kbps": math.nan, "tb_s": math.nan, "event_bytes": math.nan}
    try:
        if kind == "periodic":
            row["load_kbps"] = float(arg)
        elif kind == "events":
            tb, size = arg.split(",")
            row["tb_s"] = float(tb)
            row["event_bytes"] = float(size)
    except ValueError:
        pass
    return row


@functools.lru_cache(maxsize=256)
def _resolve_cc(spec: str) -> str:
    """The fully resolved form of an algorithm spec (``coapcc.resolve_algorithm``)."""
    return _native.resolve_algorithm(spec)


@dataclass(frozen=True)
class MeshConfig:
    """A fully resolved mesh configuration (seed included) as a run of an experiment holds
    it (``kind = "mesh"`` files): what :func:`mesh_config` returns, checked by the simulator
    (parameters, algorithm, topology, DODAG). It has the interface the sweep machinery uses
    of a :class:`~coapcc.SimConfig`: :meth:`from_dict`, :meth:`to_dict`, :meth:`with_seed`,
    ``seed``, :meth:`columns` (the dataset's configuration columns)."""

    data: Mapping[str, Any]

    kind = "mesh"

    @classmethod
    def from_dict(cls, fields: Mapping[str, Any]) -> MeshConfig:
        """From an experiment point: ``preset`` (default :data:`DEFAULT_PRESET`) and mesh
        parameters, top-level or dotted (``"mac.queue_packets"``). Raises
        :class:`~coapcc.ConfigError` naming the key for a configuration that cannot run."""
        fields = dict(fields)
        preset = fields.pop("preset", DEFAULT_PRESET)
        cfg = mesh_config(preset, **fields)
        try:
            _native.mesh_check_json(json.dumps(cfg))
        except _native.ConfigError as e:
            raise ConfigError(e.key, e.problem) from None
        return cls(cfg)

    @property
    def seed(self) -> int:
        return int(self.data["seed"])

    def with_seed(self, seed: int) -> MeshConfig:
        return MeshConfig({**self.data, "seed": int(seed)})

    def to_dict(self) -> dict:
        """The resolved configuration (a copy), as the simulator reads it."""
        return copy.deepcopy(dict(self.data))

    def config_json(self) -> str:
        """The simulator's input (``coapcc._native.mesh_json``)."""
        return json.dumps(self.data)

    def to_sim_config(self):
        """The same run as a :class:`coapcc.SimConfig` (``topology``, ``mesh``, ``workload``,
        ``messages``...): ``coapcc.simulate`` runs it with the metrics in
        :attr:`coapcc.SimResult.messages` (``coapcc mesh`` is that run's view)."""
        from .config import SimConfig

        try:
            params = json.loads(_native.mesh_sim_params_json(self.config_json()))
        except _native.ConfigError as e:
            raise ConfigError(e.key, e.problem) from None
        return SimConfig.from_dict(params)

    def config_hash(self) -> str:
        """16 hex digits identifying what the simulator runs, as a simulator run's
        :func:`coapcc.config.config_hash`: sha256 of
        ``{"mesh":CONFIG,"resolved":CC,"v":1}``, ``CONFIG`` the configuration (seed included)
        as canonical JSON and ``CC`` its algorithm spec fully resolved, so that a change of an
        algorithm's defaults is a different run, not one silently mixed into a dataset."""
        resolved = json.dumps(_resolve_cc(self.data["cc"]))
        text = f'{{"mesh":{canonical_json(self.data)},"resolved":{resolved},"v":1}}'
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        """The algorithm's short label (``CoAP-CC``, ``CoCoA+``, else the spec's name)."""
        return _cc_label(self.data["cc"])

    @property
    def cost(self) -> float:
        """Relative cost estimate (node-seconds), to start the longest runs first."""
        return float(_nodes(self.data["topology"]) * self.data["duration_s"])

    def columns(self) -> dict[str, Any]:
        """The dataset's configuration columns: every field, sections flattened
        (``mac_queue_packets``, ``radio_mrm_capture_effect``...), plus ``algorithm`` (the label), ``grid_n`` (n of an n×n
        grid, else NaN), and the traffic's ``pattern``, ``load_kbps``, ``tb_s`` and
        ``event_bytes`` (NaN where they do not apply)."""
        cols: dict[str, Any] = {}
        for k, v in self.data.items():
            if isinstance(v, Mapping):
                cols.update(_flatten(v, k))
            else:
                cols[k] = v
            if k == "topology":
                cols["grid_n"] = _grid_n(v)
            elif k == "cc":
                cols["algorithm"] = self.label
            elif k == "traffic":
                cols.update(_traffic_columns(v))
        cols["duration_s"] = float(cols["duration_s"])  # one type whether a file wrote 120 or 120.0
        return cols


_QUANTILES = ("count", "mean", "min", "p10", "p25", "median", "p75", "p90", "p95", "max")
#: Per-client counts summed over the clients of a run (the runs table's totals).
_CLIENT_TOTALS = (
    "frames",
    "retransmissions",
    "first_tx_at_sink",
    "early_retransmission_count",
    "retransmitted_frames",
)
_DISTS = ("rto_first_s", "rtt_strong_s", "rtt_weak_s", "unit_rtt_s")
_SCALARS = (
    "plr_mean",
    "plr_max",
    "plr_event_mean",
    "plr_event_max",
    "retransmissions_per_frame_mean",
    "retransmissions_per_frame_max",
    "retransmissions_per_message_mean",
    "early_retransmissions_mean",
    "early_retransmissions_max",
    "sim_time_s",
    "wall_s",
    "events",
)


def report_metrics(report: dict) -> dict[str, Any]:
    """The scalar metrics of a mesh report (``coapcc mesh --json``) as one flat row:
    ``clients`` (their number), totals over the clients (``frames``, ``retransmissions``,
    ``first_tx_at_sink``, ``early_retransmission_count``, ``retransmitted_frames``), the PLR, retransmission and early-retransmission summaries,
    ``sim_time_s``, ``wall_s``, ``events``, ``loss_<cause>`` counts and
    ``<distribution>_<quantile>`` of ``rto_first_s``, ``rtt_strong_s``, ``rtt_weak_s`` and
    ``unit_rtt_s`` (NaN where the report has none). :attr:`MeshResult.summary` and a mesh
    study's runs table (:func:`coapcc.mesh_study.run_summary`) are made of it."""
    row: dict[str, Any] = {"clients": len(report["clients"])}
    for k in _CLIENT_TOTALS:
        row[k] = sum(c.get(k, 0) for c in report["clients"]) if report["clients"] else 0
    for k in _SCALARS:
        v = report.get(k)
        row[k] = math.nan if v is None else v
    for cause, count in sorted(report.get("loss_causes", {}).items()):
        row[f"loss_{cause}"] = count
    for k in _DISTS:
        s = report.get(k) or {}
        for q in _QUANTILES:
            v = s.get(q)
            row[f"{k}_{q}"] = math.nan if v is None else float(v)
    return row


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

        row = {k: self.config[k] for k in ("topology", "cc", "traffic", "message_bytes", "seed")}
        return pd.DataFrame([{**row, **report_metrics(self.report)}])

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
    try:
        text = _native.mesh_json(json.dumps(cfg), None if trace is None else os.fspath(trace))
    except _native.ConfigError as e:
        raise ConfigError(e.key, e.problem) from None
    return MeshResult(report=json.loads(text), config=cfg)
