//! YAML bodies: decoding with repeated keys allowed (the later value wins, as in
//! kube-apiserver's YAML-to-JSON conversion), and the duplicate-key report of its strict
//! conversion (`yaml: unmarshal errors:` with one `line N: key "k" already set in map` per
//! repeated key, from the YAML v2 decoder).

use serde_json::Value;
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};

/// Decodes a YAML document into JSON; a repeated key's later value wins.
pub(crate) fn decode(text: &str) -> Result<Value, serde_saphyr::Error> {
    let mut options = serde_saphyr::Options::default();
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::LastWins;
    serde_saphyr::from_str_with_options(text, options)
}

/// A YAML node of the first document, reduced to what duplicate detection needs.
enum Node {
    Scalar {
        text: String,
        style: ScalarStyle,
        line: usize,
    },
    Seq {
        items: Vec<Node>,
    },
    Map {
        /// Keys and values, each value with its start line.
        entries: Vec<(Node, (Node, usize))>,
    },
    Other {
        line: usize,
    },
}

/// The line of a node as the YAML v2 decoder reports it (1-based start of the node).
fn line_of(node: &Node, start: usize) -> usize {
    match node {
        Node::Scalar { line, .. } | Node::Other { line } => *line,
        _ => start,
    }
}

/// The duplicate-key error of kube-apiserver's strict YAML conversion, or `None` when no
/// mapping repeats a key (or the text is not YAML it could read; decoding reports that).
pub(crate) fn duplicate_keys(text: &str) -> Option<String> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut root: Option<Node> = None;
    loop {
        let (event, span) = parser.next_event()?.ok()?;
        let line = span.start.line();
        let done = match event {
            Event::StreamEnd | Event::DocumentEnd => true,
            Event::Scalar(text, style, _, _) => push(
                &mut stack,
                &mut root,
                Node::Scalar {
                    text: text.into_owned(),
                    style,
                    line,
                },
                line,
            ),
            Event::Alias(_) => push(&mut stack, &mut root, Node::Other { line }, line),
            Event::SequenceStart(..) => {
                stack.push(Frame::Seq {
                    items: Vec::new(),
                    line,
                });
                false
            }
            Event::MappingStart(..) => {
                stack.push(Frame::Map {
                    entries: Vec::new(),
                    pending: None,
                    line,
                });
                false
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Frame::Seq { items, line }) => {
                    push(&mut stack, &mut root, Node::Seq { items }, line)
                }
                Some(Frame::Map { entries, line, .. }) => {
                    push(&mut stack, &mut root, Node::Map { entries }, line)
                }
                None => true,
            },
            _ => false,
        };
        if done {
            break;
        }
    }
    let root = root?;
    let mut errors = Vec::new();
    report(&root, &mut errors);
    if errors.is_empty() {
        return None;
    }
    Some(format!(
        "yaml: unmarshal errors:\n  {}",
        errors.join("\n  ")
    ))
}

/// An open collection while reading events. Map entries remember each value's start line.
enum Frame {
    Seq {
        items: Vec<Node>,
        line: usize,
    },
    Map {
        entries: Vec<(Node, (Node, usize))>,
        pending: Option<Node>,
        line: usize,
    },
}

/// Adds a finished node to the open collection; returns whether the document is complete.
fn push(stack: &mut [Frame], root: &mut Option<Node>, node: Node, line: usize) -> bool {
    match stack.last_mut() {
        None => {
            *root = Some(node);
            true
        }
        Some(Frame::Seq { items, .. }) => {
            items.push(node);
            false
        }
        Some(Frame::Map {
            entries, pending, ..
        }) => {
            match pending.take() {
                None => *pending = Some(node),
                Some(key) => entries.push((key, (node, line))),
            }
            false
        }
    }
}

/// Walks the tree as the YAML v2 decoder unmarshals it: a value's own errors come before the
/// error of its repeated key.
fn report(node: &Node, errors: &mut Vec<String>) {
    match node {
        Node::Seq { items } => {
            for item in items {
                report(item, errors);
            }
        }
        Node::Map { entries } => {
            let mut seen: Vec<String> = Vec::new();
            for (key, (value, start)) in entries {
                report(value, errors);
                let Some(shown) = key_repr(key) else {
                    continue;
                };
                if seen.contains(&shown) {
                    let line = line_of(value, *start);
                    errors.push(format!("line {line}: key {shown} already set in map"));
                } else {
                    seen.push(shown);
                }
            }
        }
        Node::Scalar { .. } | Node::Other { .. } => {}
    }
}

/// A mapping key as Go prints the decoded key with `%#v`: strings quoted, YAML 1.1 booleans,
/// integers and null bare. Non-scalar keys are not compared.
fn key_repr(key: &Node) -> Option<String> {
    let Node::Scalar { text, style, .. } = key else {
        return None;
    };
    if *style != ScalarStyle::Plain {
        return Some(crate::validation::go_quote(text));
    }
    let shown = match text.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => "<nil>".to_owned(),
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "true" | "True" | "TRUE" => {
            "true".to_owned()
        }
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" | "false" | "False" | "FALSE" => {
            "false".to_owned()
        }
        other => match parse_int(other) {
            Some(i) => i.to_string(),
            None => crate::validation::go_quote(other),
        },
    };
    Some(shown)
}

/// A YAML 1.1 integer (decimal, `0x` hex, `0b` binary, `_` separators).
fn parse_int(text: &str) -> Option<i64> {
    let cleaned = text.replace('_', "");
    let (negative, digits) = match cleaned.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, cleaned.strip_prefix('+').unwrap_or(&cleaned)),
    };
    let value = if let Some(hex) = digits.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()?
    } else if let Some(bin) = digits.strip_prefix("0b") {
        i64::from_str_radix(bin, 2).ok()?
    } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()?
    } else {
        return None;
    };
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn later_values_win() {
        let v = decode("a: 1\nb: {x: 1}\na: 2\n").unwrap();
        assert_eq!(v, json!({"a": 2, "b": {"x": 1}}));
    }

    /// The report for these `line N: key K already set in map` entries.
    fn report_of(entries: &[&str]) -> Option<String> {
        Some(format!(
            "yaml: unmarshal errors:\n  {}",
            entries.join("\n  ")
        ))
    }

    #[test]
    fn reports_repeated_keys_with_the_line_of_their_value() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\ndata:\n  k: v\ndata:\n  j: w\n";
        assert_eq!(
            duplicate_keys(text),
            report_of(&[
                "line 5: key \"name\" already set in map",
                "line 9: key \"data\" already set in map"
            ])
        );
        assert_eq!(duplicate_keys("a: 1\nb: 2\n"), None);
        assert_eq!(
            duplicate_keys("{\"a\": 1, \"a\": 2, \"1\": x, 1: y, 1: z}"),
            report_of(&[
                "line 1: key \"a\" already set in map",
                "line 1: key 1 already set in map"
            ])
        );
    }

    #[test]
    fn nested_errors_come_before_their_key() {
        assert_eq!(
            duplicate_keys("a:\n  x: 1\n  x: 2\na: 3\n"),
            report_of(&[
                "line 3: key \"x\" already set in map",
                "line 4: key \"a\" already set in map"
            ])
        );
    }
}
