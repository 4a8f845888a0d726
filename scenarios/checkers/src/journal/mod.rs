//! The journal format, version 1 (docs/journal-format.md): JSON lines, one journal event a line after a
//! header naming the format and the nodes. [`mod@write`] writes a simulated run's journal (one file
//! for all nodes, or one per node as a real system keeps them) and [`mod@read`] reads any journal
//! back, a real system's too, for `leasesim audit`. Both sides live here so that what one writes
//! the other reads: a round-trip test holds them together.

pub mod read;
pub mod write;

pub use read::{header, read, Journal, Keep, Place, Problem, Reader, Record, FORMAT, VERSION};
pub use write::{
    journal_per_node, node_file_name, snake, write_journal, write_journal_with_payload_hashes,
    Recorded, TARGET,
};

use leasesim_protocol::IdemKey;

/// An idempotency key as the receiver sees it and the journal writes it:
/// `tool-job:{job}:{operation}`, then `:{salt}` for a key of a fresh attempt (V5's). `ops` are
/// the operations' names by op id; an op without a name is written as its number.
pub fn key_text(ops: &[String], key: IdemKey) -> String {
    let op = ops
        .get(key.op.0 as usize)
        .cloned()
        .unwrap_or_else(|| key.op.to_string());
    if key.salt == 0 {
        format!("tool-job:{}:{op}", key.job.0)
    } else {
        format!("tool-job:{}:{op}:{}", key.job.0, key.salt)
    }
}
