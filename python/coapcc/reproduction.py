"""``coapcc reproduce NAME [--quick]``: sweep a catalogue entry, then write its report.

``--quick`` runs the entry's ``[quick]`` variant (fewer replications and a trimmed grid, as
the file documents) into ``results/NAME-quick/``: a preview that takes about two minutes on
a 2-core laptop. Finished runs are kept, so an interrupted reproduction resumes. The
catalogue ships inside the package (``coapcc/experiments/``), so this works from an installed
``coapcc`` in any folder. Every entry is an experiment file of some study kind
(:mod:`coapcc.kinds`: simulator runs, mesh runs, Makarem's studies, the sensitivity study),
swept the same way, with the same flags, and reported by its kind.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

from . import argcheck
from .config import ConfigError
from .experiment import catalogue, find_experiment
from .runner import RunnerLike

__all__ = ["reproduce", "main"]


def sweep_study(
    name,
    *,
    quick: bool = False,
    out: str | os.PathLike | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    dask_local: bool = False,
    runner: RunnerLike = None,
    progress: bool = True,
    log=None,
    started=None,
):
    """Sweep (or resume) the catalogue entry or experiment file ``name`` (an
    :class:`~coapcc.Experiment` too), its ``[quick]`` variant with ``quick``, into ``out``
    (default ``results/NAME`` or ``results/NAME-quick``); returns ``(experiment, outcome)``.
    Raises :class:`~coapcc.sweeper.Interrupted` when the sweep was interrupted. ``started``:
    as :func:`coapcc.sweeper.sweep`'s. What
    ``coapcc reproduce`` and ``coapcc validate`` run, whatever the study's kind."""
    from .sweeper import Interrupted, sweep

    log = log or sys.stderr
    exp = find_experiment(name) if isinstance(name, (str, os.PathLike)) else name
    if quick:
        exp = exp.quick_variant()
    outcome = sweep(
        exp,
        out,
        workers=workers,
        scheduler=scheduler,
        dask_local=dask_local,
        runner=runner,
        progress=progress,
        log=log,
        started=started,
    )
    if outcome.interrupted:
        raise Interrupted(outcome.signal or 2)
    return exp, outcome


def reproduce(
    name: str,
    *,
    quick: bool = False,
    out: str | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    dask_local: bool = False,
    runner: RunnerLike = None,
    progress: bool = True,
    trace: bool = True,
    formats: tuple[str, ...] = ("png",),
    log=None,
) -> Path:
    """Sweep + report of any catalogue entry (or experiment file); returns the report's path.

    >>> coapcc.reproduce("anrw18", quick=True)          # doctest: +SKIP
    PosixPath('results/anrw18-quick/report.html')
    """
    log = log or sys.stderr
    import threading

    from .reporting import prepare, report

    t0 = time.perf_counter()
    # The report's imports and fonts are loaded while the sweep's workers run (the sweep's own
    # process mostly waits for them), from the moment the runs are handed to them: not while
    # the sweep plans, which would then share the interpreter with it and start the workers
    # later. Joined before the report forks its drawing processes.
    warm = threading.Thread(target=prepare, name="coapcc-report-prepare", daemon=True)
    try:
        exp, outcome = sweep_study(
            name,
            quick=quick,
            out=out,
            workers=workers,
            scheduler=scheduler,
            dask_local=dask_local,
            runner=runner,
            progress=progress,
            log=log,
            started=warm.start,
        )
    finally:
        if warm.ident is not None:  # started (not when every run was done already)
            warm.join()
    if outcome.failed:
        print(f"reproduce: {len(outcome.failed)} runs failed; the report covers the others", file=log)
    t1 = time.perf_counter()
    path = report(
        outcome.out,
        trace=trace,
        formats=formats,
        workers=workers,
        log=log,
        progress=progress,
        outcome=outcome,
    )
    t2 = time.perf_counter()
    print(
        f"reproduce {exp.name}: done in {t2 - t0:.1f} s (runs {outcome.wall_s:.1f} s, report {t2 - t1:.1f} s); "
        f"report: {path}",
        file=log,
        flush=True,
    )
    return path


def main(argv: list[str]) -> int:
    if argv == ["--catalogue"]:  # every entry, as a table (coapcc.listing)
        from .listing import main as listing_main

        return listing_main()
    from .reporting import add_format_args, parse_formats
    from .sweeper import add_executor_args, plan

    names = ", ".join(sorted(catalogue())) or "none found"
    p = argcheck.Parser(
        prog="coapcc reproduce",
        description=f"Sweep a catalogue entry and write its report (catalogue: {names}). "
        "'coapcc reproduce --catalogue' lists them all.",
    )
    p.add_argument("name", help="catalogue entry (or an experiment file)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="the entry's [quick] variant: fewer replications and a trimmed grid (~2 min on 2 cores)",
    )
    p.add_argument(
        "--out",
        "-o",
        default=None,
        metavar="DIR",
        help="results dataset (default: results/NAME/ or results/NAME-quick/)",
    )
    p.add_argument("--no-trace", action="store_true", help="skip the traced run and the RTO/RTT figure")
    p.add_argument("--list", action="store_true", help="print the plan (blocks, runs) and exit")
    add_executor_args(p)
    add_format_args(p)
    a = p.parse_args(argv)
    if a.workers is not None and a.workers < 1:
        p.error(f"--workers must be >= 1, got {a.workers}")
    formats = parse_formats(p, a.formats)
    try:
        if a.list:
            exp = find_experiment(a.name)
            exp = exp.quick_variant() if a.quick else exp
            print(exp.summary([t.planned for t in plan(exp)]))
            return 0
        path = reproduce(
            a.name,
            quick=a.quick,
            out=a.out,
            workers=a.workers,
            scheduler=a.scheduler,
            dask_local=a.dask == "local",
            runner=a.runner,
            progress=not a.no_progress,
            trace=not a.no_trace,
            formats=formats,
        )
    except KeyboardInterrupt as e:
        print("reproduce: interrupted; rerun to continue", file=sys.stderr)
        return 128 + getattr(e, "signum", 2)
    except BrokenPipeError:  # --list | head
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - no flush error at exit
        return 0
    except (ConfigError, FileNotFoundError, RuntimeError, ValueError) as e:
        print(f"coapcc reproduce: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a full disk, a read-only folder...
        print(f"coapcc reproduce: error: {e}; finished runs are kept, rerun to continue", file=sys.stderr)
        return 1
    print(path)
    return 0
