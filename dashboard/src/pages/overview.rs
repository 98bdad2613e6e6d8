//! The fleet overview: counts by state (each a filter), then one page of the cluster table,
//! filtered, sorted and paged on the server so that 10,000 clusters cost one page of rows.
//!
//! Query: `q` (filter text: a substring of name, set, version or taint, or `label=value`),
//! `state` (a [`ClusterState`] key), `sort` (a [`SortKey`] value), `dir` (`desc`), `page`
//! (from 1), `per` (rows per page, at most [`MAX_PER_PAGE`]).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{Page, Section, notices, pager};
use crate::cache::{Kind, Snapshot};
use crate::clusters::{ClusterRow, ClusterState, SortKey, sort_rows};
use crate::html::{age_element, badge, esc, path_segment, status_badge};
use crate::query::Query;

/// Rows per page unless `per` says otherwise.
pub const PER_PAGE: usize = 100;
/// The most rows one page shows.
pub const MAX_PER_PAGE: usize = 1000;

/// Kinds the overview shows.
pub const KINDS: [Kind; 1] = [Kind::Clusters];

/// The overview's filter form (outside the live part, so typing is not interrupted).
pub fn toolbar(query: &Query) -> String {
    let mut hidden = String::new();
    for key in ["state", "sort", "dir"] {
        if let Some(value) = query.get(key) {
            let _ = write!(
                hidden,
                "<input type=\"hidden\" name=\"{key}\" value=\"{}\">",
                esc(value)
            );
        }
    }
    let per = query.number("per", PER_PAGE);
    let mut options = String::new();
    for n in [50, PER_PAGE, 500, MAX_PER_PAGE] {
        let selected = if n == per { " selected" } else { "" };
        let _ = write!(options, "<option value=\"{n}\"{selected}>{n}</option>");
    }
    format!(
        "<form class=\"toolbar\" method=\"get\" action=\"/\" role=\"search\">\
<label for=\"filter\">Filter clusters</label>\
<input id=\"filter\" name=\"q\" type=\"search\" value=\"{}\" \
placeholder=\"name, set, version, taint or label=value\" autocomplete=\"off\" \
aria-keyshortcuts=\"/\">{hidden}\
<label for=\"per\">Rows per page</label><select id=\"per\" name=\"per\">{options}</select>\
<button type=\"submit\">Filter</button></form>",
        esc(query.get("q").unwrap_or_default())
    )
}

/// The overview page.
pub fn render(snapshot: &Snapshot, query: &Query) -> Page {
    let filter = query.get("q").unwrap_or_default();
    let state_filter = query.get("state").and_then(ClusterState::parse);
    let sort = SortKey::parse(query.get("sort").unwrap_or("name"));
    let descending = query.get("dir") == Some("desc");
    let per = query.number("per", PER_PAGE).clamp(1, MAX_PER_PAGE);

    // Counts are over the text filter, so they say what each state filter would show.
    let mut counts: BTreeMap<ClusterState, usize> = BTreeMap::new();
    let mut rows = Vec::new();
    let mut tainted = 0;
    for cluster in &snapshot.clusters {
        let row = ClusterRow::of(cluster);
        if !row.matches(cluster, filter) {
            continue;
        }
        *counts.entry(row.state).or_default() += 1;
        if !row.taints.is_empty() {
            tainted += 1;
        }
        if state_filter.is_none_or(|s| s == row.state) {
            rows.push(row);
        }
    }
    let total: usize = counts.values().sum();
    sort_rows(&mut rows, sort, descending);
    let pages = rows.len().div_ceil(per).max(1);
    let page = query.number("page", 1).clamp(1, pages);
    let first = (page - 1) * per;
    let shown = &rows[first.min(rows.len())..(first + per).min(rows.len())];

    let mut body = notices(snapshot, &KINDS);
    body.push_str("<section aria-label=\"Clusters by state\" class=\"counts\">");
    let _ = write!(
        body,
        "<a class=\"count{}\" href=\"{}\"><span class=\"n\">{total}</span> clusters</a>",
        if state_filter.is_none() {
            " selected"
        } else {
            ""
        },
        esc(&without_page(query, "state", ""))
    );
    for state in ClusterState::ALL {
        let n = counts.get(&state).copied().unwrap_or(0);
        let selected = if state_filter == Some(state) {
            " selected"
        } else {
            ""
        };
        let _ = write!(
            body,
            "<a class=\"count{selected}\" href=\"{}\" data-state=\"{}\"><span class=\"n\">{n}</span> {}</a>",
            esc(&without_page(query, "state", state.key())),
            state.key(),
            badge(state.tone(), state.name())
        );
    }
    let _ = write!(
        body,
        "<span class=\"count\"><span class=\"n\">{tainted}</span> tainted</span></section>"
    );

    let mut table =
        String::from("<table id=\"clusters\"><caption>Managed clusters</caption><thead><tr>");
    for (key, value, title) in SortKey::ALL {
        let (aria, next_dir, arrow) = if key == sort {
            if descending {
                ("descending", "", " ▼")
            } else {
                ("ascending", "desc", " ▲")
            }
        } else {
            ("none", "", "")
        };
        let mut link_query = query.clone();
        link_query.0.insert("dir".into(), next_dir.into());
        link_query.0.remove("page");
        let _ = write!(
            table,
            "<th scope=\"col\" aria-sort=\"{aria}\"><a href=\"{}\">{title}{arrow}</a></th>",
            esc(&link_query.with("sort", value))
        );
        if key == SortKey::State {
            table.push_str("<th scope=\"col\">Joined</th><th scope=\"col\">Available</th>");
        }
    }
    table.push_str("<th scope=\"col\">Taints</th></tr></thead><tbody>");
    for row in shown {
        let _ = write!(
            table,
            "<tr data-cluster=\"{name}\"><th scope=\"row\"><a href=\"/clusters/{path}\">{name}</a></th>\
<td>{state}</td><td>{joined}</td><td>{available}</td><td>{version}</td><td>{cpu}</td><td>{memory}</td>\
<td>{set}</td><td>{age}</td><td>{taints}</td></tr>",
            name = esc(&row.name),
            path = path_segment(&row.name),
            state = badge(row.state.tone(), row.state.name()),
            joined = status_badge(&row.joined, false),
            available = status_badge(&row.available, false),
            version = esc(&row.version),
            cpu = esc(&row.cpu),
            memory = esc(&row.memory),
            set = esc(&row.set),
            age = age_element(snapshot.now, row.created),
            taints = row
                .taints
                .iter()
                .map(|t| format!("<code>{}</code>", esc(t)))
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
    if snapshot.clusters.is_empty() {
        table.push_str(
            "<tr><td colspan=\"10\" class=\"muted\">No cluster has asked to join yet: \
             run <code>ocm init</code> against this hub, then the <code>ocm join</code> \
             command it prints on a cluster.</td></tr>",
        );
    } else if shown.is_empty() {
        table.push_str("<tr><td colspan=\"10\" class=\"muted\">No cluster matches.</td></tr>");
    }
    table.push_str("</tbody></table>");
    body.push_str(&table);

    let summary = format!(
        "Showing {}–{} of {}",
        if shown.is_empty() { 0 } else { first + 1 },
        first + shown.len(),
        rows.len()
    );
    body.push_str(&pager(query, page, pages, &summary));

    Page {
        toolbar: toolbar(query),
        ..Page::new("Clusters", Section::Clusters, &KINDS, body)
    }
}

/// `query` with `key` set to `value` and the page reset.
fn without_page(query: &Query, key: &str, value: &str) -> String {
    let mut query = query.clone();
    query.0.remove("page");
    query.with(key, value)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;

    fn snapshot(n: usize) -> Snapshot {
        let clusters = (0..n)
            .map(|i| {
                let available = if i % 10 == 0 { "Unknown" } else { "True" };
                Arc::new(crate::clusters::tests::cluster(
                    &format!("c{i:05}"),
                    true,
                    available,
                    "8",
                ))
            })
            .collect();
        Snapshot {
            clusters,
            now: "2026-01-02T00:00:00Z".parse().unwrap(),
            ..Snapshot::default()
        }
    }

    #[test]
    fn counts_by_state_and_pages_the_table() {
        let page = render(&snapshot(250), &Query::default());
        assert!(page.body.contains("<span class=\"n\">250</span> clusters"));
        assert!(
            page.body
                .contains("data-state=\"unknown\"><span class=\"n\">25</span>")
        );
        assert!(page.body.contains("Showing 1–100 of 250"));
        assert_eq!(page.body.matches("<tr data-cluster=").count(), 100);
        assert!(page.body.contains("rel=\"next\""));
        assert!(!page.body.contains("rel=\"prev\""));

        let last = render(&snapshot(250), &Query::parse("page=3"));
        assert!(last.body.contains("Showing 201–250 of 250"));
        assert!(last.body.contains("Page 3 of 3"));
    }

    #[test]
    fn filters_by_state_and_text_and_sorts() {
        let page = render(
            &snapshot(30),
            &Query::parse("state=unknown&sort=name&dir=desc"),
        );
        let names: Vec<&str> = page
            .body
            .split("<tr data-cluster=\"")
            .skip(1)
            .map(|s| s.split('"').next().unwrap())
            .collect();
        assert_eq!(names, ["c00020", "c00010", "c00000"]);
        assert!(page.body.contains("aria-sort=\"descending\""));

        let page = render(&snapshot(30), &Query::parse("q=c0001"));
        assert_eq!(page.body.matches("<tr data-cluster=").count(), 10);
        assert!(page.toolbar.contains("value=\"c0001\""));

        let none = render(&snapshot(3), &Query::parse("q=nothing"));
        assert!(none.body.contains("No cluster matches."));
        let empty = render(&snapshot(0), &Query::default());
        assert!(empty.body.contains("No cluster has asked to join yet"));
    }

    #[test]
    fn names_are_escaped() {
        let mut s = snapshot(1);
        s.clusters = vec![Arc::new(crate::clusters::tests::cluster(
            "<script>", true, "True", "1",
        ))];
        let page = render(&s, &Query::default());
        assert!(!page.body.contains("<script>"));
        assert!(page.body.contains("&lt;script&gt;"));
    }
}
