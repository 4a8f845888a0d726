//! A queue's SQL file: named statements in the `-- name: <statement>` convention of
//! yesql/aiosql/sqlc, with parameters named `:like_this`. Parsing finds every statement, every
//! parameter (skipping string literals, quoted identifiers, comments and `::` casts), the
//! columns a statement returns, and any reading of the real clock, each with its line, so that
//! `leasesim sql check` can say what is wrong where.

/// One named statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    /// Its name (`claim`, `heartbeat`, ...).
    pub name: String,
    /// The line of its `-- name:` marker (1-based).
    pub line: usize,
    /// Its text as written.
    pub text: String,
    /// Its parameters in order of first use, each with the line it first appears on.
    pub params: Vec<(String, usize)>,
    /// Its text with `:param` replaced by `$1`, `$2`, ... (one number per distinct name).
    pub positional: String,
    /// Its text cut at its parameters, for filling them in.
    pub pieces: Vec<Piece>,
    /// Lines of a `;` followed by another statement: a statement run per input must be one.
    pub more_than_one: Vec<usize>,
    /// The columns its top-level `returning` clause names (aliases or last identifiers).
    pub returns: Vec<String>,
    /// Readings of the real clock, or of randomness: (line, what).
    pub clock_reads: Vec<(usize, String)>,
    /// A statement made of several SQL statements (an explicit transaction, or several
    /// transactions): each of them, in order, as a step of its own (empty for one statement).
    pub steps: Vec<Statement>,
}

/// What a step of an operation does to the transaction it runs in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// `begin` / `start transaction`: later steps run in one transaction.
    Begin,
    /// `commit` / `end`.
    Commit,
    /// `rollback` / `abort`.
    Rollback,
    /// A statement that reads or writes.
    Data,
}

impl Statement {
    /// What this statement does to the transaction (by its first word).
    pub fn control(&self) -> Control {
        // The first two words outside comments (`--` to the line's end, `/* ... */`).
        let mut code = String::new();
        let mut rest = self.positional.as_str();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("--") {
                rest = after.find('\n').map_or("", |i| &after[i..]);
            } else if let Some(after) = rest.strip_prefix("/*") {
                rest = after.find("*/").map_or("", |i| &after[i + 2..]);
                code.push(' ');
            } else {
                let c = rest.chars().next().expect("not empty");
                code.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
        let mut words = code
            .split(|c: char| c.is_whitespace() || c == ';')
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase);
        let first = words.next().unwrap_or_default();
        let second = words.next().unwrap_or_default();
        match (first.as_str(), second.as_str()) {
            ("begin" | "start", _) => Control::Begin,
            ("commit" | "end", _) => Control::Commit,
            // `rollback to savepoint` stays inside the transaction.
            ("rollback" | "abort", "to") => Control::Data,
            ("rollback" | "abort", _) => Control::Rollback,
            _ => Control::Data,
        }
    }

    /// The line its SQL starts on: the first after its marker (or, for a step, after the
    /// previous step's `;`) that holds more than blanks and `--` comments.
    pub fn first_line(&self) -> usize {
        let skipped = self
            .text
            .lines()
            .take_while(|l| {
                let t = l.trim();
                t.is_empty() || t.starts_with("--")
            })
            .count();
        // A step's text starts on the line of the previous `;`: its rest is blank.
        self.line + 1 + skipped
    }

    /// The steps an input runs: its several statements, or itself.
    pub fn each_step(&self) -> &[Statement] {
        if self.steps.is_empty() {
            std::slice::from_ref(self)
        } else {
            &self.steps
        }
    }

    /// The step whose rows answer: the last that reads or writes.
    pub fn answering(&self) -> &Statement {
        self.each_step()
            .iter()
            .rev()
            .find(|s| s.control() == Control::Data)
            .unwrap_or(self)
    }
}

/// A piece of a statement's text: as written, or a parameter (by its index in `params`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Text as written.
    Text(String),
    /// The parameter `params[i]`.
    Param(usize),
}

/// A parsed file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlFile {
    /// Where it came from (for messages and replay files).
    pub name: String,
    /// Its statements, in file order.
    pub statements: Vec<Statement>,
    /// A stable hash of its whole text: replay files record it.
    pub hash: u64,
    /// What a file marked `-- leasesim: known-bad (<what>)` before its first statement carries
    /// on purpose: a matrix expects it caught.
    pub known_bad: Option<String>,
}

/// A problem with a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The line (1-based; 0 for the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

/// Functions and keywords that read the real clock (or a time fixed at transaction start):
/// they would make a run depend on when it ran. `now()` unqualified is the simulated clock.
const RANDOM_READS: &[&str] = &[
    "random",
    "gen_random_uuid",
    "uuid_generate_v1",
    "uuid_generate_v1mc",
    "uuid_generate_v4",
    "setseed",
    "pg_backend_pid",
    "txid_current",
];

/// Functions that read the real clock.
const CLOCK_READS: &[&str] = &[
    "clock_timestamp",
    "statement_timestamp",
    "transaction_timestamp",
    "timeofday",
    "current_timestamp",
    "current_time",
    "current_date",
    "localtimestamp",
    "localtime",
];

impl SqlFile {
    /// Parses `text`; `name` says where it came from.
    pub fn parse(name: &str, text: &str) -> Result<SqlFile, Vec<Problem>> {
        let mut statements: Vec<Statement> = Vec::new();
        let mut problems = Vec::new();
        let mut current: Option<(String, usize, Vec<&str>)> = None;
        let mut first_body_line = None;
        let mut known_bad = None;
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            if let (None, Some(rest)) = (
                &current,
                line.trim_start().strip_prefix("-- leasesim: known-bad"),
            ) {
                let what = rest
                    .trim()
                    .trim_start_matches('(')
                    .trim_end_matches(')')
                    .trim();
                known_bad = Some(what.to_string());
                continue;
            }
            if let Some(rest) = line.trim_start().strip_prefix("-- name:") {
                if let Some((sname, sline, body)) = current.take() {
                    statements.push(statement(sname, sline, &body.join("\n")));
                }
                let sname = rest.split_whitespace().next().unwrap_or("").to_string();
                if sname.is_empty() {
                    problems.push(Problem {
                        line: n,
                        message: "a `-- name:` marker without a name".into(),
                    });
                }
                current = Some((sname, n, Vec::new()));
                continue;
            }
            match &mut current {
                Some((_, _, body)) => body.push(line),
                None if !line.trim().is_empty() && !line.trim_start().starts_with("--") => {
                    first_body_line.get_or_insert(n);
                }
                None => {}
            }
        }
        if let Some((sname, sline, body)) = current.take() {
            statements.push(statement(sname, sline, &body.join("\n")));
        }
        if let Some(line) = first_body_line {
            problems.push(Problem {
                line,
                message:
                    "SQL before the first `-- name: <statement>` marker belongs to no statement"
                        .into(),
            });
        }
        for (i, s) in statements.iter().enumerate() {
            if let Some(first) = statements[..i].iter().find(|o| o.name == s.name) {
                problems.push(Problem {
                    line: s.line,
                    message: format!(
                        "statement `{}` is defined twice (first at line {})",
                        s.name, first.line
                    ),
                });
            }
            if s.text.trim().is_empty() {
                problems.push(Problem {
                    line: s.line,
                    message: format!("statement `{}` is empty", s.name),
                });
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(SqlFile {
            name: name.to_string(),
            statements,
            hash: leasesim_sim::stable_hash(&text),
            known_bad,
        })
    }

    /// A statement by name.
    pub fn get(&self, name: &str) -> Option<&Statement> {
        self.statements.iter().find(|s| s.name == name)
    }
}

/// Lexes one statement's body (which starts on the line after `line`).
fn statement(name: String, line: usize, body: &str) -> Statement {
    let chars: Vec<char> = body.chars().collect();
    // The text with comments blanked out, for reading the returned columns.
    let mut code = chars.clone();
    let mut params: Vec<(String, usize)> = Vec::new();
    let mut positional = String::with_capacity(body.len());
    let mut pieces = Vec::new();
    let mut cut = 0;
    let mut semicolons: Vec<(usize, usize, usize)> = Vec::new(); // (line, words before it, char)
    let mut clock_reads = Vec::new();
    // Words outside strings and comments, at top level (parenthesis depth 0) or not.
    let mut words: Vec<Word> = Vec::new();
    let mut depth = 0usize;
    let mut n = line + 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '\n' => {
                n += 1;
                positional.push(c);
                i += 1;
            }
            '\'' | '"' => {
                // A literal or a quoted identifier, with doubled quotes inside.
                positional.push(c);
                i += 1;
                while i < chars.len() {
                    positional.push(chars[i]);
                    if chars[i] == '\n' {
                        n += 1;
                    }
                    if chars[i] == c {
                        if chars.get(i + 1) == Some(&c) {
                            positional.push(c);
                            i += 2;
                            continue;
                        }
                        i += 1;
                        break;
                    }
                    i += 1;
                }
            }
            '$' if dollar_tag(&chars, i).is_some() => {
                // A dollar-quoted string (`$$ ... $$`, `$body$ ... $body$`): a function's body
                // in `schema`, say. Nothing inside is a parameter, a word or a `;`.
                let tag = dollar_tag(&chars, i).expect("checked");
                let body_start = i + tag.len();
                let mut j = body_start;
                let mut end = chars.len();
                while j + tag.len() <= chars.len() {
                    if chars[j..j + tag.len()] == tag[..] {
                        end = j + tag.len();
                        break;
                    }
                    j += 1;
                }
                for &ch in &chars[i..end] {
                    if ch == '\n' {
                        n += 1;
                    }
                    positional.push(ch);
                }
                i = end;
            }
            '-' if next == Some('-') => {
                while i < chars.len() && chars[i] != '\n' {
                    positional.push(chars[i]);
                    code[i] = ' ';
                    i += 1;
                }
            }
            '/' if next == Some('*') => {
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    if chars[i] == '\n' {
                        n += 1;
                    } else {
                        code[i] = ' ';
                    }
                    positional.push(chars[i]);
                    i += 1;
                }
                positional.push_str("*/");
                for c in code.iter_mut().skip(i).take(2) {
                    *c = ' ';
                }
                i += 2;
            }
            ':' if next == Some(':') => {
                positional.push_str("::");
                i += 2;
                // The cast's type name is a word like any other.
            }
            ':' if next.is_some_and(|c| c.is_ascii_alphabetic() || c == '_') => {
                let start = i + 1;
                let mut end = start;
                while end < chars.len() && (chars[end].is_ascii_alphanumeric() || chars[end] == '_')
                {
                    end += 1;
                }
                let pname: String = chars[start..end].iter().collect();
                let k = match params.iter().position(|(p, _)| *p == pname) {
                    Some(k) => k,
                    None => {
                        params.push((pname, n));
                        params.len() - 1
                    }
                };
                pieces.push(Piece::Text(positional[cut..].to_string()));
                pieces.push(Piece::Param(k));
                positional.push_str(&format!("${}", k + 1));
                cut = positional.len();
                i = end;
            }
            '(' => {
                depth += 1;
                positional.push(c);
                i += 1;
            }
            ')' => {
                depth = depth.saturating_sub(1);
                positional.push(c);
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '.')
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                positional.push_str(&word);
                let lower = word.to_ascii_lowercase();
                let base = lower.rsplit('.').next().unwrap_or(&lower).to_string();
                if CLOCK_READS.contains(&base.as_str()) {
                    clock_reads.push((n, word.clone()));
                } else if RANDOM_READS.contains(&base.as_str()) {
                    clock_reads.push((n, format!("{word} (random: a run would not repeat)")));
                } else if base == "now" && lower.contains('.') {
                    clock_reads.push((
                        n,
                        format!("{word} (a qualified now() reads the real clock; write now())"),
                    ));
                }
                words.push(Word {
                    lower,
                    depth,
                    start,
                    end: i,
                });
            }
            _ => {
                if c == ';' && depth == 0 {
                    semicolons.push((n, words.len(), i));
                }
                positional.push(c);
                i += 1;
            }
        }
    }
    if cut < positional.len() {
        pieces.push(Piece::Text(positional[cut..].to_string()));
    }
    let more_than_one: Vec<usize> = semicolons
        .iter()
        .filter(|&&(_, before, _)| words.len() > before)
        .map(|&(line, _, _)| line)
        .collect();
    // Several statements: each becomes a step, parsed on its own with its own lines.
    let mut steps = Vec::new();
    if !more_than_one.is_empty() {
        let mut from = 0;
        let mut from_line = line;
        let mut words_before = 0;
        let mut cuts: Vec<(usize, usize, usize)> = semicolons.clone();
        cuts.push((n, words.len(), chars.len()));
        for (semi_line, before, at) in cuts {
            if before > words_before {
                let chunk: String = chars[from..at.min(chars.len())].iter().collect();
                steps.push(statement(name.clone(), from_line, &chunk));
            }
            words_before = before;
            from = (at + 1).min(chars.len());
            // The next chunk starts on the line of this `;`.
            from_line = semi_line - 1;
        }
    }
    Statement {
        name,
        line,
        text: body.to_string(),
        params,
        positional,
        pieces,
        more_than_one,
        returns: returned_columns(&code, &words),
        clock_reads,
        steps,
    }
}

/// The tag of a dollar quote opening at `i` (`$$` or `$name$`), if one does.
fn dollar_tag(chars: &[char], i: usize) -> Option<Vec<char>> {
    let mut j = i + 1;
    if chars
        .get(j)
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_')
    {
        while chars
            .get(j)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            j += 1;
        }
    }
    (chars.get(j) == Some(&'$')).then(|| chars[i..=j].to_vec())
}

/// A word outside strings and comments.
struct Word {
    /// Lowercased.
    lower: String,
    /// Parenthesis depth.
    depth: usize,
    /// Its span in the statement's characters.
    start: usize,
    end: usize,
}

/// The column names a statement returns: those of its last top-level `returning` clause, or of
/// its select list when it is a top-level `select`. Each is an item's alias (`as x` or a
/// trailing name) or the last part of a dotted name; `*` stands for columns not known here.
fn returned_columns(code: &[char], words: &[Word]) -> Vec<String> {
    let top = |w: &&Word| w.depth == 0;
    let list: &[char] = if let Some(r) = words.iter().filter(top).rfind(|w| w.lower == "returning")
    {
        &code[r.end..]
    } else if let Some(sel) = words
        .iter()
        .filter(top)
        .find(|w| matches!(w.lower.as_str(), "select" | "update" | "insert" | "delete"))
        .filter(|w| w.lower == "select")
    {
        // The main statement is a select (after any `with` part): its list ends at the first
        // top-level word that ends it.
        let end = words
            .iter()
            .filter(top)
            .find(|w| {
                w.start > sel.end
                    && matches!(
                        w.lower.as_str(),
                        "from" | "where" | "group" | "order" | "limit" | "union" | "for" | "having"
                    )
            })
            .map_or(code.len(), |w| w.start);
        &code[sel.end..end]
    } else {
        return Vec::new();
    };
    let text: String = list.iter().collect();
    let text = text.trim().trim_end_matches(';');
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' => {
                depth -= 1;
                cur.push(c);
            }
            ',' if depth == 0 => items.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    items.push(cur);
    items
        .iter()
        .filter_map(|item| {
            let item = item.trim();
            let last = item.split_whitespace().last()?;
            let last = last.rsplit('.').next().unwrap_or(last);
            Some(last.trim_matches('"').to_ascii_lowercase())
        })
        .filter(|c| !c.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SQL: &str = "-- name: schema\ncreate table t (id uuid);\n\n-- name: claim\nwith c as (select id from t where x = ':no' and y::text = :worker_id for update skip locked limit 1)\nupdate t j set owner = :worker_id, lease_until = now() + interval '90 seconds'\nfrom c where j.id = c.id\nreturning j.id, j.payload, j.fencing_token as token, j.lease_until;\n";

    #[test]
    fn a_steps_control_is_read_past_comments() {
        let f = SqlFile::parse(
            "q.sql",
            "-- name: claim\n/* lock it */ begin;\nselect 1 as id;\nrollback to savepoint s;\n-- done\ncommit;\n",
        )
        .expect("parses");
        let steps = &f.get("claim").unwrap().steps;
        let lines: Vec<usize> = steps.iter().map(Statement::first_line).collect();
        assert_eq!(lines, vec![2, 3, 4, 6], "each step's own line");
        let controls: Vec<Control> = steps.iter().map(Statement::control).collect();
        assert_eq!(
            controls,
            vec![
                Control::Begin,
                Control::Data,
                Control::Data,
                Control::Commit
            ]
        );
    }

    #[test]
    fn a_dollar_quoted_body_is_one_string() {
        let f = SqlFile::parse(
            "q.sql",
            "-- name: schema\ncreate function f() returns int language sql as $body$\n  select 1; select :not_a_param;\n$body$;\ncreate table t (id int);\n-- name: claim\nselect $$a;b$$ as x, :worker_id as id;\n",
        )
        .expect("parses");
        let schema = f.get("schema").unwrap();
        assert!(schema.params.is_empty(), "{:?}", schema.params);
        assert_eq!(schema.steps.len(), 2, "the body's `;` splits nothing");
        let claim = f.get("claim").unwrap();
        assert!(claim.steps.is_empty(), "one statement");
        assert_eq!(claim.params, vec![("worker_id".to_string(), 7)]);
    }

    #[test]
    fn statements_parameters_and_returned_columns_are_found_with_their_lines() {
        let f = SqlFile::parse("q.sql", SQL).expect("parses");
        assert_eq!(f.statements.len(), 2);
        let claim = f.get("claim").unwrap();
        assert_eq!(claim.line, 4);
        assert_eq!(claim.params, vec![("worker_id".to_string(), 5)]);
        assert!(
            claim.positional.contains("y::text = $1"),
            "{}",
            claim.positional
        );
        assert!(claim.positional.contains("owner = $1"));
        assert!(
            claim.positional.contains("':no'"),
            "a string is not a parameter"
        );
        assert_eq!(claim.returns, vec!["id", "payload", "token", "lease_until"]);
        assert!(claim.clock_reads.is_empty());
    }

    #[test]
    fn real_clock_readings_and_bad_structure_are_refused_with_the_line() {
        let f = SqlFile::parse(
            "q.sql",
            "-- name: heartbeat\nupdate t\nset at = clock_timestamp(), b = pg_catalog.now()\nwhere c < current_timestamp;\n",
        )
        .unwrap();
        let h = f.get("heartbeat").unwrap();
        let lines: Vec<usize> = h.clock_reads.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, vec![3, 3, 4]);
        let e = SqlFile::parse(
            "q.sql",
            "select 1;\n-- name: a\nselect 2;\n-- name: a\nselect 3;\n",
        )
        .unwrap_err();
        assert!(e
            .iter()
            .any(|p| p.line == 1 && p.message.contains("no statement")));
        assert!(e.iter().any(|p| p.line == 4 && p.message.contains("twice")));
    }
}
