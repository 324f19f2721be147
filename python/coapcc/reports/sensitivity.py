"""The sensitivity study's report (``kind = "sensitivity"``): the figure, how much each
conclusion depends on the burst parameter, the verdicts, the transfers and the gain table;
``summary.md`` (the same summary as Markdown) and the CSV tables beside it. Two sensitivity
datasets compared: each one's figure and conclusions, and their ratios side by side."""

from __future__ import annotations

import math

from ..kinds.sensitivity import DEFAULT_BURST_PACKETS, DEFAULT_T_B
from ..sensitivity import BASELINES, INTERVAL, METRICS, _side, _xs, analyse, conclusions
from . import Figure, Report, Section, Table, Text, table

__all__ = ["build", "summary_markdown", "Summary"]

# The flows' columns the analysis reads (the rest of the dataset stays on disk).
_FLOW_COLUMNS = (
    "part",
    "error_profile",
    "clock",
    "burst_value",
    "workload",
    "label",
    "seed",
    "fct_s",
    "retransmissions",
)

FIGURE = (
    "FASOR's median FCT and retransmissions per flow relative to Default CoAP and CoCoA (below 1: "
    "FASOR better) against the mean burst sojourn T_B (time clock) and the mean burst length (packet "
    "clock), one column per error profile and clock; bands: paired bootstrap intervals over the seeds; "
    "dotted: the simulator's default setting. The last row: transfer FCTs (median, p25-p75)."
)


def _fmt(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.2f}"


class Summary:
    """The study's summary as data (what ran, the dependency table, the verdicts, the
    transfers), which :func:`summary_markdown` and the HTML report both render."""

    def __init__(self, res, command: str):
        st = res.study
        self.res = res
        tb = [v.value for v in st.variants if v.clock == "time"]
        bp = [v.value for v in st.variants if v.clock == "packet"]
        pct = f"{INTERVAL:.0%}"
        self.setup = [
            f"Command: `{command}`. Base: the `errors` block of `fasor18` "
            f"({', '.join(f'{k} = {v}' for k, v in sorted(st.base.items()))}); algorithms "
            f"{', '.join(f'{k} (`{v}`)' for k, v in st.algorithms.items())}; workloads {', '.join(st.workloads)}; "
            f"{len(st.seeds)} seeds per point, shared by every algorithm and setting.",
            f"Time clock: mean burst sojourn T_B in {', '.join(f'{x:g}' for x in tb)} s, each profile keeping its "
            "state loss rates and average loss (T_L = T_B·(1 − π_B)/π_B). "
            f"Packet clock: mean burst length {', '.join(f'{x:g}' for x in bp) or 'none'} packets. "
            f"The simulator's default is the time clock with T_B = {DEFAULT_T_B:g} s "
            f"({DEFAULT_BURST_PACKETS:g} packets with the packet clock).",
            "Ratios are FASOR / baseline over the flows of every seed (below 1: FASOR completes faster or "
            f"retransmits less), with {pct} paired bootstrap intervals over the seeds. A conclusion drawn at "
            "the default (T_B = 1 s) *holds* at a setting whose interval lies on the same side of 1, is "
            "*reversed* where it lies on the other side and *unclear* where it contains 1.",
        ]
        self.columns = [
            "profile",
            "workload",
            "vs",
            "metric",
            f"at T_B = 1 s ({pct})",
            "time clock: holds / unclear / reversed (T_B, s)",
            "packet clock: holds / unclear / reversed (packets)",
        ]
        conc = conclusions(res.gains)
        keyed: dict = {}
        for c in conc:
            keyed.setdefault((c["profile"], c["workload"], c["baseline"], c["metric"]), {})[c["clock"]] = c

        def sets(c) -> str:
            if not c:
                return "n/a"
            return " / ".join(
                ", ".join(f"{v:g}" for v in c[k]) or "–" for k in ("same", "unclear", "reversed")
            )

        self.rows = []
        for (profile, workload, base, metric), d in keyed.items():
            t = d.get("time") or d.get("packet")
            at = f"{_fmt(t['at_default'])} ({_fmt(t['default_lo'])}–{_fmt(t['default_hi'])})"
            self.rows.append(
                [profile, workload, base, metric, at, sets(d.get("time")), sets(d.get("packet"))]
            )
        #: (what, verdict) pairs.
        self.verdicts = []
        for metric, _ in METRICS:
            for base in BASELINES:
                cases = [c for c in conc if c["metric"] == metric and c["baseline"] == base]
                if not cases:
                    continue
                defaults = {(c["profile"], c["workload"]): c for c in cases if c["clock"] == "time"}
                lower = [k for k, c in defaults.items() if c["direction"] < 0]
                clear = [k for k, c in defaults.items() if _side(c["default_lo"], c["default_hi"]) != 0]
                text = (
                    f"at the default FASOR's is lower in {len(lower)} of {len(defaults)} profile/workload "
                    f"cases ({len(clear)} with an interval clear of 1)."
                )
                rev = [
                    f"{c['profile']}/{c['workload']} at {_xs(c['reversed'], c['clock'])}"
                    for c in cases
                    if c["reversed"]
                ]
                unc = [
                    f"{c['profile']}/{c['workload']} at {_xs(c['unclear'], c['clock'])}"
                    for c in cases
                    if c["unclear"]
                ]
                text += f" Reversed: {'; '.join(rev) if rev else 'nowhere'}."
                text += f" Unclear: {'; '.join(unc) if unc else 'nowhere'}."
                self.verdicts.append((f"{metric}, FASOR vs {base}", text))
        self.transfer_columns = ["profile", "clock", "setting", "transfer", "median FCT (s)", "p25–p75 (s)"]
        self.transfers = []
        if res.transfers is not None:
            for _, r in res.transfers.iterrows():
                setting = f"{r['t_b_s']:g} s" if r["clock"] == "time" else f"{r['burst_packets']:g} packets"
                self.transfers.append(
                    [
                        r["profile"],
                        r["clock"],
                        setting,
                        r["transfer"],
                        _fmt(r["fct_median_s"]),
                        f"{_fmt(r['fct_p25_s'])}–{_fmt(r['fct_p75_s'])}",
                    ]
                )
        self.skipped = [
            f"{label}: skipped, the simulator rejects it: {reason}" for label, reason in res.skipped
        ]
        self.failed = [
            f"{t['label']}, {t['profile']}, {t['clock']} {t['value']:g}: {err}" for t, err in res.failed[:10]
        ]
        self.footer = f"{len(res.runs)} runs ({res.cpu_s:.1f} s of simulator time)."


def summary_markdown(res, command: str = "coapcc reproduce sensitivity") -> str:
    """The short summary (Markdown): what ran, and how much each conclusion depends on the
    burst parameter."""
    s = Summary(res, command)
    lines = ["# Error-model sensitivity of the FASOR paper's error runs", ""]
    for p in s.setup:
        lines += [p, ""]
    lines += [
        "## How much each conclusion depends on the burst parameter",
        "",
        "| " + " | ".join(s.columns) + " |",
        "|" + "---|" * len(s.columns),
    ]
    lines += ["| " + " | ".join(r) + " |" for r in s.rows]
    lines += ["", "## Verdicts", ""]
    lines += [f"- **{what}**: {text}" for what, text in s.verdicts]
    lines += ["", "## Transfers (Block2 over UDP, CoAP over TCP)", ""]
    if s.transfers:
        lines += ["| " + " | ".join(s.transfer_columns) + " |", "|" + "---|" * len(s.transfer_columns)]
        lines += ["| " + " | ".join(r) + " |" for r in s.transfers]
    if s.skipped:
        lines.append("")
        lines += [f"- {x}" for x in s.skipped]
    if not s.transfers and not s.skipped:
        lines.append("No transfer rows were listed.")
    if s.failed:
        lines += ["", f"{len(res.failed)} runs failed; the tables cover the others:", ""]
        lines += [f"- {x}" for x in s.failed]
    lines += ["", s.footer, ""]
    return "\n".join(lines)


def _plain(text: str) -> str:
    """Markdown's emphasis and code marks taken out (the template escapes the rest)."""
    return text.replace("**", "").replace("*", "").replace("`", "")


def _sections(res, s: Summary, tag: str = "", fig_id: str = "sensitivity") -> list:
    items = [
        Figure(fig_id, FIGURE, _draw(res)),
        Section(f"setup{tag}", "What ran", [Text(_plain(p)) for p in s.setup]),
        Section(
            f"dependence{tag}",
            "How much each conclusion depends on the burst parameter",
            [Table(s.columns, s.rows)],
        ),
        Section(f"verdicts{tag}", "Verdicts", [Text(f"{what}: {text}") for what, text in s.verdicts]),
        Section(
            f"transfers{tag}",
            "Transfers (Block2 over UDP, CoAP over TCP)",
            [Table(s.transfer_columns, s.transfers)] + [Text(x, muted=True) for x in s.skipped],
        ),
        Section(
            f"gains{tag}",
            "Gain table",
            [
                Text(
                    "Every profile, burst setting, workload and baseline (also sensitivity.csv).", muted=True
                ),
                table(res.gains, collapsed=f"{len(res.gains)} rows"),
            ],
        ),
    ]
    return items


def _draw(res):
    def draw():
        import matplotlib

        from ..figures.sensitivity import figure

        with matplotlib.rc_context({"svg.hashsalt": "coapcc-sensitivity"}):
            return figure(res)

    return draw


def build(ctx) -> Report:
    """The report of a sensitivity study (see the module's documentation)."""
    import pandas as pd

    results = []
    for ds in ctx.datasets:
        res = ds.load(flow_columns=_FLOW_COLUMNS)
        results.append(analyse(res.runs, res.flows, ds.experiment.get("base")))
    name = ctx.datasets[0].experiment.get("name", "sensitivity")
    cmd = "coapcc reproduce sensitivity" + (" --quick" if name.endswith("-quick") else "")
    first = results[0]
    s = Summary(first, cmd)
    files = {
        "sensitivity.csv": first.gains,
        "transfers.csv": first.transfers,
        "runs.csv": first.runs,
        "summary.md": summary_markdown(first, cmd),
    }
    notes = [*s.skipped, *s.failed]
    if not ctx.compare:
        sections = [Section("figures", "Sensitivity to the burst parameter", _sections(first, s))]
        title = "Error-model sensitivity of the FASOR paper's error runs"
    else:
        sections = []
        for i, (ds, res) in enumerate(zip(ctx.datasets, results)):
            sections.append(
                Section(
                    f"dataset-{i}", ds.name, _sections(res, Summary(res, cmd), f"-{i}", f"sensitivity-{i}")
                )
            )
        keys = ["profile", "clock", "t_b_s", "burst_packets", "workload", "baseline"]
        both = None
        for ds, res in zip(ctx.datasets, results):
            g = res.gains[[*keys, "fct_ratio", "retx_ratio"]].rename(
                columns={"fct_ratio": f"fct_ratio [{ds.name}]", "retx_ratio": f"retx_ratio [{ds.name}]"}
            )
            both = g if both is None else both.merge(g, on=keys)
        sections.insert(
            0,
            Section(
                "comparison",
                "Comparison",
                [
                    Text(
                        f"Settings in both datasets ({len(both)}): FASOR / baseline ratios side by side.",
                        muted=True,
                    ),
                    table(both),
                ],
            ),
        )
        files["comparison.csv"] = both
        title = f"coapcc report: {ctx.names[0]} vs {ctx.names[1]}"
    runs = pd.concat([r.runs for r in results], ignore_index=True) if results else None
    return Report(
        title=title,
        overview=[
            ("datasets" if ctx.compare else "dataset", ", ".join(str(d.path) for d in ctx.datasets)),
            ("runs", 0 if runs is None else len(runs)),
            ("seeds per point", ", ".join(str(len(r.study.seeds)) for r in results)),
            ("simulator time", ", ".join(f"{r.cpu_s:.1f} s" for r in results)),
        ],
        notes=notes,
        sections=sections,
        files=files,
    )
