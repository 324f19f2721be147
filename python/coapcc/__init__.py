"""coapcc: CoAP congestion control, on paper, in simulation and on real sockets.

The heavy lifting is in Rust (``coapcc._native``); this package adds typed configuration,
tidy result tables, sweeps, plots and reports. Importing it is cheap: pandas and friends are
imported only by the functions that need them.

* :func:`simulate` runs one configuration (:class:`SimConfig`) and returns a :class:`SimResult`
  with pandas tables (``flows``, ``retransmissions_per_exchange``, ``links``);
* :func:`load_experiment` / :func:`find_experiment` read an experiment file (TOML; the
  catalogue ships in ``coapcc/experiments/``), :func:`sweep` runs it into a Parquet dataset,
  :func:`load_results` reads one back, :func:`report` writes the HTML report.

>>> import coapcc
>>> [a["name"] for a in coapcc.algorithms()][:3]
['default', 'default-fb1', 'default-fb2']
"""

from __future__ import annotations

import json as _json

from . import _native

__version__: str = _native.version()


def algorithms() -> list[dict]:
    """Every registered congestion-control algorithm.

    Each entry has ``name``, ``summary``, ``source``, ``default_spec`` (the fully resolved
    textual form), ``presets`` (the reproduction presets that apply), ``params`` and
    ``common_params`` (each with ``key``, ``default``, ``values`` and ``doc``).
    """
    return _json.loads(_native.algorithms_json())


def resolve_algorithm(spec: str) -> str:
    """Canonical, fully resolved form of an algorithm spec ``NAME[:key=value,...]``.

    Raises ``ValueError`` naming the bad key or value and listing the valid choices.

    >>> resolve_algorithm("default:preset=helsinki2018").startswith("default:ack_timeout=2,")
    True
    """
    return _native.resolve_algorithm(spec)


#: Public names imported on first use (PEP 562), so ``import coapcc`` stays cheap.
_LAZY = {
    "SimConfig": "config",
    "Group": "config",
    "Link": "config",
    "Coap": "config",
    "Server": "config",
    "ConfigError": "config",
    "SimResult": "result",
    "simulate": "simulation",
    "Experiment": "experiment",
    "load_experiment": "experiment",
    "find_experiment": "experiment",
    "catalogue": "experiment",
    "derive_seed": "experiment",
    "sweep": "sweeper",
    "SweepOutcome": "sweeper",
    "reproduce": "reproduction",
    "Results": "dataset",
    "load_results": "dataset",
    "report": "reporting",
    "read_trace": "trace",
    "Trace": "trace",
    "mesh": "meshsim",
    "MeshResult": "meshsim",
    "validate": "validation",
    "load_claims": "claims",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'coapcc' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = ["__version__", "algorithms", "resolve_algorithm", *_LAZY]
