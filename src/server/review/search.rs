//! `GET /review/search?q=…`: the texts of every session the viewer may see that hold the
//! searched words, with the words highlighted and a link to the call that recorded each; and
//! `GET /review/refusals` (auditors only): the latest refused, failed and cancelled calls of
//! every principal, counted by principal, so probes of what a caller may not read stand out.
//!
//! Who may see what is the tools' rule (`read::may_see`), applied to each hit's session. Must
//! not know: how the log is read (`read::search`, `read::refusals`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};

use super::Review;
use super::pages::{Viewer, layout, not_found, signed_in_view, unavailable, when};
use super::read::{self, MOST_HITS, MOST_REFUSALS, may_see};
use crate::tools::Role;

/// Characters shown either side of the first match in a hit.
const CONTEXT_CHARS: usize = 160;

/// Most words one search takes.
const MOST_WORDS: usize = 8;

/// `GET /review/search?q=…`.
pub(super) async fn search(
    State(review): State<Arc<Review>>,
    Viewer(viewer): Viewer,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let (viewer, app) = match signed_in_view(&review, viewer).await {
        Ok(both) => both,
        Err(response) => return response,
    };
    let raw = query
        .get("q")
        .map(|q| q.trim())
        .unwrap_or_default()
        .to_owned();
    let words: Vec<String> = raw.split_whitespace().map(str::to_lowercase).collect();
    let problem = if raw.is_empty() {
        None
    } else if words.len() > MOST_WORDS {
        Some(format!(
            "a search takes at most {MOST_WORDS} words; this one has {}",
            words.len()
        ))
    } else if words.iter().any(|w| w.chars().count() < 2) {
        Some("each word must be at least 2 characters long".to_owned())
    } else {
        None
    };
    let visible: HashMap<_, _> = app
        .state()
        .heads()
        .filter(|s| may_see(&viewer, s))
        .map(|s| (s.id.clone(), s.principal.clone()))
        .collect();
    drop(app);
    let found = if words.is_empty() || problem.is_some() {
        None
    } else {
        match read::search(&review.ledger, visible, words.clone()).await {
            Ok(found) => Some(found),
            Err(e) => return unavailable(&viewer, &e),
        }
    };
    let body = html! {
        h1 { "Search" }
        p.note {
            @if viewer.role == Role::Auditor { "Searches the texts of every principal's sessions." }
            @else { "Searches the texts of the sessions you started." }
            " Every word must occur in a text (case is ignored); erased texts are gone and never match."
        }
        form.filters #search method="get" action="/review/search" {
            div { label for="q" { "Words" } input #q name="q" value=(raw) size="40"; }
            div { button type="submit" { "Search" } }
        }
        @if let Some(problem) = &problem {
            p.refused #search-problem { (problem) }
        }
        @if let Some(found) = &found {
            p #search-summary {
                (found.hits.len()) " text(s) in "
                (found.hits.iter().map(|h| &h.session).collect::<std::collections::BTreeSet<_>>().len())
                " session(s)"
                @if found.truncated { ", the newest " (MOST_HITS) " shown" }
                "; " (found.events_read) " event(s) read."
            }
            table #hits {
                thead { tr { th { "Session" } th { "Principal" } th { "Call" } th { "Where" } th { "Text" } } }
                tbody {
                    @for hit in &found.hits {
                        tr {
                            td { a.session href={ "/review/session/" (hit.session) } { code { (hit.session) } } }
                            td { (hit.principal) }
                            td { a href={ "/review/session/" (hit.session) "?seq=" (hit.seq) "#call-" (hit.seq) } { "seq " (hit.seq) } " " code { (hit.tool) } }
                            td { code { (hit.field) } }
                            td { (highlighted(&hit.text, &words)) }
                        }
                    }
                }
            }
        }
    };
    layout("Search", Some(&viewer), body).into_response()
}

/// The part of `text` around the first match, each occurrence of a word marked.
fn highlighted(text: &str, words: &[String]) -> Markup {
    let chars: Vec<char> = text.chars().collect();
    let lower: Vec<char> = chars.iter().flat_map(|c| c.to_lowercase()).collect();
    // Lowercasing may change lengths (rare letters): then show the text unmarked.
    if lower.len() != chars.len() {
        return html! { div.thought { (text) } };
    }
    let mut marked = vec![false; chars.len()];
    for word in words {
        let w: Vec<char> = word.chars().collect();
        let mut at = 0;
        while at + w.len() <= lower.len() {
            if lower[at..at + w.len()] == w[..] {
                marked[at..at + w.len()].iter_mut().for_each(|m| *m = true);
                at += w.len();
            } else {
                at += 1;
            }
        }
    }
    let first = marked.iter().position(|m| *m).unwrap_or(0);
    let from = first.saturating_sub(CONTEXT_CHARS);
    let to = (first + CONTEXT_CHARS).min(chars.len());
    let mut runs: Vec<(bool, String)> = Vec::new();
    for i in from..to {
        match runs.last_mut() {
            Some((m, run)) if *m == marked[i] => run.push(chars[i]),
            _ => runs.push((marked[i], chars[i].to_string())),
        }
    }
    html! {
        div.thought {
            @if from > 0 { "…" }
            @for (is_match, run) in &runs {
                @if *is_match { mark { (run) } } @else { (run) }
            }
            @if to < chars.len() { "…" }
        }
    }
}

/// `GET /review/refusals`: auditors only; anyone else gets the one "not found" page.
pub(super) async fn refusals(
    State(review): State<Arc<Review>>,
    Viewer(viewer): Viewer,
) -> Response {
    let (viewer, app) = match signed_in_view(&review, viewer).await {
        Ok(both) => both,
        Err(response) => return response,
    };
    drop(app);
    if viewer.role != Role::Auditor {
        return not_found().await;
    }
    let (refused, read) = match read::refusals(&review.ledger).await {
        Ok(found) => found,
        Err(e) => return unavailable(&viewer, &e),
    };
    let mut by_principal: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    for r in &refused {
        *by_principal
            .entry(&r.principal)
            .or_default()
            .entry(&r.code)
            .or_default() += 1;
    }
    let body = html! {
        h1 { "Refused calls" }
        p.note {
            "The latest calls that were refused, failed or cancelled, of every principal (at most " (MOST_REFUSALS) ", newest first; "
            (read) " event(s) read). A call is recorded in its caller's session, never in the session it tried to reach."
        }
        h2 { "By principal" }
        table #refusals-by-principal {
            thead { tr { th { "Principal" } th { "Refusals" } th { "Codes" } } }
            tbody {
                @for (principal, codes) in &by_principal {
                    tr {
                        td { (principal) }
                        td { (codes.values().sum::<usize>()) }
                        td { @for (code, n) in codes { code { (code) } " ×" (n) " " } }
                    }
                }
            }
        }
        h2 { "Calls" }
        table #refusals {
            thead { tr { th { "Seq" } th { "Recorded" } th { "Principal" } th { "Tool" } th { "Code" } th { "Message" } th { "Session" } } }
            tbody {
                @for r in &refused {
                    tr.refused {
                        td { (r.seq) }
                        td { (when(&r.recorded_at)) }
                        td { (r.principal) }
                        td { code { (r.tool) } }
                        td { code { (r.code) } }
                        td { (r.message) }
                        td {
                            @match &r.session {
                                Some(s) => a.session href={ "/review/session/" (s) "#call-" (r.seq) } { code { (s) } },
                                None => span.note { "none" },
                            }
                        }
                    }
                }
            }
        }
    };
    layout("Refused calls", Some(&viewer), body).into_response()
}
