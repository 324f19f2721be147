"""What the simulator's configuration accepts, taken from the Rust side (``coapcc._native``).

The schema of a run (link chains, loss models, limits, presets, algorithm parameters and
their defaults) is declared once, in Rust. This module asks for it and caches the answers,
so that :mod:`coapcc.config` keeps only what is Python's own: the flat, typed
:class:`~coapcc.SimConfig` that experiments, sweeps and reports work with.

Everything here is cheap (no pandas, no numpy) and computed at most once per process.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from functools import cache, lru_cache
from typing import Any

from . import _native

__all__ = [
    "params_schema",
    "registry",
    "algorithm_names",
    "presets",
    "shared_params",
    "limits",
    "link_defaults",
    "default_sim_config",
    "loss_model",
    "testbed_link",
    "resolve_sim_config",
    "did_you_mean",
    "parse_spec",
    "TRANSMISSION_KEYS",
    "profile_params",
]

#: The transmission parameters a testbed profile sets for every algorithm of a run (RFC 7252
#: §4.8; NSTART once the registry has it).
TRANSMISSION_KEYS = ("ack_timeout", "ack_random_factor", "max_retransmit", "nstart")


@cache
def params_schema() -> dict:
    """The schema of a run's parameters (what :class:`coapcc.SimConfig` is made of): every
    parameter with its ``kind``, ``default``, range (``min``, ``max``), valid values
    (``choices``) and ``doc``; the ``sections`` (``link``, ``coap``, ``server``); the ``shared``
    transmission parameters; the ``workloads``; the defaults of a ``mesh`` and of the
    ``messages`` workload. Read it, do not modify it."""
    return json.loads(_native.sim_params_schema_json())


@cache
def registry() -> tuple[dict, ...]:
    """The algorithm registry (``coapcc algorithms --json``)."""
    return tuple(json.loads(_native.algorithms_json()))


@cache
def algorithm_names() -> tuple[str, ...]:
    return tuple(a["name"] for a in registry())


@cache
def limits() -> dict:
    """``max_clients``, ``presets``, ``profiles`` and the testbed ``link`` defaults."""
    return json.loads(_native.sim_limits_json())


def presets() -> tuple[str, ...]:
    """Every reproduction preset of the registry (``rfc7252``, ``helsinki2018``...)."""
    return tuple(limits()["presets"])


def link_defaults() -> dict:
    """The testbed link's defaults, in :class:`~coapcc.config.Link` names (plus ``buffer_bytes``)."""
    return dict(limits()["link"])


@cache
def default_sim_config() -> dict:
    """The simulator's default configuration (every field)."""
    return json.loads(_native.default_sim_config_json())


@cache
def shared_params() -> dict[str, dict]:
    """The transmission parameters every algorithm shares (RFC 7252 §4.8: ``ack_timeout``,
    ``ack_random_factor``, ``max_retransmit``...), key -> description (``default``,
    ``values``, ``doc``), in the registry's order."""
    per_alg = [{p["key"]: p for p in a["common_params"]} for a in registry()]
    if not per_alg:
        return {}
    keys = [k for k in per_alg[0] if all(k in d for d in per_alg)]
    return {k: per_alg[0][k] for k in keys}


@lru_cache(maxsize=256)
def _loss_model_text(errors: str, clock: str, burst: float) -> str:
    return _native.loss_model_json(errors, clock, burst)


def loss_model(errors: str, clock: str = "time", burst_packets: float = 5.0) -> dict:
    """The simulator's loss model of a link-error profile; ``ValueError`` (the simulator's
    message) if it does not parse."""
    return json.loads(_loss_model_text(errors, clock, float(burst_packets)))


@lru_cache(maxsize=1024)
def _link(params: tuple) -> dict:
    return json.loads(_native.testbed_link_json(json.dumps(dict(params))))


def testbed_link(**params: Any) -> dict:
    """The testbed's link chains (the simulator's ``LinkConfig``) with ``params`` applied.

    Cached: the same parameters give the same dict object, which callers must not modify."""
    return _link(tuple(sorted(params.items())))


def resolve_sim_config(native: dict) -> dict:
    """The simulator's own check of a configuration: the configuration with every algorithm
    fully resolved, or ``ValueError`` with the simulator's message (``field: problem``)."""
    return json.loads(_native.resolve_sim_config_json(json.dumps(native)))


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest choice, or ``""``."""
    m = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{m[0]}'?" if m else ""


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``NAME[:key=value,...]`` -> ``(name, {key: value})`` (text only, not validated)."""
    name, _, rest = spec.partition(":")
    params: dict[str, str] = {}
    for pair in rest.split(","):
        if pair.strip():
            k, _, v = pair.partition("=")
            params[k.strip()] = v.strip()
    return name.strip(), params


@cache
def _profile(name: str) -> tuple:
    _, params = parse_spec(_native.resolve_algorithm(f"default:preset={name}"))
    shared = shared_params()
    return tuple((k, _number(params[k])) for k in TRANSMISSION_KEYS if k in shared and k in params)


def profile_params(name: str) -> dict[str, Any]:
    """The shared transmission parameters of reproduction preset ``name`` (``helsinki2018``:
    ``{"ack_timeout": 2, "ack_random_factor": 1.5, "max_retransmit": 20}``): what a testbed
    profile sets for every algorithm, leaving each algorithm's other parameters at its own
    defaults. ``ValueError`` for an unknown preset."""
    return dict(_profile(name))


def _number(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text
