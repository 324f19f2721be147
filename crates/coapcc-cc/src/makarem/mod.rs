//! The algorithms of Makarem's 2021 PhD thesis: the thesis RTO estimator (versions 1, 2 and
//! final, chapter 5), CoCoA-4-state, and the rate-based congestion counteractions IDC-CoAP
//! and MBC-CoAP (chapter 6) with the §6.3 variants of IDC-CoAP. BDP-CoAP, Ancillotti &
//! Bruno's BBR-derived protocol the thesis compares them with, is [`crate::bdp`]: its RTO_init
//! is CoCoA+'s, so it lives beside the CoCoA family's estimation code.
//!
//! | Name | Loss detection (RTO) | Counteraction after a loss |
//! |---|---|---|
//! | `makarem-rto` | thesis estimator, undithered | none: every copy waits the same RTO |
//! | `cocoa-4state` | CoCoA strong estimator (gains 1/4, 1/8, K = 4), dithered | 4-state backoff, factors 1.1/1.3/1.7/2.5 |
//! | `idc-coap` (+ `-extra`, `-probing`, `-exp`) | thesis final estimator | spacing between sends, ×`iw` on a loss, −`dw`/−`fw` per ACK |
//! | `mbc-coap` | thesis final estimator | spacing = min of the last `m` inter-ACK times / pacing gain |
//!
//! **Pacing in the one interface.** The rate-based controls space *every* send, a
//! retransmission included, at `last_send + spacing`. New exchanges are held back through
//! [`CongestionControl::earliest_start`](crate::CongestionControl::earliest_start); a
//! retransmission is paced by its timer: after a loss the next send time is a deterministic
//! function of the state at the previous send, so the copy's timer is armed with
//! `max(RTO, spacing after the loss)`. The loss itself is accounted at `send + RTO`, when the
//! thesis declares it: an ACK arriving between the RTO and the paced retransmission first
//! applies the loss, then the ACK (exactly the order of the thesis's loop). The rate-based
//! controls assume NSTART = 1, as the thesis does: the spacing is per endpoint.
//!
//! Files: `config` (choices, [`MakaremConfig`], its parameter table and presets), `estimator`
//! (the thesis RTO estimator), `state` (the state machine, [`Makarem`]).

mod config;
mod estimator;
mod state;

pub use config::*;
pub use estimator::*;
pub use state::*;
