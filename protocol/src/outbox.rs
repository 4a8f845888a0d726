//! The outputs a machine owes its host, kept between inputs: shared by the reference machines.

use crate::Output;

/// The outputs a machine has produced and its host has not taken yet, oldest first: a vector
/// read from the front and emptied once it is read to the end. The host drains it after every
/// input, so it never holds more than one input's outputs, and it keeps its storage.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outbox {
    items: Vec<Output>,
    /// How many of `items` the host has taken.
    taken: usize,
}

impl Outbox {
    /// An empty outbox with room for `capacity` outputs.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Outbox {
            items: Vec::with_capacity(capacity),
            taken: 0,
        }
    }

    /// Queues an output behind the others.
    #[inline]
    pub(crate) fn push(&mut self, output: Output) {
        self.items.push(output);
    }

    /// Takes the oldest output, if any.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Output> {
        let output = *self.items.get(self.taken)?;
        self.taken += 1;
        if self.taken == self.items.len() {
            self.clear();
        }
        Some(output)
    }

    /// Drops every output not taken yet.
    pub(crate) fn clear(&mut self) {
        self.items.clear();
        self.taken = 0;
    }

    /// Empties the outbox, keeping room for at most [`KEPT_MAX`] outputs.
    pub(crate) fn clear_within_bound(&mut self) {
        self.clear();
        self.items.shrink_to(KEPT_MAX);
    }
}

/// The most entries a machine's list keeps room for when it is rebuilt for another run
/// (`rebuild`): storage a long run grew beyond it is given back, so that a host that keeps
/// machines between runs does not hold one runaway run's memory for the rest of its runs.
pub(crate) const KEPT_MAX: usize = 4_096;
