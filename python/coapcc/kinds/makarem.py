"""Makarem's studies (``kind = "makarem-studies"``, ``experiments/makarem21.toml``): the
chapters 3-4 Markov models against simulation, the chapter 5 RTT scenarios and the chapter 6
residual-bandwidth runs, as runs of one sweep.

The file keeps the thesis's sections (``[models]``, ``[rtt_scenarios]``, ``[resbw]``); this
kind checks them (every value's type and range, with the key at fault) and turns them into
blocks (:func:`expand`), so the sweep, the dataset, ``--quick`` (``[quick.resbw]
duration_s = 3600``...), resume and the report are those of every other study. A run is one
of these ``part`` s:

* ``model-sim``: the simulator on a model's loss process and timers (``model`` =
  ``bernoulli``, ``gilbert`` or ``ge``; ``messages`` messages), with the model's values beside
  (``P_L``, ``E_N``, ``D_s``, ``GP``: ``*_model``, ``*_sim``, ``*_ci95``);
* ``rtt``: one algorithm (``cc``) on one Table 5.1 scenario: spurious retransmissions, RMSE
  of RTO against RTT, ...; ``rtt-trace``: its first ``count`` messages as rows;
* ``resbw``: one residual-bandwidth run (goodput, overhead, application loss);
  ``resbw-trace``: every transmission of a short run as rows.

Seeds are shared (``seeds = "shared"``): replication r runs with seed ``seed + r`` whatever
the algorithm, so every algorithm meets the same RTT scenario and the same bandwidth
evolution. The analytical curves need no run: the report draws them from ``[models]``.
Algorithms this build's registry does not know are left out, with a note in the report.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config import ConfigError, canonical_json
from . import SEED_PLACEHOLDER, PointTemplate, StudyKind, register

__all__ = ["MakaremRun", "expand", "execute", "KIND", "R_MAX", "MESSAGES_MAX"]

#: Largest MAX_RETRANSMIT of the models (a chain has r + 1 states per phase; the thesis uses 1-9).
R_MAX = 20
#: Most messages or transmissions one run may simulate.
MESSAGES_MAX = 10_000_000
#: Longest simulated residual-bandwidth run, seconds (a year).
DURATION_MAX_S = 366 * 86400.0

_PARTS = ("model-sim", "rtt", "rtt-trace", "resbw", "resbw-trace")
_MODELS = ("bernoulli", "gilbert", "ge")


def _where(key: str, msg: str) -> ConfigError:
    return ConfigError(key, msg)


def _num(key: str, v: Any, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _where(key, f"expected a number, got {v!r}")
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise _where(key, f"must be {'>' if lo_open else '>='} {lo:g}, got {v!r}")
    if hi is not None and v > hi:
        raise _where(key, f"must be <= {hi:g}, got {v!r}")
    return float(v)


def _int(key: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _where(key, f"expected an integer, got {v!r}")
    if not lo <= v <= hi:
        raise _where(key, f"must be within {lo}..{hi}, got {v!r}")
    return v


def _str(key: str, v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise _where(key, f"expected a non-empty string, got {v!r}")
    return v


def _list(key: str, v: Any, item, *, empty: bool = False) -> list:
    if not isinstance(v, list) or (not v and not empty):
        raise _where(key, f"expected a {'' if empty else 'non-empty '}list, got {v!r}")
    return [item(f"{key}[{i}]", x) for i, x in enumerate(v)]


def _table(key: str, v: Any, known: set[str]) -> dict:
    if not isinstance(v, Mapping):
        raise _where(key, f"expected a table, got {v!r}")
    for k in v:
        if k not in known:
            raise ConfigError(f"{key}.{k}", "unknown key", sorted(known))
    return dict(v)


def _prob(key, v):
    return _num(key, v, 0.0, 1.0)


def _available(spec: str) -> bool:
    from ..models.studies import available

    return available(spec)


def _spec(base: str, key: str, value: Any) -> str:
    return f"{base}{',' if ':' in base else ':'}{key}={value}"


# -- the sections, checked and turned into blocks -----------------------------------------------


def _models_blocks(m: Mapping[str, Any]) -> list[dict]:
    known = {
        "rtt", "loss", "gilbert_q", "rto", "r", "fixed_rto", "fixed_r", "Z", "Y",
        "simulate_messages", "ge_rto", "ge_r", "ge_rtt", "ge_rows",
    }  # fmt: skip
    m = _table("models", m, known)
    for k in ("rtt", "loss", "rto", "r", "fixed_rto", "fixed_r"):
        if k not in m:
            raise ConfigError(f"models.{k}", "missing (the models need it)")
    _num("models.rtt", m["rtt"], 0.0, 3600.0, lo_open=True)
    _list("models.loss", m["loss"], lambda k, x: _num(k, x, 0.0, 1.0, lo_open=True))
    if max(m["loss"]) >= 1:
        raise ConfigError("models.loss", "loss probabilities must be below 1")
    _list("models.rto", m["rto"], lambda k, x: _num(k, x, 0.0, 3600.0, lo_open=True))
    _list("models.r", m["r"], lambda k, x: _int(k, x, 0, R_MAX))
    _num("models.fixed_rto", m["fixed_rto"], 0.0, 3600.0, lo_open=True)
    _int("models.fixed_r", m["fixed_r"], 0, R_MAX)
    q = _prob("models.gilbert_q", m.get("gilbert_q", 0.5))
    for k in ("Z", "Y"):
        if k in m:
            _num(f"models.{k}", m[k], 0.0, 1e9, lo_open=True)
    messages = _int("models.simulate_messages", m.get("simulate_messages", 10_000), 20, MESSAGES_MAX)
    base = {
        "part": "model-sim",
        "messages": messages,
        "rtt": m["rtt"],
        "r": m["fixed_r"],
        "rto": m["fixed_rto"],
    }
    blocks = [
        {
            "name": "model-sim",
            "description": "Model against simulation: Bernoulli and Gilbert loss, every loss probability.",
            "base": {**base},
            "grid": {"model": ["bernoulli", "gilbert"], "p": list(m["loss"])},
        }
    ]
    blocks[0]["base"]["q"] = q
    rows = m.get("ge_rows")
    if rows is not None:
        _list("models.ge_rows", rows, lambda k, x: _list(k, x, _prob))
        for i, row in enumerate(rows):
            if len(row) != 4:
                raise ConfigError(f"models.ge_rows[{i}]", f"expected [p, q, k, h], got {row!r}")
        blocks.append(
            {
                "name": "model-ge",
                "description": "Table 4.3: Gilbert-Elliott rows, the exact and approximate models and simulation.",
                "base": {
                    "part": "model-sim",
                    "model": "ge",
                    "messages": messages,
                    "r": _int("models.ge_r", m.get("ge_r", 4), 0, R_MAX),
                    "rto": _num("models.ge_rto", m.get("ge_rto", 2.0), 0.0, 3600.0, lo_open=True),
                    "rtt": _num("models.ge_rtt", m.get("ge_rtt", 0.5), 0.0, 3600.0, lo_open=True),
                },
                "grid": {"ge_row": [list(map(float, r)) for r in rows]},
            }
        )
    return blocks


def _scenarios(key: str, v: Any, trace: str | None) -> list[int]:
    ids = _list(key, v if v is not None else [], lambda k, x: _int(k, x, 1, 40), empty=True)
    if not ids:
        ids = [i for i in range(1, 41) if trace or i not in (5, 6)]
    if len(set(ids)) != len(ids):
        raise ConfigError(key, f"a scenario is listed twice: {ids}")
    return ids


def _rtt_blocks(c: Mapping[str, Any]) -> list[dict]:
    known = {"cc", "scenarios", "len", "trace", "plot", "study"}
    c = _table("rtt_scenarios", c, known)
    if "cc" not in c:
        raise ConfigError("rtt_scenarios.cc", "missing (the algorithms to compare)")
    ccs = _list("rtt_scenarios.cc", c["cc"], _str)
    trace = c.get("trace")
    if trace is not None:
        _str("rtt_scenarios.trace", trace)
    length = _int("rtt_scenarios.len", c.get("len", 100_000), 10, MESSAGES_MAX)
    ids = _scenarios("rtt_scenarios.scenarios", c.get("scenarios"), trace)
    base = {"part": "rtt", "len": length, **({"trace": trace} if trace else {})}
    blocks = []
    ok = [s for s in ccs if _available(s)]
    if ok:
        blocks.append(
            {
                "name": "rtt-scenarios",
                "description": "Every algorithm on every Table 5.1 scenario.",
                "base": base,
                "grid": {"cc": ok, "scenario": ids},
            }
        )
        plot = _table("rtt_scenarios.plot", c.get("plot", {}), {"scenario", "first", "count"})
        blocks.append(
            {
                "name": "rtt-trace",
                "description": "RTO and RTT message by message, one scenario.",
                "base": {
                    "part": "rtt-trace",
                    "len": length,
                    "scenario": _int("rtt_scenarios.plot.scenario", plot.get("scenario", 7), 1, 40),
                    "first": _int("rtt_scenarios.plot.first", plot.get("first", 0), 0, MESSAGES_MAX),
                    "count": _int("rtt_scenarios.plot.count", plot.get("count", 1000), 1, 100_000),
                    **({"trace": trace} if trace else {}),
                },
                "grid": {"cc": ok},
            }
        )
    studies = c.get("study", [])
    if not isinstance(studies, list):
        raise ConfigError("rtt_scenarios.study", "expected [[rtt_scenarios.study]] tables")
    for i, st in enumerate(studies):
        key = f"rtt_scenarios.study[{i}]"
        st = _table(key, st, {"name", "cc", "scenarios", "vary"})
        name = _str(f"{key}.name", st.get("name"))
        from ..experiment import check_name

        try:
            check_name(name)
        except ConfigError:
            raise ConfigError(f"{key}.name", f"{name!r}: use letters, digits, '-', '_' or '.'") from None
        spec = _str(f"{key}.cc", st.get("cc"))
        vary = _table(f"{key}.vary", st.get("vary", {}), set(st.get("vary", {}) or {}))
        if not vary:
            raise ConfigError(f"{key}.vary", "expected at least one parameter to vary")
        keys = list(vary)
        for k in keys:
            _list(f"{key}.vary.{k}", vary[k], lambda kk, x: str(_scalar(kk, x)))
        specs = []
        for combo in itertools.product(*(vary[k] for k in keys)):
            s = spec
            for k, v in zip(keys, combo):
                s = _spec(s, k, v)
            if _available(s):
                specs.append(s)
        if specs:
            blocks.append(
                {
                    "name": f"rtt-study-{name}",
                    "description": f"Study {name}: {spec} varying {', '.join(keys)}.",
                    "base": {**base, "study_base": spec},
                    "grid": {
                        "cc": specs,
                        "scenario": _scenarios(f"{key}.scenarios", st.get("scenarios"), trace),
                    },
                }
            )
    return blocks


def _scalar(key: str, v: Any):
    if isinstance(v, (str, int, float)) and not isinstance(v, bool):
        return v
    raise ConfigError(key, f"expected a value (string or number), got {v!r}")


def _resbw_blocks(c: Mapping[str, Any]) -> list[dict]:
    known = {
        "cc", "rtt_ms", "duration_s", "repetitions", "half_width", "bad_only", "good", "sets",
        "good_bad_means", "instant", "variability", "backoff_study",
    }  # fmt: skip
    c = _table("resbw", c, known)
    if "cc" not in c:
        raise ConfigError("resbw.cc", "missing (the algorithms to compare)")
    ccs = [s for s in _list("resbw.cc", c["cc"], _str) if _available(s)]
    reps = _int("resbw.repetitions", c.get("repetitions", 3), 1, 1000)
    duration = _num("resbw.duration_s", c.get("duration_s", 18_000.0), 0.0, DURATION_MAX_S, lo_open=True)
    hw = _num("resbw.half_width", c.get("half_width", 0.1), 0.0, 1e6)
    rtt_ms = _str("resbw.rtt_ms", c.get("rtt_ms", "normal:500,10"))
    bo = _table("resbw.bad_only", c.get("bad_only", {}), {"means", "bad_mean_s"})
    bad_mean = _num("resbw.bad_only.bad_mean_s", bo.get("bad_mean_s", 5.0), 0.0, 1e9, lo_open=True)
    base = {"part": "resbw", "rtt_ms": rtt_ms, "duration_s": duration, "bad_mean_s": bad_mean}
    mean = lambda k, x: _num(k, x, 0.0, 1e6)  # noqa: E731
    blocks = []
    if ccs and "means" in bo:
        blocks.append(
            {
                "name": "resbw-bad-only",
                "description": "Table 6.1: bad periods only; goodput, overhead and loss against the mean.",
                "base": {**base, "half_width": hw},
                "grid": {"cc": ccs, "mean_resbw": _list("resbw.bad_only.means", bo["means"], mean)},
                "replications": reps,
            }
        )
    sets = c.get("sets", [])
    if not isinstance(sets, list):
        raise ConfigError("resbw.sets", "expected a list of tables")
    if sets and ccs:
        good = _str("resbw.good", c.get("good"))
        means = _list("resbw.good_bad_means", c.get("good_bad_means"), mean)
        for i, s in enumerate(sets):
            key = f"resbw.sets[{i}]"
            s = _table(key, s, {"name", "good_mean_s", "bad_mean_s"})
            name = _str(f"{key}.name", s.get("name"))
            blocks.append(
                {
                    "name": f"resbw-{name}",
                    "description": f"Table 6.2 {name}: good and bad periods.",
                    "base": {
                        **base,
                        "half_width": hw,
                        "good": good,
                        "good_mean_s": _num(
                            f"{key}.good_mean_s", s.get("good_mean_s"), 0.0, 1e9, lo_open=True
                        ),
                        "bad_mean_s": _num(f"{key}.bad_mean_s", s.get("bad_mean_s"), 0.0, 1e9, lo_open=True),
                    },
                    "grid": {"cc": ccs, "mean_resbw": means},
                    "replications": reps,
                }
            )
    ins = c.get("instant")
    if ins is not None and ccs:
        ins = _table("resbw.instant", ins, {"resbw", "window_s"})
        blocks.append(
            {
                "name": "resbw-instant",
                "description": "Instantaneous behaviour: every transmission of a short run.",
                "base": {
                    **base,
                    "part": "resbw-trace",
                    "resbw": _str("resbw.instant.resbw", ins.get("resbw")),
                    "duration_s": _num(
                        "resbw.instant.window_s", ins.get("window_s", 300), 0.0, 86400.0, lo_open=True
                    ),
                },
                "grid": {"cc": ccs},
            }
        )
    v = c.get("variability")
    if v is not None and ccs:
        v = _table("resbw.variability", v, {"mean", "half_widths"})
        blocks.append(
            {
                "name": "resbw-variability",
                "description": "Table 6.1 high-variability runs: mean fixed, growing spread.",
                "base": {**base, "mean_resbw": mean("resbw.variability.mean", v.get("mean"))},
                "grid": {
                    "cc": ccs,
                    "half_width": _list("resbw.variability.half_widths", v.get("half_widths"), mean),
                },
                "replications": reps,
            }
        )
    bs = c.get("backoff_study")
    if bs is not None:
        key = "resbw.backoff_study"
        bs = _table(key, bs, {"cc", "key", "values", "mean", "half_widths"})
        cc, k = _str(f"{key}.cc", bs.get("cc")), _str(f"{key}.key", bs.get("key"))
        specs = [
            _spec(cc, k, x) for x in _list(f"{key}.values", bs.get("values"), lambda kk, x: _scalar(kk, x))
        ]
        specs = [s for s in specs if _available(s)]
        if specs:
            blocks.append(
                {
                    "name": "resbw-backoff-factor",
                    "description": f"Chapter 2: {cc} with {k} swept.",
                    "base": {**base, "mean_resbw": mean(f"{key}.mean", bs.get("mean")), "study_base": cc},
                    "grid": {
                        "cc": specs,
                        "half_width": _list(f"{key}.half_widths", bs.get("half_widths"), mean),
                    },
                    "replications": reps,
                }
            )
    return blocks


def expand(sections: Mapping[str, Any]) -> list[dict]:
    """The blocks of the file's sections (every value checked, the key at fault named)."""
    if not sections:
        raise ConfigError("models", "a makarem-studies file needs [models], [rtt_scenarios] or [resbw]")
    blocks: list[dict] = []
    if "models" in sections:
        blocks += _models_blocks(sections["models"])
    if "rtt_scenarios" in sections:
        blocks += _rtt_blocks(sections["rtt_scenarios"])
    if "resbw" in sections:
        blocks += _resbw_blocks(sections["resbw"])
    if not blocks:
        raise ConfigError("kind", "no run: every algorithm of the file is unknown to this build")
    return blocks


# -- one run --------------------------------------------------------------------------------------


_FIELDS = {
    "model-sim": {"model", "p", "q", "k", "h", "ge_row", "r", "rto", "rtt", "messages"},
    "rtt": {"cc", "scenario", "len", "trace", "study_base"},
    "rtt-trace": {"cc", "scenario", "len", "trace", "first", "count"},
    "resbw": {"cc", "mean_resbw", "half_width", "resbw", "good", "good_mean_s", "bad_mean_s", "rtt_ms", "duration_s", "study_base"},
    "resbw-trace": {"cc", "resbw", "good", "good_mean_s", "bad_mean_s", "rtt_ms", "duration_s"},
}  # fmt: skip


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
        if part == "model-sim":
            if d.get("model") not in _MODELS:
                raise ConfigError("model", f"expected one of {', '.join(_MODELS)}, got {d.get('model')!r}")
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
            _int("messages", d.get("messages"), 20, MESSAGES_MAX)
        else:
            from .. import _native

            try:
                _native.resolve_algorithm(_str("cc", d.get("cc")))
            except ValueError as e:
                raise ConfigError("cc", str(e).splitlines()[0]) from None
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
                d["resbw"] = f"uniform:{max(0.0, m - hw):g},{m + hw:g}"
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
    """Every field (``ge_row`` as its ``p, q, k, h``), plus ``algorithm`` (the spec without
    the preset) and ``setting`` (what a study varies: the spec beyond ``study_base``)."""
    cols = {k: (canonical_json(v) if isinstance(v, (list, dict)) else v) for k, v in run.data.items()}
    cc = run.data.get("cc")
    cols["algorithm"] = cc.replace(":preset=makarem2021", "") if cc else run.data.get("model", "")
    base = run.data.get("study_base")
    cols["setting"] = cc[len(base) + 1 :].replace(",", ", ") if base and cc and cc.startswith(base) else ""
    return cols


def cost(run: MakaremRun) -> float:
    d = run.data
    return float(d.get("messages") or d.get("len") or d.get("duration_s") or 1.0)


def execute(runner, config_json: str, config_hash: str, common_json: str) -> tuple:
    """Run one part (``runner`` is ignored: these runs are the studies' own simulators)."""
    from .. import __version__
    from ..records import encode_columns

    d = json.loads(config_json)
    part, seed = d["part"], int(d["seed"])
    run: dict[str, Any] = {"config_json": canonical_json(d)}
    rows: dict[str, list] = {}
    if part == "model-sim":
        from ..models import loss
        from ..models.validate import simulate_model

        params = {k: d[k] for k in ("p", "q", "k", "h", "r", "rto", "rtt") if k in d}
        s = simulate_model(d["model"], int(d["messages"]), seed=seed, **params)
        for key in ("P_L", "E_N", "D_s", "GP"):
            for what in ("model", "sim", "ci95"):
                run[f"{key}_{what}"] = float(s[key][what])
            run[f"{key}_within_ci"] = abs(s[key]["sim"] - s[key]["model"]) <= s[key]["ci95"]
        if d["model"] == "ge":
            kw = {k: d[k] for k in ("r", "rto", "rtt")}
            run["P_L_approx"] = float(loss.ge_approx(d["p"], d["q"], d["k"], d["h"], **kw)["P_L"])
    elif part == "rtt":
        from ..models.studies import rtt_scenarios

        df = rtt_scenarios([d["cc"]], [d["scenario"]], seed=seed, len=d.get("len"), trace=d.get("trace"))
        row = df.iloc[0].to_dict()
        run.update({k: _plain(v) for k, v in row.items() if k not in ("scenario", "cc")})
    elif part == "rtt-trace":
        from ..models.studies import rtt_trace

        df = rtt_trace(
            d["cc"], d["scenario"], seed=seed, first=d.get("first", 0), count=d.get("count", 1000),
            len=d.get("len"), trace=d.get("trace"),
        )  # fmt: skip
        rows = {k: [_plain(x) for x in df[k]] for k in df.columns}
        run["messages"] = len(df)
    else:
        from ..models.studies import resbw

        r = resbw(
            d["cc"], d["resbw"], good=d.get("good"), good_mean_s=d.get("good_mean_s", 60.0),
            bad_mean_s=d.get("bad_mean_s", 5.0), rtt_ms=d["rtt_ms"], duration_s=d["duration_s"],
            seed=seed, trace=part == "resbw-trace",
        )  # fmt: skip
        trace = r.pop("trace", None) or []
        run.update({k: _plain(v) for k, v in r.items() if not isinstance(v, (list, dict))})
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
        sections=("models", "rtt_scenarios", "resbw"),
        expand=expand,
        seeds="shared",
    )
)
