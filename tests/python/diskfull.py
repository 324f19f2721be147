"""``python diskfull.py ARGS...`` runs ``coapcc ARGS...`` on a simulated disk of
$COAPCC_DISK_BYTES bytes: dataset writes fail with ENOSPC once that many bytes were written
(for machines where the test cannot mount a small tmpfs)."""

import errno
import sys

from coapcc import dataset
from coapcc.cli import main

budget = [int(__import__("os").environ["COAPCC_DISK_BYTES"])]


def _spend(n: int, path) -> None:
    budget[0] -= n
    if budget[0] < 0:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))


_add = dataset.DatasetWriter.add


def add(self, record, flows=0):
    _spend(len(record) + 1, self.out / "runs")
    return _add(self, record, flows)


_tables = dataset._atomic_write_tables


def tables(ts, path):
    _spend(sum(t.nbytes for t in ts) // 4, path)
    return _tables(ts, path)


dataset.DatasetWriter.add = add
dataset._atomic_write_tables = tables

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
