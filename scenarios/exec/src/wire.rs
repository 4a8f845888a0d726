//! The protocol's values in the process protocol's JSON form: the serde form of leasesim's
//! types with every enum variant named in snake_case, as the journal format names things
//! (`{"type": "claim_granted", ...}`, `"outcome": {"success": {"result": 7}}`,
//! `"to": "coordinator"` or `{"receiver": 0}`).

pub use leasesim::journal::snake;
use leasesim_protocol::{Event, Msg, Peer};
use serde_json::Value;

/// The fields whose value is an enum variant (a word, or an object with one key) that serde
/// names in CamelCase: a message's `type`, an outcome, a tool's answer, an error code and a
/// destination.
const VARIANT_FIELDS: &[&str] = &["type", "outcome", "answer", "error", "to"];

/// `claim_granted` -> `ClaimGranted` (the inverse of [`snake`], the journal's own naming).
pub fn camel(s: &str) -> String {
    s.split('_')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

fn rename_variant(v: &mut Value, f: fn(&str) -> String) {
    match v {
        Value::String(s) => *s = f(s),
        Value::Object(m) if m.len() == 1 => {
            let (k, inner) = m
                .iter()
                .next()
                .map(|(k, v)| (k.clone(), v.clone()))
                .unwrap();
            m.clear();
            m.insert(f(&k), inner);
        }
        _ => {}
    }
}

/// Renames every variant below `v` with `f` (bounded by the value's own depth).
fn rename(v: &mut Value, f: fn(&str) -> String) {
    match v {
        Value::Object(m) => {
            for (k, val) in m.iter_mut() {
                if VARIANT_FIELDS.contains(&k.as_str()) {
                    rename_variant(val, f);
                }
                rename(val, f);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| rename(x, f)),
        _ => {}
    }
}

/// Any serialisable value of the protocol in the wire's form.
pub fn to_wire<T: serde::Serialize>(x: &T) -> Value {
    let mut v = serde_json::to_value(x).expect("the protocol's types serialise");
    rename(&mut v, snake);
    v
}

/// A value of the protocol from the wire's form.
pub fn from_wire<T: serde::de::DeserializeOwned>(v: &Value) -> Result<T, String> {
    let mut v = v.clone();
    rename(&mut v, camel);
    serde_json::from_value(v).map_err(|e| e.to_string())
}

/// A message from the wire.
pub fn msg(v: &Value) -> Result<Msg, String> {
    from_wire(v)
}

/// A journal event from the wire (`{"event": "job_claimed", ...}`).
pub fn event(v: &Value) -> Result<Event, String> {
    from_wire(v)
}

/// A destination in the wire's form.
pub fn peer_to_wire(p: Peer) -> Value {
    // Wrapped, so that it is renamed as a destination field is.
    to_wire(&serde_json::json!({ "to": p }))["to"].take()
}

/// A destination from the wire: `"coordinator"`, `"tool"`, `{"receiver": i}` or `{"addr": n}`.
pub fn peer(v: &Value) -> Result<Peer, String> {
    let mut wrapped = serde_json::json!({ "to": v });
    rename(&mut wrapped, camel);
    serde_json::from_value(wrapped["to"].clone()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim_protocol::{ErrorCode, JobId, Outcome, Token, ToolAnswer, WorkerName};

    #[test]
    fn messages_go_to_the_wire_in_snake_case_and_come_back_the_same() {
        let m = Msg::Commit {
            req: 5,
            job: JobId(0),
            worker: WorkerName(1),
            token: Token(2),
            outcome: Outcome::Failure {
                error: ErrorCode::ToolTimeout,
                retryable: true,
            },
            client_now: 9,
        };
        let v = to_wire(&m);
        assert_eq!(
            v.to_string(),
            r#"{"client_now":9,"job":0,"outcome":{"failure":{"error":"tool_timeout","retryable":true}},"req":5,"token":2,"type":"commit","worker":1}"#
        );
        assert_eq!(msg(&v).unwrap(), m);
        let r = Msg::ToolResponse {
            req: 1,
            job: JobId(3),
            step: 0,
            answer: ToolAnswer::Running,
        };
        assert_eq!(to_wire(&r)["answer"], "running");
        assert_eq!(msg(&to_wire(&r)).unwrap(), r);
        for p in [
            Peer::Coordinator,
            Peer::Tool,
            Peer::Receiver(2),
            Peer::Addr(7),
        ] {
            assert_eq!(peer(&peer_to_wire(p)).unwrap(), p);
        }
        assert_eq!(
            peer_to_wire(Peer::Receiver(2)).to_string(),
            r#"{"receiver":2}"#
        );
        assert_eq!(peer_to_wire(Peer::Coordinator), "coordinator");
        assert!(msg(&serde_json::json!({"type": "claim"})).is_err());
    }
}
