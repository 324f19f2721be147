"""``coapcc validate STUDY``: the paper against the reproduction, claim by claim.

The study's claims (:mod:`coapcc.claims`, ``coapcc/experiments/claims/STUDY.toml``) name the
catalogue entry whose dataset they read. ``validate`` sweeps that entry (``--quick``: its
``[quick]`` variant) into the same dataset as ``coapcc reproduce`` (``results/NAME`` or
``results/NAME-quick``; finished runs are kept, so either command reuses the other's runs),
measures every claim and prints paper / reproduction / verdict. ``--dataset DIR`` judges an
existing dataset without running anything.

Exit status: 0 when every claim holds, 1 when any is off, reversed or missing, 2 for a usage
or configuration error, 130 after Ctrl-C.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import argcheck
from .claims import (
    ClaimsError,
    ClaimsFile,
    Verdict,
    claims_catalogue,
    evaluate,
    find_claims,
    format_value,
    summary,
)

__all__ = ["validate", "verdicts_table", "format_verdicts", "main"]


def _results_for(cf: ClaimsFile, *, quick: bool, out, workers, progress: bool, log):
    """Run (or resume) the study's sweep, whatever its kind (:func:`coapcc.reproduction.sweep_study`,
    the sweep of ``coapcc reproduce``), and load its dataset."""
    from .dataset import load_results
    from .reproduction import sweep_study

    _, outcome = sweep_study(cf.study, quick=quick, out=out, workers=workers, progress=progress, log=log)
    if outcome.failed:
        print(f"validate: {len(outcome.failed)} runs failed; the claims use the others", file=log)
    return load_results(outcome.out)


def validate(
    study: str,
    *,
    quick: bool = False,
    dataset: str | Path | None = None,
    out: str | Path | None = None,
    workers: int | None = None,
    progress: bool = True,
    log=None,
) -> list[Verdict]:
    """Judge every claim of ``study`` (a name with packaged claims, or a claims file).

    With ``dataset``, the claims are measured on that dataset and nothing runs; otherwise the
    study's catalogue entry is swept (resumed) first.

    >>> [v.verdict for v in coapcc.validate("coap-tcp-thesis", quick=True)]  # doctest: +SKIP
    ['holds', 'holds', ...]
    """
    log = log or sys.stderr
    cf = find_claims(study)
    if dataset is not None:
        from .dataset import load_results

        results = load_results(dataset)
    else:
        results = _results_for(cf, quick=quick, out=out, workers=workers, progress=progress, log=log)
    return evaluate(cf, results)


def verdicts_table(verdicts: list[Verdict]):
    """The verdicts as a pandas DataFrame (one row per claim), for reports."""
    import pandas as pd

    return pd.DataFrame([v.to_dict() for v in verdicts])


def format_verdicts(verdicts: list[Verdict], width: int = 60) -> str:
    """A plain-text table: id, claim, paper, reproduced, expectation, verdict; then a count."""
    rows = [("claim", "statement", "paper", "reproduced", "expected", "verdict")]
    for v in verdicts:
        c = v.claim
        text = c.text if len(c.text) <= width else c.text[: width - 1] + "…"
        unit = f" {c.unit}" if c.unit and isinstance(c.paper, (int, float)) else ""
        rows.append(
            (
                c.id + (" (fit)" if c.fit else ""),
                text,
                format_value(c.paper) + unit,
                format_value(v.reproduced),
                v.to_dict()["expect"],
                v.verdict,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"  {v.claim.id}: {v.claim.note}" for v in verdicts if v.claim.note and v.verdict != "holds"]
    if notes:
        lines += ["", "notes (claims that do not hold):", *notes]
    counts = summary(verdicts)
    lines.append("")
    lines.append(
        ", ".join(f"{n} {k}" for k, n in counts.items() if n or k == "holds") + f" of {len(verdicts)} claims"
    )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    names = ", ".join(claims_catalogue()) or "none"
    p = argcheck.Parser(
        prog="coapcc validate",
        description="Run a study's published claims and print paper / reproduction / verdict "
        f"(holds, off, reversed, missing). Studies with claims: {names}. "
        "Exit 0 when every claim holds, 1 otherwise.",
    )
    p.add_argument("study", help="a study with packaged claims, or a claims file (.toml)")
    p.add_argument(
        "--quick", action="store_true", help="run the study's [quick] variant (fewer replications)"
    )
    p.add_argument(
        "--json", action="store_true", help="print a JSON list of {claim, paper, reproduced, verdict, ...}"
    )
    p.add_argument("--dataset", metavar="DIR", help="judge this existing dataset; run nothing")
    p.add_argument(
        "--out", "-o", metavar="DIR", help="dataset folder (default: results/NAME or results/NAME-quick)"
    )
    p.add_argument(
        "--workers",
        type=argcheck.number(lo=1, hi=1024, integer=True),
        default=None,
        metavar="N",
        help="worker processes (default: CPU cores)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    a = p.parse_args(argv)
    try:
        verdicts = validate(
            a.study,
            quick=a.quick,
            dataset=a.dataset,
            out=a.out,
            workers=a.workers,
            progress=not a.no_progress,
        )
    except KeyboardInterrupt:
        print("validate: interrupted; rerun to continue (finished runs are kept)", file=sys.stderr)
        return 130
    except (ClaimsError, FileNotFoundError, ValueError, RuntimeError) as e:
        print(f"coapcc validate: error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps([v.to_dict() for v in verdicts], indent=2))
    else:
        print(format_verdicts(verdicts))
    return 0 if all(v.verdict == "holds" for v in verdicts) else 1
