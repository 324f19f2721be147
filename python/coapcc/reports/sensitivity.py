"""The sensitivity study's report: the gain table, the figure and the summary of conclusions."""

from __future__ import annotations

import json
from pathlib import Path

# The flows' columns the analysis reads (the rest of the dataset stays on disk).
_FLOW_COLUMNS = (
    "part",
    "error_profile",
    "clock",
    "burst_value",
    "workload",
    "label",
    "seed",
    "fct_s",
    "retransmissions",
)


def build(path, log=None, **_) -> Path:
    from ..dataset import load_results
    from ..sensitivity import analyse, write_outputs

    path = Path(path)
    res = load_results(path, flow_columns=_FLOW_COLUMNS)
    meta = json.loads((path / "experiment.json").read_text())
    name = meta.get("name", "sensitivity")
    cmd = "coapcc reproduce sensitivity" + (" --quick" if name.endswith("-quick") else "")
    return write_outputs(analyse(res.runs, res.flows, meta.get("base")), path, cmd)
