//! The journal format, version 1: JSON lines as `leasesim run --journal` and `--journal-dir`
//! write them and as a real system's logs can be mapped to (docs/audit.md).
//! This module owns reading it back: every line bounded, every problem named with its file and
//! line, nothing ever panics on what a file says. A value that cannot be true (a time beyond
//! [`TIME_NS_MAX`], a lease that ends before it was granted, a line of a node its header does
//! not list, a second coordinator) refuses the whole journal ([`Journal::refused`]), since no
//! judgement can rest on it. Files are read one at a time ([`Reader`]). It judges nothing.
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
/// The most event lines read over all files; the rest are not read, and the journal says so
/// ([`Journal::left_unread`]). Each line read keeps a few dozen bytes (its node, number, clock
/// reading and fingerprint) until the reading ends, so this bounds that to a few hundred MB.
pub const LINES_MAX: usize = 8_000_000;
/// The most records kept for judgement over all files (the coordinator's lines, the
/// receivers', a holder's acts that the audit judges); the rest are not read.
pub const RECORDS_MAX: usize = 4_000_000;
/// The latest time a journal may hold, in nanoseconds: 2^62, about 146 years after the clock's
/// zero (the year 2116 for a clock that counts from 1970, and far beyond any monotonic clock's
/// reading). A later value cannot be a reading of a real clock today, so a line that holds one
/// is refused; the bound also leaves every sum the audit makes (a reading plus a lease or a
/// clock uncertainty of up to as much again) inside 64 bits.
pub const TIME_NS_MAX: u64 = 1 << 62;
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
    /// Whether lines with something to judge were left unread: a file of another format or
    /// version, lines past [`LINES_MAX`] or [`RECORDS_MAX`], the lines of a node whose role is
    /// unknown. Nothing found is then no verdict.
    pub left_unread: bool,
    /// The first value met that cannot be true (a time beyond [`TIME_NS_MAX`], a lease that
    /// ends before it was granted, a line of a node its file's header does not list, a second
    /// coordinator): no judgement can rest on such a journal, and reading stopped there.
    pub refused: Option<Problem>,
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

/// What every event line carries before its event's own fields.
struct Stamp<'o> {
    /// The event's journal name.
    name: &'o str,
    /// Its event, by index in [`EVENTS`].
    event: u8,
    /// The role that journals it.
    side: Side,
    /// The node that journaled it.
    node_name: &'o str,
    local_ns: u64,
    seq: Option<u64>,
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

/// Every event name of version 1 and the role that journals it; a line keeps its event as an
/// index into this table.
const EVENTS: [(&str, Side); 40] = [
    ("lease_granted", Side::Coordinator),
    ("lease_renewed", Side::Coordinator),
    ("lease_revoked", Side::Coordinator),
    ("renewal_cap_reached", Side::Coordinator),
    ("checkpoint_saved", Side::Coordinator),
    ("admission_deferred", Side::Coordinator),
    ("retry_scheduled", Side::Coordinator),
    ("job_failed", Side::Coordinator),
    ("heartbeat_refused", Side::Coordinator),
    ("result_accepted", Side::Coordinator),
    ("result_rejected", Side::Coordinator),
    ("statement_ran", Side::Coordinator),
    ("statement_waited", Side::Coordinator),
    ("statement_failed", Side::Coordinator),
    ("step_ran", Side::Coordinator),
    ("effect_applied", Side::Receiver),
    ("effect_duplicate", Side::Receiver),
    ("effect_unauthorized", Side::Receiver),
    ("effect_fenced", Side::Receiver),
    ("tool_faulted", Side::Tool),
    ("operator_acted", Side::Operator),
    ("job_claimed", Side::Worker),
    ("heartbeat_ok", Side::Worker),
    ("heartbeat_lost", Side::Worker),
    ("jeopardy_entered", Side::Worker),
    ("jeopardy_exited", Side::Worker),
    ("tool_request_started", Side::Worker),
    ("tool_answered", Side::Worker),
    ("tool_timed_out", Side::Worker),
    ("stage_deadline_exceeded", Side::Worker),
    ("effect_started", Side::Worker),
    ("effect_answered", Side::Worker),
    ("effect_reconciled", Side::Worker),
    ("tool_status_queried", Side::Worker),
    ("human_review_requested", Side::Worker),
    ("commit_sent", Side::Worker),
    ("success_claimed", Side::Worker),
    ("failure_acknowledged", Side::Worker),
    ("commit_refused", Side::Worker),
    ("commit_abandoned", Side::Worker),
];

/// An event name's index in [`EVENTS`] and the role that journals it.
fn side(event: &str) -> Option<(u8, Side)> {
    EVENTS
        .iter()
        .position(|(name, _)| *name == event)
        .map(|i| (i as u8, EVENTS[i].1))
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

/// Reads journal files (name, bytes) into one [`Journal`], keeping every record. Never fails:
/// what cannot be read is a problem with its place, or a file in [`Journal::unread`].
pub fn read(files: &[(String, Vec<u8>)]) -> Journal {
    let mut r = Reader::new(Keep::Every);
    for (name, bytes) in files {
        r.file(name, bytes);
    }
    r.finish()
}

/// Which records a [`Reader`] keeps.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Every event the audit knows, for a timeline of the whole journal.
    Every,
    /// Only those the audit judges ([`crate::audit::reads`]): a holder's heartbeats and claims are
    /// read and checked, then dropped, so a large journal's memory is what its judgement needs.
    Judged,
}

/// Reads journal files one after the other: a caller hands it each file's bytes and may drop
/// them before reading the next, so the bytes held at once are one file's. What it keeps
/// between files is each line's place in its node's order (for gaps, repeats and lines out of
/// order across files) and the records [`Keep`] asks for.
pub struct Reader {
    j: Journal,
    keep: Keep,
    by_name: BTreeMap<String, usize>,
    /// The nodes the headers of the file being read list (`None` while no header of it has
    /// listed any): a line of any other node contradicts its header.
    listed: Option<BTreeSet<String>>,
    /// Nodes a header declared with a role this reader does not know: their lines are not read.
    unknown_role: BTreeSet<String>,
    aliases: BTreeMap<(u8, String), u32>,
    /// The next number to give, per kind (worker, job, entity).
    next_alias: [u32; 3],
    op_ids: BTreeMap<String, u8>,
    receivers: u8,
    fenced: BTreeSet<usize>,
    records: Vec<Record>,
    /// Every event line read, judged or not, in the order read.
    lines: Vec<Line>,
}

/// What is kept of every event line until the reading ends: enough to put it in its node's
/// order, to see a gap in `seq`, and to know a repeat of it by its text's fingerprint.
#[derive(Copy, Clone, Debug)]
struct Line {
    /// 128 bits of the line's text (two keyed hashes): two different lines share it with a
    /// chance of about 2^-128 a pair.
    print: [u64; 2],
    /// Its `seq`, 0 when it has none (a `seq` counts from 1).
    seq: u64,
    local_ns: u64,
    file: u32,
    line: u32,
    node: u16,
    /// Its event, by index in [`EVENTS`].
    event: u8,
    /// Whether it repeats an earlier line (found once every file is read).
    repeat: bool,
}

impl Line {
    fn at(&self) -> Place {
        Place {
            file: self.file as usize,
            line: self.line as usize,
        }
    }

    /// The order of a node's lines: by `seq`, then clock, then where read.
    fn order(&self) -> (u16, u64, u64, u32, u32) {
        (self.node, self.seq, self.local_ns, self.file, self.line)
    }
}

/// The fingerprint of a line's text ([`Line::print`]).
fn fingerprint(text: &str) -> [u64; 2] {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let hash = |salt: u8| {
        let mut h = DefaultHasher::new();
        salt.hash(&mut h);
        text.hash(&mut h);
        h.finish()
    };
    [hash(0), hash(1)]
}

impl Reader {
    /// A reader that keeps the records `keep` asks for.
    pub fn new(keep: Keep) -> Reader {
        Reader {
            j: Journal::default(),
            keep,
            by_name: BTreeMap::new(),
            listed: None,
            unknown_role: BTreeSet::new(),
            aliases: BTreeMap::new(),
            next_alias: [0; 3],
            op_ids: BTreeMap::new(),
            receivers: 0,
            fenced: BTreeSet::new(),
            records: Vec::new(),
            lines: Vec::new(),
        }
    }

    /// Whether a value that cannot be true was met: the journal is refused, and nothing more
    /// is read.
    pub fn refused(&self) -> bool {
        self.j.refused.is_some()
    }

    /// Refuses the journal at `at`, for the first reason met.
    fn refuse(&mut self, at: Place, what: String) {
        if self.j.refused.is_none() {
            self.j.refused = Some(Problem { at, what });
        }
    }

    /// Reads one file, named `name` in problems.
    pub fn file(&mut self, name: &str, bytes: &[u8]) {
        let f = self.j.files.len();
        self.j.files.push(name.to_string());
        self.listed = None;
        if self.refused() {
            return;
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            self.j.unread.push(format!("{name}: empty"));
            return;
        }
        let ends_whole = bytes.last() == Some(&b'\n');
        let count = bytes.split(|&b| b == b'\n').count();
        for (n, raw) in bytes.split(|&b| b == b'\n').enumerate() {
            let at = Place {
                file: f,
                line: n + 1,
            };
            if raw.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let Some(obj) = self.object(at, raw, n + 1 == count && !ends_whole) else {
                continue;
            };
            if obj.contains_key("journal") {
                if let Err(why) = self.header(at, &obj) {
                    self.j.unread.push(format!("{}: {why}", self.j.place(at)));
                    self.j.left_unread = true;
                    return;
                }
                continue;
            }
            if self.lines.len() >= LINES_MAX || self.records.len() >= RECORDS_MAX {
                self.j.problem(
                    at,
                    format!("more than {LINES_MAX} event lines or {RECORDS_MAX} judged ones: the rest are not read"),
                );
                self.j.left_unread = true;
                return;
            }
            let text = std::str::from_utf8(raw).unwrap_or_default().trim();
            self.event(at, text, &obj);
            if self.refused() {
                return;
            }
        }
    }

    /// A line as a JSON object, or a problem: too long, not UTF-8, not JSON, cut short.
    fn object(&mut self, at: Place, raw: &[u8], cut: bool) -> Option<Map<String, Value>> {
        if raw.len() > LINE_BYTES_MAX {
            self.j.problem(
                at,
                format!(
                    "a line of {} bytes, longer than {LINE_BYTES_MAX}",
                    raw.len()
                ),
            );
            return None;
        }
        let Ok(text) = std::str::from_utf8(raw) else {
            self.j.problem(at, "not UTF-8".to_string());
            return None;
        };
        match serde_json::from_str::<Value>(text.trim()) {
            Ok(Value::Object(m)) => Some(m),
            Ok(_) => {
                self.j.problem(at, "not a JSON object".to_string());
                None
            }
            Err(e) if cut => {
                self.j
                    .problem(at, format!("truncated: the file ends mid-line ({e})"));
                None
            }
            Err(e) => {
                self.j.problem(at, format!("not JSON ({e})"));
                None
            }
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
        self.listed.get_or_insert_with(BTreeSet::new);
        for n in nodes.iter().take(NODES_MAX) {
            let Some(name) = n.get("node").and_then(Value::as_str) else {
                self.j
                    .problem(at, "a declared node without `node`".to_string());
                continue;
            };
            if let Some(listed) = &mut self.listed {
                listed.insert(name.to_string());
            }
            let role = match self.declared_role(at, name, n) {
                Ok(Some(role)) => role,
                Ok(None) => continue,
                Err(why) => {
                    self.refuse(at, format!("the header declares node {name} {why}"));
                    return Ok(());
                }
            };
            match self.by_name.get(name) {
                Some(&i) if self.j.nodes[i].role != role => self.j.problem(
                    at,
                    format!("node {name} declared again with another role: the first is kept"),
                ),
                Some(_) => {}
                None => {
                    if let Some(i) = self.add_node(at, name, role, true) {
                        self.j.snapshot[i] =
                            n.get("snapshot").and_then(Value::as_bool) == Some(true);
                    }
                }
            }
        }
        Ok(())
    }

    /// The role a header declares for node `name`: `None` for a role this reader does not know
    /// (a problem; its lines are not read), `Err` for a field that does not say what it must
    /// (`fences` not true or false, a receiver's index beyond 255), which would make the audit
    /// judge the node as something it is not.
    fn declared_role(&mut self, at: Place, name: &str, n: &Value) -> Result<Option<Role>, String> {
        let field = |f: &str| n.get(f).filter(|v| !v.is_null());
        let flag = |f: &str| match field(f) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(format!("with `{f}` {v}, which is not true or false")),
        };
        flag("snapshot")?;
        Ok(Some(match n.get("role").and_then(Value::as_str) {
            Some("coordinator") => Role::Coordinator,
            Some("worker") => {
                let w = match field("worker") {
                    None => name,
                    Some(Value::String(w)) => w.as_str(),
                    Some(v) => return Err(format!("with `worker` {v}, which is not a name")),
                };
                Role::Worker {
                    name: self.worker(w),
                    drift_ppm_max: 0,
                }
            }
            Some("receiver") => {
                let index = match field("receiver") {
                    None => self.receivers,
                    Some(v) => match v.as_u64().and_then(|i| u8::try_from(i).ok()) {
                        Some(i) => i,
                        None => {
                            return Err(format!(
                                "with `receiver` {v}, which is not an index from 0 to 255"
                            ))
                        }
                    },
                };
                self.receivers = self.receivers.max(index.saturating_add(1));
                Role::Receiver {
                    index,
                    supports_fence: flag("fences")?,
                }
            }
            Some("tool") => Role::Tool,
            Some("operator") => Role::Operator,
            other => {
                self.j.problem(
                    at,
                    format!("node {name} has an unknown role {other:?}: its lines are not read"),
                );
                self.unknown_role.insert(name.to_string());
                return Ok(None);
            }
        }))
    }

    /// A node met for the first time; `None` past [`NODES_MAX`], or when it would be a second
    /// coordinator (the journal is then refused: the audit judges one arbiter's decisions, and
    /// a second one's would go unjudged).
    fn add_node(&mut self, at: Place, name: &str, role: Role, declared: bool) -> Option<usize> {
        if self.j.nodes.len() >= NODES_MAX {
            return None;
        }
        if role == Role::Coordinator {
            if let Some(c) = self.j.node_where(|r| *r == Role::Coordinator) {
                let first = self.j.nodes[c].name.clone();
                self.refuse(
                    at,
                    format!("node {name} journals as a coordinator, but {first} already does: the audit judges one coordinator's decisions and would leave the other's unjudged; audit each coordinator's journal on its own, or give both one node name if they are one coordinator"),
                );
                return None;
            }
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
        let Some(s) = self.stamp(at, obj) else {
            return false;
        };
        let Some(node) = self.line_node(at, &s) else {
            return false;
        };
        self.j.lines_read += 1;
        self.lines.push(Line {
            print: fingerprint(text),
            seq: s.seq.unwrap_or(0),
            local_ns: s.local_ns,
            file: u32::try_from(at.file).unwrap_or(u32::MAX),
            line: u32::try_from(at.line).unwrap_or(u32::MAX),
            node: node as u16,
            event: s.event,
            repeat: false,
        });
        self.record(at, node, &s, obj)
    }

    /// What an event line carries before its event's own fields, or `None` (the problem
    /// noted) when it does not read.
    fn stamp<'o>(&mut self, at: Place, obj: &'o Map<String, Value>) -> Option<Stamp<'o>> {
        let Some(name) = obj.get("event").and_then(Value::as_str) else {
            self.j.problem(at, "a line without `event`".to_string());
            return None;
        };
        let Some((event, side)) = side(name) else {
            self.j
                .problem(at, format!("unknown event `{name}`: not read"));
            return None;
        };
        let Some(node_name) = obj.get("node").and_then(Value::as_str) else {
            self.j.problem(at, format!("{name} without `node`"));
            return None;
        };
        let Some(local_ns) = obj.get("t_local_ns").and_then(Value::as_u64) else {
            self.j.problem(at, format!("{name} without `t_local_ns`"));
            return None;
        };
        if local_ns > TIME_NS_MAX {
            self.refuse(at, format!("{name}: `t_local_ns` {local_ns} {}", beyond()));
            return None;
        }
        let seq = match obj.get("seq").filter(|v| !v.is_null()) {
            None => None,
            Some(v) => match v.as_u64() {
                Some(0) => {
                    self.refuse(
                        at,
                        format!("{name}: `seq` 0, but `seq` numbers a node's lines from 1"),
                    );
                    return None;
                }
                Some(s) => Some(s),
                None => {
                    self.j.problem(
                        at,
                        format!("{name}: `seq` {v} is not a whole number: not read"),
                    );
                    return None;
                }
            },
        };
        Some(Stamp {
            name,
            event,
            side,
            node_name,
            local_ns,
            seq,
        })
    }

    /// The node of a line, or `None` (the problem noted) when its file's header does not
    /// list it, its role is unknown or does not journal the line's event, or it cannot be
    /// added.
    fn line_node(&mut self, at: Place, s: &Stamp<'_>) -> Option<usize> {
        let (name, node_name) = (s.name, s.node_name);
        if let Some(listed) = &self.listed {
            if !listed.contains(node_name) {
                let names: Vec<&str> = listed.iter().map(String::as_str).collect();
                self.refuse(
                    at,
                    format!("{name} of node {node_name}, which its file's header does not list (it lists {}): a header declares every node whose lines follow it; declare {node_name} there with its role, or leave the header out to have roles inferred", if names.is_empty() { "none".to_string() } else { names.join(", ") }),
                );
                return None;
            }
        }
        if self.unknown_role.contains(node_name) {
            self.j.problem(
                at,
                format!("{name} of node {node_name}, whose declared role is unknown: not read"),
            );
            self.j.left_unread = true;
            return None;
        }
        let node = self.node_of(at, node_name, s.side)?;
        if !fits(s.side, &self.j.nodes[node].role) {
            self.j.problem(
                at,
                format!("{name} in the journal of {node_name}, which is not a node that journals it: not read"),
            );
            return None;
        }
        Some(node)
    }

    /// The event of a line of `node` read, kept for judgement if the audit reads it; whether
    /// it was read.
    fn record(&mut self, at: Place, node: usize, s: &Stamp<'_>, obj: &Map<String, Value>) -> bool {
        let (name, local_ns, seq) = (s.name, s.local_ns, s.seq);
        match self.parse(name, obj) {
            Ok(Some(event)) => {
                if let Some(why) = impossible(local_ns, &event) {
                    self.refuse(at, format!("{name}: {why}"));
                    return false;
                }
                if name == "effect_fenced" {
                    self.fenced.insert(node);
                }
                if self.keep == Keep::Every || crate::audit::reads(&event) {
                    self.records.push(Record {
                        at,
                        node,
                        seq,
                        local_ns,
                        event,
                    });
                }
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

    /// The node named `name`, met for the first time with the role its event tells (`side`)
    /// if no header declared it; `None` when it cannot be added.
    fn node_of(&mut self, at: Place, name: &str, side: Side) -> Option<usize> {
        if let Some(&i) = self.by_name.get(name) {
            return Some(i);
        }
        let role = match side {
            Side::Coordinator => Role::Coordinator,
            Side::Worker => Role::Worker {
                name: self.worker(name),
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
        let added = self.add_node(at, name, role, false);
        if added.is_none() && !self.refused() {
            self.j
                .problem(at, format!("more than {NODES_MAX} nodes: not read"));
            self.j.left_unread = true;
        }
        added
    }

    /// The event of a known line, or `None` for one the audit has no use for.
    fn parse(&mut self, name: &str, o: &Map<String, Value>) -> Result<Option<Event>, String> {
        let f = Fields { o };
        if let Some(e) = self.coordinator_lease(name, &f)? {
            return Ok(Some(e));
        }
        if let Some(e) = self.coordinator_result(name, &f)? {
            return Ok(Some(e));
        }
        if let Some(e) = self.effect(name, &f)? {
            return Ok(Some(e));
        }
        self.worker_lease(name, &f)
    }

    /// The coordinator's lease events, or `None` for any other line.
    fn coordinator_lease(&mut self, name: &str, f: &Fields<'_>) -> Result<Option<Event>, String> {
        Ok(Some(match name {
            "lease_granted" => Event::LeaseGranted {
                job: f.job(self)?,
                holder: f.who(self, "holder")?,
                token: f.token("token")?,
                attempt: f.attempt()?,
                lease_until: f.num("lease_until_ns")?,
                took_over: f.opt("took_over")?.map(Token),
                reason: enum_word(&f.word("reason")?)?,
            },
            "lease_renewed" => Event::LeaseRenewed {
                job: f.job(self)?,
                worker: f.who(self, "worker")?,
                token: f.token("token")?,
                lease_until: f.num("lease_until_ns")?,
            },
            "checkpoint_saved" => Event::CheckpointSaved {
                job: f.job(self)?,
                worker: f.who(self, "worker")?,
                token: f.token("token")?,
                step: u8::try_from(f.num("step")?).map_err(|_| "`step` too large".to_string())?,
                lease_until: f.num("lease_until_ns")?,
            },
            "lease_revoked" => Event::LeaseRevoked {
                job: f.job(self)?,
                holder: match f.present("holder") {
                    None => None,
                    Some(Value::String(h)) => Some(self.worker(h)),
                    Some(v) => return Err(format!("`holder` {v} is not a name")),
                },
                token: f.token("token")?,
                epoch: f.token("epoch")?,
                action: self.operator_action(f)?,
            },
            "renewal_cap_reached" => Event::RenewalCapReached {
                job: f.job(self)?,
                token: f.token("token")?,
                first_claimed_at: f.opt("first_claimed_at_ns")?.unwrap_or(0),
            },
            _ => return Ok(None),
        }))
    }

    /// A revocation's `action` (and a takeover's `to`).
    fn operator_action(&mut self, f: &Fields<'_>) -> Result<OperatorAction, String> {
        Ok(match f.word("action")?.as_str() {
            "revoke" => OperatorAction::Revoke,
            "cancel" => OperatorAction::Cancel,
            "hand_to_human" => OperatorAction::HandToHuman,
            "human_resolves" => OperatorAction::HumanResolves,
            "takeover" => OperatorAction::Takeover {
                to: f.who(self, "to")?,
            },
            other => return Err(format!("unknown action `{other}`")),
        })
    }

    /// The coordinator's answers to heartbeats and results, and its failed jobs, or `None` for
    /// any other line.
    fn coordinator_result(&mut self, name: &str, f: &Fields<'_>) -> Result<Option<Event>, String> {
        Ok(Some(match name {
            "heartbeat_refused" => Event::HeartbeatRefused {
                job: f.job(self)?,
                worker: f.who(self, "worker")?,
                token: f.token("token")?,
                reason: enum_word::<RefusalReason>(&f.word("reason")?)?,
            },
            "result_accepted" => Event::ResultAccepted {
                job: f.job(self)?,
                worker: f.who(self, "worker")?,
                token: f.token("token")?,
                state: enum_word::<JobState>(&f.word("state")?)?,
            },
            "result_rejected" => Event::ResultRejected {
                job: f.job(self)?,
                worker: f.who(self, "worker")?,
                token: f.token("token")?,
                reason: enum_word::<RefusalReason>(&f.word("reason")?)?,
                result_hash: f.hash("result_hash"),
            },
            "job_failed" => Event::JobFailed {
                job: f.job(self)?,
                error: error_code(&f.word("error")?)?,
                attempt: f.attempt()?,
            },
            _ => return Ok(None),
        }))
    }

    /// The effects: a receiver's receipts, and a worker's start and reconciliation of one, or
    /// `None` for any other line.
    fn effect(&mut self, name: &str, f: &Fields<'_>) -> Result<Option<Event>, String> {
        Ok(Some(match name {
            "effect_applied" | "effect_duplicate" | "effect_unauthorized" | "effect_fenced" => {
                let j = match f.present("job") {
                    None => None,
                    Some(_) => Some(f.job(self)?),
                };
                let key = f.key(self, j)?;
                let entity = f.entity(self)?;
                let fence = f.token("fence")?;
                match name {
                    "effect_applied" => Event::EffectApplied { entity, key, fence },
                    "effect_duplicate" => Event::EffectDuplicate { entity, key, fence },
                    "effect_unauthorized" => Event::EffectUnauthorized { entity, key, fence },
                    _ => Event::EffectFenced {
                        entity,
                        key,
                        fence,
                        mark: f.token("mark")?,
                    },
                }
            }
            "effect_started" => {
                let j = f.job(self)?;
                Event::EffectStarted {
                    job: j,
                    token: f.token("token")?,
                    receiver: f
                        .opt("receiver")?
                        .map_or(Ok(0), u8::try_from)
                        .map_err(|_| "`receiver` beyond 255".to_string())?,
                    entity: match f.present("entity") {
                        None => EntityId::default(),
                        Some(_) => f.entity(self)?,
                    },
                    key: f.key(self, Some(j))?,
                    in_jeopardy: f.flag("in_jeopardy")?,
                }
            }
            "effect_reconciled" => {
                let j = f.job(self)?;
                Event::EffectReconciled {
                    job: j,
                    token: f.token("token")?,
                    key: f.key(self, Some(j))?,
                    status: enum_word::<EffectStatus>(&f.word("status")?)?,
                }
            }
            _ => return Ok(None),
        }))
    }

    /// A worker's lease events: claims, heartbeats, jeopardy and commits; `None` for any other
    /// line, one the audit has no use for.
    fn worker_lease(&mut self, name: &str, f: &Fields<'_>) -> Result<Option<Event>, String> {
        Ok(Some(match name {
            "job_claimed" => Event::JobClaimed {
                job: f.job(self)?,
                token: f.token("token")?,
                deadline: f.opt("deadline_ns")?.unwrap_or(0),
            },
            "heartbeat_ok" => Event::HeartbeatOk {
                job: f.job(self)?,
                token: f.token("token")?,
                deadline: f.opt("deadline_ns")?.unwrap_or(0),
            },
            "heartbeat_lost" => Event::HeartbeatLost {
                job: f.job(self)?,
                token: f.token("token")?,
            },
            "jeopardy_entered" => Event::JeopardyEntered {
                job: f.job(self)?,
                token: f.token("token")?,
                last_confirmed: f.opt("last_confirmed_ns")?.unwrap_or(0),
                request: f.opt("request")?,
            },
            "jeopardy_exited" => Event::JeopardyExited {
                job: f.job(self)?,
                token: f.token("token")?,
            },
            "commit_sent" => Event::CommitSent {
                job: f.job(self)?,
                token: f.token("token")?,
                outcome: f.outcome()?,
                in_jeopardy: f.flag("in_jeopardy")?,
            },
            "success_claimed" => Event::SuccessClaimed {
                job: f.job(self)?,
                token: f.token("token")?,
            },
            "failure_acknowledged" => Event::FailureAcknowledged {
                job: f.job(self)?,
                token: f.token("token")?,
            },
            "commit_refused" => Event::CommitRefused {
                job: f.job(self)?,
                token: f.token("token")?,
            },
            "commit_abandoned" => Event::CommitAbandoned {
                job: f.job(self)?,
                token: f.token("token")?,
            },
            _ => return Ok(None),
        }))
    }

    /// Every file read: the lines put in each node's order, repeats, gaps and lines out of
    /// order found, the records kept.
    pub fn finish(mut self) -> Journal {
        // A receiver whose role no header declared checks fences if its journal shows it.
        for &n in &self.fenced {
            if !self.j.declared[n] {
                if let Role::Receiver { supports_fence, .. } = &mut self.j.nodes[n].role {
                    *supports_fence = true;
                }
            }
        }
        let mut lines = std::mem::take(&mut self.lines);
        let repeats = self.repeats(&mut lines);
        if !repeats.is_empty() {
            self.records.retain(|r| !repeats.contains(&r.at));
            self.j.lines_read -= repeats.len();
        }
        self.out_of_order(&lines);
        lines.retain(|l| !l.repeat);
        lines.sort_unstable_by_key(Line::order);
        self.gaps(&lines);
        let mut records = std::mem::take(&mut self.records);
        records.sort_by_key(|r| (r.node, r.seq.unwrap_or(0), r.local_ns, r.at));
        self.j.records = records;
        // Problems by place, each file's in line order, whatever pass found them.
        self.j.problems.sort_by_key(|p| p.at);
        self.j
    }

    /// Marks each line whose text an earlier line of its node already had (one line read
    /// twice: logs shipped again, a file given twice); each is a problem, read once. Returns
    /// their places.
    fn repeats(&mut self, lines: &mut [Line]) -> BTreeSet<Place> {
        let mut order: Vec<u32> = (0..lines.len() as u32).collect();
        // A repeat has its original's node, number, reading and text: it sorts next to it.
        order.sort_unstable_by_key(|&i| {
            let l = &lines[i as usize];
            (l.node, l.seq, l.local_ns, l.print, l.file, l.line)
        });
        let mut found = BTreeSet::new();
        let mut first: Option<usize> = None;
        for &i in &order {
            let i = i as usize;
            let same = first.is_some_and(|f| {
                let (a, b) = (&lines[f], &lines[i]);
                (a.node, a.seq, a.local_ns, a.print) == (b.node, b.seq, b.local_ns, b.print)
            });
            match first {
                Some(f) if same => {
                    lines[i].repeat = true;
                    let (at, original) = (lines[i].at(), self.j.place(lines[f].at()));
                    self.j
                        .problem(at, format!("a repeat of {original}: read once"));
                    found.insert(at);
                }
                _ => first = Some(i),
            }
        }
        found
    }

    /// Lines read before an earlier one of their node and file: each is a problem, and is put
    /// in its place in the node's order.
    fn out_of_order(&mut self, lines: &[Line]) {
        let mut last: BTreeMap<(u16, u32), &Line> = BTreeMap::new();
        for l in lines.iter().filter(|l| !l.repeat) {
            if let Some(p) = last.get(&(l.node, l.file)) {
                let before = match (p.seq, l.seq) {
                    (0, _) | (_, 0) => l.local_ns < p.local_ns,
                    (a, b) => b < a,
                };
                if before {
                    let what = format!(
                        "out of order: {} of {} ({}) comes after {}, which it precedes",
                        EVENTS[usize::from(l.event)].0,
                        self.j.nodes[usize::from(l.node)].name,
                        match l.seq {
                            0 => format!("t_local_ns {}", l.local_ns),
                            s => format!("seq {s}"),
                        },
                        self.j.place(p.at()),
                    );
                    self.j.problem(l.at(), what);
                    continue;
                }
            }
            last.insert((l.node, l.file), l);
        }
    }

    /// Gaps and repeated numbers in each node's `seq`, over `lines` in the nodes' order.
    fn gaps(&mut self, lines: &[Line]) {
        let mut prev: Option<&Line> = None;
        for l in lines.iter().filter(|l| l.seq > 0) {
            let (seq, node) = (l.seq, &self.j.nodes[usize::from(l.node)].name);
            let what = match prev.filter(|p| p.node == l.node) {
                Some(p) if seq == p.seq => Some(format!(
                    "seq {seq} of {node} again (first at {}): two different lines with one number",
                    self.j.place(p.at())
                )),
                Some(p) if seq > p.seq + 1 => Some(format!(
                    "a gap: {} of {node}'s lines (seq {}..{}) are missing before this one",
                    seq - p.seq - 1,
                    p.seq + 1,
                    seq - 1
                )),
                None if seq > 1 => Some(format!(
                    "a gap: {node}'s first line read is seq {seq}; seq 1..{} are missing",
                    seq - 1
                )),
                _ => None,
            };
            if let Some(what) = what {
                self.j.problem(l.at(), what);
            }
            prev = Some(l);
        }
    }
}

/// An event line's fields, read by name. A field that names a job, worker, entity or key is
/// read through the [`Reader`], which gives names not of the reference's form a number.
struct Fields<'o> {
    o: &'o Map<String, Value>,
}

impl Fields<'_> {
    /// A whole number, written as a number or as a string of digits.
    fn num(&self, f: &str) -> Result<u64, String> {
        match self.o.get(f) {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.parse::<u64>().ok(),
            _ => None,
        }
        .ok_or_else(|| format!("no readable `{f}`"))
    }

    fn token(&self, f: &str) -> Result<Token, String> {
        self.num(f).map(Token)
    }

    fn word(&self, f: &str) -> Result<String, String> {
        self.o
            .get(f)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("no `{f}`"))
    }

    // An optional field is absent or null, or says what it must: a value that does not read
    // is a problem, never a silent default (`"in_jeopardy": "yes"` is not false).
    fn present(&self, f: &str) -> Option<&Value> {
        self.o.get(f).filter(|v| !v.is_null())
    }

    fn opt(&self, f: &str) -> Result<Option<u64>, String> {
        self.present(f).map(|_| self.num(f)).transpose()
    }

    fn flag(&self, f: &str) -> Result<bool, String> {
        match self.present(f) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(format!("`{f}` {v} is not true or false")),
        }
    }

    fn attempt(&self) -> Result<u32, String> {
        self.opt("attempt")?
            .map_or(Ok(0), u32::try_from)
            .map_err(|_| "`attempt` too large".to_string())
    }

    /// A result hash, `0x` and hex digits; 0 when absent or unreadable.
    fn hash(&self, f: &str) -> u64 {
        self.o
            .get(f)
            .and_then(Value::as_str)
            .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok())
            .unwrap_or(0)
    }

    /// A commit's `outcome`: success with its result hash, or failure with its error.
    fn outcome(&self) -> Result<Outcome, String> {
        Ok(match self.word("outcome")?.as_str() {
            "success" => Outcome::Success {
                result: self.hash("result_hash"),
            },
            "failure" => Outcome::Failure {
                error: error_code(&self.word("error").unwrap_or_default())
                    .unwrap_or(ErrorCode::ToolFailed),
                retryable: self.flag("retryable")?,
            },
            other => return Err(format!("unknown outcome `{other}`")),
        })
    }

    fn job(&self, r: &mut Reader) -> Result<JobId, String> {
        self.o
            .get("job")
            .and_then(|v| r.id(1, v))
            .map(JobId)
            .ok_or_else(|| "no readable `job`".to_string())
    }

    fn who(&self, r: &mut Reader, f: &str) -> Result<WorkerName, String> {
        let w = self.word(f)?;
        Ok(r.worker(&w))
    }

    fn key(&self, r: &mut Reader, job: Option<JobId>) -> Result<IdemKey, String> {
        let k = self.word("key")?;
        r.key(&k, job)
    }

    fn entity(&self, r: &mut Reader) -> Result<EntityId, String> {
        self.o
            .get("entity")
            .and_then(|v| r.id(2, v))
            .map(EntityId)
            .ok_or_else(|| "no readable `entity`".to_string())
    }
}

/// The words after a time beyond [`TIME_NS_MAX`].
fn beyond() -> String {
    format!("is beyond 2^62 ns ({TIME_NS_MAX}), later than any real clock reads (docs/journal-format.md, \"Limits\")")
}

/// Why an event's values cannot all be true, if they cannot: a time beyond [`TIME_NS_MAX`], a
/// lease that ends before the reading that granted or extended it (the coordinator sets
/// `lease_until_ns` from that very reading), a fence refused as below a mark it is above.
/// Relations a faulty protocol can break (a token not raised, an epoch not higher) are not
/// here: those are the checkers' findings.
fn impossible(local_ns: u64, e: &Event) -> Option<String> {
    let times: &[(&str, u64)] = match *e {
        Event::LeaseGranted { lease_until, .. }
        | Event::LeaseRenewed { lease_until, .. }
        | Event::CheckpointSaved { lease_until, .. } => &[("lease_until_ns", lease_until)],
        Event::RenewalCapReached {
            first_claimed_at, ..
        } => &[("first_claimed_at_ns", first_claimed_at)],
        Event::JobClaimed { deadline, .. } | Event::HeartbeatOk { deadline, .. } => {
            &[("deadline_ns", deadline)]
        }
        Event::JeopardyEntered { last_confirmed, .. } => &[("last_confirmed_ns", last_confirmed)],
        _ => &[],
    };
    if let Some((field, t)) = times.iter().find(|(_, t)| *t > TIME_NS_MAX) {
        return Some(format!("`{field}` {t} {}", beyond()));
    }
    match *e {
        Event::LeaseGranted { lease_until, .. }
        | Event::LeaseRenewed { lease_until, .. }
        | Event::CheckpointSaved { lease_until, .. }
            if lease_until < local_ns =>
        {
            Some(format!(
                "the lease ends (`lease_until_ns` {lease_until}) before the reading that set it (`t_local_ns` {local_ns}): a lease cannot end before it was granted or extended"
            ))
        }
        Event::EffectFenced { fence, mark, .. } if fence > mark => Some(format!(
            "fence {fence} refused as below the receiver's mark {mark}, which it is above"
        )),
        _ => None,
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
