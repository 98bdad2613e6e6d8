//! The pages: pure functions from a cache [`Snapshot`] and the request's query to HTML. Each
//! page has a live part (re-rendered and swapped in by the page's script when one of its kinds
//! changes) and a frame around it (navigation, filters) that stays put while one types.

pub mod addons;
pub mod cluster;
pub mod join;
pub mod overview;
pub mod placements;
pub mod replicasets;

use std::fmt::Write;

use crate::cache::{Kind, Snapshot};
use crate::html::esc;

/// The sections of the navigation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// Fleet overview and cluster pages.
    Clusters,
    /// Join requests.
    JoinRequests,
    /// Placements.
    Placements,
    /// ManifestWorkReplicaSets.
    Rollouts,
    /// Addons.
    Addons,
}

impl Section {
    const ALL: [(Section, &'static str, &'static str); 5] = [
        (Section::Clusters, "/", "Clusters"),
        (Section::JoinRequests, "/join-requests", "Join requests"),
        (Section::Placements, "/placements", "Placements"),
        (Section::Rollouts, "/replicasets", "Rollouts"),
        (Section::Addons, "/addons", "Addons"),
    ];
}

/// A rendered page.
#[derive(Clone, Debug, PartialEq)]
pub struct Page {
    /// `<title>` and heading.
    pub title: String,
    /// Where it sits in the navigation.
    pub section: Section,
    /// HTML above the live part that is not re-rendered (filter forms).
    pub toolbar: String,
    /// The live part.
    pub body: String,
    /// The kinds whose changes re-render the live part.
    pub kinds: Vec<Kind>,
    /// HTTP status (404 for an object that does not exist).
    pub status: u16,
}

impl Page {
    /// A page with an empty toolbar and status 200.
    pub fn new(title: impl Into<String>, section: Section, kinds: &[Kind], body: String) -> Page {
        Page {
            title: title.into(),
            section,
            toolbar: String::new(),
            body,
            kinds: kinds.to_vec(),
            status: 200,
        }
    }
}

/// The whole document around `page`. `token` guards the page's forms.
pub fn layout(page: &Page, token: &str) -> String {
    let mut nav = String::new();
    for (section, href, label) in Section::ALL {
        let current = if section == page.section {
            " aria-current=\"page\""
        } else {
            ""
        };
        let _ = write!(nav, "<li><a href=\"{href}\"{current}>{label}</a></li>");
    }
    let kinds: Vec<&str> = page.kinds.iter().map(|k| k.name()).collect();
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"csrf-token\" content=\"{token}\">\
<title>{title} · ocm dashboard</title>\
<link rel=\"stylesheet\" href=\"/assets/app.css\">\
<script src=\"/assets/app.js\" defer></script></head>\
<body><a class=\"skip\" href=\"#live\">Skip to content</a>\
<header><span class=\"brand\">ocm</span><nav aria-label=\"Sections\"><ul>{nav}</ul></nav>\
<span id=\"live-status\" class=\"live-status\" role=\"status\">connecting…</span></header>\
<h1>{title}</h1>{toolbar}\
<main id=\"live\" tabindex=\"-1\" data-kinds=\"{kinds}\">{body}</main></body></html>\n",
        token = esc(token),
        title = esc(&page.title),
        toolbar = page.toolbar,
        kinds = kinds.join(","),
        body = page.body,
    )
}

/// Notices about the kinds a page shows: still loading, or failing to watch (a user may not
/// be allowed to see every kind).
pub fn notices(snapshot: &Snapshot, kinds: &[Kind]) -> String {
    let mut out = String::new();
    let loading: Vec<&str> = snapshot
        .loading
        .iter()
        .filter(|k| kinds.contains(k))
        .filter(|k| !snapshot.errors.iter().any(|(e, _)| e == *k))
        .map(|k| k.title())
        .collect();
    if !loading.is_empty() {
        let _ = write!(
            out,
            "<p class=\"notice\" role=\"status\">Loading {}…</p>",
            esc(&loading.join(", "))
        );
    }
    for (kind, error) in snapshot.errors.iter().filter(|(k, _)| kinds.contains(k)) {
        let _ = write!(
            out,
            "<p class=\"notice error\" role=\"alert\">Cannot watch {}: {}</p>",
            kind.title(),
            esc(error)
        );
    }
    out
}

/// Previous / next links and where we are; `summary` is shown first.
pub fn pager(query: &crate::query::Query, page: usize, pages: usize, summary: &str) -> String {
    let mut out = format!(
        "<nav class=\"pager\" aria-label=\"Pages\"><span>{}</span>",
        esc(summary)
    );
    if page > 1 {
        let _ = write!(
            out,
            " <a href=\"{}\" rel=\"prev\">Previous page</a>",
            esc(&query.with("page", &(page - 1).to_string()))
        );
    }
    if page < pages {
        let _ = write!(
            out,
            " <a href=\"{}\" rel=\"next\">Next page</a>",
            esc(&query.with("page", &(page + 1).to_string()))
        );
    }
    let _ = write!(out, " <span>Page {page} of {pages}</span></nav>");
    out
}

/// A small GET form filtering the clusters of a page by name (`q`).
pub fn cluster_filter(id: &str, value: &str) -> String {
    format!(
        "<form class=\"inline\" method=\"get\" role=\"search\"><label for=\"{id}\">\
Filter clusters</label> <input id=\"{id}\" name=\"q\" type=\"search\" value=\"{}\"> \
<button type=\"submit\">Filter</button></form>",
        esc(value)
    )
}

/// The page for a path that names nothing.
pub fn not_found(what: &str) -> Page {
    Page {
        status: 404,
        ..Page::new(
            "Not found",
            Section::Clusters,
            &[],
            format!("<p>{} not found.</p>", esc(what)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_marks_the_current_section_and_escapes_the_title() {
        let page = Page::new(
            "<x>",
            Section::Placements,
            &[Kind::Placements, Kind::Decisions],
            "body".into(),
        );
        let html = layout(&page, "tok");
        assert!(html.contains("<a href=\"/placements\" aria-current=\"page\">Placements</a>"));
        assert!(html.contains("<title>&lt;x&gt; · ocm dashboard</title>"));
        assert!(html.contains("data-kinds=\"placements,placementdecisions\""));
        assert!(html.contains("content=\"tok\""));
    }

    #[test]
    fn notices_name_loading_and_failing_kinds_of_the_page_only() {
        let snapshot = Snapshot {
            loading: vec![Kind::Clusters, Kind::Works, Kind::Leases],
            errors: vec![(Kind::Leases, "403 Forbidden".into())],
            ..Snapshot::default()
        };
        let html = notices(&snapshot, &[Kind::Clusters, Kind::Leases]);
        assert!(html.contains("Loading ManagedClusters…"));
        assert!(!html.contains("ManifestWorks"));
        assert!(html.contains("Cannot watch Leases: 403 Forbidden"));
    }
}
