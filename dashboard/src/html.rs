//! Small HTML pieces every page uses: escaping, ages, condition badges, tables. Badges always
//! carry their state as text; colour only repeats it.

use std::fmt::Write;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// `text` escaped for HTML text and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A duration as people read ages: `42s`, `5m`, `3h`, `12d`.
pub fn age(now: jiff::Timestamp, then: jiff::Timestamp) -> String {
    let seconds = now.as_second().saturating_sub(then.as_second()).max(0);
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// A `<time>` element showing the age of `then`, kept current by the page's script.
pub fn age_element(now: jiff::Timestamp, then: Option<jiff::Timestamp>) -> String {
    match then {
        Some(then) => format!(
            "<time datetime=\"{then}\" data-age title=\"{then}\">{}</time>",
            age(now, then)
        ),
        None => "<span class=\"muted\">—</span>".to_owned(),
    }
}

/// How a state looks: `good`, `bad`, `warn` or `idle` (the CSS class of its badge).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Healthy.
    Good,
    /// Failing.
    Bad,
    /// Unknown or in progress.
    Warn,
    /// Not applicable / waiting.
    Idle,
}

impl Tone {
    fn class(self) -> &'static str {
        match self {
            Tone::Good => "good",
            Tone::Bad => "bad",
            Tone::Warn => "warn",
            Tone::Idle => "idle",
        }
    }
}

/// A badge: the text is the state, the colour repeats it.
pub fn badge(tone: Tone, text: &str) -> String {
    format!(
        "<span class=\"badge {}\">{}</span>",
        tone.class(),
        esc(text)
    )
}

/// The condition of `type_` among `conditions`.
pub fn condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The status (`True`, `False`, `Unknown`) of condition `type_`, empty when absent.
pub fn condition_status<'a>(conditions: &'a [Condition], type_: &str) -> &'a str {
    condition(conditions, type_).map_or("", |c| c.status.as_str())
}

/// A badge for a condition whose `True` is good (`Available`, `Applied`, …); with
/// `true_is_bad`, for one whose `True` is bad (`Degraded`).
pub fn status_badge(status: &str, true_is_bad: bool) -> String {
    let tone = match (status, true_is_bad) {
        ("True", false) | ("False", true) => Tone::Good,
        ("True", true) | ("False", false) => Tone::Bad,
        ("Unknown", _) => Tone::Warn,
        _ => Tone::Idle,
    };
    let text = if status.is_empty() { "—" } else { status };
    badge(tone, text)
}

/// A table with a caption (visually hidden when `hidden_caption`), header cells with
/// `scope="col"` and already rendered row cells.
pub fn table(caption: &str, headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let _ = write!(out, "<table><caption>{}</caption><thead><tr>", esc(caption));
    for h in headers {
        let _ = write!(out, "<th scope=\"col\">{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    if rows.is_empty() {
        let _ = write!(
            out,
            "<tr><td colspan=\"{}\" class=\"muted\">None.</td></tr>",
            headers.len().max(1)
        );
    }
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// The conditions of an object as a table: type, status, reason, message, since.
pub fn conditions_table(caption: &str, conditions: &[Condition], now: jiff::Timestamp) -> String {
    let rows: Vec<Vec<String>> = conditions
        .iter()
        .map(|c| {
            vec![
                esc(&c.type_),
                status_badge(&c.status, is_bad_when_true(&c.type_)),
                esc(&c.reason),
                esc(&c.message),
                age_element(now, Some(c.last_transition_time.0)),
            ]
        })
        .collect();
    table(
        caption,
        &["Type", "Status", "Reason", "Message", "Since"],
        &rows,
    )
}

/// Whether `True` is the bad state of a condition type (`Degraded`, `…Misconfigured`, …).
pub fn is_bad_when_true(type_: &str) -> bool {
    ["Degraded", "Misconfigured", "Failed", "Denied", "Deleting"]
        .iter()
        .any(|bad| type_.contains(bad))
}

/// A link with an escaped label.
pub fn link(href: &str, label: &str) -> String {
    format!("<a href=\"{}\">{}</a>", esc(href), esc(label))
}

/// A path segment percent-encoded (names are DNS labels, but be safe).
pub fn path_segment(segment: &str) -> String {
    crate::query::encode(segment)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }

    #[test]
    fn ages_read_like_kubectl() {
        let now: jiff::Timestamp = "2026-01-02T00:00:00Z".parse().unwrap();
        let ago = |s: i64| now - jiff::SignedDuration::from_secs(s);
        assert_eq!(age(now, ago(5)), "5s");
        assert_eq!(age(now, ago(600)), "10m");
        assert_eq!(age(now, ago(3 * 3600)), "3h");
        assert_eq!(age(now, ago(5 * 86400)), "5d");
        // a clock slightly ahead is not a negative age
        assert_eq!(age(now, now + jiff::SignedDuration::from_secs(3)), "0s");
    }

    #[test]
    fn badges_say_their_state_in_words() {
        assert_eq!(
            status_badge("True", false),
            "<span class=\"badge good\">True</span>"
        );
        assert_eq!(
            status_badge("True", true),
            "<span class=\"badge bad\">True</span>"
        );
        assert_eq!(
            status_badge("", false),
            "<span class=\"badge idle\">—</span>"
        );
    }

    #[test]
    fn tables_have_headers_and_say_when_empty() {
        let html = table("Things", &["A", "B"], &[]);
        assert!(html.contains("<th scope=\"col\">A</th>"));
        assert!(html.contains("colspan=\"2\""));
        assert!(html.contains("None."));
    }
}
