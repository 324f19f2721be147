"""``coapcc report``: the one report builder of every study, from a dataset or two datasets
side by side (``coapcc report A B``).

The dataset's kind (:mod:`coapcc.kinds`) says what the report holds: its report function
(:attr:`~coapcc.kinds.StudyKind.report`) returns a :class:`coapcc.reports.Report`, the
figures as drawing functions of aggregated tables, the tables as text. This module does the
rest, the same for every kind:

* the claims table first, when the study has claims (:mod:`coapcc.reports.claims`), then
  the study's own figures, when its experiment file names drawing functions
  (``figures = ["module:function"]``, :mod:`coapcc.reports.study`);
* the figures drawn several at a time in processes of their own (forked, so that they share
  the report's tables; started as soon as the report's function defines each one, so that
  they are drawn while the rest of the report is computed: :class:`FigureDrawer`), each as a
  PNG embedded in the HTML and written to ``figures/``, and in the other formats of
  ``--formats`` (SVG, PDF) as files only;
* the CSV tables beside the report;
* the HTML from the one template (``templates/report.html.j2``, jinja2 with
  ``StrictUndefined``: a name the document lacks is an error, never an empty string);
* progress on stderr, as the sweep shows it.

Two datasets of the same kind are compared (each series tagged with its dataset's name);
datasets of two kinds are refused.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from . import argcheck
from .runner import RunnerLike

__all__ = ["report", "main", "prepare", "FigureDrawer", "Job", "add_format_args", "parse_formats", "FORMATS"]

#: Figure file formats: PNG is embedded in the HTML and always written; the others on request.
FORMATS = ("png", "svg", "pdf")


def _meta(path: Path) -> dict:
    """The dataset's ``experiment.json`` (FileNotFoundError / DatasetFormatError when ``path``
    is not a dataset this coapcc can read)."""
    from .storage import check_format

    if not (path / "runs").is_dir():
        raise FileNotFoundError(f"{path}: not a results dataset (no runs/ folder)")
    check_format(path)
    try:
        return json.loads((path / "experiment.json").read_text())
    except FileNotFoundError:
        return {}
    except ValueError as e:
        raise ValueError(f"{path / 'experiment.json'}: not valid JSON ({e})") from None


# -- drawing the figures ----------------------------------------------------------------------


def _draw_one(fig, figdir: Path, formats) -> None:
    """Draw ``fig`` and write its files (``figdir/<id>.<format>``)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from .figures import save

    save(fig.draw(), figdir / fig.id, formats)


_WARM = False


def _warm_up() -> None:
    """Import matplotlib and load its fonts once, here, so that every forked drawing
    process has them (each would otherwise spend a third of a second on it)."""
    global _WARM
    if _WARM:
        return
    import io

    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1, 1))
    ax = fig.subplots()
    ax.set_title("warm-up")
    ax.set_yscale("log")
    fig.savefig(io.BytesIO(), format="png", dpi=10)
    _WARM = True


def prepare() -> None:
    """Import what a report uses and load matplotlib's fonts (:func:`_warm_up`), so that the
    report starts at once: ``coapcc reproduce`` calls it in a thread while the sweep's worker
    processes run (joined before the report forks any process)."""
    try:
        import jinja2  # noqa: F401
        import pandas  # noqa: F401
        import pyarrow.parquet  # noqa: F401

        _warm_up()
        from .reports import sim  # noqa: F401
    except Exception:  # noqa: BLE001, S110 - the report does it again, and reports the error
        pass


def _child(conn, item, figdir: Path, formats) -> None:
    """A forked process: draws one figure, or runs one :class:`Job`, and says how it went
    (a figure's files carry the figure and a job's result is small: the message stays small,
    so the child never waits for the report to read it)."""
    import gc

    # No cyclic collection here: it would walk (and so copy, page by page) every object this
    # short-lived process shares with the report.
    gc.disable()
    try:
        if isinstance(item, Job):
            conn.send((True, item.fn()))
        else:
            _draw_one(item, figdir, formats)
            conn.send(None)
    except Exception as e:  # noqa: BLE001 - sent to the report, which leaves the figure out
        msg = f"{type(e).__name__}: {e}"
        conn.send((False, msg) if isinstance(item, Job) else msg)
    finally:
        conn.close()


class Job:
    """Work the report hands to a drawing process (:meth:`FigureDrawer.run`), such as
    recording a traced run: ``fn()`` runs there, its (small, picklable) return value comes
    back as :meth:`result`. Jobs go before the figures waiting for a process."""

    def __init__(self, fn, drawer=None):
        self.fn, self.drawer = fn, drawer
        self.done, self.ok, self.value = False, False, None

    def result(self):
        """``fn()``'s value (waiting for it, and drawing figures meanwhile); raises
        :class:`RuntimeError` with the job's error if it failed."""
        if not self.done:
            if self.drawer is not None and self.drawer.fork:
                self.drawer.wait(self)
            else:
                self.finish(*_call(self.fn))
        if not self.ok:
            raise RuntimeError(self.value)
        return self.value

    def finish(self, ok: bool, value) -> None:
        self.done, self.ok, self.value = True, ok, value


def _call(fn) -> tuple[bool, Any]:
    try:
        return True, fn()
    except Exception as e:  # noqa: BLE001 - raised by Job.result
        return False, f"{type(e).__name__}: {e}"


class FigureDrawer:
    """Draws a report's figures while the report is still being computed: each figure, as
    soon as the report's function hands it over (:meth:`submit`), in a forked process of its
    own (a fork shares the report's tables, nothing is pickled), the rest at :meth:`finish`.
    At most ``workers`` processes run at a time; while the report computes (reading the
    dataset, the tables: what every later figure waits for), figures take one fewer, so that
    it keeps a core of its own (jobs, which it waits for, may take them all). Where the
    platform cannot fork, or with one worker, every figure is drawn in this process at
    :meth:`finish`."""

    def __init__(self, figdir: Path, formats, workers: int, log=None):
        import multiprocessing as mp

        # PNG always: the HTML embeds it
        self.figdir, self.log = figdir, log
        self.formats = ("png", *dict.fromkeys(f for f in formats if f != "png"))
        self.workers = max(1, workers)
        self.fork = self.workers > 1 and "fork" in mp.get_all_start_methods()
        self.queue: list = []
        self.running: dict = {}  # connection -> (process, figure)
        self.seen: set[int] = set()
        self.failed: list[tuple[str, str]] = []
        self.bar = None
        self.done = 0
        if self.fork:
            _warm_up()

    def submit(self, fig) -> None:
        """Start drawing ``fig`` now if a worker is free, else as soon as one is."""
        if id(fig) in self.seen:
            return
        self.seen.add(id(fig))
        self.queue.append(fig)
        if self.fork:
            self._pump(block=False)

    def run(self, fn) -> Job:
        """Run ``fn()`` in a process of its own now, or as soon as one is free, before the
        figures waiting (in this process, at :meth:`Job.result`, when the drawer does not
        fork)."""
        job = Job(fn, self)
        if self.fork:
            self.queue.insert(sum(isinstance(q, Job) for q in self.queue), job)
            self._pump(block=False)
        return job

    def poll(self) -> None:
        """Collect the processes that finished and start the next ones (call it now and then
        during long computations, so that no process slot stays idle)."""
        if self.fork:
            self._pump(block=False)

    def wait(self, job: Job) -> None:
        """Wait until ``job`` is done, starting figures as processes free up."""
        while not job.done:
            self._pump(block=True, until=job)

    def _start(self, fig) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        parent, child = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_child, args=(child, fig, self.figdir, self.formats), daemon=True)
        p.start()
        child.close()
        self.running[parent] = (p, fig)

    def _finished(self, fig, error) -> None:
        if isinstance(fig, Job):
            fig.finish(*(error if isinstance(error, tuple) else (False, error)))
            return
        if error is None:
            png = (self.figdir / f"{fig.id}.png").read_bytes()
            fig.png_b64 = base64.b64encode(png).decode()
            fig.files = self.files_of(fig)
        else:
            self.failed.append((fig.id, f"drawing failed: {error}"))
            print(f"report: warning: figure {fig.id}: {error}", file=self.log)
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)

    def files_of(self, fig) -> list[tuple[str, str]]:
        """The files of ``fig`` besides its PNG, as ``(FORMAT, link)`` for its caption."""
        return [(fmt.upper(), f"{self.figdir.name}/{fig.id}.{fmt}") for fmt in self.formats if fmt != "png"]

    def _pump(self, block: bool, until: Job | None = None) -> None:
        from multiprocessing.connection import wait

        while True:
            if self.running:
                for conn in wait(list(self.running), timeout=None if block else 0):
                    p, fig = self.running.pop(conn)
                    try:
                        error = conn.recv()
                    except EOFError:  # the process died without a word (killed, out of memory)
                        error = "the drawing process died"
                    conn.close()
                    p.join()
                    self._finished(fig, error)
            # While this process computes (not blocking), it keeps a core of its own from the
            # figures (nothing waits for them before the end), not from the jobs (it waits for
            # those: the traced runs).
            limit = self.workers if block else self.workers - 1
            while self.queue and (
                len(self.running) < limit
                or (isinstance(self.queue[0], Job) and len(self.running) < self.workers)
            ):
                self._start(self.queue.pop(0))
            if not block or not (self.running or self.queue) or (until is not None and until.done):
                return

    def finish(self, figures: list, bar=None) -> list[tuple[str, str]]:
        """Draw what is left of ``figures`` and wait for every figure; returns (id, why) of
        the figures that failed (left out with a note: the rest of the report is written)."""
        self.bar = bar
        if bar is not None and self.done:
            bar.update(self.done)
        for f in figures:
            self.submit(f)
        if self.fork:
            self._pump(block=True)
        else:
            for f in self.queue:
                try:
                    _draw_one(f, self.figdir, self.formats)
                    self._finished(f, None)
                except Exception as e:  # noqa: BLE001 - reported, the report goes on
                    self._finished(f, f"{type(e).__name__}: {e}")
            self.queue = []
        return self.failed

    def close(self) -> None:
        """Stop drawing (the report failed): no process is left behind."""
        self.queue = []
        for conn, (p, _) in list(self.running.items()):
            p.terminate()
            p.join()
            conn.close()
        self.running = {}


def versions() -> list[tuple[str, str]]:
    """The versions of coapcc, Python and the packages a report uses."""
    import platform
    from importlib import metadata

    from . import __version__

    out = {"coapcc": __version__, "python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("numpy", "pandas", "pyarrow", "matplotlib", "jinja2", "dask", "distributed", "tqdm"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return list(out.items())


def _render(**context: Any) -> str:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("coapcc", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html.j2").render(**context)


def _write_file(path: Path, content) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    if isinstance(content, (str, bytes)):
        if isinstance(content, str):
            tmp.write_text(content)
        else:
            tmp.write_bytes(content)
    else:  # a DataFrame
        content.to_csv(tmp, index=False, float_format="%.6g" if path.suffix == ".csv" else None)
    os.replace(tmp, path)


# -- the report -------------------------------------------------------------------------------


def report(
    path: str | os.PathLike,
    out: str | os.PathLike | None = None,
    *,
    compare: str | os.PathLike | None = None,
    trace: bool = True,
    trace_run: str | None = None,
    runner: RunnerLike = None,
    title: str | None = None,
    formats: tuple[str, ...] = ("png",),
    claims: Any = None,
    workers: int | None = None,
    log=None,
    progress: bool = True,
    outcome=None,
) -> Path:
    """Write the HTML report of the dataset at ``path`` and return its path (default
    ``path/report.html``; with ``compare``, ``path/compare-<other>.html``). The figures are
    also saved in ``figures/`` next to it (``figures-<name>/`` for a comparison), in every
    format of ``formats``, and its tables as CSV files.

    ``compare``: a second dataset of the same kind, reported side by side (each series
    tagged with its dataset). ``claims``: a claims file (path or
    :class:`~coapcc.claims.ClaimsFile`) whose verdicts open the report; by default the
    packaged claims of the study, if any; ``False`` for none. ``workers``: processes drawing
    the figures (default: the CPU count). ``trace`` / ``trace_run`` / ``runner``: the traced
    runs of a simulator study (``trace_run``: the config hash, or a prefix, of the run to
    trace; ``runner``: a callable ``(config_json, trace_path) -> report_json`` replacing the
    simulator for it). ``outcome``: the sweep that just ran (``coapcc reproduce``), for the
    overview.

    >>> coapcc.report("results/anrw18")                       # doctest: +SKIP
    PosixPath('results/anrw18/report.html')
    """
    from .kinds import get_kind
    from .reports import Context, Dataset, dataset_names
    from .reports.claims import claims_section
    from .reports.study import study_figures

    log = log or sys.stderr
    t0 = time.perf_counter()
    paths = [Path(path)] + ([Path(compare)] if compare is not None else [])
    metas = [_meta(p) for p in paths]
    kinds = [m.get("kind", "sim") for m in metas]
    if len(set(kinds)) > 1:
        raise ValueError(
            f"{paths[0]} holds a {kinds[0]!r} study and {paths[1]} a {kinds[1]!r} study: "
            "only datasets of the same kind of study can be compared"
        )
    kind = get_kind(kinds[0])
    names = dataset_names(paths, metas)
    if out is None:
        out = paths[0] / ("report.html" if compare is None else f"compare-{paths[1].name}.html")
    out = Path(out)
    figdir = out.parent / ("figures" if compare is None else f"figures-{out.stem}")
    figdir.mkdir(parents=True, exist_ok=True)
    label = " vs ".join(names)

    def say(text: str) -> None:
        drawer.poll()  # a phase ends: start the figures waiting for a free process
        if progress:
            print(f"report {label}: {text}", file=log, flush=True)

    drawer = FigureDrawer(figdir, formats, workers or os.cpu_count() or 1, log)
    ctx = Context(
        datasets=[Dataset(p, n, m) for p, n, m in zip(paths, names, metas)],
        out=out,
        trace=trace,
        trace_run=trace_run,
        runner=runner,
        title=title,
        log=log,
        progress=say,
        outcome=outcome,
        draw=drawer.submit,
        run=drawer.run,
    )
    say("reading the dataset" + ("s" if compare is not None else ""))
    import pyarrow as pa

    # Arrow's own allocator keeps what a large read freed; the system's returns it, which
    # keeps the report's peak memory to what it holds (a third less on anrw18).
    pool = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        doc = kind.call("report")(ctx)
        if title is not None:
            doc.title = title
        study_sec = study_figures(ctx, doc.notes)
        if study_sec is not None:
            doc.sections.insert(0, study_sec)
        claim_sec = claims_section(ctx, claims)
        if claim_sec is not None:
            doc.sections.insert(0, claim_sec)
        figures = doc.figures()
        for f in figures:
            drawer.submit(f)
        # The page is made while the figures are drawn: each image, and the build time, a
        # placeholder filled in once they are done (the page is made again if a figure failed).
        token = f"coapcc-{os.urandom(8).hex()}"
        for k, f in enumerate(figures):
            if not f.png_b64:  # (not drawn yet)
                f.png_b64, f.files = f"{token}-figure-{k}-", drawer.files_of(f)
        page = _page(doc, out, compare, f"{token}-build-")
        bar = None
        if progress and figures:
            from tqdm import tqdm

            bar = tqdm(
                total=len(figures),
                file=log,
                unit="figure",
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} figures [{elapsed}<{remaining}]",
                desc=f"report {label}",
                dynamic_ncols=True,
                mininterval=0.5,
            )
        try:
            failed = drawer.finish(figures, bar)
        finally:
            if bar is not None:
                bar.close()
    finally:
        drawer.close()
        pa.set_memory_pool(pool)
    build_s = f"{time.perf_counter() - t0:.1f}"
    if failed:
        doc.omitted += failed
        for s in doc.sections:  # a figure that failed is left out, with its note
            _drop_figures(s, {i for i, _ in failed})
        html = _page(doc, out, compare, build_s)
    else:
        fill = {f"figure-{k}": f.png_b64 for k, f in enumerate(figures)}
        fill["build"] = build_s
        html = re.sub(f"{token}-([a-z]+(?:-[0-9]+)?)-", lambda m: fill[m.group(1)], page)
    _write_file(out, html)
    if progress:
        print(
            f"report {label}: {len(figures) - len(failed)} figures in {time.perf_counter() - t0:.1f} s -> {out}",
            file=log,
            flush=True,
        )
    return out


def _page(doc, out: Path, compare, build_s: str) -> str:
    """Write the report's tables beside ``out`` and return its HTML (``build_s``: the build
    time as shown)."""
    prefix = "" if compare is None else f"{out.stem}-"
    for name, content in doc.files.items():
        _write_file(out.parent / f"{prefix}{name}", content)
    overview = [*doc.overview, ("report generated", time.strftime("%Y-%m-%d %H:%M:%S %Z"))]
    return _render(
        title=doc.title,
        description=doc.description,
        overview=overview,
        warnings=doc.warnings,
        notes=doc.notes,
        sections=doc.sections,
        omitted=doc.omitted,
        versions=versions(),
        build_s=build_s,
    )


def _drop_figures(section, ids: set[str]) -> None:
    section.items = [i for i in section.items if not (getattr(i, "kind", "") == "figure" and i.id in ids)]
    for i in section.items:
        if getattr(i, "kind", "") in ("section", "details"):
            _drop_figures(i, ids)


def add_format_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--formats",
        default="png",
        metavar="LIST",
        help="figure files to write besides the HTML, comma-separated: png (always), svg, pdf",
    )


def parse_formats(p: argparse.ArgumentParser, text: str) -> tuple[str, ...]:
    """``--formats`` as a tuple, PNG first (the HTML embeds it); a usage error for an unknown one."""
    formats = [f.strip().lower() for f in text.split(",") if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        p.error(f"--formats: unknown format {bad[0]!r} (valid: {', '.join(FORMATS)})")
    return ("png", *dict.fromkeys(f for f in formats if f != "png"))


def main(argv: list[str]) -> int:
    from .claims import ClaimsError
    from .storage import DatasetFormatError

    p = argcheck.Parser(
        prog="coapcc report",
        description="Figures, summary tables and a self-contained HTML report of a results dataset "
        "(from coapcc sweep) of any study kind; with a second dataset of the same kind, both side by side.",
    )
    p.add_argument("dataset", help="results dataset directory (e.g. results/anrw18)")
    p.add_argument("other", nargs="?", default=None, help="a second dataset to compare with the first")
    p.add_argument(
        "--out",
        "-o",
        default=None,
        metavar="FILE",
        help="HTML file (default: DATASET/report.html, or DATASET/compare-OTHER.html)",
    )
    p.add_argument("--no-trace", action="store_true", help="skip the traced run and its figures")
    p.add_argument(
        "--trace-run", default=None, metavar="HASH", help="config hash (prefix) of the run to trace"
    )
    p.add_argument("--title", default=None, help="report title")
    p.add_argument(
        "--claims",
        default=None,
        metavar="FILE",
        help="claims file whose verdicts open the report (default: the study's packaged claims, if any)",
    )
    p.add_argument("--no-claims", action="store_true", help="no claims table")
    p.add_argument(
        "--workers",
        "-j",
        type=argcheck.number(lo=1, hi=1024, integer=True),
        default=None,
        metavar="N",
        help="processes drawing figures (default: CPU cores)",
    )
    add_format_args(p)
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    a = p.parse_args(argv)
    formats = parse_formats(p, a.formats)
    log = open(os.devnull, "w") if a.quiet else sys.stderr  # noqa: SIM115 - lives as long as the command
    try:
        path = report(
            a.dataset,
            a.out,
            compare=a.other,
            trace=not a.no_trace,
            trace_run=a.trace_run,
            title=a.title,
            formats=formats,
            claims=False if a.no_claims else a.claims,
            workers=a.workers,
            log=log,
            progress=not (a.quiet or a.no_progress),
        )
    except (FileNotFoundError, ValueError, DatasetFormatError, ClaimsError) as e:
        print(f"coapcc report: error: {e}", file=sys.stderr)
        return 2
    if not a.quiet:
        print(path)
    return 0
