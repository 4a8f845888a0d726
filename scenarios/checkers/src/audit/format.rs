//! The journal format, version 1: JSON lines as `leasesim run --journal` and `--journal-dir`
//! write them and as a real system's logs can be mapped to (README, "Audit a real system").
//! This module owns reading it back: every line bounded, every problem named with its file and
//! line, nothing ever panics on what a file says. It judges nothing.
//!
//! A file is a header line, then one journal event a line:
//!
//! ```text
//! {"journal":"leasesim","nodes":[{"node":"coord","role":"coordinator"}],"version":1}
//! {"event":"lease_granted","seq":1,"t_local_ns":0,"node":"coord","job":0,"token":1,"holder":"W1","attempt":1,"lease_until_ns":30000000000,"reason":"claim"}
//! ```
//!
//! The header names the format and its version and declares the nodes whose lines follow with
//! their roles (`coordinator`, `worker` with its logical `worker` name, `receiver` with its
//! `receiver` index and whether it checks `fences`, `tool`, `operator`). It may be left out:
//! the lines are then read as version 1 and each node's role is inferred from the events it
//! journals. An event line names its `event`, its `node` and `t_local_ns`, the node's own clock
//! reading in nanoseconds (a journal read from a queue's tables rather than kept line by
//! line declares its node a `snapshot`: each job's latest grant only); `seq`, when present, numbers a node's lines from 1 so that a gap or
//! a repeated line is seen for certain. `t_true_ns` (a simulated run's true time) is never
//! read: a real system has none. The other fields are the event's, as the reference writes
//! them.

use crate::node::{NodeInfo, Role};
use leasesim_protocol::{
    EffectStatus, EntityId, ErrorCode, Event, IdemKey, JobId, JobState, OpId, OperatorAction,
    Outcome, RefusalReason, Token, WorkerName,
};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The format's name, the header's `journal` field.
pub const FORMAT: &str = "leasesim";
/// The format's version, the header's `version` field.
pub const VERSION: u64 = 1;
/// The longest line read; a longer one is a problem and skipped.
pub const LINE_BYTES_MAX: usize = 64 * 1024;
/// The most event lines read over all files; the rest are counted as not read.
pub const RECORDS_MAX: usize = 4_000_000;
/// The most problems kept; the rest are counted.
pub const PROBLEMS_MAX: usize = 500;
/// The most nodes; lines of further nodes are problems.
pub const NODES_MAX: usize = 1024;
/// The most distinct operation names (an idempotency key's meaning).
pub const OPS_MAX: usize = 256;
/// The first number given to a name that is not of the reference's form (`W3`, a number).
const ALIAS_BASE: u32 = 1_000_000;

/// The header line of a journal file that holds the lines of `nodes`.
pub fn header(nodes: &[NodeInfo]) -> String {
    let list: Vec<Value> = nodes.iter().map(node_json).collect();
    json!({"journal": FORMAT, "version": VERSION, "nodes": list}).to_string()
}

fn node_json(n: &NodeInfo) -> Value {
    match n.role {
        Role::Coordinator => json!({"node": n.name, "role": "coordinator"}),
        Role::Worker { name, .. } => {
            json!({"node": n.name, "role": "worker", "worker": name.to_string()})
        }
        Role::Receiver {
            index,
            supports_fence,
        } => {
            json!({"node": n.name, "role": "receiver", "receiver": index, "fences": supports_fence})
        }
        Role::Tool => json!({"node": n.name, "role": "tool"}),
        Role::Operator => json!({"node": n.name, "role": "operator"}),
    }
}

/// Where a line is: the file's index among those read, and its line number from 1.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Place {
    /// Index of the file in [`Journal::files`].
    pub file: usize,
    /// Line number, from 1.
    pub line: usize,
}

/// One journal event read from a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Where it was read.
    pub at: Place,
    /// Its node, by index in [`Journal::nodes`].
    pub node: usize,
    /// Its `seq`, if the line had one.
    pub seq: Option<u64>,
    /// The node's own clock reading.
    pub local_ns: u64,
    /// The event.
    pub event: Event,
}

/// A line that could not be read as it stands, or that says something about the log's
/// completeness (a gap, a repeat, a line out of its node's order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Where.
    pub at: Place,
    /// What, in words.
    pub what: String,
}

/// Every file read: nodes, records in each node's own order, and the problems met.
#[derive(Clone, Debug, Default)]
pub struct Journal {
    /// The files' names, as given.
    pub files: Vec<String>,
    /// Every node, in the order first met.
    pub nodes: Vec<NodeInfo>,
    /// Whether each node's role was declared by a header (else inferred from its events).
    pub declared: Vec<bool>,
    /// Whether a header declared the node's journal a snapshot (`"snapshot": true`): each
    /// job's latest decision only, as a queue's table holds it, earlier tokens unlisted.
    pub snapshot: Vec<bool>,
    /// The records, grouped by node (in node order), each node's in its own order: by `seq`
    /// where its lines carry one, else by its clock, ties in the order read.
    pub records: Vec<Record>,
    /// Problems, in the order met (at most [`PROBLEMS_MAX`]).
    pub problems: Vec<Problem>,
    /// Problems met beyond [`PROBLEMS_MAX`].
    pub problems_more: usize,
    /// Operation names, by op id (for readable keys).
    pub ops: Vec<String>,
    /// Names given a number of their own (`W1000000 = worker-7f3a`), in words.
    pub aliases: Vec<String>,
    /// Event lines read (known events, judged or not).
    pub lines_read: usize,
    /// Files that could not be read at all, with why (empty, a header of another version).
    pub unread: Vec<String>,
}

impl Journal {
    /// `file:line` of a place.
    pub fn place(&self, at: Place) -> String {
        format!(
            "{}:{}",
            self.files.get(at.file).map_or("?", String::as_str),
            at.line
        )
    }

    /// The index of the first node with this role predicate.
    pub fn node_where(&self, pred: impl Fn(&Role) -> bool) -> Option<usize> {
        self.nodes.iter().position(|n| pred(&n.role))
    }

    fn problem(&mut self, at: Place, what: String) {
        if self.problems.len() < PROBLEMS_MAX {
            self.problems.push(Problem { at, what });
        } else {
            self.problems_more += 1;
        }
    }
}

/// Which role an event's node must have.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Side {
    Coordinator,
    Worker,
    Receiver,
    Tool,
    Operator,
}

/// Every event name of version 1 and the role that journals it.
fn side(event: &str) -> Option<Side> {
    Some(match event {
        "lease_granted"
        | "lease_renewed"
        | "lease_revoked"
        | "renewal_cap_reached"
        | "checkpoint_saved"
        | "admission_deferred"
        | "retry_scheduled"
        | "job_failed"
        | "heartbeat_refused"
        | "result_accepted"
        | "result_rejected"
        | "statement_ran"
        | "statement_waited"
        | "statement_failed"
        | "step_ran" => Side::Coordinator,
        "effect_applied" | "effect_duplicate" | "effect_unauthorized" | "effect_fenced" => {
            Side::Receiver
        }
        "tool_faulted" => Side::Tool,
        "operator_acted" => Side::Operator,
        "job_claimed"
        | "heartbeat_ok"
        | "heartbeat_lost"
        | "jeopardy_entered"
        | "jeopardy_exited"
        | "tool_request_started"
        | "tool_answered"
        | "tool_timed_out"
        | "stage_deadline_exceeded"
        | "effect_started"
        | "effect_answered"
        | "effect_reconciled"
        | "tool_status_queried"
        | "human_review_requested"
        | "commit_sent"
        | "success_claimed"
        | "failure_acknowledged"
        | "commit_refused"
        | "commit_abandoned" => Side::Worker,
        _ => return None,
    })
}

fn fits(side: Side, role: &Role) -> bool {
    matches!(
        (side, role),
        (Side::Coordinator, Role::Coordinator)
            | (Side::Worker, Role::Worker { .. })
            | (Side::Receiver, Role::Receiver { .. })
            | (Side::Tool, Role::Tool)
            | (Side::Operator, Role::Operator)
    )
}

/// Reads journal files (name, bytes) into one [`Journal`]. Never fails: what cannot be read is a
/// problem with its place, or a file in [`Journal::unread`].
pub fn read(files: &[(String, Vec<u8>)]) -> Journal {
    let mut r = Reader::default();
    for (f, (name, bytes)) in files.iter().enumerate() {
        r.j.files.push(name.clone());
        r.file(f, bytes);
    }
    r.finish()
}

#[derive(Default)]
struct Reader {
    j: Journal,
    by_name: BTreeMap<String, usize>,
    /// Per node: every line text read, for repeats.
    seen: BTreeMap<(usize, String), Place>,
    aliases: BTreeMap<(u8, String), u32>,
    /// The next number to give, per kind (worker, job, entity).
    next_alias: [u32; 3],
    op_ids: BTreeMap<String, u8>,
    receivers: u8,
    fenced: BTreeSet<usize>,
    records: Vec<Record>,
    /// Every event line read, judged or not, for its node's order: (node, seq, reading, place,
    /// event name).
    lines: Vec<(usize, Option<u64>, u64, Place, String)>,
}

impl Reader {
    fn file(&mut self, f: usize, bytes: &[u8]) {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            self.j.unread.push(format!("{}: empty", self.j.files[f]));
            return;
        }
        let ends_whole = bytes.last() == Some(&b'\n');
        let count = bytes.split(|&b| b == b'\n').count();
        for (n, raw) in bytes.split(|&b| b == b'\n').enumerate() {
            let at = Place {
                file: f,
                line: n + 1,
            };
            let last = n + 1 == count;
            if raw.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if raw.len() > LINE_BYTES_MAX {
                self.j.problem(
                    at,
                    format!(
                        "a line of {} bytes, longer than {LINE_BYTES_MAX}",
                        raw.len()
                    ),
                );
                continue;
            }
            let Ok(text) = std::str::from_utf8(raw) else {
                self.j.problem(at, "not UTF-8".to_string());
                continue;
            };
            let text = text.trim();
            let obj = match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(m)) => m,
                Ok(_) => {
                    self.j.problem(at, "not a JSON object".to_string());
                    continue;
                }
                Err(e) if last && !ends_whole => {
                    self.j
                        .problem(at, format!("truncated: the file ends mid-line ({e})"));
                    continue;
                }
                Err(e) => {
                    self.j.problem(at, format!("not JSON ({e})"));
                    continue;
                }
            };
            if obj.contains_key("journal") {
                match self.header(at, &obj) {
                    Ok(()) => {}
                    Err(why) => {
                        self.j.unread.push(format!("{}: {why}", self.j.place(at)));
                        return;
                    }
                }
                continue;
            }
            if self.records.len() >= RECORDS_MAX {
                self.j.problem(
                    at,
                    format!("more than {RECORDS_MAX} lines: the rest are not read"),
                );
                return;
            }
            self.event(at, text, &obj);
        }
    }

    /// A header line: the format, its version, its nodes.
    fn header(&mut self, at: Place, obj: &Map<String, Value>) -> Result<(), String> {
        if obj.get("journal").and_then(Value::as_str) != Some(FORMAT) {
            return Err(format!(
                "a header of another format ({}), not read",
                obj.get("journal").map_or("?".to_string(), Value::to_string)
            ));
        }
        match obj.get("version").and_then(Value::as_u64) {
            Some(VERSION) => {}
            v => {
                return Err(format!(
                    "journal version {}, but this leasesim reads version {VERSION}: not read",
                    v.map_or("?".to_string(), |v| v.to_string())
                ))
            }
        }
        let Some(nodes) = obj.get("nodes").and_then(Value::as_array) else {
            return Ok(());
        };
        for n in nodes.iter().take(NODES_MAX) {
            let Some(name) = n.get("node").and_then(Value::as_str) else {
                self.j
                    .problem(at, "a declared node without `node`".to_string());
                continue;
            };
            let role = match n.get("role").and_then(Value::as_str) {
                Some("coordinator") => Role::Coordinator,
                Some("worker") => {
                    let w = n.get("worker").and_then(Value::as_str).unwrap_or(name);
                    Role::Worker {
                        name: self.worker(w),
                        drift_ppm_max: 0,
                    }
                }
                Some("receiver") => {
                    let index = match n.get("receiver").and_then(Value::as_u64) {
                        Some(i) if i <= u64::from(u8::MAX) => i as u8,
                        _ => self.receivers,
                    };
                    self.receivers = self.receivers.max(index.saturating_add(1));
                    Role::Receiver {
                        index,
                        supports_fence: n.get("fences").and_then(Value::as_bool) == Some(true),
                    }
                }
                Some("tool") => Role::Tool,
                Some("operator") => Role::Operator,
                other => {
                    self.j.problem(
                        at,
                        format!(
                            "node {name} has an unknown role {other:?}: its lines are not read"
                        ),
                    );
                    continue;
                }
            };
            match self.by_name.get(name) {
                Some(&i) if self.j.nodes[i].role != role => self.j.problem(
                    at,
                    format!("node {name} declared again with another role: the first is kept"),
                ),
                Some(_) => {}
                None => {
                    if let Some(i) = self.add_node(name, role, true) {
                        self.j.snapshot[i] =
                            n.get("snapshot").and_then(Value::as_bool) == Some(true);
                    }
                }
            }
        }
        Ok(())
    }

    fn add_node(&mut self, name: &str, role: Role, declared: bool) -> Option<usize> {
        if self.j.nodes.len() >= NODES_MAX {
            return None;
        }
        let i = self.j.nodes.len();
        self.j.nodes.push(NodeInfo {
            name: name.to_string(),
            role,
        });
        self.j.declared.push(declared);
        self.j.snapshot.push(false);
        self.by_name.insert(name.to_string(), i);
        Some(i)
    }

    /// A number for a name that is not of the reference's form, the same for the same name.
    fn alias(&mut self, kind: u8, word: &str, shown: impl Fn(u32) -> String) -> u32 {
        if let Some(&n) = self.aliases.get(&(kind, word.to_string())) {
            return n;
        }
        let next = &mut self.next_alias[usize::from(kind.min(2))];
        let n = ALIAS_BASE.saturating_add(*next);
        *next = next.saturating_add(1);
        self.aliases.insert((kind, word.to_string()), n);
        self.j.aliases.push(format!("{} = {word}", shown(n)));
        n
    }

    /// A worker's logical name: `W3` is `WorkerName(3)`; anything else gets a number.
    fn worker(&mut self, w: &str) -> WorkerName {
        let w = w.trim_end_matches('\'');
        if let Some(n) = w.strip_prefix('W').and_then(|d| d.parse::<u32>().ok()) {
            if n < ALIAS_BASE {
                return WorkerName(n);
            }
        }
        WorkerName(self.alias(0, w, |n| WorkerName(n).to_string()))
    }

    /// A job or entity id: a number below the aliases' range, or a name given a number.
    fn id(&mut self, kind: u8, v: &Value) -> Option<u32> {
        match v {
            Value::Number(n) => n
                .as_u64()
                .filter(|&n| n < u64::from(ALIAS_BASE))
                .map(|n| n as u32),
            Value::String(s) if !s.is_empty() => match s.parse::<u32>() {
                Ok(n) if n < ALIAS_BASE => Some(n),
                _ => {
                    let prefix = if kind == 1 { "job" } else { "entity" };
                    Some(self.alias(kind, s, |n| format!("{prefix}{n}")))
                }
            },
            _ => None,
        }
    }

    /// An idempotency key: `tool-job:{job}:{op}[:{salt}]` (the job a number or any name
    /// without `:`); any other key is an operation of the line's `job` named by the whole key.
    fn key(&mut self, text: &str, job: Option<JobId>) -> Result<IdemKey, String> {
        let parts = text
            .strip_prefix("tool-job:")
            .and_then(|r| r.split_once(':'))
            .filter(|(j, rest)| !j.is_empty() && !rest.is_empty());
        let (job, op, salt) = match parts {
            Some((j, rest)) => {
                let j = self
                    .id(1, &Value::String(j.to_string()))
                    .map(JobId)
                    .ok_or_else(|| format!("no readable job in the key `{text}`"))?;
                match rest.rsplit_once(':') {
                    Some((op, salt)) if !op.is_empty() => match salt.parse::<u32>() {
                        Ok(s) => (j, op.to_string(), s),
                        Err(_) => (j, rest.to_string(), 0),
                    },
                    _ => (j, rest.to_string(), 0),
                }
            }
            None => (
                job.ok_or_else(|| {
                    format!("the key `{text}` names no job and the line has no `job`")
                })?,
                text.to_string(),
                0,
            ),
        };
        let op = match self.op_ids.get(&op) {
            Some(&id) => id,
            None => {
                if self.j.ops.len() >= OPS_MAX {
                    return Err(format!("more than {OPS_MAX} distinct operations in keys"));
                }
                let id = self.j.ops.len() as u8;
                self.j.ops.push(op.clone());
                self.op_ids.insert(op, id);
                id
            }
        };
        Ok(IdemKey {
            job,
            op: OpId(op),
            salt,
        })
    }

    /// An event line; whether it was read.
    fn event(&mut self, at: Place, text: &str, obj: &Map<String, Value>) -> bool {
        let Some(name) = obj.get("event").and_then(Value::as_str) else {
            self.j.problem(at, "a line without `event`".to_string());
            return false;
        };
        let Some(side) = side(name) else {
            self.j
                .problem(at, format!("unknown event `{name}`: not read"));
            return false;
        };
        let Some(node_name) = obj.get("node").and_then(Value::as_str) else {
            self.j.problem(at, format!("{name} without `node`"));
            return false;
        };
        let Some(local_ns) = obj.get("t_local_ns").and_then(Value::as_u64) else {
            self.j.problem(at, format!("{name} without `t_local_ns`"));
            return false;
        };
        let node = match self.by_name.get(node_name) {
            Some(&i) => i,
            None => {
                let role = match side {
                    Side::Coordinator => Role::Coordinator,
                    Side::Worker => Role::Worker {
                        name: self.worker(node_name),
                        drift_ppm_max: 0,
                    },
                    Side::Receiver => {
                        let index = self.receivers;
                        self.receivers = self.receivers.saturating_add(1);
                        Role::Receiver {
                            index,
                            supports_fence: false,
                        }
                    }
                    Side::Tool => Role::Tool,
                    Side::Operator => Role::Operator,
                };
                match self.add_node(node_name, role, false) {
                    Some(i) => i,
                    None => {
                        self.j
                            .problem(at, format!("more than {NODES_MAX} nodes: not read"));
                        return false;
                    }
                }
            }
        };
        if !fits(side, &self.j.nodes[node].role) {
            self.j.problem(
                at,
                format!("{name} in the journal of {node_name}, which is not a node that journals it: not read"),
            );
            return false;
        }
        if let Some(first) = self.seen.get(&(node, text.to_string())) {
            let first = self.j.place(*first);
            self.j
                .problem(at, format!("a repeat of {first}: read once"));
            return false;
        }
        self.seen.insert((node, text.to_string()), at);
        let seq = obj.get("seq").and_then(Value::as_u64);
        self.j.lines_read += 1;
        self.lines.push((node, seq, local_ns, at, name.to_string()));
        match self.parse(name, obj) {
            Ok(Some(event)) => {
                if name == "effect_fenced" {
                    self.fenced.insert(node);
                }
                self.records.push(Record {
                    at,
                    node,
                    seq,
                    local_ns,
                    event,
                });
                true
            }
            // A known event the audit does not read (a store's statements, admission, ...).
            Ok(None) => true,
            Err(why) => {
                self.j.problem(at, format!("{name}: {why}: not read"));
                false
            }
        }
    }

    /// The event of a known line, or `None` for one the audit has no use for.
    fn parse(&mut self, name: &str, o: &Map<String, Value>) -> Result<Option<Event>, String> {
        let job = |r: &mut Self| -> Result<JobId, String> {
            o.get("job")
                .and_then(|v| r.id(1, v))
                .map(JobId)
                .ok_or_else(|| "no readable `job`".to_string())
        };
        let num = |f: &str| -> Result<u64, String> {
            match o.get(f) {
                Some(Value::Number(n)) => n.as_u64(),
                Some(Value::String(s)) => s.parse::<u64>().ok(),
                _ => None,
            }
            .ok_or_else(|| format!("no readable `{f}`"))
        };
        let token = |f: &str| num(f).map(Token);
        let word = |f: &str| -> Result<String, String> {
            o.get(f)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("no `{f}`"))
        };
        let who = |r: &mut Self, f: &str| -> Result<WorkerName, String> {
            let w = word(f)?;
            Ok(r.worker(&w))
        };
        let flag = |f: &str| o.get(f).and_then(Value::as_bool).unwrap_or(false);
        let key = |r: &mut Self, job: Option<JobId>| -> Result<IdemKey, String> {
            let k = word("key")?;
            r.key(&k, job)
        };
        let entity = |r: &mut Self| -> Result<EntityId, String> {
            o.get("entity")
                .and_then(|v| r.id(2, v))
                .map(EntityId)
                .ok_or_else(|| "no readable `entity`".to_string())
        };
        let small = |f: &str| -> Result<u32, String> {
            num(f).and_then(|n| u32::try_from(n).map_err(|_| format!("`{f}` too large")))
        };
        Ok(Some(match name {
            "lease_granted" => Event::LeaseGranted {
                job: job(self)?,
                holder: who(self, "holder")?,
                token: token("token")?,
                attempt: small("attempt").unwrap_or(0),
                lease_until: num("lease_until_ns")?,
                took_over: num("took_over").ok().map(Token),
                reason: enum_word(&word("reason")?)?,
            },
            "lease_renewed" => Event::LeaseRenewed {
                job: job(self)?,
                worker: who(self, "worker")?,
                token: token("token")?,
                lease_until: num("lease_until_ns")?,
            },
            "checkpoint_saved" => Event::CheckpointSaved {
                job: job(self)?,
                worker: who(self, "worker")?,
                token: token("token")?,
                step: u8::try_from(num("step")?).map_err(|_| "`step` too large".to_string())?,
                lease_until: num("lease_until_ns")?,
            },
            "lease_revoked" => Event::LeaseRevoked {
                job: job(self)?,
                holder: o
                    .get("holder")
                    .and_then(Value::as_str)
                    .map(|h| self.worker(h)),
                token: token("token")?,
                epoch: token("epoch")?,
                action: match word("action")?.as_str() {
                    "revoke" => OperatorAction::Revoke,
                    "cancel" => OperatorAction::Cancel,
                    "hand_to_human" => OperatorAction::HandToHuman,
                    "human_resolves" => OperatorAction::HumanResolves,
                    "takeover" => OperatorAction::Takeover {
                        to: who(self, "to")?,
                    },
                    other => return Err(format!("unknown action `{other}`")),
                },
            },
            "renewal_cap_reached" => Event::RenewalCapReached {
                job: job(self)?,
                token: token("token")?,
                first_claimed_at: num("first_claimed_at_ns").unwrap_or(0),
            },
            "heartbeat_refused" => Event::HeartbeatRefused {
                job: job(self)?,
                worker: who(self, "worker")?,
                token: token("token")?,
                reason: enum_word::<RefusalReason>(&word("reason")?)?,
            },
            "result_accepted" => Event::ResultAccepted {
                job: job(self)?,
                worker: who(self, "worker")?,
                token: token("token")?,
                state: enum_word::<JobState>(&word("state")?)?,
            },
            "result_rejected" => Event::ResultRejected {
                job: job(self)?,
                worker: who(self, "worker")?,
                token: token("token")?,
                reason: enum_word::<RefusalReason>(&word("reason")?)?,
                result_hash: o
                    .get("result_hash")
                    .and_then(Value::as_str)
                    .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok())
                    .unwrap_or(0),
            },
            "job_failed" => Event::JobFailed {
                job: job(self)?,
                error: error_code(&word("error")?)?,
                attempt: small("attempt").unwrap_or(0),
            },
            "effect_applied" | "effect_duplicate" | "effect_unauthorized" | "effect_fenced" => {
                let j = job(self).ok();
                let key = key(self, j)?;
                let entity = entity(self)?;
                let fence = token("fence")?;
                match name {
                    "effect_applied" => Event::EffectApplied { entity, key, fence },
                    "effect_duplicate" => Event::EffectDuplicate { entity, key, fence },
                    "effect_unauthorized" => Event::EffectUnauthorized { entity, key, fence },
                    _ => Event::EffectFenced {
                        entity,
                        key,
                        fence,
                        mark: token("mark")?,
                    },
                }
            }
            "effect_started" => {
                let j = job(self)?;
                Event::EffectStarted {
                    job: j,
                    token: token("token")?,
                    receiver: num("receiver")
                        .ok()
                        .and_then(|r| u8::try_from(r).ok())
                        .unwrap_or(0),
                    entity: entity(self).unwrap_or_default(),
                    key: key(self, Some(j))?,
                    in_jeopardy: flag("in_jeopardy"),
                }
            }
            "job_claimed" => Event::JobClaimed {
                job: job(self)?,
                token: token("token")?,
                deadline: num("deadline_ns").unwrap_or(0),
            },
            "heartbeat_ok" => Event::HeartbeatOk {
                job: job(self)?,
                token: token("token")?,
                deadline: num("deadline_ns").unwrap_or(0),
            },
            "heartbeat_lost" => Event::HeartbeatLost {
                job: job(self)?,
                token: token("token")?,
            },
            "jeopardy_entered" => Event::JeopardyEntered {
                job: job(self)?,
                token: token("token")?,
                last_confirmed: num("last_confirmed_ns").unwrap_or(0),
                request: num("request").ok(),
            },
            "jeopardy_exited" => Event::JeopardyExited {
                job: job(self)?,
                token: token("token")?,
            },
            "commit_sent" => Event::CommitSent {
                job: job(self)?,
                token: token("token")?,
                outcome: match word("outcome")?.as_str() {
                    "success" => Outcome::Success {
                        result: o
                            .get("result_hash")
                            .and_then(Value::as_str)
                            .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok())
                            .unwrap_or(0),
                    },
                    "failure" => Outcome::Failure {
                        error: error_code(&word("error").unwrap_or_default())
                            .unwrap_or(ErrorCode::ToolFailed),
                        retryable: flag("retryable"),
                    },
                    other => return Err(format!("unknown outcome `{other}`")),
                },
                in_jeopardy: flag("in_jeopardy"),
            },
            "success_claimed" => Event::SuccessClaimed {
                job: job(self)?,
                token: token("token")?,
            },
            "failure_acknowledged" => Event::FailureAcknowledged {
                job: job(self)?,
                token: token("token")?,
            },
            "commit_refused" => Event::CommitRefused {
                job: job(self)?,
                token: token("token")?,
            },
            "commit_abandoned" => Event::CommitAbandoned {
                job: job(self)?,
                token: token("token")?,
            },
            "effect_reconciled" => {
                let j = job(self)?;
                Event::EffectReconciled {
                    job: j,
                    token: token("token")?,
                    key: key(self, Some(j))?,
                    status: enum_word::<EffectStatus>(&word("status")?)?,
                }
            }
            _ => return Ok(None),
        }))
    }

    fn finish(mut self) -> Journal {
        // A receiver whose role no header declared checks fences if its journal shows it.
        for &n in &self.fenced {
            if !self.j.declared[n] {
                if let Role::Receiver { supports_fence, .. } = &mut self.j.nodes[n].role {
                    *supports_fence = true;
                }
            }
        }
        // Each node's own order: by `seq` where it has one, else by its clock; a line read
        // before an earlier one of its node and file is out of order, and `seq` shows gaps.
        let mut records = std::mem::take(&mut self.records);
        let mut lines = std::mem::take(&mut self.lines);
        let mut last: BTreeMap<(usize, usize), (Option<u64>, u64, Place)> = BTreeMap::new();
        for (node, seq, local, at, name) in &lines {
            let (node, seq, local, at) = (*node, *seq, *local, *at);
            if let Some(&(pseq, plocal, pat)) = last.get(&(node, at.file)) {
                let before = match (pseq, seq) {
                    (Some(a), Some(b)) => b < a,
                    _ => local < plocal,
                };
                if before {
                    let what = format!(
                        "out of order: {name} of {} ({}) comes after {}, which it precedes",
                        self.j.nodes[node].name,
                        match seq {
                            Some(s) => format!("seq {s}"),
                            None => format!("t_local_ns {local}"),
                        },
                        self.j.place(pat),
                    );
                    self.j.problem(at, what);
                    continue;
                }
            }
            last.insert((node, at.file), (seq, local, at));
        }
        records.sort_by_key(|r| (r.node, r.seq.unwrap_or(0), r.local_ns, r.at));
        lines.sort_by_key(|l| (l.0, l.1.unwrap_or(0), l.2, l.3));
        // Gaps and repeats of `seq`, per node.
        let mut prev: Option<(usize, u64, Place)> = None;
        for &(node, seq, _, at, _) in &lines {
            let Some(seq) = seq else {
                continue;
            };
            match prev.filter(|&(n, _, _)| n == node) {
                Some((_, s, first)) if seq == s => {
                    let what = format!(
                        "seq {seq} of {} again (first at {}): two different lines with one number",
                        self.j.nodes[node].name,
                        self.j.place(first)
                    );
                    self.j.problem(at, what);
                }
                Some((_, s, _)) if seq > s + 1 => {
                    let what = format!(
                        "a gap: {} of {}'s lines (seq {}..{}) are missing before this one",
                        seq - s - 1,
                        self.j.nodes[node].name,
                        s + 1,
                        seq - 1
                    );
                    self.j.problem(at, what);
                }
                None if seq > 1 => {
                    let what = format!(
                        "a gap: {}'s first line read is seq {seq}; seq 1..{} are missing",
                        self.j.nodes[node].name,
                        seq - 1
                    );
                    self.j.problem(at, what);
                }
                _ => {}
            }
            prev = Some((node, seq, at));
        }
        self.j.records = records;
        self.j
    }
}

/// A snake_case code read through the enum's serde form.
fn enum_word<T: serde::de::DeserializeOwned>(w: &str) -> Result<T, String> {
    serde_json::from_value(Value::String(w.to_string())).map_err(|_| format!("unknown code `{w}`"))
}

/// An error code: `tool_timeout` is `ErrorCode::ToolTimeout`.
fn error_code(w: &str) -> Result<ErrorCode, String> {
    let pascal: String = w
        .split('_')
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect();
    enum_word(&pascal)
}
