"""coapcc: CoAP congestion control, on paper, in simulation and on real sockets.

The heavy lifting is in Rust (``coapcc._native``); this package adds typed configuration,
tidy result tables, sweeps, plots and reports. Importing it is cheap: pandas and friends are
imported only by the functions that need them.

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


__all__ = ["__version__", "algorithms", "resolve_algorithm"]
