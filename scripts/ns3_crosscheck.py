#!/usr/bin/env python3
"""Cross-check of coapcc-tcp's sans-IO TCP model against ns-3 on the testbed dumbbell.

One CoAP-over-TCP exchange of the Helsinki study: the client connects, the server sends a
2-byte CSM at once, the client sends its CSM and the 9-byte GET as one write, the server answers
with the whole 102 408-byte message. Both simulators run it over the same link:

* 60 kbit/s client -> server, 30 kbit/s server -> client, counted on the 296-byte IP packet
  (ns-3's point-to-point device adds a 2-byte PPP header: its rate is scaled by 298/296 so a
  296-byte packet serialises in exactly 296 * 8 / rate seconds, as on the testbed);
* one-way delays 215 / 415 ms (200 / 400 ms plus the 15 ms mean rest of path) in the model;
  ns-3's channel delay is symmetric, so it uses 315 ms both ways: the same round trip and the
  same GET-to-last-byte path (up + down), only the handshake's split differs;
* a tail-drop buffer of BUFFER bytes per direction (ns-3: the device's byte-limited queue, no
  queue disc; it does not count the packet in transmission, the model does, and ns-3 stops it
  when a full-size packet would not fit: the two agree within one packet);
* New Reno, MSS 256 (MTU 296), no SACK, no timestamps, initial window 4, SYN timeout 2 s,
  40 SYN retries, minimum RTO 200 ms, delayed ACK 200 ms / every second segment, PRR.

It reports, per buffer, the FCT (GET sent to last byte received at the client), the server's
segments (SYN-ACK, data, ACKs) and data retransmissions in each, and the wall time of one run of
each (ns-3: `Simulator::Run` only, not its start-up; the model: median of `--reps` runs).

Nothing is installed here. It needs the ns-3 Python wheel (``pip install 'coapcc[ns3]'`` or
``pip install ns3``) and the model's example binary::

    nice -n 10 cargo build --release -p coapcc-tcp --example crosscheck
    python scripts/ns3_crosscheck.py [--buffers 2500,14100,28200,1410000] [--json out.json]

The small application (server and client callbacks, counters) is C++ compiled at run time by
cppyy, which comes with the wheel; cppyy prints "Failed to materialize symbols" notes while it
does, which do not affect the run.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL_BIN = ROOT / "target" / "release" / "examples" / "crosscheck"
RESPONSE = 102_408  # 102 400 B payload + 8 B RFC 8323 header
CSM = 2
REQUEST = 9

CPP = r"""
namespace coapcc_xc {
using namespace ns3;
struct Result {
    double conn_at = -1, req_at = -1, done_at = -1;
    uint64_t rx = 0, srv_rx = 0, to_send = 0, sent = 0;
    uint64_t srv_segments = 0, data_segments = 0, retransmitted = 0, max_end = 0;
    uint64_t drops_down = 0, wire_data = 0;
    bool started = false;
};
static Result r;
static uint64_t resp_bytes = 0, csm_bytes = 2, req_bytes = 9;

void SrvSendMore(Ptr<Socket> s, uint32_t) {
    while (r.started && r.sent < r.to_send) {
        uint64_t n = std::min<uint64_t>(s->GetTxAvailable(), r.to_send - r.sent);
        if (n == 0) break;
        int k = s->Send(Create<Packet>(n));
        if (k <= 0) break;
        r.sent += k;
    }
}
void SrvRecv(Ptr<Socket> s) {
    Ptr<Packet> p;
    while ((p = s->Recv())) r.srv_rx += p->GetSize();
    if (!r.started && r.srv_rx >= csm_bytes + req_bytes) {
        r.started = true;
        r.to_send = resp_bytes;
        SrvSendMore(s, 0);
    }
}
void SrvTx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>) {
    uint32_t len = p->GetSize();
    if (len == 0) return;
    uint64_t seq = h.GetSequenceNumber().GetValue();
    r.data_segments++;
    if (seq + len <= r.max_end) r.retransmitted++;
    r.max_end = std::max<uint64_t>(r.max_end, seq + len);
}
void SrvMacTx(Ptr<const Packet> p) {
    r.srv_segments++;
    // MacTx sees the IP packet (the PPP header comes later): strip IPv4 and TCP headers.
    Ptr<Packet> q = p->Copy();
    Ipv4Header ip;
    q->RemoveHeader(ip);
    TcpHeader th;
    q->RemoveHeader(th);
    if (q->GetSize() > 0 && !(th.GetFlags() & TcpHeader::SYN)) r.wire_data++;
}
void DownDrop(Ptr<const Packet>) { r.drops_down++; }
void SrvAccept(Ptr<Socket> s, const Address&) {
    s->SetRecvCallback(MakeCallback(&SrvRecv));
    s->SetSendCallback(MakeCallback(&SrvSendMore));
    s->TraceConnectWithoutContext("Tx", MakeCallback(&SrvTx));
    s->Send(Create<Packet>(csm_bytes));
}
bool SrvRequest(Ptr<Socket>, const Address&) { return true; }
void CliRecv(Ptr<Socket> s) {
    Ptr<Packet> p;
    while ((p = s->Recv())) r.rx += p->GetSize();
    if (r.done_at < 0 && r.rx >= csm_bytes + resp_bytes) r.done_at = Simulator::Now().GetSeconds();
}
void CliConnected(Ptr<Socket> s) {
    r.conn_at = Simulator::Now().GetSeconds();
    r.req_at = r.conn_at;
    s->Send(Create<Packet>(csm_bytes + req_bytes));
}
void CliFailed(Ptr<Socket>) {}

void Setup(Ptr<Node> cli, Ptr<Node> srv, Ptr<NetDevice> srv_dev, Ipv4Address srv_addr, uint64_t bytes) {
    r = Result();
    resp_bytes = bytes;
    TypeId tid = TypeId::LookupByName("ns3::TcpSocketFactory");
    Ptr<Socket> ls = Socket::CreateSocket(srv, tid);
    ls->Bind(InetSocketAddress(Ipv4Address::GetAny(), 5683));
    ls->Listen();
    ls->SetAcceptCallback(MakeCallback(&SrvRequest), MakeCallback(&SrvAccept));
    srv_dev->TraceConnectWithoutContext("MacTx", MakeCallback(&SrvMacTx));
    Ptr<PointToPointNetDevice> p2p = DynamicCast<PointToPointNetDevice>(srv_dev);
    p2p->GetQueue()->TraceConnectWithoutContext("Drop", MakeCallback(&DownDrop));
    Ptr<Socket> cs = Socket::CreateSocket(cli, tid);
    cs->SetRecvCallback(MakeCallback(&CliRecv));
    cs->SetConnectCallback(MakeCallback(&CliConnected), MakeCallback(&CliFailed));
    cs->Connect(InetSocketAddress(srv_addr, 5683));
}
}
"""


def ns3_module():
    """Import the ns-3 wheel's bindings, or explain how to get them."""
    try:
        from ns import ns  # noqa: PLC0415 (optional dependency)
    except ImportError as e:
        sys.exit(f"ns3_crosscheck: the ns-3 Python wheel is missing ({e}); pip install 'coapcc[ns3]'")
    return ns


def run_ns3(ns, buffer: int) -> dict:
    """One transfer in ns-3; returns its figures."""
    import cppyy  # noqa: PLC0415 (comes with the ns3 wheel)

    if not hasattr(cppyy.gbl, "coapcc_xc"):
        cppyy.cppdef(CPP)
    xc = cppyy.gbl.coapcc_xc
    cd = ns.Config.SetDefault
    cd("ns3::TcpL4Protocol::SocketType", ns.StringValue("ns3::TcpNewReno"))
    cd("ns3::TcpSocket::SegmentSize", ns.UintegerValue(256))
    cd("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(4))
    cd("ns3::TcpSocket::ConnTimeout", ns.TimeValue(ns.Seconds(2.0)))
    cd("ns3::TcpSocket::ConnCount", ns.UintegerValue(40))
    cd("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.Seconds(0.2)))
    cd("ns3::TcpSocket::DelAckCount", ns.UintegerValue(2))
    cd("ns3::TcpSocket::SndBufSize", ns.UintegerValue(1 << 20))
    cd("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(1 << 20))
    cd("ns3::TcpSocketBase::Sack", ns.BooleanValue(False))
    cd("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(False))
    cd("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.Seconds(0.2)))
    cd("ns3::TcpSocketBase::LimitedTransmit", ns.BooleanValue(True))
    cd("ns3::TcpL4Protocol::RecoveryType", ns.TypeIdValue(ns.TypeId.LookupByName("ns3::TcpPrrRecovery")))

    nodes = ns.NodeContainer()
    nodes.Create(2)
    p2p = ns.PointToPointHelper()
    p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.MilliSeconds(315)))
    p2p.SetDeviceAttribute("Mtu", ns.UintegerValue(296))
    # The buffer: the device's byte-limited drop-tail queue, no queue disc. It holds the
    # packets waiting behind the one in transmission (the model counts that one too), and ns-3
    # stops it when the next full-size packet would not fit: the two agree within one packet.
    p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{buffer}B")))
    devs = p2p.Install(nodes)
    ppp = 298 / 296
    devs.Get(0).SetAttribute("DataRate", ns.DataRateValue(ns.DataRate(round(60_000 * ppp))))
    devs.Get(1).SetAttribute("DataRate", ns.DataRateValue(ns.DataRate(round(30_000 * ppp))))
    ns.InternetStackHelper().Install(nodes)
    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("198.18.0.0"), ns.Ipv4Mask("255.255.255.0"))
    ifs = addr.Assign(devs)
    ns.TrafficControlHelper().Uninstall(devs)
    xc.Setup(nodes.Get(0), nodes.Get(1), devs.Get(1), ifs.GetAddress(1), RESPONSE)
    ns.Simulator.Stop(ns.Seconds(3600))
    t = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - t
    res = xc.r
    # Data segments TCP sent that never reached the device: dropped by the traffic-control
    # layer while the device queue was stopped (the count can be one off: the device sees one
    # more data packet than TCP's Tx trace reports even on a loss-free run).
    lost_before_device = max(0, int(res.data_segments) - int(res.wire_data))
    out = {
        "fct_s": res.done_at - res.req_at if res.done_at >= 0 else None,
        "setup_s": res.conn_at,
        # Segments sent: those the device saw plus those dropped before it.
        "server_segments_sent": int(res.srv_segments) + lost_before_device,
        "server_data_segments_sent": int(res.data_segments),
        "server_retransmitted": int(res.retransmitted),
        "buffer_drops_down": lost_before_device + int(res.drops_down),
        "wall_s": wall,
    }
    ns.Simulator.Destroy()
    return out


def run_model(binary: Path, buffer: int, reps: int) -> dict:
    """The coapcc-tcp model on the same configuration (its `crosscheck` example)."""
    cmd = [str(binary), "--cc", "newreno:preset=helsinki2018,prr=on", "--buffer", str(buffer)]
    cmd += ["--bytes", str(RESPONSE), "--reps", str(reps)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    """Run both simulators for every buffer and print a Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--buffers", default="2500,14100,28200,1410000", help="bytes, comma-separated")
    ap.add_argument("--ns3-reps", type=int, default=5, help="ns-3 runs per buffer (median wall time)")
    ap.add_argument("--model-reps", type=int, default=200, help="model runs per buffer (median wall time)")
    ap.add_argument("--model-bin", type=Path, default=MODEL_BIN, help="the crosscheck example binary")
    ap.add_argument("--json", type=Path, help="write the figures here")
    a = ap.parse_args(argv)
    buffers = [int(b) for b in a.buffers.split(",")]
    if not (1 <= a.ns3_reps <= 100 and 1 <= a.model_reps <= 100_000):
        ap.error("--ns3-reps in 1..100, --model-reps in 1..100000")
    if not a.model_bin.exists():
        ap.error(f"{a.model_bin} not found: cargo build --release -p coapcc-tcp --example crosscheck")
    ns = ns3_module()
    try:
        version = importlib.metadata.version("ns3")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    rows = []
    for b in buffers:
        runs = [run_ns3(ns, b) for _ in range(a.ns3_reps)]
        n3 = dict(runs[-1], wall_s=statistics.median(r["wall_s"] for r in runs))
        m = run_model(a.model_bin, b, a.model_reps)
        rows.append({"buffer": b, "ns3": n3, "model": m})
    print(f"ns-3 {version} (Python wheel) vs coapcc-tcp, New Reno, 102 408-byte response\n")
    print(
        "| Buffer (B) | FCT ns-3 (s) | FCT model (s) | diff | server segments ns-3 / model | "
        "data segments ns-3 / model | retransmitted ns-3 / model | downlink drops ns-3 / model | "
        "wall ns-3 | wall model | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        n3, m = row["ns3"], row["model"]
        diff = (n3["fct_s"] - m["fct_s"]) / m["fct_s"] * 100 if n3["fct_s"] else float("nan")
        print(
            f"| {row['buffer']} | {n3['fct_s']:.3f} | {m['fct_s']:.3f} | {diff:+.2f} % | "
            f"{n3['server_segments_sent']} / {m['server_segments_sent']} | "
            f"{n3['server_data_segments_sent']} / {m['server_data_segments_sent']} | "
            f"{n3['server_retransmitted']} / {m['server_retransmitted']} | "
            f"{n3['buffer_drops_down']} / {m['buffer_drops_down']} | "
            f"{n3['wall_s'] * 1e3:.1f} ms | {m['wall_median_s'] * 1e3:.3f} ms | "
            f"{n3['wall_s'] / m['wall_median_s']:.0f}x |"
        )
    if a.json:
        a.json.write_text(json.dumps({"ns3_version": version, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
