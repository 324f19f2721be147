"""The simulator kind (``kind = "sim"``, the default): every run is one
:class:`~coapcc.SimConfig` run of the Rust simulator (``coapcc simulate``).

A run's record is the simulator's columnar report (:func:`coapcc.runner.native_columns`):
its flows as the detail rows, and as its row of metrics :func:`run_summary` (flow counts, FCT
percentiles of the finished flows, per-flow counters summed, the report's scalars and link
counters). Its identity is :func:`coapcc.config.config_hash` (the native configuration, seed
included, with every algorithm spec fully resolved). Its report is :mod:`coapcc.reports.sim`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from ..config import SimConfig, canonical_json, to_native
from ..records import encode_columns, flow_count, unpack
from ..result import FLOW_COLUMNS
from ..tables import TCP_RUN_FIELDS
from . import SEED_PLACEHOLDER, PointTemplate, StudyKind, register

__all__ = ["run_summary", "config_columns", "execute", "FLOW_FIELDS", "KIND"]

#: Per-flow columns of the simulator's report, in the order its records store them.
FLOW_FIELDS = (*FLOW_COLUMNS, "completed_exchanges")

_DIRECTIONS = ("downlink", "uplink")


def resolve(fields: Mapping[str, Any]) -> SimConfig:
    return SimConfig.from_dict(dict(fields))


#: Fully resolved specs by (transport, composed spec): grids repeat a few specs many times.
_RESOLVED: dict[tuple[str, str], str] = {}


def _resolved_specs(cfg: SimConfig) -> list[str]:
    """:meth:`SimConfig.resolved_specs`, each composed spec resolved once in this process."""
    keys = [(cfg.transport, s) for s, _ in cfg.algorithm_specs()]
    if all(k in _RESOLVED for k in keys):
        return [_RESOLVED[k] for k in keys]
    out = [str(s) for s in cfg.resolved_specs()]
    if len(_RESOLVED) > 4096:
        _RESOLVED.clear()
    _RESOLVED.update(zip(keys, out))
    return out


def template(cfg: SimConfig) -> PointTemplate:
    """The run's input (the simulator's native JSON, canonical) and identity
    (:func:`coapcc.config.config_hash`'s material), the seed open."""
    specs = _resolved_specs(cfg)
    native = to_native(cfg)
    native.pop("trace", None)
    native["seed"] = SEED_PLACEHOLDER
    text = canonical_json(native)
    return PointTemplate(input=text, identity=f'{{"native":{text},"resolved":{canonical_json(specs)},"v":1}}')


def config_columns(cfg: SimConfig) -> dict[str, Any]:
    """Flat configuration columns of a run (see :meth:`SimConfig.flat`), with ``algorithm``
    the label and ``algorithm_spec`` the specs as run (``"10x default:preset=..."`` per group
    for mixed runs)."""
    cols = cfg.flat()
    cols["algorithm"] = cfg.label
    cols["algorithm_spec"] = " + ".join(f"{n}x {s}" if cfg.groups else s for s, n in cfg.algorithm_specs())
    return cols


def cost(cfg: SimConfig) -> float:
    """Flows x exchanges."""
    return float(cfg.clients * cfg.exchanges)


def execute(runner, config_json: str, config_hash: str, common_json: str) -> tuple:
    """Worker entry point: run one configuration; returns its record
    (:func:`coapcc.records.encode_columns`) and its number of flows."""
    from ..runner import run_columns

    cols = run_columns(runner, config_json)
    if cols.get("config_json") is None:
        cols["config_json"] = canonical_json(json.loads(config_json))
    flow_cols = cols.get("flows") or {k: [] for k in FLOW_FIELDS}
    keys = [k for k in FLOW_FIELDS if k in flow_cols] + [k for k in flow_cols if k not in FLOW_FIELDS]
    if keys != list(flow_cols):
        flow_cols = {k: flow_cols[k] for k in keys}
    cols["flows"] = flow_cols
    run = run_summary(cols, flow_cols, cols.get("flow_types") or {})
    return encode_columns(config_hash, common_json, cols, run=run), flow_count(cols)


def run_summary(cols: dict, flow_cols: dict | None = None, types: dict | None = None) -> dict:
    """A run's row of metrics from its columnar report ``cols``
    (:func:`coapcc.runner.native_columns`): resolved configuration, flow counts, FCT
    percentiles of the finished flows, per-flow counters summed, the report's scalars and link
    counters, and the coapcc version. ``flow_cols`` and ``types`` are ``cols``'s flows and
    packed types when the caller already has them."""
    from .. import __version__
    from ..result import link_fields

    if flow_cols is None:
        flow_cols = cols.get("flows") or {}
    if types is None:
        types = cols.get("flow_types") or {}
    if types:  # packed columns (simulate_columns(packed=True)): their values
        flow_cols = dict(flow_cols)
        for k, t in types.items():
            if k in flow_cols:
                flow_cols[k] = unpack(flow_cols[k], t)
    n = len(next(iter(flow_cols.values()))) if flow_cols else 0
    fcts = [x for x in flow_cols.get("fct_s", ()) if x is not None and x == x]
    fct = _fct_percentiles(fcts)
    run: dict[str, Any] = {
        "config_json": cols.get("config_json"),
        "flows": n,
        "finished_flows": len(fcts),
    }
    for k in ("median", "p10", "p25", "p75", "p90"):
        run[f"fct_{k}"] = fct[k]
    for k in (
        "transmissions",
        "retransmissions",
        "unnecessary_retransmissions",
        "failed_exchanges",
        "completed_exchanges",
    ):
        col = flow_cols.get(k, ())
        run[k] = int(sum(col)) if k in types or None not in col else int(sum(int(x or 0) for x in col))
    for k in TCP_RUN_FIELDS if "segments_sent" in flow_cols else ():  # a UDP run's row is unchanged
        run[k] = int(sum(int(x or 0) for x in flow_cols[k]))
    run["retransmissions_per_exchange"] = [int(x) for x in cols.get("retransmissions_per_exchange") or ()]
    for k in ("useful_fraction", "sim_time_s", "wall_s", "events", "truncated"):
        run[k] = cols.get(k)
    links = cols.get("links") or {}
    if all(
        type(links.get(d)) is dict and not any(type(v) is dict for v in links[d].values())
        for d in _DIRECTIONS
    ):
        for d in _DIRECTIONS:  # flat counters (the simulator's): link_fields without its recursion
            run.update({f"{d}_{k}": v for k, v in links[d].items()})
    else:
        run.update(link_fields(cols))
    run["coapcc_version"] = __version__
    return run


def _fct_percentiles(values: list) -> dict:
    """``median, p10, p25, p75, p90`` of ``values`` exactly as :func:`coapcc.stats.describe`
    computes them (numpy's ``linear`` method: virtual index ``(n - 1) q``, numpy's two-sided
    lerp), in plain Python: numpy's per-call overhead was a third of a sweep's encoding time.
    ``tests/python/test_sweep_robust.py`` checks bitwise equality with ``describe``."""
    a = sorted(v for v in values if v == v)  # NaN dropped, as describe does
    n = len(a)
    out = {}
    for p in (10, 25, 50, 75, 90):
        key = "median" if p == 50 else f"p{p}"
        if n == 0:
            out[key] = float("nan")
            continue
        vi = (n - 1) * (p / 100)
        lo = math.floor(vi)
        if vi >= n - 1:
            out[key] = float(a[-1])
            continue
        x, y = float(a[lo]), float(a[lo + 1])
        g = vi - lo
        d = y - x
        out[key] = y - d * (1 - g) if g >= 0.5 else x + d * g
    return out


KIND = register(
    StudyKind(
        name="sim",
        title="simulator runs (coapcc simulate): CoAP over the constrained link",
        resolve=resolve,
        template=template,
        execute="coapcc.kinds.sim:execute",
        columns=config_columns,
        cost=cost,
        report="coapcc.reports.sim:build",
    )
)
