//! The one HTML escaper of the workspace: every page the project writes (the run timeline,
//! the variant matrix) escapes its text here, so that a name, a message or a command can never
//! break out of the markup.

/// Escapes text for HTML and SVG, in element content and in attribute values quoted either
/// way: `&`, `<`, `>`, `"` and `'` become entities; control characters other than newline and
/// tab are dropped.
pub fn html(s: &str) -> String {
    escape(s, true)
}

/// Escapes text for element content and double-quoted attribute values, like [`html`] but
/// leaving apostrophes as they are, so prose reads as written in the page's source. Never use it
/// for a single-quoted attribute.
pub fn html_text(s: &str) -> String {
    escape(s, false)
}

fn escape(s: &str, apostrophe: bool) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' if apostrophe => o.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => o.push(c),
        }
    }
    o
}
