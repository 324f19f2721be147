//! Why a configuration cannot run ([`ConfigError`]: the key at fault and the problem).

/// Why a configuration cannot run. `Display` is one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A group's algorithm specification does not parse.
    #[error("groups[{group}].cc: {message}")]
    Algorithm {
        /// Group index.
        group: usize,
        /// The registry's one-line message (lists the valid choices).
        message: String,
    },
    /// A field has an unusable value.
    #[error("{field}: {problem}")]
    Invalid {
        /// Dotted path of the field.
        field: String,
        /// What is wrong.
        problem: String,
    },
}

impl ConfigError {
    /// The dotted key of the field at fault (`groups[1].cc`, `workload.kind`,
    /// `topology.mesh.mac.min_be`).
    pub fn key(&self) -> String {
        match self {
            ConfigError::Algorithm { group, .. } => format!("groups[{group}].cc"),
            ConfigError::Invalid { field, .. } => field.clone(),
        }
    }

    /// What is wrong, without the key.
    pub fn problem(&self) -> &str {
        match self {
            ConfigError::Algorithm { message, .. } => message,
            ConfigError::Invalid { problem, .. } => problem,
        }
    }
}

pub(crate) fn invalid(field: &str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { field: field.into(), problem: problem.into() }
}

/// A mesh network's error, keyed within `topology.mesh`.
pub(crate) fn mesh_error(e: coapcc_mesh::MeshNetError) -> ConfigError {
    ConfigError::Invalid { field: format!("topology.mesh.{}", e.key), problem: e.problem }
}
