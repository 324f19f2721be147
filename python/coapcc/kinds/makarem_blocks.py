"""The sections of a ``makarem-studies`` file, checked and turned into blocks of runs
(:func:`expand`; the runs themselves are :mod:`coapcc.kinds.makarem`'s).

Every value is checked with the key at fault named (``resbw.bad_only.means[2]``), every
algorithm spec against this build's registry (an unknown one is left out, and the report
notes it), and every named choice of the studies' simulators (``late_ack``, ``loss_rule``...)
by the simulator itself, once per distinct set of choices. The blocks:

* ``[models]``: ``table-4.1`` (the ten printed rows), ``model-curves`` (every loss model,
  loss probability, r and RTO of the chapter 3 ranges), ``model-sim`` and ``model-ge`` (the
  models against the simulator);
* ``[rtt_scenarios]``: ``rtt-scenarios`` (every algorithm on every scenario, ``seeds``
  replications), ``rtt-trace`` (the first messages of every scenario, for the RTO-against-RTT
  figures), ``rtt-study-NAME`` per ``[[rtt_scenarios.study]]``; its replay options
  (``late_ack``, ``ack_rtt``, ``retransmit_timer``, ``rtt_consumption``) go to every run;
* ``[resbw]``: ``resbw-bad-only``, ``resbw-SET`` per set, ``resbw-instant``,
  ``resbw-variability``, ``resbw-stable``, ``resbw-backoff-factor``; its choices
  (``late_ack``, ``ack_rtt``, ``retransmit_timer``, ``rtt_draw``, ``loss_rule``) go to every
  run;
* ``[sensitivity]``: one named choice changed at a time: ``rtt`` entries (every comparison
  scenario, first seed; ``study = "sensitivity"``; a replay option, or with ``cc`` the
  comparison's algorithms under other specs), ``readings`` (the whole chapter 6 study
  again under another reading of the loss rule) and ``resbw`` entries (bad periods only, one
  replication, their own algorithms), each run's ``variant`` the entry's name.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from .. import argcheck
from ..config import ConfigError
from ..models.tables import RESBW_OPTIONS, RTT_OPTIONS, TABLE_4_1

__all__ = ["expand", "check_options", "R_MAX", "MESSAGES_MAX", "DURATION_MAX_S"]

#: Largest MAX_RETRANSMIT of the models (a chain has r + 1 states per phase; the thesis uses 1-9).
R_MAX = 20
#: Most messages or transmissions one run may simulate.
MESSAGES_MAX = 10_000_000
#: Longest simulated residual-bandwidth run, seconds (a year).
DURATION_MAX_S = 366 * 86400.0


def _where(key: str, msg: str) -> ConfigError:
    return ConfigError(key, msg)


def _num(key: str, v: Any, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False):
    try:
        return argcheck.check("value", v, lo=lo, hi=hi, lo_open=lo_open)
    except ValueError as e:
        raise _where(key, str(e).removeprefix("value ")) from None


def _int(key: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, float):  # a TOML integer is written without a point
        raise _where(key, f"must be an integer in [{lo}, {hi}], got {v!r}")
    try:
        return argcheck.check("value", v, lo=lo, hi=hi, integer=True)
    except ValueError as e:
        raise _where(key, str(e).removeprefix("value ")) from None


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


def _scalar(key: str, v: Any):
    if isinstance(v, (str, int, float)) and not isinstance(v, bool):
        return v
    raise ConfigError(key, f"expected a value (string or number), got {v!r}")


def _available(spec: str) -> bool:
    from ..models.studies import available

    return available(spec)


def _spec(base: str, key: str, value: Any) -> str:
    return f"{base}{',' if ':' in base else ':'}{key}={value}"


@lru_cache(maxsize=256)
def _options_error(simulator: str, options_json: str) -> tuple[str, str] | None:
    """(key, message) of the simulator's complaint about these choices, or None: a tiny run
    of the RTT replay (``simulator = "rtt"``) or of the residual-bandwidth simulator, which
    checks every choice by name (the valid values are the simulator's, not repeated here)."""
    from .. import _native

    opts = json.loads(options_json)
    try:
        if simulator == "rtt":
            _native.rtt_scenarios_json(json.dumps({"cc": ["default"], "scenarios": [1], "len": 10, **opts}))
        else:
            req = {"cc": "default", "resbw": "fixed:1", "duration_s": 1.0, **opts}
            _native.resbw_json(json.dumps(req))
    except ValueError as e:
        msg = str(e).splitlines()[0]
        key, sep, rest = msg.partition(": ")
        return (key, rest) if sep and key in opts else (next(iter(opts)), msg)
    return None


def check_options(simulator: str, options: Mapping[str, Any], prefix: str = "") -> dict:
    """The named choices of the RTT replay (``simulator = "rtt"``) or of the residual-bandwidth
    simulator (``"resbw"``) in ``options``, checked: strings the simulator knows.
    ConfigError names ``prefix`` + the key."""
    known = RTT_OPTIONS if simulator == "rtt" else RESBW_OPTIONS
    out = {}
    for k in known:
        if k in options and options[k] is not None:
            out[k] = _str(f"{prefix}{k}", options[k])
    if out:
        err = _options_error(simulator, json.dumps(out, sort_keys=True))
        if err is not None:
            raise ConfigError(f"{prefix}{err[0]}", err[1])
    return out


# -- chapters 3 and 4 ------------------------------------------------------------------------


def _models_blocks(m: Mapping[str, Any]) -> list[dict]:
    known = {
        "rtt", "loss", "gilbert_q", "rto", "r", "fixed_rto", "fixed_r", "Z", "Y",
        "simulate_messages", "ge_rto", "ge_r", "ge_rtt", "ge_rows",
    }  # fmt: skip
    m = _table("models", m, known)
    for k in ("rtt", "loss", "rto", "r", "fixed_rto", "fixed_r"):
        if k not in m:
            raise ConfigError(f"models.{k}", "missing (the models need it)")
    rtt = _num("models.rtt", m["rtt"], 0.0, 3600.0, lo_open=True)
    losses = _list("models.loss", m["loss"], lambda k, x: _num(k, x, 0.0, 1.0, lo_open=True))
    if max(losses) >= 1:
        raise ConfigError("models.loss", "loss probabilities must be below 1")
    rtos = _list("models.rto", m["rto"], lambda k, x: _num(k, x, 0.0, 3600.0, lo_open=True))
    _list("models.r", m["r"], lambda k, x: _int(k, x, 0, R_MAX))
    _num("models.fixed_rto", m["fixed_rto"], 0.0, 3600.0, lo_open=True)
    _int("models.fixed_r", m["fixed_r"], 0, R_MAX)
    q = _prob("models.gilbert_q", m.get("gilbert_q", 0.5))
    size = {
        k: _num(f"models.{k}", m.get(k, d), 0.0, 1e9, lo_open=True) for k, d in (("Z", 100.0), ("Y", 48.0))
    }
    messages = _int("models.simulate_messages", m.get("simulate_messages", 10_000), 20, MESSAGES_MAX)
    blocks = [
        {
            "name": "table-4.1",
            "description": "Table 4.1: the exact and approximate Gilbert-Elliott chains against the printed rows.",
            "base": {"part": "table-4.1"},
            "grid": {"row": list(range(1, len(TABLE_4_1) + 1))},
        },
        {
            "name": "model-curves",
            "description": "Chapter 3: every loss model, loss probability, r and RTO of Tables 3.3 and 3.4.",
            "base": {"part": "model", "rtt": rtt, "q": q, **size},
            "grid": {
                "model": ["bernoulli", "gilbert"],
                "p": losses,
                "r": list(m["r"]),
                "rto": rtos,
            },
        },
        {
            "name": "model-sim",
            "description": "Model against simulation: Bernoulli and Gilbert loss, every loss probability.",
            "base": {
                "part": "model-sim",
                "sim_messages": messages,
                "rtt": rtt,
                "r": m["fixed_r"],
                "rto": _num("models.fixed_rto", m["fixed_rto"], 0.0, 3600.0, lo_open=True),
                "q": q,
            },
            "grid": {"model": ["bernoulli", "gilbert"], "p": losses},
        },
    ]
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
                    "sim_messages": messages,
                    "r": _int("models.ge_r", m.get("ge_r", 4), 0, R_MAX),
                    "rto": _num("models.ge_rto", m.get("ge_rto", 2.0), 0.0, 3600.0, lo_open=True),
                    "rtt": _num("models.ge_rtt", m.get("ge_rtt", 0.5), 0.0, 3600.0, lo_open=True),
                },
                "grid": {"ge_row": [list(map(float, r)) for r in rows]},
            }
        )
    return blocks


# -- chapter 5 -------------------------------------------------------------------------------


def _scenarios(key: str, v: Any, trace: str | None) -> list[int]:
    ids = _list(key, v if v is not None else [], lambda k, x: _int(k, x, 1, 40), empty=True)
    if not ids:
        ids = [i for i in range(1, 41) if trace or i not in (5, 6)]
    if len(set(ids)) != len(ids):
        raise ConfigError(key, f"a scenario is listed twice: {ids}")
    return ids


def _rtt(c: Mapping[str, Any]) -> dict:
    """The ``[rtt_scenarios]`` section checked: ``ccs`` (those this build knows), ``ids``,
    ``base`` (every run's fields) and the rest as given."""
    known = {"cc", "scenarios", "len", "seeds", "trace", "plot", "study", *RTT_OPTIONS}
    c = _table("rtt_scenarios", c, known)
    if "cc" not in c:
        raise ConfigError("rtt_scenarios.cc", "missing (the algorithms to compare)")
    ccs = _list("rtt_scenarios.cc", c["cc"], _str)
    trace = c.get("trace")
    if trace is not None:
        _str("rtt_scenarios.trace", trace)
    length = _int("rtt_scenarios.len", c.get("len", 100_000), 10, MESSAGES_MAX)
    opts = check_options("rtt", c, "rtt_scenarios.")
    return {
        **c,
        "ccs": [s for s in ccs if _available(s)],
        "ids": _scenarios("rtt_scenarios.scenarios", c.get("scenarios"), trace),
        "seeds": _int("rtt_scenarios.seeds", c.get("seeds", 1), 1, 1000),
        "base": {"len": length, **({"trace": trace} if trace else {}), **opts},
    }


def _rtt_blocks(c: Mapping[str, Any]) -> list[dict]:
    r = _rtt(c)
    ok, ids, base = r["ccs"], r["ids"], r["base"]
    blocks = []
    if ok:
        blocks.append(
            {
                "name": "rtt-scenarios",
                "description": "Every algorithm on every Table 5.1 scenario.",
                "base": {"part": "rtt", "study": "compare", "variant": "thesis", **base},
                "grid": {"cc": ok, "scenario": ids},
                "replications": r["seeds"],
            }
        )
        plot = _table("rtt_scenarios.plot", c.get("plot", {}), {"scenario", "first", "count"})
        shown = _int("rtt_scenarios.plot.scenario", plot.get("scenario", 7), 1, 40)
        blocks.append(
            {
                "name": "rtt-trace",
                "description": "RTO and RTT message by message: the first messages of every scenario.",
                "base": {
                    "part": "rtt-trace",
                    "first": _int("rtt_scenarios.plot.first", plot.get("first", 0), 0, MESSAGES_MAX),
                    "count": _int("rtt_scenarios.plot.count", plot.get("count", 1000), 1, 100_000),
                    **base,
                },
                "grid": {"cc": ok, "scenario": ids if shown in ids else [*ids, shown]},
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
                    "base": {"part": "rtt", "study": name, "variant": "thesis", "study_base": spec, **base},
                    "grid": {
                        "cc": specs,
                        "scenario": _scenarios(f"{key}.scenarios", st.get("scenarios"), r.get("trace")),
                    },
                }
            )
    return blocks


# -- chapter 6 -------------------------------------------------------------------------------


def _mean(k, x):
    return _num(k, x, 0.0, 1e6)


def _resbw(c: Mapping[str, Any]) -> dict:
    """The ``[resbw]`` section checked: ``ccs`` (those this build knows), ``reps``, ``hw``,
    ``bad_mean``, ``base`` (every run's fields, the file's choices included) and the rest as
    given."""
    known = {
        "cc", "rtt_ms", "duration_s", "repetitions", "half_width", "bad_only", "good", "sets",
        "good_bad_means", "instant", "variability", "backoff_study", "stable", *RESBW_OPTIONS,
    }  # fmt: skip
    c = _table("resbw", c, known)
    if "cc" not in c:
        raise ConfigError("resbw.cc", "missing (the algorithms to compare)")
    ccs = [s for s in _list("resbw.cc", c["cc"], _str) if _available(s)]
    bo = _table("resbw.bad_only", c.get("bad_only", {}), {"means", "bad_mean_s"})
    bad_mean = _num("resbw.bad_only.bad_mean_s", bo.get("bad_mean_s", 5.0), 0.0, 1e9, lo_open=True)
    duration = _num("resbw.duration_s", c.get("duration_s", 18_000.0), 0.0, DURATION_MAX_S, lo_open=True)
    base = {
        "part": "resbw",
        "rtt_ms": _str("resbw.rtt_ms", c.get("rtt_ms", "normal:500,10")),
        "duration_s": duration,
        "bad_mean_s": bad_mean,
        **check_options("resbw", c, "resbw."),
    }
    return {
        **c,
        "ccs": ccs,
        "reps": _int("resbw.repetitions", c.get("repetitions", 3), 1, 1000),
        "hw": _num("resbw.half_width", c.get("half_width", 0.1), 0.0, 1e6),
        "bad_only": bo,
        "base": base,
    }


def _study_blocks(r: dict, variant: str, opts: Mapping[str, Any], suffix: str = "") -> list[dict]:
    """The chapter 6 study under one reading (``variant``, the choices ``opts`` over the
    file's): bad periods only, each good/bad set, the high-variability runs and the stable
    runs."""
    c, ccs, reps, hw, bo = r, r["ccs"], r["reps"], r["hw"], r["bad_only"]
    base = {**r["base"], **opts, "variant": variant}
    blocks = []
    if ccs and "means" in bo:
        blocks.append(
            {
                "name": f"resbw-bad-only{suffix}",
                "description": "Table 6.1: bad periods only; goodput, overhead and loss against the mean.",
                "base": {**base, "set": "bad-only", "half_width": hw},
                "grid": {"cc": ccs, "mean_resbw": _list("resbw.bad_only.means", bo["means"], _mean)},
                "replications": reps,
            }
        )
    sets = c.get("sets", [])
    if not isinstance(sets, list):
        raise ConfigError("resbw.sets", "expected a list of tables")
    if sets and ccs:
        good = _str("resbw.good", c.get("good"))
        means = _list("resbw.good_bad_means", c.get("good_bad_means"), _mean)
        for i, s in enumerate(sets):
            key = f"resbw.sets[{i}]"
            s = _table(key, s, {"name", "good_mean_s", "bad_mean_s"})
            name = _str(f"{key}.name", s.get("name"))
            blocks.append(
                {
                    "name": f"resbw-{name}{suffix}",
                    "description": f"Table 6.2 {name}: good and bad periods.",
                    "base": {
                        **base,
                        "set": name,
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
    v = c.get("variability")
    if v is not None and ccs:
        v = _table("resbw.variability", v, {"mean", "half_widths"})
        blocks.append(
            {
                "name": f"resbw-variability{suffix}",
                "description": "Table 6.1 high-variability runs: mean fixed, growing spread.",
                "base": {
                    **base,
                    "set": "variability",
                    "mean_resbw": _mean("resbw.variability.mean", v.get("mean")),
                },
                "grid": {
                    "cc": ccs,
                    "half_width": _list("resbw.variability.half_widths", v.get("half_widths"), _mean),
                },
                "replications": reps,
            }
        )
    st = c.get("stable")
    if st is not None:
        key = "resbw.stable"
        st = _table(key, st, {"cc", "means", "duration_s"})
        specs = [s for s in _list(f"{key}.cc", st.get("cc"), _str) if _available(s)]
        means = _list(f"{key}.means", st.get("means"), _mean)
        dur = st.get("duration_s", base["duration_s"])
        if specs:
            blocks.append(
                {
                    "name": f"resbw-stable{suffix}",
                    "description": "A stable residual bandwidth: IDC-CoAP's steady state (6.1).",
                    "base": {
                        **base,
                        "set": "stable",
                        "half_width": 0.0,
                        "duration_s": _num(f"{key}.duration_s", dur, 0.0, DURATION_MAX_S, lo_open=True),
                    },
                    "grid": {"cc": specs, "mean_resbw": means},
                }
            )
    return blocks


def _resbw_blocks(c: Mapping[str, Any]) -> list[dict]:
    r = _resbw(c)
    ccs, reps, base = r["ccs"], r["reps"], {**r["base"], "variant": "thesis"}
    blocks = _study_blocks(r, "thesis", {})
    ins = r.get("instant")
    if ins is not None and ccs:
        ins = _table("resbw.instant", ins, {"resbw", "window_s"})
        blocks.append(
            {
                "name": "resbw-instant",
                "description": "Instantaneous behaviour: every transmission of a short run.",
                "base": {
                    **base,
                    "part": "resbw-trace",
                    "set": "instant",
                    "resbw": _str("resbw.instant.resbw", ins.get("resbw")),
                    "duration_s": _num(
                        "resbw.instant.window_s", ins.get("window_s", 300), 0.0, 86400.0, lo_open=True
                    ),
                },
                "grid": {"cc": ccs},
            }
        )
    bs = r.get("backoff_study")
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
                    "base": {
                        **base,
                        "set": "backoff-factor",
                        "mean_resbw": _mean(f"{key}.mean", bs.get("mean")),
                        "study_base": cc,
                    },
                    "grid": {
                        "cc": specs,
                        "half_width": _list(f"{key}.half_widths", bs.get("half_widths"), _mean),
                    },
                    "replications": reps,
                }
            )
    return blocks


# -- sensitivity to the named choices --------------------------------------------------------


def _entries(key: str, v: Any, known: set[str]) -> list[dict]:
    if not isinstance(v, list):
        raise ConfigError(key, "expected a list of tables")
    out, names = [], set()
    for i, e in enumerate(v):
        e = _table(f"{key}[{i}]", e, known)
        name = _str(f"{key}[{i}].name", e.get("name"))
        if name in names or name == "thesis":
            raise ConfigError(f"{key}[{i}].name", f"{name!r} names another variant already")
        names.add(name)
        out.append(e)
    return out


def _sensitivity_blocks(s: Mapping[str, Any], sections: Mapping[str, Any]) -> list[dict]:
    s = _table("sensitivity", s, {"rtt", "readings", "resbw"})
    blocks: list[dict] = []
    if "rtt" in s:
        if "rtt_scenarios" not in sections:
            raise ConfigError("sensitivity.rtt", "needs [rtt_scenarios] (the runs it changes)")
        r = _rtt(sections["rtt_scenarios"])
        for i, v in enumerate(_entries("sensitivity.rtt", s["rtt"], {"name", "cc", *RTT_OPTIONS})):
            opts = check_options("rtt", v, f"sensitivity.rtt[{i}].")
            # `cc`: the comparison under other specs (an algorithm's reading of a gap), by
            # default the comparison's own.
            specs = r["ccs"]
            if "cc" in v:
                specs = [x for x in _list(f"sensitivity.rtt[{i}].cc", v["cc"], _str) if _available(x)]
            if specs:
                blocks.append(
                    {
                        "name": f"rtt-sensitivity {v['name']}",
                        "description": f"Chapter 5 with {v['name']}: every scenario, first seed.",
                        "base": {
                            "part": "rtt",
                            "study": "sensitivity",
                            "variant": v["name"],
                            **r["base"],
                            **opts,
                        },
                        "grid": {"cc": specs, "scenario": r["ids"]},
                    }
                )
    if "readings" in s or "resbw" in s:
        if "resbw" not in sections:
            raise ConfigError("sensitivity.readings", "needs [resbw] (the runs it changes)")
        r = _resbw(sections["resbw"])
        for i, v in enumerate(
            _entries("sensitivity.readings", s.get("readings", []), {"name", *RESBW_OPTIONS})
        ):
            opts = check_options("resbw", v, f"sensitivity.readings[{i}].")
            blocks += _study_blocks(r, v["name"], opts, f" [{v['name']}]")
        known = {"name", "cc", "means", "set", *RESBW_OPTIONS}
        for i, v in enumerate(_entries("sensitivity.resbw", s.get("resbw", []), known)):
            key = f"sensitivity.resbw[{i}]"
            opts = check_options("resbw", v, f"{key}.")
            specs = [x for x in _list(f"{key}.cc", v.get("cc"), _str) if _available(x)]
            means = _list(f"{key}.means", v.get("means", r["bad_only"].get("means")), _mean)
            if specs:
                blocks.append(
                    {
                        "name": f"resbw-sensitivity {v['name']}",
                        "description": f"Chapter 6 with {v['name']}: bad periods only, one replication.",
                        "base": {
                            **r["base"],
                            **opts,
                            "variant": v["name"],
                            "set": _str(f"{key}.set", v.get("set", "bad-only")),
                            "half_width": r["hw"],
                        },
                        "grid": {"cc": specs, "mean_resbw": means},
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
    if "sensitivity" in sections:
        blocks += _sensitivity_blocks(sections["sensitivity"], sections)
    if not blocks:
        raise ConfigError("kind", "no run: every algorithm of the file is unknown to this build")
    return blocks
