//! RPL control traffic ([`RplConfig`]): DIO broadcasts on a Trickle timer and one DAO per node,
//! as Contiki's RPL sends them (`core/net/rpl/rpl-timers.c`, `rpl-conf.h`, `rpl-private.h` of
//! Contiki 3.0). The DODAG itself is fixed for the run (`routing.rs`): every DIO is consistent,
//! so each node's Trickle interval doubles from I_min up to I_max and never resets.
//!
//! - Trickle (`rpl-timers.c` `new_dio_interval`, `handle_dio_timer`): an interval I starts at
//!   I_min = 2^`RPL_DIO_INTERVAL_MIN` ms (2^12 = 4.096 s) and doubles up to
//!   `RPL_DIO_INTERVAL_DOUBLINGS` (8) times; the DIO goes out at a uniform point of
//!   [I/2, I) unless `RPL_DIO_REDUNDANCY` (10) consistent DIOs were heard in the interval.
//! - DAO (`rpl-timers.c` `schedule_dao`): each node sends one to its parent within
//!   `RPL_DAO_LATENCY` (4 s) of joining; storing mode forwards it up to the root. With
//!   `RPL_DEFAULT_LIFETIME` 0xff × `RPL_DEFAULT_LIFETIME_UNIT` 0xffff s routes never expire, so
//!   no periodic DAO follows.
//!
//! All nodes start their Trickle timers at t = 0 (the simulation starts with the motes
//! booting, as a Cooja run does) and every node is in the DODAG from the start, so each DAO
//! goes out within [2, 6) s. Frame sizes are derived from the messages' fields (see the
//! defaults).

use serde::{Deserialize, Serialize};

/// RPL control traffic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RplConfig {
    /// Send DIOs and DAOs (`false`: the DODAG is installed with no control traffic).
    pub control: bool,
    /// Trickle I_min, ms (2^`RPL_DIO_INTERVAL_MIN` = 4 096).
    pub dio_interval_min_ms: u32,
    /// Trickle doublings (`RPL_DIO_INTERVAL_DOUBLINGS`, 8: I_max = 4.096 s · 256 = 17.5 min).
    pub dio_doublings: u32,
    /// Trickle redundancy constant k (`RPL_DIO_REDUNDANCY`, 10).
    pub dio_redundancy: u32,
    /// DIO frame, PSDU bytes: 802.15.4 header with a short broadcast destination 17, IPHC 3,
    /// ICMPv6 4, DIO base 24, DODAG configuration option 16, prefix information 32 = 96.
    pub dio_psdu_bytes: u32,
    /// DAO frame, PSDU bytes: 802.15.4 header 23, IPHC 3, ICMPv6 4, DAO base 4, target
    /// option 20, transit information 6 = 60.
    pub dao_psdu_bytes: u32,
    /// Most delay between joining and sending the DAO, ms (`RPL_DAO_LATENCY`, 4 s).
    pub dao_latency_ms: u32,
}

impl Default for RplConfig {
    fn default() -> Self {
        RplConfig {
            control: false,
            dio_interval_min_ms: 4096,
            dio_doublings: 8,
            dio_redundancy: 10,
            dio_psdu_bytes: 96,
            dao_psdu_bytes: 60,
            dao_latency_ms: 4000,
        }
    }
}

impl RplConfig {
    /// Check the parameters; the first problem as a one-line message.
    pub fn validate(&self, max_psdu: u32) -> Result<(), String> {
        if self.dio_interval_min_ms == 0 || self.dio_doublings > 24 {
            return Err("routing.rpl needs dio_interval_min_ms > 0 and dio_doublings <= 24".into());
        }
        for (k, v) in [("dio_psdu_bytes", self.dio_psdu_bytes), ("dao_psdu_bytes", self.dao_psdu_bytes)] {
            if v == 0 || v > max_psdu {
                return Err(format!("routing.rpl.{k} must be in 1..={max_psdu}, got {v}"));
            }
        }
        Ok(())
    }

    /// The Trickle interval after `doublings` doublings, ns.
    pub fn interval_ns(&self, doublings: u32) -> u64 {
        (self.dio_interval_min_ms as u64 * 1_000_000) << doublings.min(self.dio_doublings)
    }
}
