"""The one place where the Python subcommands check numbers and report usage errors.

- :class:`Parser` is the ``argparse`` parser of every Python subcommand: a usage error is one
  line on stderr (``coapcc model: error: argument --p: ...; see --help``), exit status 2.
- :func:`number` makes an ``argparse`` type for a numeric option: a value (or, with
  ``many=True``, a comma-separated list), finite, of the right kind, within its range;
  negative numbers are parsed as values and then refused with the range.
- :func:`check` is the same check for a value that does not come from the command line (a
  study's TOML file), with the key as its name.

Messages show numbers with ``%g`` (``1e+300``, never 301 digits) and ranges as intervals:
``--r must be an integer in [0, 255], got 1100``.
"""

from __future__ import annotations

import argparse
import math
import sys

__all__ = ["Parser", "check", "number", "show"]


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose usage errors are one line (exit status 2)."""

    def error(self, message: str):  # noqa: D102 - argparse's
        sys.stderr.write(f"{self.prog}: error: {message}; see {self.prog} --help\n")
        sys.exit(2)


def show(x) -> str:
    """``x`` for a message: integers as they are up to 10^9, everything else with ``%g``."""
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int) and abs(x) < 10**9:
        return str(x)
    try:
        return f"{float(x):g}"
    except (OverflowError, TypeError, ValueError):
        return repr(x)[:40]


def _interval(lo, hi, lo_open: bool, hi_open: bool) -> str:
    left = "(" if lo_open or lo is None else "["
    right = ")" if hi_open or hi is None else "]"
    return f"{left}{'-inf' if lo is None else show(lo)}, {'inf' if hi is None else show(hi)}{right}"


def check(
    name: str,
    value,
    *,
    lo=None,
    hi=None,
    lo_open: bool = False,
    hi_open: bool = False,
    integer: bool = False,
):
    """``value`` as an ``int`` (``integer``) or ``float`` within the range, else ``ValueError``
    ("NAME must be an integer in [LO, HI], got V"). Booleans and non-numbers are refused."""
    kind = "an integer" if integer else "a number"
    where = _interval(lo, hi, lo_open, hi_open)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be {kind} in {where}, got {value!r}"[:200])
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if integer:
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(f"{name} must be {kind} in {where}, got {show(value)}")
        value = int(value)
    else:
        value = float(value)
    bad = (lo is not None and (value < lo or (lo_open and value == lo))) or (
        hi is not None and (value > hi or (hi_open and value == hi))
    )
    if bad:
        raise ValueError(f"{name} must be {kind} in {where}, got {show(value)}")
    return value


def _parse(text: str, integer: bool):
    t = text.strip()
    try:
        return int(t) if integer else float(t)
    except ValueError:
        pass
    try:  # 1e3 for an integer option, 2.0 too
        v = float(t)
    except ValueError:
        raise ValueError(f"expected {'an integer' if integer else 'a number'}, got {text!r}") from None
    if integer and math.isfinite(v) and v.is_integer():
        return int(v)
    return v


def number(
    *,
    lo=None,
    hi=None,
    lo_open: bool = False,
    hi_open: bool = False,
    integer: bool = False,
    many: bool = False,
):
    """An ``argparse`` type: text to a checked number (or, with ``many``, a list of them)."""

    def parse(text: str):
        parts = [p for p in text.split(",") if p.strip()] if many else [text]
        if not parts:
            raise argparse.ArgumentTypeError(f"expected a number or a comma-separated list, got {text!r}")
        out = []
        for p in parts:
            try:
                v = _parse(p, integer)
                out.append(check("value", v, lo=lo, hi=hi, lo_open=lo_open, hi_open=hi_open, integer=integer))
            except ValueError as e:
                msg = str(e)
                raise argparse.ArgumentTypeError(msg.removeprefix("value ")) from None
        return out if many else out[0]

    parse.__name__ = "integer" if integer else "number"
    return parse
