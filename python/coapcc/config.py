"""Typed, validated configuration of one simulation run.

A :class:`SimConfig` is a frozen dataclass: every field is a named, documented attribute with a
default (ns-3 style), settable from code, from an experiment file (TOML) or from a grid. It is
validated when built, and a configuration that cannot run raises :class:`ConfigError`, which
names the offending key and the valid choices::

    >>> from coapcc import SimConfig
    >>> cfg = SimConfig(algorithm="cocoa", clients=10, buffer_bytes=2500, seed=7)
    >>> cfg.clients
    10
    >>> SimConfig(workload="bursty")
    Traceback (most recent call last):
    ...
    coapcc.config.ConfigError: workload: unknown value 'bursty' (valid: continuous, random)

:func:`to_native` is the one place that maps a :class:`SimConfig` to the simulator's JSON
configuration (``coapcc._native.simulate_json``); everything else (hashes, seeds, tables) works
on the Python side only.

This module imports nothing heavy (no pandas, no numpy).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ConfigError",
    "Group",
    "Link",
    "Coap",
    "Server",
    "SimConfig",
    "WORKLOADS",
    "ERROR_PROFILES",
    "to_native",
    "config_hash",
    "canonical_json",
]

#: Workloads of the short-lived experiments (spec §2).
WORKLOADS = ("continuous", "random")
#: Named link-error profiles (spec §1.4); ``bernoulli:P`` and ``ge:P,R,K,H`` are parametric.
ERROR_PROFILES = ("none", "low", "medium", "high")
_ERROR_CHOICES = "none, low, medium, high, bernoulli:P, ge:P,R,K,H, ge-time:T_L,T_B,K,H"


class ConfigError(ValueError):
    """A configuration that cannot run.

    ``key`` is the configuration key at fault (dotted for nested keys, e.g. ``groups[1].clients``)
    and ``choices`` the valid values when they form a short list (else ``None``).
    """

    def __init__(self, key: str, message: str, choices: Iterable[str] | None = None):
        self.key = key
        self.choices = list(choices) if choices is not None else None
        text = f"{key}: {message}"
        if self.choices:
            text += f" (valid: {', '.join(self.choices)})"
        super().__init__(text)


_FIELDS_CACHE: dict = {}


def _fields(cls) -> tuple:
    """``dataclasses.fields(cls)``, cached (it is called per run when planning sweeps)."""
    f = _FIELDS_CACHE.get(cls)
    if f is None:
        f = _FIELDS_CACHE[cls] = dataclasses.fields(cls)
    return f


def _check_int(key: str, value: Any, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ConfigError(key, f"expected an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(key, f"must be >= {minimum}, got {value}")
    return value


def _check_float(key: str, value: Any, lo: float | None = None, hi: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(key, f"expected a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ConfigError(key, f"must be finite, got {value}")
    if lo is not None and value < lo:
        raise ConfigError(key, f"must be >= {lo}, got {value}")
    if hi is not None and value > hi:
        raise ConfigError(key, f"must be <= {hi}, got {value}")
    return value


def _check_probability(key: str, text: str) -> float:
    try:
        p = float(text)
    except ValueError:
        raise ConfigError(key, f"expected a probability in [0, 1], got {text!r}") from None
    if not 0.0 <= p <= 1.0:
        raise ConfigError(key, f"expected a probability in [0, 1], got {text!r}")
    return p


def check_errors(value: Any, key: str = "errors") -> str:
    """Validate a link-error profile: ``none|low|medium|high|bernoulli:P|ge:P,R,K,H``."""
    if not isinstance(value, str):
        raise ConfigError(key, f"expected a string, got {value!r}", _ERROR_CHOICES.split(", "))
    text = value.strip().lower()
    if text in ERROR_PROFILES:
        return text
    if text.startswith("bernoulli:"):
        _check_probability(key, text.split(":", 1)[1])
        return text
    if text.startswith("ge:"):
        parts = text.split(":", 1)[1].split(",")
        if len(parts) != 4:
            raise ConfigError(key, f"'ge:' takes four probabilities P,R,K,H, got {value!r}")
        for p in parts:
            _check_probability(key, p)
        return text
    if text.startswith("ge-time:"):
        parts = text.split(":", 1)[1].split(",")
        if len(parts) != 4:
            raise ConfigError(
                key,
                f"'ge-time:' takes T_L,T_B (mean sojourns, s) and K,H (loss probabilities), got {value!r}",
            )
        for t in parts[:2]:
            try:
                ok = 0 < float(t) <= 1e9
            except ValueError:
                ok = False
            if not ok:
                raise ConfigError(key, f"'ge-time:' sojourn {t!r} must be a positive number of seconds")
        for p in parts[2:]:
            _check_probability(key, p)
        return text
    raise ConfigError(key, f"unknown error profile {value!r}", _ERROR_CHOICES.split(", "))


def _algorithm_name(spec: str) -> str:
    return spec.split(":", 1)[0].strip()


def with_preset(spec: str, preset: str | None) -> str:
    """``spec`` with ``preset=P`` applied first (explicit parameters in ``spec`` still win).

    >>> with_preset("cocoa", "helsinki2018")
    'cocoa:preset=helsinki2018'
    >>> with_preset("default:max_retransmit=4", "helsinki2018")
    'default:preset=helsinki2018,max_retransmit=4'
    >>> with_preset("default:preset=rfc7252", "helsinki2018")
    'default:preset=rfc7252'
    """
    if not preset:
        return spec
    name, _, params = spec.partition(":")
    if re.search(r"(^|,)\s*preset\s*=", params):
        return spec
    return f"{name}:preset={preset}" + (f",{params}" if params else "")


def resolve_spec(spec: str, key: str = "algorithm") -> str:
    """Fully resolved algorithm spec (the Rust registry's canonical form), or ConfigError."""
    from . import _native

    try:
        return _native.resolve_algorithm(spec)
    except ValueError as e:
        raise ConfigError(key, str(e)) from None


@dataclass(frozen=True)
class Group:
    """A group of clients sharing one congestion-control algorithm (for mixed runs).

    Give either ``clients`` (a count) or ``share`` (a fraction of :attr:`SimConfig.clients`).
    Shares are turned into counts by largest remainder, ties to the earlier group.

    >>> Group("default-fb1", share=0.5)
    Group(algorithm='default-fb1', clients=None, share=0.5)
    """

    algorithm: str = "default"
    clients: int | None = None
    share: float | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], key: str = "groups") -> Group:
        if isinstance(data, Group):
            return data
        if isinstance(data, str):
            return cls(algorithm=data)
        if not isinstance(data, Mapping):
            raise ConfigError(key, f"expected a table {{algorithm=..., clients=N or share=F}}, got {data!r}")
        unknown = set(data) - {"algorithm", "clients", "share"}
        if unknown:
            raise ConfigError(f"{key}.{sorted(unknown)[0]}", "unknown key", ["algorithm", "clients", "share"])
        return cls(**dict(data))

    def to_dict(self) -> dict:
        return {k: v for k, v in ((f.name, getattr(self, f.name)) for f in _fields(Group)) if v is not None}


def _check_choice(key: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ConfigError(key, f"unknown value {value!r}", choices)
    return value


class _Section:
    """Nested configuration section: validated typed fields, all with defaults."""

    _prefix = ""

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in _fields(type(self))}

    def _validate(self) -> None:
        set_ = object.__setattr__
        for f in dataclasses.fields(self):
            key = f"{self._prefix}.{f.name}"
            v = getattr(self, f.name)
            kind = f.type if isinstance(f.type, str) else f.type.__name__
            if kind == "bool":
                if not isinstance(v, bool):
                    raise ConfigError(key, f"expected true or false, got {v!r}")
            elif kind == "int":
                set_(self, f.name, _check_int(key, v, 0))
            elif kind == "float":
                set_(self, f.name, _check_float(key, v, 0.0))
            elif kind == "str" and not isinstance(v, str):
                raise ConfigError(key, f"expected a string, got {v!r}")

    @classmethod
    def coerce(cls, value: Any):
        if isinstance(value, cls):
            return value
        if value is None:
            return cls()
        if isinstance(value, _Section) or not isinstance(value, Mapping):
            raise ConfigError(cls._prefix, f"expected a table of {cls._prefix} parameters, got {value!r}")
        names = [f.name for f in dataclasses.fields(cls)]
        for k in value:
            if k not in names:
                raise ConfigError(f"{cls._prefix}.{k}", "unknown key", names)
        return cls(**dict(value))


@dataclass(frozen=True)
class Link(_Section):
    """The constrained link (spec §1.2, §1.5); defaults are the Helsinki testbed.

    Uplink (clients -> server): rate + buffer -> delay -> link errors -> rest of path.
    Downlink (server -> clients): rest of path -> rate + buffer -> delay -> link errors.
    The buffer size and the error profile are :class:`SimConfig` fields (the usual grid
    dimensions); they apply to both directions.
    """

    _prefix = "link"

    #: Uplink rate, bit/s.
    uplink_rate_bps: int = 60_000
    #: Downlink rate, bit/s.
    downlink_rate_bps: int = 30_000
    #: Uplink one-way propagation delay, ms.
    uplink_delay_ms: float = 200.0
    #: Downlink one-way propagation delay, ms.
    downlink_delay_ms: float = 400.0
    #: Rest-of-path delay U[min, max] ms per packet and direction, FIFO (AMBIG-T1).
    rest_of_path_min_ms: float = 10.0
    #: See ``rest_of_path_min_ms``.
    rest_of_path_max_ms: float = 20.0
    #: Bytes added to every packet by the rate stages (AMBIG-T4).
    per_packet_overhead_bytes: int = 0
    #: Whether the packet in service counts against the buffer (AMBIG-T2; netem-like).
    buffer_counts_in_service: bool = True
    #: MTU, bytes.
    mtu_bytes: int = 296

    def __post_init__(self) -> None:
        self._validate()
        for k in ("uplink_rate_bps", "downlink_rate_bps", "mtu_bytes"):
            if getattr(self, k) <= 0:
                raise ConfigError(f"link.{k}", f"must be > 0, got {getattr(self, k)}")
        if self.rest_of_path_min_ms > self.rest_of_path_max_ms:
            raise ConfigError(
                "link.rest_of_path_min_ms",
                f"{self.rest_of_path_min_ms} exceeds rest_of_path_max_ms = {self.rest_of_path_max_ms}",
            )


@dataclass(frozen=True)
class Coap(_Section):
    """Message encoding, i.e. packet sizes (AMBIG-T5): a 39-byte GET and a 94-byte response
    with the defaults."""

    _prefix = "coap"

    #: 4 or 6 (20 or 40 bytes of IP header).
    ip_version: int = 4
    #: Token length, 0-8 bytes.
    token_len: int = 1
    #: Path of the GET (one Uri-Path option per segment).
    uri_path: str = "hello"
    #: Payload of the piggybacked 2.05 response, bytes (spec §2: 60).
    response_payload_bytes: int = 60

    def __post_init__(self) -> None:
        self._validate()
        if self.ip_version not in (4, 6):
            raise ConfigError("coap.ip_version", f"unknown value {self.ip_version!r}", ["4", "6"])
        if self.token_len > 8:
            raise ConfigError("coap.token_len", f"must be <= 8, got {self.token_len}")


@dataclass(frozen=True)
class Server(_Section):
    """The CoAP server."""

    _prefix = "server"

    #: Processing delay before the response is sent, ms (AMBIG-T8).
    processing_delay_ms: float = 0.0
    #: What a retransmitted copy is answered with (AMBIG-21): ``answer_each_copy`` or
    #: ``replay_cached``.
    duplicate_mode: str = "answer_each_copy"

    def __post_init__(self) -> None:
        self._validate()
        _check_choice("server.duplicate_mode", self.duplicate_mode, ("answer_each_copy", "replay_cached"))


def _plain(v: Any) -> Any:
    """numpy / pandas scalars to Python ones."""
    item = getattr(v, "item", None)
    return item() if callable(item) else v


def _split_shares(total: int, groups: tuple[Group, ...]) -> list[int]:
    shares = [g.share for g in groups]
    s = sum(shares)
    exact = [total * x / s for x in shares]
    counts = [math.floor(x) for x in exact]
    order = sorted(range(len(groups)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts


_SECTIONS = {"link": Link, "coap": Coap, "server": Server}

#: Error-chain clocks (AMBIG-T3).
ERROR_CLOCKS = ("time", "packet")
#: Mean burst sojourn of the medium/high profiles, seconds (inferred, spec §1.4).
PROFILE_BURST_MEAN_S = 1.0


@dataclass(frozen=True)
class SimConfig:
    """One simulation run of the Helsinki constrained-link testbed (spec §1, §2).

    Every field has a documented default; ``SimConfig()`` is what ``coapcc simulate`` runs
    by default: one Default-CoAP client (``helsinki2018`` preset) doing 50 exchanges over an
    error-free link with a 28 200-byte buffer.

    >>> cfg = SimConfig(algorithm="cocoa", clients=10)
    >>> cfg.algorithm_specs()
    [('cocoa:preset=helsinki2018', 10)]
    >>> SimConfig(clients=0)
    Traceback (most recent call last):
    ...
    coapcc.config.ConfigError: clients: must be >= 1, got 0
    """

    #: Congestion-control algorithm spec ``NAME[:key=value,...]`` (see ``coapcc algorithms``).
    #: Ignored when ``groups`` is given.
    algorithm: str = "default"
    #: Number of simultaneous clients (flows). With ``groups`` given by ``share``, the total.
    clients: int = 1
    #: Mixed runs: groups of clients, each with its own algorithm (e.g. half Default CoAP,
    #: half a FullBackoff variant). Empty = every client runs ``algorithm``.
    groups: tuple[Group, ...] = ()
    #: Reproduction preset applied to every algorithm spec first (``helsinki2018``: the
    #: settings of ANRW 2018 and the FASOR paper). ``None`` or ``""``: the algorithms' own
    #: defaults.
    preset: str | None = "helsinki2018"
    #: Bottleneck buffer size in bytes, both directions (spec §1.3: 2500, 14100, 28200, 1410000).
    buffer_bytes: int = 28_200
    #: Link-error profile, both directions: ``none``, ``low``, ``medium``, ``high``,
    #: ``bernoulli:P``, ``ge:P,R,K,H`` (per-packet chain; K, H = loss probabilities in the
    #: low and burst states) or ``ge-time:T_L,T_B,K,H`` (mean sojourns in s) (spec §1.4).
    errors: str = "none"
    #: Clock of the medium/high two-state chains: ``time`` (exponential sojourns, T_B = 1 s,
    #: inferred) or ``packet`` (one step per packet, mean burst ``error_burst_packets``).
    error_clock: str = "time"
    #: Mean burst length in packets of the medium/high chains with ``error_clock = packet``.
    error_burst_packets: float = 5.0
    #: ``continuous`` (one client, CC state kept over all exchanges) or ``random`` (batches of
    #: ``batch_min``-``batch_max`` exchanges, CC state reset between batches) (spec §2).
    workload: str = "continuous"
    #: Successful request-response pairs per flow (spec §2: 50).
    exchanges: int = 50
    #: Random workload: batch sizes are uniform integers in [batch_min, batch_max] (AMBIG-T6).
    batch_min: int = 1
    #: See ``batch_min``.
    batch_max: int = 10
    #: Each client starts at U[0, start_jitter_ms] (AMBIG-T7; 0 = all at t = 0).
    start_jitter_ms: float = 0.0
    #: A failed exchange is ``replace``-d by a new one (flows run until ``exchanges``
    #: successes) or ``count``-s towards ``exchanges``.
    failed_exchange_policy: str = "replace"
    #: Unnecessary-retransmission definition (AMBIG-T9): ``response_delivered`` or
    #: ``request_delivered``.
    unnecessary_def: str = "response_delivered"
    #: Implementation of the clients and the server: ``compact`` (the simulator's own model,
    #: fastest) or ``full`` (real ``coapcc-proto`` endpoints exchanging encoded datagrams).
    endpoint_model: str = "compact"
    #: Bound on simulated time, seconds; a run reaching it reports ``truncated``.
    max_sim_time_s: float = 100_000.0
    #: Seed of every random process of the run.
    seed: int = 1
    #: The link (rates, delays, MTU...); see :class:`Link`.
    link: Link = field(default_factory=Link)
    #: Message sizes; see :class:`Coap`.
    coap: Coap = field(default_factory=Coap)
    #: The server; see :class:`Server`.
    server: Server = field(default_factory=Server)
    #: Write the simulator's per-exchange trace (JSON lines) to this file. Does not change
    #: the results, so it is not part of the configuration hash.
    trace: str | None = None

    # -- construction -------------------------------------------------------------------

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not isinstance(self.algorithm, str) or not self.algorithm.strip():
            raise ConfigError(
                "algorithm", f"expected an algorithm spec NAME[:key=value,...], got {self.algorithm!r}"
            )
        set_(self, "clients", _check_int("clients", self.clients, 1))
        groups = self.groups
        if isinstance(groups, (Group, Mapping, str)):
            groups = [groups]
        try:
            groups = tuple(Group.from_dict(g, f"groups[{i}]") for i, g in enumerate(groups or ()))
        except TypeError:
            raise ConfigError("groups", f"expected a list of groups, got {self.groups!r}") from None
        set_(self, "groups", groups)
        if groups:
            by_count = [g.clients is not None for g in groups]
            for i, g in enumerate(groups):
                k = f"groups[{i}]"
                if not isinstance(g.algorithm, str) or not g.algorithm.strip():
                    raise ConfigError(f"{k}.algorithm", f"expected an algorithm spec, got {g.algorithm!r}")
                if (g.clients is None) == (g.share is None):
                    raise ConfigError(k, "give exactly one of clients or share")
                if g.clients is not None:
                    _check_int(f"{k}.clients", g.clients, 1)
                else:
                    _check_float(f"{k}.share", g.share, 0.0)
                    if g.share <= 0:
                        raise ConfigError(f"{k}.share", f"must be > 0, got {g.share}")
            if any(by_count) and not all(by_count):
                raise ConfigError("groups", "give every group a clients count, or every group a share")
            if all(by_count):
                set_(self, "clients", sum(g.clients for g in groups))
            else:
                for i, n in enumerate(_split_shares(self.clients, groups)):
                    if n == 0:
                        raise ConfigError(
                            f"groups[{i}].share",
                            f"share {groups[i].share} of {self.clients} clients is no client; use more clients",
                        )
        if self.preset == "":
            set_(self, "preset", None)
        if self.preset is not None and not isinstance(self.preset, str):
            raise ConfigError("preset", f"expected a preset name, got {self.preset!r}")
        set_(self, "buffer_bytes", _check_int("buffer_bytes", self.buffer_bytes, 1))
        set_(self, "errors", check_errors(self.errors))
        _check_choice("error_clock", self.error_clock, ERROR_CLOCKS)
        set_(self, "error_burst_packets", _check_float("error_burst_packets", self.error_burst_packets, 1.0))
        _check_choice("workload", self.workload, WORKLOADS)
        set_(self, "exchanges", _check_int("exchanges", self.exchanges, 1))
        set_(self, "batch_min", _check_int("batch_min", self.batch_min, 1))
        set_(self, "batch_max", _check_int("batch_max", self.batch_max, 1))
        if self.batch_min > self.batch_max:
            raise ConfigError("batch_min", f"{self.batch_min} exceeds batch_max = {self.batch_max}")
        set_(self, "start_jitter_ms", _check_float("start_jitter_ms", self.start_jitter_ms, 0.0))
        _check_choice("failed_exchange_policy", self.failed_exchange_policy, ("replace", "count"))
        _check_choice("unnecessary_def", self.unnecessary_def, ("response_delivered", "request_delivered"))
        _check_choice("endpoint_model", self.endpoint_model, ("compact", "full"))
        set_(self, "max_sim_time_s", _check_float("max_sim_time_s", self.max_sim_time_s, 0.0, 1e9))
        if self.max_sim_time_s <= 0:
            raise ConfigError("max_sim_time_s", f"must be > 0, got {self.max_sim_time_s}")
        set_(self, "seed", _check_int("seed", self.seed, 0))
        if self.seed >= 2**64:
            raise ConfigError("seed", f"must be < 2**64, got {self.seed}")
        for name, cls in _SECTIONS.items():
            set_(self, name, cls.coerce(getattr(self, name)))
        if self.trace is not None and not isinstance(self.trace, str):
            set_(self, "trace", str(self.trace))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SimConfig:
        """Build from a plain mapping (TOML table, JSON), accepting dotted keys
        (``link.downlink_rate_bps``). Unknown keys raise :class:`ConfigError` listing the
        valid keys."""
        data = dict(data)
        nested: dict[str, dict] = {}
        for key in [k for k in data if "." in k]:
            head, tail = key.split(".", 1)
            if head not in _SECTIONS:
                raise ConfigError(key, "unknown configuration key", [f.name for f in dataclasses.fields(cls)])
            nested.setdefault(head, {})[tail] = data.pop(key)
        for head, sub in nested.items():
            base = data.get(head)
            base = base.to_dict() if isinstance(base, _Section) else dict(base or {})
            base.update(sub)
            data[head] = base
        valid = [f.name for f in dataclasses.fields(cls)]
        for key in data:
            if key not in valid:
                raise ConfigError(key, "unknown configuration key", valid)
        if isinstance(data.get("groups"), list):
            data["groups"] = tuple(data["groups"])
        return cls(**data)

    def with_seed(self, seed: int) -> SimConfig:
        """A copy with another seed (no revalidation of the other fields)."""
        seed = _check_int("seed", seed, 0)
        if seed >= 2**64:
            raise ConfigError("seed", f"must be < 2**64, got {seed}")
        new = copy.copy(self)
        object.__setattr__(new, "seed", seed)
        return new

    def replace(self, **changes: Any) -> SimConfig:
        """A copy with ``changes`` applied (dotted keys such as ``link.downlink_delay_ms``
        go through ``**{...}``)."""
        data = self.to_dict()
        data.update(changes)
        return SimConfig.from_dict(data)

    # -- views --------------------------------------------------------------------------

    def to_dict(self) -> dict:
        """Plain mapping of every field (round-trips through :meth:`from_dict`)."""
        out = {}
        for f in _fields(SimConfig):
            v = getattr(self, f.name)
            if f.name == "groups":
                v = [g.to_dict() for g in v]
            elif isinstance(v, _Section):
                v = v.to_dict()
            out[f.name] = v
        return out

    def flat(self) -> dict:
        """Every field as one flat mapping (``link_downlink_rate_bps``...); ``groups`` as JSON
        text ("" if none), ``preset`` "" if none. These are the dataset's config columns."""
        out = {}
        for k, v in self.to_dict().items():
            if k == "trace":
                continue
            if k == "groups":
                out[k] = canonical_json(v) if v else ""
            elif isinstance(v, dict):
                for kk, vv in v.items():
                    out[f"{k}_{kk}"] = vv
            else:
                out[k] = "" if v is None else v
        return out

    @classmethod
    def from_flat(cls, row: Mapping[str, Any]) -> SimConfig:
        """Inverse of :meth:`flat`: rebuild a configuration from a dataset row (extra columns
        are ignored)."""
        data: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name in _SECTIONS:
                sec = {}
                for g in dataclasses.fields(_SECTIONS[f.name]):
                    col = f"{f.name}_{g.name}"
                    if col in row:
                        sec[g.name] = _plain(row[col])
                data[f.name] = sec
            elif f.name in row and f.name != "trace":
                data[f.name] = _plain(row[f.name])
        data["groups"] = tuple(json.loads(data["groups"])) if data.get("groups") else ()
        data["preset"] = data.get("preset") or None
        return cls(**data)

    def group_counts(self) -> list[tuple[str, int]]:
        """``(algorithm spec as written, clients)`` per group, shares turned into counts."""
        if not self.groups:
            return [(self.algorithm, self.clients)]
        if self.groups[0].clients is not None:
            return [(g.algorithm, g.clients) for g in self.groups]
        return [(g.algorithm, n) for g, n in zip(self.groups, _split_shares(self.clients, self.groups))]

    def algorithm_specs(self) -> list[tuple[str, int]]:
        """``(spec with the preset applied, clients)`` per group, as the simulator receives them."""
        return [(with_preset(a, self.preset), n) for a, n in self.group_counts()]

    @property
    def label(self) -> str:
        """Algorithm label as written (without the preset): ``cocoa``,
        ``default:max_retransmit=4``, or ``default+default-fb1`` for a mixed run."""
        return "+".join(a.strip() for a, _ in self.group_counts())

    def validate(self) -> SimConfig:
        """Full validation, including the algorithm specs against the Rust registry."""
        self.resolved_specs()
        return self

    def resolved_specs(self) -> list[str]:
        """Fully resolved algorithm spec of every group (validates them)."""
        return [
            resolve_spec(spec, f"groups[{i}].algorithm" if self.groups else "algorithm")
            for i, (spec, _) in enumerate(self.algorithm_specs())
        ]


def _loss_model(cfg: SimConfig) -> dict:
    """The simulator's LossModel for ``cfg.errors`` (mirrors ``LossModel::parse`` of
    crates/coapcc-sim/src/link/loss.rs; tests/python/test_native_mapping.py checks they agree)."""
    e = cfg.errors
    if e == "none":
        return {"model": "none"}
    if e == "low":
        return {"model": "bernoulli", "p": 0.02}
    if e in ("medium", "high"):
        low, burst, avg = (0.0, 0.5, 0.10) if e == "medium" else (0.02, 0.8, 0.18)
        pi_b = (avg - low) / (burst - low)
        if cfg.error_clock == "time":
            return {
                "model": "gilbert_elliott_time",
                "low_mean_s": PROFILE_BURST_MEAN_S * (1.0 - pi_b) / pi_b,
                "burst_mean_s": PROFILE_BURST_MEAN_S,
                "loss_low": low,
                "loss_burst": burst,
            }
        r = 1.0 / cfg.error_burst_packets
        return {
            "model": "gilbert_elliott",
            "p": r * pi_b / (1.0 - pi_b),
            "r": r,
            "loss_low": low,
            "loss_burst": burst,
        }
    kind, _, rest = e.partition(":")
    v = [float(x) for x in rest.split(",")]
    if kind == "bernoulli":
        return {"model": "bernoulli", "p": v[0]}
    if kind == "ge-time":
        return {
            "model": "gilbert_elliott_time",
            "low_mean_s": v[0],
            "burst_mean_s": v[1],
            "loss_low": v[2],
            "loss_burst": v[3],
        }
    return {"model": "gilbert_elliott", "p": v[0], "r": v[1], "loss_low": v[2], "loss_burst": v[3]}


def to_native(cfg: SimConfig) -> dict:
    """The simulator's JSON configuration (``SimConfig`` of crates/coapcc-sim/src/config.rs)
    for ``cfg``. This is the only function that knows the Rust schema.

    The link chains are the testbed's (``link::testbed_uplink`` / ``testbed_downlink``) with
    this configuration's rates, delays, buffer and loss model.
    """
    lk = cfg.link
    loss = _loss_model(cfg)

    def rate(bps: int) -> dict:
        return {
            "rate": {
                "bits_per_s": bps,
                "buffer_bytes": cfg.buffer_bytes,
                "buffer_counts_in_service": lk.buffer_counts_in_service,
                "per_packet_overhead_bytes": lk.per_packet_overhead_bytes,
            }
        }

    jitter = {
        "jitter": {
            "min_ms": lk.rest_of_path_min_ms,
            "max_ms": lk.rest_of_path_max_ms,
            "allow_reordering": False,
        }
    }
    out: dict[str, Any] = {
        "seed": cfg.seed,
        "groups": [{"cc": spec, "clients": n} for spec, n in cfg.algorithm_specs()],
        "workload": {
            "kind": cfg.workload,
            "exchanges": cfg.exchanges,
            "batch_min": cfg.batch_min,
            "batch_max": cfg.batch_max,
            "start_jitter_ms": cfg.start_jitter_ms,
            "failed_exchanges": cfg.failed_exchange_policy,
        },
        "link": {
            "mtu_bytes": lk.mtu_bytes,
            "uplink": [
                rate(lk.uplink_rate_bps),
                {"delay": {"ms": lk.uplink_delay_ms}},
                {"loss": loss},
                jitter,
            ],
            "downlink": [
                jitter,
                rate(lk.downlink_rate_bps),
                {"delay": {"ms": lk.downlink_delay_ms}},
                {"loss": loss},
            ],
        },
        "coap": cfg.coap.to_dict(),
        "server": cfg.server.to_dict(),
        "metrics": {"unnecessary_def": cfg.unnecessary_def},
        "max_sim_time_s": cfg.max_sim_time_s,
    }
    if cfg.endpoint_model != "compact":  # the simulator omits the default too
        out["endpoint"] = {"model": cfg.endpoint_model}
    return out


def canonical_json(obj: Any) -> str:
    """Deterministic JSON text: sorted keys, no whitespace."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def config_hash(cfg: SimConfig, resolved_specs: list[str] | None = None) -> str:
    """16-hex-digit hash of what the simulator runs: the native configuration (seed
    included, trace path excluded) with every algorithm spec fully resolved, so that a change
    of an algorithm's defaults is a different configuration."""
    native = to_native(cfg)
    native.pop("trace", None)
    specs = resolved_specs if resolved_specs is not None else cfg.resolved_specs()
    material = canonical_json({"native": native, "resolved": specs, "v": 1})
    return hashlib.sha256(material.encode()).hexdigest()[:16]
