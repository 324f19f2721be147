//! [`MeshRun`]: the `coapcc mesh` command's configuration, a flat view of one simulation of
//! the message workload over a mesh (its `--config` / `--print-config` JSON, the `config` of
//! its report, Python's `coapcc.mesh()` configuration), and its translation into the one
//! simulation configuration ([`MeshRun::to_sim`]).

use serde::{Deserialize, Serialize};

use coapcc_mesh::config::{FrameConfig, MacConfig, RadioConfig, RoutingConfig};
use coapcc_mesh::mote::MoteConfig;
use coapcc_mesh::{MeshNet, MeshNetConfig, MeshNetError};

use crate::config::{
    CoapConfig, ConfigError, EventDist, GroupConfig, MessagesConfig, ServerConfig, SimConfig, TopologyConfig, UnitMode,
    WorkloadConfig, WorkloadKind,
};

/// One run of `coapcc mesh`: the mesh (`topology` ... `routing`), the algorithm of every
/// client, the traffic, the duration and the seed, in the command's flat form. Every node but
/// the DODAG root and the sink hosts one client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MeshRun {
    /// The preset the configuration started from (informational).
    pub preset: String,
    /// Topology: `grid:N`, `grid:NxM`, `chain:N`, `ring:N`, `dumbbell:K,M` or `file:PATH`.
    pub topology: String,
    /// Distance between neighbouring nodes of the generated topologies, metres.
    pub spacing_m: f64,
    /// Congestion-control algorithm of every client, `NAME[:key=value,...]`.
    pub cc: String,
    /// Traffic: `periodic:LOAD_KBPS`, `events:TB_S,SIZE_B` or `none` (`workload.kind`).
    pub traffic: String,
    /// Size of a periodic monitoring message, bytes (Ancillotti & Bruno: 96).
    pub message_bytes: u32,
    /// Simulated time, seconds (Ancillotti & Bruno: 3 h = 10 800 s).
    pub duration_s: f64,
    /// Master seed; every random stream derives from it.
    pub seed: u64,
    /// Physical layer and radio medium.
    pub radio: RadioConfig,
    /// Unslotted CSMA/CA MAC.
    pub mac: MacConfig,
    /// Header sizes of each layer.
    pub frame: FrameConfig,
    /// DODAG construction and forwarding.
    pub routing: RoutingConfig,
    /// The motes' processor and buffers.
    pub mote: MoteConfig,
    /// The CoAP application: fragmentation, no-caching rule, workload details.
    pub app: AppConfig,
}

/// The application section of a [`MeshRun`]: the message workload's parameters
/// (`workload.messages`) and the sink's processing delay (`server.processing_delay_ms`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AppConfig {
    /// Unit of congestion control.
    pub unit_mode: UnitMode,
    /// Bytes of CoAP payload per unit (Ancillotti & Bruno: 32).
    pub unit_bytes: u32,
    /// "No caching": a message generated while the previous one is still in flight is lost.
    pub no_caching: bool,
    /// Periodic monitoring: each client starts at a uniformly random phase.
    pub random_phase: bool,
    /// Global events: inter-event distribution.
    pub event_dist: EventDist,
    /// Global events: background message period per client, seconds (Ancillotti & Bruno: 60).
    pub background_period_s: f64,
    /// Global events: background message size, bytes.
    pub background_bytes: u32,
    /// Sink processing delay before it answers, µs.
    pub server_delay_us: u32,
    /// The clients' clock tick, ns (`coap.clock_tick_ns`; 0: exact time). Contiki's
    /// `CLOCK_SECOND` is 128 on Sky and Z1: 7 812 500 ns (`ancillotti-cooja`).
    pub clock_tick_ns: u64,
}

impl Default for AppConfig {
    fn default() -> Self {
        let m = MessagesConfig::default();
        AppConfig {
            unit_mode: m.unit_mode,
            unit_bytes: m.unit_bytes,
            no_caching: m.no_caching,
            random_phase: m.random_phase,
            event_dist: m.event_dist,
            background_period_s: m.background_period_s,
            background_bytes: m.background_bytes,
            server_delay_us: 0,
            clock_tick_ns: 0,
        }
    }
}

/// Default algorithm of the `ieee802154` preset: Contiki Erbium's CoAP (CoAP-CC) with its
/// testbed parameters.
pub const DEFAULT_CC: &str = "default:preset=ancillotti-cooja";

/// CoAP-CC as the Cooja study's firmware ran it (the `ancillotti-cooja` preset's algorithm):
/// Erbium's 3 s initial timer drawn in clock ticks from [3, 6] s (Ancillotti & Bruno's
/// footnote 1: random factor 2), doubled, and Erbium's give-up right after the 4th
/// retransmission (`er-coap-transactions.c` in Contiki 2.7 and 3.0: no wait after the last).
pub const ANCILLOTTI_COAP_CC: &str = "default:preset=ancillotti-cooja,ack_random_factor=2,wait_after_last=off";

/// CoCoA+ as the Cooja study ran it: the code Betzler et al. shared (their Contiki/Erbium
/// CoCoA, 2015: VBF 2.5/2/1.5 on the undithered RTO with "> 3 s", inverted blend, weak
/// samples for any number of retransmissions, strong reset after 3, first sample detected by
/// RTO == initial, ageing of < 1 s values to 1 s, blind RTO doubled per exchange in flight,
/// backed-off timers uncapped), on Erbium's transactions (give-up as [`ANCILLOTTI_COAP_CC`]).
pub const ANCILLOTTI_COCOA_PLUS: &str = "cocoa-plus:preset=ancillotti-cooja,vbf_table=betzler2015,blend_inverted=on,\
weak_max_n=unlimited,strong_reset_after_3=on,first_sample=rto-equals-initial,aging_low_rule=set-to-1s,\
blind_rule=double-per-exchange,backoff_cap=none,wait_after_last=off";

impl Default for MeshRun {
    fn default() -> Self {
        let m = MeshNetConfig::default();
        MeshRun {
            preset: "ieee802154".into(),
            topology: "grid:6".into(),
            spacing_m: m.spacing_m,
            cc: DEFAULT_CC.into(),
            traffic: "periodic:1".into(),
            message_bytes: MessagesConfig::default().message_bytes,
            duration_s: 10_800.0,
            seed: 1,
            radio: m.radio,
            mac: m.mac,
            frame: m.frame,
            routing: m.routing,
            mote: m.mote,
            app: AppConfig::default(),
        }
    }
}

impl MeshRun {
    /// The configuration of a named preset: the network of [`MeshNetConfig::preset`]
    /// (`ieee802154`, `ancillotti-cooja`, `makarem2021`) on a 6 × 6 grid, with Erbium's
    /// default CoAP (`ancillotti-cooja`: as the study's firmware ran it,
    /// [`ANCILLOTTI_COAP_CC`], on a 1/128 s clock; `makarem2021`: Makarem's default-CoAP
    /// parameters).
    pub fn preset(name: &str) -> Result<MeshRun, MeshNetError> {
        let d = MeshRun::default();
        let m = MeshNetConfig::preset(name, &d.topology)?;
        let key = name.trim().to_ascii_lowercase();
        let cc = match key.as_str() {
            "makarem2021" => "default:preset=makarem2021".into(),
            "ancillotti-cooja" => ANCILLOTTI_COAP_CC.into(),
            _ => d.cc.clone(),
        };
        // Erbium's transactions run on Contiki's clock: 128 ticks per second on Sky and Z1.
        let tick = if key == "ancillotti-cooja" { 1_000_000_000 / 128 } else { 0 };
        let app = AppConfig { clock_tick_ns: tick, ..d.app.clone() };
        let preset = if key == "ieee802154" { d.preset.clone() } else { key };
        Ok(MeshRun {
            preset,
            cc,
            radio: m.radio,
            mac: m.mac,
            frame: m.frame,
            routing: m.routing,
            mote: m.mote,
            app,
            ..d
        })
    }

    /// Set one field from text: `KEY=VALUE` with a dotted key (`radio.capture_db=6`,
    /// `mac.queue_packets=4`, `duration_s=600`).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), MeshNetError> {
        coapcc_mesh::config::set_dotted(self, key, value)
    }

    /// The mesh network.
    pub fn medium(&self) -> MeshNetConfig {
        MeshNetConfig {
            topology: self.topology.clone(),
            spacing_m: self.spacing_m,
            radio: self.radio.clone(),
            mac: self.mac.clone(),
            frame: self.frame.clone(),
            routing: self.routing.clone(),
            mote: self.mote.clone(),
        }
    }

    /// The simulation this run is: one group of clients running `cc`, one on each node but
    /// the root and the sink, the message workload of `traffic`, for `duration_s`. Errors
    /// are keyed as this configuration's keys.
    pub fn to_sim(&self) -> Result<SimConfig, ConfigError> {
        let kind = WorkloadKind::parse(&self.traffic).ok().filter(WorkloadKind::is_messages).ok_or_else(|| {
            invalid(
                "traffic",
                format!("bad traffic {:?}: expected periodic:LOAD_KBPS, events:TB_S,SIZE_B or none", self.traffic),
            )
        })?;
        let medium = self.medium();
        let net = MeshNet::<u32>::new(&medium, self.seed).map_err(|e| invalid(&e.key, e.problem))?;
        let clients = crate::engine::host_count(&net) as u32;
        let a = &self.app;
        let cfg = SimConfig {
            seed: self.seed,
            groups: vec![GroupConfig { cc: self.cc.clone(), clients }],
            workload: WorkloadConfig {
                kind,
                messages: Some(MessagesConfig {
                    message_bytes: self.message_bytes,
                    unit_mode: a.unit_mode,
                    unit_bytes: a.unit_bytes,
                    no_caching: a.no_caching,
                    random_phase: a.random_phase,
                    event_dist: a.event_dist,
                    background_period_s: a.background_period_s,
                    background_bytes: a.background_bytes,
                }),
                ..WorkloadConfig::default()
            },
            topology: TopologyConfig { mesh: Some(medium), ..TopologyConfig::default() },
            server: ServerConfig { processing_delay_ms: f64::from(a.server_delay_us) / 1e3, ..ServerConfig::default() },
            coap: CoapConfig { clock_tick_ns: a.clock_tick_ns, ..CoapConfig::default() },
            max_sim_time_s: self.duration_s,
            ..SimConfig::default()
        };
        cfg.validate().map_err(|e| self.error(e))?;
        Ok(cfg)
    }

    /// The same run as the parameters of one simulation ([`crate::params`]: `topology`,
    /// `mesh`, `workload`, `messages`, ...), what `coapcc.SimConfig` holds.
    pub fn to_params(&self) -> Result<crate::params::Json, ConfigError> {
        use crate::params::Json;
        let cfg = self.to_sim()?;
        let m = cfg.topology.mesh.as_ref().expect("a mesh run");
        let section = |v: serde_json::Value| Json::from_value(&v);
        let mesh = Json::Obj(vec![
            ("spacing_m".into(), section(serde_json::json!(m.spacing_m))),
            ("radio".into(), section(serde_json::to_value(&m.radio).expect("serialises"))),
            ("mac".into(), section(serde_json::to_value(&m.mac).expect("serialises"))),
            ("frame".into(), section(serde_json::to_value(&m.frame).expect("serialises"))),
            ("routing".into(), section(serde_json::to_value(&m.routing).expect("serialises"))),
            ("mote".into(), section(serde_json::to_value(&m.mote).expect("serialises"))),
        ]);
        let p = Json::Obj(vec![
            ("algorithm".into(), Json::Str(self.cc.clone())),
            ("clients".into(), Json::Num(cfg.total_clients().into())),
            ("workload".into(), Json::Str(cfg.workload.kind.to_string())),
            ("max_sim_time_s".into(), section(serde_json::json!(self.duration_s))),
            ("seed".into(), Json::Num(self.seed.into())),
            ("server".into(), section(serde_json::to_value(&cfg.server).expect("serialises"))),
            ("coap".into(), section(serde_json::to_value(&cfg.coap).expect("serialises"))),
            ("topology".into(), Json::Str(self.topology.clone())),
            ("mesh".into(), mesh),
            ("messages".into(), section(serde_json::to_value(&cfg.workload.messages).expect("serialises"))),
        ]);
        crate::params::normalize(&p).map_err(ConfigError::from)
    }

    /// An error of the simulation's configuration, keyed as this configuration's key.
    fn error(&self, e: ConfigError) -> ConfigError {
        let (field, problem) = match e {
            ConfigError::Algorithm { message, .. } => return invalid("cc", message),
            ConfigError::Invalid { field, problem } => (field, problem),
        };
        let key = if let Some(k) = field.strip_prefix("topology.mesh.") {
            k.to_string()
        } else if let Some(k) = field.strip_prefix("workload.messages.") {
            if k == "message_bytes" {
                k.to_string()
            } else {
                format!("app.{k}")
            }
        } else {
            match field.as_str() {
                "workload.kind" => "traffic".into(),
                "max_sim_time_s" => "duration_s".into(),
                "server.processing_delay_ms" => "app.server_delay_us".into(),
                "coap.clock_tick_ns" => "app.clock_tick_ns".into(),
                "topology.mesh" => "topology".into(),
                other => other.into(),
            }
        };
        invalid(&key, problem)
    }
}

fn invalid(field: &str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { field: field.into(), problem: problem.into() }
}
