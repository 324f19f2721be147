"""The claims table that opens a report: every published claim of the study
(:mod:`coapcc.claims`), the paper's value, the reproduction's and the verdict, measured on
the report's dataset (both datasets' side by side when two are compared).

The claims are the study's packaged claims file (``coapcc/experiments/claims/*.toml``) whose
``study`` is the dataset's experiment (``anrw18``, or ``anrw18-quick`` for its ``--quick``
variant), or the file the caller names. A claim whose runs are not in the dataset (a quick
variant has fewer) is ``missing``, with the reason; so is a claim that cannot be measured on
it (a column it names is not there): the report is written whatever the claims say.
"""

from __future__ import annotations

from typing import Any

from ..claims import format_value
from . import Section, Table, Text

__all__ = ["claims_for", "claims_section"]

#: Keys of a measure's arguments that name a column of the dataset.
_COLUMN_KEYS = ("column", "by", "group_by")


def claims_for(experiment_name: str):
    """The packaged claims file of the study whose experiment is ``experiment_name`` (its
    ``-quick`` variant too), or None."""
    from ..claims import ClaimsError, claims_catalogue, load_claims

    base = experiment_name[: -len("-quick")] if experiment_name.endswith("-quick") else experiment_name
    for path in claims_catalogue().values():
        try:
            cf = load_claims(path)
        except ClaimsError:
            continue
        if cf.study in (experiment_name, base):
            return cf
    return None


def _columns(args: Any, out: set[str]) -> None:
    """Collect the column names in a built-in measure's arguments into ``out``."""
    if isinstance(args, dict):
        for k, v in args.items():
            if k == "where" and isinstance(v, dict):
                out.update(str(c) for c in v)
            elif k in _COLUMN_KEYS:
                if isinstance(v, str):
                    out.add(v)
                elif isinstance(v, list):
                    out.update(str(c) for c in v)
            elif isinstance(v, dict):
                _columns(v, out)


def _needed(claims) -> set[str] | None:
    """The columns the claims read, or None (everything) when one uses a measure of its own."""
    from ..claims import BUILTIN_MEASURES

    cols: set[str] = {"config_hash"}
    for c in claims:
        if c.measure not in BUILTIN_MEASURES:
            return None
        _columns(dict(c.args), cols)
    return cols


def _verdicts(cf, ds):
    """Each claim's verdict on dataset ``ds``; a claim that cannot be measured on it is
    ``missing`` with the reason."""
    from ..claims import ClaimsError, Verdict, evaluate

    cols = _needed(cf.claims)
    res = ds.load(columns=cols, flow_columns=cols)
    out = []
    for c in cf.claims:
        try:
            out.extend(evaluate([c], res))
        except ClaimsError as e:
            out.append(
                Verdict(claim=c, reproduced=None, verdict="missing", detail=f"cannot be measured: {e}")
            )
    return out


def _fmt(x) -> str:
    return format_value(x, missing="–")


def claims_section(ctx, claims=None) -> Section | None:
    """The claims section of the report of ``ctx``'s datasets: ``claims`` (a path or a
    :class:`~coapcc.claims.ClaimsFile`; False for none; None for the study's packaged
    claims), or None when there are none."""
    from ..claims import ClaimsFile, load_claims, summary

    if claims is False:
        return None
    if claims is None:
        cf = claims_for(ctx.datasets[0].experiment.get("name", ""))
        if cf is None:
            return None
    else:
        cf = claims if isinstance(claims, ClaimsFile) else load_claims(claims)
    ctx.progress(f"claims ({len(cf.claims)})")
    per = [_verdicts(cf, ds) for ds in ctx.datasets]
    cols = ["claim", "statement", "where", "paper", "expected"]
    for name in ctx.names:
        tag = f" [{name}]" if ctx.compare else ""
        cols += [f"reproduced{tag}", f"verdict{tag}"]
    cols.append("detail")
    rows = []
    for i, c in enumerate(cf.claims):
        v0 = per[0][i].to_dict()
        unit = f" {c.unit}" if c.unit and isinstance(c.paper, (int, float)) else ""
        row = [c.id + (" (fit)" if c.fit else ""), c.text, c.where, _fmt(c.paper) + unit, v0["expect"]]
        details = []
        for vs in per:
            v = vs[i]
            row += [_fmt(v.reproduced), v.verdict]
            if v.detail:
                details.append(v.detail)
        if c.note:
            details.append(c.note)
        row.append("; ".join(dict.fromkeys(details)))
        rows.append(row)
    counts = []
    for name, vs in zip(ctx.names, per):
        n = summary(vs)
        text = ", ".join(f"{m} {k}" for k, m in n.items() if m)
        counts.append(f"{name}: {text} of {len(vs)} claims" if ctx.compare else f"{text} of {len(vs)} claims")
    source = f" ({cf.source})" if cf.source else ""
    return Section(
        "claims",
        "Claims",
        [
            Text(
                f"The published claims of {cf.study}{source} measured on this dataset: "
                + "; ".join(counts)
                + ". holds: the expectation is met; off: it is not; reversed: the reproduction points the "
                "other way; missing: the dataset has no data for it (a --quick variant runs fewer cases). "
                "(fit): a value the reproduction was fitted to. The same table as coapcc validate.",
                muted=True,
            ),
            Table(cols, rows),
        ],
    )
