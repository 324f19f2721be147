"""Drawing a report's figures: each figure drawn in a process of its own (forked, so that it
shares the report's tables), several at a time, started as soon as the report defines it, so
that figures are drawn while the rest of the report is computed (:class:`FigureDrawer`); jobs
the report waits for (:class:`Job`); the drawing libraries loaded ahead (:func:`prepare`).
Used by :mod:`coapcc.reporting`, the one report builder."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

__all__ = ["FigureDrawer", "Job", "prepare", "FORMATS"]

#: Figure file formats: PNG is embedded in the HTML and always written; the others on request.
FORMATS = ("png", "svg", "pdf")


# -- drawing the figures ----------------------------------------------------------------------


def _draw_one(fig, figdir: Path, formats) -> None:
    """Draw ``fig`` and write its files (``figdir/<id>.<format>``)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from .figures import save

    save(fig.draw(), figdir / fig.id, formats)


_WARM = False


def _warm_up() -> None:
    """Import matplotlib and load its fonts once, here, so that every forked drawing
    process has them (each would otherwise spend a third of a second on it)."""
    global _WARM
    if _WARM:
        return
    import io

    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1, 1))
    ax = fig.subplots()
    ax.set_title("warm-up")
    ax.set_yscale("log")
    fig.savefig(io.BytesIO(), format="png", dpi=10)
    _WARM = True


def prepare() -> None:
    """Import what a report uses and load matplotlib's fonts (:func:`_warm_up`), so that the
    report starts at once: ``coapcc reproduce`` calls it in a thread while the sweep's worker
    processes run (joined before the report forks any process)."""
    try:
        import jinja2  # noqa: F401
        import pandas  # noqa: F401
        import pyarrow.parquet  # noqa: F401

        _warm_up()
        from .reports import sim  # noqa: F401
    except Exception:  # noqa: BLE001, S110 - the report does it again, and reports the error
        pass


def _child(conn, item, figdir: Path, formats) -> None:
    """A forked process: draws one figure, or runs one :class:`Job`, and says how it went
    (a figure's files carry the figure and a job's result is small: the message stays small,
    so the child never waits for the report to read it)."""
    import gc

    # No cyclic collection here: it would walk (and so copy, page by page) every object this
    # short-lived process shares with the report.
    gc.disable()
    try:
        if isinstance(item, Job):
            conn.send((True, item.fn()))
        else:
            _draw_one(item, figdir, formats)
            conn.send(None)
    except Exception as e:  # noqa: BLE001 - sent to the report, which leaves the figure out
        msg = f"{type(e).__name__}: {e}"
        conn.send((False, msg) if isinstance(item, Job) else msg)
    finally:
        conn.close()


class Job:
    """Work the report hands to a drawing process (:meth:`FigureDrawer.run`), such as
    recording a traced run: ``fn()`` runs there, its (small, picklable) return value comes
    back as :meth:`result`. Jobs go before the figures waiting for a process."""

    def __init__(self, fn, drawer=None):
        self.fn, self.drawer = fn, drawer
        self.done, self.ok, self.value = False, False, None

    def result(self):
        """``fn()``'s value (waiting for it, and drawing figures meanwhile); raises
        :class:`RuntimeError` with the job's error if it failed."""
        if not self.done:
            if self.drawer is not None and self.drawer.fork:
                self.drawer.wait(self)
            else:
                self.finish(*_call(self.fn))
        if not self.ok:
            raise RuntimeError(self.value)
        return self.value

    def finish(self, ok: bool, value) -> None:
        self.done, self.ok, self.value = True, ok, value


def _call(fn) -> tuple[bool, Any]:
    try:
        return True, fn()
    except Exception as e:  # noqa: BLE001 - raised by Job.result
        return False, f"{type(e).__name__}: {e}"


class FigureDrawer:
    """Draws a report's figures while the report is still being computed: each figure, as
    soon as the report's function hands it over (:meth:`submit`), in a forked process of its
    own (a fork shares the report's tables, nothing is pickled), the rest at :meth:`finish`.
    At most ``workers`` processes run at a time; while the report computes (reading the
    dataset, the tables: what every later figure waits for), figures take one fewer, so that
    it keeps a core of its own (jobs, which it waits for, may take them all). Where the
    platform cannot fork, or with one worker, every figure is drawn in this process at
    :meth:`finish`."""

    def __init__(self, figdir: Path, formats, workers: int, log=None):
        import multiprocessing as mp

        # PNG always: the HTML embeds it
        self.figdir, self.log = figdir, log
        self.formats = ("png", *dict.fromkeys(f for f in formats if f != "png"))
        self.workers = max(1, workers)
        self.fork = self.workers > 1 and "fork" in mp.get_all_start_methods()
        self.queue: list = []
        self.running: dict = {}  # connection -> (process, figure)
        self.seen: set[int] = set()
        self.failed: list[tuple[str, str]] = []
        self.bar = None
        self.done = 0
        if self.fork:
            _warm_up()

    def submit(self, fig) -> None:
        """Start drawing ``fig`` now if a worker is free, else as soon as one is."""
        if id(fig) in self.seen:
            return
        self.seen.add(id(fig))
        self.queue.append(fig)
        if self.fork:
            self._pump(block=False)

    def run(self, fn) -> Job:
        """Run ``fn()`` in a process of its own now, or as soon as one is free, before the
        figures waiting (in this process, at :meth:`Job.result`, when the drawer does not
        fork)."""
        job = Job(fn, self)
        if self.fork:
            self.queue.insert(sum(isinstance(q, Job) for q in self.queue), job)
            self._pump(block=False)
        return job

    def poll(self) -> None:
        """Collect the processes that finished and start the next ones (call it now and then
        during long computations, so that no process slot stays idle)."""
        if self.fork:
            self._pump(block=False)

    def wait(self, job: Job) -> None:
        """Wait until ``job`` is done, starting figures as processes free up."""
        while not job.done:
            self._pump(block=True, until=job)

    def _start(self, fig) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        parent, child = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_child, args=(child, fig, self.figdir, self.formats), daemon=True)
        p.start()
        child.close()
        self.running[parent] = (p, fig)

    def _finished(self, fig, error) -> None:
        if isinstance(fig, Job):
            fig.finish(*(error if isinstance(error, tuple) else (False, error)))
            return
        if error is None:
            png = (self.figdir / f"{fig.id}.png").read_bytes()
            fig.png_b64 = base64.b64encode(png).decode()
            fig.files = self.files_of(fig)
        else:
            self.failed.append((fig.id, f"drawing failed: {error}"))
            print(f"report: warning: figure {fig.id}: {error}", file=self.log)
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)

    def files_of(self, fig) -> list[tuple[str, str]]:
        """The files of ``fig`` besides its PNG, as ``(FORMAT, link)`` for its caption."""
        return [(fmt.upper(), f"{self.figdir.name}/{fig.id}.{fmt}") for fmt in self.formats if fmt != "png"]

    def _pump(self, block: bool, until: Job | None = None) -> None:
        from multiprocessing.connection import wait

        while True:
            if self.running:
                for conn in wait(list(self.running), timeout=None if block else 0):
                    p, fig = self.running.pop(conn)
                    try:
                        error = conn.recv()
                    except EOFError:  # the process died without a word (killed, out of memory)
                        error = "the drawing process died"
                    conn.close()
                    p.join()
                    self._finished(fig, error)
            # While this process computes (not blocking), it keeps a core of its own from the
            # figures (nothing waits for them before the end), not from the jobs (it waits for
            # those: the traced runs).
            limit = self.workers if block else self.workers - 1
            while self.queue and (
                len(self.running) < limit
                or (isinstance(self.queue[0], Job) and len(self.running) < self.workers)
            ):
                self._start(self.queue.pop(0))
            if not block or not (self.running or self.queue) or (until is not None and until.done):
                return

    def finish(self, figures: list, bar=None) -> list[tuple[str, str]]:
        """Draw what is left of ``figures`` and wait for every figure; returns (id, why) of
        the figures that failed (left out with a note: the rest of the report is written)."""
        self.bar = bar
        if bar is not None and self.done:
            bar.update(self.done)
        for f in figures:
            self.submit(f)
        if self.fork:
            self._pump(block=True)
        else:
            for f in self.queue:
                try:
                    _draw_one(f, self.figdir, self.formats)
                    self._finished(f, None)
                except Exception as e:  # noqa: BLE001 - reported, the report goes on
                    self._finished(f, f"{type(e).__name__}: {e}")
            self.queue = []
        return self.failed

    def close(self) -> None:
        """Stop drawing (the report failed): no process is left behind."""
        self.queue = []
        for conn, (p, _) in list(self.running.items()):
            p.terminate()
            p.join()
            conn.close()
        self.running = {}
