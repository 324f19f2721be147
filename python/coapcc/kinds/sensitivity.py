"""The sensitivity kind (``kind = "sensitivity"``, ``experiments/sensitivity.toml``): simulator
runs of the FASOR paper's error runs in which the unpublished burst parameter of the two-state
error profiles varies (docs/sensitivity.md).

A grid point names ``error_profile`` (``medium`` or ``high``) and either ``t_b_s`` (the time
clock, mean burst sojourn in seconds, each profile keeping its state loss rates and average
loss) or ``burst_packets`` (the packet clock, mean burst length in packets), instead of
``errors``; every other key is a :class:`~coapcc.SimConfig` field. ``part`` (``"gain"``, the
default, or ``"transfer"``) and ``label`` (default: the algorithm's name in the paper, with
``Block2`` or ``TCP`` in front for a transfer) say what the run is for. A run is a simulator
run (the ``sim`` kind's input, identity and record) with these columns added: ``part``,
``label``, ``error_profile``, ``clock``, ``burst_value`` (T_B in s or the burst length in
packets) and ``default_setting``. Its report is :mod:`coapcc.reports.sensitivity`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config import ConfigError, SimConfig
from . import StudyKind, register
from . import sim as _sim

__all__ = [
    "SensitivityConfig",
    "Variant",
    "profile_chain",
    "low_sojourn",
    "ge_time_errors",
    "ge_packet_errors",
    "DEFAULT_T_B",
    "DEFAULT_BURST_PACKETS",
    "LABELS",
    "KIND",
]

#: The simulator's defaults (the named profiles), marked in the report.
DEFAULT_T_B = 1.0
DEFAULT_BURST_PACKETS = 5.0

#: Series labels of the algorithms (the papers' names).
LABELS = {"default": "Default", "cocoa": "CoCoA", "fasor": "FASOR", "newreno": "New Reno", "bbr": "BBR"}


@dataclass(frozen=True, order=True)
class Variant:
    """One setting of the unpublished burst parameter: ``clock = "time"`` with mean burst
    sojourn ``value`` seconds, or ``clock = "packet"`` with mean burst length ``value``
    packets."""

    clock: str
    value: float

    @property
    def is_default(self) -> bool:
        return self.value == (DEFAULT_T_B if self.clock == "time" else DEFAULT_BURST_PACKETS)

    def fields(self, profile: str) -> dict:
        """The :class:`~coapcc.SimConfig` fields of ``profile`` under this setting."""
        if self.clock == "time":
            return {"errors": ge_time_errors(profile, self.value), "error_clock": "time"}
        if self.clock == "packet":
            # The chain written out (as for the time clock): under a preset that fitted the
            # profile's burst length (helsinki2018), the named profile would be the fitted one.
            return {"errors": ge_packet_errors(profile, self.value), "error_clock": "packet"}
        raise ValueError(f"unknown error clock {self.clock!r} (valid: time, packet)")

    def label(self) -> str:
        if self.clock == "time":
            return f"T_B = {self.value:g} s"
        return f"{self.value:g}-packet bursts"


# -- the loss chain ---------------------------------------------------------------------------


def profile_chain(profile: str) -> dict:
    """``{"loss_low", "loss_burst", "average", "burst_share"}`` of a two-state profile, as the
    simulator declares it (``coapcc._native.link_schema_json``); ValueError for a profile
    without a two-state chain."""
    from .. import _native

    for p in json.loads(_native.link_schema_json())["profiles"]:
        if p["name"] == profile:
            if p.get("kind") != "two_state":
                raise ValueError(f"profile {profile!r} has no two-state chain (kind {p.get('kind')!r})")
            return {
                "loss_low": float(p["loss_low"]),
                "loss_burst": float(p["loss_burst"]),
                "average": float(p["average"]),
                "burst_share": float(p["burst_share"]),
            }
    raise ValueError(f"unknown error profile {profile!r}")


def low_sojourn(profile: str, t_b: float) -> float:
    """T_L that keeps ``profile``'s burst share (hence its average loss) at burst sojourn
    ``t_b``: T_L = T_B·(1 − π_B)/π_B, in the simulator's order of operations (so T_B = 1 s
    gives the named profile's chain bit for bit)."""
    pi_b = profile_chain(profile)["burst_share"]
    return t_b * (1.0 - pi_b) / pi_b


def ge_time_errors(profile: str, t_b: float) -> str:
    """``ge-time:T_L,T_B,K,H`` of ``profile`` with mean burst sojourn ``t_b`` seconds and the
    profile's state loss rates and average loss."""
    if not (isinstance(t_b, (int, float)) and math.isfinite(t_b) and t_b > 0):
        raise ValueError(f"burst sojourn must be a positive number of seconds, got {t_b!r}")
    c = profile_chain(profile)
    return (
        f"ge-time:{low_sojourn(profile, float(t_b))!r},{float(t_b)!r},{c['loss_low']!r},{c['loss_burst']!r}"
    )


def ge_packet_errors(profile: str, burst_packets: float) -> str:
    """``ge:P,R,K,H`` of ``profile`` with mean burst length ``burst_packets`` packets (R =
    1/burst, P = R·π_B/(1 − π_B), in the simulator's order of operations: the named profile's
    packet-clocked chain bit for bit) and the profile's state loss rates."""
    if not (isinstance(burst_packets, (int, float)) and math.isfinite(burst_packets) and burst_packets >= 1):
        raise ValueError(f"burst length must be >= 1 packet, got {burst_packets!r}")
    c = profile_chain(profile)
    r = 1.0 / float(burst_packets)
    p = r * c["burst_share"] / (1.0 - c["burst_share"])
    return f"ge:{p!r},{r!r},{c['loss_low']!r},{c['loss_burst']!r}"


@dataclass(frozen=True)
class SensitivityConfig:
    """One run of the study: the simulator configuration it runs (``sim``) and what the
    report needs to place it (``part``, ``label``, ``error_profile`` and the burst setting)."""

    sim: SimConfig
    part: str
    label: str
    error_profile: str
    variant: Variant

    @classmethod
    def from_dict(cls, fields: Mapping[str, Any]) -> SensitivityConfig:
        fields = dict(fields)
        part = fields.pop("part", "gain")
        if part not in ("gain", "transfer"):
            raise ConfigError("part", f"expected 'gain' or 'transfer', got {part!r}")
        label = fields.pop("label", None)
        profile = fields.pop("error_profile", None)
        t_b = fields.pop("t_b_s", None)
        packets = fields.pop("burst_packets", None)
        for k in ("errors", "error_clock", "error_burst_packets"):
            if k in fields:
                raise ConfigError(k, "set by the study: give error_profile and t_b_s or burst_packets")
        if not isinstance(profile, str):
            raise ConfigError(
                "error_profile", f"expected a two-state profile's name (medium, high), got {profile!r}"
            )
        if (t_b is None) == (packets is None):
            raise ConfigError(
                "t_b_s", "give exactly one of t_b_s (time clock) and burst_packets (packet clock)"
            )
        key, value = ("t_b_s", t_b) if t_b is not None else ("burst_packets", packets)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise ConfigError(key, f"expected a number, got {value!r}")
        if t_b is not None and value <= 0:
            raise ConfigError(key, f"the burst sojourn must be > 0 s, got {value}")
        if packets is not None and value < 1:
            raise ConfigError(key, f"the burst length must be >= 1 packet, got {value}")
        variant = Variant("time" if t_b is not None else "packet", float(value))
        try:
            errs = variant.fields(profile)
        except ValueError as e:
            raise ConfigError("error_profile", str(e)) from None
        sim = SimConfig.from_dict({**fields, **errs})
        if label is None:
            alg = sim.label
            name = LABELS.get(alg, alg)
            if part == "transfer":
                name = f"{'TCP' if sim.transport == 'tcp' else 'Block2'} {name}"
            label = name
        if not isinstance(label, str) or not label:
            raise ConfigError("label", f"expected a non-empty string, got {label!r}")
        return cls(sim, part, label, profile, variant)

    @property
    def seed(self) -> int:
        return self.sim.seed

    def with_seed(self, seed: int) -> SensitivityConfig:
        return SensitivityConfig(
            self.sim.with_seed(seed), self.part, self.label, self.error_profile, self.variant
        )

    def to_dict(self) -> dict:
        return {
            **self.sim.to_dict(),
            "part": self.part,
            "label": self.label,
            "error_profile": self.error_profile,
            "clock": self.variant.clock,
            "burst_value": self.variant.value,
        }

    def columns(self) -> dict[str, Any]:
        return {
            **_sim.config_columns(self.sim),
            "part": self.part,
            "label": self.label,
            "error_profile": self.error_profile,
            "clock": self.variant.clock,
            "burst_value": self.variant.value,
            "default_setting": self.variant.is_default,
        }


KIND = register(
    StudyKind(
        name="sensitivity",
        title="the error-model sensitivity study: simulator runs over burst settings",
        resolve=SensitivityConfig.from_dict,
        template=lambda cfg: _sim.template(cfg.sim),
        execute="coapcc.kinds.sim:execute",
        columns=lambda cfg: cfg.columns(),
        cost=lambda cfg: _sim.cost(cfg.sim),
        report="coapcc.reports.sensitivity:build",
        series="label",
        seeds="shared",
    )
)
