//! The statement contract: which named statements a queue's SQL file gives, the parameters
//! leasesim passes to each, and the columns it reads back. [`check`] holds a file to it and
//! says what is wrong where; the guide's SQL chapter (docs/sql-queue.md) is the same table in words.

use crate::file::{Control, Problem, SqlFile, Statement};

/// What leasesim does with a statement's answer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Nothing is read (`schema`).
    Nothing,
    /// The row count decides (one row: done; none: refused).
    Rows,
    /// The returned row is read; none means refused or empty.
    Returning,
}

/// One statement of the contract.
#[derive(Copy, Clone, Debug)]
pub struct Spec {
    /// Its name after `-- name:`.
    pub name: &'static str,
    /// Whether every file must give it.
    pub required: bool,
    /// When leasesim runs it.
    pub when: &'static str,
    /// The parameters leasesim passes (a statement may use any of them).
    pub params: &'static [&'static str],
    /// The parameters it must use.
    pub must_use: &'static [&'static str],
    /// Columns it must return.
    pub returns: &'static [&'static str],
    /// Columns it may also return.
    pub may_return: &'static [&'static str],
    /// How its answer is read.
    pub answer: Answer,
}

/// Parameters every statement run for a worker's request may use: the requesting worker's
/// own clock reading (only a known-bad file judges expiry by it, V5).
const CLIENT: &str = "client_now";

/// The contract, in the order the guide (docs/sql-queue.md) lists it.
pub const CONTRACT: &[Spec] = &[
    Spec {
        name: "schema",
        required: true,
        when: "once per connection, in a schema of its own: creates the tables (several statements allowed)",
        params: &[],
        must_use: &[],
        returns: &[],
        may_return: &[],
        answer: Answer::Nothing,
    },
    Spec {
        name: "enqueue",
        required: true,
        when: "at the start of every run, once per job, in job order",
        params: &["job_id", "idempotency_key", "payload"],
        must_use: &["job_id"],
        returns: &[],
        may_return: &[],
        answer: Answer::Rows,
    },
    Spec {
        name: "claim",
        required: true,
        when: "a worker asks for a job: one row is a grant, none is \"nothing to do\"",
        params: &["worker_id", CLIENT],
        must_use: &["worker_id"],
        returns: &["id", "fencing_token", "lease_until"],
        may_return: &["payload", "attempt", "checkpoint"],
        answer: Answer::Returning,
    },
    Spec {
        name: "heartbeat",
        required: true,
        when: "a holder renews its lease: one row is the renewal, none is a refusal",
        params: &["job_id", "worker_id", "fencing_token", CLIENT],
        must_use: &["job_id"],
        returns: &["lease_until"],
        may_return: &[],
        answer: Answer::Returning,
    },
    Spec {
        name: "commit",
        required: true,
        when: "a holder reports success: one row accepts the result, none refuses it",
        params: &["job_id", "worker_id", "fencing_token", "result", CLIENT],
        must_use: &["job_id"],
        returns: &[],
        may_return: &["state"],
        answer: Answer::Rows,
    },
    Spec {
        name: "fail",
        required: true,
        when: "a holder reports a failure: the row's new state says retried (`queued`) or ended (`failed`); none refuses it",
        params: &[
            "job_id",
            "worker_id",
            "fencing_token",
            "error",
            "retryable",
            "max_attempts",
            "not_before",
            CLIENT,
        ],
        must_use: &["job_id"],
        returns: &["state"],
        may_return: &[],
        answer: Answer::Returning,
    },
    Spec {
        name: "revoke",
        required: false,
        when: "an operator revokes a running job's lease: it is queued again under a new token",
        params: &["job_id"],
        must_use: &["job_id"],
        returns: &["fencing_token"],
        may_return: &[],
        answer: Answer::Returning,
    },
    Spec {
        name: "takeover",
        required: false,
        when: "an operator hands a running job to another worker under a new token",
        params: &["job_id", "worker_id"],
        must_use: &["job_id", "worker_id"],
        returns: &["fencing_token", "lease_until"],
        may_return: &[],
        answer: Answer::Returning,
    },
    Spec {
        name: "cancel",
        required: false,
        when: "an operator cancels a job: it ends under a new token",
        params: &["job_id"],
        must_use: &["job_id"],
        returns: &["fencing_token"],
        may_return: &["state"],
        answer: Answer::Returning,
    },
    Spec {
        name: "checkpoint",
        required: false,
        when: "a holder persists a stage (P17): one row saves it and renews the lease",
        params: &["job_id", "worker_id", "fencing_token", "step"],
        must_use: &["job_id", "step"],
        returns: &["lease_until"],
        may_return: &[],
        answer: Answer::Returning,
    },
    Spec {
        name: "status",
        required: false,
        when: "after a refusal, to say why (read only)",
        params: &["job_id"],
        must_use: &["job_id"],
        returns: &["state", "owner_id", "fencing_token", "lease_until"],
        may_return: &[],
        answer: Answer::Returning,
    },
];

/// The contract's entry for a statement name.
pub fn spec(name: &str) -> Option<&'static Spec> {
    CONTRACT.iter().find(|s| s.name == name)
}

/// Every problem of `file` against the contract, in line order: a missing statement, a name
/// the contract does not have, a parameter leasesim does not pass or a required one unused, a
/// returned column missing or not read, more than one statement where one runs per input, and
/// any reading of the real clock or of randomness.
pub fn check(file: &SqlFile) -> Vec<Problem> {
    let mut problems = Vec::new();
    for spec in CONTRACT.iter().filter(|s| s.required) {
        if file.get(spec.name).is_none() {
            problems.push(Problem {
                line: 0,
                message: format!(
                    "statement `{}` is missing ({}); add `-- name: {}`",
                    spec.name, spec.when, spec.name
                ),
            });
        }
    }
    for st in &file.statements {
        let Some(spec) = spec(&st.name) else {
            let names: Vec<&str> = CONTRACT.iter().map(|s| s.name).collect();
            let hint = closest(&st.name, &names)
                .map(|n| format!("; did you mean `{n}`?"))
                .unwrap_or_default();
            problems.push(Problem {
                line: st.line,
                message: format!(
                    "`{}` is not a statement of the contract ({}){hint}",
                    st.name,
                    names.join(", ")
                ),
            });
            continue;
        };
        if st.steps.is_empty() {
            check_statement(spec, st, &mut problems);
        } else {
            check_steps(spec, st, &mut problems);
        }
    }
    // A file that persists stages must tell a new holder where to resume (P17).
    if let (Some(_), Some(claim)) = (file.get("checkpoint"), file.get("claim")) {
        let star = claim.returns.iter().any(|c| c == "*");
        if !star && !claim.returns.iter().any(|c| c == "checkpoint") {
            problems.push(Problem {
                line: claim.line,
                message: "`claim` must return `checkpoint` when the file has a `checkpoint` statement: a new holder resumes after the last saved stage (P17)".into(),
            });
        }
    }
    problems.sort_by_key(|p| p.line);
    problems
}

/// A statement of several SQL statements (steps): a later step may use a column an earlier
/// one returned as a parameter (`select id ...;` then `... where id = :id`), the answer is the
/// last step that reads or writes, and a transaction it begins it must end.
fn check_steps(spec: &Spec, st: &Statement, problems: &mut Vec<Problem>) {
    let mut view = st.clone();
    // Sets, so that a statement of many parameters and columns is checked in linear time.
    let mut returned: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    let mut own: Vec<(String, usize)> = Vec::new();
    let mut owned: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    let mut open: Option<usize> = None;
    for step in &st.steps {
        match step.control() {
            Control::Begin => {
                if open.is_some() {
                    problems.push(Problem {
                        line: step.first_line(),
                        message: format!("`{}` begins a transaction inside another", st.name),
                    });
                }
                open = Some(step.first_line());
            }
            Control::Commit | Control::Rollback => open = None,
            Control::Data => {}
        }
        for (p, line) in &step.params {
            let carried = returned.contains(p.as_str()) || returned.contains("*");
            if !carried && owned.insert(p.as_str()) {
                own.push((p.clone(), *line));
            }
        }
        returned.extend(step.returns.iter().map(String::as_str));
    }
    if let Some(line) = open {
        problems.push(Problem {
            line,
            message: format!(
                "`{}` begins a transaction it does not end: end it with `commit;`",
                st.name
            ),
        });
    }
    view.params = own;
    view.returns = st.answering().returns.clone();
    view.more_than_one = Vec::new();
    check_statement(spec, &view, problems);
}

fn check_statement(spec: &Spec, st: &Statement, problems: &mut Vec<Problem>) {
    check_params(spec, st, problems);
    check_returns(spec, st, problems);
    let mut say = |line: usize, message: String| problems.push(Problem { line, message });
    if spec.answer != Answer::Nothing {
        for line in &st.more_than_one {
            say(
                *line,
                format!("`{}` holds more than one SQL statement", st.name),
            );
        }
    }
    for (line, what) in &st.clock_reads {
        say(
            *line,
            format!(
                "`{}` reads {what}: a run must depend on the simulated clock only; use now()",
                st.name
            ),
        );
    }
}

/// The parameters `st` uses against those leasesim passes it and those it must use.
fn check_params(spec: &Spec, st: &Statement, problems: &mut Vec<Problem>) {
    let mut say = |line: usize, message: String| problems.push(Problem { line, message });
    for (param, line) in &st.params {
        if !spec.params.contains(&param.as_str()) {
            let hint = closest(param, spec.params)
                .map(|n| format!("; did you mean `:{n}`?"))
                .unwrap_or_default();
            let known = if spec.params.is_empty() {
                "none".to_string()
            } else {
                spec.params
                    .iter()
                    .map(|p| format!(":{p}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            say(
                *line,
                format!(
                    "`{}` uses `:{param}`, which leasesim does not pass (it passes {known}){hint}",
                    st.name
                ),
            );
        }
    }
    for must in spec.must_use {
        if !st.params.iter().any(|(p, _)| p == must) {
            say(st.line, format!("`{}` does not use `:{must}`", st.name));
        }
    }
}

/// The columns `st` returns against those leasesim reads.
fn check_returns(spec: &Spec, st: &Statement, problems: &mut Vec<Problem>) {
    let mut say = |line: usize, message: String| problems.push(Problem { line, message });
    let star = st.returns.iter().any(|c| c == "*");
    if spec.answer == Answer::Returning && !star {
        for col in spec.returns {
            if !st.returns.iter().any(|c| c == col) {
                say(
                    st.line,
                    format!(
                        "`{}` must return `{col}` (it returns {})",
                        st.name,
                        shown(&st.returns)
                    ),
                );
            }
        }
    }
    if !star {
        for col in &st.returns {
            if !spec.returns.contains(&col.as_str()) && !spec.may_return.contains(&col.as_str()) {
                let read: Vec<&str> = spec
                    .returns
                    .iter()
                    .chain(spec.may_return)
                    .copied()
                    .collect();
                let hint = closest(col, &read)
                    .map(|n| format!("; did you mean `{n}`?"))
                    .unwrap_or_default();
                say(
                    st.line,
                    format!(
                        "`{}` returns `{col}`, which leasesim does not read (it reads {}){hint}",
                        st.name,
                        if read.is_empty() {
                            "no column: the row count decides".to_string()
                        } else {
                            read.join(", ")
                        }
                    ),
                );
            }
        }
    }
}

fn shown(cols: &[String]) -> String {
    if cols.is_empty() {
        "nothing".into()
    } else {
        cols.join(", ")
    }
}

/// The closest of `names` to `word`, when it is a likely typo (edit distance at most 2).
fn closest<'a>(word: &str, names: &[&'a str]) -> Option<&'a str> {
    names
        .iter()
        .map(|n| (distance(word, n), *n))
        .filter(|&(d, n)| d <= 2 && d < n.len())
        .min()
        .map(|(_, n)| n)
}

/// Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut prev = row[0];
        row[0] = i;
        for j in 1..=b.len() {
            let cur = row[j];
            row[j] = (row[j] + 1)
                .min(row[j - 1] + 1)
                .min(prev + usize::from(a[i - 1] != b[j - 1]));
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<String> {
        let f = SqlFile::parse("q.sql", text).expect("parses");
        check(&f).iter().map(|p| p.to_string()).collect()
    }

    const GOOD: &str = "-- name: schema\ncreate table t (id uuid);\n-- name: enqueue\ninsert into t values (:job_id);\n-- name: claim\nupdate t set o = :worker_id returning id, fencing_token, lease_until;\n-- name: heartbeat\nupdate t set l = now() where id = :job_id returning lease_until;\n-- name: commit\nupdate t set r = :result where id = :job_id;\n-- name: fail\nupdate t set e = :error where id = :job_id returning state;\n";

    #[test]
    fn a_file_that_keeps_the_contract_has_no_problem() {
        assert_eq!(problems(GOOD), Vec::<String>::new());
    }

    #[test]
    fn each_breach_is_named_with_its_line() {
        let bad = GOOD
            .replace(
                "-- name: fail\nupdate t set e = :error where id = :job_id returning state;\n",
                "",
            )
            .replace("returning id, fencing_token", "returning id, token")
            .replace(":result", ":reslt")
            .replace("-- name: commit", "-- name: comit")
            .replace("set l = now()", "set l = clock_timestamp()");
        let p = problems(&bad);
        let want = [
            "statement `fail` is missing",
            "line 5: `claim` must return `fencing_token` (it returns id, token, lease_until)",
            "line 5: `claim` returns `token`, which leasesim does not read",
            "line 8: `heartbeat` reads clock_timestamp",
            "line 9: `comit` is not a statement of the contract",
            "did you mean `commit`?",
        ];
        for w in want {
            assert!(p.iter().any(|l| l.contains(w)), "{w:?} not in {p:#?}");
        }
        let p = problems(&GOOD.replace(":result", ":reslt"));
        assert!(
            p.iter()
                .any(|l| l.starts_with("line 10: `commit` uses `:reslt`")
                    && l.contains("did you mean `:result`?")),
            "{p:#?}"
        );
    }

    #[test]
    fn a_statement_of_several_steps_passes_columns_on_and_must_end_its_transaction() {
        // The non-atomic claim: a select, then an update of the row it found.
        let steps = GOOD.replace(
            "update t set o = :worker_id returning id, fencing_token, lease_until;",
            "begin;\nselect id as found from t limit 1;\nupdate t set o = :worker_id where id = :found returning id, fencing_token, lease_until;\ncommit;",
        );
        assert_eq!(problems(&steps), Vec::<String>::new());
        let f = SqlFile::parse("q.sql", &steps).unwrap();
        let claim = f.get("claim").unwrap();
        assert_eq!(claim.steps.len(), 4);
        assert!(
            claim.steps[2].params.contains(&("found".to_string(), 8)),
            "each step keeps its lines: {:?}",
            claim.steps[2].params
        );
        assert_eq!(
            claim.answering().returns,
            vec!["id", "fencing_token", "lease_until"]
        );
        let open = steps.replace("commit;", "");
        let p = problems(&open);
        assert!(
            p.iter()
                .any(|l| l.contains("`claim` begins a transaction it does not end")),
            "{p:#?}"
        );
        // A column no earlier step returns is still a parameter leasesim does not pass.
        let p = problems(&steps.replace(":found", ":fuond"));
        assert!(p.iter().any(|l| l.contains("uses `:fuond`")), "{p:#?}");
    }

    #[test]
    fn a_file_with_checkpoints_must_say_where_a_new_holder_resumes() {
        let with = format!(
            "{GOOD}-- name: checkpoint\nupdate t set c = :step where id = :job_id returning lease_until;\n"
        );
        let p = problems(&with);
        assert!(
            p.iter()
                .any(|l| l.starts_with("line 5: `claim` must return `checkpoint`")),
            "{p:#?}"
        );
        let fixed = with.replace(
            "returning id, fencing_token, lease_until",
            "returning id, fencing_token, lease_until, checkpoint",
        );
        assert_eq!(problems(&fixed), Vec::<String>::new());
    }

    #[test]
    fn a_select_list_is_read_as_the_returned_columns() {
        let f = SqlFile::parse(
            "q.sql",
            "-- name: status\nselect state, owner_id, fencing_token, lease_until -- the row\nfrom t where id = :job_id;\n",
        )
        .unwrap();
        assert_eq!(
            f.get("status").unwrap().returns,
            vec!["state", "owner_id", "fencing_token", "lease_until"]
        );
    }
}
