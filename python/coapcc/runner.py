"""Runners: how one configuration becomes one report.

A *runner* is any callable ``config_json: str -> report_json: str`` where ``config_json`` is
the simulator's JSON configuration (:func:`coapcc.config.to_native`) and ``report_json`` the
report of ``coapcc simulate --json``. The default is the Rust simulator,
``coapcc._native.simulate_json``; tests and dry runs inject others. Runners must be picklable
(module-level functions) to run in a process pool or on Dask workers.

Runners can also be named by a string ``"module:function"`` (so a worker imports them).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Callable, Union

Runner = Callable[[str], str]
RunnerLike = Union[Runner, str, None]

__all__ = ["Runner", "native_runner", "get_runner", "have_simulator"]


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
