//! YAML as kube-apiserver writes it: a JSON value converted the way sigs.k8s.io/yaml's
//! `JSONToYAML` converts it (go-yaml v2 reads the JSON and marshals the result).
//!
//! What that means for the text:
//! - the keys of every map are sorted with go-yaml v2's key order (runs of digits compare as
//!   numbers, letters sort after other characters);
//! - block style with 2-space indentation; a sequence that is the value of a map key is not
//!   indented under it (`key:\n- a`); empty maps and sequences are `{}` and `[]`;
//! - a string is written plain unless it would read back as something else (`"true"`, `"1"`,
//!   `""`, `"2026-01-02T03:04:05Z"`, `"1:20"`) or plain style cannot hold it; then single
//!   quotes, or double quotes with escapes (control characters, characters outside the Basic
//!   Multilingual Plane); strings with a line feed are literal blocks (`|`, `|-`, `|+`);
//! - plain and quoted strings are folded at spaces once a line passes 80 columns;
//! - integers as integers, other numbers as Go's `strconv.FormatFloat(f, 'g', -1, 64)`.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Number, Value};

/// Indentation step.
const BEST_INDENT: i64 = 2;
/// The column after which plain and quoted scalars are folded at a space.
const BEST_WIDTH: usize = 80;
/// The longest key written as a simple key (`key: value`); longer ones use `? key`.
const MAX_SIMPLE_KEY: usize = 128;

/// Why a value has no YAML form.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum YamlError {
    /// A string holds a character Go's JSON leaves unescaped and go-yaml's reader refuses
    /// (DEL, C1 controls other than NEL, U+FFFE, U+FFFF): kube's conversion fails there.
    #[error("yaml: control characters are not allowed")]
    ControlCharacters,
}

/// Writes a JSON value as kube-apiserver's YAML (one document, ending in a line break).
pub fn to_yaml(value: &Value) -> Result<String, YamlError> {
    if !readable(value) {
        return Err(YamlError::ControlCharacters);
    }
    let mut w = Writer::default();
    w.node(value, Ctx::default());
    // The implicit document end.
    w.write_indent();
    Ok(w.out)
}

/// A string as go-yaml reads it back from Go's JSON. Go leaves NEL (U+0085) unescaped, and
/// go-yaml's double-quoted scalars fold line breaks: one NEL with the spaces around it
/// becomes a space, several become line feeds (one fewer).
fn fold_nel(s: &str) -> Cow<'_, str> {
    if !s.contains('\u{85}') {
        return Cow::Borrowed(s);
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        while i < chars.len() && chars[i] != ' ' && chars[i] != '\u{85}' {
            out.push(chars[i]);
            i += 1;
        }
        let mut spaces = 0;
        let mut breaks = 0;
        while i < chars.len() && (chars[i] == ' ' || chars[i] == '\u{85}') {
            if chars[i] == '\u{85}' {
                breaks += 1;
            } else if breaks == 0 {
                spaces += 1;
            }
            i += 1;
        }
        match breaks {
            0 => out.extend(std::iter::repeat_n(' ', spaces)),
            1 => out.push(' '),
            n => out.extend(std::iter::repeat_n('\n', n - 1)),
        }
    }
    Cow::Owned(out)
}

/// Whether go-yaml can read the value as Go's JSON writes it.
fn readable(value: &Value) -> bool {
    let text_ok = |s: &str| {
        !s.chars()
            .any(|c| matches!(u32::from(c), 0x7f..=0x84 | 0x86..=0x9f | 0xfffe | 0xffff))
    };
    match value {
        Value::String(s) => text_ok(s),
        Value::Array(items) => items.iter().all(readable),
        Value::Object(map) => map.iter().all(|(k, v)| text_ok(k) && readable(v)),
        _ => true,
    }
}

/// Where a node is written (go-yaml's emitter contexts that affect the output).
#[derive(Clone, Copy, Default)]
struct Ctx {
    /// The node is a mapping's key or value.
    mapping: bool,
    /// The node is a simple key (`key:`).
    simple_key: bool,
}

/// How a scalar is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

/// The emitter's state, as go-yaml's emitter tracks it.
struct Writer {
    out: String,
    /// Characters written on the current line.
    column: usize,
    /// The current indentation (-1 before the root node).
    indent: i64,
    indents: Vec<i64>,
    /// The last character written was whitespace (or nothing yet on this line).
    whitespace: bool,
    /// Only indentation was written on the current line so far.
    indention: bool,
}

impl Default for Writer {
    fn default() -> Self {
        Writer {
            out: String::new(),
            column: 0,
            indent: -1,
            indents: Vec::new(),
            whitespace: true,
            indention: true,
        }
    }
}

impl Writer {
    fn node(&mut self, value: &Value, ctx: Ctx) {
        match value {
            Value::Object(map) if map.is_empty() => self.empty_flow("{", "}"),
            Value::Array(items) if items.is_empty() => self.empty_flow("[", "]"),
            Value::Object(map) => self.mapping(map),
            Value::Array(items) => self.sequence(items, ctx),
            Value::Null => self.scalar("null", Style::Plain, ctx),
            Value::Bool(b) => self.scalar(if *b { "true" } else { "false" }, Style::Plain, ctx),
            Value::Number(n) => self.scalar(&number(n), Style::Plain, ctx),
            Value::String(s) => {
                let s = fold_nel(s);
                self.scalar(&s, string_style(&s), ctx);
            }
        }
    }

    fn empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.write_indicator(close, false, false, false);
    }

    fn mapping(&mut self, map: &Map<String, Value>) {
        self.increase_indent(false, false);
        let mut entries: Vec<(Cow<'_, str>, &Value)> =
            map.iter().map(|(k, v)| (fold_nel(k), v)).collect();
        entries.sort_by(|(a, _), (b, _)| key_order(a, b));
        for (key, value) in entries {
            let key = key.as_ref();
            self.write_indent();
            let style = string_style(key);
            let simple = !analyze(key).multiline && key.len() <= MAX_SIMPLE_KEY;
            if simple {
                let key_ctx = Ctx {
                    mapping: true,
                    simple_key: true,
                };
                self.scalar(key, style, key_ctx);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.scalar(
                    key,
                    style,
                    Ctx {
                        mapping: true,
                        simple_key: false,
                    },
                );
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(
                value,
                Ctx {
                    mapping: true,
                    simple_key: false,
                },
            );
        }
        self.pop_indent();
    }

    fn sequence(&mut self, items: &[Value], ctx: Ctx) {
        let indentless = ctx.mapping && !self.indention;
        self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, Ctx::default());
        }
        self.pop_indent();
    }

    fn scalar(&mut self, text: &str, requested: Style, ctx: Ctx) {
        let analysis = analyze(text);
        let style = select_style(requested, &analysis, ctx, text.is_empty());
        self.increase_indent(true, false);
        let allow_breaks = !ctx.simple_key;
        match style {
            Style::Plain => self.write_plain_or_single_quoted(text, allow_breaks, false),
            Style::SingleQuoted => self.write_plain_or_single_quoted(text, allow_breaks, true),
            Style::DoubleQuoted => self.write_double_quoted(text, allow_breaks),
            Style::Literal => self.write_literal(text),
        }
        self.pop_indent();
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = usize::try_from(self.indent.max(0)).unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for c in indicator.chars() {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    /// A plain or single-quoted scalar: folded at a single space past the best width (never
    /// at its first or last character), line breaks kept (a line feed written twice, as one
    /// alone would read back as a space).
    fn write_plain_or_single_quoted(&mut self, text: &str, allow_breaks: bool, quoted: bool) {
        if quoted {
            self.write_indicator("'", true, false, false);
        } else if !self.whitespace {
            self.put(' ');
        }
        let chars: Vec<char> = text.chars().collect();
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_space = chars.get(i + 1) == Some(&' ');
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                    && !next_space
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                if c == '\n' && !breaks {
                    self.put_break();
                }
                let mut after_break = breaks;
                if quoted && c == '\'' {
                    if breaks {
                        self.write_indent();
                    }
                    self.put('\'');
                    after_break = false;
                }
                breaks = self.line_char(c, after_break);
                spaces &= breaks;
            }
        }
        if quoted {
            self.write_indicator("'", false, false, false);
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double_quoted(&mut self, text: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        // go-yaml escapes every character of a string that begins with a byte order mark.
        let bom = text.starts_with('\u{feff}');
        let chars: Vec<char> = text.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if bom || !is_printable(c) || is_break(c) || c == '"' || c == '\\' {
                self.write_escape(c);
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_escape(&mut self, c: char) {
        self.put('\\');
        let short = match c {
            '\0' => Some('0'),
            '\u{07}' => Some('a'),
            '\u{08}' => Some('b'),
            '\t' => Some('t'),
            '\n' => Some('n'),
            '\u{0b}' => Some('v'),
            '\u{0c}' => Some('f'),
            '\r' => Some('r'),
            '\u{1b}' => Some('e'),
            '"' => Some('"'),
            '\\' => Some('\\'),
            '\u{85}' => Some('N'),
            '\u{a0}' => Some('_'),
            '\u{2028}' => Some('L'),
            '\u{2029}' => Some('P'),
            _ => None,
        };
        if let Some(letter) = short {
            self.put(letter);
            return;
        }
        let code = u32::from(c);
        let (letter, digits) = match code {
            0..=0xff => ('x', 2),
            0x100..=0xffff => ('u', 4),
            _ => ('U', 8),
        };
        self.put(letter);
        for k in (0..digits).rev() {
            let digit = (code >> (k * 4)) & 0xf;
            self.put(char::from_digit(digit, 16).map_or('0', |d| d.to_ascii_uppercase()));
        }
    }

    fn write_literal(&mut self, text: &str) {
        self.write_indicator("|", true, false, false);
        let chars: Vec<char> = text.chars().collect();
        if chars.first().is_some_and(|&c| c == ' ' || is_break(c)) {
            self.write_indicator("2", false, false, false);
        }
        let last_is_break = chars.last().is_some_and(|&c| is_break(c));
        let chomp = if !last_is_break {
            Some("-")
        } else if chars.len() == 1 || chars.len() >= 2 && is_break(chars[chars.len() - 2]) {
            Some("+")
        } else {
            None
        };
        if let Some(chomp) = chomp {
            self.write_indicator(chomp, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for &c in &chars {
            breaks = self.line_char(c, breaks);
        }
    }

    /// One character of a scalar's lines: a break ends the line; the first other character
    /// after breaks is indented. Returns whether it was a break.
    fn line_char(&mut self, c: char, after_break: bool) -> bool {
        if is_break(c) {
            self.write_break(c);
            self.indention = true;
            return true;
        }
        if after_break {
            self.write_indent();
        }
        self.put(c);
        self.indention = false;
        false
    }
}

/// What the emitter learns from a scalar's text (go-yaml's scalar analysis; flow context
/// never applies, as only empty collections are written in flow style).
#[derive(Debug)]
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn analyze(text: &str) -> Analysis {
    if text.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let chars: Vec<char> = text.chars().collect();
    let mut block_indicators = text.starts_with("---") || text.starts_with("...");
    let mut line_breaks = false;
    let mut special_characters = false;
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    let last = chars.len() - 1;
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = chars.get(i + 1).is_none_or(|&n| n == ' ' || n == '\t');
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special_characters = true;
        }
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= i == last;
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= i == last;
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = c == ' ' || c == '\t' || c == '\0' || is_break(c);
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special_characters {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// The style the emitter settles on for a requested style.
fn select_style(requested: Style, a: &Analysis, ctx: Ctx, empty: bool) -> Style {
    let mut style = requested;
    if ctx.simple_key && a.multiline {
        style = Style::DoubleQuoted;
    }
    if style == Style::Plain && (!a.block_plain_allowed || empty && ctx.simple_key) {
        style = Style::SingleQuoted;
    }
    if style == Style::SingleQuoted && !a.single_quoted_allowed {
        style = Style::DoubleQuoted;
    }
    if style == Style::Literal && (!a.block_allowed || ctx.simple_key) {
        style = Style::DoubleQuoted;
    }
    style
}

/// The style go-yaml v2 asks for a string: literal with a line feed, plain when it reads back
/// as the same string, double-quoted otherwise.
fn string_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if reads_back_as_string(s) && !is_base60_float(s) {
        Style::Plain
    } else {
        Style::DoubleQuoted
    }
}

fn is_printable(c: char) -> bool {
    matches!(u32::from(c), 0x0a | 0x20..=0x7e | 0xa0..=0xd7ff | 0xe000..=0xfffd) && c != '\u{feff}'
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// Plain scalars go-yaml v2 resolves to a boolean, null, a float or the merge key.
const RESOLVED_WORDS: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no", "No",
    "NO", "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null", "NULL", ".nan",
    ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
];

static YAML_FLOAT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$").ok());
static DOT_FLOAT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^\.[0-9]+([eE][-+]?[0-9]+)?$").ok());
static BASE60_FLOAT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$").ok());

fn matches(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|re| re.is_match(s))
}

fn is_base60_float(s: &str) -> bool {
    s.starts_with(['+', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'])
        && s.contains(':')
        && matches(&BASE60_FLOAT, s)
}

/// Whether go-yaml v2 reads the string, written plain, back as a string (its `resolve`).
fn reads_back_as_string(s: &str) -> bool {
    let Some(first) = s.bytes().next() else {
        return false;
    };
    let hint = match first {
        b'+' | b'-' | b'0'..=b'9' => 'D',
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => 'M',
        b'.' => '.',
        _ => return true,
    };
    if RESOLVED_WORDS.contains(&s) {
        return false;
    }
    match hint {
        'M' => true,
        '.' => !(matches(&DOT_FLOAT, s) && s.parse::<f64>().is_ok_and(f64::is_finite)),
        _ => {
            if is_timestamp(s) {
                return false;
            }
            let plain = s.replace('_', "");
            let float =
                matches(&YAML_FLOAT, &plain) && plain.parse::<f64>().is_ok_and(f64::is_finite);
            !(float || is_go_integer(&plain))
        }
    }
}

/// Whether Go's `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` accepts the text.
fn is_go_integer(s: &str) -> bool {
    let (sign, rest) = match s.as_bytes().first() {
        Some(b'+') => (1, &s[1..]),
        Some(b'-') => (-1, &s[1..]),
        _ => (0, s),
    };
    let lower = rest.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if digits.is_empty() {
        return false;
    }
    let mut value: u128 = 0;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else {
            return false;
        };
        let Some(next) = value
            .checked_mul(u128::from(radix))
            .and_then(|v| v.checked_add(u128::from(d)))
        else {
            return false;
        };
        value = next;
    }
    match sign {
        0 => value <= u128::from(u64::MAX),
        1 => value <= i64::MAX as u128,
        _ => value <= 1u128 << 63,
    }
}

/// Whether go-yaml v2 reads the text as a timestamp (`2006-1-2`, `2006-1-2T15:4:5.9Z07:00`
/// with `T` or `t`, `2006-1-2 15:4:5.9`, as Go's `time.Parse` accepts them).
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let year: u32 = s[..4].parse().unwrap_or(0);
    let rest = &s[5..];
    let Some((month, rest)) = go_num(rest) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix('-') else {
        return false;
    };
    let Some((day, rest)) = go_num(rest) else {
        return false;
    };
    if !(1..=12).contains(&month) || day < 1 || day > days_in(month, year) {
        return false;
    }
    let Some(sep) = rest.chars().next() else {
        return true;
    };
    if !matches!(sep, 'T' | 't' | ' ') {
        return false;
    }
    let Some(rest) = clock(&rest[1..]) else {
        return false;
    };
    if sep == ' ' {
        return rest.is_empty();
    }
    if rest == "Z" {
        return true;
    }
    let z = rest.as_bytes();
    z.len() == 6
        && matches!(z[0], b'+' | b'-')
        && z[1..3].iter().all(u8::is_ascii_digit)
        && z[3] == b':'
        && z[4..6].iter().all(u8::is_ascii_digit)
        && rest[1..3].parse::<u32>().is_ok_and(|h| h <= 24)
        && rest[4..6].parse::<u32>().is_ok_and(|m| m <= 60)
}

/// `15:4:5` with an optional fraction; what follows.
fn clock(s: &str) -> Option<&str> {
    let (hour, rest) = go_num(s)?;
    let (minute, rest) = go_num(rest.strip_prefix(':')?)?;
    let (second, rest) = go_num(rest.strip_prefix(':')?)?;
    if hour >= 24 || minute >= 60 || second >= 60 {
        return None;
    }
    let b = rest.as_bytes();
    if b.len() >= 2 && matches!(b[0], b'.' | b',') && b[1].is_ascii_digit() {
        let digits = b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        return Some(&rest[1 + digits..]);
    }
    Some(rest)
}

/// One or two digits, as Go's time parser reads a non-padded field.
fn go_num(s: &str) -> Option<(u32, &str)> {
    let b = s.as_bytes();
    let n = b.iter().take(2).take_while(|c| c.is_ascii_digit()).count();
    if n == 0 {
        return None;
    }
    Some((s[..n].parse().ok()?, &s[n..]))
}

fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// go-yaml v2's order of string keys.
fn key_order(a: &str, b: &str) -> Ordering {
    if a == b {
        Ordering::Equal
    } else if key_less(a, b) {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

fn key_less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        // A zero after a non-zero digit continues a number rather than leading one.
        let zero = ar[i] == '0' || br[i] == '0';
        let continued = ar[..i]
            .iter()
            .rev()
            .take_while(|c| c.is_ascii_digit())
            .any(|&c| c != '0');
        let start = i64::from(zero && continued);
        let (an, ai) = digit_run(&ar, i, start);
        let (bn, bi) = digit_run(&br, i, start);
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// The number a run of ASCII digits from `from` makes, continuing `start` (wrapping as Go's
/// int64 does), and where the run ends.
fn digit_run(chars: &[char], from: usize, start: i64) -> (i64, usize) {
    let mut n = start;
    let mut end = from;
    while let Some(d) = chars.get(end).and_then(|c| c.to_digit(10)) {
        n = n.wrapping_mul(10).wrapping_add(i64::from(d));
        end += 1;
    }
    (n, end)
}

/// A JSON number as kube writes it in YAML: Go's JSON text read back by go-yaml v2 (an
/// integer when it fits 64 bits, else a float) and written by it.
fn number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f.fract() == 0.0 && f.abs() < 1e21 {
        // Go's JSON writes these without a fraction or exponent: go-yaml reads an integer.
        let text = format!("{f}");
        if let Ok(i) = text.parse::<i64>() {
            return i.to_string();
        }
        if let Ok(u) = text.parse::<u64>() {
            return u.to_string();
        }
    }
    go_format_g(f)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`: the shortest digits, with an exponent when it
/// is below -4 or at least 6.
fn go_format_g(f: f64) -> String {
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{fraction}e{exp_sign}{:02}", exp.abs());
    }
    let point = usize::try_from(exp + 1).unwrap_or(0);
    if exp < 0 {
        let zeros = "0".repeat(usize::try_from(-exp - 1).unwrap_or(0));
        return format!("{sign}0.{zeros}{digits}");
    }
    if digits.len() <= point {
        let zeros = "0".repeat(point - digits.len());
        return format!("{sign}{digits}{zeros}");
    }
    let (int, fraction) = digits.split_at(point);
    format!("{sign}{int}.{fraction}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn to_yaml(value: &Value) -> String {
        super::to_yaml(value).unwrap()
    }

    #[test]
    fn nel_folds_as_go_yaml_reads_it() {
        for (raw, read) in [
            ("a\u{85}b", "a b"),
            ("a \u{85}  b", "a b"),
            ("a\u{85}\u{85}b", "a\nb"),
            ("a\u{85} \u{85}\u{85}b", "a\n\nb"),
            ("a\u{85}", "a "),
            ("\u{85}", " "),
            ("a  b", "a  b"),
        ] {
            assert_eq!(fold_nel(raw), read, "{raw:?}");
        }
        assert_eq!(
            to_yaml(&json!({"k\u{85}": "x\u{85}\u{85}y"})),
            "'k ': |-\n  x\n  y\n"
        );
    }

    #[test]
    fn characters_go_yaml_cannot_read_are_an_error() {
        for bad in ["del\u{7f}", "c1\u{80}", "\u{9f}", "\u{fffe}", "\u{ffff}"] {
            assert_eq!(
                super::to_yaml(&json!({"a": [{ "k": bad }]})),
                Err(YamlError::ControlCharacters),
                "{bad:?}"
            );
            assert!(super::to_yaml(&json!({ bad: 1 })).is_err(), "{bad:?}");
        }
        // BOM and escaped controls are fine.
        assert_eq!(
            to_yaml(&json!({"k": "\u{feff}\u{1}"})),
            "k: \"\\uFEFF\\x01\"\n"
        );
    }

    #[test]
    fn objects_are_sorted_blocks_with_indentless_sequences() {
        let value = json!({
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {"name": "a", "labels": {"b": "1", "a": "x"}, "finalizers": ["f/1", "f/2"]},
            "data": {},
            "items": [],
            "list": [{"b": 1, "a": [1, [2, 3]]}, [], {}],
        });
        assert_eq!(
            to_yaml(&value),
            "apiVersion: v1\ndata: {}\nitems: []\nkind: ConfigMap\nlist:\n- a:\n  - 1\n  - - 2\n    - 3\n  b: 1\n- []\n- {}\nmetadata:\n  finalizers:\n  - f/1\n  - f/2\n  labels:\n    a: x\n    b: \"1\"\n  name: a\n"
        );
    }

    #[test]
    fn strings_are_quoted_when_they_would_read_back_otherwise() {
        let cases = [
            ("plain", "plain"),
            ("", "\"\""),
            ("true", "\"true\""),
            ("on", "\"on\""),
            ("Y", "\"Y\""),
            ("null", "\"null\""),
            ("~", "\"~\""),
            ("12", "\"12\""),
            ("-1.5e3", "\"-1.5e3\""),
            ("1_000", "\"1_000\""),
            ("0x1F", "\"0x1F\""),
            ("0b101", "\"0b101\""),
            ("09", "\"09\""),
            (".5", "\".5\""),
            (".inf", "\".inf\""),
            ("1:20", "\"1:20\""),
            ("2026-11-26T22:53:18Z", "\"2026-11-26T22:53:18Z\""),
            ("2026-11-26", "\"2026-11-26\""),
            ("2026-02-30", "2026-02-30"),
            ("2026-1-2 3:04:05.25", "\"2026-1-2 3:04:05.25\""),
            ("1.2.3", "1.2.3"),
            ("v1", "v1"),
            ("yesterday", "yesterday"),
            ("- x", "'- x'"),
            ("-x", "-x"),
            ("a: b", "'a: b'"),
            ("a:b", "a:b"),
            ("a #b", "'a #b'"),
            ("a#b", "a#b"),
            ("*", "'*'"),
            ("{x}", "'{x}'"),
            ("x{y}", "x{y}"),
            (" lead", "' lead'"),
            ("trail ", "'trail '"),
            ("it's", "it's"),
            ("'q'", "'''q'''"),
            ("---x", "'---x'"),
            ("tab\there", "\"tab\\there\""),
            ("é ok", "é ok"),
            ("smile \u{1F600}", "\"smile \\U0001F600\""),
            ("nel\u{85}", "'nel '"),
            ("bell\u{7}", "\"bell\\a\""),
            ("ls\u{2028}x", "'ls\u{2028}  x'"),
        ];
        for (s, want) in cases {
            assert_eq!(to_yaml(&json!({ "k": s })), format!("k: {want}\n"), "{s:?}");
        }
    }

    #[test]
    fn keys_follow_go_yaml_order_and_quoting() {
        let value = json!({"a10": 1, "a2": 2, "a_": 3, "aB": 4, "Z": 5, "true": 6, "": 7, "1": 8});
        assert_eq!(
            to_yaml(&value),
            "\"\": 7\n\"1\": 8\nZ: 5\na_: 3\na2: 2\na10: 1\naB: 4\n\"true\": 6\n"
        );
        let long = "k".repeat(129);
        assert_eq!(to_yaml(&json!({ &long: 1 })), format!("? {long}\n: 1\n"));
        assert_eq!(
            to_yaml(&json!({"a\nb": {"c": 1}})),
            "? |-\n  a\n  b\n: c: 1\n"
        );
    }

    #[test]
    fn multi_line_strings_are_literal_blocks() {
        let value = json!({"a": "x\ny", "b": "x\n", "c": "x\n\n", "d": "  x\ny", "e": "x \ny", "f": ["p\nq"]});
        assert_eq!(
            to_yaml(&value),
            "a: |-\n  x\n  y\nb: |\n  x\nc: |+\n  x\n\nd: |2-\n    x\n  y\ne: \"x \\ny\"\nf:\n- |-\n  p\n  q\n"
        );
    }

    #[test]
    fn long_strings_fold_at_spaces_after_80_columns() {
        let words = vec!["word"; 30].join(" ");
        let folded = to_yaml(&json!({ "description": words }));
        let lines: Vec<&str> = folded.lines().collect();
        // "description: " is 13 columns; the break replaces the first space past column 80.
        assert_eq!(lines[0].len(), 82);
        assert!(lines[1].starts_with("  word"));
        assert_eq!(lines.len(), 2);
        // Quoted strings fold too; a following space is escaped.
        let quoted = format!("{words} true:");
        let text = to_yaml(&json!({ "d": format!("'{quoted}") }));
        assert!(text.starts_with("d: '''word"), "{text}");
        assert!(text.contains("\n  word"), "{text}");
        let escaped = to_yaml(&json!({ "d": format!("\t{}", vec!["w"; 60].join("  ")) }));
        assert!(escaped.contains("\n  \\ w"), "{escaped}");
        // Keys never fold.
        let key = vec!["k"; 60].join(" ");
        assert_eq!(to_yaml(&json!({ &key: 1 })), format!("{key}: 1\n"));
    }

    #[test]
    fn numbers_read_back_as_go_writes_them() {
        let value = json!({"a": 1, "b": -2, "c": 1.5, "d": 1.0, "e": 1e20, "f": 1e21, "g": 1234567.5, "h": 0.0001, "i": 0.00001, "j": u64::MAX, "k": -0.0, "l": null, "m": false});
        assert_eq!(
            to_yaml(&value),
            "a: 1\nb: -2\nc: 1.5\nd: 1\ne: 1e+20\nf: 1e+21\ng: 1.2345675e+06\nh: 0.0001\ni: 1e-05\nj: 18446744073709551615\nk: 0\nl: null\nm: false\n"
        );
    }

    #[test]
    fn go_integers_follow_strconv() {
        for yes in [
            "0",
            "-0",
            "+7",
            "0x1f",
            "0o17",
            "017",
            "-0b11",
            "9223372036854775808",
        ] {
            assert!(is_go_integer(yes), "{yes}");
        }
        for no in [
            "",
            "+",
            "0x",
            "08",
            "-9223372036854775809",
            "+9223372036854775808",
            "1e3",
        ] {
            assert!(!is_go_integer(no), "{no}");
        }
    }
}
