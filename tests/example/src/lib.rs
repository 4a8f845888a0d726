//! # Testing my own lease implementation with leasesim
//!
//! This package is a worked example of using leasesim the way its users do: I wrote my own
//! worker, coordinator and effect receiver (a payments service), and let leasesim's scenarios,
//! fault plans and checkers judge them. It depends on leasesim only through its public crates:
//! `leasesim-protocol` for the messages, the journal events and the machine traits, `leasesim`
//! and `leasesim-sim` to run the scenarios.
//!
//! ## What is here
//!
//! - [`worker`]: [`Worker`], which claims jobs, keeps its lease alive on its own timer, walks
//!   each job's plan (payments with the fence and a stable key, tool calls with a client
//!   timeout, checkpoints), goes quiet in jeopardy and reports through a conditional commit. It
//!   carries one bug behind a switch, [`Bug::DeadlineFromReplyArrival`] (below).
//! - [`coordinator`]: [`Coordinator`], an in-memory lease table: atomic claim, conditional
//!   heartbeat, checkpoint and commit, lease lengths per class, attempt limits and retry
//!   backoff, admission by class capacity, the renewal cap, operator actions.
//! - [`receiver`]: [`Payments`], which captures once per idempotency key, fences per invoice
//!   and answers "did this payment happen?".
//! - [`machines`]: my machines as leasesim takes them ([`leasesim::Machines`]), and the
//!   program my own command line, `payments-leasesim` (`src/bin/`), runs: those sets on
//!   leasesim's scenarios and one of my own.
//!
//! ## Plugging a machine in
//!
//! Each role is a trait of `leasesim_protocol::machine`:
//! [`CoordinatorMachine`](leasesim_protocol::CoordinatorMachine),
//! [`WorkerMachine`](leasesim_protocol::WorkerMachine),
//! [`ReceiverMachine`](leasesim_protocol::ReceiverMachine). The machines are sans-IO: every input carries the
//! node's own clock reading (`now`); after each input the host drains `poll_output` (messages
//! to send, journal events to record) and wakes the machine at `poll_timeout`. My machines read
//! no clock, draw no random number and iterate no hash map, so a run is a pure function of its
//! seed. A reply goes to `Peer::Addr(from)`: two processes may share one worker name after a
//! restart.
//!
//! The checkers never look inside a machine; they read the messages and the journal. What I had
//! to journal, and when:
//!
//! | role | event | when |
//! |---|---|---|
//! | coordinator | `LeaseGranted` | every grant, with `lease_until` on its clock, the token taken over and why |
//! | coordinator | `LeaseRenewed`, `CheckpointSaved` | every extension (also the pick-up of a job an operator handed over) |
//! | coordinator | `HeartbeatRefused`, `ResultRejected` | in the same step as every `HeartbeatRejected` / `CommitRejected` it sends |
//! | coordinator | `ResultAccepted` (+ `RetryScheduled` / `JobFailed`) | once per accepted commit; a repeated commit is answered, not journaled again |
//! | coordinator | `LeaseRevoked`, `RenewalCapReached` | operator actions (a new epoch each), the cap |
//! | worker | `JobClaimed` | when it starts on a grant: from here on its actions are held against the grant |
//! | worker | `EffectStarted` | for every effect it sends, with its belief (`in_jeopardy`) |
//! | worker | `HeartbeatLost` / `CommitRefused` | in the same step as it learns "no row" / a refused commit |
//! | worker | `SuccessClaimed` | only after `CommitAccepted` |
//! | receiver | `EffectApplied` / `EffectDuplicate` / `EffectFenced` / `EffectUnauthorized` | every effect |
//!
//! ## Running them
//!
//! [`machines::my_worker`] plugs my worker in among leasesim's reference coordinator and
//! receivers; [`machines::all_mine`] plugs in all three of mine. From there everything is
//! leasesim's: one run, a sweep as a test (a failure saves the run under
//! `target/leasesim-failures/` and prints the command that reruns it), the matrix comparing my
//! implementations, and, through `payments-leasesim`, every command of the CLI.
//!
//! ```
//! use leasesim::{Builder, Verdict};
//! use leasesim_example::{machines, Bug};
//!
//! let mine = Builder::new().machines(machines::all_mine(Bug::None));
//! // My worker, coordinator and receiver through the W1/W2 story, seed 7.
//! assert_eq!(mine.run("w1-w2", 7).unwrap().verdict(), Verdict::Held);
//! // And through my own scenario, the same story on my hosts' fast clocks.
//! let mine = mine.scenario(machines::fast_clocks());
//! assert_eq!(mine.run("w1-w2-fast-clocks", 7).unwrap().verdict(), Verdict::Held);
//! ```
//!
//! ## The bug, and how leasesim shows it
//!
//! A holder may act only while it is sure the coordinator still considers its lease valid. The
//! coordinator starts (or extends) the lease when it handles the claim or heartbeat, which is
//! somewhere between my send and the reply's arrival, so the fixed worker counts its window
//! from the **send** time: `sent + L*(1 - rho)/(1 + rho) - G`. The buggy worker counts from
//! the **arrival** of the reply, the way the code reads most naturally ("got the lease, now +
//! lease"). On a healthy network the difference is a few milliseconds, inside the stop margin
//! G, and nothing goes wrong; that is why the mistake survives ordinary testing.
//!
//! It goes wrong when the reply is late. leasesim reaches that on purpose in its
//! `late-grant-reply` scenario (grants and renewal replies that come back late, twice, behind a
//! pause, reordered, then silence), and by chance in the swarm and in `coordinator-outage`. Its
//! checkers hold the deadline the worker *states* (`job_claimed`, `heartbeat_ok`) against the
//! coordinator's grant, mapped to true time through each clock, at the moment it is stated:
//! "W1 stated at its renewal a deadline for job0 with token 1 that runs to 47.114s, past the
//! coordinator's grant, which ends at 46.866s" (`quiescent-holder`, I5). When the buggy worker
//! also acts in that window, the effect it sends is flagged too: "W1 started
//! tool-job:4:create_case believing it held token 2 while token 3 had been granted". The tests
//! in `tests/late_reply_bug.rs` show the mistake on the machine alone and find it on the named
//! scenarios; every seed that catches it holds with the fix.
//!
//! ## What I left out on purpose
//!
//! - My coordinator keeps its table in memory. The simulator models a coordinator crash as an
//!   outage, so nothing is lost; a real one would write each step in one transaction.
//! - It never looks at `client_now` or at a lease length a payload asks for: lease time is the
//!   coordinator's clock and the job's class.
//! - My worker runs one job at a time and keeps only its request counter across a crash; after
//!   a restart it claims again and the checkpoint tells it where to resume.
//! - A payment whose outcome cannot be settled (no answer, or a provider that cannot answer
//!   status questions) goes to a human; there is no automatic compensation.
//! - The stage deadline runs per attempt, from the claim.

pub mod coordinator;
pub mod machines;
pub mod receiver;
pub mod worker;

pub use coordinator::Coordinator;
pub use receiver::Payments;
pub use worker::{Bug, Worker};
