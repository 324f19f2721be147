"""Where the mesh study's Python entry points went: a mesh study is a sweep like any other
(``kind = "mesh"``: :mod:`coapcc.kinds.mesh` runs it, :mod:`coapcc.reports.mesh` reports
it, :mod:`coapcc.figures.mesh` draws its figures). The names below raise an
AttributeError saying what replaces them."""

from __future__ import annotations

__all__: list[str] = []

#: The mesh study's earlier names, and what replaces them.
_MOVED = {
    "MeshExperiment": "coapcc.experiment.Experiment (kind = 'mesh')",
    "MeshBlock": "coapcc.experiment.Block",
    "MeshRun": "coapcc.sweeper.Task (coapcc.sweeper.plan)",
    "StudyOutcome": "coapcc.sweeper.SweepOutcome",
    "load_mesh_experiment": "coapcc.find_experiment / coapcc.load_experiment",
    "find_mesh_experiment": "coapcc.find_experiment",
    "plan": "coapcc.sweeper.plan",
    "plan_summary": "Experiment.summary",
    "run_study": "coapcc.sweep(experiment, out)",
    "write_tables": "coapcc.load_results(out) (runs, clients)",
    "load_tables": "coapcc.load_results(out) (runs, clients)",
    "reproduce_mesh": "coapcc.reproduce(name)",
    "main": "coapcc.sweeper.main / coapcc.reproduction.main",
    "execute_mesh": "coapcc.kinds.mesh.execute",
    "run_summary": "coapcc.kinds.mesh.run_summary",
    "summary_table": "coapcc.reports.mesh.summary_table",
    "experiment_of": "coapcc.reports.mesh.experiment_of",
    "write_report": "coapcc.report(out)",
    "CC_LABELS": "coapcc.meshsim.CC_LABELS",
}


def __getattr__(name: str):
    if name in _MOVED:
        raise AttributeError(
            f"coapcc.mesh_study.{name} is gone: a mesh study is a sweep now (docs/sweeps.md, 'Mesh studies'); "
            f"use {_MOVED[name]}"
        )
    raise AttributeError(f"module 'coapcc.mesh_study' has no attribute {name!r}")
