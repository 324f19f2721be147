"""The CoAP-over-TCP thesis's tables as figures: for each of its Tables 6-13, one box per cell
with the thesis's percentiles (boxes at the quartiles, whiskers at p10 / p90, a dot at p95,
the median as a line), the thesis's published median beside it as a star, and the start-delay
sensitivity (the unpublished start delay, :data:`coapcc.studies.tcp_thesis`'s dataset block
``start-delay``).

:func:`report_figures` is the report's hook (``figures =
["coapcc.studies.tcp_thesis_figures:report_figures"]`` in ``coap-tcp-thesis.toml``,
:mod:`coapcc.reports.study`): the figures of a ``coap-tcp-thesis`` dataset as the report's
:class:`coapcc.reports.Figure` items, drawn by the report builder. :func:`thesis_figures`
draws them at once from loaded results: ``thesis_figures(results)`` returns ``{name:
matplotlib Figure}``. Both take the published medians from the study's claims file. Percentiles interpolate linearly between
closest ranks (numpy's default; AMBIG-T10), over every flow of every replication of a cell.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "TABLES",
    "COLUMNS",
    "cell_percentiles",
    "table_figure",
    "start_delay_figure",
    "thesis_figures",
    "report_figures",
]

#: The flows columns the figures read.
COLUMNS = ("block", "clients", "errors", "buffer_bytes", "algorithm", "fct_s", "start_jitter_ms")

#: The thesis's tables: number -> (title, clients, errors).
TABLES: dict[int, tuple[str, int, str]] = {
    6: ("Table 6: 1 client, no link errors", 1, "none"),
    7: ("Table 7: 4 clients, no link errors", 4, "none"),
    8: ("Table 8: 1 client, low errors", 1, "low"),
    9: ("Table 9: 1 client, medium errors", 1, "medium"),
    10: ("Table 10: 1 client, high errors", 1, "high"),
    11: ("Table 11: 4 clients, low errors", 4, "low"),
    12: ("Table 12: 4 clients, medium errors", 4, "medium"),
    13: ("Table 13: 4 clients, high errors", 4, "high"),
}

#: The cells of a table, in the thesis's order: (label, block, algorithm, buffer).
_CELLS = (
    ("Default 2 500", "udp", "default", 2500),
    ("CoCoA 2 500", "udp", "cocoa", 2500),
    *(
        (f"New Reno {b}", "tcp-newreno", "newreno", x)
        for b, x in (("2 500", 2500), ("14 100", 14100), ("28 200", 28200), ("inf.", 1410000))
    ),
    *(
        (f"BBR {b}", "tcp-bbr", "bbr", x)
        for b, x in (("2 500", 2500), ("14 100", 14100), ("28 200", 28200), ("inf.", 1410000))
    ),
)


def cell_percentiles(values) -> dict[str, float] | None:
    """The thesis's percentiles of ``values`` (p10, p25, median, p75, p90, p95), or ``None``."""
    import numpy as np

    v = np.asarray([x for x in values if x == x], dtype=float)
    if len(v) == 0:
        return None
    q = np.percentile(v, [10, 25, 50, 75, 90, 95])
    return dict(zip(("p10", "p25", "median", "p75", "p90", "p95"), (float(x) for x in q)))


def _published() -> dict[tuple, float]:
    """(block, clients, buffer, errors, algorithm) -> the thesis's median, from the claims."""
    from ..claims import find_claims

    out: dict[tuple, float] = {}
    for c in find_claims("coap-tcp-thesis").claims:
        w = dict(c.args.get("where", {}))
        if c.args.get("column") == "fct_s" and isinstance(c.paper, (int, float)):
            algo = w.get("algorithm") or {"tcp-newreno": "newreno", "tcp-bbr": "bbr"}.get(w.get("block"))
            out[(w.get("block"), w.get("clients"), w.get("buffer_bytes"), w.get("errors"), algo)] = float(
                c.paper
            )
    return out


def table_figure(flows, table: int, published: Mapping[tuple, float] | None = None):
    """One thesis table as boxes: x = its cells (Default and CoCoA at 2 500 B, New Reno and BBR
    at each buffer), the simulated transfer times' percentiles and the published median (star)."""
    from matplotlib.figure import Figure

    title, clients, errors = TABLES[table]
    published = _published() if published is None else published
    fig = Figure(figsize=(9.0, 3.6))
    ax = fig.subplots()
    labels, stats, stars = [], [], []
    for label, block, algo, buf in _CELLS:
        sel = flows[
            (flows["block"] == block)
            & (flows["clients"] == clients)
            & (flows["errors"] == errors)
            & (flows["buffer_bytes"] == buf)
            & (flows["algorithm"] == algo)
        ]
        p = cell_percentiles(sel["fct_s"]) if len(sel) else None
        if p is None:
            continue
        labels.append(label)
        stats.append(
            {
                "whislo": p["p10"],
                "q1": p["p25"],
                "med": p["median"],
                "q3": p["p75"],
                "whishi": p["p90"],
                "fliers": [],
            }
        )
        stars.append((p["p95"], published.get((block, clients, buf, errors, algo))))
    if not stats:
        ax.text(0.5, 0.5, "no runs", transform=ax.transAxes, ha="center", va="center", color="0.4")
    else:
        xs = list(range(len(stats)))
        art = ax.bxp(stats, positions=xs, widths=0.6, showfliers=False, patch_artist=True, manage_ticks=False,
                     medianprops={"color": "black", "linewidth": 1.2})  # fmt: skip
        for b in art["boxes"]:
            b.set_facecolor("#9ecae1")
        ax.plot(xs, [s[0] for s in stars], "o", color="0.3", markersize=3, label="p95")
        pub = [(x, s[1]) for x, s in zip(xs, stars) if s[1] is not None]
        if pub:
            ax.plot(
                [x for x, _ in pub],
                [v for _, v in pub],
                "*",
                color="#d62728",
                markersize=9,
                label="thesis median",
            )
        ax.set_xticks(xs)
        ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
        ax.legend(fontsize=8, loc="upper left")
        top = max(max(s["whishi"] for s in stats), max((v for _, v in pub), default=0))
        if top / max(1e-9, min(s["whislo"] for s in stats)) > 20:
            ax.set_yscale("log")
    ax.set_ylabel("transfer time (s)")
    ax.set_title(f"{title}: simulated (boxes p25-p75, whiskers p10/p90, dot p95) and published", fontsize=10)
    ax.grid(axis="y", alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def start_delay_figure(flows):
    """Median transfer time of New Reno with 4 clients against the clients' start delay
    U[0, J] (the block ``start-delay``), one line per buffer, with the p25-p75 band."""
    from matplotlib.figure import Figure

    sel = flows[flows["block"] == "start-delay"]
    fig = Figure(figsize=(6.0, 3.6))
    ax = fig.subplots()
    for buf, g in sorted(sel.groupby("buffer_bytes"), key=lambda kv: kv[0]):
        rows = []
        for j, gj in sorted(g.groupby("start_jitter_ms"), key=lambda kv: kv[0]):
            p = cell_percentiles(gj["fct_s"])
            if p:
                rows.append((j / 1e3, p["p25"], p["median"], p["p75"]))
        if rows:
            xs = [r[0] for r in rows]
            line = ax.plot(xs, [r[2] for r in rows], "o-", label=f"{buf} B")[0]
            ax.fill_between(
                xs, [r[1] for r in rows], [r[3] for r in rows], color=line.get_color(), alpha=0.15
            )
    ax.set_xlabel("start delay J: each client starts at U[0, J] (s)")
    ax.set_ylabel("transfer time (s)")
    ax.set_title("New Reno, 4 clients, no errors: sensitivity to the start delay", fontsize=10)
    ax.grid(alpha=0.3)
    if ax.lines:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def thesis_figures(results: Any) -> dict[str, Any]:
    """Every figure of this module for a coap-tcp-thesis dataset: ``table6`` ... ``table13``
    and ``start-delay`` (when the dataset has that block)."""
    flows = results.flows
    published = _published()
    figs = {f"table{t}": table_figure(flows, t, published) for t in TABLES}
    if "block" in flows.columns and (flows["block"] == "start-delay").any():
        figs["start-delay"] = start_delay_figure(flows)
    return figs


def report_figures(ds) -> list:
    """The figures of :func:`thesis_figures` for the report of the dataset ``ds``
    (:class:`coapcc.reports.Dataset`), as drawing functions of its flows (only the columns
    the figures read)."""
    from ..reports import Figure

    flows = ds.load(columns=(), flow_columns=COLUMNS, sort=False).flows
    if not len(flows) or "fct_s" not in flows:
        return []
    published = _published()
    figs = [
        Figure(
            f"thesis-table{t}",
            f"{TABLES[t][0]}: the simulated transfer times (boxes at the quartiles, whiskers at p10/p90, a dot at "
            "p95) and the thesis's median (star)",
            lambda t=t: table_figure(flows, t, published),
        )
        for t in TABLES
    ]
    if "block" in flows.columns and (flows["block"] == "start-delay").any():
        figs.append(
            Figure(
                "thesis-start-delay",
                "New Reno, 4 clients, no errors: the median transfer time (p25-p75 band) against the clients' "
                "start delay U[0, J] (the unpublished start delay; block start-delay)",
                lambda: start_delay_figure(flows),
            )
        )
    return figs
