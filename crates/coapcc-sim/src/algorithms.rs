//! The algorithms of the client groups: a registry algorithm named by its textual form
//! (`NAME[:key=value,...]`, static dispatch), or a custom one registered under a name in
//! [`CustomAlgorithms`] (any [`ControllerFactory`], e.g. a Python class).

use std::collections::BTreeMap;
use std::sync::Arc;

use coapcc_cc::{lookup, Algorithm, AlgorithmConfig, CongestionControl};
use coapcc_proto::endpoint::{Controller, ControllerFactory};

/// Custom algorithms, by the name a group's `cc` uses for them. A name is a plain word
/// (letters, digits, `-`, `_`, `.`) that is not a registry algorithm's name; a group whose
/// `cc` is exactly that name gets one instance per client from the factory.
#[derive(Clone, Default)]
pub struct CustomAlgorithms {
    map: BTreeMap<String, Arc<dyn ControllerFactory>>,
}

impl CustomAlgorithms {
    /// No custom algorithm.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register `factory` as `name`. Errors: a name that is empty, not a plain word, or a
    /// registry algorithm's name.
    pub fn add(&mut self, name: &str, factory: Arc<dyn ControllerFactory>) -> Result<(), String> {
        let plain = name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if name.is_empty() || !plain {
            return Err(format!("custom algorithm name {name:?}: use letters, digits, '-', '_' or '.'"));
        }
        if lookup(name).is_some() {
            return Err(format!("custom algorithm name {name:?} is a registry algorithm's name"));
        }
        self.map.insert(name.to_string(), factory);
        Ok(())
    }

    /// The factory registered as `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn ControllerFactory>> {
        self.map.get(name)
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// One group's algorithm.
#[derive(Clone)]
pub(crate) enum GroupAlg {
    /// A registry algorithm.
    Registry(AlgorithmConfig),
    /// A custom one.
    Custom(Arc<dyn ControllerFactory>),
}

impl GroupAlg {
    /// A fresh instance.
    pub(crate) fn instance(&self) -> Controller {
        match self {
            GroupAlg::Registry(a) => Controller::Registry(a.build()),
            GroupAlg::Custom(f) => Controller::from_factory(&**f),
        }
    }

    /// The registry configuration, or the default one for a custom algorithm (the real
    /// endpoint derives its lifetimes from it).
    pub(crate) fn config(&self) -> AlgorithmConfig {
        match self {
            GroupAlg::Registry(a) => *a,
            GroupAlg::Custom(f) => f
                .registry()
                .copied()
                .unwrap_or_else(|| AlgorithmConfig::parse("default").expect("the default algorithm exists")),
        }
    }

    /// The factory, for the real endpoint.
    pub(crate) fn factory(&self) -> Option<Arc<dyn ControllerFactory>> {
        match self {
            GroupAlg::Registry(_) => None,
            GroupAlg::Custom(f) => Some(f.clone()),
        }
    }
}

/// The congestion-control type a compact client holds: [`Algorithm`] when every group uses
/// the registry (static dispatch, the fast path), [`Controller`] otherwise.
pub(crate) trait ClientCc: CongestionControl + Sized {
    /// An instance for a client of a group with `alg` (`None` if this type cannot hold it).
    fn make(alg: &GroupAlg) -> Option<Self>;
}

impl ClientCc for Algorithm {
    fn make(alg: &GroupAlg) -> Option<Self> {
        match alg {
            GroupAlg::Registry(a) => Some(a.build()),
            GroupAlg::Custom(_) => None,
        }
    }
}

/// Every group runs a Default CoAP variant from the registry: the algorithm's own type, a
/// fraction of [`Algorithm`]'s size (the largest variant's), so a large population's client
/// records stay small; same code, so same results.
impl ClientCc for coapcc_cc::default::DefaultCoap {
    fn make(alg: &GroupAlg) -> Option<Self> {
        match alg {
            GroupAlg::Registry(a) => match a.build() {
                Algorithm::Default(d) => Some(d),
                _ => None,
            },
            GroupAlg::Custom(_) => None,
        }
    }
}

impl ClientCc for Controller {
    fn make(alg: &GroupAlg) -> Option<Self> {
        Some(alg.instance())
    }
}
