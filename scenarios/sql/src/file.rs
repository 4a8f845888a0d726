//! A queue's SQL file: named statements in the `-- name: <statement>` convention of
//! yesql/aiosql/sqlc, with parameters named `:like_this`. Parsing finds every statement, every
//! parameter (skipping string literals, quoted identifiers, comments and `::` casts), the
//! columns a statement returns, and any reading of the real clock, each with its line, so that
//! `leasesim sql check` can say what is wrong where.

use crate::lex::{self, Kind, Token};

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
    /// What it does to the transaction (by its first two words).
    control: Control,
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
        self.control
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

/// SQL keywords that read the real clock (a time fixed at transaction or statement start).
const CLOCK_KEYWORDS: &[&str] = &[
    "current_timestamp",
    "current_time",
    "current_date",
    "localtimestamp",
    "localtime",
];

/// Functions that read the real clock, or a time the server took from it.
pub(crate) const CLOCK_FUNCTIONS: &[&str] = &[
    "clock_timestamp",
    "statement_timestamp",
    "transaction_timestamp",
    "timeofday",
    "pg_postmaster_start_time",
    "pg_conf_load_time",
    "pg_xact_commit_timestamp",
    "pg_last_committed_xact",
    "pg_last_xact_replay_timestamp",
];

/// Functions whose answer is random, or differs from one run (or server) to the next.
pub(crate) const RANDOM_FUNCTIONS: &[&str] = &[
    "random",
    "random_normal",
    "gen_random_uuid",
    "gen_random_bytes",
    "gen_salt",
    "uuid_generate_v1",
    "uuid_generate_v1mc",
    "uuid_generate_v4",
    "uuidv4",
    "uuidv7",
    "setseed",
    "pg_backend_pid",
    "txid_current",
    "txid_current_if_assigned",
    "txid_current_snapshot",
    "pg_current_xact_id",
    "pg_current_xact_id_if_assigned",
    "pg_current_snapshot",
];

/// The special date/time inputs PostgreSQL replaces with a reading of the real clock.
const CLOCK_LITERALS: &[&str] = &["now", "today", "tomorrow", "yesterday"];

/// Other words a date/time input may hold beside a special one (`'today 10:00 UTC'`).
const DATETIME_WORDS: &[&str] = &[
    "at",
    "am",
    "pm",
    "allballs",
    "t",
    "z",
    "zulu",
    "utc",
    "gmt",
    "ut",
    "bc",
    "ad",
    "epoch",
    "jan",
    "feb",
    "mar",
    "apr",
    "may",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "mon",
    "tue",
    "tues",
    "wed",
    "thu",
    "thur",
    "thurs",
    "fri",
    "sat",
    "sun",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "est",
    "edt",
    "cst",
    "cdt",
    "mst",
    "mdt",
    "pst",
    "pdt",
    "cet",
    "cest",
    "eet",
    "eest",
    "wet",
    "west",
    "msk",
    "bst",
    "ist",
    "jst",
    "aest",
    "aedt",
    "hst",
    "akst",
    "akdt",
];

/// How deep string and function bodies are read for clock readings (a body in a body ...).
const BODY_DEPTH: usize = 4;

impl SqlFile {
    /// Parses `text`; `name` says where it came from.
    ///
    /// The whole text is lexed first (one pass): a `-- name:` marker is a `--` comment that
    /// begins its line, so one inside a string, a dollar-quoted body or a `/* */` comment marks
    /// nothing, and a string or comment that does not end is an error at the line it starts.
    pub fn parse(name: &str, text: &str) -> Result<SqlFile, Vec<Problem>> {
        let tokens = lex::lex(text, 1).map_err(|e| {
            vec![Problem {
                line: e.line,
                message: e.to_string(),
            }]
        })?;
        if let Some(problem) = swallowed_marker(&tokens, text) {
            return Err(vec![problem]);
        }
        let mut problems = Vec::new();
        let (marks, first_code, known_bad) = markers(&tokens, text, &mut problems);
        let mut statements: Vec<Statement> = Vec::with_capacity(marks.len());
        for (k, (sname, line, _, from)) in marks.iter().enumerate() {
            let to = marks.get(k + 1).map_or(text.len(), |m| m.2).max(*from);
            let mut body = &text[*from..to];
            body = body.strip_suffix('\n').unwrap_or(body);
            body = body.strip_suffix('\r').unwrap_or(body);
            match statement(sname.clone(), *line, body) {
                Ok(st) => statements.push(st),
                Err(p) => problems.push(p),
            }
        }
        if let Some(line) = first_code {
            problems.push(Problem {
                line,
                message:
                    "SQL before the first `-- name: <statement>` marker belongs to no statement"
                        .into(),
            });
        }
        check_names(&statements, &mut problems);
        if !problems.is_empty() {
            problems.sort_by_key(|p| p.line);
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

/// A string or quoted identifier that runs over a `-- name:` marker, as the one problem to
/// report.
fn swallowed_marker(tokens: &[Token], text: &str) -> Option<Problem> {
    // A quote left out turns what follows into a string until the next quote: when such a
    // string swallows a marker, that quote is the problem, not the statements it hid.
    tokens
        .iter()
        .filter(|t| matches!(t.kind, lex::Kind::String | lex::Kind::QuotedIdent))
        .find_map(|t| {
            let inside = t.text(text);
            let marker = inside.match_indices('\n').find_map(|(i, _)| {
                let rest = &inside[i + 1..];
                let line = rest.trim_start_matches([' ', '\t']);
                line.starts_with("-- name:").then(|| inside.len() - line.len())
            })?;
            let what = if t.kind == lex::Kind::String {
                "quoted string"
            } else {
                "quoted identifier"
            };
            Some(Problem {
                line: t.line,
                message: format!(
                    "a {what} starts here and runs over the `-- name:` marker at line {}: is a quote missing?",
                    t.line + inside[..marker].matches('\n').count()
                ),
            })
        })
}

/// A statement's marker: (name, marker line, start of the marker's line, body start).
type Mark = (String, usize, usize, usize);

/// The `-- name:` markers of a file, in order, with the line of any code before the first
/// and the `-- leasesim: known-bad` note; a marker without a name is a problem.
fn markers(
    tokens: &[Token],
    text: &str,
    problems: &mut Vec<Problem>,
) -> (Vec<Mark>, Option<usize>, Option<String>) {
    let mut marks: Vec<Mark> = Vec::new();
    let mut first_code = None;
    let mut known_bad = None;
    for t in tokens {
        if t.kind != lex::Kind::LineComment {
            if t.is_code() && marks.is_empty() {
                first_code.get_or_insert(t.line);
            }
            continue;
        }
        let line_start = text[..t.start].rfind('\n').map_or(0, |i| i + 1);
        if !text[line_start..t.start].trim().is_empty() {
            continue;
        }
        let comment = t.text(text);
        if let (true, Some(rest)) = (
            marks.is_empty(),
            comment.strip_prefix("-- leasesim: known-bad"),
        ) {
            let what = rest
                .trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .trim();
            known_bad = Some(what.to_string());
            continue;
        }
        if let Some(rest) = comment.strip_prefix("-- name:") {
            let sname = rest.split_whitespace().next().unwrap_or("").to_string();
            if sname.is_empty() {
                problems.push(Problem {
                    line: t.line,
                    message: "a `-- name:` marker without a name".into(),
                });
            }
            let body = text[t.end..]
                .find('\n')
                .map_or(text.len(), |i| t.end + i + 1);
            marks.push((sname, t.line, line_start, body));
        }
    }
    (marks, first_code, known_bad)
}

/// Each statement's name once, and none empty.
fn check_names(statements: &[Statement], problems: &mut Vec<Problem>) {
    let mut seen: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for s in statements {
        if let Some(first) = seen.get(s.name.as_str()) {
            problems.push(Problem {
                line: s.line,
                message: format!(
                    "statement `{}` is defined twice (first at line {first})",
                    s.name
                ),
            });
        } else {
            seen.insert(&s.name, s.line);
        }
        if s.text.trim().is_empty() {
            problems.push(Problem {
                line: s.line,
                message: format!("statement `{}` is empty", s.name),
            });
        }
    }
}

/// A code token with the parenthesis depth it is at.
type At = (Token, usize);

/// Reads one statement's body (which starts on the line after `line`), in one pass over its
/// tokens.
// Long: one pass keeps parameters, pieces, depth and `;`s in step; halves would share them all.
fn statement(name: String, line: usize, body: &str) -> Result<Statement, Problem> {
    let tokens = lex::lex(body, line + 1).map_err(|e| Problem {
        line: e.line,
        message: e.to_string(),
    })?;
    let mut index: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    let mut params: Vec<(String, usize)> = Vec::new();
    let mut positional = String::with_capacity(body.len() + body.len() / 8);
    let mut pieces = Vec::new();
    let mut cut = 0;
    let mut code: Vec<At> = Vec::new();
    let mut depth = 0usize;
    // `create function ... begin atomic ... end`: its `;`s are inside its body (as psql reads).
    let mut routine = false;
    let mut block = 0usize;
    // Top-level `;`s that end a statement: (line, byte, code tokens since the previous one).
    let mut ends: Vec<(usize, usize, usize)> = Vec::new();
    let mut since = 0usize;
    for t in &tokens {
        if t.kind == Kind::Param {
            let pname = &body[t.start + 1..t.end];
            let k = *index.entry(pname).or_insert_with(|| {
                params.push((pname.to_string(), t.line));
                params.len() - 1
            });
            pieces.push(Piece::Text(positional[cut..].to_string()));
            pieces.push(Piece::Param(k));
            positional.push('$');
            positional.push_str(&(k + 1).to_string());
            cut = positional.len();
        } else {
            positional.push_str(t.text(body));
        }
        if !t.is_code() {
            continue;
        }
        if t.is(body, ')') {
            depth = depth.saturating_sub(1);
        }
        if t.kind == Kind::Word && depth == 0 {
            let w = t.text(body);
            if since <= 3
                && (w.eq_ignore_ascii_case("function") || w.eq_ignore_ascii_case("procedure"))
            {
                routine = code
                    .get(code.len().saturating_sub(since))
                    .is_some_and(|(f, _)| f.text(body).eq_ignore_ascii_case("create"));
            } else if routine && (w.eq_ignore_ascii_case("begin") || w.eq_ignore_ascii_case("case"))
            {
                block += 1;
            } else if routine && w.eq_ignore_ascii_case("end") {
                block = block.saturating_sub(1);
            }
        }
        if t.is(body, ';') && depth == 0 && block == 0 {
            ends.push((t.line, t.start, since));
            since = 0;
            routine = false;
        } else {
            since += 1;
        }
        code.push((*t, depth));
        if t.is(body, '(') {
            depth += 1;
        }
    }
    if cut < positional.len() {
        pieces.push(Piece::Text(positional[cut..].to_string()));
    }
    // A `;` is one of several when code follows it.
    let mut more_than_one = Vec::new();
    let mut after = since > 0;
    for &(semi_line, _, before) in ends.iter().rev() {
        if after {
            more_than_one.push(semi_line);
        }
        after |= before > 0;
    }
    more_than_one.reverse();
    let mut steps = Vec::new();
    if !more_than_one.is_empty() {
        let mut from = 0;
        let mut from_line = line;
        for &(semi_line, at, count) in &ends {
            if count > 0 {
                steps.push(statement(name.clone(), from_line, &body[from..at])?);
            }
            from = at + 1;
            from_line = semi_line - 1;
        }
        if since > 0 {
            steps.push(statement(name.clone(), from_line, &body[from..])?);
        }
    }
    let control = control(body, &code);
    let mut clock_reads = Vec::new();
    clock_reads_in(body, &code, true, 0, &mut clock_reads);
    Ok(Statement {
        name,
        line,
        text: body.to_string(),
        params,
        positional,
        pieces,
        more_than_one,
        returns: returned_columns(body, &code),
        clock_reads,
        steps,
        control,
    })
}

/// What a statement does to the transaction, by its first two words.
fn control(src: &str, code: &[At]) -> Control {
    let word = |k: usize| {
        code.get(k)
            .filter(|(t, _)| t.kind == Kind::Word)
            .map_or(String::new(), |(t, _)| t.text(src).to_ascii_lowercase())
    };
    match (word(0).as_str(), word(1).as_str()) {
        ("begin" | "start", _) => Control::Begin,
        ("commit" | "end", _) => Control::Commit,
        // `rollback to savepoint` stays inside the transaction.
        ("rollback" | "abort", "to") => Control::Data,
        ("rollback" | "abort", _) => Control::Rollback,
        _ => Control::Data,
    }
}

/// For each `(` in `code`, the index of its `)` and the number of commas directly inside.
fn parentheses(src: &str, code: &[At]) -> std::collections::BTreeMap<usize, (usize, usize)> {
    let mut open: Vec<(usize, usize)> = Vec::new();
    let mut pairs = std::collections::BTreeMap::new();
    for (k, (t, _)) in code.iter().enumerate() {
        if t.is(src, '(') {
            open.push((k, 0));
        } else if t.is(src, ',') {
            if let Some(top) = open.last_mut() {
                top.1 += 1;
            }
        } else if t.is(src, ')') {
            if let Some((at, commas)) = open.pop() {
                pairs.insert(at, (k, commas));
            }
        }
    }
    pairs
}

/// Every reading of the real clock or of randomness in `code`: (line, what). `strict` reads
/// the code as code (a statement, a function's body); a plain string's text is searched for
/// function calls only. A string's or a dollar-quoted body's text is read again, as code, up
/// to [`BODY_DEPTH`] deep.
// Long: one arm per way SQL reads the real clock or randomness: a table.
fn clock_reads_in(
    src: &str,
    code: &[At],
    strict: bool,
    deep: usize,
    out: &mut Vec<(usize, String)>,
) {
    let parens = parentheses(src, code);
    let mut k = 0;
    while k < code.len() {
        let t = code[k].0;
        let next_is = |c: char| code.get(k + 1).is_some_and(|(n, _)| n.is(src, c));
        let called = next_is('(');
        let after_dot = k > 0 && code[k - 1].0.is(src, '.');
        match t.kind {
            Kind::Word | Kind::QuotedIdent => {
                let name = t.name(src).unwrap_or_default();
                let written = t.text(src);
                let unquoted = t.kind == Kind::Word;
                let keyword = strict && unquoted && CLOCK_KEYWORDS.contains(&name.as_str());
                if keyword || (called && CLOCK_FUNCTIONS.contains(&name.as_str())) {
                    out.push((t.line, written.to_string()));
                } else if called && RANDOM_FUNCTIONS.contains(&name.as_str()) {
                    out.push((
                        t.line,
                        format!("{written} (random: a run would not repeat)"),
                    ));
                } else if called && name == "now" && after_dot {
                    let qualifier = k.checked_sub(2).map_or("", |q| code[q].0.text(src));
                    out.push((
                        t.line,
                        format!("{qualifier}.{written} (a qualified now() reads the real clock; write now())"),
                    ));
                } else if called && name == "age" && !after_dot {
                    if let Some(&(close, commas)) = parens.get(&(k + 1)) {
                        if commas == 0 && close > k + 2 {
                            out.push((
                                t.line,
                                format!("{written}(x) with one argument (it counts from the real current_date: write age(now(), x))"),
                            ));
                        }
                    }
                } else if strict && unquoted && name == "tablesample" {
                    // `tablesample method (args) repeatable (seed)` is the only repeatable kind.
                    let close = parens.get(&(k + 2)).map(|p| p.0);
                    let repeatable = close
                        .and_then(|c| code.get(c + 1))
                        .and_then(|(r, _)| r.name(src))
                        .is_some_and(|r| r == "repeatable");
                    if !repeatable {
                        out.push((
                            t.line,
                            format!(
                                "{written} without repeatable (random: a run would not repeat)"
                            ),
                        ));
                    }
                } else if strict && (name.starts_with("pg_stat_") || name.starts_with("pg_statio_"))
                {
                    out.push((
                        t.line,
                        format!("{written} (the server's statistics: they differ from run to run)"),
                    ));
                } else if strict && !called && !after_dot && (name == "xmin" || name == "xmax") {
                    out.push((
                        t.line,
                        format!("{written} (a transaction id: it differs from run to run)"),
                    ));
                }
            }
            Kind::String | Kind::Dollar { .. } => {
                // Strings a newline apart are one constant (`'n'` newline `'ow'`).
                let mut value = t.value(src).unwrap_or_default();
                let mut last = k;
                if t.kind == Kind::String {
                    while let Some((n, _)) = code.get(last + 1) {
                        let gap = &src[code[last].0.end..n.start];
                        if n.kind != Kind::String
                            || !gap.contains('\n')
                            || n.text(src)
                                .starts_with(['e', 'E', 'u', 'U', 'b', 'B', 'x', 'X', 'n', 'N'])
                        {
                            break;
                        }
                        value.push_str(&n.value(src).unwrap_or_default());
                        last += 1;
                    }
                }
                if let Some(word) = clock_literal(&value).filter(|_| strict) {
                    out.push((
                        t.line,
                        format!("'{word}' (PostgreSQL reads a '{word}' literal as a time from the real clock)"),
                    ));
                }
                if deep < BODY_DEPTH {
                    if let Ok(inner) = lex::lex(&value, t.line) {
                        let inner_code = with_depths(&value, &inner);
                        let body = matches!(t.kind, Kind::Dollar { .. });
                        let mut found = Vec::new();
                        clock_reads_in(&value, &inner_code, strict && body, deep + 1, &mut found);
                        let inside = if body {
                            "a dollar-quoted body"
                        } else {
                            "a string"
                        };
                        for (line, what) in found {
                            out.push((line, format!("{what} inside {inside}")));
                        }
                    }
                }
                k = last;
            }
            _ => {}
        }
        k += 1;
    }
}

/// The code tokens of `tokens` with their parenthesis depths.
fn with_depths(src: &str, tokens: &[Token]) -> Vec<At> {
    let mut depth = 0usize;
    let mut code = Vec::new();
    for t in tokens.iter().filter(|t| t.is_code()) {
        if t.is(src, ')') {
            depth = depth.saturating_sub(1);
        }
        code.push((*t, depth));
        if t.is(src, '(') {
            depth += 1;
        }
    }
    code
}

/// The special word of a string PostgreSQL would read as a time from the real clock
/// (`'now'`, `'today'`, `'tomorrow 10:00'`, ...), if it is one.
fn clock_literal(value: &str) -> Option<&'static str> {
    if value.len() > 64 {
        return None;
    }
    let lower = value.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let special = CLOCK_LITERALS
        .iter()
        .find(|s| words.iter().any(|w| w == *s))?;
    words
        .iter()
        .all(|w| {
            CLOCK_LITERALS.contains(w)
                || DATETIME_WORDS.contains(w)
                || !w.chars().any(|c| c.is_ascii_alphabetic())
                || w.contains('/')
        })
        .then_some(*special)
}

/// The column names a statement returns: those of its last top-level `returning` clause, or of
/// its select list when it is a top-level `select`. Each is named as PostgreSQL names it: its
/// alias, a column reference's last name, a function's name, a cast's argument's name (or its
/// type's), `case`, and `?column?` for anything else; `*` stands for columns not known here.
fn returned_columns(src: &str, code: &[At]) -> Vec<String> {
    let word = |(t, d): &At, words: &[&str]| {
        *d == 0 && t.kind == Kind::Word && words.iter().any(|w| t.text(src).eq_ignore_ascii_case(w))
    };
    let list: &[At] = if let Some(r) = code.iter().rposition(|a| word(a, &["returning"])) {
        &code[r + 1..]
    } else if let Some(sel) = code
        .iter()
        .position(|a| word(a, &["select", "update", "insert", "delete"]))
        .filter(|&s| word(&code[s], &["select"]))
    {
        // The main statement is a select (after any `with` part): its list ends at the first
        // top-level word that ends it.
        let ends = [
            "from",
            "where",
            "group",
            "order",
            "limit",
            "union",
            "for",
            "having",
            "into",
            "window",
            "intersect",
            "except",
            "offset",
            "fetch",
        ];
        let end = code[sel + 1..]
            .iter()
            .position(|a| word(a, &ends))
            .map_or(code.len(), |e| sel + 1 + e);
        &code[sel + 1..end]
    } else {
        return Vec::new();
    };
    let list = match list.iter().position(|(t, d)| *d == 0 && t.is(src, ';')) {
        Some(semi) => &list[..semi],
        None => list,
    };
    list.split(|(t, d)| *d == 0 && t.is(src, ','))
        .filter(|item| !item.is_empty())
        .map(|item| column_name(src, item))
        .collect()
}

/// The name PostgreSQL gives one item of a select list or `returning` clause.
fn column_name(src: &str, item: &[At]) -> String {
    let n = item.len();
    let base = item.iter().map(|a| a.1).min().unwrap_or(0);
    let top = |k: usize| item[k].1 == base;
    let name = |k: usize| item[k].0.name(src);
    let is = |k: usize, c: char| item[k].0.is(src, c);
    // `expr as alias`, or `expr alias`.
    if n >= 2 && top(n - 1) {
        if let Some(alias) = name(n - 1) {
            let before = &item[n - 2].0;
            if before.kind == Kind::Word && before.text(src).eq_ignore_ascii_case("as") {
                return alias;
            }
            let ends_value = matches!(
                before.kind,
                Kind::Word | Kind::QuotedIdent | Kind::String | Kind::Number | Kind::Dollar { .. }
            ) || is(n - 2, ')')
                || is(n - 2, ']');
            if ends_value
                && alias != "end"
                && !(before.kind == Kind::Word && name(0).as_deref() == Some("case"))
            {
                return alias;
            }
        }
    }
    // `expr::type`: the expression's name, else the type's.
    if let Some(c) = (0..n)
        .rev()
        .find(|&k| top(k) && item[k].0.kind == Kind::Cast)
    {
        let inner = column_name(src, &item[..c]);
        if inner != "?column?" {
            return inner;
        }
        return (c + 1 < n).then(|| name(c + 1)).flatten().unwrap_or(inner);
    }
    // A column reference: names and dots, maybe ending in `*`.
    if (0..n).all(|k| name(k).is_some() || is(k, '.') || is(k, '*')) {
        return if is(n - 1, '*') {
            "*".into()
        } else {
            name(n - 1).unwrap_or_else(|| "?column?".into())
        };
    }
    // A function call: a (qualified) name, then its arguments to the end.
    if let Some(open) = (0..n).find(|&k| is(k, '(')) {
        let named = open > 0 && (0..open).all(|k| name(k).is_some() || is(k, '.'));
        if named && is(n - 1, ')') && item[n - 1].1 == base {
            return name(open - 1).unwrap_or_else(|| "?column?".into());
        }
    }
    if name(0).as_deref() == Some("case") {
        return "case".into();
    }
    "?column?".into()
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

    fn reads(sql: &str) -> Vec<(usize, String)> {
        let text = format!("-- name: claim\n{sql}\n");
        let f = SqlFile::parse("q.sql", &text).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        let claim = f.get("claim").unwrap();
        let mut all = claim.clock_reads.clone();
        for step in &claim.steps {
            all.extend(step.clock_reads.iter().cloned());
        }
        all
    }

    #[test]
    fn every_way_to_read_the_real_clock_or_randomness_is_found() {
        for sql in [
            "select 'now'::timestamptz as lease_until",
            "select timestamptz 'now' as x",
            "select cast('today' as date) as x",
            "select 'tomorrow 10:00 UTC'::timestamp as x",
            "select ' NOW '::timestamptz as x",
            r"select E'\x6eow'::timestamptz as x",
            r"select U&'\006Eow'::timestamptz as x",
            "select 'n'\n'ow'::timestamptz as x",
            "select $$now$$::timestamptz as x",
            r"select E'\'' as a, clock_timestamp() as b",
            "select \"clock_timestamp\"() as x",
            "select pg_catalog . \"now\" () as x",
            "select pg_catalog.now() as x",
            "select current_timestamp as x",
            "select age(lease_until) as x from t",
            "select id from t tablesample bernoulli (10)",
            "select xmin from t",
            "select gen_random_uuid() as id",
            "select * from pg_stat_activity",
            "select f() as x; create function f() returns timestamptz language sql as $$ select clock_timestamp() $$",
            "create function g() returns void language plpgsql as $f$ begin execute 'select statement_timestamp()'; end $f$",
        ] {
            assert!(!reads(sql).is_empty(), "not found in: {sql}");
        }
    }

    #[test]
    fn what_only_looks_like_a_clock_reading_is_not_one() {
        for sql in [
            "select now() as lease_until",
            "select random, timeofday from t",
            "select 'now is the time' as note",
            "select 'epoch'::timestamptz as x",
            "select \"current_date\" from t",
            "select 1 as x -- clock_timestamp()\n",
            "select 1 as x /* random() */",
            "select 'clock_timestamp' as name",
            "select age(now(), lease_until) as x from t",
            "select id from t tablesample bernoulli (10) repeatable (7)",
            "select t.now() as x from t",
        ] {
            let found = reads(sql);
            let qualified_now = sql.contains("t.now()");
            assert_eq!(
                found.is_empty(),
                !qualified_now,
                "{sql}: {found:?} (a qualified now() is the real one)"
            );
        }
    }

    #[test]
    fn a_semicolon_or_marker_inside_a_string_or_comment_cuts_nothing() {
        let text = concat!(
            "-- name: schema\n",
            "create table t (id int); /* a /* nested; */ still a comment; */\n",
            "create function f() returns int language sql as $body$\n",
            "-- name: not_a_marker\n",
            "select 1; $body$;\n",
            "create function g() returns int language sql begin atomic select 1; select 2; end;\n",
            "-- name: claim\n",
            "select E'it\\'s; :no' as a, 'x'';' as b, $1 as c, :worker_id as id -- ; :nor\n",
        );
        let f = SqlFile::parse("q.sql", text).expect("parses");
        assert_eq!(f.statements.len(), 2, "{:?}", f.statements);
        let schema = f.get("schema").unwrap();
        assert_eq!(schema.steps.len(), 3, "{:#?}", schema.steps);
        assert!(schema.steps[2].text.contains("select 2; end"));
        let claim = f.get("claim").unwrap();
        assert!(claim.steps.is_empty() && claim.more_than_one.is_empty());
        assert_eq!(claim.params, vec![("worker_id".to_string(), 8)]);
        assert_eq!(claim.returns, vec!["a", "b", "c", "id"]);
    }

    #[test]
    fn what_does_not_end_is_refused_as_unterminated_with_its_line() {
        for (text, line) in [
            (
                "-- name: claim\nselect 1 as id,\n'abc as x;\n-- name: commit\nselect 1;\n",
                3,
            ),
            ("-- name: claim\nselect E'ab\\' as x;\n", 2),
            ("-- name: claim\nselect 1 /* as x;\n", 2),
            ("-- name: claim\n\nselect $q$ 1 as x;\n", 3),
        ] {
            let e = SqlFile::parse("q.sql", text).unwrap_err();
            assert_eq!(e.len(), 1, "{e:?}");
            assert_eq!(e[0].line, line, "{text}: {e:?}");
            assert!(e[0].message.starts_with("unterminated"), "{e:?}");
        }
    }

    #[test]
    fn columns_are_named_as_postgresql_names_them() {
        let f = SqlFile::parse(
            "q.sql",
            "-- name: claim\nselect j.id, count(*), x::int, 'a'::text, case when 1 = 1 then 2 end, pg_catalog.lower(s) l, \"Q\", 1, j.*, max(a) as m from t j;\n",
        )
        .unwrap();
        assert_eq!(
            f.get("claim").unwrap().returns,
            vec!["id", "count", "x", "text", "case", "l", "Q", "?column?", "*", "m"]
        );
    }
}
