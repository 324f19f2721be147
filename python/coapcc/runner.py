"""Runners: how one configuration becomes one report.

A *runner* is any callable ``config_json: str -> report_json: str`` where ``config_json`` is
the simulator's JSON configuration (:func:`coapcc.config.to_native`) and ``report_json`` the
report of ``coapcc simulate --json``. The default is the Rust simulator,
``coapcc._native.simulate_json``; tests and dry runs inject others. Runners must be picklable
(module-level functions) to run in a process pool or on Dask workers.

Runners can also be named by a string ``"module:function"`` (so a worker imports them).

A runner marked *columnar* (``runner.columnar = True``) takes ``(config_json, packed)`` and
returns the report in columnar form instead (:func:`native_columns`: a dict, per-flow values
as columns, no JSON); sweeps
use the simulator that way (:func:`run_columns`), and turn any other runner's JSON report
into the same form (:func:`columns_from_report`).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Callable, Union

Runner = Callable[[str], str]
RunnerLike = Union[Runner, str, None]

__all__ = [
    "Runner",
    "native_runner",
    "native_columns",
    "get_runner",
    "have_simulator",
    "run_columns",
    "columns_from_report",
]


def have_simulator() -> bool:
    """Is the Rust simulator (``coapcc._native.simulate_json``) built into this install?"""
    from . import _native

    return hasattr(_native, "simulate_json")


def native_runner(config_json: str, trace_path: str | None = None) -> str:
    """Run the Rust simulator (``coapcc._native.simulate_json``), writing the per-exchange
    trace to ``trace_path`` if given. Raises ValueError for a configuration that cannot run."""
    from . import _native

    try:
        fn = _native.simulate_json
    except AttributeError:
        raise RuntimeError(
            "this build of coapcc._native has no simulator (simulate_json); rebuild with scripts/setup"
        ) from None
    if trace_path is None:
        return fn(config_json)
    return fn(config_json, str(trace_path))


def native_columns(config_json: str, packed: bool = False) -> dict:
    """Run the Rust simulator and return its report in columnar form
    (``coapcc._native.simulate_columns``): ``flows`` is a dict of per-flow column lists,
    ``config_json`` the resolved configuration as canonical JSON text, and the report's other
    fields (``retransmissions_per_exchange``, ``links``, ``useful_fraction``, ``sim_time_s``,
    ``wall_s``, ``events``, ``truncated``) as in the JSON report. With ``packed``, numeric
    flow columns are little-endian ``bytes`` of the types in ``flow_types`` (``u4``, ``u8``,
    ``f8``; NaN for a missing float). Raises ValueError for a configuration that cannot run."""
    from . import _native

    try:
        fn = _native.simulate_columns
    except AttributeError:
        raise RuntimeError(
            "this build of coapcc._native has no simulate_columns; rebuild with scripts/setup"
        ) from None
    return fn(config_json, packed)


native_columns.columnar = True  # type: ignore[attr-defined]


def columns_from_report(report: dict) -> dict:
    """A JSON report (parsed) in the columnar form of :func:`native_columns`: the flows as
    columns (the fields of the first flow, in its order, then any other flow's extra fields;
    None where a flow has no value) and ``config_json`` the canonical text of its ``config``
    (None if the report has none)."""
    from .config import canonical_json

    out = {k: v for k, v in report.items() if k not in ("flows", "config")}
    flows = report.get("flows") or []
    keys: dict[str, None] = {}
    for f in flows:
        for k in f:
            keys.setdefault(k, None)
    first = tuple(flows[0]) if flows else ()
    if flows and tuple(keys) == first and all(tuple(f) == first for f in flows):
        # One shape (the simulator's: a struct, same fields in the same order): transpose in C.
        out["flows"] = {k: list(col) for k, col in zip(first, zip(*[tuple(f.values()) for f in flows]))}
    else:
        out["flows"] = {k: [f.get(k) for f in flows] for k in keys}
    cfg = report.get("config")
    out["config_json"] = canonical_json(cfg) if cfg else None
    return out


def run_columns(runner: RunnerLike, config_json: str) -> dict:
    """Worker entry point: one run's report in columnar form (:func:`native_columns`), from
    the simulator directly (``runner=None``), from a columnar runner, or from any other
    runner's JSON report (:func:`columns_from_report`)."""
    import json

    fn = native_columns if runner is None else get_runner(runner)
    if getattr(fn, "columnar", False):
        return fn(config_json, packed=True)
    return columns_from_report(json.loads(fn(config_json)))


def get_runner(runner: RunnerLike) -> Runner:
    """Resolve ``None`` (the simulator), a callable, or ``"module:function"``."""
    if runner is None:
        return native_runner
    if isinstance(runner, str):
        mod, _, name = runner.partition(":")
        if not name:
            raise ValueError(f"runner {runner!r}: expected 'module:function'")
        return getattr(importlib.import_module(mod), name)
    return runner


def run_one(runner: RunnerLike, config_json: str) -> str:
    """Worker entry point (picklable): resolve ``runner`` and run one configuration."""
    return get_runner(runner)(config_json)


def worker_init(parent_pid: int | None = None) -> None:
    """Worker initialiser: leave Ctrl-C to the parent (which stops the sweep and the workers
    itself), and die with the parent: on Linux the kernel sends SIGKILL to this process when
    its parent dies (``PR_SET_PDEATHSIG``), so killing a sweep, even with SIGKILL, leaves no
    worker behind; if the parent is already gone (``parent_pid`` given), exit at once."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no libc prctl
            pass
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


def run_with_trace(config_json: str, trace_path: str) -> str:
    """Run the simulator on ``config_json`` writing the per-exchange trace (JSON lines) to
    ``trace_path``; returns the report JSON."""
    return native_runner(config_json, trace_path)
