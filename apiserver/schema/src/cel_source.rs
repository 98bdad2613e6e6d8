//! Where things are in CEL source text, and cel-go's way of reporting an error there:
//! `ERROR: <input>:<line>:<column>: <message>`, then the source line and a caret under the
//! spot. The `cel` crate's syntax tree carries no positions, so the check for undeclared
//! variables finds the spot by scanning the text, skipping string literals (the type check
//! places nodes with [`crate::cel_locate`]).

/// An error at (1-based line, 0-based column in characters) of `source`, as cel-go prints it.
pub fn error_at(source: &str, (line, column): (usize, usize), message: &str) -> String {
    let mut out = format!("ERROR: <input>:{line}:{}: {message}", column + 1);
    if let Some(text) = source.lines().nth(line.saturating_sub(1)) {
        let text = text.replace('\t', " ");
        out.push_str(&format!("\n | {text}\n | {}^", ".".repeat(column)));
    }
    out
}

/// The (line, column) just after `text`, which starts at `at`.
pub fn step_over(at: (usize, usize), text: &[char]) -> (usize, usize) {
    text.iter().fold(at, |(line, column), c| {
        if *c == '\n' {
            (line + 1, 0)
        } else {
            (line, column + 1)
        }
    })
}

/// One token of interest: an identifier, with whether a `.` (or `?.`) selects it.
struct Word {
    text: String,
    /// Where the selecting `.` is, if any.
    dot: Option<(usize, usize)>,
    /// Where the identifier starts.
    at: (usize, usize),
}

/// The identifiers of `source` outside string literals, in order.
fn words(source: &str) -> Vec<Word> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let (mut line, mut column) = (1usize, 0usize);
    let mut quote: Option<char> = None;
    let mut dot: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let here = (line, column);
        let mut advance = 1;
        if let Some(q) = quote {
            if c == '\\' {
                advance = 2;
            } else if c == q {
                quote = None;
            }
        } else if c == '"' || c == '\'' {
            quote = Some(c);
            dot = None;
        } else if c == '.' {
            dot = Some(here);
        } else if c.is_alphabetic() || c == '_' {
            let len = chars[i..]
                .iter()
                .take_while(|c| c.is_alphanumeric() || **c == '_')
                .count();
            out.push(Word {
                text: chars[i..i + len].iter().collect(),
                dot: dot.take(),
                at: here,
            });
            advance = len;
        } else if c.is_numeric() {
            // A number (`1.5`) is neither an identifier nor a selection.
            advance = chars[i..]
                .iter()
                .take_while(|c| c.is_alphanumeric() || **c == '.')
                .count();
            dot = None;
        } else if !c.is_whitespace() && c != '?' {
            dot = None;
        }
        (line, column) = step_over((line, column), &chars[i..(i + advance).min(chars.len())]);
        i += advance;
    }
    out
}

/// Where the first use of the variable `name` (an identifier not selected by a `.`) starts.
pub fn ident_position(source: &str, name: &str) -> Option<(usize, usize)> {
    words(source)
        .into_iter()
        .find(|w| w.text == name && w.dot.is_none())
        .map(|w| w.at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_skip_strings_and_numbers() {
        assert_eq!(ident_position("params.x == 1", "params"), Some((1, 0)));
        assert_eq!(
            ident_position("object.params == 1.5 && params.x", "params"),
            Some((1, 24))
        );
        assert_eq!(ident_position("'params' == p", "params"), None);
    }

    #[test]
    fn errors_read_as_cel_go_prints_them() {
        assert_eq!(
            error_at(
                "params.x == 1",
                (1, 0),
                "undeclared reference to 'params' (in container '')"
            ),
            "ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n | params.x == 1\n | ^"
        );
        assert_eq!(
            error_at("self.foo == 1", (1, 4), "undefined field 'foo'"),
            "ERROR: <input>:1:5: undefined field 'foo'\n | self.foo == 1\n | ....^"
        );
    }
}
