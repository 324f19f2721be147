"""The report of mesh studies (``kind = "mesh"``, ``experiments/ancillotti.toml``): the
summary per block and grid point (mean and 95 % confidence half-width over the replications)
and Ancillotti & Bruno's figures (the mapping is in docs/mesh.md), drawn from the blocks
named ``monitoring``, ``events-tb`` and ``events-size``; a block that is absent leaves its
figures out with a note. Two mesh datasets compared: both in every figure and table, each
algorithm tagged with its dataset.

**Dataset.** ``coapcc.load_results(DIR)`` gives ``runs`` (one row per run: the identity
columns of every sweep, ``blocks`` -- every block that has the run, ``|``-separated -- the
configuration's columns (:meth:`~coapcc.meshsim.MeshConfig.columns`), then the run's metrics:
:func:`coapcc.kinds.mesh.run_summary`) and ``clients`` (= ``flows``: one row per client).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from ..figures import mesh as FM
from ..stats import mean_ci
from . import Code, Figure, Report, Section, Text, table

__all__ = ["build", "summary_table", "experiment_of"]

_CI = "Points: mean over replications; bars: 95 % confidence interval (Student t)."
_METRICS = [
    "plr_mean",
    "plr_max",
    "plr_event_mean",
    "retransmissions_per_message_mean",
    "early_retransmissions_mean",
    "rto_first_s_median",
]


def _in_block(df, name: str):
    return df[df["blocks"].str.split("|").apply(lambda bs: name in bs)]


def summary_table(runs_df, blocks: list[str] | None = None):
    """Per block and grid point (algorithm, topology, traffic): replications and, for the
    main metrics, the mean with its 95 % confidence half-width. A point two blocks share is
    listed in both. ``blocks``: block names in order (default: as they appear)."""
    import pandas as pd

    if not len(runs_df):
        return pd.DataFrame()
    if blocks is None:
        blocks = list(dict.fromkeys(b for bs in runs_df["blocks"] for b in bs.split("|")))
    rows = []
    for block in blocks:
        for (_, alg, topo, traffic), g in _in_block(runs_df, block).groupby(
            ["point_hash", "algorithm", "topology", "traffic"], sort=False
        ):
            row = {
                "block": block,
                "algorithm": alg,
                "topology": topo,
                "traffic": traffic,
                "replications": len(g),
            }
            for m in _METRICS:
                mean, half, _ = mean_ci(g[m])
                row[m] = mean
                row[f"{m}_ci95"] = half
            for c in [c for c in g.columns if c.startswith("loss_")]:
                row[c] = float(g[c].mean())
            rows.append(row)
    return pd.DataFrame(rows)


def _grid_title(n) -> str:
    return f"{int(n)}×{int(n)} grid"


def _quantile_long(df, prefix: str, series: str | None = None):
    import pandas as pd

    cols = {f"{prefix}_{q}": q for q in ("p10", "p25", "median", "p75", "p90")}
    out = df[["grid_n", "load_kbps", "algorithm", *cols]].rename(columns=cols)
    if series is not None:
        out = out.assign(algorithm=[f"{series}{a[len(a.rsplit(' [', 1)[0]) :]}" for a in out["algorithm"]])
    return pd.DataFrame(out)


def _ci(df, x: str, ys: list[tuple[str, str]], panel: str, panel_fmt, xlabel: str, x_fmt=FM.fmt_x):
    """A :func:`coapcc.figures.mesh.ci_figure` of ``df`` (its points computed now)."""
    pts = FM.ci_points(df, x, [c for c, _ in ys], panel)
    panels = sorted(df[panel].dropna().unique())
    series = list(dict.fromkeys(df["algorithm"]))
    xs = sorted(df[x].dropna().unique())
    return lambda: FM.ci_figure(pts, ys, panels, series, xs, panel_fmt, xlabel, x_fmt)


def _box(long, ylabel: str):
    pts = FM.box_points(long, "grid_n", "load_kbps", "algorithm")
    panels = sorted(long["grid_n"].dropna().unique())
    series = list(dict.fromkeys(long["algorithm"]))
    xs = sorted(long["load_kbps"].dropna().unique())
    return lambda: FM.box_figure(pts, panels, series, xs, _grid_title, "offered load (kbit/s)", ylabel)


def figures(runs_df) -> tuple[list[Figure], list[tuple[str, str]]]:
    """The study's figures and the ones left out (id, why)."""
    import pandas as pd

    figs, omitted = [], []
    mon = _in_block(runs_df, "monitoring") if len(runs_df) else runs_df
    mon = mon[mon["pattern"] == "periodic"] if len(mon) else mon
    mon_ids = ["plr-load", "plr-grid", "retx", "rto-first", "early", "rtt-estimates"]
    load = ("grid_n", _grid_title, "offered load (kbit/s)")
    if len(mon) and mon["grid_n"].notna().any():
        mon = mon[mon["grid_n"].notna()]
        figs.append(
            Figure(
                "plr-load",
                "Continuous monitoring: mean and maximum per-client packet loss ratio at the sink against the "
                f"network-wide offered load, one panel per grid (Ancillotti & Bruno, PLR figures). {_CI}",
                _ci(
                    mon,
                    "load_kbps",
                    [("plr_mean", "PLR (mean over clients)"), ("plr_max", "PLR (max over clients)")],
                    *load,
                ),
            )
        )
        figs.append(
            Figure(
                "plr-grid",
                f"Continuous monitoring: mean per-client PLR against the grid size, one panel per offered load. {_CI}",
                _ci(
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
            Figure(
                "retx",
                "Continuous monitoring: CoAP retransmissions per message (mean over clients) and per 32-byte "
                f"frame (mean and maximum over clients) against the offered load. {_CI}",
                _ci(
                    mon,
                    "load_kbps",
                    [
                        ("retransmissions_per_message_mean", "retx per message"),
                        ("retransmissions_per_frame_mean", "retx per frame (mean)"),
                        ("retransmissions_per_frame_max", "retx per frame (max)"),
                    ],
                    *load,
                ),
            )
        )
        figs.append(
            Figure(
                "rto-first",
                "Continuous monitoring: distribution of the RTO of first transmissions (T_0 of every frame). "
                "Box: median over replications of each run's quartiles and median; whiskers p10 / p90.",
                _box(_quantile_long(mon, "rto_first_s"), "RTO of first transmissions (s)"),
            )
        )
        figs.append(
            Figure(
                "early",
                "Continuous monitoring: early retransmissions, the share of first transmissions that reached "
                f"the sink and whose ACK came back, yet were retransmitted (mean and maximum over clients). {_CI}",
                _ci(
                    mon,
                    "load_kbps",
                    [
                        ("early_retransmissions_mean", "early retx (mean)"),
                        ("early_retransmissions_max", "early retx (max)"),
                    ],
                    *load,
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
                Figure(
                    "rtt-estimates",
                    "Continuous monitoring, CoCoA+: the strong and weak estimators' RTO (SRTT + K·RTTVAR) after "
                    "each update. Box: median over replications of each run's quartiles; whiskers p10 / p90.",
                    _box(long, "estimator RTO (s)"),
                )
            )
        else:
            omitted.append(
                (
                    "rtt-estimates",
                    "not drawn: no run of an algorithm with weak/strong estimators (CoCoA family).",
                )
            )
    else:
        omitted += [
            (i, "not drawn: no 'monitoring' block of periodic traffic over n×n grids.") for i in mon_ids
        ]
    for block, x, xlabel, fid, what in (
        ("events-tb", "tb_s", "mean inter-event time T_b (min)", "plr-tb", "the mean inter-event time T_b"),
        ("events-size", "event_bytes", "event message size (bytes)", "plr-size", "the event message size"),
    ):
        ev = _in_block(runs_df, block) if len(runs_df) else runs_df
        ev = ev[(ev["pattern"] == "events") & ev["grid_n"].notna()] if len(ev) else ev
        if not len(ev):
            omitted.append((fid, f"not drawn: no '{block}' block of event traffic over n×n grids."))
            continue
        if x == "tb_s":
            ev = ev.assign(tb_min=ev["tb_s"] / 60.0)
            x = "tb_min"
        figs.append(
            Figure(
                fid,
                f"Global event detection: PLR of the event messages (mean and maximum over clients) against "
                f"{what}, one panel per grid. {_CI}",
                _ci(
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


def experiment_of(out: str | os.PathLike):
    """The experiment a dataset was swept from, as its ``experiment.json`` records it (what
    defines the runs), with the block descriptions of its ``experiment.toml`` when there is one."""
    from ..experiment import Experiment, tomllib

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


def _load(ctx, i: int, ds):
    """The runs of dataset ``ds`` that its experiment plans, algorithms tagged; its
    experiment and its plan."""
    from ..sweeper import plan

    exp = experiment_of(ds.path)
    tasks = plan(exp)
    runs = ds.load(flow_columns=()).runs
    if len(runs):
        planned = {t.config_hash for t in tasks}
        runs = runs[runs["config_hash"].isin(planned)].reset_index(drop=True)
        runs["algorithm"] = [ctx.tag(a, i) for a in runs["algorithm"]]
    return runs, exp, tasks


def build(ctx) -> Report:
    """The report of a mesh study (see the module's documentation)."""
    import pandas as pd

    loaded = [_load(ctx, i, ds) for i, ds in enumerate(ctx.datasets)]
    runs_df = pd.concat([r for r, _, _ in loaded], ignore_index=True)
    exp, tasks = loaded[0][1], loaded[0][2]
    block_names = list(dict.fromkeys(b.name for _, e, _ in loaded for b in e.blocks))
    summary = summary_table(runs_df, block_names)
    figs, omitted = figures(runs_df) if len(runs_df) else ([], [("all", "not drawn: no finished run.")])
    cpu = float(runs_df["cpu_s"].sum()) if len(runs_df) else 0.0
    planned = sum(len(t) for _, _, t in loaded)
    overview = [
        ("experiment" if not ctx.compare else "experiments", ", ".join(e.name for _, e, _ in loaded)),
        ("datasets" if ctx.compare else "dataset", ", ".join(str(d.path) for d in ctx.datasets)),
        ("runs finished", f"{len(runs_df)} of {planned}"),
        ("replications", ", ".join(str(e.replications) for _, e, _ in loaded)),
        (
            "simulated time per run",
            ", ".join(f"{float(e.base.get('duration_s', math.nan)):g} s" for _, e, _ in loaded),
        ),
        ("base seed", ", ".join(str(e.seed) for _, e, _ in loaded)),
        ("CPU time of the runs", f"{cpu:.1f} s (sum over runs)"),
    ]
    if ctx.outcome is not None:
        o = ctx.outcome
        overview.append(("this invocation", f"{o.ran} runs in {o.wall_s:.1f} s wall; {o.done_before} reused"))
    warnings = []
    if len(runs_df) < planned:
        warnings.append(f"{planned - len(runs_df)} planned runs are missing; rerun to complete them")
    if ctx.outcome is not None and ctx.outcome.failed:
        warnings.append(
            f"{len(ctx.outcome.failed)} runs failed: "
            + "; ".join(f"{i}: {m}" for i, m in ctx.outcome.failed[:5])
        )
    blocks = []
    for name in block_names:
        sub = summary[summary["block"] == name] if len(summary) else summary
        desc = next(
            (b.description for _, e, _ in loaded for b in e.blocks if b.name == name and b.description), ""
        )
        items = [Text(desc, muted=True)] if desc else []
        if len(sub):
            items.append(table(sub.drop(columns="block"), nan="–"))
        else:
            items.append(Text("no finished run", muted=True))
        blocks.append(Section(f"block-{name}", name, items))
    configs = []
    for _, e, t in loaded:
        for b in e.blocks:
            first = next((x for x in t if b.name in x.blocks), None)
            if first is not None:
                configs.append(
                    Code(
                        f"Fully resolved mesh configuration of the first run of block '{b.name}'"
                        + (f" ({e.name})" if ctx.compare else ""),
                        json.dumps(first.planned.config.to_dict(), indent=2),
                    )
                )
    conf = Section(
        "configuration", "Configuration", [Code("plan", exp.summary([x.planned for x in tasks]), open=True)]
    )
    if exp.source:
        conf.add(Code("experiment file", exp.source))
    conf.add(*configs)
    title = exp.title or exp.name
    if ctx.compare:
        title = f"coapcc report: {ctx.names[0]} vs {ctx.names[1]}"
    return Report(
        title=title,
        description=exp.description if not ctx.compare else "",
        overview=overview,
        warnings=warnings,
        sections=[
            Section("figures", "Figures", figs),
            Section(
                "summary",
                "Summary per grid point",
                [
                    Text(
                        "Mean over replications and the half-width of its 95 % confidence interval (Student t; "
                        "\u2013 with one replication). Loss causes: mean count per run (messages for no_caching "
                        "and coap_give_up, packets otherwise). Also in summary.csv; every run in the dataset "
                        "(coapcc.load_results).",
                        muted=True,
                    ),
                    *blocks,
                ],
            ),
            Section(
                "model",
                "What the simulator models",
                [
                    Text(
                        "Motes share one 802.15.4 radio medium at 250 kbit/s with a distance-dependent reception "
                        "ratio, an interference range, collisions, capture and CCA; unslotted CSMA/CA (here "
                        "Contiki's CSMA rules) with MAC ACKs, retries and per-node queues; real frame sizes (MAC, "
                        "6LoWPAN, RPL option, CoAP); a converged RPL DODAG with storing-mode routes; each client's "
                        "messages cut into 32-byte units, each a Confirmable exchange under the algorithm; the "
                        "no-caching rule. Not modelled: Cooja's ray-traced radio, RPL control traffic and route "
                        "repair, mote CPU time, 6LoWPAN fragmentation, radio energy. The full list and the "
                        "parameters are in the mesh simulator's documentation (docs/mesh.md)."
                    )
                ],
            ),
            conf,
        ],
        omitted=omitted,
        files={"summary.csv": summary},
    )
