"""The queue records of a trace (``trace_queue=True``), read into ``Trace.queue``."""

import pytest

import coapcc
from coapcc.trace import QUEUE_COLUMNS


def test_queue_dataframe_of_a_traced_run(tmp_path):
    path = tmp_path / "t.jsonl"
    r = coapcc.simulate(
        algorithm="cocoa",
        clients=30,
        exchanges=5,
        buffer_bytes=1000,
        seed=3,
        trace=str(path),
        trace_queue=True,
    )
    t = r.trace
    q = t.queue
    assert list(q.columns) == QUEUE_COLUMNS and len(q) > 0
    assert q["time_s"].is_monotonic_increasing
    assert (q["event"] == "drop").any(), "the case must congest"
    links = r.raw["links"]
    for direction, d in q.groupby("direction"):
        # never above the buffer; every drop is one the link counted
        assert d["bytes"].max() <= 1000
        drops = d[d["event"] == "drop"]
        assert len(drops) == links[direction]["buffer_drop_packets"]
        assert drops["size"].sum() == links[direction]["buffer_drop_bytes"]
        assert d["bytes"].max() == links[direction]["max_queue_bytes"]
        # bytes conserved: what entered left, the run ended with empty queues
        enq, left = d[d["event"] == "enqueue"], d[d["event"] == "leave"]
        assert enq["size"].sum() == left["size"].sum() == links[direction]["serialised_bytes"]
        assert d["bytes"].iloc[-1] == 0
    # the exchanges are read as before, and one flow's trace keeps the whole queue
    assert len(t.exchanges) == 150 and len(t.flow(0).queue) == len(q)


def test_queue_records_are_opt_in(tmp_path):
    path = tmp_path / "t.jsonl"
    r = coapcc.simulate(algorithm="default", clients=3, exchanges=2, seed=1, trace=str(path))
    assert '"kind"' not in path.read_text()
    q = r.trace.queue
    assert list(q.columns) == QUEUE_COLUMNS and q.empty
    with pytest.raises(ValueError, match="trace_queue"):
        coapcc.simulate(algorithm="default", clients=3, trace_queue=True)
