//! SQL cut into tokens by PostgreSQL's own lexical rules (its `scan.l`), in one pass over the
//! bytes: so that a `;`, a `:param` or a function name is only ever found where PostgreSQL
//! would find it, and never inside a string, a quoted identifier or a comment.
//!
//! What it knows, as PostgreSQL does with `standard_conforming_strings = on` (which every
//! connection leasesim makes pins):
//!
//! - `'...'` with `''` for a quote; a backslash is an ordinary character;
//! - `E'...'` escape strings, where `\'` and `\\` (and every `\x`) are escapes;
//! - `U&'...'` and `U&"..."` (Unicode escapes), `B'...'`, `X'...'`, `N'...'`;
//! - dollar quoting, `$$...$$` and `$tag$...$tag$`, where a tag is an identifier without `$`
//!   and `$1` is a positional parameter, not a quote;
//! - identifiers of letters, digits, `_` and `$` (so `a$b$` is one identifier), and bytes
//!   above 127 as letters;
//! - `"quoted identifiers"` with `""` for a quote;
//! - `--` comments to the line's end and `/* ... */` comments, which nest;
//! - `::` casts, and leasesim's own `:name` parameters.
//!
//! A string, quoted identifier, dollar quote or comment that does not end is an error that
//! names what is unterminated and the line it starts on.

/// What a token is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A keyword or an unquoted identifier.
    Word,
    /// A `"quoted identifier"` (or `U&"..."`).
    QuotedIdent,
    /// A string constant: `'...'`, `E'...'`, `U&'...'`, `B'...'`, `X'...'`, `N'...'`.
    String,
    /// A dollar-quoted string: `$tag$ ... $tag$`; `tag` is its delimiter's length.
    Dollar {
        /// The length of its delimiter (`$$` is 2, `$body$` is 6).
        tag: usize,
    },
    /// A numeric constant.
    Number,
    /// A `:name` parameter (its name follows the colon).
    Param,
    /// A `$1` positional parameter.
    Positional,
    /// `::`.
    Cast,
    /// `-- ...` to the line's end (the newline is not part of it).
    LineComment,
    /// `/* ... */`, nested ones included.
    BlockComment,
    /// Blanks and newlines.
    Space,
    /// Any other single character: `(`, `)`, `,`, `;`, `.`, `[`, an operator's character, ...
    Other,
}

/// A token: its kind, its byte span in the text, and the line it starts on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// What it is.
    pub kind: Kind,
    /// Where it starts (a byte offset).
    pub start: usize,
    /// Where it ends (exclusive).
    pub end: usize,
    /// The line it starts on.
    pub line: usize,
}

impl Token {
    /// Its text as written.
    pub fn text<'a>(&self, src: &'a str) -> &'a str {
        &src[self.start..self.end]
    }

    /// Whether it is code: neither blank nor a comment.
    pub fn is_code(&self) -> bool {
        !matches!(
            self.kind,
            Kind::Space | Kind::LineComment | Kind::BlockComment
        )
    }

    /// Whether it is the single character `c`.
    pub fn is(&self, src: &str, c: char) -> bool {
        self.kind == Kind::Other && src[self.start..self.end].starts_with(c)
    }

    /// An identifier's name as PostgreSQL sees it: an unquoted word folded to lower case, a
    /// quoted one as written (with `""` undone); `None` for any other token.
    pub fn name(&self, src: &str) -> Option<String> {
        let text = self.text(src);
        match self.kind {
            Kind::Word => Some(text.to_ascii_lowercase()),
            Kind::QuotedIdent => {
                let inner = text
                    .strip_prefix("U&")
                    .or(text.strip_prefix("u&"))
                    .unwrap_or(text);
                Some(inner[1..inner.len() - 1].replace("\"\"", "\""))
            }
            _ => None,
        }
    }

    /// A string constant's or dollar quote's value (escapes undone, as far as they are text);
    /// `None` for any other token.
    pub fn value(&self, src: &str) -> Option<String> {
        let text = self.text(src);
        match self.kind {
            Kind::Dollar { tag } => Some(text[tag..text.len() - tag].to_string()),
            Kind::String => {
                let first = text.as_bytes()[0].to_ascii_lowercase();
                Some(match first {
                    b'e' => unescape(&text[2..text.len() - 1]),
                    b'u' => unicode_unescape(&text[3..text.len() - 1].replace("''", "'")),
                    b'b' | b'x' | b'n' => text[2..text.len() - 1].replace("''", "'"),
                    _ => text[1..text.len() - 1].replace("''", "'"),
                })
            }
            _ => None,
        }
    }
}

/// What does not end, and where it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unterminated {
    /// The line it starts on.
    pub line: usize,
    /// What it is, in words.
    pub what: String,
}

impl std::fmt::Display for Unterminated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unterminated {} (it starts here)", self.what)
    }
}

fn ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

fn ident_cont(b: u8) -> bool {
    ident_start(b) || b.is_ascii_digit() || b == b'$'
}

/// The length of a dollar-quote delimiter (`$$`, `$tag$`) starting at `i`, if one does.
fn dollar_delimiter(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    if b.get(j).is_some_and(|&c| ident_start(c)) {
        while b
            .get(j)
            .is_some_and(|&c| ident_start(c) || c.is_ascii_digit())
        {
            j += 1;
        }
    }
    (b.get(j) == Some(&b'$')).then_some(j + 1 - i)
}

/// Cuts `src` into tokens; `first_line` is the line `src` starts on.
pub fn lex(src: &str, first_line: usize) -> Result<Vec<Token>, Unterminated> {
    let b = src.as_bytes();
    let mut tokens = Vec::new();
    let mut line = first_line;
    let mut i = 0;
    // Lines are counted once per token, over its bytes: linear in the text.
    let newlines = |from: usize, to: usize| b[from..to].iter().filter(|&&c| c == b'\n').count();
    while i < b.len() {
        let start = i;
        let (kind, end) = token(src, i, line)?;
        // Every token takes at least one byte, so the loop ends.
        i = end.max(start + 1);
        tokens.push(Token {
            kind,
            start,
            end: i,
            line,
        });
        line += newlines(start, i);
    }
    Ok(tokens)
}

/// The kind and end (exclusive) of the token that starts at byte `i` of `src`, on `line`.
fn token(src: &str, mut i: usize, line: usize) -> Result<(Kind, usize), Unterminated> {
    let b = src.as_bytes();
    let c = b[i];
    let next = b.get(i + 1).copied();
    if let Some(quoted) = quoted_token(b, i, line) {
        return quoted;
    }
    let kind = match c {
        b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => {
            while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
                i += 1;
            }
            Kind::Space
        }
        b'-' if next == Some(b'-') => {
            while i < b.len() && b[i] != b'\n' && b[i] != b'\r' {
                i += 1;
            }
            Kind::LineComment
        }
        b'/' if next == Some(b'*') => {
            i = block_comment(b, i, line)?;
            Kind::BlockComment
        }
        c if ident_start(c) => {
            while i < b.len() && ident_cont(b[i]) {
                i += 1;
            }
            Kind::Word
        }
        b'$' if next.is_some_and(|d| d.is_ascii_digit()) => {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            Kind::Positional
        }
        b'$' if dollar_delimiter(b, i).is_some() => return dollar_quoted(src, i, line),
        b'0'..=b'9' => {
            number(b, &mut i);
            Kind::Number
        }
        b'.' if next.is_some_and(|d| d.is_ascii_digit()) => {
            number(b, &mut i);
            Kind::Number
        }
        b':' if next == Some(b':') => {
            i += 2;
            Kind::Cast
        }
        b':' if next.is_some_and(|d| d.is_ascii_alphabetic() || d == b'_') => {
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            Kind::Param
        }
        _ => {
            // One character (a multi-byte one whole).
            i += src[i..].chars().next().map_or(1, char::len_utf8);
            Kind::Other
        }
    };
    Ok((kind, i))
}

/// The dollar-quoted string (`$tag$ ... $tag$`) that starts at `i`, with its end.
fn dollar_quoted(src: &str, i: usize, line: usize) -> Result<(Kind, usize), Unterminated> {
    let tag = dollar_delimiter(src.as_bytes(), i).unwrap_or(1);
    let delimiter = &src[i..i + tag];
    match src[i + tag..].find(delimiter) {
        Some(at) => Ok((Kind::Dollar { tag }, i + tag + at + tag)),
        None => Err(Unterminated {
            line,
            what: format!("dollar-quoted string {delimiter}"),
        }),
    }
}

/// The end (exclusive) of the `/* ... */` comment that starts at `i` (nested ones inside).
fn block_comment(b: &[u8], mut i: usize, line: usize) -> Result<usize, Unterminated> {
    let mut depth = 0u64;
    loop {
        if i + 1 >= b.len() {
            return Err(Unterminated {
                line,
                what: "/* comment".into(),
            });
        }
        if b[i] == b'/' && b[i + 1] == b'*' {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b[i + 1] == b'/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return Ok(i);
            }
        } else {
            i += 1;
        }
    }
}

/// The quoted string or identifier that starts at `i` (`'...'`, `"..."`, `E'...'`, `B'...'`,
/// `X'...'`, `N'...'`, `U&'...'`, `U&"..."`), with its kind and end; `None` when none starts
/// there.
fn quoted_token(b: &[u8], i: usize, line: usize) -> Option<Result<(Kind, usize), Unterminated>> {
    let next = b.get(i + 1).copied();
    let (body, q, backslash, what) = match b[i] {
        b'\'' => (i + 1, b'\'', false, "quoted string"),
        b'"' => (i + 1, b'"', false, "quoted identifier"),
        b'e' | b'E' if next == Some(b'\'') => (
            i + 2,
            b'\'',
            true,
            "quoted string (an E'...' string, where \\' is a quote)",
        ),
        b'b' | b'B' | b'x' | b'X' | b'n' | b'N' if next == Some(b'\'') => {
            (i + 2, b'\'', false, "quoted string")
        }
        b'u' | b'U' if next == Some(b'&') && matches!(b.get(i + 2), Some(b'\'') | Some(b'"')) => {
            let q = b[i + 2];
            let what = if q == b'\'' {
                "quoted string"
            } else {
                "quoted identifier"
            };
            (i + 3, q, false, what)
        }
        _ => return None,
    };
    let kind = if q == b'\'' {
        Kind::String
    } else {
        Kind::QuotedIdent
    };
    Some(
        quoted(b, body, q, backslash)
            .map(|end| (kind, end))
            .ok_or_else(|| Unterminated {
                line,
                what: what.into(),
            }),
    )
}

/// The end (exclusive) of a quoted run whose body starts at `i`: `q` doubled is a `q`; with
/// `backslash`, `\` escapes the next byte. `None` when it does not end.
fn quoted(b: &[u8], mut i: usize, q: u8, backslash: bool) -> Option<usize> {
    while i < b.len() {
        if backslash && b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == q {
            if b.get(i + 1) == Some(&q) {
                i += 2;
                continue;
            }
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

/// A numeric constant from `i`: digits, `_`, a point, an exponent, `0x`/`0o`/`0b` digits.
fn number(b: &[u8], i: &mut usize) {
    while *i < b.len() {
        let c = b[*i];
        if c.is_ascii_alphanumeric() || c == b'_' || (c == b'.' && b.get(*i + 1) != Some(&b'.')) {
            let exponent = c == b'e' || c == b'E';
            *i += 1;
            if exponent && matches!(b.get(*i), Some(b'+') | Some(b'-')) {
                *i += 1;
            }
        } else {
            break;
        }
    }
}

/// An `E'...'` string's text with its escapes undone (`\n`, `\t`, `\b`, `\f`, `\r`, octal,
/// `\xHH`, `\uXXXX`, `\UXXXXXXXX`; any other `\c` is `c`), and `''` as `'`.
// Long: one arm per escape PostgreSQL reads in an E'...' string, a table.
fn unescape(s: &str) -> String {
    let b: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let hex = |from: usize, max: usize| -> (u32, usize) {
        let mut v = 0u32;
        let mut n = 0;
        while n < max {
            match b.get(from + n).and_then(|c| c.to_digit(16)) {
                Some(d) => v = v.wrapping_mul(16).wrapping_add(d),
                None => break,
            }
            n += 1;
        }
        (v, n)
    };
    while i < b.len() {
        match b[i] {
            '\'' if b.get(i + 1) == Some(&'\'') => {
                out.push('\'');
                i += 2;
            }
            '\\' if i + 1 < b.len() => {
                let c = b[i + 1];
                i += 2;
                match c {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'r' => out.push('\r'),
                    '0'..='7' => {
                        let mut v = c.to_digit(8).expect("octal");
                        let mut n = 0;
                        while n < 2 {
                            match b.get(i).and_then(|d| d.to_digit(8)) {
                                Some(d) => v = v * 8 + d,
                                None => break,
                            }
                            i += 1;
                            n += 1;
                        }
                        out.extend(char::from_u32(v));
                    }
                    'x' => {
                        let (v, n) = hex(i, 2);
                        if n == 0 {
                            out.push('x');
                        } else {
                            out.extend(char::from_u32(v));
                        }
                        i += n;
                    }
                    'u' | 'U' => {
                        let want = if c == 'u' { 4 } else { 8 };
                        let (v, n) = hex(i, want);
                        if n == want {
                            out.extend(char::from_u32(v));
                        } else {
                            out.push(c);
                        }
                        i += n;
                    }
                    other => out.push(other),
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// A `U&'...'` string's text with `\XXXX`, `\+XXXXXX` and `\\` undone (the default escape).
fn unicode_unescape(s: &str) -> String {
    let b: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == '\\' {
            let (skip, width) = match b.get(i + 1) {
                Some('\\') => {
                    out.push('\\');
                    i += 2;
                    continue;
                }
                Some('+') => (2, 6),
                _ => (1, 4),
            };
            let digits: String = b.iter().skip(i + skip).take(width).collect();
            if let Some(c) = (digits.len() == width)
                .then(|| u32::from_str_radix(&digits, 16).ok())
                .flatten()
                .and_then(char::from_u32)
            {
                out.push(c);
                i += skip + width;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(Kind, &str)> {
        lex(src, 1)
            .expect("lexes")
            .into_iter()
            .filter(Token::is_code)
            .map(|t| (t.kind, t.text(src)))
            .collect()
    }

    #[test]
    fn strings_of_every_kind_end_where_postgresql_ends_them() {
        let src = r"select 'a''b', E'it\'s; \\', 'c\', U&'d\0061', b'01', X'ff', N'n', $$x;'$$, $q$ $$ $q$";
        let strings: Vec<&str> = kinds(src)
            .into_iter()
            .filter(|(k, _)| matches!(k, Kind::String | Kind::Dollar { .. }))
            .map(|(_, t)| t)
            .collect();
        assert_eq!(
            strings,
            vec![
                "'a''b'",
                r"E'it\'s; \\'",
                r"'c\'",
                r"U&'d\0061'",
                "b'01'",
                "X'ff'",
                "N'n'",
                "$$x;'$$",
                "$q$ $$ $q$"
            ]
        );
        let toks = lex(src, 1).unwrap();
        let values: Vec<String> = toks.iter().filter_map(|t| t.value(src)).collect();
        assert_eq!(values[1], "it's; \\");
        assert_eq!(values[3], "da");
        assert_eq!(values[7], "x;'");
    }

    #[test]
    fn identifiers_dollars_parameters_and_casts_are_told_apart() {
        assert_eq!(
            kinds("a$b$ $1 :p ::int x::text \"Q\"\"d\" ab$$"),
            vec![
                (Kind::Word, "a$b$"),
                (Kind::Positional, "$1"),
                (Kind::Param, ":p"),
                (Kind::Cast, "::"),
                (Kind::Word, "int"),
                (Kind::Word, "x"),
                (Kind::Cast, "::"),
                (Kind::Word, "text"),
                (Kind::QuotedIdent, "\"Q\"\"d\""),
                (Kind::Word, "ab$$"),
            ]
        );
        let src = "\"Q\"\"d\" ClOcK";
        let names: Vec<Option<String>> = lex(src, 1).unwrap().iter().map(|t| t.name(src)).collect();
        assert_eq!(names, vec![Some("Q\"d".into()), None, Some("clock".into())]);
    }

    #[test]
    fn comments_nest_and_hide_what_is_inside() {
        let src = "/* a /* b; */ still; */ x -- y; 'z\n w";
        assert_eq!(
            kinds(src),
            vec![(Kind::Word, "x"), (Kind::Word, "w")],
            "{:?}",
            lex(src, 1)
        );
        let toks = lex(src, 7).unwrap();
        assert_eq!(toks.last().unwrap().line, 8, "lines are counted");
    }

    #[test]
    fn what_does_not_end_is_named_with_its_line() {
        for (src, what) in [
            ("select\n'abc", "quoted string"),
            ("select\nE'ab\\'", "quoted string"),
            ("select\n\"abc", "quoted identifier"),
            ("select\n/* /* */", "/* comment"),
            ("select\n$t$ abc $$", "dollar-quoted string $t$"),
        ] {
            let e = lex(src, 1).unwrap_err();
            assert_eq!(e.line, 2, "{src}");
            assert!(e.what.starts_with(what), "{src}: {e}");
            assert!(e.to_string().starts_with("unterminated"), "{e}");
        }
    }
}
