"""Typed configuration of one simulation run.

A :class:`SimConfig` is a frozen dataclass whose fields, defaults, ranges and checks are the
simulator's (``coapcc_sim::params``, read through ``coapcc._native``): every field is a named,
documented attribute with a default (ns-3 style), settable from code, from an experiment
file (TOML) or from a grid. It is checked when built, by the simulator, and a configuration
that cannot run raises :class:`ConfigError`, which names the offending key (the simulator's
own key, never guessed from a message) and the valid choices::

    >>> from coapcc import SimConfig
    >>> cfg = SimConfig(algorithm="cocoa", clients=10, buffer_bytes=2500, seed=7)
    >>> cfg.clients
    10
    >>> SimConfig(workload="bursty")
    Traceback (most recent call last):
    ...
    coapcc.config.ConfigError: workload: unknown value 'bursty' (valid: continuous, random, bulk:BYTES, periodic:LOAD_KBPS, events:TB_S,SIZE_B, none)

A run over a mesh is one configuration too (the message workload of Ancillotti & Bruno's
Cooja study, or any workload)::

    >>> cfg = SimConfig(topology="grid:6", mesh_preset="ancillotti-cooja", workload="periodic:3",
    ...                 clients=34, max_sim_time_s=600)

:func:`to_native` is the one place that maps a :class:`SimConfig` to the simulator's JSON
configuration (``coapcc._native.simulate_json``); Python keeps only what is its own: the
objects, their identity (hashes, seeds) and tables.

This module imports nothing heavy (no pandas, no numpy).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import _native
from .schema import params_schema, parse_spec, shared_params

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

_SCHEMA = params_schema()
_FIELDS = {f["name"]: f for f in _SCHEMA["fields"]}
#: Plain workload names (``bulk:BYTES``, ``periodic:LOAD_KBPS`` and ``events:TB_S,SIZE_B`` are
#: parametric).
WORKLOADS = tuple(w for w in _SCHEMA["workloads"] if ":" not in w)
#: Transports carrying CoAP: ``udp`` (RFC 7252, the default) or ``tcp`` (RFC 8323 on the
#: simulator's TCP model; group algorithms are TCP specs ``newreno[:k=v]``/``bbr[:k=v]``).
TRANSPORTS = tuple(_FIELDS["transport"]["choices"])
#: Named link-error profiles; ``bernoulli:P``, ``ge:P,R,K,H`` and ``ge-time:T_L,T_B,K,H`` are
#: parametric.
ERROR_PROFILES = ("none", "low", "medium", "high")


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


def _keyed(e: Exception) -> ConfigError:
    """The simulator's keyed error (``coapcc._native.ConfigError``) as a :class:`ConfigError`."""
    return ConfigError(e.key, e.problem, getattr(e, "choices", None))


def _plain(v: Any) -> Any:
    """A value as JSON carries it: numpy / pandas scalars as Python ones, tuples as lists,
    paths as text, the configuration's own objects as their tables."""
    if isinstance(v, (_Section, Group)):
        return v.to_dict()
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    item = getattr(v, "item", None)
    v = item() if callable(item) else v
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)  # JSON has no NaN or infinity: the simulator reads these words
    return v


def _encode(values: Mapping[str, Any]) -> str:
    try:
        return json.dumps(_plain(values))
    except (TypeError, ValueError) as e:  # a value JSON cannot carry (an object, NaN is fine)
        raise ConfigError("config", f"cannot encode the configuration: {e}") from None


def _normalize(values: Mapping[str, Any]) -> dict:
    """The simulator's check of ``values``: every parameter typed and completed, or
    :class:`ConfigError` keyed by the simulator."""
    try:
        return json.loads(_native.sim_params_normalize(_encode(values)))
    except _native.ConfigError as e:
        raise _keyed(e) from None


def split_label(spec: str) -> tuple[str | None, str]:
    """``LABEL=NAME[:key=value,...]`` -> ``(LABEL, spec)``; a spec without a label -> ``(None, spec)``.

    A label is the part before an ``=`` that comes before any ``:``.

    >>> split_label("fasor=fasor:preset=helsinki2018")
    ('fasor', 'fasor:preset=helsinki2018')
    >>> split_label("default:max_retransmit=20")
    (None, 'default:max_retransmit=20')
    """
    label, rest = _native.split_label(spec)
    return label, rest


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
    try:
        return _native.compose_spec(spec, preset, _encode(dict(transmission or {})))
    except _native.ConfigError as e:
        raise _keyed(e) from None


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
    def from_dict(cls, data: Mapping[str, Any] | str | Group) -> Group:
        """A group of a checked configuration's table (or its algorithm alone)."""
        if isinstance(data, Group):
            return data
        if isinstance(data, str):
            return cls(algorithm=data)
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
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


def _type(f: dict) -> Any:
    return {"int": int, "float": float, "bool": bool, "str": str, "choice": str}.get(f["kind"], Any)


def _doc(fields: list[dict]) -> str:
    return "\n".join(f"* ``{f['name']}`` (default ``{f['default']!r}``): {f['doc']}" for f in fields)


class _Section:
    """A section of a configuration (``link``, ``coap``, ``server``): typed fields with
    defaults, checked by the simulator with the whole configuration."""

    _prefix = ""

    def __post_init__(self) -> None:
        checked = _normalize({self._prefix: self.to_dict()})[self._prefix]
        for k, v in checked.items():
            object.__setattr__(self, k, v)

    def to_dict(self) -> dict:
        """Every field; an optional one (added after the first datasets) only when it is not
        at its default, so that earlier configurations keep their description."""
        optional = _SECTION_OPTIONAL[self._prefix]
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if not (f.name in optional and getattr(self, f.name) == f.default)
        }

    @classmethod
    def _checked(cls, values: Mapping[str, Any]):
        obj = object.__new__(cls)
        for f in dataclasses.fields(cls):  # an optional field at its default is left out
            object.__setattr__(obj, f.name, f.default)
        for k, v in values.items():
            object.__setattr__(obj, k, v)
        return obj

    @classmethod
    def defaults(cls) -> dict:
        return {f.name: f.default for f in dataclasses.fields(cls)}


def _section(name: str, title: str) -> type:
    fields = _SCHEMA["sections"][name]
    cls = dataclasses.make_dataclass(
        title,
        [(f["name"], _type(f), field(default=f["default"])) for f in fields],
        bases=(_Section,),
        frozen=True,
        namespace={"_prefix": name, "__module__": __name__},
    )
    cls.__doc__ = (
        f"The ``{name}`` section of a :class:`SimConfig`, as the simulator declares it:\n\n{_doc(fields)}"
    )
    return cls


_SECTION_OPTIONAL = {
    name: frozenset(f["name"] for f in fields if f.get("optional"))
    for name, fields in _SCHEMA["sections"].items()
}
Link = _section("link", "Link")
Coap = _section("coap", "Coap")
Server = _section("server", "Server")
_SECTIONS = {"link": Link, "coap": Coap, "server": Server}
_SECTION_NAMES = tuple(_SECTIONS)
#: Fields added after the first datasets, described (``to_dict``, ``flat``) only when set, so
#: that every earlier run keeps its identity. ``profile``, ``transmission`` and ``transport``
#: have dataset columns of their own.
_NEW = ("topology", "mesh_preset", "mesh", "access_links", "messages")


def _value(name: str, v: Any) -> Any:
    """A checked value as the configuration holds it."""
    if name == "groups":
        return tuple(Group.from_dict(g) for g in v)
    if name in _SECTIONS:
        return _SECTIONS[name]._checked(v)
    if name == "access_links":
        return tuple(v)
    return v


def _unset(name: str, v: Any) -> bool:
    return _FIELDS[name]["optional"] and (not v or v == _FIELDS[name]["default"])


class _Config:
    """What a :class:`SimConfig` does (its fields come from the simulator's schema)."""

    def __post_init__(self) -> None:
        checked = _normalize({f: getattr(self, f) for f in _FIELDS})
        for k, v in checked.items():
            object.__setattr__(self, k, _value(k, v))

    def __hash__(self) -> int:
        return hash(canonical_json(self.to_dict()))

    @classmethod
    def _checked(cls, values: Mapping[str, Any]):
        obj = object.__new__(cls)
        for k, v in values.items():
            object.__setattr__(obj, k, _value(k, v))
        return obj

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]):
        """Build from a plain mapping (TOML table, JSON), accepting dotted keys
        (``link.downlink_rate_bps``, ``mesh.mac.queue_packets``) and the shared transmission
        parameters as top-level keys (``max_retransmit = 20`` is ``transmission =
        {max_retransmit = 20}``). Unknown keys raise :class:`ConfigError` suggesting the
        closest valid key."""
        return cls._checked(_normalize(data))

    def with_seed(self, seed: int):
        """A copy with another seed."""
        new = copy.copy(self)
        object.__setattr__(new, "seed", _normalize({"seed": seed})["seed"])
        return new

    def replace(self, **changes: Any):
        """A copy with ``changes`` applied (dotted keys such as ``link.downlink_delay_ms``
        go through ``**{...}``; shared transmission parameters are merged into
        ``transmission``)."""
        data = self.to_dict()
        data.update(changes)
        return type(self).from_dict(data)

    # -- views --------------------------------------------------------------------------

    def to_dict(self) -> dict:
        """Plain mapping of every field (round-trips through :meth:`from_dict`); optional
        fields that are unset (an empty ``transmission``, no ``topology``) are left out."""
        out = {}
        for name in _FIELDS:
            v = getattr(self, name)
            if _unset(name, v):
                continue
            out[name] = _plain(v)
        return out

    def flat(self) -> dict:
        """Every field as one flat mapping (``link_downlink_rate_bps``...); ``groups`` and
        ``transmission`` as JSON text ("" if none), ``preset`` "" if none, the fields added
        since (``topology``, ``mesh``...) only when set. These are the dataset's config
        columns."""
        out = {}
        for name in _FIELDS:
            v = getattr(self, name)
            if name == "trace" or (name in _NEW and _unset(name, v)):
                continue
            if name in _SECTIONS:
                for kk, vv in v.to_dict().items():
                    out[f"{name}_{kk}"] = vv
            elif name in ("groups", "transmission", "mesh", "access_links", "messages"):
                out[name] = canonical_json(_plain(v)) if v else ""
            else:
                out[name] = "" if v is None else v
        return out

    @classmethod
    def from_flat(cls, row: Mapping[str, Any]):
        """Inverse of :meth:`flat`: rebuild a configuration from a dataset row (extra columns
        are ignored)."""
        data: dict[str, Any] = {}
        for name in _FIELDS:
            if name in _SECTIONS:
                data[name] = {
                    f["name"]: _plain(row[f"{name}_{f['name']}"])
                    for f in _SCHEMA["sections"][name]
                    if f"{name}_{f['name']}" in row
                }
            elif name in row and name != "trace":
                v = _plain(row[name])
                if name in ("groups", "transmission", "mesh", "access_links", "messages"):
                    v = json.loads(v) if v else None
                elif v == "":
                    v = None
                if v is not None:
                    data[name] = v
        return cls.from_dict(data)

    def _native_json(self) -> str:
        """Every parameter (checked) as the simulator's functions take them."""
        return _encode({name: getattr(self, name) for name in _FIELDS})

    def group_counts(self) -> list[tuple[str, int]]:
        """``(algorithm spec as written, without its label; clients)`` per group, shares
        turned into counts."""
        return [tuple(x) for x in json.loads(_native.sim_params_group_counts(self._native_json()))]

    def group_labels(self) -> list[str]:
        """The short label of every group (see :attr:`Group.name`)."""
        return [g.name for g in self.groups] if self.groups else [Group(self.algorithm).name]

    def shared_transmission(self) -> dict[str, Any]:
        """The shared parameters every group gets: the profile's, then ``transmission`` (none
        over TCP)."""
        return json.loads(_native.sim_params_shared(self._native_json()))

    def algorithm_specs(self) -> list[tuple[str, int]]:
        """``(spec with the preset, the profile and the shared parameters applied, clients)``
        per group, as the simulator receives them."""
        try:
            return [tuple(x) for x in json.loads(_native.sim_params_algorithm_specs(self._native_json()))]
        except _native.ConfigError as e:
            raise _keyed(e) from None

    @property
    def label(self) -> str:
        """Algorithm label (without the preset): the group labels, ``cocoa``,
        ``default:max_retransmit=4``, or ``default+default-fb1`` for a mixed run."""
        return "+".join(self.group_labels())

    def validate(self):
        """Full validation: the algorithm specs against the registry, then the whole
        configuration as the simulator checks it before a run."""
        self.validated_native()
        return self

    def validated_native(self) -> dict:
        """:func:`to_native` of this configuration, checked by the simulator (see
        :meth:`validate`)."""
        try:
            return json.loads(_native.sim_params_config_json(self._native_json(), True))
        except _native.ConfigError as e:
            raise _keyed(e) from None

    def resolved_specs(self) -> list[str]:
        """Fully resolved algorithm spec of every group (validates them). An error caused by
        ``preset`` or ``transmission`` is reported under that key. TCP specs are resolved by
        the simulator's TCP model (not the UDP registry)."""
        try:
            return json.loads(_native.sim_params_resolved_specs(self._native_json()))
        except _native.ConfigError as e:
            raise _keyed(e) from None

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


def _config_class() -> type:
    fields = _SCHEMA["fields"]

    def default(f: dict):
        d = f["default"]
        if isinstance(d, (dict, list)):
            if f["name"] in _SECTIONS:
                section = _SECTIONS[f["name"]]
                return field(default_factory=section)
            kind = dict if isinstance(d, dict) else tuple
            return field(default_factory=kind)
        return field(default=d)

    cls = dataclasses.make_dataclass(
        "SimConfig",
        [(f["name"], _type(f), default(f)) for f in fields],
        bases=(_Config,),
        frozen=True,
        namespace={"__module__": __name__, "__hash__": _Config.__hash__},
    )
    cls.__doc__ = """One simulation run: the Helsinki testbed's link by default, or a mesh (``topology``).

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

    Its fields, as the simulator declares them:

""" + _doc(fields)
    return cls


SimConfig = _config_class()


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
    for ``cfg``, built by the simulator (``coapcc_sim::params::to_config``): Python never
    builds a link chain, a loss model or a mesh itself."""
    try:
        return json.loads(_native.sim_params_config_json(cfg._native_json(), False))
    except _native.ConfigError as e:
        raise _keyed(e) from None


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
