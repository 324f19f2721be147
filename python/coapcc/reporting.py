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
  they are drawn while the rest of the report is computed: :class:`~coapcc.drawing.FigureDrawer`), each as a
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
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from . import argcheck
from .drawing import FORMATS, FigureDrawer, Job, prepare
from .runner import RunnerLike

__all__ = ["report", "main", "prepare", "FigureDrawer", "Job", "add_format_args", "parse_formats", "FORMATS"]


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
