//! The text form of TCP configurations.

use coapcc_tcp::config::{
    CcKind, CycleStart, RtoBackoffReset, RttEstimator, TcpBase, TcpCcConfig, TcpConfig, TCP_INFO,
};
use coapcc_tcp::Preset;

#[test]
fn helsinki2018_sets_the_study_values() {
    let c = TcpCcConfig::parse("newreno:preset=helsinki2018").unwrap();
    assert_eq!(c.tcp.init_cwnd, 4);
    assert_eq!(c.tcp.init_rto, 2.0);
    assert_eq!((c.tcp.syn_retries, c.tcp.synack_retries), (40, 41));
    assert_eq!((c.tcp.min_rto, c.tcp.max_rto), (0.2, 120.0));
    assert_eq!(c.tcp.mss(), 256);
    // Limited Transmit as Linux; the recovery and the backoff as the thesis describes them.
    assert!(c.tcp.limited_transmit && !c.tcp.prr);
    assert_eq!(c.tcp.rto_backoff_reset, RtoBackoffReset::NewData);
    assert_eq!(c.tcp.rtt_estimator, RttEstimator::Linux);
    assert_eq!(c.base, TcpBase::Preset(Preset::Helsinki2018));
    assert!(c.to_string().starts_with("newreno:preset=helsinki2018,ssthresh_base=cwnd,"), "{c}");
    let d = TcpCcConfig::parse("bbr").unwrap();
    assert_eq!(d.tcp, TcpConfig::LINUX);
    assert_eq!(d.tcp.init_cwnd, 10);
    assert!(d.tcp.prr);
    assert_eq!(d.tcp.rto_backoff_reset, RtoBackoffReset::Sample);
    // A name alone says which defaults it runs.
    assert_eq!(d.base, TcpBase::Linux);
    assert!(d.to_string().starts_with("bbr:preset=linux,"), "{d}");
    // preset=linux goes back to the defaults; later keys still apply.
    let e = TcpCcConfig::parse("newreno:preset=helsinki2018,preset=linux,iw=3").unwrap();
    assert_eq!(e.tcp, TcpConfig { init_cwnd: 3, ..TcpConfig::LINUX });
    // The preset's values beside the defaults (coapcc algorithms newreno).
    let h = TcpCcConfig::newreno().with_preset(Preset::Helsinki2018).unwrap();
    assert_eq!(h, c);
    assert!(TcpCcConfig::newreno().with_preset(Preset::Rfc7252).is_err());
}

#[test]
fn display_is_canonical_and_round_trips() {
    for spec in [
        "newreno",
        "reno:preset=helsinki2018,iw=2,prr=off",
        "bbr:preset=helsinki2018",
        "bbr:cycle_start=3,pacing_margin=0,init_rto=3",
        "newreno:preset=helsinki2018,rto_backoff_reset=sample,rtt_estimator=rfc6298",
        "bbr:rto_backoff_reset=new_data",
    ] {
        let c = TcpCcConfig::parse(spec).unwrap();
        let text = c.to_string();
        let back = TcpCcConfig::parse(&text).unwrap();
        assert_eq!(c, back, "{text}");
        assert_eq!(text, back.to_string());
        // Every shared parameter is written.
        for p in TCP_INFO {
            assert!(text.contains(&format!("{}=", p.key)), "{} missing in {text}", p.key);
        }
        assert!(text.contains(":preset="), "{text}");
    }
    let c = TcpCcConfig::parse("bbr:cycle_start=3").unwrap();
    match c.cc {
        CcKind::Bbr(p) => assert_eq!(p.cycle_start, CycleStart::Fixed(3)),
        _ => unreachable!(),
    }
    // Preset first wherever it stands; later pairs override it.
    let a = TcpCcConfig::parse("newreno:iw=7,preset=helsinki2018").unwrap();
    assert_eq!(a.tcp.init_cwnd, 7);
}

#[test]
fn bad_specs_have_clear_errors() {
    let e = |s: &str| TcpCcConfig::parse(s).unwrap_err().to_string();
    assert!(e("cubic").contains("valid: newreno, bbr"));
    assert!(e("newreno:nope=1").contains("valid parameters"));
    assert!(e("newreno:high_gain=2").contains("unknown parameter 'high_gain'"));
    assert!(e("bbr:cycle_start=9").contains("0-7"));
    assert!(e("newreno:iw").contains("no value"));
    assert!(e("newreno:preset=nope").contains("unknown preset 'nope' for newreno; valid: linux, helsinki2018"));
    assert!(e("newreno:rto_backoff_reset=never").contains("sample, new_data or ack"));
    assert!(e("newreno:rtt_estimator=x").contains("linux or rfc6298"));
    assert!(e("newreno:preset=rfc7252").contains("defines no settings"));
    assert!(e("newreno:min_rto=5,max_rto=1").contains("min_rto"));
    assert!(e("newreno:mtu=30,header_bytes=40").contains("mtu"));
}

#[test]
fn counters_and_trace_lines_serialise() {
    use coapcc_tcp::pipe::{Pipe, PipeConfig};
    let cfg = TcpCcConfig::parse("bbr:preset=helsinki2018").unwrap();
    let mut p = Pipe::new(&cfg, PipeConfig::testbed(), 1).unwrap();
    p.server.enable_trace();
    let r = p.transfer(5000).unwrap();
    let c = serde_json::to_value(r.server).unwrap();
    for k in
        ["setup_s", "segments_sent", "retransmitted_segments", "rto_expiries", "fast_retransmits", "bytes_delivered"]
    {
        assert!(c.get(k).is_some(), "{k} missing: {c}");
    }
    let line = serde_json::to_value(r.server_trace[0].line(3)).unwrap();
    assert_eq!(line["flow"], 3);
    assert_eq!(line["event"], "send");
    assert_eq!(line["bbr_state"], "startup");
    assert_eq!(line["ca_state"], "open");
    assert!(line["pacing_rate"].as_f64().unwrap() > 0.0);
}
