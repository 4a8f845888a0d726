//! Reading untrusted JSON files with bounds: only regular files, at most so many bytes, no key
//! given twice in one object, no number beyond 2^53. What the document means is the caller's.

use serde::de::{Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

/// Every number in a replay is at most 2^53 in magnitude (104 days in nanoseconds), so no sum
/// of a few of them can overflow: the first one that is not.
pub(super) fn too_large(v: &serde_json::Value) -> Option<String> {
    const LIMIT: u64 = 1 << 53;
    match v {
        serde_json::Value::Number(n) => {
            let ok = n
                .as_u64()
                .map(|x| x <= LIMIT)
                .or(n.as_i64().map(|x| x.unsigned_abs() <= LIMIT));
            (!ok.unwrap_or(false)).then(|| n.to_string())
        }
        serde_json::Value::Array(a) => a.iter().find_map(too_large),
        serde_json::Value::Object(o) => o
            .iter()
            .filter(|(k, _)| {
                k.as_str() != "seed" && k.as_str() != "payload_hash" && k.as_str() != "result"
            })
            .find_map(|(_, v)| too_large(v)),
        _ => None,
    }
}

/// Reads a file of at most `max` bytes, counting the bytes actually read (a special file such as
/// `/dev/zero` reports a length of 0 and never ends). Only regular files are read: a FIFO, a
/// device or a directory is refused before it is opened, so nothing blocks.
pub fn read_bounded(path: &Path, max: u64, what: &str) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "cannot read {shown}: not a regular file (a {what} is a regular file)"
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(format!(
            "{shown} is larger than {max} bytes, the most a {what} may be"
        ));
    }
    Ok(bytes)
}

/// A JSON document walked only to refuse a key that appears twice in one object: serde_json
/// keeps the last of them silently, so an edited file could say two things at once.
struct NoDuplicateKeys;

impl<'de> Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicateKeys)
    }
}

impl<'de> Visitor<'de> for NoDuplicateKeys {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(A::Error::custom(format!(
                    "the key \"{key}\" appears twice in one object"
                )));
            }
            map.next_value::<NoDuplicateKeys>()?;
        }
        Ok(NoDuplicateKeys)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<NoDuplicateKeys>()?.is_some() {}
        Ok(NoDuplicateKeys)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
}

/// Parses JSON text, refusing a key repeated within one object.
pub(super) fn parse_json(bytes: &[u8], what: &str) -> Result<serde_json::Value, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| format!("not a {what}: not UTF-8 text"))?;
    serde_json::from_str::<NoDuplicateKeys>(text)
        .map_err(|e| format!("not a {what}: malformed JSON ({e})"))?;
    serde_json::from_str(text).map_err(|e| format!("not a {what}: malformed JSON ({e})"))
}
