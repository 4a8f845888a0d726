//! A deterministic discrete-event simulator (ARCHITECTURE.md, "Determinism"): one true time in u64 nanoseconds, an
//! event queue ordered by (time, sequence), per-node clocks, a network where each message gets
//! its own fate, partitions, pauses, crashes and restarts, a bounded event budget, a trace of
//! plain serde data, and one seeded generator of a pinned algorithm with a stream per purpose.
//!
//! A run is a pure function of (seed, processes, clocks, network, director).
//!
//! Architecture invariant: this crate knows nothing of leases and depends on no other crate of
//! the workspace; it reads no wall clock and iterates no hash-ordered map.

pub mod clock;
pub mod engine;
pub mod hash;
mod held;
pub mod rng;
pub mod time;

pub use clock::Clock;
pub use engine::{
    drive, Buffers, BuffersOf, Command, Control, Cx, Director, DropCause, End, Envelope, EventKind,
    Fate, Limits, NetConfig, NodeId, Out, Process, Sim, TraceEvent, BUFFER_KEPT_MAX_BYTES, WORLD,
};
pub use hash::{stable_hash, StableHasher};
pub use rng::{Prng, Stream};

#[cfg(test)]
mod tests {
    use super::*;

    /// Node 0 pings node 1 every 10 local units; node 1 answers. Notes record receipts.
    struct Pinger {
        pings: u32,
        crashed: u32,
    }

    impl Process for Pinger {
        type Msg = u32;
        type Note = (u32, u64);
        fn start(&mut self, cx: &mut Cx<'_, u32, (u32, u64)>) {
            if cx.node() == 0 {
                cx.set_wake(Some(cx.now() + 10));
            }
        }
        fn message(&mut self, cx: &mut Cx<'_, u32, (u32, u64)>, from: NodeId, msg: u32) {
            cx.note((msg, cx.now()));
            if cx.node() == 1 {
                cx.send(from, msg + 1000);
            }
        }
        fn wake(&mut self, cx: &mut Cx<'_, u32, (u32, u64)>) {
            self.pings += 1;
            if self.pings <= 5 {
                cx.send(1, self.pings);
                cx.set_wake(Some(cx.now() + 10));
            }
        }
        fn crash(&mut self) {
            self.crashed += 1;
            self.pings = 0;
        }
    }

    struct Plan(Vec<(u64, Command)>, bool, Option<u64>);
    impl Director<Pinger> for Plan {
        fn on_send(
            &mut self,
            ctl: &mut Control,
            _now: u64,
            env: &Envelope<u32>,
            fate: Fate,
        ) -> Fate {
            if self.1 && env.msg == 2 {
                // Hold ping 2 and release it when ping 4 is sent.
                self.2 = Some(env.id);
                return Fate::Hold;
            }
            if let (true, 4, Some(id)) = (self.1, env.msg, self.2) {
                ctl.push(Command::Release { id });
            }
            fate
        }
        fn on_alarm(&mut self, ctl: &mut Control, _now: u64, tag: u64) {
            ctl.push(self.0[tag as usize].1);
        }
    }

    type PingTrace = Vec<TraceEvent<u32, (u32, u64)>>;

    fn run(commands: Vec<(u64, Command)>, hold: bool) -> (PingTrace, End) {
        let net = NetConfig {
            latency_min_ns: 1,
            latency_max_ns: 3,
            drop_ppm: 0,
            dup_ppm: 0,
        };
        let limits = Limits {
            event_budget: 1_000,
            horizon_ns: 1_000,
            queue_max: 100,
        };
        let nodes = vec![
            (
                Pinger {
                    pings: 0,
                    crashed: 0,
                },
                Clock::new(0, 0),
            ),
            (
                Pinger {
                    pings: 0,
                    crashed: 0,
                },
                Clock::new(500, 0),
            ),
        ];
        let mut sim = Sim::new(9, nodes, net, limits);
        let mut plan = Plan(commands, hold, None);
        for (i, (at, _)) in plan.0.iter().enumerate() {
            sim.command(Command::Alarm {
                at: *at,
                tag: i as u64,
            });
        }
        let end = sim.run(&mut plan);
        (sim.into_trace(), end)
    }

    fn received(trace: &[TraceEvent<u32, (u32, u64)>], node: NodeId) -> Vec<u32> {
        trace
            .iter()
            .filter(|e| e.node == node)
            .filter_map(|e| match e.kind {
                EventKind::Note { note } => Some(note.0),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn same_seed_same_trace() {
        let (a, end) = run(vec![], false);
        let (b, _) = run(vec![], false);
        assert_eq!(end, End::Idle);
        assert_eq!(stable_hash(&a), stable_hash(&b));
        assert_eq!(received(&a, 1), vec![1, 2, 3, 4, 5]);
        // Node 1's clock reads 500 ahead of true time in everything it records.
        assert!(a
            .iter()
            .filter(|e| e.node == 1)
            .all(|e| e.local == e.t + 500));
    }

    #[test]
    fn a_cut_link_drops_and_a_heal_restores() {
        let (t, _) = run(
            vec![
                (15, Command::Cut { from: 0, to: 1 }),
                (25, Command::Heal { from: 0, to: 1 }),
            ],
            false,
        );
        // Ping 2 is sent at 20, inside the cut.
        assert_eq!(received(&t, 1), vec![1, 3, 4, 5]);
    }

    #[test]
    fn a_paused_node_handles_its_inbox_on_resume() {
        let (t, _) = run(
            vec![
                (
                    12,
                    Command::Pause {
                        node: 1,
                        frozen: false,
                    },
                ),
                (45, Command::Resume { node: 1 }),
            ],
            false,
        );
        assert_eq!(received(&t, 1), vec![1, 2, 3, 4, 5]);
        let first_after: Vec<u64> = t
            .iter()
            .filter(|e| e.node == 1 && matches!(e.kind, EventKind::Note { note: (2, _) }))
            .map(|e| e.t)
            .collect();
        assert_eq!(first_after, vec![45], "ping 2 waits for the resume");
    }

    #[test]
    fn a_crashed_node_loses_messages_and_restarts_with_volatile_state_reset() {
        let (t, _) = run(
            vec![
                (12, Command::Crash { node: 1 }),
                (35, Command::Restart { node: 1 }),
            ],
            false,
        );
        assert_eq!(received(&t, 1), vec![1, 4, 5]);
        assert!(t.iter().any(|e| matches!(e.kind, EventKind::Lost { .. })));
    }

    #[test]
    fn a_held_message_arrives_after_a_later_one() {
        let (t, _) = run(vec![], true);
        let got = received(&t, 1);
        let pos = |v: u32| {
            got.iter()
                .position(|x| *x == v)
                .expect("every ping arrives")
        };
        assert!(pos(2) > pos(3), "ping 2 was held past ping 3: {got:?}");
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(sorted, vec![1, 2, 3, 4, 5], "nothing lost, nothing doubled");
        assert!(t
            .iter()
            .any(|e| matches!(e.kind, EventKind::Release { .. })));
    }

    #[test]
    fn the_event_budget_ends_a_runaway_run() {
        struct Storm;
        impl Process for Storm {
            type Msg = ();
            type Note = ();
            fn start(&mut self, cx: &mut Cx<'_, (), ()>) {
                cx.send(cx.node(), ());
            }
            fn message(&mut self, cx: &mut Cx<'_, (), ()>, _: NodeId, _: ()) {
                cx.send(cx.node(), ());
            }
            fn wake(&mut self, _: &mut Cx<'_, (), ()>) {}
            fn crash(&mut self) {}
        }
        struct Quiet;
        impl Director<Storm> for Quiet {}
        let net = NetConfig {
            latency_min_ns: 0,
            latency_max_ns: 0,
            drop_ppm: 0,
            dup_ppm: 0,
        };
        let limits = Limits {
            event_budget: 50,
            horizon_ns: u64::MAX,
            queue_max: 10,
        };
        let mut sim = Sim::new(1, vec![(Storm, Clock::new(0, 0))], net, limits);
        assert_eq!(sim.run(&mut Quiet), End::EventBudget);
        assert_eq!(sim.events(), 50);
    }

    #[test]
    fn a_clock_step_moves_a_pending_wake() {
        // Node 0 wakes every 10 local units; stepping its clock 100 forward makes the pending
        // wake due at once.
        let (t, _) = run(
            vec![(
                12,
                Command::ClockStep {
                    node: 0,
                    delta_ns: 100,
                },
            )],
            false,
        );
        let sends: Vec<u64> = t
            .iter()
            .filter(|e| e.node == 0 && matches!(e.kind, EventKind::Send { .. }))
            .map(|e| e.t)
            .collect();
        assert_eq!(sends, vec![10, 12, 22, 32, 42]);
    }
}
