//! A worked example of testing one's own lease implementation with leasesim.

pub mod receiver;

pub use receiver::Payments;
