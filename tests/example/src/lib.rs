//! A worked example of testing one's own lease implementation with leasesim.

pub mod coordinator;
pub mod harness;
pub mod receiver;
pub mod worker;

pub use coordinator::Coordinator;
pub use receiver::Payments;
pub use worker::{Bug, Worker};
