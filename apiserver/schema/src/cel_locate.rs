//! Where each node of a parsed CEL expression is in its source, as cel-go places it: an
//! identifier or literal at its first character, a selection at its `.`, an operator at its
//! token (`>`, `&&`, `?`, `[`, `in`), a call at its `(`, a list or map literal at its `[` or
//! `{`, and what a macro builds (`has`, `all`, `map`…) at the macro's `(`.
//!
//! The `cel` crate's syntax tree keeps no positions, so the source is split into tokens here
//! and the tree is walked in source order, each node taking the next unused token of its
//! own kind. A node whose token is not found has no position.

use std::collections::HashMap;

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

/// A (1-based line, 0-based column in characters) place in the source.
pub(crate) type Position = (usize, usize);

/// What a token is, for matching it to the nodes that stand at it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    /// An identifier that is neither selected (`.x`) nor called (`x(`).
    Ident(String),
    /// The `.` of a selection or member call, with the name after it.
    Dot(String),
    /// The `(` of a call of `name`; `member` when a `.` precedes the name.
    Call { name: String, member: bool },
    /// A literal: number, string, bytes, `true`, `false`, `null`.
    Literal,
    /// An operator or bracket: `+`, `==`, `!`, `?`, `[`, `{`, `in`…
    Op(String),
    /// Anything no node stands at (`,`, `:`, `)`, grouping `(`…).
    Other,
}

struct Token {
    key: Key,
    at: Position,
}

const TWO_CHAR_OPS: [&str; 6] = ["==", "!=", "<=", ">=", "&&", "||"];

/// Split `source` into tokens (comments and whitespace dropped).
fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut raw: Vec<(String, bool, Position)> = Vec::new(); // (text, is_literal, at)
    let (mut line, mut column) = (1usize, 0usize);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let at = (line, column);
        let rest = &chars[i..];
        let len = if c.is_whitespace() {
            1
        } else if c == '/' && rest.get(1) == Some(&'/') {
            rest.iter().take_while(|c| **c != '\n').count()
        } else if let Some(n) = string_length(rest) {
            raw.push((String::new(), true, at));
            n
        } else if c.is_ascii_digit() || (c == '.' && rest.get(1).is_some_and(char::is_ascii_digit))
        {
            let n = number_length(rest);
            raw.push((String::new(), true, at));
            n
        } else if c.is_alphabetic() || c == '_' {
            let n = rest
                .iter()
                .take_while(|c| c.is_alphanumeric() || **c == '_')
                .count();
            let word: String = rest[..n].iter().collect();
            let literal = matches!(word.as_str(), "true" | "false" | "null");
            raw.push((word, literal, at));
            n
        } else {
            let two: String = rest.iter().take(2).collect();
            let n = if TWO_CHAR_OPS.contains(&two.as_str()) {
                2
            } else {
                1
            };
            raw.push((rest[..n].iter().collect(), false, at));
            n
        };
        let len = len.max(1);
        (line, column) =
            crate::cel_source::step_over((line, column), &chars[i..(i + len).min(chars.len())]);
        i += len;
    }
    let is_word = |t: &(String, bool, Position)| {
        !t.1 && t.0.starts_with(|c: char| c.is_alphabetic() || c == '_') && t.0 != "in"
    };
    let mut out = Vec::with_capacity(raw.len());
    for (n, token) in raw.iter().enumerate() {
        let before = n.checked_sub(1).map(|p| &raw[p]);
        let after = raw.get(n + 1);
        let text = token.0.as_str();
        let key = if token.1 {
            Key::Literal
        } else if is_word(token) {
            let selected = before.is_some_and(|b| b.0 == ".")
                || (before.is_some_and(|b| b.0 == "?") && n >= 2 && raw[n - 2].0 == ".");
            let called = after.is_some_and(|a| a.0 == "(");
            if selected || called {
                Key::Other
            } else {
                Key::Ident(token.0.clone())
            }
        } else if text == "." {
            // `.x` or the optional `.?x`.
            let name = match after {
                Some(a) if a.0 == "?" => raw.get(n + 2),
                other => other,
            };
            match name.filter(|t| is_word(t)) {
                Some(t) => Key::Dot(t.0.clone()),
                None => Key::Other,
            }
        } else if text == "(" {
            match before.filter(|b| is_word(b)) {
                Some(b) => Key::Call {
                    name: b.0.clone(),
                    member: n >= 2 && raw[n - 2].0 == ".",
                },
                None => Key::Other,
            }
        } else if matches!(text, "," | ":" | ")" | "]" | "}") {
            Key::Other
        } else {
            Key::Op(token.0.clone())
        };
        out.push(Token { key, at: token.2 });
    }
    out
}

/// The length of the string or bytes literal `rest` starts with, if it starts with one.
fn string_length(rest: &[char]) -> Option<usize> {
    let prefix = rest
        .iter()
        .take(2)
        .take_while(|c| matches!(c, 'r' | 'R' | 'b' | 'B'))
        .count();
    let quote = *rest.get(prefix)?;
    if quote != '"' && quote != '\'' {
        return None;
    }
    let raw = rest[..prefix].iter().any(|c| *c == 'r' || *c == 'R');
    let triple = rest.get(prefix + 1) == Some(&quote) && rest.get(prefix + 2) == Some(&quote);
    let open = if triple { 3 } else { 1 };
    let mut i = prefix + open;
    while i < rest.len() {
        if rest[i] == '\\' && !raw {
            i += 2;
            continue;
        }
        if rest[i] == quote && (!triple || rest[i..].iter().take(3).all(|c| *c == quote)) {
            return Some(i + open);
        }
        i += 1;
    }
    Some(rest.len())
}

/// The length of the number `rest` starts with (`12`, `0x1f`, `1.5e-3`, `3u`).
fn number_length(rest: &[char]) -> usize {
    let mut i = 0;
    if rest.len() > 1 && rest[0] == '0' && matches!(rest[1], 'x' | 'X') {
        i = 2;
        while i < rest.len() && rest[i].is_ascii_hexdigit() {
            i += 1;
        }
    } else {
        while i < rest.len() && rest[i].is_ascii_digit() {
            i += 1;
        }
        if rest.get(i) == Some(&'.') && rest.get(i + 1).is_some_and(char::is_ascii_digit) {
            i += 1;
            while i < rest.len() && rest[i].is_ascii_digit() {
                i += 1;
            }
        }
        if matches!(rest.get(i), Some('e' | 'E')) {
            let sign = usize::from(matches!(rest.get(i + 1), Some('+' | '-')));
            if rest.get(i + 1 + sign).is_some_and(char::is_ascii_digit) {
                i += 1 + sign;
                while i < rest.len() && rest[i].is_ascii_digit() {
                    i += 1;
                }
            }
        }
    }
    if matches!(rest.get(i), Some('u' | 'U')) {
        i += 1;
    }
    i
}

/// The token an operator's function name stands at.
fn operator_token(function: &str) -> Option<&'static str> {
    Some(match function {
        "_+_" => "+",
        "_-_" | "-_" => "-",
        "_*_" => "*",
        "_/_" => "/",
        "_%_" => "%",
        "_==_" => "==",
        "_!=_" => "!=",
        "_<_" => "<",
        "_<=_" => "<=",
        "_>_" => ">",
        "_>=_" => ">=",
        "_&&_" => "&&",
        "_||_" => "||",
        "!_" => "!",
        "_?_:_" => "?",
        "_[_]" | "_[?_]" => "[",
        "@in" => "in",
        _ => return None,
    })
}

/// The parts of a macro's comprehension the author wrote, in source order, and the name the
/// macro was called by (`all`, `exists`, `exists_one`, `map`, `filter`).
pub(crate) fn macro_parts(
    c: &kube_cel::cel::common::ast::ComprehensionExpr,
) -> Option<(&'static str, Vec<&IdedExpr>)> {
    let Expr::Call(step) = &c.loop_step.expr else {
        return None;
    };
    let is_accu = |e: &IdedExpr| matches!(&e.expr, Expr::Ident(n) if *n == c.accu_var);
    let args = &step.args;
    match (&c.accu_init.expr, step.func_name.as_str(), args.as_slice()) {
        (Expr::Literal(LiteralValue::Boolean(_)), "_&&_", [a, pred]) if is_accu(a) => {
            Some(("all", vec![pred]))
        }
        (Expr::Literal(LiteralValue::Boolean(_)), "_||_", [a, pred]) if is_accu(a) => {
            Some(("exists", vec![pred]))
        }
        (Expr::Literal(LiteralValue::Int(_)), "_?_:_", [pred, _, a]) if is_accu(a) => {
            Some(("exists_one", vec![pred]))
        }
        (Expr::List(_), "_+_", [a, list]) if is_accu(a) => match &list.expr {
            Expr::List(l) if l.elements.len() == 1 => Some(("map", vec![&l.elements[0]])),
            _ => None,
        },
        (Expr::List(_), "_?_:_", [pred, add, a]) if is_accu(a) => {
            let Expr::Call(add) = &add.expr else {
                return None;
            };
            let Some(Expr::List(l)) = add.args.get(1).map(|e| &e.expr) else {
                return None;
            };
            let element = l.elements.first()?;
            if matches!(&element.expr, Expr::Ident(n) if *n == c.iter_var) {
                Some(("filter", vec![pred]))
            } else {
                Some(("map", vec![pred, element]))
            }
        }
        _ => None,
    }
}

/// Walks the tree in source order, taking tokens.
struct Locator {
    tokens: Vec<Token>,
    /// Per key, the index of the next token to consider.
    cursors: HashMap<Key, usize>,
    found: HashMap<u64, Position>,
}

impl Locator {
    /// Take the next unused token of `key`; its position.
    fn take(&mut self, key: Key) -> Option<Position> {
        let from = self.cursors.get(&key).copied().unwrap_or(0);
        let i = (from..self.tokens.len()).find(|i| self.tokens[*i].key == key)?;
        self.cursors.insert(key, i + 1);
        Some(self.tokens[i].at)
    }

    fn place(&mut self, id: u64, at: Option<Position>) {
        if let Some(at) = at {
            self.found.insert(id, at);
        }
    }

    fn walk(&mut self, e: &IdedExpr) {
        match &e.expr {
            Expr::Ident(name) => {
                let at = self.take(Key::Ident(name.clone()));
                self.place(e.id, at);
            }
            Expr::Literal(value) => {
                let negative = match value {
                    LiteralValue::Int(i) => i.inner() < &0,
                    LiteralValue::Double(d) => d.inner().is_sign_negative(),
                    _ => false,
                };
                let sign = negative.then(|| self.take(Key::Op("-".into()))).flatten();
                let at = self.take(Key::Literal);
                self.place(e.id, sign.or(at));
            }
            Expr::Select(sel) if sel.test => {
                // `has(x.f)`: the test stands at the macro's `(`.
                let at = self.take(Key::Call {
                    name: "has".into(),
                    member: false,
                });
                self.place(e.id, at);
                self.walk(&sel.operand);
                self.take(Key::Dot(sel.field.clone()));
            }
            Expr::Select(sel) => {
                self.walk(&sel.operand);
                let at = self.take(Key::Dot(sel.field.clone()));
                self.place(e.id, at);
            }
            Expr::Call(call) => self.call(e.id, call),
            Expr::Comprehension(c) => {
                self.walk(&c.iter_range);
                let parts = macro_parts(c);
                let name = parts.as_ref().map_or("", |(n, _)| *n);
                let at = self.take(Key::Call {
                    name: name.into(),
                    member: true,
                });
                self.place(e.id, at);
                self.take(Key::Ident(c.iter_var.clone()));
                for part in parts.map(|(_, p)| p).unwrap_or_default() {
                    self.walk(part);
                }
            }
            Expr::List(list) => {
                let at = self.take(Key::Op("[".into()));
                self.place(e.id, at);
                for item in &list.elements {
                    self.walk(item);
                }
            }
            Expr::Map(map) => {
                let at = self.take(Key::Op("{".into()));
                self.place(e.id, at);
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        self.walk(&m.key);
                        self.walk(&m.value);
                    }
                }
            }
            Expr::Struct(_) | Expr::Unspecified => {}
        }
    }

    fn call(&mut self, id: u64, call: &kube_cel::cel::common::ast::CallExpr) {
        let args = &call.args;
        match (operator_token(&call.func_name), args.as_slice()) {
            (Some(op), [only]) => {
                let at = self.take(Key::Op(op.into()));
                self.place(id, at);
                self.walk(only);
            }
            (Some(op), [first, rest @ ..]) => {
                self.walk(first);
                let at = self.take(Key::Op(op.into()));
                self.place(id, at);
                for arg in rest {
                    self.walk(arg);
                }
            }
            _ => {
                if let Some(target) = &call.target {
                    self.walk(target);
                }
                let at = self.take(Key::Call {
                    name: call.func_name.clone(),
                    member: call.target.is_some(),
                });
                self.place(id, at);
                for arg in args {
                    self.walk(arg);
                }
            }
        }
    }
}

/// The position of every node of `expression` (parsed from `source`) that could be placed.
pub(crate) fn locate(source: &str, expression: &IdedExpr) -> HashMap<u64, Position> {
    let mut locator = Locator {
        tokens: tokens(source),
        cursors: HashMap::new(),
        found: HashMap::new(),
    };
    locator.walk(expression);
    locator.found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn positions(source: &str) -> Vec<(String, Position)> {
        let program = kube_cel::cel::Program::compile(source).unwrap();
        let found = locate(source, program.expression());
        let mut out = Vec::new();
        fn describe(
            e: &IdedExpr,
            found: &HashMap<u64, Position>,
            out: &mut Vec<(String, Position)>,
        ) {
            let name = match &e.expr {
                Expr::Ident(n) => n.clone(),
                Expr::Select(s) => format!(".{}", s.field),
                Expr::Call(c) => c.func_name.clone(),
                Expr::Literal(_) => "lit".into(),
                Expr::List(_) => "list".into(),
                Expr::Map(_) => "map".into(),
                Expr::Comprehension(_) => "macro".into(),
                _ => "?".into(),
            };
            if let Some(at) = found.get(&e.id) {
                out.push((name, *at));
            }
            match &e.expr {
                Expr::Select(s) => describe(&s.operand, found, out),
                Expr::Call(c) => {
                    if let Some(t) = &c.target {
                        describe(t, found, out);
                    }
                    for a in &c.args {
                        describe(a, found, out);
                    }
                }
                Expr::Comprehension(c) => {
                    describe(&c.iter_range, found, out);
                    for p in macro_parts(c).map(|(_, p)| p).unwrap_or_default() {
                        describe(p, found, out);
                    }
                }
                Expr::List(l) => l.elements.iter().for_each(|x| describe(x, found, out)),
                _ => {}
            }
        }
        describe(program.expression(), &found, &mut out);
        out.sort_by_key(|(_, at)| *at);
        out
    }

    fn columns(source: &str) -> Vec<(String, usize)> {
        positions(source)
            .into_iter()
            .map(|(n, (_, c))| (n, c))
            .collect()
    }

    #[test]
    fn operators_selections_and_calls_stand_at_their_tokens() {
        assert_eq!(
            columns("self.a > 1 && 'x>y'.startsWith(self.b)"),
            [
                ("self".into(), 0),
                (".a".into(), 4),
                ("_>_".into(), 7),
                ("lit".into(), 9),
                ("_&&_".into(), 11),
                ("lit".into(), 14),
                ("startsWith".into(), 30),
                ("self".into(), 31),
                (".b".into(), 35),
            ]
        );
        assert_eq!(
            columns("-1 - -x"),
            [
                ("lit".into(), 0),
                ("_-_".into(), 3),
                ("-_".into(), 5),
                ("x".into(), 6)
            ]
        );
    }

    #[test]
    fn strings_numbers_and_comments_hide_their_insides() {
        assert_eq!(
            columns("'a\\'>' + r\"x>\" + \"y'>\" > 1.5e3 // x > y\n"),
            [
                ("lit".into(), 0),
                ("_+_".into(), 7),
                ("lit".into(), 9),
                ("_+_".into(), 15),
                ("lit".into(), 17),
                ("_>_".into(), 23),
                ("lit".into(), 25),
            ]
        );
    }

    #[test]
    fn macros_stand_at_their_paren_and_skip_the_variable() {
        assert_eq!(
            columns("l.all(x, x in [1]) || has(a.b)"),
            [
                ("l".into(), 0),
                ("macro".into(), 5),
                ("x".into(), 9),
                ("@in".into(), 11),
                ("list".into(), 14),
                ("lit".into(), 15),
                ("_||_".into(), 19),
                (".b".into(), 25),
                ("a".into(), 26),
            ]
        );
        assert_eq!(
            positions("a ?\n b : c[0]")[1..],
            [
                ("_?_:_".into(), (1, 2)),
                ("b".into(), (2, 1)),
                ("c".into(), (2, 5)),
                ("_[_]".into(), (2, 6)),
                ("lit".into(), (2, 7)),
            ]
        );
    }
}
