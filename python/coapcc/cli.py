"""The ``coapcc`` command.

Experiment-level subcommands (``sweep``, ``report``, ``reproduce``) are Python; every other
subcommand (``algorithms``, ``simulate``, ``server``, ``client``, ``emulate``) runs in the Rust
core, so it starts fast and behaves the same as the standalone ``coapcc-rs`` binary.
"""

from __future__ import annotations

import sys

#: Subcommands implemented in Python: name -> (module, one-line help).
PYTHON_COMMANDS: dict[str, tuple[str, str]] = {
    "sweep": ("coapcc.sweeper", "run every point of an experiment file (or catalogue entry) into a dataset"),
    "report": ("coapcc.reporting", "figures, tables and a self-contained HTML report from a results dataset"),
    "reproduce": (
        "coapcc.reproduction",
        "sweep + report of a catalogue entry (anrw18, fasor18); --quick for a preview",
    ),
}


def _usage() -> str:
    lines = [
        "usage: coapcc [--version] <command> [args]",
        "",
        "Commands:",
        "  algorithms   list every congestion-control algorithm, its parameters and defaults",
        "  simulate     simulate CoAP clients over the constrained-link testbed (deterministic)",
        "  server       run the CoAP-over-UDP test server",
        "  client       send CoAP requests, one JSON line per exchange",
        "  emulate      run commands across the emulated constrained link (network namespaces, root)",
        "  mesh         simulate CoAP over a multi-hop 802.15.4 mesh (CSMA/CA, RPL grids; deterministic)",
    ]
    for name, (_, help_) in PYTHON_COMMANDS.items():
        lines.append(f"  {name:<12} {help_}")
    lines.append("")
    lines.append("Run 'coapcc <command> --help' for a command's options.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``coapcc`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if args[0] in PYTHON_COMMANDS:
        import importlib

        module = importlib.import_module(PYTHON_COMMANDS[args[0]][0])
        return int(module.main(args[1:]) or 0)
    from . import _native

    sys.stdout.flush()
    return _native.cli(["coapcc", *args])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
