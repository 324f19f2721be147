"""Published claims as data: parse a study's claims file, measure each claim on a dataset,
and give it a verdict.

A claims file (``coapcc/experiments/claims/STUDY.toml``, package data beside the catalogue)
lists what a paper states, with the runs it needs and a tolerance:

.. code-block:: toml

    study = "coap-tcp-thesis"          # the catalogue entry whose dataset the claims read
    source = "Helsinki CoAP-over-TCP MSc thesis (2018)"

    [[claim]]
    id = "T2-2500"
    text = "New Reno, 1 client, no errors, 2 500 B buffer: median transfer time"
    where = "Table 6"
    paper = 36.213                      # shown as the paper's value
    unit = "s"
    expect = "approx"                   # approx | > | >= | < | <= | between
    tolerance = 0.10                    # relative (approx); or abs_tolerance = ...
    measure = "stat"                    # a built-in measure, or "module:function"
    [claim.args]
    column = "fct_s"
    stat = "median"
    where = { block = "tcp-newreno", clients = 1, buffer_bytes = 2500, errors = "none" }

A *measure* turns the dataset (a :class:`coapcc.Results`) into one number, the reproduction.
The *expectation* turns that number into a verdict:

- ``holds``: the expectation is met (``approx``: within the tolerance of ``value``, which
  defaults to ``paper``; ``>``/``>=``/``<``/``<=``: the comparison with ``value`` holds;
  ``between``: ``value = [lo, hi]`` contains it);
- ``reversed``: a comparison claim whose opposite holds against ``neutral`` (default 0): the
  reproduction points the other way (for ``>``: the measure is below ``neutral``);
- ``off``: neither (an ``approx`` claim outside its tolerance is ``off``, never ``reversed``);
- ``missing``: the measure had no data (the runs it needs are not in the dataset).

Built-in measures (arguments in ``[claim.args]``):

- ``stat``: ``column``, ``stat`` (``median``, ``mean``, ``min``, ``max``, ``sum``, ``count``,
  ``std``, or ``pNN`` for a percentile), optional ``table`` (``flows``, the default, or
  ``runs``), ``where`` (column -> value or list of values), and ``per_run``: a statistic taken
  per run first (e.g. ``"mean"``), then ``stat`` across those run values.
- ``diff`` / ``ratio``: ``a`` and ``b``, each the arguments of a ``stat``; ``a - b`` or ``a / b``.
  Arguments given beside ``a`` and ``b`` are shared by both.
- ``trend``: ``by`` (an ordered column) and a ``stat``'s arguments: Kendall's tau between the
  ``by`` values and the statistic at each value, in [-1, 1] (1: grows with ``by``). With
  ``group_by``, tau is taken per group and averaged.
- ``fraction``: ``group_by``, ``a``, ``b`` and ``op`` (``<``, ``<=``, ``>``, ``>=``): the
  share of groups in which ``stat(a) op stat(b)``.

A study adds its own measures as ``"package.module:function"``; the function is called as
``function(results, **args)`` and returns a float (or ``None`` when it has no data).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

__all__ = [
    "Claim",
    "ClaimsFile",
    "ClaimsError",
    "Verdict",
    "VERDICTS",
    "load_claims",
    "find_claims",
    "claims_catalogue",
    "measure",
    "verdict",
    "evaluate",
]

#: Every verdict, in the order a summary lists them.
VERDICTS = ("holds", "off", "reversed", "missing")
_EXPECT = ("approx", ">", ">=", "<", "<=", "between")
_CLAIM_KEYS = {
    "id",
    "text",
    "where",
    "paper",
    "unit",
    "expect",
    "value",
    "tolerance",
    "abs_tolerance",
    "neutral",
    "measure",
    "args",
    "fit",
    "note",
}


class ClaimsError(ValueError):
    """A claims file that cannot be used: the message names the file, the claim and the key."""


@dataclass(frozen=True)
class Claim:
    """One published statement, its expectation and how to measure it."""

    id: str
    text: str
    paper: Any
    measure: str
    expect: str = "approx"
    args: Mapping[str, Any] = field(default_factory=dict)
    value: Any = None
    tolerance: float | None = None
    abs_tolerance: float | None = None
    neutral: float = 0.0
    unit: str = ""
    where: str = ""
    fit: bool = False
    note: str = ""

    @property
    def target(self) -> Any:
        """What the measure is compared with: ``value``, or the paper's value."""
        return self.paper if self.value is None else self.value


@dataclass(frozen=True)
class ClaimsFile:
    """A study's claims: ``study`` names the catalogue entry whose dataset they read."""

    study: str
    source: str
    claims: tuple[Claim, ...]
    path: Path | None = None


@dataclass(frozen=True)
class Verdict:
    """A claim's outcome: the paper's value, the reproduction and the verdict."""

    claim: Claim
    reproduced: float | None
    verdict: str
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        c = self.claim
        return {
            "claim": c.id,
            "text": c.text,
            "where": c.where,
            "paper": c.paper,
            "reproduced": self.reproduced,
            "unit": c.unit,
            "expect": describe_expectation(c),
            "verdict": self.verdict,
            "fit": c.fit,
            "detail": self.detail,
            "note": c.note,
        }


# -- parsing --------------------------------------------------------------------------------


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _parse_claim(raw: Any, where: str) -> Claim:
    if not isinstance(raw, Mapping):
        raise ClaimsError(f"{where}: a [[claim]] must be a table")
    unknown = sorted(set(raw) - _CLAIM_KEYS)
    if unknown:
        raise ClaimsError(
            f"{where}: unknown key(s) {', '.join(unknown)} (valid: {', '.join(sorted(_CLAIM_KEYS))})"
        )
    for key in ("id", "text", "measure"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise ClaimsError(f"{where}: '{key}' must be a non-empty string")
    where = f"{where} ({raw['id']})"
    if "paper" not in raw:
        raise ClaimsError(f"{where}: 'paper' (the published value or statement) is required")
    expect = raw.get("expect", "approx")
    if expect not in _EXPECT:
        raise ClaimsError(f"{where}: expect = {expect!r}: expected one of {', '.join(_EXPECT)}")
    claim = Claim(
        id=raw["id"],
        text=raw["text"],
        paper=raw["paper"],
        measure=raw["measure"],
        expect=expect,
        args=dict(raw.get("args", {})),
        value=raw.get("value"),
        tolerance=raw.get("tolerance"),
        abs_tolerance=raw.get("abs_tolerance"),
        neutral=raw.get("neutral", 0.0),
        unit=raw.get("unit", ""),
        where=raw.get("where", ""),
        fit=bool(raw.get("fit", False)),
        note=raw.get("note", ""),
    )
    target = claim.target
    if expect == "between":
        if not (isinstance(target, list) and len(target) == 2 and all(_is_number(v) for v in target)):
            raise ClaimsError(f"{where}: expect = 'between' needs value = [lo, hi] (numbers)")
        if target[0] > target[1]:
            raise ClaimsError(f"{where}: value = {target}: lo must not exceed hi")
    elif not _is_number(target):
        raise ClaimsError(
            f"{where}: expect = {expect!r} needs a number to compare with: 'value' (or a numeric 'paper')"
        )
    if expect == "approx":
        tols = [t for t in (claim.tolerance, claim.abs_tolerance) if t is not None]
        if not tols:
            raise ClaimsError(f"{where}: expect = 'approx' needs 'tolerance' (relative) or 'abs_tolerance'")
        if not all(_is_number(t) and t >= 0 for t in tols):
            raise ClaimsError(f"{where}: tolerances must be non-negative numbers")
    if not _is_number(claim.neutral):
        raise ClaimsError(f"{where}: 'neutral' must be a number")
    if not isinstance(claim.args, Mapping):
        raise ClaimsError(f"{where}: 'args' must be a table")
    if claim.measure not in BUILTIN_MEASURES and ":" not in claim.measure:
        raise ClaimsError(
            f"{where}: measure = {claim.measure!r}: expected a built-in ({', '.join(sorted(BUILTIN_MEASURES))}) "
            "or 'package.module:function'"
        )
    return claim


def parse_claims(data: Mapping[str, Any], path: Path | None = None) -> ClaimsFile:
    """A :class:`ClaimsFile` from the parsed TOML ``data``; raises :class:`ClaimsError`."""
    name = str(path) if path else "<claims>"
    unknown = sorted(set(data) - {"study", "source", "claim"})
    if unknown:
        raise ClaimsError(
            f"{name}: unknown top-level key(s) {', '.join(unknown)} (valid: study, source, claim)"
        )
    study = data.get("study")
    if not isinstance(study, str) or not study:
        raise ClaimsError(f"{name}: 'study' (the catalogue entry the claims read) is required")
    raw = data.get("claim", [])
    if not isinstance(raw, list) or not raw:
        raise ClaimsError(f"{name}: no [[claim]] entries")
    claims = tuple(_parse_claim(c, f"{name}: claim {i + 1}") for i, c in enumerate(raw))
    seen: set[str] = set()
    for c in claims:
        if c.id in seen:
            raise ClaimsError(f"{name}: claim id {c.id!r} appears twice")
        seen.add(c.id)
    return ClaimsFile(study=study, source=str(data.get("source", "")), claims=claims, path=path)


def load_claims(path: str | Path) -> ClaimsFile:
    """Read and check a claims file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ClaimsError(f"{path}: not valid TOML: {e}") from None
    except UnicodeDecodeError:
        raise ClaimsError(f"{path}: not a text file") from None
    return parse_claims(data, path)


def claims_catalogue() -> dict[str, Path]:
    """Study name -> its packaged claims file (``coapcc/experiments/claims/*.toml``)."""
    base = resources.files("coapcc") / "experiments" / "claims"
    out: dict[str, Path] = {}
    if base.is_dir():
        for entry in base.iterdir():
            if entry.name.endswith(".toml"):
                out[entry.name[: -len(".toml")]] = Path(str(entry))
    return dict(sorted(out.items()))


def find_claims(name_or_path: str) -> ClaimsFile:
    """The claims of a study (``ancillotti``) or of a file path."""
    p = Path(name_or_path)
    if p.suffix == ".toml" and p.exists():
        return load_claims(p)
    cat = claims_catalogue()
    if name_or_path in cat:
        return load_claims(cat[name_or_path])
    import difflib

    close = difflib.get_close_matches(name_or_path, list(cat), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    known = ", ".join(cat) or "none"
    raise ClaimsError(f"no claims for {name_or_path!r}{hint}; studies with claims: {known}")


# -- measures -------------------------------------------------------------------------------


def where_rows(df, where: Mapping[str, Any] | None, table: str):
    """The rows of ``df`` whose columns take the values of ``where`` (``{column: value or
    [values]}``), the filter of every measure; :class:`ClaimsError` names a missing column."""
    for col, want in dict(where or {}).items():
        if col not in df.columns:
            raise ClaimsError(f"where: no column {col!r} in the {table} table")
        values = want if isinstance(want, list) else [want]
        df = df[df[col].isin(values)]
    return df


def format_value(x: Any, missing: str = "-") -> str:
    """A paper or reproduced value for a table: 4 significant digits, lists in brackets."""
    if x is None:
        return missing
    if isinstance(x, float):
        return f"{x:.4g}"
    if isinstance(x, list):
        return "[" + ", ".join(format_value(v, missing) for v in x) + "]"
    return str(x)


def _select(results, args: Mapping[str, Any]):
    table = args.get("table", "flows")
    if table not in ("flows", "runs"):
        raise ClaimsError(f"table = {table!r}: expected 'flows' or 'runs'")
    return where_rows(getattr(results, table), args.get("where"), table)


def _stat(values, stat: str) -> float | None:
    import numpy as np

    v = np.asarray([x for x in values if x is not None], dtype=float)
    v = v[~np.isnan(v)]
    if stat == "count":
        return float(len(v))
    if len(v) == 0:
        return None
    if stat == "median":
        return float(np.median(v))
    if stat == "mean":
        return float(np.mean(v))
    if stat == "min":
        return float(np.min(v))
    if stat == "max":
        return float(np.max(v))
    if stat == "sum":
        return float(np.sum(v))
    if stat == "std":
        return float(np.std(v, ddof=1)) if len(v) > 1 else 0.0
    if stat.startswith("p") and stat[1:].replace(".", "", 1).isdigit():
        q = float(stat[1:])
        if not 0 <= q <= 100:
            raise ClaimsError(f"stat = {stat!r}: a percentile must be within p0..p100")
        return float(np.percentile(v, q))
    raise ClaimsError(f"stat = {stat!r}: expected median, mean, min, max, sum, count, std or pNN")


_RUN_KEYS = ("config_hash",)


def measure_stat(
    results, *, column: str, stat: str = "median", per_run: str | None = None, **args
) -> float | None:
    """A statistic of ``column`` over the selected rows (see the module's docs)."""
    df = _select(results, args)
    if column not in df.columns:
        table = args.get("table", "flows")
        if len(df) == 0 and column in getattr(results, table).columns:
            return None
        raise ClaimsError(f"no column {column!r} in the {table} table")
    if per_run:
        key = [k for k in _RUN_KEYS if k in df.columns]
        if not key:
            raise ClaimsError("per_run needs a config_hash column")
        values = [_stat(g[column], per_run) for _, g in df.groupby(key, sort=True)]
        return _stat(values, stat)
    return _stat(df[column], stat)


def _pair(args: Mapping[str, Any]) -> tuple[dict, dict]:
    shared = {k: v for k, v in args.items() if k not in ("a", "b", "op", "group_by", "by")}
    a = args.get("a")
    b = args.get("b")
    if not isinstance(a, Mapping) or not isinstance(b, Mapping):
        raise ClaimsError("this measure needs 'a' and 'b' tables (the arguments of a stat each)")

    def merged(side: Mapping[str, Any]) -> dict:
        out = {**shared, **side}
        out["where"] = {**dict(shared.get("where", {})), **dict(side.get("where", {}))}
        return out

    return merged(a), merged(b)


def measure_diff(results, **args) -> float | None:
    """``stat(a) - stat(b)``."""
    a, b = _pair(args)
    x, y = measure_stat(results, **a), measure_stat(results, **b)
    return None if x is None or y is None else x - y


def measure_ratio(results, **args) -> float | None:
    """``stat(a) / stat(b)`` (``None`` when ``stat(b)`` is 0)."""
    a, b = _pair(args)
    x, y = measure_stat(results, **a), measure_stat(results, **b)
    return None if x is None or y is None or y == 0 else x / y


def kendall_tau(xs: Iterable[float], ys: Iterable[float]) -> float | None:
    """Kendall's tau-a of two equally long sequences (``None`` with fewer than two points)."""
    pts = list(zip(xs, ys))
    n = len(pts)
    if n < 2:
        return None
    s = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pts[j][0] - pts[i][0]
            dy = pts[j][1] - pts[i][1]
            s += ((dx > 0) - (dx < 0)) * ((dy > 0) - (dy < 0))
    return s / (n * (n - 1) / 2)


def _groups(df, group_by: Any):
    keys = [group_by] if isinstance(group_by, str) else list(group_by or [])
    for k in keys:
        if k not in df.columns:
            raise ClaimsError(f"group_by: no column {k!r}")
    if not keys:
        yield (), df
        return
    yield from df.groupby(keys, sort=True)


def measure_trend(results, *, by: str, group_by: Any = None, **args) -> float | None:
    """Kendall's tau between ``by`` and the statistic at each of its values."""
    df = _select(results, args)
    if by not in df.columns:
        raise ClaimsError(f"by: no column {by!r}")
    rest = {k: v for k, v in args.items() if k not in ("where",)}
    taus = []
    for _, g in _groups(df, group_by):
        xs, ys = [], []
        for x, gx in g.groupby(by, sort=True):
            y = measure_stat(_Frame(gx, rest.get("table", "flows")), **{**rest, "where": {}})
            if y is not None:
                xs.append(_order_key(x))
                ys.append(y)
        t = kendall_tau(xs, ys)
        if t is not None:
            taus.append(t)
    return sum(taus) / len(taus) if taus else None


def _order_key(x: Any) -> float:
    """A sortable number for an axis value: numbers as they are, ``grid:6`` -> 6, ``periodic:3`` -> 3."""
    if isinstance(x, (int, float)):
        return float(x)
    s = str(x)
    tail = s.rsplit(":", 1)[-1].split(",")[0]
    try:
        return float(tail)
    except ValueError:
        raise ClaimsError(f"cannot order the axis value {x!r}") from None


class _Frame:
    """A one-table stand-in for :class:`coapcc.Results`, so measures run on a subset."""

    def __init__(self, df, table: str):
        self.flows = df
        self.runs = df
        self._table = table


def measure_fraction(results, *, group_by: Any, op: str = "<", **args) -> float | None:
    """The share of ``group_by`` groups in which ``stat(a) op stat(b)``."""
    ops: dict[str, Callable[[float, float], bool]] = {
        "<": lambda x, y: x < y,
        "<=": lambda x, y: x <= y,
        ">": lambda x, y: x > y,
        ">=": lambda x, y: x >= y,
    }
    if op not in ops:
        raise ClaimsError(f"op = {op!r}: expected one of {', '.join(ops)}")
    a, b = _pair(args)
    table_a, table_b = a.get("table", "flows"), b.get("table", "flows")
    if table_a != table_b:
        raise ClaimsError("fraction: 'a' and 'b' must read the same table")
    base = getattr(results, table_a)
    hits = total = 0
    for _, g in _groups(base, group_by):
        frame = _Frame(g, table_a)
        x, y = measure_stat(frame, **a), measure_stat(frame, **b)
        if x is None or y is None:
            continue
        total += 1
        hits += ops[op](x, y)
    return hits / total if total else None


BUILTIN_MEASURES: dict[str, Callable[..., float | None]] = {
    "stat": measure_stat,
    "diff": measure_diff,
    "ratio": measure_ratio,
    "trend": measure_trend,
    "fraction": measure_fraction,
}


def _resolve(name: str) -> Callable[..., float | None]:
    if name in BUILTIN_MEASURES:
        return BUILTIN_MEASURES[name]
    module, _, attr = name.partition(":")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise ClaimsError(f"measure {name!r}: {e}") from None
    if not callable(fn):
        raise ClaimsError(f"measure {name!r} is not a function")
    return fn


def measure(claim: Claim, results) -> float | None:
    """The reproduction of ``claim`` on ``results`` (``None``: no data)."""
    value = _resolve(claim.measure)(results, **dict(claim.args))
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


# -- verdicts -------------------------------------------------------------------------------


def describe_expectation(c: Claim) -> str:
    """The expectation in words: ``36.213 ± 10 %``, ``> 0``, ``in [0.3, 0.4]``."""
    t = c.target
    if c.expect == "approx":
        parts = []
        if c.tolerance is not None:
            parts.append(f"± {c.tolerance * 100:g} %")
        if c.abs_tolerance is not None:
            parts.append(f"± {c.abs_tolerance:g}{(' ' + c.unit) if c.unit else ''}")
        return f"{t:g} {' or '.join(parts)}"
    if c.expect == "between":
        return f"in [{t[0]:g}, {t[1]:g}]"
    return f"{c.expect} {t:g}"


def verdict(claim: Claim, reproduced: float | None) -> str:
    """``holds``, ``off``, ``reversed`` or ``missing`` (see the module's docs)."""
    if reproduced is None:
        return "missing"
    r, t = reproduced, claim.target
    if claim.expect == "approx":
        allowed = [
            *([claim.tolerance * abs(t)] if claim.tolerance is not None else []),
            *([claim.abs_tolerance] if claim.abs_tolerance is not None else []),
        ]
        # a tiny slack so that a value printed at the tolerance's edge is not judged by rounding
        return "holds" if abs(r - t) <= max(allowed) * (1 + 1e-9) + 1e-12 else "off"
    if claim.expect == "between":
        return "holds" if t[0] <= r <= t[1] else "off"
    ok = {">": r > t, ">=": r >= t, "<": r < t, "<=": r <= t}[claim.expect]
    if ok:
        return "holds"
    n = claim.neutral
    opposite = r < n if claim.expect in (">", ">=") else r > n
    return "reversed" if opposite else "off"


def evaluate(claims: ClaimsFile | Iterable[Claim], results) -> list[Verdict]:
    """Measure and judge every claim on ``results``. A claim whose measure fails is ``missing``
    with the reason in ``detail``; a malformed claim (:class:`ClaimsError`) is raised."""
    items = claims.claims if isinstance(claims, ClaimsFile) else tuple(claims)
    out = []
    for c in items:
        try:
            r = measure(c, results)
            detail = ""
        except ClaimsError as e:
            raise ClaimsError(f"claim {c.id}: {e}") from None
        except (KeyError, ValueError, TypeError, ZeroDivisionError) as e:
            r, detail = None, f"{type(e).__name__}: {e}"
        out.append(Verdict(claim=c, reproduced=r, verdict=verdict(c, r), detail=detail))
    return out


def summary(verdicts: Iterable[Verdict]) -> dict[str, int]:
    """Verdict -> count, every verdict listed."""
    counts = dict.fromkeys(VERDICTS, 0)
    for v in verdicts:
        counts[v.verdict] += 1
    return counts
