//! `coapcc rtt-scenarios` and `coapcc resbw`: clap arguments and runners (feature `cli`).
//! Runners never exit or panic on bad input; they return one-line errors.

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{anyhow, bail, Context};
use clap::Args;

use crate::{scenarios, ResBwRequest, RttRow, RttStudyRequest};

/// Arguments of `coapcc rtt-scenarios`.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct RttScenariosArgs {
    /// RTO algorithm `NAME[:key=value,...]` (repeatable; see `coapcc algorithms`).
    #[arg(long = "cc", value_name = "SPEC", required = true)]
    pub cc: Vec<String>,
    /// Scenario of Table 5.1, 1-40, or 0 for the chapter 2 alternation (repeatable; default:
    /// 1-40, 5 and 6 only with --trace).
    #[arg(long = "scenario", value_name = "ID")]
    pub scenario: Vec<u32>,
    /// Vary one parameter of every --cc: KEY=V1,V2,... (e.g. the chapter 5 weight or K
    /// studies); each algorithm runs once per value, with `KEY=V` appended to its spec.
    #[arg(long = "vary", value_name = "KEY=V1,V2,...")]
    pub vary: Vec<String>,
    /// Master seed (scenario draws and dithering).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Values per scenario.
    #[arg(long, default_value_t = scenarios::SCENARIO_LEN)]
    pub len: usize,
    /// RTT trace for the real-trace scenarios 5 and 6 (one RTT in ms per line; `seq,rtt` CSV
    /// works). The thesis's traces are unpublished: results on any other trace are a substitute.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Scenario 33 as in Table 5.1 (`table`, default) or as the thesis's text describes it
    /// (`text`: U(500, 600)/N(100, 20) with 10 s spikes).
    #[arg(long, default_value = "table", value_parser = ["table", "text"])]
    pub scenario33: String,
    /// Non-positive RTT draws: draw again (`resample`, default) or clip to 1 ms (`clip`).
    #[arg(long, default_value = "resample", value_parser = ["resample", "clip"])]
    pub rtt_floor: String,
    /// Print JSON (a list of objects: scenario, cc, spurious, rmse_ms, transmissions, ...).
    #[arg(long)]
    pub json: bool,
    /// Also write RTO and RTT message by message (JSON lines: scenario, cc, i, t_s, rtt_ms,
    /// rto_ms, retransmissions) of every scenario and algorithm, for RTO-vs-RTT plots.
    #[arg(long, value_name = "FILE")]
    pub series: Option<PathBuf>,
    /// Messages per scenario and algorithm written by --series (from the first).
    #[arg(long = "series-count", value_name = "N", default_value_t = 1000)]
    pub series_count: usize,
    /// The reliability layer's choices (the thesis's simulator by default).
    #[command(flatten)]
    pub reliability: ReliabilityArgs,
    /// Scenario values: each message takes one (`per-message`, default, M-AMBIG-19), or each
    /// transmission, retransmissions included (`per-transmission`).
    #[arg(long = "rtt-consumption", default_value = "per-message", value_parser = ["per-message", "per-transmission"])]
    pub rtt_consumption: String,
}

/// The reliability layer's options (`coapcc_proto::endpoint::lifecycle::ReliabilityOptions`),
/// shared by `coapcc rtt-scenarios` and `coapcc resbw`.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct ReliabilityArgs {
    /// An ACK that arrives after its message was given up: the algorithm takes it as a sample
    /// (`sample`, default: the thesis's simulator) or it is dropped (`ignore`: RFC 7252).
    #[arg(long = "late-ack", default_value = "sample", value_parser = ["sample", "ignore"])]
    pub late_ack: String,
    /// The RTT an ACK reports: from the copy it answers (`copy`, default: the thesis's
    /// simulator) or from the original transmission (`original`: RFC 6298/CoCoA's reading).
    #[arg(long = "ack-rtt", default_value = "copy", value_parser = ["copy", "original"])]
    pub ack_rtt: String,
    /// The timer every copy waits: the algorithm's undithered RTO `estimate` (the default of
    /// `rtt-scenarios`: the thesis's "RTO-only" runs) or the `algorithm`'s own, with its
    /// dithering and backoff (the default of `resbw`).
    #[arg(long = "retransmit-timer", value_parser = ["estimate", "algorithm"])]
    pub retransmit_timer: Option<String>,
}

impl Default for ReliabilityArgs {
    fn default() -> Self {
        ReliabilityArgs { late_ack: "sample".into(), ack_rtt: "copy".into(), retransmit_timer: None }
    }
}

/// Expand `--vary KEY=V1,V2` over the specs.
pub fn expand_vary(specs: &[String], vary: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out: Vec<String> = specs.to_vec();
    for v in vary {
        let (key, values) = v.split_once('=').ok_or_else(|| anyhow!("--vary expects KEY=V1,V2,..., got {v:?}"))?;
        let key = key.trim();
        if key.is_empty() || values.trim().is_empty() {
            bail!("--vary expects KEY=V1,V2,..., got {v:?}");
        }
        out = out
            .iter()
            .flat_map(|s| {
                values.split(',').map(move |val| {
                    let sep = if s.contains(':') { "," } else { ":" };
                    format!("{s}{sep}{key}={}", val.trim())
                })
            })
            .collect();
    }
    Ok(out)
}

/// Run `coapcc rtt-scenarios`.
pub fn run_rtt_scenarios(a: &RttScenariosArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let (trace, trace_label) = match &a.trace {
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| format!("cannot read trace {}", p.display()))?;
            let t = scenarios::parse_trace(&text).map_err(|e| anyhow!("{}: {e}", p.display()))?;
            (Some(t), Some(format!("substitute trace {}", p.display())))
        }
        None => (None, None),
    };
    let req = RttStudyRequest {
        cc: expand_vary(&a.cc, &a.vary)?,
        scenarios: a.scenario.clone(),
        seed: a.seed,
        len: Some(a.len),
        trace,
        trace_label,
        scenario33: Some(a.scenario33.clone()),
        rtt_floor: Some(a.rtt_floor.clone()),
        late_ack: Some(a.reliability.late_ack.clone()),
        ack_rtt: Some(a.reliability.ack_rtt.clone()),
        retransmit_timer: a.reliability.retransmit_timer.clone(),
        rtt_consumption: Some(a.rtt_consumption.clone()),
    };
    let rows = req.run().map_err(|e| anyhow!(e))?;
    // After the run, so that an error is the only line on stderr.
    if req.scenarios.is_empty() && req.trace.is_none() {
        eprintln!("rtt-scenarios: scenarios 5 and 6 (real traces, unpublished) skipped; give --trace FILE to run them");
    }
    if let Some(path) = &a.series {
        write_series(&req, path, a.series_count)?;
    }
    if a.json {
        serde_json::to_writer(&mut *out, &rows)?;
        writeln!(out)?;
    } else {
        out.write_all(format_rows(&rows).as_bytes())?;
    }
    Ok(())
}

/// `--series`: per-message RTO and RTT of every (scenario, algorithm), as JSON lines.
fn write_series(req: &RttStudyRequest, path: &std::path::Path, count: usize) -> anyhow::Result<()> {
    let f = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    for id in req.scenario_ids() {
        for spec in &req.cc {
            let one = RttStudyRequest { cc: vec![spec.clone()], scenarios: vec![id], ..req.clone() };
            let json =
                crate::rtt_trace_json(&serde_json::to_string(&one.to_value())?, 0, count).map_err(|e| anyhow!(e))?;
            let pts: Vec<serde_json::Value> = serde_json::from_str(&json)?;
            for mut p in pts {
                p["scenario"] = id.into();
                p["cc"] = spec.as_str().into();
                serde_json::to_writer(&mut w, &p)?;
                writeln!(w)?;
            }
        }
    }
    w.flush().with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

fn format_rows(rows: &[RttRow]) -> String {
    let w = rows.iter().map(|r| r.cc.len()).max().unwrap_or(2).clamp(2, 60);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>8}  {:<w$}  {:>9}  {:>12}  {:>13}  {:>7}",
        "scenario", "cc", "spurious", "rmse_ms", "transmissions", "gave_up"
    );
    for r in rows {
        let mut cc = r.cc.clone();
        if cc.len() > w {
            cc.truncate(w - 1);
            cc.push('~');
        }
        let mark = if r.trace.is_some() { " (substitute trace)" } else { "" };
        let _ = writeln!(
            s,
            "{:>8}  {:<w$}  {:>9}  {:>12.1}  {:>13}  {:>7}{mark}",
            r.scenario, cc, r.spurious, r.rmse_ms, r.transmissions, r.gave_up
        );
    }
    s
}

/// Arguments of `coapcc resbw`.
#[derive(Args, Clone, Debug, PartialEq)]
pub struct ResBwArgs {
    /// Algorithm `NAME[:key=value,...]` (any of `coapcc algorithms`).
    #[arg(long = "cc", value_name = "SPEC", default_value = "default")]
    pub cc: String,
    /// Residual bandwidth of bad periods, packets/s: uniform:A,B | normal:M,SD | fixed:V.
    #[arg(long, value_name = "DIST", default_value = "uniform:0.6,1")]
    pub resbw: String,
    /// Residual bandwidth of good periods (enables good/bad alternation, starting good).
    #[arg(long, value_name = "DIST")]
    pub good: Option<String>,
    /// Mean good period, s (exponential).
    #[arg(long = "good-mean-s", value_name = "S", default_value_t = 60.0)]
    pub good_mean_s: f64,
    /// Mean bad period, s (exponential; a new residual bandwidth each period).
    #[arg(long = "bad-mean-s", value_name = "S", default_value_t = 5.0)]
    pub bad_mean_s: f64,
    /// RTT of each transmission, ms.
    #[arg(long = "rtt-ms", value_name = "DIST", default_value = "normal:500,10")]
    pub rtt_ms: String,
    /// Simulated time, s.
    #[arg(long = "duration-s", value_name = "S", default_value_t = 18_000.0)]
    pub duration_s: f64,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print JSON (goodput_pps, overhead, app_loss_ratio, transmissions, delivered, ...).
    #[arg(long)]
    pub json: bool,
    /// Also write every transmission (JSON lines: t_s, resbw_pps, rate_pps, lost, ordinal),
    /// for instantaneous-behaviour plots.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The reliability layer's choices (the thesis's simulator by default).
    #[command(flatten)]
    pub reliability: ReliabilityArgs,
    /// When the RTT is drawn: for every transmission (`per-transmission`, default) or once per
    /// period with its residual bandwidth (`per-period`).
    #[arg(long = "rtt-draw", default_value = "per-transmission", value_parser = ["per-transmission", "per-period"])]
    pub rtt_draw: String,
    /// Which transmissions the residual bandwidth lets through (the thesis does not say):
    /// `delivered` (default: lost iff 1/(time since the previous delivered transmission)
    /// exceeds it; a lost packet does not use the capacity), `rate-check` (... since the
    /// previous transmission, lost or not) or `token-bucket` (a one-packet bucket filled at
    /// the residual bandwidth).
    #[arg(long = "loss-rule", default_value = "delivered", value_parser = ["delivered", "rate-check", "token-bucket"])]
    pub loss_rule: String,
}

/// Run `coapcc resbw`.
pub fn run_resbw(a: &ResBwArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let req = ResBwRequest {
        cc: a.cc.clone(),
        resbw: a.resbw.clone(),
        good: a.good.clone(),
        good_mean_s: a.good_mean_s,
        bad_mean_s: a.bad_mean_s,
        rtt_ms: a.rtt_ms.clone(),
        duration_s: a.duration_s,
        seed: a.seed,
        trace: a.trace.is_some(),
        late_ack: Some(a.reliability.late_ack.clone()),
        ack_rtt: Some(a.reliability.ack_rtt.clone()),
        retransmit_timer: a.reliability.retransmit_timer.clone(),
        rtt_draw: Some(a.rtt_draw.clone()),
        loss_rule: Some(a.loss_rule.clone()),
    };
    let mut r = req.run().map_err(|e| anyhow!(e))?;
    if let (Some(path), Some(tr)) = (&a.trace, r.trace.take()) {
        let f = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        let mut w = std::io::BufWriter::new(f);
        for p in &tr {
            serde_json::to_writer(&mut w, p)?;
            writeln!(w)?;
        }
        w.flush().with_context(|| format!("cannot write {}", path.display()))?;
    }
    if a.json {
        serde_json::to_writer(&mut *out, &r)?;
        writeln!(out)?;
    } else {
        let o = &r.outcome;
        writeln!(
            out,
            "{}: goodput {:.4} pkt/s (mean residual bandwidth {:.3}), overhead {:.3}, application loss {:.4}",
            r.cc, o.goodput_pps, o.mean_resbw_pps, o.overhead, o.app_loss_ratio
        )?;
        writeln!(
            out,
            "{} transmissions, {} delivered, {} dropped, {} lost, {} spurious in {} s (seed {})",
            o.transmissions, o.delivered, o.dropped, o.lost, o.spurious, o.duration_s, r.seed
        )?;
        if o.truncated {
            writeln!(out, "truncated: the run reached the transmission bound before --duration-s")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rtt_args(cc: &[&str], scenario: &[u32]) -> RttScenariosArgs {
        RttScenariosArgs {
            cc: cc.iter().map(|s| s.to_string()).collect(),
            scenario: scenario.to_vec(),
            seed: 1,
            len: 3000,
            scenario33: "table".into(),
            rtt_floor: "resample".into(),
            json: true,
            rtt_consumption: "per-message".into(),
            ..Default::default()
        }
    }

    #[test]
    fn rtt_scenarios_json_has_the_documented_keys() {
        let mut out = Vec::new();
        run_rtt_scenarios(&rtt_args(&["default", "cocoa"], &[7, 0]), &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let rows = v.as_array().unwrap();
        assert_eq!(rows.len(), 4);
        for key in ["scenario", "cc", "spurious", "rmse_ms", "transmissions"] {
            assert!(rows.iter().all(|r| r.get(key).is_some()), "{key}");
        }
        assert_eq!(rows[0]["scenario"], 7);
        assert_eq!(rows[1]["cc"], "cocoa");
    }

    #[test]
    fn series_and_trace_files() {
        let dir = std::env::temp_dir().join(format!("coapcc-studies-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut a = rtt_args(&["default", "cocoa"], &[35]);
        a.series = Some(dir.join("series.jsonl"));
        a.series_count = 50;
        run_rtt_scenarios(&a, &mut Vec::new()).unwrap();
        let text = std::fs::read_to_string(dir.join("series.jsonl")).unwrap();
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 100);
        assert_eq!(lines[50]["cc"], "cocoa");
        assert_eq!(lines[0]["i"], 0);
        // Both algorithms see the same RTTs.
        assert_eq!(lines[3]["rtt_ms"], lines[53]["rtt_ms"]);
        let r = ResBwArgs {
            cc: "default".into(),
            resbw: "uniform:0.6,1".into(),
            good: None,
            good_mean_s: 60.0,
            bad_mean_s: 5.0,
            rtt_ms: "normal:500,10".into(),
            duration_s: 120.0,
            seed: 1,
            json: true,
            trace: Some(dir.join("trace.jsonl")),
            reliability: ReliabilityArgs::default(),
            rtt_draw: "per-transmission".into(),
            loss_rule: "delivered".into(),
        };
        let mut out = Vec::new();
        run_resbw(&r, &mut out).unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert!(report.get("trace").is_none());
        let sends = std::fs::read_to_string(dir.join("trace.jsonl")).unwrap().lines().count() as u64;
        assert_eq!(sends, report["transmissions"].as_u64().unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let mut out = Vec::new();
        for a in [rtt_args(&["default"], &[41]), rtt_args(&["nope"], &[7]), rtt_args(&["default"], &[5])] {
            assert!(run_rtt_scenarios(&a, &mut out).is_err());
        }
        let mut a = rtt_args(&["default"], &[7]);
        a.trace = Some("/nonexistent/trace.txt".into());
        let e = run_rtt_scenarios(&a, &mut out).unwrap_err().to_string();
        assert!(e.contains("cannot read trace"), "{e}");
        let bad = ResBwArgs {
            cc: "default".into(),
            resbw: "uniform:1".into(),
            good: None,
            good_mean_s: 60.0,
            bad_mean_s: 5.0,
            rtt_ms: "normal:500,10".into(),
            duration_s: 100.0,
            seed: 1,
            json: false,
            trace: None,
            reliability: ReliabilityArgs::default(),
            rtt_draw: "per-transmission".into(),
            loss_rule: "delivered".into(),
        };
        assert!(run_resbw(&bad, &mut out).unwrap_err().to_string().contains("resbw"));
        assert!(run_resbw(&ResBwArgs { resbw: "fixed:1".into(), duration_s: -1.0, ..bad.clone() }, &mut out).is_err());
        let ok = ResBwArgs { resbw: "fixed:1".into(), ..bad };
        run_resbw(&ok, &mut out).unwrap();
        assert!(String::from_utf8(out).unwrap().contains("goodput"));
    }

    #[test]
    fn vary_expands_every_spec() {
        let v = expand_vary(&["a".into(), "b:x=1".into()], &["k=1,2".into()]).unwrap();
        assert_eq!(v, ["a:k=1", "a:k=2", "b:x=1,k=1", "b:x=1,k=2"]);
        assert!(expand_vary(&["a".into()], &["k".into()]).is_err());
    }
}
