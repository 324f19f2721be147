"""The ``coapcc`` command.

Experiment-level subcommands (``sweep``, ``report``, ``reproduce``) and ``completion`` are
Python; every other subcommand (``algorithms``, ``simulate``, ``server``, ``client``,
``emulate``) runs in the Rust core, so it starts fast and behaves the same as the standalone
``coapcc-rs`` binary.

Exit status: 0 success, 1 failure, 2 usage error (``coapcc`` alone included), 130 after
Ctrl-C. A closed output pipe (``coapcc algorithms | head``) ends the command quietly.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import sys
import threading

#: Subcommands implemented in Python: name -> (module, one-line help). A module has ``main(argv)``.
PYTHON_COMMANDS: dict[str, tuple[str, str]] = {
    "sweep": ("coapcc.sweeper", "run every point of an experiment file (or catalogue entry) into a dataset"),
    "report": (
        "coapcc.reporting",
        "figures, tables and a self-contained HTML report from one or two datasets",
    ),
    "model": (
        "coapcc.models.cli",
        "analytical CoAP loss models (Makarem 2021): bernoulli, gilbert, ge; --simulate N compares",
    ),
    "reproduce": (
        "coapcc.reproduction",
        "sweep + report of a catalogue entry (--catalogue lists them); --quick for a preview",
    ),
    "validate": (
        "coapcc.validation",
        "run a study's published claims: paper / reproduction / verdict, claim by claim",
    ),
    "completion": ("coapcc.cli", "print a shell completion script (bash, zsh or fish)"),
}

#: Subcommands of the Rust core: name -> one-line help.
RUST_COMMANDS: dict[str, str] = {
    "algorithms": "list every congestion-control algorithm, its parameters and defaults",
    "simulate": "simulate CoAP clients over the constrained-link testbed (deterministic)",
    "server": "run the CoAP-over-UDP test server",
    "client": "send CoAP requests, one JSON line per exchange",
    "emulate": "run commands across the emulated constrained link (network namespaces, root)",
    "mesh": "simulate CoAP over a multi-hop IEEE 802.15.4 mesh (CSMA/CA, RPL; deterministic)",
    "rtt-scenarios": "replay Makarem's RTT scenarios through RTO algorithms (spurious, RMSE)",
    "resbw": "one sender under a varying residual bandwidth (Makarem, chapter 6)",
}

#: Rust subcommands that handle SIGINT themselves (they flush logs and print a summary).
_HANDLES_SIGINT = ("server", "client", "emulate")


def commands() -> dict[str, str]:
    """Every subcommand -> its one-line help, in the order ``coapcc --help`` lists them."""
    out = dict(RUST_COMMANDS)
    out.update({k: h for k, (_, h) in PYTHON_COMMANDS.items()})
    out["help"] = "print this help, or a command's help: coapcc help COMMAND"
    return out


def _usage() -> str:
    lines = [
        "usage: coapcc [--version] <command> [args]",
        "",
        "Commands:",
    ]
    for name, help_ in commands().items():
        lines.append(f"  {name:<12} {help_}")
    lines.append("")
    lines.append("Run 'coapcc help <command>' or 'coapcc <command> --help' for a command's options.")
    return "\n".join(lines)


def _run_rust(args: list[str]) -> int:
    from . import _native

    sys.stdout.flush()
    if args[0] in _HANDLES_SIGINT:
        return _native.cli(["coapcc", *args])
    # Run in a worker thread (the GIL is released) so that Ctrl-C reaches this thread at once
    # instead of after the simulation; the process then ends with 130 without a traceback.
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(_native.cli(["coapcc", *args])), daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.25)
    except KeyboardInterrupt:
        _exit_interrupted()
    return result[0] if result else 1


def _exit_interrupted() -> None:
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    sys.stderr.write("coapcc: interrupted\n")
    sys.stderr.flush()
    os._exit(130)


def _dispatch(args: list[str]) -> int:
    if not args:
        print(_usage(), file=sys.stderr)
        return 2
    head = args[0]
    if head in ("-h", "--help"):
        print(_usage())
        return 0
    if head == "help":
        if len(args) == 1 or args[1] == "help":
            print(_usage())
            return 0
        if args[1] not in commands():
            return _unknown(args[1])
        return _dispatch([args[1], "--help"])
    if head == "completion":
        return completion_main(args[1:])
    if head in PYTHON_COMMANDS:
        import importlib

        module = importlib.import_module(PYTHON_COMMANDS[head][0])
        return int(module.main(args[1:]) or 0)
    if head in RUST_COMMANDS or head in ("-V", "--version"):
        return _run_rust(args)
    if head.startswith("-"):
        print(f"coapcc: unknown option '{head}'\n\n{_usage()}", file=sys.stderr)
        return 2
    return _unknown(head)


def _unknown(name: str) -> int:
    close = difflib.get_close_matches(name, list(commands()), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    print(f"coapcc: unknown command '{name}'{hint}\n\n{_usage()}", file=sys.stderr)
    return 2


#: Commands after which the ``coapcc`` process ends without the interpreter's teardown (every
#: object of pandas, matplotlib and the report's tables freed one by one: 0.2 s of
#: ``coapcc reproduce anrw18 --quick``): their files are written and closed, their workers and
#: drawing processes joined, before they return.
FAST_EXIT = frozenset({"reproduce", "report"})


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``coapcc`` console script (``argv``: the arguments, for a call from
    Python; the console script, ``argv`` None, ends the process at once after the commands of
    :data:`FAST_EXIT`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = _dispatch(args)
        sys.stdout.flush()
        if argv is None and args and args[0] in FAST_EXIT:
            sys.stderr.flush()
            os._exit(code)
        return code
    except KeyboardInterrupt:
        _exit_interrupted()
    except BrokenPipeError:
        # The reader went away (`coapcc sweep X --list | head`): end quietly. Point stdout at
        # /dev/null so that the interpreter's own flush at exit does not complain again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return 1  # pragma: no cover


# -- shell completion --------------------------------------------------------------------

_BASH = r"""# bash completion for coapcc (source it, or save it as
# ~/.local/share/bash-completion/completions/coapcc)
_coapcc() {
    local cur cmd
    cur="${COMP_WORDS[COMP_CWORD]}"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=( $(compgen -W "__COMMANDS__ --help --version" -- "$cur") )
        return
    fi
    cmd="${COMP_WORDS[1]}"
    if [ "$cmd" = help ]; then
        COMPREPLY=( $(compgen -W "__COMMANDS__" -- "$cur") )
    elif [[ "$cur" == -* ]]; then
        COMPREPLY=( $(compgen -W "$(coapcc "$cmd" --help 2>/dev/null | grep -oE -- '--[a-z0-9][a-z0-9-]*' | sort -u)" -- "$cur") )
    elif [ "${COMP_WORDS[COMP_CWORD-1]}" = "--cc" ]; then
        COMPREPLY=( $(compgen -W "$(coapcc algorithms --json 2>/dev/null | grep -oE '"name": ?"[^"]+"' | sed -E 's/.*"([^"]+)"$/\1/')" -- "$cur") )
    else
        COMPREPLY=( $(compgen -f -- "$cur") )
    fi
}
complete -o filenames -F _coapcc coapcc
"""

_ZSH = r"""#compdef coapcc
# zsh completion for coapcc (save as _coapcc in a directory of $fpath)
autoload -U +X bashcompinit && bashcompinit
""" + _BASH.split("\n", 2)[2]

_FISH = r"""# fish completion for coapcc (save as ~/.config/fish/completions/coapcc.fish)
function __coapcc_options
    set -l cmd (commandline -opc)[2]
    coapcc $cmd --help 2>/dev/null | string match -r -a -- '--[a-z0-9][a-z0-9-]*' | sort -u
end
complete -c coapcc -f
__FISH_COMMANDS__
complete -c coapcc -n 'not __fish_use_subcommand' -a '(__coapcc_options)'
complete -c coapcc -n 'not __fish_use_subcommand' -F
"""


def completion_script(shell: str) -> str:
    """The completion script of ``shell`` (``bash``, ``zsh`` or ``fish``)."""
    names = " ".join(commands())
    if shell == "bash":
        return _BASH.replace("__COMMANDS__", names)
    if shell == "zsh":
        return _ZSH.replace("__COMMANDS__", names)
    if shell == "fish":
        rows = "\n".join(
            f"complete -c coapcc -n __fish_use_subcommand -a {n} -d {h!r}" for n, h in commands().items()
        )
        return _FISH.replace("__FISH_COMMANDS__", rows)
    raise ValueError(shell)


def completion_main(argv: list[str]) -> int:
    """``coapcc completion bash|zsh|fish``: print the completion script."""

    from . import argcheck

    p = argcheck.Parser(
        prog="coapcc completion",
        description="Print a shell completion script. bash: `source <(coapcc completion bash)`; "
        "zsh: `coapcc completion zsh > ~/.zfunc/_coapcc`; "
        "fish: `coapcc completion fish > ~/.config/fish/completions/coapcc.fish`.",
    )
    p.add_argument("shell", choices=["bash", "zsh", "fish"])
    a = p.parse_args(argv)
    sys.stdout.write(completion_script(a.shell))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
