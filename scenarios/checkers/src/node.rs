//! Who each node of a run is, as the checkers and the reports need to know it.

use leasesim_protocol::WorkerName;
use serde::{Deserialize, Serialize};

/// A node's role, as the checkers and reports need to know it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Role {
    /// The coordinator.
    Coordinator,
    /// A worker with its logical name and assumed drift bound.
    Worker {
        /// Logical name.
        name: WorkerName,
        /// The drift bound the worker assumes; clocks beyond it void the belief check.
        drift_ppm_max: u32,
    },
    /// An effect receiver.
    Receiver {
        /// Index among receivers.
        index: u8,
        /// Whether it checks fences.
        supports_fence: bool,
    },
    /// The tool.
    Tool,
    /// The operator (F8).
    Operator,
}

/// A node's display name and role.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// Display name (`coord`, `W1`, `recv`, `tool`).
    pub name: String,
    /// Role.
    #[serde(flatten)]
    pub role: Role,
}
