//! What the faults did: which are in force, what each one disturbed and when, each worker's clock
//! rate, and which workers' clocks left their bound. Advanced event by event from the fault
//! plan's commands and the fate of each message; the liveness checker reads it to tell a needed
//! takeover from a needless one, the holder checker to map a stated deadline to true time and to
//! know when the belief check is void. A clock leaves its bound the same way whether it was
//! configured beyond it or a fault set it there (a rate beyond the bound, a monotonic step, a
//! frozen pause), and each time the judgements it voids are listed as skipped. It counts the
//! fault hazards as they happen.

use crate::hazard::{Hazard, Hazards};
use crate::{fmt_ns, Ev, Judgement, Role, Skipped, World};
use leasesim_protocol::Invariant;
use leasesim_sim::{Command, Fate, NodeId};
use leasesim_sorted::{SortedMap, SortedSet};

/// A disturbance the reference protocol is built to absorb: one missed heartbeat (R - 1 misses
/// tolerated) or extra latency within the jitter reserve (P6).
#[derive(Copy, Clone, Debug)]
pub(crate) enum Soft {
    /// A lost message.
    Drop,
    /// Extra latency beyond the network's longest ordinary flight time.
    Delay(u64),
}

/// The faults of a run so far. Kept per thread and cleared for each run (see
/// [`Faults::start`]): its sets and maps are sorted vectors that keep their storage.
#[derive(Default)]
pub(crate) struct Faults {
    /// Worker nodes whose clocks left their bound (belief checks are void for them).
    clocks_out: SortedSet<NodeId>,
    /// Clock rates a fault set, by node, latest last (the others are as configured).
    rates: Vec<(NodeId, i32)>,
    /// The last true time each node that was paused resumed.
    resumed: Vec<(NodeId, u64)>,
    /// The last true time a fault touched a worker node or its link to the coordinator.
    disturbed_at: SortedMap<NodeId, u64>,
    /// The last true time a fault touched the coordinator itself.
    coordinator_disturbed_at: Option<u64>,
    /// Soft disturbances on the workers' links to the coordinator, each with its worker, in
    /// time order.
    soft: Vec<(NodeId, u64, Soft)>,
    /// Cut links now.
    cuts: SortedSet<(NodeId, NodeId)>,
    /// Paused or crashed nodes now.
    down: SortedSet<NodeId>,
    /// Slow nodes now.
    slow: SortedSet<NodeId>,
    /// Room for the nodes a cut left cut from the coordinator (see `Faults::link`).
    cut_off: SortedSet<NodeId>,
    /// Whether the coordinator is cut from everyone right now.
    outage: bool,
}

/// The judgements a worker's clock voids once it left its drift bound: the SPEC promises belief
/// within grant only within the bound, and a takeover is needless only of a holder whose clock
/// kept to it.
const VOIDED_BY_CLOCK: [(Invariant, &str); 2] = [
    (Invariant::QuiescentHolder, "belief-within-grant"),
    (Invariant::Liveness, "needless-takeover"),
];

impl Faults {
    /// Starts over for a run about to begin, keeping the storage: no fault yet, and a worker
    /// configured beyond its drift bound is out of it from the start.
    pub fn start(&mut self, world: &World<'_>, out: &mut Judgement) {
        self.clocks_out.clear();
        self.rates.clear();
        self.resumed.clear();
        self.disturbed_at.clear();
        self.coordinator_disturbed_at = None;
        self.soft.clear();
        self.cuts.clear();
        self.down.clear();
        self.slow.clear();
        self.cut_off.clear();
        self.outage = false;
        for (node, info) in world.nodes.iter().enumerate() {
            let (Role::Worker { drift_ppm_max, .. }, Some(clock)) =
                (&info.role, world.clocks.get(node))
            else {
                continue;
            };
            if clock.drift_ppm.unsigned_abs() > *drift_ppm_max {
                let why = format!(
                    "its clock left its {drift_ppm_max} ppm drift bound (configured at {} ppm)",
                    clock.drift_ppm
                );
                let cause = "its clock was configured beyond its drift bound";
                self.leave_bound(world, node as NodeId, 0, cause, why, out);
            }
        }
    }

    /// Whether a worker's clock has left its bound.
    pub fn clock_out(&self, node: NodeId) -> bool {
        self.clocks_out.contains(&node)
    }

    /// A node's clock rate error now, if its clock is known: the last a fault set, or the one
    /// the world configured.
    pub fn rate(&self, world: &World<'_>, node: NodeId) -> Option<i32> {
        match self.rates.iter().rev().find(|(n, _)| *n == node) {
            Some(&(_, rate)) => Some(rate),
            None => world.clocks.get(node as usize).map(|c| c.drift_ppm),
        }
    }

    /// Whether `node` resumed from a pause at true time `t`.
    pub fn resumed_at(&self, node: NodeId, t: u64) -> bool {
        !self.resumed.is_empty() && self.resumed.contains(&(node, t))
    }

    /// A worker's clock left its drift bound at true time `t`: from then on the judgements it
    /// voids are skipped for it, and the verdict says so (once per worker, with the first cause).
    fn leave_bound(
        &mut self,
        world: &World<'_>,
        node: NodeId,
        t: u64,
        cause: &'static str,
        why: String,
        out: &mut Judgement,
    ) {
        if !self.clocks_out.insert(node) {
            return;
        }
        let who = world
            .nodes
            .get(node as usize)
            .map_or("world", |n| n.name.as_str());
        for (invariant, judgement) in VOIDED_BY_CLOCK {
            out.skip(Skipped {
                invariant,
                judgement,
                node,
                from_ns: t,
                cause,
                reason: format!(
                    "{judgement} ({}) not judged for {who} from {}: {why}",
                    invariant.spec_id(),
                    fmt_ns(t)
                ),
            });
        }
    }

    /// Whether a fault touched `node` (or its link to the coordinator), or the coordinator, at
    /// or after true time `since`, or one is in force on either now.
    pub fn hard_since(&self, node: NodeId, coordinator: NodeId, since: u64) -> bool {
        self.disturbed_at.get(&node).is_some_and(|t| *t >= since)
            || self.coordinator_disturbed_at.is_some_and(|t| t >= since)
            || self.down.contains(&node)
            || self.down.contains(&coordinator)
            || self.cuts.iter().any(|(a, b)| {
                (*a == node && *b == coordinator) || (*a == coordinator && *b == node)
            })
    }

    /// The soft disturbances on `node`'s link to the coordinator at or after true time `since`.
    pub fn soft_since(&self, node: NodeId, since: u64) -> impl Iterator<Item = Soft> + '_ {
        self.soft
            .iter()
            .filter(move |(n, t, _)| *n == node && *t >= since)
            .map(|(_, _, s)| *s)
    }

    /// A held message was released: it disturbed its sender.
    pub fn released(&mut self, coordinator: NodeId, node: NodeId, t: u64) {
        self.disturb(coordinator, node, t);
    }

    fn disturb(&mut self, coordinator: NodeId, node: NodeId, t: u64) {
        if node == coordinator {
            self.coordinator_disturbed_at = Some(t);
        } else {
            self.disturbed_at.insert(node, t);
        }
    }

    /// A fault plan's command at true time `t`.
    pub fn command(
        &mut self,
        world: &World<'_>,
        coordinator: NodeId,
        command: &Command,
        t: u64,
        out: &mut Judgement,
    ) {
        let hazards = &mut out.hazards;
        match *command {
            Command::Cut { from, to } => {
                self.cuts.insert((from, to));
                self.link(world, coordinator, (from, to), t, true, hazards);
            }
            Command::Heal { from, to } => {
                self.cuts.remove(&(from, to));
                self.link(world, coordinator, (from, to), t, false, hazards);
            }
            Command::Pause { .. }
            | Command::Resume { .. }
            | Command::Crash { .. }
            | Command::Restart { .. } => self.process(world, coordinator, command, t, out),
            Command::ClockStep { .. } | Command::WallStep { .. } | Command::SetDrift { .. } => {
                self.clock(world, command, t, out)
            }
            Command::SetSlow { node, extra_ns } => {
                // Its delays show in each message's flight time (a soft disturbance).
                if extra_ns > 0 {
                    self.slow.insert(node);
                    if node == coordinator {
                        hazards.hit(Hazard::CoordinatorOutage);
                    }
                } else {
                    self.slow.remove(&node);
                }
            }
            Command::SetNetwork { .. }
            | Command::Release { .. }
            | Command::Alarm { .. }
            | Command::Signal { .. } => {}
        }
    }

    /// A command to a node's process at true time `t`: a pause, a resumption, a crash or a
    /// restart.
    fn process(
        &mut self,
        world: &World<'_>,
        coordinator: NodeId,
        command: &Command,
        t: u64,
        out: &mut Judgement,
    ) {
        let is_worker = |node: NodeId| {
            matches!(
                world.nodes.get(node as usize).map(|n| &n.role),
                Some(Role::Worker { .. })
            )
        };
        match *command {
            Command::Pause { node, frozen } => {
                self.down.insert(node);
                self.disturb(coordinator, node, t);
                if node == coordinator {
                    out.hazards.hit(Hazard::CoordinatorOutage);
                }
                if frozen && is_worker(node) {
                    let why = "its clock stopped in a frozen pause (a VM stop)".to_string();
                    let cause = "its clock stopped in a frozen pause";
                    self.leave_bound(world, node, t, cause, why, out);
                }
            }
            Command::Resume { node } => {
                self.down.remove(&node);
                self.disturb(coordinator, node, t);
                match self.resumed.iter_mut().find(|(n, _)| *n == node) {
                    Some(r) => r.1 = t,
                    None => self.resumed.push((node, t)),
                }
            }
            Command::Crash { node } => {
                self.down.insert(node);
                self.disturb(coordinator, node, t);
                out.hazards.hit(Hazard::Crash);
            }
            Command::Restart { node } => {
                self.down.remove(&node);
                self.disturb(coordinator, node, t);
                if is_worker(node) {
                    out.hazards.hit(Hazard::RestartSameName);
                }
            }
            // Not a process's: `command` takes it in.
            _ => {}
        }
    }

    /// A command to a node's clock at true time `t`: a step of either clock, a drift set.
    fn clock(&mut self, world: &World<'_>, command: &Command, t: u64, out: &mut Judgement) {
        let role = |node: NodeId| world.nodes.get(node as usize).map(|n| &n.role);
        match *command {
            Command::ClockStep { node, delta_ns } => {
                out.hazards.hit(Hazard::ClockFault);
                if matches!(role(node), Some(Role::Worker { .. })) {
                    let sign = if delta_ns < 0 { "-" } else { "+" };
                    let why = format!(
                        "its monotonic clock was stepped by {sign}{}",
                        fmt_ns(delta_ns.unsigned_abs())
                    );
                    let cause = "its monotonic clock was stepped";
                    self.leave_bound(world, node, t, cause, why, out);
                }
            }
            Command::WallStep { .. } => out.hazards.hit(Hazard::ClockFault),
            Command::SetDrift { node, drift_ppm } => {
                out.hazards.hit(Hazard::ClockFault);
                self.rates.push((node, drift_ppm));
                if let Some(&Role::Worker { drift_ppm_max, .. }) = role(node) {
                    if drift_ppm.unsigned_abs() > drift_ppm_max {
                        let why = format!(
                            "its clock left its {drift_ppm_max} ppm drift bound (its rate was set to {drift_ppm} ppm)"
                        );
                        let cause = "its clock's rate was set beyond its drift bound";
                        self.leave_bound(world, node, t, cause, why, out);
                    }
                }
            }
            // Not a clock's: `command` takes it in.
            _ => {}
        }
    }

    /// A link was cut or healed: a link of the coordinator disturbs the other end, and the cut
    /// that leaves the coordinator cut from every other node both ways is an outage.
    fn link(
        &mut self,
        world: &World<'_>,
        coordinator: NodeId,
        (from, to): (NodeId, NodeId),
        t: u64,
        cut: bool,
        hazards: &mut Hazards,
    ) {
        if from != coordinator && to != coordinator {
            return;
        }
        let other = if from == coordinator { to } else { from };
        self.disturb(coordinator, other, t);
        if !cut {
            self.outage = false;
            return;
        }
        // Each node cut off from the coordinator has a cut of its own: with fewer cuts than the
        // other nodes there is no outage, and the nodes cut off need not be counted (most cuts
        // are of one worker's link).
        if self.cuts.len() + 1 < world.nodes.len() {
            return;
        }
        if self.count_cut_off(coordinator) + 1 == world.nodes.len()
            && self.cut_off.contains(&other)
            && self.cuts.contains(&(coordinator, other))
            && self.cuts.contains(&(other, coordinator))
            && !self.outage
        {
            self.outage = true;
            hazards.hit(Hazard::CoordinatorOutage);
        }
    }

    /// Gathers the nodes a cut left cut from the coordinator (one way or the other) in
    /// `cut_off`: never more than the cuts.
    fn count_cut_off(&mut self, coordinator: NodeId) -> usize {
        self.cut_off.clear();
        for &(a, b) in self.cuts.iter() {
            let end = (a == coordinator)
                .then_some(b)
                .or((b == coordinator).then_some(a));
            if let Some(n) = end {
                self.cut_off.insert(n);
            }
        }
        self.cut_off.len()
    }

    /// A message was sent by `e.node` to `to` with `fate`. A drop or a plan delay is a soft
    /// disturbance the protocol is built to absorb (one miss, a jitter reserve); a hold is a
    /// hard one. A duplicate harms no lease, but counts as late as its first copy arrives. Inlined into the walk's two callers (a request or
    /// routine answer the network disturbed is taken in here alone, by a call that does nothing
    /// else).
    #[inline(always)]
    pub fn sent(
        &mut self,
        world: &World<'_>,
        coordinator: NodeId,
        e: &Ev,
        to: NodeId,
        fate: &Fate,
        hazards: &mut Hazards,
    ) {
        let (from, t) = (e.node, e.t);
        let touches_coordinator = from == coordinator || to == coordinator;
        let other = if from == coordinator { to } else { from };
        let soft = match *fate {
            Fate::Drop { .. } => {
                hazards.hit(Hazard::MessageLost);
                Some(Soft::Drop)
            }
            Fate::Duplicate {
                delay_ns,
                dup_delay_ns,
            } => {
                // A duplicate harms no lease, but a plan may also have delayed it: the copy
                // that arrives first is what the receiver gets, as late as that copy is.
                hazards.hit(Hazard::MessageDuplicated);
                let extra = delay_ns
                    .min(dup_delay_ns)
                    .saturating_sub(world.latency_max_ns);
                let slow = self.slow.contains(&from) || self.slow.contains(&to);
                if extra > 0 && !slow {
                    hazards.hit(Hazard::MessageLate);
                }
                (extra > 0).then_some(Soft::Delay(extra))
            }
            Fate::Hold => {
                hazards.hit(Hazard::MessageLate);
                if touches_coordinator {
                    self.disturb(coordinator, other, t);
                }
                None
            }
            Fate::Deliver { delay_ns } => {
                let extra = delay_ns.saturating_sub(world.latency_max_ns);
                let slow = self.slow.contains(&from) || self.slow.contains(&to);
                if extra > 0 && !slow {
                    hazards.hit(Hazard::MessageLate);
                }
                (extra > 0).then_some(Soft::Delay(extra))
            }
        };
        if let (Some(soft), true) = (soft, touches_coordinator) {
            self.soft.push((other, t, soft));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Faults::link` passes over counting the nodes cut off while there are fewer cuts than
    /// other nodes: it rests on there never being more nodes cut off than cuts. Every set of
    /// links among four nodes, with each of them as the coordinator.
    #[test]
    fn no_more_nodes_are_cut_off_than_there_are_cuts() {
        let links: Vec<(NodeId, NodeId)> = (0..4)
            .flat_map(|a| (0..4).map(move |b| (a, b)))
            .filter(|(a, b)| a != b)
            .collect();
        let mut faults = Faults::default();
        for set in 0u32..1 << links.len() {
            faults.cuts.clear();
            for (k, &link) in links.iter().enumerate() {
                if set & (1 << k) != 0 {
                    faults.cuts.insert(link);
                }
            }
            for coordinator in 0..4 {
                let cuts = faults.cuts.len();
                assert!(faults.count_cut_off(coordinator) <= cuts, "{set:#x}");
            }
        }
    }
}
