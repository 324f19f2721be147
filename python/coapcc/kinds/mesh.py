"""The mesh kind (``kind = "mesh"``, ``experiments/ancillotti.toml``): every run is one
multi-hop 802.15.4 mesh run (:class:`coapcc.meshsim.MeshConfig`, ``coapcc mesh``).

A run's record has the run's metrics as its row (:func:`run_summary`: the report's scalars,
loss causes and distribution quantiles) and its clients as the detail rows (a mesh dataset's
``flows``, also ``Results.clients``). A run that several blocks share is run once and lists
them in ``blocks``. Its report is :mod:`coapcc.reports.mesh`. Everything particular to the
mesh study is here, so that a change of how a mesh run is configured changes this entry only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from ..config import canonical_json
from . import SEED_PLACEHOLDER, PointTemplate, StudyKind, register

__all__ = ["run_summary", "execute", "KIND"]


def resolve(fields: Mapping[str, Any]):
    from ..meshsim import MeshConfig

    return MeshConfig.from_dict(fields)


def template(cfg) -> PointTemplate:
    """Input: the configuration as JSON; identity: :meth:`MeshConfig.config_hash`'s material."""
    from ..meshsim import _resolve_cc

    data = {**cfg.data, "seed": SEED_PLACEHOLDER}
    resolved = json.dumps(_resolve_cc(cfg.data["cc"]))
    return PointTemplate(
        input=json.dumps(data),
        identity=f'{{"mesh":{canonical_json(data)},"resolved":{resolved},"v":1}}',
    )


def columns(cfg) -> dict[str, Any]:
    return cfg.columns()


def run_summary(report: dict, cpu_s: float) -> dict:
    """A mesh run's row of metrics from its report (``coapcc mesh --json``): ``config_json``
    (the resolved configuration, canonical JSON), ``cc_resolved``, ``clients``, the scalar
    metrics, ``loss_<cause>`` counts, ``<distribution>_<quantile>`` of the RTO and RTT
    distributions (NaN where absent), ``cpu_s`` (the run's CPU seconds) and the coapcc version."""
    from .. import __version__
    from ..meshsim import report_metrics

    row: dict[str, Any] = {
        "config_json": canonical_json(report["config"]),
        "cc_resolved": report.get("cc_resolved"),
        **report_metrics(report),
    }
    row["cpu_s"] = cpu_s
    row["coapcc_version"] = __version__
    return row


def execute(runner, config_json: str, config_hash: str, common_json: str) -> tuple:
    """Worker entry point of a mesh run: run the configuration (the simulator,
    ``coapcc._native.mesh_json``, or ``runner``: a callable or ``"module:function"`` taking the
    configuration's JSON and returning the report's JSON) and return its record
    (:func:`run_summary` as the run's row, the clients as its rows) and its number of clients."""
    from ..records import encode_columns
    from ..runner import columns_from_report, get_runner

    t0 = time.thread_time()
    if runner is None:
        from .. import _native

        text = _native.mesh_json(config_json, None)
    else:
        text = get_runner(runner)(config_json)
    cpu_s = time.thread_time() - t0
    report = json.loads(text)
    cols = {"flows": columns_from_report({"flows": report["clients"]})["flows"]}
    record = encode_columns(config_hash, common_json, cols, run=run_summary(report, cpu_s))
    return record, len(report["clients"])


KIND = register(
    StudyKind(
        name="mesh",
        title="802.15.4 mesh runs (coapcc mesh): Ancillotti & Bruno's Cooja scenarios",
        resolve=resolve,
        template=template,
        execute="coapcc.kinds.mesh:execute",
        columns=columns,
        cost=lambda cfg: cfg.cost,
        report="coapcc.reports.mesh:build",
        lists_blocks=True,
    )
)
