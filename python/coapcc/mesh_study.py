"""Mesh studies (``kind = "mesh"`` experiments, ``experiments/ancillotti.toml``): their runs'
records for the sweep's dataset, and their figures, tables and report.

A mesh experiment is an experiment file like any other (:mod:`coapcc.experiment`: the same
loader, checks, seeds, blocks and ``[quick]``), whose runs are mesh runs
(:class:`coapcc.meshsim.MeshConfig`). ``coapcc sweep`` runs it (:mod:`coapcc.sweeper`: the same
executors, journal, resume, progress bar and dataset), with :func:`execute_mesh` as the
worker's entry point; ``coapcc reproduce`` sweeps it and then writes this module's report
(:func:`write_report`; ``coapcc report DIR`` too).

**Dataset.** ``coapcc.load_results(DIR)`` gives ``runs`` (one row per run: the identity
columns of every sweep, ``blocks`` -- every block that has the run, ``|``-separated -- the
configuration's columns (:meth:`~coapcc.meshsim.MeshConfig.columns`), then the run's metrics:
:func:`run_summary`) and ``clients`` (= ``flows``: one row per client, the run's
configuration columns and the report's per-client fields).

**Report.** ``summary.csv`` (per block and grid point: mean and 95 % confidence half-width
over the replications), ``figures/*.png`` and a self-contained ``report.html``. The figures
are those of Ancillotti & Bruno (the mapping is in docs/mesh.md), drawn from the blocks named
``monitoring``, ``events-tb`` and ``events-size``; a block that is absent leaves its figures
out with a note.
"""

from __future__ import annotations

import base64
import json
import math
import os
from pathlib import Path
from typing import Any

from .meshsim import CC_LABELS

__all__ = [
    "execute_mesh",
    "run_summary",
    "load_tables",
    "summary_table",
    "experiment_of",
    "write_report",
    "CC_LABELS",
]

from .kinds.mesh import execute as execute_mesh  # noqa: E402 - the kind runs mesh runs
from .kinds.mesh import run_summary  # noqa: E402


def load_tables(out: str | os.PathLike, experiment=None):
    """``(runs, clients)`` DataFrames of a mesh study's dataset (:func:`coapcc.load_results`),
    keeping only the runs ``experiment`` plans when it is given."""
    from .dataset import load_results

    res = load_results(out)
    runs, clients = res.runs, res.flows
    if experiment is not None and len(runs):
        from .sweeper import plan

        planned = {t.config_hash for t in plan(experiment)}
        runs = runs[runs["config_hash"].isin(planned)].reset_index(drop=True)
        clients = clients[clients["config_hash"].isin(planned)].reset_index(drop=True)
    return runs, clients


# -- statistics and figures -----------------------------------------------------------------


def _ci(values) -> tuple[float, float, int]:
    """Mean, 95 % confidence half-width (Student t) and count of the finite values."""
    import numpy as np

    from .figures import ci95_half

    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    n = len(v)
    if n == 0:
        return math.nan, math.nan, 0
    if n == 1:
        return float(v[0]), math.nan, 1
    return float(v.mean()), float(ci95_half(v.std(ddof=1), n)), n


def _in_block(df, name: str):
    return df[df["blocks"].str.split("|").apply(lambda bs: name in bs)]


def _fmt_x(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _ci_figure(df, x: str, ys: list[tuple[str, str]], panel: str, panel_fmt, xlabel: str, x_fmt=_fmt_x):
    """One row per (column, label) in ``ys``, one panel per value of ``panel``: the mean over
    replications of the column against ``x``, one line per algorithm, 95 % CI bars."""
    from matplotlib.figure import Figure

    from .figures import _colors, _legend

    panels = sorted(df[panel].dropna().unique())
    series = list(dict.fromkeys(df["algorithm"]))
    colors = _colors(series)
    xs = sorted(df[x].dropna().unique())
    pos = {v: i for i, v in enumerate(xs)}
    fig = Figure(figsize=(max(4.2, 3.6 * len(panels)) + 0.4, 2.9 * len(ys) + 0.6))
    axes = fig.subplots(len(ys), len(panels), squeeze=False)
    for ri, (col, ylabel) in enumerate(ys):
        for pi, pv in enumerate(panels):
            ax = axes[ri][pi]
            sub = df[df[panel] == pv]
            for si, s in enumerate(series):
                pts = []
                for xv, g in sub[sub["algorithm"] == s].groupby(x):
                    m, h, _ = _ci(g[col])
                    if not math.isnan(m):
                        pts.append(
                            (pos[xv] + (si - (len(series) - 1) / 2) * 0.08, m, 0.0 if math.isnan(h) else h)
                        )
                if pts:
                    px, py, ph = zip(*pts)
                    ax.errorbar(px, py, yerr=ph, color=colors[s], marker="o", ms=4, capsize=3, lw=1, label=s)
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels([x_fmt(v) for v in xs])
            ax.set_ylim(bottom=0)
            ax.grid(axis="y", alpha=0.3)
            if ri == 0:
                ax.set_title(panel_fmt(pv), fontsize=10)
            if ri == len(ys) - 1:
                ax.set_xlabel(xlabel)
            if pi == 0:
                ax.set_ylabel(ylabel)
    _legend(fig, series, colors, "line", ncol=len(series))
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def _box_figure(long, panel: str, panel_fmt, x: str, xlabel: str, series: str, ylabel: str):
    """Box plots drawn from per-run quantile summaries: for each (panel, x, series) the box is
    the median over replications of each run's p10 / p25 / median / p75 / p90 (whiskers at
    p10 and p90, no fliers). ``long`` has columns panel, x, series and those quantiles."""
    from matplotlib.figure import Figure

    from .figures import _boxes, _colors, _legend

    panels = sorted(long[panel].dropna().unique())
    names = list(dict.fromkeys(long[series]))
    colors = _colors(names)
    xs = sorted(long[x].dropna().unique())
    fig = Figure(figsize=(max(4.2, (0.35 * len(xs) * len(names) + 1.4)) * len(panels) + 0.4, 3.6))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    width = 0.8 / max(1, len(names))
    for pi, pv in enumerate(panels):
        ax = axes[pi]
        sub = long[long[panel] == pv]
        for xi, xv in enumerate(xs):
            for si, s in enumerate(names):
                g = sub[(sub[x] == xv) & (sub[series] == s)]
                q = g[["p10", "p25", "median", "p75", "p90"]].median()
                if g.empty or q.isna().any():
                    continue
                st = {
                    "whislo": q["p10"],
                    "q1": q["p25"],
                    "med": q["median"],
                    "q3": q["p75"],
                    "whishi": q["p90"],
                }
                _boxes(ax, [{**st, "fliers": []}], [xi - 0.4 + width * (si + 0.5)], width, colors[s])
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([_fmt_x(v) for v in xs])
        ax.set_xlim(-0.6, len(xs) - 0.4)
        ax.set_xlabel(xlabel)
        ax.set_title(panel_fmt(pv), fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        if pi == 0:
            ax.set_ylabel(ylabel)
    _legend(fig, names, colors, ncol=len(names))
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return fig


def _grid_title(n) -> str:
    return f"{int(n)}×{int(n)} grid"


def _quantile_long(df, prefix: str, series: str | None = None):
    import pandas as pd

    cols = {f"{prefix}_{q}": q for q in ("p10", "p25", "median", "p75", "p90")}
    out = df[["grid_n", "load_kbps", "algorithm", *cols]].rename(columns=cols)
    if series is not None:
        out = out.assign(algorithm=series)
    return pd.DataFrame(out)


def _figures(runs_df) -> tuple[list[tuple[str, str, Any]], list[tuple[str, str]]]:
    """``(figures, omitted)``: figures as (id, caption, Figure); omitted as (id, why)."""
    import pandas as pd

    figs, omitted = [], []
    ci = "Points: mean over replications; bars: 95 % confidence interval (Student t)."
    mon = _in_block(runs_df, "monitoring") if len(runs_df) else runs_df
    mon = mon[mon["pattern"] == "periodic"] if len(mon) else mon
    mon_ids = ["plr-load", "plr-grid", "retx", "rto-first", "early", "rtt-estimates"]
    if len(mon) and mon["grid_n"].notna().any():
        mon = mon[mon["grid_n"].notna()]
        figs.append(
            (
                "plr-load",
                "Continuous monitoring: mean and maximum per-client packet loss ratio at the sink against the "
                f"network-wide offered load, one panel per grid (Ancillotti & Bruno, PLR figures). {ci}",
                _ci_figure(
                    mon,
                    "load_kbps",
                    [("plr_mean", "PLR (mean over clients)"), ("plr_max", "PLR (max over clients)")],
                    "grid_n",
                    _grid_title,
                    "offered load (kbit/s)",
                ),
            )
        )
        figs.append(
            (
                "plr-grid",
                f"Continuous monitoring: mean per-client PLR against the grid size, one panel per offered load. {ci}",
                _ci_figure(
                    mon,
                    "grid_n",
                    [("plr_mean", "PLR (mean over clients)")],
                    "load_kbps",
                    lambda v: f"{v:g} kbit/s",
                    "grid (n×n)",
                    x_fmt=lambda v: f"{int(v)}×{int(v)}",
                ),
            )
        )
        figs.append(
            (
                "retx",
                "Continuous monitoring: CoAP retransmissions per message (mean over clients) and per 32-byte "
                f"frame (mean and maximum over clients) against the offered load. {ci}",
                _ci_figure(
                    mon,
                    "load_kbps",
                    [
                        ("retransmissions_per_message_mean", "retx per message"),
                        ("retransmissions_per_frame_mean", "retx per frame (mean)"),
                        ("retransmissions_per_frame_max", "retx per frame (max)"),
                    ],
                    "grid_n",
                    _grid_title,
                    "offered load (kbit/s)",
                ),
            )
        )
        figs.append(
            (
                "rto-first",
                "Continuous monitoring: distribution of the RTO of first transmissions (T_0 of every frame). "
                "Box: median over replications of each run's quartiles and median; whiskers p10 / p90.",
                _box_figure(
                    _quantile_long(mon, "rto_first_s"),
                    "grid_n",
                    _grid_title,
                    "load_kbps",
                    "offered load (kbit/s)",
                    "algorithm",
                    "RTO of first transmissions (s)",
                ),
            )
        )
        figs.append(
            (
                "early",
                "Continuous monitoring: early retransmissions, the share of first transmissions that reached "
                "the sink and whose ACK came back, yet were retransmitted (mean and maximum over clients). "
                f"{ci}",
                _ci_figure(
                    mon,
                    "load_kbps",
                    [
                        ("early_retransmissions_mean", "early retx (mean)"),
                        ("early_retransmissions_max", "early retx (max)"),
                    ],
                    "grid_n",
                    _grid_title,
                    "offered load (kbit/s)",
                ),
            )
        )
        cocoa = mon[mon["rtt_weak_s_median"].notna() | mon["rtt_strong_s_median"].notna()]
        if len(cocoa):
            long = pd.concat(
                [
                    _quantile_long(cocoa, "rtt_strong_s", "strong RTO estimator"),
                    _quantile_long(cocoa, "rtt_weak_s", "weak RTO estimator"),
                ],
                ignore_index=True,
            )
            figs.append(
                (
                    "rtt-estimates",
                    "Continuous monitoring, CoCoA+: the strong and weak estimators' RTO (SRTT + K·RTTVAR) after "
                    "each update. Box: median over replications of each run's quartiles; whiskers p10 / p90.",
                    _box_figure(
                        long,
                        "grid_n",
                        _grid_title,
                        "load_kbps",
                        "offered load (kbit/s)",
                        "algorithm",
                        "estimator RTO (s)",
                    ),
                )
            )
        else:
            omitted.append(
                ("rtt-estimates", "no run of an algorithm with weak/strong estimators (CoCoA family)")
            )
    else:
        omitted += [(i, "no 'monitoring' block of periodic traffic over n×n grids") for i in mon_ids]
    for block, x, xlabel, fid, what in (
        ("events-tb", "tb_s", "mean inter-event time T_b (min)", "plr-tb", "the mean inter-event time T_b"),
        ("events-size", "event_bytes", "event message size (bytes)", "plr-size", "the event message size"),
    ):
        ev = _in_block(runs_df, block) if len(runs_df) else runs_df
        ev = ev[(ev["pattern"] == "events") & ev["grid_n"].notna()] if len(ev) else ev
        if not len(ev):
            omitted.append((fid, f"no '{block}' block of event traffic over n×n grids"))
            continue
        if x == "tb_s":
            ev = ev.assign(tb_min=ev["tb_s"] / 60.0)
            x = "tb_min"
        figs.append(
            (
                fid,
                f"Global event detection: PLR of the event messages (mean and maximum over clients) against "
                f"{what}, one panel per grid. {ci}",
                _ci_figure(
                    ev,
                    x,
                    [("plr_event_mean", "event PLR (mean)"), ("plr_event_max", "event PLR (max)")],
                    "grid_n",
                    _grid_title,
                    xlabel,
                ),
            )
        )
    return figs, omitted


def summary_table(runs_df, blocks: list[str] | None = None):
    """Per block and grid point (algorithm, topology, traffic): replications and, for the
    main metrics, the mean with its 95 % confidence half-width. A point two blocks share is
    listed in both. ``blocks``: block names in order (default: as they appear)."""
    import pandas as pd

    metrics = [
        "plr_mean",
        "plr_max",
        "plr_event_mean",
        "retransmissions_per_message_mean",
        "early_retransmissions_mean",
        "rto_first_s_median",
    ]
    rows = []
    if not len(runs_df):
        return pd.DataFrame()
    if blocks is None:
        blocks = list(dict.fromkeys(b for bs in runs_df["blocks"] for b in bs.split("|")))
    for block in blocks:
        for (_, alg, topo, traffic), g in _in_block(runs_df, block).groupby(
            ["point_hash", "algorithm", "topology", "traffic"], sort=False
        ):
            rows.append(_summary_row(block, alg, topo, traffic, g, metrics))
    return pd.DataFrame(rows)


def _summary_row(block, alg, topo, traffic, g, metrics) -> dict:
    row = {"block": block, "algorithm": alg, "topology": topo, "traffic": traffic, "replications": len(g)}
    for m in metrics:
        mean, half, _ = _ci(g[m])
        row[m] = mean
        row[f"{m}_ci95"] = half
    for c in [c for c in g.columns if c.startswith("loss_")]:
        row[c] = float(g[c].mean())
    return row


# -- report ---------------------------------------------------------------------------------


def _png(fig) -> bytes:
    """PNG at 90 dpi, no date in the metadata (the same figure gives the same bytes). The
    figures are laid out already (``tight_layout``): no ``bbox_inches="tight"``, which would
    lay every text out again (matplotlib's text layout is most of a report's time)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()


def _fmt_cell(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "–"
        return f"{v:.4g}"
    return str(v)


def write_report(out: str | os.PathLike, experiment=None, *, outcome=None, log=None) -> Path:
    """``summary.csv``, ``figures/*.png`` and ``report.html`` of the finished runs of a mesh
    study's dataset ``out`` (``experiment``: the mesh experiment; default: the one the dataset
    records, :func:`experiment_of`); ``outcome``: the :class:`~coapcc.sweeper.SweepOutcome` of
    the sweep that just ran, for the overview. Returns the report's path."""
    import jinja2

    from .sweeper import plan

    out = Path(out)
    exp = experiment if experiment is not None else experiment_of(out)
    tasks = plan(exp)
    runs_df, _ = load_tables(out, exp)
    summary = summary_table(runs_df, [b.name for b in exp.blocks])
    summary.to_csv(out / "summary.csv", index=False)
    figdir = out / "figures"
    figdir.mkdir(exist_ok=True)
    figures, omitted = _figures(runs_df) if len(runs_df) else ([], [("all", "no finished run")])
    fig_ctx = []
    for fid, caption, fig in figures:
        png = _png(fig)
        (figdir / f"{fid}.png").write_bytes(png)
        fig_ctx.append(
            {
                "id": fid,
                "caption": caption,
                "png_b64": base64.b64encode(png).decode(),
                "files": [("png", f"figures/{fid}.png")],
            }
        )
    cpu = float(runs_df["cpu_s"].sum()) if len(runs_df) else 0.0
    overview = [
        ("experiment", exp.name),
        ("runs finished", f"{len(runs_df)} of {len(tasks)}"),
        ("replications", str(exp.replications)),
        ("simulated time per run", f"{float(exp.base.get('duration_s', math.nan)):g} s"),
        ("base seed", str(exp.seed)),
        ("CPU time of the runs", f"{cpu:.1f} s (sum over runs)"),
    ]
    if outcome is not None:
        overview.append(
            (
                "this invocation",
                f"{outcome.ran} runs in {outcome.wall_s:.1f} s wall; {outcome.done_before} reused",
            )
        )
    warnings = []
    if len(runs_df) < len(tasks):
        warnings.append(f"{len(tasks) - len(runs_df)} planned runs are missing; rerun to complete them")
    if outcome is not None and outcome.failed:
        warnings.append(
            f"{len(outcome.failed)} runs failed: " + "; ".join(f"{i}: {m}" for i, m in outcome.failed[:5])
        )
    blocks = []
    for b in exp.blocks:
        sub = summary[summary["block"] == b.name] if len(summary) else summary
        cols = [c for c in (sub.columns if len(sub) else []) if c != "block"]
        blocks.append(
            {
                "name": b.name,
                "description": b.description,
                "columns": cols,
                "rows": [[_fmt_cell(v) for v in r] for r in sub[cols].itertuples(index=False)]
                if len(sub)
                else [],
            }
        )
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("coapcc", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    text = env.get_template("mesh_study.html.j2").render(
        title=exp.title or exp.name,
        description=exp.description,
        overview=overview,
        warnings=warnings,
        figures=fig_ctx,
        omitted=omitted,
        blocks=blocks,
        source=exp.source or "",
        plan=exp.summary([t.planned for t in tasks]),
        configs=[
            {
                "title": f"Fully resolved mesh configuration of the first run of block '{b.name}'",
                "json": json.dumps(
                    next(t.planned.config.to_dict() for t in tasks if b.name in t.blocks), indent=2
                ),
            }
            for b in exp.blocks
            if any(b.name in t.blocks for t in tasks)
        ],
    )
    path = out / "report.html"
    tmp = path.with_name(".report.html.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    if log is not None:
        print(
            f"report {exp.name}: {len(runs_df)} runs, {len(fig_ctx)} figures -> {path}", file=log, flush=True
        )
    return path


def experiment_of(out: str | os.PathLike):
    """The experiment a dataset was swept from, as its ``experiment.json`` records it (what
    defines the runs), with the block descriptions of its ``experiment.toml`` when there is one."""
    from .experiment import Experiment, tomllib

    out = Path(out)
    meta = json.loads((out / "experiment.json").read_text())
    descriptions = {}
    source = None
    try:
        source = (out / "experiment.toml").read_text()
        descriptions = {
            b.get("name"): b.get("description", "") for b in tomllib.loads(source).get("block", [])
        }
    except (OSError, ValueError):
        pass
    data = {
        "name": meta["name"],
        "kind": meta.get("kind", "sim"),
        "title": meta.get("title", ""),
        "description": meta.get("description", ""),
        "seed": meta["seed"],
        "replications": meta["replications"],
        "base": meta.get("base", {}),
        "block": [
            {
                **{k: b[k] for k in ("name", "grid", "base", "replications")},
                "description": descriptions.get(b["name"], ""),
            }
            for b in meta["blocks"]
        ],
    }
    return Experiment.from_dict(data, source=source, path=meta.get("source_path"))


#: Names of the mesh study's earlier runner, and what replaces them now that a mesh study is a
#: sweep (one experiment loader, the sweep's dataset).
_MOVED = {
    "MeshExperiment": "coapcc.experiment.Experiment (kind = 'mesh')",
    "MeshBlock": "coapcc.experiment.Block",
    "MeshRun": "coapcc.sweeper.Task (coapcc.sweeper.plan)",
    "StudyOutcome": "coapcc.sweeper.SweepOutcome",
    "load_mesh_experiment": "coapcc.find_experiment / coapcc.load_experiment",
    "find_mesh_experiment": "coapcc.find_experiment",
    "plan": "coapcc.sweeper.plan",
    "plan_summary": "Experiment.summary",
    "run_study": "coapcc.sweep(experiment, out)",
    "write_tables": "coapcc.load_results(out) (runs, clients)",
    "reproduce_mesh": "coapcc.reproduce(name)",
    "main": "coapcc.sweeper.main / coapcc.reproduction.main",
}


def __getattr__(name: str):
    if name in _MOVED:
        raise AttributeError(
            f"coapcc.mesh_study.{name} is gone: a mesh study is a sweep now (docs/sweeps.md, 'Mesh studies'); "
            f"use {_MOVED[name]}"
        )
    raise AttributeError(f"module 'coapcc.mesh_study' has no attribute {name!r}")
