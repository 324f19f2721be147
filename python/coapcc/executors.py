"""The sweep's executors: how a batch of runs is done, serially, on a local process pool or on
a Dask cluster, each yielding ``(task, record, error)`` as runs finish (:mod:`coapcc.sweeper`
writes them into the dataset). Every executor calls :func:`execute` for a run, which hands it
to its kind's worker entry point (:mod:`coapcc.kinds`); all give identical tables.

* :func:`serial` (``--workers 1``): in this process.
* :func:`pool` (default, ``--workers N``): a local pool of spawned processes driven by a
  generator alone; a worker that dies fails its run only, and no worker outlives the sweep.
* :func:`dask` (``--scheduler ADDRESS``, or ``--dask local``): dask.distributed; lost
  workers' runs are rescheduled.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator

from .kinds import get_kind
from .runner import RunnerLike, worker_init

__all__ = ["RunError", "execute", "serial", "pool", "dask", "describe"]


class RunError(Exception):
    """A run that failed on a worker (the worker's exception, as text)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def describe(e: BaseException) -> str:
    """A failed run's error as one line."""
    return f"{e.kind if isinstance(e, RunError) else type(e).__name__}: {e}"


def execute(
    runner: RunnerLike, config_json: str, config_hash: str, common_json: str, kind: str = "sim"
) -> tuple:
    """Worker entry point: run one configuration with its kind's ``execute``
    (:mod:`coapcc.kinds`); returns its record (:func:`coapcc.records.encode_columns`) and its
    number of rows, as :meth:`coapcc.storage.DatasetWriter.add` takes them."""
    return get_kind(kind).call("execute")(runner, config_json, config_hash, common_json)


def args(t) -> tuple:
    """What a worker gets for task ``t`` (a :class:`coapcc.sweeper.Task`)."""
    return (t.config_json, t.config_hash, t.common_json(), t.kind)


def serial(tasks, runner) -> Iterator[tuple[object, object, BaseException | None]]:
    for t in tasks:
        try:
            yield t, execute(runner, *args(t)), None
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as e:  # noqa: BLE001 - reported per run
            yield t, None, e


_READY = "ready"


def _pool_worker(conn, runner, parent_pid: int) -> None:
    """A pool worker: dies with the sweep (see :func:`coapcc.runner.worker_init`), runs the
    batches of tasks it receives, one task at a time, sending each run's reply as soon as it
    is done, until the pipe closes."""
    worker_init(parent_pid)
    conn.send(_READY)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        for args in msg:
            try:
                reply = (True, execute(runner, *args))
            except Exception as e:  # noqa: BLE001 - sent to the parent as text (picklable)
                reply = (False, (type(e).__name__, str(e)))
            try:
                conn.send(reply)
            except (BrokenPipeError, OSError):
                return


#: Most runs sent to a worker in one message (fewer messages and wake-ups; a worker is sent
#: its next batch while it still has a run to do, so it never waits for the sweep process).
_BATCH = 16


def pool(tasks, runner, workers: int):
    """A local pool of ``workers`` spawned processes driven by this generator alone (no
    helper threads or queues, so nothing can hang it). Tasks go to a worker in batches (of
    at most :data:`_BATCH`, smaller towards the end of the sweep), the next batch sent while
    the worker still has one run to do; each run's reply comes back as soon as it is done, so
    every finished run reaches the dataset at once. A worker that dies fails the run it was
    doing (its other runs are given to another worker) and is replaced; on any exit (end,
    Ctrl-C, SIGTERM, an error in the caller such as a full disk) the workers are stopped, and
    they die with this process even if it is killed (SIGKILL) first."""
    import collections
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    me = os.getpid()
    todo = list(reversed(tasks))  # pop() from the end: longest first
    slots: list[list] = []  # [process, connection, deque of its tasks (the first is running), started]
    failed_starts = 0

    import select

    poller = select.poll()  # one for the whole pool (multiprocessing's wait() makes one per call)
    owner: dict[int, list] = {}  # file descriptor -> slot

    def start():
        parent, child = ctx.Pipe(duplex=True)
        p = ctx.Process(
            target=_pool_worker, args=(child, runner, me), daemon=True, name="coapcc-sweep-worker"
        )
        p.start()
        child.close()
        slot = [p, parent, collections.deque(), False]
        for fd in (parent.fileno(), p.sentinel):
            poller.register(fd, select.POLLIN)
            owner[fd] = slot
        return slot

    def forget(slot) -> None:
        for fd in (slot[1].fileno(), slot[0].sentinel):
            with contextlib.suppress(KeyError, ValueError, OSError):
                poller.unregister(fd)
            owner.pop(fd, None)

    def feed(slot) -> None:
        """Keep the worker busy: a new batch when it has at most one run left."""
        if len(slot[2]) > 1 or not todo:
            return
        n = max(1, min(_BATCH, len(todo) // (4 * max(1, len(slots) or workers))))
        batch = [todo.pop() for _ in range(min(n, len(todo)))]
        slot[2].extend(batch)
        slot[1].send([args(t) for t in batch])

    try:
        for _ in range(min(workers, len(todo))):
            slot = start()
            slots.append(slot)
            feed(slot)
        while any(s[2] for s in slots):
            ready_slots = []
            while not ready_slots:
                for fd, _ in poller.poll():
                    s = owner.get(fd)
                    if s is None:
                        continue
                    if not s[2]:  # an idle worker (no run left) that exited: nothing to read
                        forget(s)
                    elif not any(s is r for r in ready_slots):
                        ready_slots.append(s)
            for i, s in enumerate(slots):
                if not s[2] or not any(s is r for r in ready_slots):
                    continue
                reply = None
                try:
                    if s[1].poll():
                        reply = s[1].recv()
                except (EOFError, OSError):
                    reply = None
                if reply == _READY:
                    s[3] = True
                    continue
                if reply is None:  # the worker died (killed, out of memory): fail its run
                    s[0].join(timeout=1)
                    forget(s)
                    s[1].close()
                    code = s[0].exitcode
                    task, rest = s[2][0], list(s[2])[1:]
                    todo.extend(reversed(rest))  # not started: another worker does them
                    if not s[3]:
                        failed_starts += 1
                        if failed_starts >= 2:  # it is not the run: workers cannot start
                            raise RuntimeError(
                                f"sweep workers die while starting (exit code {code}); a script that "
                                "calls coapcc.sweep() must do so under 'if __name__ == \"__main__\":' "
                                "(the workers are spawned processes that import the main module)"
                            )
                        todo.append(task)  # not its fault: run it again
                        slots[i] = s = start()
                        feed(s)
                        continue
                    slots[i] = s = start()
                    feed(s)
                    yield task, None, RunError("WorkerDied", f"the worker running it died (exit code {code})")
                else:
                    task = s[2].popleft()
                    feed(s)
                    ok, value = reply
                    yield task, (value if ok else None), (None if ok else RunError(*value))
    finally:
        for s in slots:
            with contextlib.suppress(Exception):
                s[1].close()
        for s in slots:
            if s[0].is_alive():
                s[0].terminate()
        deadline = time.monotonic() + 5
        for s in slots:
            s[0].join(timeout=max(0.0, deadline - time.monotonic()))
            if s[0].is_alive():
                s[0].kill()
                s[0].join(timeout=1)


def dask(tasks, runner, workers: int, scheduler: str | None):
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise RuntimeError(
            "the Dask executor (--dask, --scheduler) needs dask.distributed: pip install 'coapcc[cluster]'"
        ) from None
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        client = Client(cluster)
    try:
        futures = {}
        for t in tasks:
            f = client.submit(
                execute, runner, *args(t), key=f"coapcc-run-{t.config_hash}", pure=False, retries=2
            )
            futures[f] = t
        for f in as_completed(list(futures)):
            t = futures[f]
            if f.status == "error":
                yield t, None, f.exception()
            else:
                yield t, f.result(), None
    finally:
        if "futures" in locals():
            with contextlib.suppress(Exception):
                client.cancel(list(futures))
        client.close()
        if cluster is not None:
            cluster.close()
