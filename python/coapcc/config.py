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
    coapcc.config.ConfigError: workload: unknown value 'bursty' (valid: continuous, random, bulk:BYTES)

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
import numbers
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .schema import (
    default_sim_config,
    did_you_mean,
    limits,
    link_defaults,
    loss_model,
    parse_spec,
    presets,
    profile_params,
    resolve_sim_config,
    shared_params,
    testbed_link,
)

__all__ = [
    "ConfigError",
    "Group",
    "Link",
    "Coap",
    "Server",
    "SimConfig",
    "WORKLOADS",
    "TRANSPORTS",
    "ERROR_PROFILES",
    "to_native",
    "config_hash",
    "canonical_json",
    "compose_spec",
    "split_label",
    "groups_table",
]

#: The values of every enumerated field, as the simulator declares them.
_CHOICES = {k: tuple(v) for k, v in limits()["choices"].items()}
#: Workloads of the short-lived experiments (``continuous``, ``random``); ``bulk:BYTES`` (one
#: GET of a BYTES-byte resource per client) is parametric.
WORKLOADS = _CHOICES["workload"]
#: Transports carrying CoAP: ``udp`` (RFC 7252, the default) or ``tcp`` (RFC 8323 on the
#: simulator's TCP model; group algorithms are TCP specs ``newreno[:k=v]``/``bbr[:k=v]``).
TRANSPORTS = ("udp", "tcp")


def check_workload(value: Any, key: str = "workload") -> str:
    """``continuous``, ``random`` or ``bulk:BYTES`` (BYTES a positive integer), normalised.

    >>> check_workload("bulk: 102400")
    'bulk:102400'
    """
    if isinstance(value, str) and value.strip().lower().startswith("bulk"):
        head, sep, size = value.strip().partition(":")
        size = size.strip().replace("_", "")
        if head.strip().lower() != "bulk" or not sep or not size.isdigit() or int(size) < 1:
            raise ConfigError(key, f"expected bulk:BYTES with BYTES a positive integer, got {value!r}")
        return f"bulk:{int(size)}"
    if not isinstance(value, str) or value not in WORKLOADS:
        raise ConfigError(
            key,
            f"unknown value {value!r}{did_you_mean(str(value), WORKLOADS)}",
            [*WORKLOADS, "bulk:BYTES"],
        )
    return value


def bulk_bytes(workload: str) -> int | None:
    """The resource size of a ``bulk:BYTES`` workload, ``None`` for the others."""
    return int(workload.split(":", 1)[1]) if workload.startswith("bulk:") else None


#: Named link-error profiles; ``bernoulli:P``, ``ge:P,R,K,H`` and ``ge-time:T_L,T_B,K,H`` are
#: parametric.
ERROR_PROFILES = tuple(limits()["profiles"])
_ERROR_CHOICES = [*ERROR_PROFILES, "bernoulli:P", "ge:P,R,K,H", "ge-time:T_L,T_B,K,H"]


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


def _unknown_key(key: str, what: str, valid: Iterable[str]) -> ConfigError:
    """An unknown key, with the closest valid key suggested."""
    valid = list(valid)
    word = key.rsplit(".", 1)[-1]
    return ConfigError(key, f"unknown {what}{did_you_mean(word, valid)}", valid)


_FIELDS_CACHE: dict = {}


def _fields(cls) -> tuple:
    """``dataclasses.fields(cls)``, cached (it is called per run when planning sweeps)."""
    f = _FIELDS_CACHE.get(cls)
    if f is None:
        f = _FIELDS_CACHE[cls] = dataclasses.fields(cls)
    return f


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool) or type(value).__name__ == "bool_"  # numpy.bool_


def _check_int(key: str, value: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer (Python, numpy or pandas; a float only if integral) in [minimum, maximum]."""
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise ConfigError(key, f"expected an integer, got {value!r}")
    if not isinstance(value, numbers.Integral):
        f = float(value)
        if not f.is_integer():
            raise ConfigError(key, f"expected an integer, got {value!r}")
        value = f
    value = int(value)
    if minimum is not None and value < minimum:
        raise ConfigError(key, f"must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ConfigError(key, f"must be <= {maximum}, got {value}")
    return value


def _check_float(
    key: str, value: Any, lo: float | None = None, hi: float | None = None, positive: bool = False
) -> float:
    """A finite number (Python, numpy or pandas) in [lo, hi] (and > 0 if ``positive``)."""
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise ConfigError(key, f"expected a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ConfigError(key, f"must be finite, got {value}")
    if positive and value <= 0:
        raise ConfigError(key, f"must be > 0, got {value}")
    if lo is not None and value < lo:
        raise ConfigError(key, f"must be >= {lo:g}, got {value}")
    if hi is not None and value > hi:
        raise ConfigError(key, f"must be <= {hi:g}, got {value}")
    return value


def check_errors(value: Any, key: str = "errors", clock: str = "time", burst_packets: float = 5.0) -> str:
    """Validate a link-error profile ``none|low|medium|high|bernoulli:P|ge:P,R,K,H|
    ge-time:T_L,T_B,K,H`` with the simulator's own parser; returns it normalised."""
    if not isinstance(value, str):
        raise ConfigError(key, f"expected a string, got {value!r}", _ERROR_CHOICES)
    text = value.strip().lower()
    try:
        loss_model(text, clock, burst_packets)
    except ValueError as e:
        raise ConfigError(key, str(e)) from None
    return text


def split_label(spec: str) -> tuple[str | None, str]:
    """``LABEL=NAME[:key=value,...]`` -> ``(LABEL, spec)``; a spec without a label -> ``(None, spec)``.

    A label is the part before an ``=`` that comes before any ``:``.

    >>> split_label("fasor=fasor:preset=helsinki2018")
    ('fasor', 'fasor:preset=helsinki2018')
    >>> split_label("default:max_retransmit=20")
    (None, 'default:max_retransmit=20')
    """
    head = spec.split(":", 1)[0]
    if "=" in head:
        label, _, rest = spec.partition("=")
        return label.strip(), rest.strip()
    return None, spec


def _format_value(v: Any) -> str:
    if _is_bool(v):
        return "on" if v else "off"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        f = float(v)
        return str(int(f)) if f.is_integer() else repr(f)
    return str(v).strip()


def compose_spec(spec: str, preset: str | None = None, transmission: Mapping[str, Any] | None = None) -> str:
    """The spec the simulator receives: ``NAME:preset=P,<shared parameters>,<spec's own>``.

    A preset written in ``spec`` wins over ``preset``; the spec's own parameters win over the
    shared ``transmission`` ones (they come last). A label (``LABEL=spec``) is dropped.

    >>> compose_spec("cocoa", "helsinki2018")
    'cocoa:preset=helsinki2018'
    >>> compose_spec("default:max_retransmit=4", "helsinki2018", {"ack_timeout": 3})
    'default:preset=helsinki2018,ack_timeout=3,max_retransmit=4'
    >>> compose_spec("fb1=default-fb1:preset=rfc7252", "helsinki2018")
    'default-fb1:preset=rfc7252'
    """
    from . import _native

    shared = [[k, _format_value(v)] for k, v in (transmission or {}).items()]
    try:
        # The simulator's own composition, for the algorithms of every transport (a TCP
        # newreno/bbr takes the preset too).
        return _native.compose_spec(split_label(spec)[1], preset, json.dumps(shared))
    except ValueError as e:
        raise ConfigError("algorithm", str(e)) from None


def with_preset(spec: str, preset: str | None) -> str:
    """``spec`` with ``preset=P`` applied first (explicit parameters in ``spec`` still win)."""
    return compose_spec(spec, preset)


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

    Give either ``clients`` (a count) or ``share`` (a fraction of :attr:`SimConfig.clients`;
    the shares of a run add up to 1). Shares are turned into counts by largest remainder, ties
    to the earlier group. ``label`` is the short name tables and plots show (default: the
    spec as written); ``algorithm="LABEL=SPEC"`` sets it too.

    >>> Group("default-fb1", share=0.5)
    Group(algorithm='default-fb1', clients=None, share=0.5, label=None)
    >>> Group("fb1=default-fb1:preset=helsinki2018", clients=3).name
    'fb1'
    """

    algorithm: str = "default"
    clients: int | None = None
    share: float | None = None
    label: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], key: str = "groups") -> Group:
        if isinstance(data, Group):
            return data
        if isinstance(data, str):
            return cls(algorithm=data)
        if not isinstance(data, Mapping):
            raise ConfigError(
                key, f"expected a table {{algorithm=..., clients=N or share=F, label=...}}, got {data!r}"
            )
        valid = [f.name for f in _fields(Group)]
        for k in data:
            if k not in valid:
                raise _unknown_key(f"{key}.{k}", "group key", valid)
        return cls(**dict(data))

    @property
    def spec(self) -> str:
        """The algorithm spec without its label."""
        return split_label(self.algorithm)[1].strip()

    @property
    def name(self) -> str:
        """The label: ``label``, else the ``LABEL=`` of ``algorithm``, else the spec as written."""
        return self.label or split_label(self.algorithm)[0] or self.spec

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
    def defaults(cls) -> dict:
        return {f.name: f.default for f in dataclasses.fields(cls)}

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
                raise _unknown_key(f"{cls._prefix}.{k}", "key", names)
        return cls(**dict(value))


_DEFAULTS = default_sim_config()
_LINK = link_defaults()
_COAP = _DEFAULTS["coap"]
_SERVER = _DEFAULTS["server"]
_WORKLOAD = _DEFAULTS["workload"]


@dataclass(frozen=True)
class Link(_Section):
    """The constrained link (spec §1.2, §1.5); defaults are the Helsinki testbed.

    Uplink (clients -> server): rate + buffer -> delay -> link errors -> rest of path.
    Downlink (server -> clients): rest of path -> rate + buffer -> delay -> link errors.
    The buffer size and the error profile are :class:`SimConfig` fields (the usual grid
    dimensions); they apply to both directions.
    """

    _prefix = "link"

    #: Uplink rate, bit/s (testbed: 60 000).
    uplink_rate_bps: int = _LINK["uplink_rate_bps"]
    #: Downlink rate, bit/s (testbed: 30 000).
    downlink_rate_bps: int = _LINK["downlink_rate_bps"]
    #: Uplink one-way propagation delay, ms (testbed: 200).
    uplink_delay_ms: float = float(_LINK["uplink_delay_ms"])
    #: Downlink one-way propagation delay, ms (testbed: 400).
    downlink_delay_ms: float = float(_LINK["downlink_delay_ms"])
    #: Rest-of-path delay U[min, max] ms per packet and direction, FIFO (the testbed papers
    #: give the range, not the distribution: uniform is our reading; 10-20 ms).
    rest_of_path_min_ms: float = float(_LINK["rest_of_path_min_ms"])
    #: See ``rest_of_path_min_ms``.
    rest_of_path_max_ms: float = float(_LINK["rest_of_path_max_ms"])
    #: Bytes added to every packet by the rate stages (link-layer header; unpublished, 0).
    per_packet_overhead_bytes: int = _LINK["per_packet_overhead_bytes"]
    #: Whether the packet in service counts against the buffer (netem-like; unpublished).
    buffer_counts_in_service: bool = _LINK["buffer_counts_in_service"]
    #: MTU, bytes (testbed: 296).
    mtu_bytes: int = _LINK["mtu_bytes"]

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
    """Message encoding, i.e. packet sizes (the papers do not give the encoding; these
    defaults make a 39-byte GET and a 94-byte response)."""

    _prefix = "coap"

    #: 4 or 6 (20 or 40 bytes of IP header).
    ip_version: int = _COAP["ip_version"]
    #: Token length, 0-8 bytes.
    token_len: int = _COAP["token_len"]
    #: Path of the GET (one Uri-Path option per segment).
    uri_path: str = _COAP["uri_path"]
    #: Payload of the piggybacked 2.05 response, bytes (the papers: 60).
    response_payload_bytes: int = _COAP["response_payload_bytes"]

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

    #: Processing delay before the response is sent, ms (unpublished; 0).
    processing_delay_ms: float = float(_SERVER["processing_delay_ms"])
    #: What a retransmitted copy is answered with: ``answer_each_copy`` (every copy gets its
    #: own response, echoing that copy) or ``replay_cached`` (the cached response of the first
    #: copy). RFC 7252 allows both; it matters to algorithms that identify copies.
    duplicate_mode: str = _SERVER["duplicate_mode"]

    def __post_init__(self) -> None:
        self._validate()
        _check_choice("server.duplicate_mode", self.duplicate_mode, _CHOICES["duplicate_mode"])


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

#: Error-chain clocks of the medium/high profiles.
ERROR_CLOCKS = _CHOICES["error_clock"]

#: Fields that a configuration lists in :meth:`SimConfig.to_dict` only when they are set (they
#: were added after the first datasets: leaving them out keeps every earlier run's identity,
#: hence its derived seed, unchanged).
_OPTIONAL_FIELDS = ("profile", "transmission", "transport")
#: The value an optional field has when it is unset (left out of :meth:`SimConfig.to_dict`).
_UNSET = {"transport": "udp"}


@dataclass(frozen=True)
class SimConfig:
    """One simulation run of the Helsinki constrained-link testbed.

    Every field has a documented default; ``SimConfig()`` is one client running ``default``
    (Default CoAP with the RFC 7252 parameters: MAX_RETRANSMIT 4) doing 50 exchanges over an
    error-free link with a 28 200-byte buffer.

    **One meaning per name.** An algorithm name alone always means that algorithm's own
    defaults, here as on the command line (``coapcc simulate --cc default``) and in experiment
    files. A reproduction preset is asked for explicitly: in the spec
    (``"default:preset=helsinki2018"``) or for every group at once with ``preset``. Shared
    transmission parameters (``ack_timeout``, ``ack_random_factor``, ``max_retransmit``...) are
    set once for every group with ``transmission`` (or as keywords of :meth:`from_dict` and
    :func:`coapcc.simulate`); :meth:`groups_table` shows every group's resolved values side by
    side.

    >>> cfg = SimConfig(algorithm="cocoa", clients=10)
    >>> cfg.algorithm_specs()
    [('cocoa', 10)]
    >>> SimConfig(algorithm="cocoa", clients=10, preset="helsinki2018").algorithm_specs()
    [('cocoa:preset=helsinki2018', 10)]
    >>> SimConfig.from_dict({"algorithm": "cocoa", "max_retransmit": 20}).algorithm_specs()
    [('cocoa:max_retransmit=20', 1)]
    >>> SimConfig(clients=0)
    Traceback (most recent call last):
    ...
    coapcc.config.ConfigError: clients: must be >= 1, got 0
    """

    #: Congestion-control algorithm spec ``[LABEL=]NAME[:key=value,...]`` (see ``coapcc
    #: algorithms``); ``LABEL`` is the short name tables and plots show. Ignored when
    #: ``groups`` is given.
    algorithm: str = "default"
    #: Number of simultaneous clients (flows). With ``groups`` given by ``share``, the total.
    clients: int = 1
    #: Mixed runs: groups of clients, each with its own algorithm (e.g. half Default CoAP,
    #: half a FullBackoff variant). Empty = every client runs ``algorithm``.
    groups: tuple[Group, ...] = ()
    #: Reproduction preset applied to every group's spec first (``helsinki2018``: the
    #: settings of ANRW 2018 and the FASOR paper; see ``coapcc algorithms``). ``None``: each
    #: algorithm's own defaults. A preset written in a spec wins.
    preset: str | None = None
    #: Testbed profile: the shared transmission parameters (ACK_TIMEOUT, ACK_RANDOM_FACTOR,
    #: MAX_RETRANSMIT) of a reproduction preset, set for every group, each algorithm keeping its
    #: other parameters (``helsinki2018``: MAX_RETRANSMIT 20 for everyone). ``None``: none.
    profile: str | None = None
    #: Shared transmission parameters applied to every group on top of the preset and the
    #: profile (e.g.
    #: ``{"max_retransmit": 20}``): the keys every algorithm shares (``ack_timeout``,
    #: ``ack_random_factor``, ``max_retransmit``...; :func:`coapcc.schema.shared_params`).
    #: A parameter written in a group's spec wins.
    transmission: Mapping[str, Any] = field(default_factory=dict)
    #: Bottleneck buffer size in bytes, both directions (the papers: 2500, 14100, 28200,
    #: 1410000).
    buffer_bytes: int = _LINK["buffer_bytes"]
    #: Link-error profile, both directions: ``none``, ``low``, ``medium``, ``high``,
    #: ``bernoulli:P``, ``ge:P,R,K,H`` (per-packet chain; K, H = loss probabilities in the
    #: low and burst states) or ``ge-time:T_L,T_B,K,H`` (mean sojourns in s).
    errors: str = "none"
    #: Clock of the medium/high two-state chains: ``time`` (exponential sojourns, T_B = 1 s,
    #: inferred) or ``packet`` (one step per packet, mean burst ``error_burst_packets``).
    error_clock: str = "time"
    #: Mean burst length in packets of the medium/high chains with ``error_clock = packet``.
    error_burst_packets: float = 5.0
    #: ``continuous`` (one client, CC state kept over all exchanges), ``random`` (batches of
    #: ``batch_min``-``batch_max`` exchanges, CC state reset between batches) or
    #: ``bulk:BYTES`` (one GET of a BYTES-byte resource per client: over UDP a Block2
    #: transfer on the full endpoint model, over TCP one response over one connection;
    #: ``exchanges`` is not used).
    workload: str = _WORKLOAD["kind"]
    #: Transport carrying CoAP: ``udp`` (RFC 7252 with the congestion control of the
    #: algorithm registry) or ``tcp`` (RFC 8323 on the simulator's TCP model: every group's
    #: algorithm is a TCP spec ``newreno[:k=v]`` or ``bbr[:k=v]``, presets such as
    #: ``helsinki2018`` apply; ``profile`` and ``transmission`` do not).
    transport: str = "udp"
    #: Successful request-response pairs per flow (the papers: 50).
    exchanges: int = _WORKLOAD["exchanges"]
    #: Random workload: batch sizes are uniform integers in [batch_min, batch_max] (the
    #: papers say "1 to 10 exchanges"; the distribution is our reading).
    batch_min: int = _WORKLOAD["batch_min"]
    #: See ``batch_min``.
    batch_max: int = _WORKLOAD["batch_max"]
    #: Each client starts at U[0, start_jitter_ms] (0 = all at t = 0, unpublished).
    start_jitter_ms: float = float(_WORKLOAD["start_jitter_ms"])
    #: A failed exchange is ``replace``-d by a new one (flows run until ``exchanges``
    #: successes) or ``count``-s towards ``exchanges``.
    failed_exchange_policy: str = _WORKLOAD["failed_exchanges"]
    #: When a retransmission counts as unnecessary: ``response_delivered`` (an earlier copy
    #: reached the server and its response reached the client) or ``request_delivered`` (an
    #: earlier copy reached the server).
    unnecessary_def: str = _DEFAULTS["metrics"]["unnecessary_def"]
    #: Implementation of the clients and the server: ``compact`` (the simulator's own model,
    #: fastest) or ``full`` (real ``coapcc-proto`` endpoints exchanging encoded datagrams).
    endpoint_model: str = "compact"
    #: Bound on simulated time, seconds; a run reaching it reports ``truncated``.
    max_sim_time_s: float = float(_DEFAULTS["max_sim_time_s"])
    #: Seed of every random process of the run.
    seed: int = _DEFAULTS["seed"]
    #: The link (rates, delays, MTU...); see :class:`Link`.
    link: Link = field(default_factory=Link)
    #: Message sizes; see :class:`Coap`.
    coap: Coap = field(default_factory=Coap)
    #: The server; see :class:`Server`.
    server: Server = field(default_factory=Server)
    #: Write the simulator's per-exchange trace (JSON lines) to this file (a path). Does not
    #: change the results, so it is not part of the configuration hash.
    trace: str | None = None

    # -- construction -------------------------------------------------------------------

    def __hash__(self) -> int:
        return hash(canonical_json(self.to_dict()))

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not isinstance(self.algorithm, str) or not self.algorithm.strip():
            raise ConfigError(
                "algorithm", f"expected an algorithm spec NAME[:key=value,...], got {self.algorithm!r}"
            )
        max_clients = limits()["max_clients"]
        set_(self, "clients", _check_int("clients", self.clients, 1, max_clients))
        set_(self, "groups", self._checked_groups(max_clients))
        if self.preset == "":
            set_(self, "preset", None)
        if self.preset is not None:
            if not isinstance(self.preset, str):
                raise ConfigError("preset", f"expected a preset name, got {self.preset!r}", presets())
            if self.preset not in presets():
                raise ConfigError(
                    "preset",
                    f"unknown preset {self.preset!r}{did_you_mean(self.preset, presets())}",
                    presets(),
                )
        if self.profile == "":
            set_(self, "profile", None)
        if self.profile is not None and self.profile not in presets():
            raise ConfigError(
                "profile",
                f"unknown profile {self.profile!r}{did_you_mean(str(self.profile), presets())}",
                presets(),
            )
        set_(self, "transmission", _check_transmission(self.transmission))
        set_(self, "buffer_bytes", _check_int("buffer_bytes", self.buffer_bytes, 1, 2**63 - 1))
        _check_choice("error_clock", self.error_clock, ERROR_CLOCKS)
        set_(
            self,
            "error_burst_packets",
            _check_float("error_burst_packets", self.error_burst_packets, 1.0, 1e9),
        )
        set_(self, "errors", check_errors(self.errors, "errors", self.error_clock, self.error_burst_packets))
        set_(self, "workload", check_workload(self.workload))
        _check_choice("transport", self.transport, TRANSPORTS)
        if self.transport == "tcp":
            if self.profile is not None:
                raise ConfigError(
                    "profile", "a testbed profile sets CoAP-over-UDP parameters; it does not apply to tcp"
                )
            if self.transmission:
                raise ConfigError(
                    "transmission",
                    "shared CoAP-over-UDP transmission parameters do not apply to tcp "
                    f"(got {', '.join(self.transmission)})",
                )
        set_(self, "exchanges", _check_int("exchanges", self.exchanges, 1, _U32))
        set_(self, "batch_min", _check_int("batch_min", self.batch_min, 1, _U32))
        set_(self, "batch_max", _check_int("batch_max", self.batch_max, 1, _U32))
        if self.batch_min > self.batch_max:
            raise ConfigError("batch_min", f"{self.batch_min} exceeds batch_max = {self.batch_max}")
        set_(self, "start_jitter_ms", _check_float("start_jitter_ms", self.start_jitter_ms, 0.0, 1e12))
        _check_choice("failed_exchange_policy", self.failed_exchange_policy, _CHOICES["failed_exchanges"])
        _check_choice("unnecessary_def", self.unnecessary_def, _CHOICES["unnecessary_def"])
        _check_choice("endpoint_model", self.endpoint_model, _CHOICES["endpoint_model"])
        set_(
            self,
            "max_sim_time_s",
            _check_float("max_sim_time_s", self.max_sim_time_s, None, 1e9, positive=True),
        )
        set_(self, "seed", _check_int("seed", self.seed, 0, 2**64 - 1))
        for name, cls in _SECTIONS.items():
            set_(self, name, cls.coerce(getattr(self, name)))
        if self.trace is not None:
            if isinstance(self.trace, os.PathLike):
                set_(self, "trace", os.fspath(self.trace))
            elif not isinstance(self.trace, str) or not self.trace.strip():
                raise ConfigError("trace", f"expected a file path (str or os.PathLike), got {self.trace!r}")

    def _checked_groups(self, max_clients: int) -> tuple[Group, ...]:
        groups = self.groups
        if isinstance(groups, (Group, Mapping, str)):
            groups = [groups]
        try:
            groups = tuple(Group.from_dict(g, f"groups[{i}]") for i, g in enumerate(groups or ()))
        except TypeError:
            raise ConfigError("groups", f"expected a list of groups, got {self.groups!r}") from None
        if not groups:
            return ()
        out = []
        for i, g in enumerate(groups):
            k = f"groups[{i}]"
            if not isinstance(g.algorithm, str) or not g.algorithm.strip():
                raise ConfigError(f"{k}.algorithm", f"expected an algorithm spec, got {g.algorithm!r}")
            if g.label is not None and (not isinstance(g.label, str) or not g.label.strip()):
                raise ConfigError(f"{k}.label", f"expected a short text, got {g.label!r}")
            if (g.clients is None) == (g.share is None):
                raise ConfigError(k, "give exactly one of clients or share")
            if g.clients is not None:
                g = dataclasses.replace(g, clients=_check_int(f"{k}.clients", g.clients, 1, max_clients))
            else:
                g = dataclasses.replace(
                    g, share=_check_float(f"{k}.share", g.share, None, 1.0, positive=True)
                )
            out.append(g)
        groups = tuple(out)
        by_count = [g.clients is not None for g in groups]
        if any(by_count) and not all(by_count):
            raise ConfigError("groups", "give every group a clients count, or every group a share")
        if all(by_count):
            total = sum(g.clients for g in groups)
            if total > max_clients:
                raise ConfigError("groups", f"{total} clients in all; must be <= {max_clients}")
            object.__setattr__(self, "clients", total)
        else:
            total_share = sum(g.share for g in groups)
            if abs(total_share - 1.0) > 1e-9:
                raise ConfigError(
                    "groups",
                    f"shares add up to {total_share:g}; they must add up to 1 (or give each group a clients count)",
                )
            for i, n in enumerate(_split_shares(self.clients, groups)):
                if n == 0:
                    raise ConfigError(
                        f"groups[{i}].share",
                        f"share {groups[i].share} of {self.clients} clients is no client; use more clients",
                    )
        return groups

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SimConfig:
        """Build from a plain mapping (TOML table, JSON), accepting dotted keys
        (``link.downlink_rate_bps``) and the shared transmission parameters as top-level keys
        (``max_retransmit = 20`` is ``transmission = {max_retransmit = 20}``). Unknown keys
        raise :class:`ConfigError` suggesting the closest valid key."""
        data = dict(data)
        nested: dict[str, dict] = {}
        for key in [k for k in data if "." in k]:
            head, tail = key.split(".", 1)
            if head not in (*_SECTIONS, "transmission"):
                raise _unknown_key(key, "configuration key", _valid_keys())
            nested.setdefault(head, {})[tail] = data.pop(key)
        shared = shared_params()
        for key in [k for k in data if k in shared]:
            nested.setdefault("transmission", {})[key] = data.pop(key)
        for head, sub in nested.items():
            base = data.get(head)
            base = base.to_dict() if isinstance(base, _Section) else dict(base or {})
            base.update(sub)
            data[head] = base
        valid = [f.name for f in _fields(cls)]
        for key in data:
            if key not in valid:
                raise _unknown_key(key, "configuration key", _valid_keys())
        if isinstance(data.get("groups"), list):
            data["groups"] = tuple(data["groups"])
        return cls(**data)

    def with_seed(self, seed: int) -> SimConfig:
        """A copy with another seed (no revalidation of the other fields)."""
        seed = _check_int("seed", seed, 0, 2**64 - 1)
        new = copy.copy(self)
        object.__setattr__(new, "seed", seed)
        return new

    def replace(self, **changes: Any) -> SimConfig:
        """A copy with ``changes`` applied (dotted keys such as ``link.downlink_delay_ms``
        go through ``**{...}``; shared transmission parameters are merged into
        ``transmission``)."""
        data = self.to_dict()
        data.update(changes)
        return SimConfig.from_dict(data)

    # -- views --------------------------------------------------------------------------

    def to_dict(self) -> dict:
        """Plain mapping of every field (round-trips through :meth:`from_dict`); optional
        fields that are unset (an empty ``transmission``) are left out."""
        out = {}
        for f in _fields(SimConfig):
            v = getattr(self, f.name)
            if f.name in _OPTIONAL_FIELDS and (not v or v == _UNSET.get(f.name)):
                continue
            if f.name == "groups":
                v = [g.to_dict() for g in v]
            elif isinstance(v, _Section):
                v = v.to_dict()
            elif f.name == "transmission":
                v = dict(v)
            out[f.name] = v
        return out

    def flat(self) -> dict:
        """Every field as one flat mapping (``link_downlink_rate_bps``...); ``groups`` and
        ``transmission`` as JSON text ("" if none), ``preset`` "" if none. These are the
        dataset's config columns."""
        out = {}
        for f in _fields(SimConfig):
            k, v = f.name, getattr(self, f.name)
            if k == "trace":
                continue
            if k == "groups":
                out[k] = canonical_json([g.to_dict() for g in v]) if v else ""
            elif k == "transmission":
                out[k] = canonical_json(dict(v)) if v else ""
            elif k == "profile":
                out[k] = v or ""
            elif isinstance(v, _Section):
                for kk, vv in v.to_dict().items():
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
        data["transmission"] = json.loads(data["transmission"]) if data.get("transmission") else {}
        data["preset"] = data.get("preset") or None
        data["profile"] = data.get("profile") or None
        data["transport"] = data.get("transport") or "udp"
        return cls(**data)

    def _group_list(self) -> list[tuple[Group, int]]:
        if not self.groups:
            return [(Group(self.algorithm, clients=self.clients), self.clients)]
        if self.groups[0].clients is not None:
            return [(g, g.clients) for g in self.groups]
        return list(zip(self.groups, _split_shares(self.clients, self.groups)))

    def group_counts(self) -> list[tuple[str, int]]:
        """``(algorithm spec as written, without its label; clients)`` per group, shares
        turned into counts."""
        return [(g.spec, n) for g, n in self._group_list()]

    def group_labels(self) -> list[str]:
        """The short label of every group (see :attr:`Group.name`)."""
        return [g.name for g, _ in self._group_list()]

    def shared_transmission(self) -> dict[str, Any]:
        """The shared parameters every group gets: the profile's, then ``transmission`` (none
        over TCP)."""
        if self.transport == "tcp" or not self.profile:
            return dict(self.transmission)
        return {**profile_params(self.profile), **self.transmission}

    def algorithm_specs(self) -> list[tuple[str, int]]:
        """``(spec with the preset, the profile and the shared parameters applied, clients)``
        per group, as the simulator receives them."""
        shared = self.shared_transmission()
        return [(compose_spec(a, self.preset, shared), n) for a, n in self.group_counts()]

    @property
    def label(self) -> str:
        """Algorithm label (without the preset): the group labels, ``cocoa``,
        ``default:max_retransmit=4``, or ``default+default-fb1`` for a mixed run."""
        return "+".join(self.group_labels())

    def validate(self) -> SimConfig:
        """Full validation: the algorithm specs against the Rust registry, then the whole
        configuration as the simulator checks it before a run."""
        self.validated_native()
        return self

    def validated_native(self) -> dict:
        """:func:`to_native` of this configuration, checked by the simulator (see
        :meth:`validate`)."""
        native = to_native(self)
        try:
            resolve_sim_config(native)  # one call into Rust when all is well
        except ValueError as e:
            self.resolved_specs()  # an algorithm, preset or shared parameter at fault: its own key
            key, _, message = str(e).partition(": ")
            raise ConfigError(_python_key(key, bool(self.groups)), message or str(e)) from None
        return native

    def resolved_specs(self) -> list[str]:
        """Fully resolved algorithm spec of every group (validates them). An error caused by
        ``preset`` or ``transmission`` is reported under that key. TCP specs are resolved by
        the simulator's TCP model (not the UDP registry)."""
        if self.transport == "tcp":
            return self._resolved_tcp_specs()
        out = []
        for i, (written, _) in enumerate(self.group_counts()):
            key = f"groups[{i}].algorithm" if self.groups else "algorithm"
            resolve_spec(written, key)  # the spec as written first: its own errors are its own
            spec = compose_spec(written, self.preset, self.shared_transmission())
            try:
                out.append(resolve_spec(spec, key))
            except ConfigError as e:
                message = str(e).split(": ", 1)[1]
                if self.preset and "preset" in message and self.preset in message:
                    raise ConfigError("preset", message) from None
                bad = next((k for k in self.transmission if k in message), None)
                raise ConfigError(f"transmission.{bad}" if bad else key, message) from None
        return out

    def _resolved_tcp_specs(self) -> list[str]:
        try:
            resolved = resolve_sim_config(to_native(self))
        except ValueError as e:
            key, _, message = str(e).partition(": ")
            key = _python_key(key, bool(self.groups))
            if self.preset and "preset" in message and self.preset in message:
                key = "preset"
            raise ConfigError(key, message or str(e)) from None
        return [split_label(g["cc"])[1] for g in resolved["groups"]]

    def groups_table(self, differences: bool = False):
        """Every group's resolved configuration side by side (a pandas DataFrame, one row per
        group: ``label``, ``clients``, ``algorithm`` and every parameter), so that a mismatch
        between groups (e.g. MAX_RETRANSMIT 4 against 20) is visible. With ``differences``,
        only the parameters whose values differ between groups."""
        return groups_table(
            [
                (lbl, n, spec)
                for lbl, (_, n), spec in zip(self.group_labels(), self.group_counts(), self.resolved_specs())
            ],
            differences,
        )


_U32 = 2**32 - 1


def _valid_keys() -> list[str]:
    return [f.name for f in _fields(SimConfig)] + list(shared_params())


def _check_transmission(value: Any) -> dict:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError("transmission", f"expected a table of shared parameters, got {value!r}")
    shared = shared_params()
    out = {}
    for k, v in value.items():
        if k not in shared:
            raise _unknown_key(f"transmission.{k}", "shared transmission parameter", shared)
        v = _plain(v)
        if _is_bool(v):
            v = bool(v)
        elif isinstance(v, numbers.Integral):
            v = int(v)
        elif isinstance(v, numbers.Real):
            v = _check_float(f"transmission.{k}", v)
        elif not isinstance(v, str):
            raise ConfigError(f"transmission.{k}", f"expected a number or a word, got {v!r}")
        out[k] = v
    return out


def _python_key(rust_key: str, grouped: bool) -> str:
    """The :class:`SimConfig` key of a field path of the simulator's configuration."""
    m = re.match(r"groups\[(\d+)\]\.cc$", rust_key)
    if m:
        return f"groups[{m.group(1)}].algorithm" if grouped else "algorithm"
    if rust_key == "groups":
        return "groups" if grouped else "clients"
    if rust_key.startswith("workload."):
        tail = rust_key.split(".", 1)[1]
        return {"kind": "workload", "failed_exchanges": "failed_exchange_policy"}.get(tail, tail)
    if rust_key.startswith("link.") and rust_key.split(".")[1] in ("uplink", "downlink"):
        return "link"
    if rust_key.startswith("metrics."):
        return rust_key.split(".", 1)[1]
    return rust_key


def groups_table(groups: Iterable[tuple[str, int, str]], differences: bool = False):
    """``(label, clients, resolved spec)`` per group -> a DataFrame with one row per group and
    one column per parameter (shared transmission parameters first)."""
    import pandas as pd

    rows = []
    for label, n, spec in groups:
        name, params = parse_spec(spec)
        rows.append({"label": label, "clients": int(n), "algorithm": name, **params})
    df = pd.DataFrame(rows)
    shared = [k for k in shared_params() if k in df.columns]
    rest = [c for c in df.columns if c not in ("label", "clients", "algorithm", *shared)]
    df = df[["label", "clients", "algorithm", *shared, *rest]]
    if differences:
        keep = [
            c for c in df.columns if c in ("label", "clients") or df[c].astype(str).nunique(dropna=False) > 1
        ]
        df = df[keep]
    return df.rename_axis("group")


def to_native(cfg: SimConfig) -> dict:
    """The simulator's JSON configuration (``SimConfig`` of crates/coapcc-sim/src/config.rs)
    for ``cfg``.

    The link is the simulator's testbed link (``coapcc._native.testbed_link_json``) with
    this configuration's rates, delays, buffer and loss model: Python never builds a link
    chain or a loss model itself.
    """
    lk = cfg.link
    link = testbed_link(
        buffer_bytes=cfg.buffer_bytes,
        errors=cfg.errors,
        error_clock=cfg.error_clock,
        burst_packets=cfg.error_burst_packets,
        # The preset's fitted error profiles (helsinki2018: medium and high).
        preset=cfg.preset,
        **{k: v for k, v in lk.to_dict().items()},
    )
    out: dict[str, Any] = {
        "seed": cfg.seed,
        "groups": [{"cc": spec, "clients": n} for spec, n in cfg.algorithm_specs()],
        "workload": {
            "kind": {"bulk": bulk_bytes(cfg.workload)} if cfg.workload.startswith("bulk:") else cfg.workload,
            "exchanges": cfg.exchanges,
            "batch_min": cfg.batch_min,
            "batch_max": cfg.batch_max,
            "start_jitter_ms": cfg.start_jitter_ms,
            "failed_exchanges": cfg.failed_exchange_policy,
        },
        "link": link,
        "coap": cfg.coap.to_dict(),
        "server": cfg.server.to_dict(),
        "metrics": {"unnecessary_def": cfg.unnecessary_def},
        "max_sim_time_s": cfg.max_sim_time_s,
    }
    if cfg.transport != "udp":  # the simulator omits the default too
        out["transport"] = cfg.transport
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
