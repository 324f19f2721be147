//! The report as columns, for callers that turn a run into tables: one column per flow
//! field ([`FlowColumn`], [`SimReport::flow_columns`]) and the links' counters by name
//! ([`Scalar`], [`LinkReport::fields`]).

use super::{FlowReport, LinkReport, SimReport};

/// One column of [`SimReport::flow_columns`]: a value per flow, in client order.
#[derive(Clone, Debug, PartialEq)]
pub enum FlowColumn {
    /// Unsigned integers.
    U32(Vec<u32>),
    /// Unsigned integers.
    U64(Vec<u64>),
    /// Unsigned integers, `None` where the flow has no value.
    OptU64(Vec<Option<u64>>),
    /// Floats, `None` where the flow has no value (a flow that did not finish).
    OptF64(Vec<Option<f64>>),
    /// Names.
    Str(Vec<&'static str>),
}

impl FlowColumn {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            FlowColumn::U32(v) => v.len(),
            FlowColumn::U64(v) => v.len(),
            FlowColumn::OptU64(v) => v.len(),
            FlowColumn::OptF64(v) => v.len(),
            FlowColumn::Str(v) => v.len(),
        }
    }

    /// Whether the column has no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A scalar of [`LinkReport::fields`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A counter.
    U64(u64),
    /// A share or a duration.
    F64(f64),
}

impl SimReport {
    /// The report as JSON without the one machine-dependent field (`wall_s`): two runs of the
    /// same (configuration, seed) give equal values.
    pub fn results_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("a report serialises");
        if let Some(o) = v.as_object_mut() {
            o.remove("wall_s");
        }
        v
    }

    /// [`SimReport::results_json`] without the configuration either: for runs whose
    /// configurations differ in a way that must not change the results (the two endpoint
    /// models, an algorithm behind the factory or the registry).
    pub fn outcome_json(&self) -> serde_json::Value {
        let mut v = self.results_json();
        if let Some(o) = v.as_object_mut() {
            o.remove("config");
        }
        v
    }

    /// The per-flow records as columns, named and ordered as the fields of [`FlowReport`] in
    /// its JSON form (the TCP-only columns only when some flow has them, `None` for a flow
    /// without). For callers that turn a run into tables: no per-flow object, no JSON.
    pub fn flow_columns(&self) -> Vec<(&'static str, FlowColumn)> {
        let f = &self.flows;
        let u64s = |g: fn(&FlowReport) -> u64| FlowColumn::U64(f.iter().map(g).collect());
        let mut cols = vec![
            ("client", FlowColumn::U32(f.iter().map(|x| x.client).collect())),
            ("group", FlowColumn::U32(f.iter().map(|x| x.group).collect())),
            ("cc", FlowColumn::Str(f.iter().map(|x| x.cc).collect())),
            ("fct_s", FlowColumn::OptF64(f.iter().map(|x| x.fct_s).collect())),
            ("transmissions", u64s(|x| x.transmissions)),
            ("retransmissions", u64s(|x| x.retransmissions)),
            ("unnecessary_retransmissions", u64s(|x| x.unnecessary_retransmissions)),
            ("failed_exchanges", u64s(|x| x.failed_exchanges)),
            ("completed_exchanges", u64s(|x| x.completed_exchanges)),
        ];
        if f.iter().any(|x| x.setup_s.is_some()) {
            cols.push(("setup_s", FlowColumn::OptF64(f.iter().map(|x| x.setup_s.flatten()).collect())));
        }
        type Get = fn(&FlowReport) -> Option<u64>;
        type GetF = fn(&FlowReport) -> Option<Option<f64>>;
        let tcp: [(&'static str, Get); 5] = [
            ("segments_sent", |x| x.segments_sent),
            ("retransmitted_segments", |x| x.retransmitted_segments),
            ("rto_expiries", |x| x.rto_expiries),
            ("fast_retransmits", |x| x.fast_retransmits),
            ("bytes_delivered", |x| x.bytes_delivered),
        ];
        for (name, get) in tcp {
            if f.iter().any(|x| get(x).is_some()) {
                cols.push((name, FlowColumn::OptU64(f.iter().map(get).collect())));
            }
        }
        let times: [(&'static str, GetF); 3] = [
            ("first_rto_s", |x| x.first_rto_s),
            ("rto_episode_s", |x| x.rto_episode_s),
            ("rto_resend_s", |x| x.rto_resend_s),
        ];
        for (name, get) in times {
            if f.iter().any(|x| get(x).is_some()) {
                cols.push((name, FlowColumn::OptF64(f.iter().map(|x| get(x).flatten()).collect())));
            }
        }
        let recovery: [(&'static str, Get); 3] = [
            ("new_after_first_dupack", |x| x.new_after_first_dupack),
            ("recovery_retransmits", |x| x.recovery_retransmits),
            ("recovery_rounds", |x| x.recovery_rounds),
        ];
        for (name, get) in recovery {
            if f.iter().any(|x| get(x).is_some()) {
                cols.push((name, FlowColumn::OptU64(f.iter().map(get).collect())));
            }
        }
        cols
    }
}

impl LinkReport {
    /// Every counter with its name, in the order of the JSON form.
    pub fn fields(&self) -> [(&'static str, Scalar); 13] {
        use Scalar::{F64, U64};
        [
            ("offered_bytes", U64(self.offered_bytes)),
            ("delivered_bytes", U64(self.delivered_bytes)),
            ("buffer_drop_bytes", U64(self.buffer_drop_bytes)),
            ("error_loss_bytes", U64(self.error_loss_bytes)),
            ("busy_fraction", F64(self.busy_fraction)),
            ("offered_packets", U64(self.offered_packets)),
            ("delivered_packets", U64(self.delivered_packets)),
            ("buffer_drop_packets", U64(self.buffer_drop_packets)),
            ("error_loss_packets", U64(self.error_loss_packets)),
            ("serialised_bytes", U64(self.serialised_bytes)),
            ("busy_s", F64(self.busy_s)),
            ("window_s", F64(self.window_s)),
            ("max_queue_bytes", U64(self.max_queue_bytes)),
        ]
    }
}
