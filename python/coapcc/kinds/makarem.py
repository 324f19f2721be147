"""Makarem's studies (``kind = "makarem-studies"``, ``experiments/makarem21.toml``): the
chapters 3-4 Markov models (Table 4.1, the model curves and the models against simulation),
the chapter 5 RTT scenarios and the chapter 6 residual-bandwidth runs, and their sensitivity
to the choices the thesis leaves open, as runs of one sweep.

The file keeps the thesis's sections (``[models]``, ``[rtt_scenarios]``, ``[resbw]``,
``[sensitivity]``); :mod:`coapcc.kinds.makarem_blocks` checks them (every value's type and
range, with the key at fault) and turns them into blocks, so the sweep, the dataset,
``--quick`` (``[quick.resbw] duration_s = 3600``...), resume and the report are those of every
other study. A run is one of these ``part`` s, and its row of the dataset is a row of the
study's table (:mod:`coapcc.models.tables`, which the claims and the report read):

* ``table-4.1``: one row of Table 4.1 (``row``), the models against the printed values;
* ``model``: one point of the chapter 3 curves (``model`` = ``bernoulli`` or ``gilbert``,
  ``p``, ``r``, ``rto``);
* ``model-sim``: the simulator on a model's loss process and timers (``model`` =
  ``bernoulli``, ``gilbert`` or ``ge``; ``sim_messages`` messages), with the model's values
  beside (``P_L``, ``E_N``, ``D_s``, ``GP``: ``*_model``, ``*_sim``, ``*_ci95``);
* ``rtt``: one algorithm (``cc``) on one Table 5.1 scenario: spurious retransmissions, RMSE
  of RTO against RTT, ...; ``rtt-trace``: its first ``count`` messages as rows (``i, t_s,
  trace_rtt_ms, rto_ms, retransmissions``);
* ``resbw``: one residual-bandwidth run (goodput, overhead, application loss);
  ``resbw-trace``: every transmission of a short run as rows.

The RTT replay's options (``late_ack``, ``ack_rtt``, ``retransmit_timer``,
``rtt_consumption``) and the residual-bandwidth simulator's (those and ``rtt_draw``,
``loss_rule``) are fields of the runs: the file's section sets them for every run of the
section, a ``[sensitivity]`` entry changes one. A run's row names the choices it ran with.

Seeds are shared (``seeds = "shared"``): replication r runs with seed ``seed + r`` whatever
the algorithm, so every algorithm meets the same RTT scenario and the same bandwidth
evolution. Algorithms this build's registry does not know are left out, with a note in the
report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config import ConfigError, canonical_json
from ..models.tables import RESBW_OPTIONS, RTT_OPTIONS, TABLE_4_1, cc_label, family
from . import SEED_PLACEHOLDER, PointTemplate, StudyKind, register
from .makarem_blocks import (
    DURATION_MAX_S,
    MESSAGES_MAX,
    R_MAX,
    _int,
    _list,
    _num,
    _prob,
    _str,
    check_options,
    expand,
)

__all__ = ["MakaremRun", "expand", "execute", "KIND", "R_MAX", "MESSAGES_MAX"]

_PARTS = ("table-4.1", "model", "model-sim", "rtt", "rtt-trace", "resbw", "resbw-trace")
_MODELS = ("bernoulli", "gilbert", "ge")
_OPTIONS = frozenset(RTT_OPTIONS) | frozenset(RESBW_OPTIONS)


# -- one run --------------------------------------------------------------------------------------


_FIELDS = {
    "table-4.1": {"row"},
    "model": {"model", "p", "q", "r", "rto", "rtt", "Z", "Y"},
    "model-sim": {"model", "p", "q", "k", "h", "ge_row", "r", "rto", "rtt", "sim_messages"},
    "rtt": {"cc", "scenario", "len", "trace", "study_base", "study", "variant", *RTT_OPTIONS},
    "rtt-trace": {"cc", "scenario", "len", "trace", "first", "count", *RTT_OPTIONS},
    "resbw": {"cc", "mean_resbw", "half_width", "resbw", "good", "good_mean_s", "bad_mean_s", "rtt_ms", "duration_s", "study_base", "set", "variant", *RESBW_OPTIONS},
    "resbw-trace": {"cc", "resbw", "good", "good_mean_s", "bad_mean_s", "rtt_ms", "duration_s", "set", "variant", *RESBW_OPTIONS},
}  # fmt: skip


def _check_model(d: dict) -> None:
    part = d["part"]
    models = _MODELS if part == "model-sim" else _MODELS[:2]
    if d.get("model") not in models:
        raise ConfigError("model", f"expected one of {', '.join(models)}, got {d.get('model')!r}")
    if "ge_row" in d:
        row = _list("ge_row", d.pop("ge_row"), _prob)
        if len(row) != 4:
            raise ConfigError("ge_row", f"expected [p, q, k, h], got {row!r}")
        d.update(zip(("p", "q", "k", "h"), row))
    need = {"bernoulli": ("p",), "gilbert": ("p", "q"), "ge": ("p", "q", "k", "h")}[d["model"]]
    for k in ("p", "q", "k", "h"):
        if k in need:
            _prob(k, d.get(k))
        else:
            d.pop(k, None)
    _int("r", d.get("r"), 0, R_MAX)
    _num("rto", d.get("rto"), 0.0, 3600.0, lo_open=True)
    _num("rtt", d.get("rtt"), 0.0, 3600.0, lo_open=True)
    if part == "model-sim":
        _int("sim_messages", d.get("sim_messages"), 20, MESSAGES_MAX)
    else:
        for k, default in (("Z", 100.0), ("Y", 48.0)):
            d[k] = _num(k, d.get(k, default), 0.0, 1e9, lo_open=True)


@dataclass(frozen=True)
class MakaremRun:
    """One run: ``data`` holds ``part``, its fields and ``seed``."""

    data: Mapping[str, Any]

    @classmethod
    def from_dict(cls, fields: Mapping[str, Any]) -> MakaremRun:
        d = dict(fields)
        part = d.get("part")
        if part not in _PARTS:
            raise ConfigError("part", f"expected one of {', '.join(_PARTS)}, got {part!r}")
        for k in d:
            if k not in _FIELDS[part] | {"part", "seed"}:
                raise ConfigError(k, f"not a field of a {part!r} run", sorted(_FIELDS[part]))
        if part == "table-4.1":
            _int("row", d.get("row"), 1, len(TABLE_4_1))
        elif part in ("model", "model-sim"):
            _check_model(d)
        else:
            from .. import _native

            try:
                _native.resolve_algorithm(_str("cc", d.get("cc")))
            except ValueError as e:
                raise ConfigError("cc", str(e).splitlines()[0]) from None
            check_options("rtt" if part.startswith("rtt") else "resbw", d)
            if part != "rtt-trace":
                _str("variant", d.setdefault("variant", "thesis"))
        if part == "rtt":
            _str("study", d.setdefault("study", "compare"))
        if part in ("rtt", "rtt-trace"):
            _int("scenario", d.get("scenario"), 1, 40)
            _int("len", d.get("len", 100_000), 10, MESSAGES_MAX)
            if part == "rtt-trace":
                _int("first", d.get("first", 0), 0, MESSAGES_MAX)
                _int("count", d.get("count", 1000), 1, 100_000)
        if part in ("resbw", "resbw-trace"):
            if "resbw" not in d:
                m = _num("mean_resbw", d.get("mean_resbw"), 0.0, 1e6)
                hw = _num("half_width", d.get("half_width", 0.1), 0.0, 1e6)
                d["resbw"] = f"fixed:{m:g}" if hw == 0 else f"uniform:{max(0.0, m - hw):g},{m + hw:g}"
            _num("duration_s", d.get("duration_s"), 0.0, DURATION_MAX_S, lo_open=True)
        d.setdefault("seed", 1)
        return cls(d)

    @property
    def seed(self) -> int:
        return int(self.data["seed"])

    def with_seed(self, seed: int) -> MakaremRun:
        return MakaremRun({**self.data, "seed": int(seed)})

    def to_dict(self) -> dict:
        return dict(self.data)


def template(run: MakaremRun) -> PointTemplate:
    data = {**run.data, "seed": SEED_PLACEHOLDER}
    text = canonical_json(data)
    resolved = ""
    if "cc" in data:
        from .. import _native

        resolved = json.dumps(_native.resolve_algorithm(data["cc"]))
    return PointTemplate(input=text, identity=f'{{"makarem":{text},"resolved":{resolved or "null"},"v":1}}')


def columns(run: MakaremRun) -> dict[str, Any]:
    """The run's row of the study table (:mod:`coapcc.models.tables`) as far as its
    configuration says: every field but the simulators' choices (a run's row names those as
    they ran: :func:`execute`), ``table-4.1``'s ``p, q, k, h, r``, ``cc`` as its short label
    (the name for chapter 5, :func:`~coapcc.models.tables.cc_label` for chapter 6) with
    ``cc_spec`` the spec, ``family`` (chapter 6), ``algorithm`` (the spec without the
    preset: the report's series) and ``setting`` (what a study varies: the spec beyond
    ``study_base``)."""
    d = run.data
    cols = {
        k: (canonical_json(v) if isinstance(v, (list, dict)) else v)
        for k, v in d.items()
        if k not in _OPTIONS
    }
    part = d["part"]
    if part == "table-4.1":
        cols.update(zip(("p", "q", "k", "h"), TABLE_4_1[d["row"] - 1][:4]))
        cols["r"] = 3
    elif part == "model" and d["model"] == "bernoulli":
        cols["q"] = 1.0 - d["p"]
    cc = d.get("cc")
    if cc:
        cols["cc"] = cc.partition(":")[0] if part.startswith("rtt") else cc_label(cc)
        cols["cc_spec"] = cc
        if part.startswith("resbw"):
            cols["family"] = family(cc)
    cols["algorithm"] = cc.replace(":preset=makarem2021", "") if cc else d.get("model", "")
    base = d.get("study_base")
    cols["setting"] = cc[len(base) + 1 :].replace(",", ", ") if base and cc and cc.startswith(base) else ""
    return cols


def cost(run: MakaremRun) -> float:
    d = run.data
    return float(d.get("sim_messages") or d.get("len") or d.get("duration_s") or 1.0)


def execute(runner, config_json: str, config_hash: str, common_json: str) -> tuple:
    """Run one part (``runner`` is ignored: these runs are the studies' own simulators and
    models)."""
    from .. import __version__
    from ..models import tables
    from ..records import encode_columns

    d = json.loads(config_json)
    part, seed = d["part"], int(d["seed"])
    run: dict[str, Any] = {"config_json": canonical_json(d)}
    rows: dict[str, list] = {}
    if part == "table-4.1":
        run.update(tables.table_4_1_row(d["row"]))
    elif part == "model":
        kw = {k: d[k] for k in ("r", "rto", "rtt", "Z", "Y")}
        run.update(tables.model_row(d["model"], d["p"], d.get("q"), **kw))
    elif part == "model-sim":
        from ..models import loss
        from ..models.validate import simulate_model

        params = {k: d[k] for k in ("p", "q", "k", "h", "r", "rto", "rtt") if k in d}
        s = simulate_model(d["model"], int(d["sim_messages"]), seed=seed, **params)
        for key in ("P_L", "E_N", "D_s", "GP"):
            for what in ("model", "sim", "ci95"):
                run[f"{key}_{what}"] = float(s[key][what])
            run[f"{key}_within_ci"] = abs(s[key]["sim"] - s[key]["model"]) <= s[key]["ci95"]
        if d["model"] == "ge":
            kw = {k: d[k] for k in ("r", "rto", "rtt")}
            run["P_L_approx"] = float(loss.ge_approx(d["p"], d["q"], d["k"], d["h"], **kw)["P_L"])
    elif part == "rtt":
        from ..models.studies import rtt_scenarios

        opts = {k: d[k] for k in RTT_OPTIONS if k in d}
        df = rtt_scenarios(
            [d["cc"]], [d["scenario"]], seed=seed, len=d.get("len"), trace=d.get("trace"), **opts
        )
        row = tables.rtt_row(df.iloc[0].to_dict(), opts)
        run.update({k: _plain(v) for k, v in row.items()})
    elif part == "rtt-trace":
        from ..models.studies import rtt_trace

        opts = {k: d[k] for k in RTT_OPTIONS if k in d}
        df = rtt_trace(
            d["cc"], d["scenario"], seed=seed, first=d.get("first", 0), count=d.get("count", 1000),
            len=d.get("len"), trace=d.get("trace"), **opts,
        )  # fmt: skip
        # the message's RTT as ``trace_rtt_ms``: a flows field must not share a name with a
        # configuration column of any part (``rtt_ms``, the chapter 6 runs' RTT distribution)
        rows = {("trace_rtt_ms" if k == "rtt_ms" else k): [_plain(x) for x in df[k]] for k in df.columns}
        run["messages"] = len(df)
    else:
        from ..models.studies import resbw

        r = resbw(
            d["cc"], d["resbw"], good=d.get("good"), good_mean_s=d.get("good_mean_s", 60.0),
            bad_mean_s=d.get("bad_mean_s", 5.0), rtt_ms=d["rtt_ms"], duration_s=d["duration_s"],
            seed=seed, trace=part == "resbw-trace", **{k: d[k] for k in RESBW_OPTIONS if k in d},
        )  # fmt: skip
        trace = r.pop("trace", None) or []
        run.update({k: _plain(v) for k, v in tables.resbw_row(r).items()})
        if trace:
            keys = list(trace[0])
            rows = {k: [_plain(t.get(k)) for t in trace] for k in keys}
    run["coapcc_version"] = __version__
    n = len(next(iter(rows.values()))) if rows else 0
    return encode_columns(config_hash, common_json, {"flows": rows}, run=run), n


def _plain(v):
    if hasattr(v, "item"):
        return v.item()
    return v


KIND = register(
    StudyKind(
        name="makarem-studies",
        title="Makarem 2021: loss models, RTT scenarios and residual-bandwidth runs",
        resolve=MakaremRun.from_dict,
        template=template,
        execute="coapcc.kinds.makarem:execute",
        columns=columns,
        cost=cost,
        report="coapcc.reports.makarem:build",
        series="algorithm",
        sections=("models", "rtt_scenarios", "resbw", "sensitivity"),
        expand=expand,
        seeds="shared",
    )
)
