//! What `merge` reads: a sweep's or a matrix's `--json` result, parsed into typed documents in
//! memory bounded by a small multiple of the file. The file is read once, walked once to refuse
//! a key given twice in any object (a JSON parser would keep one of the two without a word), and
//! parsed into the fields `merge` uses; fields it does not know are skipped unread, so a later
//! leasesim may add some. A list the sweep bounds (failures, determinism differences, reasons)
//! is refused as soon as it passes its bound. A parse error names the field's path
//! (`scenarios[2].failures[7].seed`). This module judges no field against another: `check` does.

use super::NONDETERMINISTIC_KEPT;
use crate::matrix::{MATRIX_FORMAT, MATRIX_VERSION};
use crate::sweep::{RESULT_FORMAT, RESULT_VERSION};
use crate::BadInput;
use leasesim::hazard::Hazard;
use leasesim::run::Verdict;
use leasesim::sweep::{Shard, FAILURES_KEPT, REASONS_KEPT};
use leasesim::Invariant;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess};
use serde::de::{Deserializer, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Read;
use std::marker::PhantomData;
use std::ops::Range;
use std::path::Path;

/// Result files larger than this are refused unread (a shard's result is a few megabytes at
/// most: 1,000 failures per scenario).
const FILE_MAX_BYTES: u64 = 256 << 20;
/// Keys one object of a result may hold: the largest the format writes has 35, so a later
/// version has room, and the duplicate check holds at most this many keys per open object.
const KEYS_MAX: usize = 1024;
/// Hazards a table or a list of a scenario may name: each at most once.
const HAZARDS: usize = Hazard::ALL.len();
/// Invariants a failure or a cell may name: each at most once.
const INVARIANTS: usize = Invariant::ALL.len();
/// No bound of its own: lists whose length another field decides.
const ANY: usize = usize::MAX;
/// Kinds of skipped judgement (judgement x cause) a scenario's result may list.
const SKIP_KINDS: usize = 64;
/// Scenarios a sweep's result may list: a program's own beside the stock ones (each must be
/// one of the merging program's, which merge checks by name).
const SCENARIOS_MAX: usize = 4096;

pub fn bad(file: &str, why: impl fmt::Display) -> BadInput {
    BadInput(format!("{file}: {why}"))
}

/// One result file, read and parsed.
pub enum Doc {
    Sweep(Box<SweepDoc>),
    Matrix(Box<MatrixDoc>),
}

/// Reads a result file: its size bounded, every key of every object given once, its format and
/// version this leasesim's, and its fields the types they must be.
pub fn read(path: &Path) -> Result<(String, Doc), BadInput> {
    let name = path.display().to_string();
    let bytes = read_bounded(path, &name)?;
    walk(&bytes).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => bad(&name, e),
        _ => bad(
            &name,
            format!("not JSON ({e}); write a shard's result with sweep --json FILE"),
        ),
    })?;
    let head: Head = serde_json::from_slice(&bytes).map_err(|e| {
        bad(
            &name,
            format!(
                "not a leasesim sweep or matrix result ({e}); write one with sweep --json FILE"
            ),
        )
    })?;
    let (sweep, version) = match head.format.as_deref() {
        Some(RESULT_FORMAT) => (true, RESULT_VERSION),
        Some(MATRIX_FORMAT) => (false, MATRIX_VERSION),
        _ => return Err(bad(
            &name,
            format!("not a leasesim sweep or matrix result (no \"format\": \"{RESULT_FORMAT}\" or \"{MATRIX_FORMAT}\"); write one with sweep --json FILE"),
        )),
    };
    if head.format_version != Some(version) {
        return Err(bad(
            &name,
            format!(
                "a result of format version {}, this leasesim reads {version}",
                head.format_version
                    .map_or_else(|| "null".to_string(), |v| v.to_string())
            ),
        ));
    }
    let doc = if sweep {
        Doc::Sweep(typed(&name, &bytes)?)
    } else {
        Doc::Matrix(typed(&name, &bytes)?)
    };
    Ok((name, doc))
}

/// The file's bytes, refused past [`FILE_MAX_BYTES`] however it grows while it is read; a
/// FIFO or a folder is refused before it is opened.
fn read_bounded(path: &Path, name: &str) -> Result<Vec<u8>, BadInput> {
    let too_big = || bad(name, format!("larger than {} MB", FILE_MAX_BYTES >> 20));
    let meta = std::fs::metadata(path).map_err(|e| bad(name, e))?;
    if !meta.is_file() {
        return Err(bad(name, "not a regular file"));
    }
    if meta.len() > FILE_MAX_BYTES {
        return Err(too_big());
    }
    let file = std::fs::File::open(path).map_err(|e| bad(name, e))?;
    // Room for the size it had: the buffer is the file, not twice it.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(FILE_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(name, e))?;
    if bytes.len() as u64 > FILE_MAX_BYTES {
        return Err(too_big());
    }
    Ok(bytes)
}

/// The document as `T`; an error names the path of the field that is wrong.
fn typed<T: DeserializeOwned>(file: &str, bytes: &[u8]) -> Result<Box<T>, BadInput> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let doc: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            bad(file, inner)
        } else {
            bad(file, format!("{path}: {inner}"))
        }
    })?;
    Ok(Box::new(doc))
}

/// Where a value sits in a document, for the duplicate check's message: `scenarios[2].hazards`.
enum At<'a> {
    Root,
    Key(&'a At<'a>, &'a str),
    Item(&'a At<'a>, usize),
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Root => Ok(()),
            At::Key(At::Root, key) => write!(f, "{key}"),
            At::Key(up, key) => write!(f, "{up}.{key}"),
            At::Item(up, i) => write!(f, "{up}[{i}]"),
        }
    }
}

impl At<'_> {
    fn place(&self) -> String {
        match self {
            At::Root => "at the top level".into(),
            at => format!("in {at}"),
        }
    }
}

/// Walks the whole document and refuses an object that gives a key twice or holds more than
/// [`KEYS_MAX`] keys; it keeps nothing but the keys of the objects it is inside.
fn walk(bytes: &[u8]) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    Walk(&At::Root).deserialize(&mut de)?;
    de.end()
}

struct Walk<'a>(&'a At<'a>);

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq.next_element_seed(Walk(&At::Item(self.0, i)))?.is_some() {
            i += 1;
        }
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys: BTreeSet<Cow<'de, str>> = BTreeSet::new();
        while let Some(key) = map.next_key_seed(Key)? {
            if keys.contains(&key) {
                return Err(de::Error::custom(format!(
                    "duplicate key {key:?} {}: a result gives each key once",
                    self.0.place()
                )));
            }
            if keys.len() == KEYS_MAX {
                return Err(de::Error::custom(format!(
                    "an object of more than {KEYS_MAX} keys {}: not a leasesim result",
                    self.0.place()
                )));
            }
            map.next_value_seed(Walk(&At::Key(self.0, &key)))?;
            keys.insert(key);
        }
        Ok(())
    }
}

/// An object's key, borrowed from the file when it holds no escape.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

/// What a result says it is, read before the rest.
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    format_version: Option<u64>,
}

/// A list refused once it holds more than `MAX` items (its items are read one by one, so a
/// list past its bound costs no memory for the rest).
pub struct List<T, const MAX: usize>(pub Vec<T>);

impl<T, const MAX: usize> Default for List<T, MAX> {
    fn default() -> Self {
        List(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>, const MAX: usize> Deserialize<'de> for List<T, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T, const MAX: usize>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const MAX: usize> Visitor<'de> for V<T, MAX> {
            type Value = List<T, MAX>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    if items.len() == MAX {
                        return Err(de::Error::custom(format!(
                            "a list of more than {MAX} items, where a result keeps at most {MAX}"
                        )));
                    }
                    items.push(item);
                }
                Ok(List(items))
            }
        }
        d.deserialize_seq(V(PhantomData))
    }
}

/// A table of counts by name, refused once it holds more than `MAX` names.
pub struct Table<const MAX: usize>(pub BTreeMap<String, u64>);

impl<const MAX: usize> Default for Table<MAX> {
    fn default() -> Self {
        Table(BTreeMap::new())
    }
}

impl<'de, const MAX: usize> Deserialize<'de> for Table<MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const MAX: usize>;
        impl<'de, const MAX: usize> Visitor<'de> for V<MAX> {
            type Value = Table<MAX>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table of counts by name")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut table = BTreeMap::new();
                while let Some((k, v)) = map.next_entry::<String, u64>()? {
                    if table.len() == MAX {
                        return Err(de::Error::custom(format!(
                            "a table of more than {MAX} names, where a result keeps at most {MAX}"
                        )));
                    }
                    table.insert(k, v);
                }
                Ok(Table(table))
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(Deserialize)]
struct SpanFields {
    start: u64,
    end: u64,
}

/// A range of seeds `{"start", "end"}`, refused when it ends before it starts.
#[derive(Clone, Deserialize)]
#[serde(try_from = "SpanFields")]
pub struct Span(pub Range<u64>);

impl TryFrom<SpanFields> for Span {
    type Error = String;
    fn try_from(s: SpanFields) -> Result<Span, String> {
        if s.end < s.start {
            return Err(format!("{}..{} is not a range", s.start, s.end));
        }
        Ok(Span(s.start..s.end))
    }
}

/// A sweep's seeds: a range that holds at least one seed.
#[derive(Clone, Deserialize)]
#[serde(try_from = "SpanFields")]
pub struct Seeds(pub Range<u64>);

impl TryFrom<SpanFields> for Seeds {
    type Error = String;
    fn try_from(s: SpanFields) -> Result<Seeds, String> {
        let Span(r) = Span::try_from(s)?;
        if r.is_empty() {
            return Err(format!("a sweep of no seeds ({}..{})", r.start, r.end));
        }
        Ok(Seeds(r))
    }
}

#[derive(Deserialize)]
struct ShardFields {
    index: u64,
    count: u64,
}

/// `{"index", "count"}`: a shard that exists.
#[derive(Clone, Copy, Deserialize)]
#[serde(try_from = "ShardFields")]
pub struct ShardAt(pub Shard);

impl TryFrom<ShardFields> for ShardAt {
    type Error = String;
    fn try_from(s: ShardFields) -> Result<ShardAt, String> {
        Shard::new(s.index, s.count).map(ShardAt)
    }
}

/// A time in seconds, never negative.
#[derive(Clone, Copy, Deserialize)]
#[serde(try_from = "f64")]
pub struct Seconds(pub f64);

impl TryFrom<f64> for Seconds {
    type Error = String;
    fn try_from(s: f64) -> Result<Seconds, String> {
        if s < 0.0 {
            return Err(format!("{s} is a negative number of seconds"));
        }
        Ok(Seconds(s))
    }
}

/// A sweep's result (`sweep --json`), the fields `merge` reads or checks.
#[derive(Deserialize)]
pub struct SweepDoc {
    pub leasesim_version: String,
    pub verdict: String,
    pub variant: String,
    pub known_bad: bool,
    pub seeds: Seeds,
    pub seeds_random_base: Option<u64>,
    pub check_determinism: bool,
    pub allow_unsafe_timing: bool,
    /// Results written before skipped judgements were counted allow none.
    #[serde(default)]
    pub allow_skipped: List<String, SKIP_KINDS>,
    pub shard: Option<ShardAt>,
    pub budget: Option<BudgetDoc>,
    pub interrupted: bool,
    pub coverage_judged: bool,
    pub merged: Option<MergedDoc>,
    pub scenarios: List<ScenarioDoc, SCENARIOS_MAX>,
    pub runs: u64,
    pub share_runs: u64,
    pub failing: u64,
    /// Results written before seeds could be inexpressible have none.
    #[serde(default)]
    pub not_expressible: u64,
    pub unreached_hazards: u64,
    pub events: u64,
    pub elapsed_s: Seconds,
    pub threads: u64,
    pub determinism_checked: bool,
    pub nondeterministic: u64,
}

/// A time budget's outcome.
#[derive(Deserialize)]
pub struct BudgetDoc {
    pub budget_s: Seconds,
    pub spent: bool,
    pub overrun_s: Seconds,
    pub slowest_seed_s: Seconds,
}

/// What a merge says it merged: counted, not read (a merged result read again is one whole).
#[derive(Deserialize)]
pub struct MergedDoc {
    pub files: Vec<IgnoredAny>,
    pub problems: Vec<IgnoredAny>,
}

/// One scenario of a sweep's result.
#[derive(Deserialize)]
pub struct ScenarioDoc {
    pub name: String,
    pub runs: u64,
    pub share: Span,
    pub ran: List<Span, ANY>,
    pub failing: u64,
    pub unfinished: u64,
    pub nondeterministic: u64,
    pub nondeterministic_seeds: List<DifferenceDoc, NONDETERMINISTIC_KEPT>,
    pub busy_s: Seconds,
    pub slowest_seed_s: Seconds,
    /// Results written before seeds could be inexpressible have none.
    #[serde(default)]
    pub not_expressible: u64,
    #[serde(default)]
    pub not_expressible_reasons: Table<REASONS_KEPT>,
    pub hazards: Table<HAZARDS>,
    pub declared_hazards: List<String, HAZARDS>,
    pub unreached_hazards: List<String, HAZARDS>,
    pub failures_listed: u64,
    pub failures: List<FailureDoc, FAILURES_KEPT>,
    /// Results written before skipped judgements were counted have none.
    #[serde(default)]
    pub skipped: List<SkippedDoc, SKIP_KINDS>,
    #[serde(default)]
    pub skipped_runs: Table<SKIP_KINDS>,
}

/// Runs that skipped one judgement for one cause.
#[derive(Deserialize)]
pub struct SkippedDoc {
    pub judgement: String,
    pub invariant: String,
    pub spec: String,
    pub cause: String,
    pub runs: u64,
}

/// A seed whose two runs differed.
#[derive(Deserialize)]
pub struct DifferenceDoc {
    pub seed: u64,
    pub difference: String,
}

/// One kept failure.
#[derive(Deserialize)]
pub struct FailureDoc {
    pub seed: u64,
    pub verdict: Verdict,
    pub invariants: List<String, INVARIANTS>,
    pub first: String,
    pub replay: Option<String>,
    /// Results written before failures were ranked have neither.
    #[serde(default)]
    pub faults: usize,
    #[serde(default)]
    pub events: u64,
}

/// A matrix's result (`matrix --json`), the fields `merge` reads or checks.
#[derive(Deserialize)]
pub struct MatrixDoc {
    pub leasesim_version: String,
    #[serde(deserialize_with = "some_seeds")]
    pub seeds: u64,
    #[serde(deserialize_with = "some_machines")]
    pub catalogue: Vec<MachinesDoc>,
    pub shard: Option<ShardAt>,
    pub cells: List<CellDoc, ANY>,
    pub elapsed_s: Seconds,
}

fn some_seeds<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    match u64::deserialize(d)? {
        0 => Err(de::Error::custom(
            "a matrix of no seeds; write one with matrix --json FILE",
        )),
        n => Ok(n),
    }
}

fn some_machines<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<MachinesDoc>, D::Error> {
    let List(machines) = List::<MachinesDoc, ANY>::deserialize(d)?;
    if machines.is_empty() {
        return Err(de::Error::custom(
            "a matrix of no machines; write one with matrix --json FILE",
        ));
    }
    Ok(machines)
}

/// One row's machines, as the matrix names them.
#[derive(Deserialize)]
pub struct MachinesDoc {
    pub name: String,
    /// A row is named by its machines; whether they are known-bad is checked when it is given.
    #[serde(default)]
    pub known_bad: Option<bool>,
}

/// One cell of a matrix's result.
#[derive(Deserialize)]
pub struct CellDoc {
    pub index: u64,
    pub variant: String,
    pub scenario: String,
    pub seeds_run: u64,
    pub first_failing_seed: Option<u64>,
    pub failing: u64,
    pub unfinished: u64,
    pub invariants: List<String, INVARIANTS>,
    pub refused_by_validation: bool,
    /// Results written before skipped judgements were counted have none.
    #[serde(default)]
    pub skipped: Table<SKIP_KINDS>,
    /// Results written before seeds could be inexpressible have none.
    #[serde(default)]
    pub not_expressible: u64,
}
