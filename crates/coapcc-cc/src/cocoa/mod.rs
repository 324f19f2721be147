//! The CoCoA family: CoCoA (draft-ietf-core-cocoa-03), CoCoA-S, CoCoA FullBackoff1/2,
//! CoCoA+ and Eclipse Californium's CoCoA. Specification §5, §6, §9.1 and §9.2.
//!
//! All members share one state object, [`Cocoa`]: a strong (K = 4) and a weak (K = 1)
//! RFC 6298 [`Estimator`](crate::estimator::Estimator), an overall RTO blended from them, the ageing clock, and for the
//! FullBackoff variants the retained timer. What differs between the members, and every
//! ambiguity of the sources, is a named parameter of [`CocoaConfig`] (see
//! `docs/algorithms-cocoa.md` for the full table with sources).
//!
//! Invariants kept by every member:
//! - the overall RTO changes only on an ACK and by ageing, never by the backoff (the draft
//!   pseudocode's write of the backed-off value into "RTO" is not followed), except for the
//!   Californium 2.x compatibility flag [`CocoaConfig::californium2_backoff_persists`];
//! - only `T_0` is dithered; backoffs multiply the armed (dithered) timer;
//! - the exchange fails after MAX_RETRANSMIT retransmissions ([`Common::retransmit`](crate::common::Common::retransmit)); a
//!   failure updates no estimator (AMBIG-20).

//!
//! Files: `choices` (the members and the named choices of their ambiguities), `config` (the
//! configuration, its parameter table and presets), `state` (the state machine, [`Cocoa`]).

mod choices;
mod config;
mod state;

pub use choices::*;
pub use config::*;
pub use state::*;

pub(crate) use state::{age_value, estimator_params, Estimates};
