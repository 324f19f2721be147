"""``coapcc.simulate``: one run of the simulator from Python."""

from __future__ import annotations

import json
from typing import Any

from .config import SimConfig, to_native
from .result import SimResult
from .runner import RunnerLike, get_runner

__all__ = ["simulate", "run_config"]


def run_config(config: SimConfig, runner: RunnerLike = None) -> dict:
    """Run ``config`` and return the simulator's report as a dict."""
    return json.loads(get_runner(runner)(json.dumps(to_native(config))))


def simulate(
    config: SimConfig | dict | None = None,
    /,
    *,
    runner: RunnerLike = None,
    trace_queue: bool = False,
    **options: Any,
) -> SimResult:
    """Run one simulation and return a :class:`~coapcc.SimResult`.

    Give a :class:`~coapcc.SimConfig` (or a dict of its fields), keyword options, or both
    (options override fields of ``config``; dotted keys go through ``**{"link.x": v}``)::

        >>> r = coapcc.simulate(algorithm="cocoa", clients=10, buffer_bytes=2500, seed=1)  # doctest: +SKIP
        >>> r = coapcc.simulate(algorithm="cocoa", preset="helsinki2018", max_retransmit=20,
        ...                     clients=10, seed=1)                        # doctest: +SKIP
        >>> r.flows["fct_s"].median()                                      # doctest: +SKIP
        >>> r.retransmissions_per_exchange                                 # doctest: +SKIP

    An algorithm name alone means its own defaults; ``preset=`` applies a reproduction preset
    and shared transmission parameters (``max_retransmit=20``...) apply to every group.

    Raises :class:`~coapcc.ConfigError` (a ValueError) naming the key and the valid choices
    for a configuration that cannot run (unknown algorithm or parameter, unknown error
    profile, ``clients <= 0``...). With ``trace="FILE"`` the simulator also writes its
    per-exchange trace there (read it with :func:`coapcc.read_trace`); ``trace_queue=True`` adds
    the queue of every link direction over time (:attr:`coapcc.Trace.queue`). ``runner`` replaces the simulator (see
    :mod:`coapcc.runner`); by default the Rust simulator runs in this process, with the GIL
    released.
    """
    if config is None:
        cfg = SimConfig.from_dict(options)
    elif isinstance(config, SimConfig):
        cfg = config.replace(**options) if options else config
    elif isinstance(config, dict):
        cfg = SimConfig.from_dict({**config, **options})
    else:
        raise TypeError(f"config: expected SimConfig or dict, got {type(config).__name__}")
    config_json = json.dumps(cfg.validated_native())
    if trace_queue and not cfg.trace:
        raise ValueError("trace_queue=True needs trace='FILE' (the queue records go to the trace)")
    if cfg.trace and trace_queue:
        if runner is not None:
            raise ValueError("trace_queue=True needs the built-in simulator (runner=None)")
        from .trace import run_traced

        text = run_traced(config_json, cfg.trace, queue=True)
    elif cfg.trace:
        # Only runners that take a trace path (the simulator does) can honour ``trace``.
        text = get_runner(runner)(config_json, cfg.trace)
    else:
        text = get_runner(runner)(config_json)
    return SimResult(cfg, text=text)
