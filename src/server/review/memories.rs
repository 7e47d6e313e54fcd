//! `GET /review/memories`: the memory owners (`userId`s) the viewer may read, and for one owner
//! every change to their memories in the order recorded: each version stored or superseded
//! (with its content, or that it is gone), soft deletes, and erasures with their reason. A
//! viewer reads the memories of the user ids it acts for; an auditor, everyone's (the tools'
//! rule, `app::call::access::may_read_memories_of`).
//!
//! Must not know: how the log is read (`read::memory_history`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use maud::html;

use super::Review;
use super::pages::{Viewer, layout, signed_in_view, unavailable, when};
use super::read::{self, actor_of};
use crate::app::call::access;
use crate::app::memory::history::MemoryChange;

pub(super) async fn page(
    State(review): State<Arc<Review>>,
    Viewer(viewer): Viewer,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let (viewer, app) = match signed_in_view(&review, viewer).await {
        Ok(both) => both,
        Err(response) => return response,
    };
    drop(app);
    let actor = actor_of(&viewer);
    let owner = query
        .get("user")
        .map(|u| u.trim().to_owned())
        .filter(|u| !u.is_empty());
    let may_read = move |user: &str| access::may_read_memories_of(&actor, user);
    let (history, events_read) =
        match read::memory_history(&review.ledger, may_read, owner.clone()).await {
            Ok(found) => found,
            Err(e) => return unavailable(&viewer, &e),
        };
    let mut by_memory: BTreeMap<&str, Vec<&MemoryChange>> = BTreeMap::new();
    for change in &history.changes {
        by_memory.entry(&change.memory_id).or_default().push(change);
    }
    let body = html! {
        h1 { "Memories" }
        p.note {
            "Memories whose owner (" code { "userId" } ") you may read: those you act for"
            " (an auditor: everyone's). Every version stays in the ledger until it is erased; "
            (events_read) " event(s) read."
        }
        table #owners {
            thead { tr { th { "Owner" } th { "Changes recorded" } } }
            tbody {
                @for (user, n) in &history.owners {
                    tr {
                        td { a href={ "/review/memories?user=" (urlencode(user)) } { code { (user) } } }
                        td { (n) }
                    }
                }
            }
        }
        @if let Some(owner) = &owner {
            h2 { "Memories of " code { (owner) } }
            @if by_memory.is_empty() {
                p.note { "No memory of this owner that you may read." }
            }
            @for (id, changes) in &by_memory {
                div.memory id={ "memory-" (id) } {
                    h3 { code { (id) } }
                    table.versions {
                        thead { tr { th { "Seq" } th { "Recorded" } th { "Change" } th { "Version" } th { "Content" } th { "Details" } th { "By" } } }
                        tbody {
                            @for c in changes {
                                tr class=(c.kind.to_lowercase()) {
                                    td {
                                        @match &c.session {
                                            Some(s) => a href={ "/review/session/" (s) "?seq=" (c.seq) "#call-" (c.seq) } { (c.seq) },
                                            None => (c.seq),
                                        }
                                    }
                                    td { (when(&c.recorded_at)) }
                                    td {
                                        @match c.kind.as_str() {
                                            "MemoryStored" => "stored",
                                            "MemorySuperseded" => "new version (the previous one superseded)",
                                            "MemorySoftDeleted" => "soft-deleted (hidden from retrieval)",
                                            "MemoryErased" => "erased (hard delete)",
                                            other => (other),
                                        }
                                        @if let Some(reason) = &c.reason { div.erased { "reason: " (reason) } }
                                    }
                                    td { @if let Some(v) = c.version { (v) } }
                                    td {
                                        @match &c.content {
                                            Some(Some(text)) => div.thought { (text) },
                                            Some(None) => span.erased { "[text erased]" },
                                            None => span.note { "unchanged" },
                                        }
                                    }
                                    td { (c.detail) }
                                    td { (c.principal) }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    layout("Memories", Some(&viewer), body).into_response()
}

/// `text` for a query string.
fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}
