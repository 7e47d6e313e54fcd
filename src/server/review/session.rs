//! `GET /review/session/{id}`: one session for a reviewer: its status and counts, the thought
//! tree (SVG) and every thought with its tags, revision and branch marks and erasures, the
//! deliberation graph when the session has one, the timeline of every recorded call, the
//! export link and the diff form.
//!
//! Must not know: how the drawings are laid out (`svg`), how the viewer was authenticated.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};

use super::Review;
use super::calls::{self, erased_mark};
use super::pages::{Viewer, layout, no_such_session, signed_in_view, unavailable, when};
use super::read::{self, Erasure, may_see};
use super::svg;
use crate::events::SessionId;
use crate::projections::{Deliberation, DeliberationState, SessionHead, SessionStatus};

/// Most other sessions offered in the diff form's list.
const MOST_DIFF_CHOICES: usize = 200;

/// Most thoughts drawn in the thought tree; a longer session is listed page by page only.
const MOST_DRAWN_THOUGHTS: usize = 2_000;

pub(super) async fn page(
    State(review): State<Arc<Review>>,
    Viewer(viewer): Viewer,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let (viewer, app) = match signed_in_view(&review, viewer).await {
        Ok(both) => both,
        Err(response) => return response,
    };
    let state = app.state();
    // Not parsable, not there, or not the viewer's: one answer.
    let Some(head) = SessionId::parse(&id)
        .and_then(|id| state.head(&id))
        .filter(|s| may_see(&viewer, s))
    else {
        return no_such_session(&viewer);
    };
    // Pages count from 1 in the address; anything else is the first page.
    let page = query
        .get("page")
        .and_then(|p| p.trim().parse::<usize>().ok())
        .map_or(0, |p| p.saturating_sub(1));
    let at = query.get("seq").and_then(|s| s.trim().parse::<u64>().ok());
    let window = match read::call_window(&review.ledger, head.id.clone(), page, at).await {
        Ok(window) => window,
        Err(e) => return unavailable(&viewer, &e),
    };
    // The tree needs the whole session: drawn for sessions a page can hold.
    let drawn = if head.thought_count > 0 && head.thought_count <= MOST_DRAWN_THOUGHTS {
        match state.body(head) {
            Ok(session) => Some(session),
            Err(e) => return unavailable(&viewer, &e.to_string()),
        }
    } else {
        None
    };
    let deliberation = app.deliberations().get(&head.id);
    let mut erased = Vec::new();
    if let Some(d) = deliberation {
        erased.extend(
            std::iter::once(&d.goal)
                .chain(d.nodes.iter().map(|n| &n.content))
                .filter(|t| app.deliberations().text(t).is_none())
                .map(|t| t.commitment.clone()),
        );
    }
    let erasures = match read::erasure_reasons(&review.ledger, erased).await {
        Ok(erasures) => erasures,
        Err(e) => return unavailable(&viewer, &e),
    };
    let others: Vec<&SessionHead> = state
        .heads()
        .filter(|s| s.id != head.id && may_see(&viewer, s))
        .collect();
    let base = format!("/review/session/{}", head.id);
    let body = html! {
        h1 { "Session " code { (head.id) } }
        (overview(head, deliberation.is_some()))
        p {
            a #export href={ (base) "/export" } download { "Download the audit export (JSON)" }
            span.note { " — every event of the session with its inclusion proof to the latest signed checkpoint, signed by the ledger key; check it with "
                code { "thinkledger verify-export" } "." }
        }
        (since_checkpoint_form(&base))
        (diff_form(head, &others))
        h2 { "Thought tree" }
        @match &drawn {
            Some(session) => {
                div.diagram { (svg::thought_tree(session)) }
                p.note { "Top to bottom in recorded order; one column per line of thought (main, then each branch from its branch point); dashed arrows point from a revision to the thought it revises." }
            }
            None if head.thought_count == 0 => p.note { "No thoughts recorded." },
            None => p.note { "The tree is drawn for sessions of up to " (MOST_DRAWN_THOUGHTS) " thoughts; this one has " (head.thought_count) ". Its thoughts are listed below, a page of calls at a time." },
        }
        @if let Some(d) = deliberation {
            (deliberation_section(d, app.deliberations(), &erasures))
        }
        h2 #calls { "Calls" }
        p.note { "Every call recorded in this session, refused and cancelled ones included, in the order they were recorded. Open a row for what the call recorded: its arguments and facts, with each text as stored (or why it is gone); text a model wrote is marked as model output." }
        (calls::pager(&window, &base))
        h3 { "Thoughts on this page" }
        (calls::thoughts(&window, drawn.as_deref()))
        h3 { "Timeline" }
        (calls::calls(&window))
        (calls::pager(&window, &base))
    };
    layout(&format!("Session {}", head.id), Some(&viewer), body).into_response()
}

/// The form that asks for a checkpoint the reviewer kept, for an export that proves it extends
/// that checkpoint (`verify-export --since-checkpoint`).
fn since_checkpoint_form(base: &str) -> Markup {
    html! {
        details #since-checkpoint {
            summary { "Export since a checkpoint you kept" }
            form method="post" action={ (base) "/export" } {
                label for="checkpoint" { "Paste the signed checkpoint you kept (the text of " code { "thinkledger checkpoint" } ", or the " code { "checkpoint" } " of an earlier export)" }
                textarea #checkpoint name="checkpoint" rows="6" cols="80" required {}
                " "
                button type="submit" { "Download the export with its consistency proof" }
            }
            p.note { "Check it with " code { "thinkledger verify-export FILE --since-checkpoint KEPT" } ": it passes only if this ledger still extends what you kept." }
        }
    }
}

fn overview(session: &SessionHead, deliberation: bool) -> Markup {
    html! {
        table #overview {
            tr { th { "Principal" } td { (session.principal) } }
            tr {
                th { "Status" }
                td {
                    @match &session.status {
                        SessionStatus::Active => "active",
                        SessionStatus::Closed { at, reason, .. } => { "closed " (when(at)) ": " (reason) },
                    }
                }
            }
            tr { th { "Started" } td { (when(&session.started_at)) " (seq " (session.started_seq) ")" } }
            tr { th { "Updated" } td { (when(&session.updated_at)) " (seq " (session.last_seq) ")" } }
            tr { th { "Thoughts" } td { (session.thought_count) } }
            tr { th { "Branches" } td {
                (session.branch_ids().len())
                @for b in session.branch_ids() { " " code.branch { (b) } }
            } }
            tr { th { "Calls recorded" } td { (session.events) } }
            @if deliberation { tr { th { "Deliberation" } td { "yes (graph below)" } } }
        }
    }
}

fn diff_form(session: &SessionHead, others: &[&SessionHead]) -> Markup {
    html! {
        form #diff-form method="get" action="/review/diff" {
            input type="hidden" name="a" value=(session.id);
            label for="diff-b" { "Diff with another session" }
            @if others.is_empty() {
                input #diff-b name="b" placeholder="session id" required;
            } @else {
                select #diff-b name="b" required {
                    option value="" { "choose a session…" }
                    @for other in others.iter().rev().take(MOST_DIFF_CHOICES) {
                        option value=(other.id) { (other.id) " (" (other.principal) ", " (other.thought_count) " thoughts)" }
                    }
                }
            }
            " "
            button type="submit" { "Diff" }
        }
    }
}

fn deliberation_section(
    d: &Deliberation,
    texts: &DeliberationState,
    erasures: &HashMap<String, Erasure>,
) -> Markup {
    html! {
        h2 { "Deliberation " code { (d.deliberation_id) } }
        p {
            "Goal: "
            @match texts.text(&d.goal) {
                Some(goal) => span.thought { (goal) },
                None => (erased_mark(erasures.get(&d.goal.commitment))),
            }
            " · status " (d.status) " · " (d.nodes.len()) " node(s), " (d.edges.len()) " typed edge(s)"
        }
        div.diagram { (svg::deliberation_graph(d, texts)) }
        p.note { "Layered by depth; solid grey lines join a node to its parents, coloured arrows are typed edges (labelled); dashed boxes were pruned." }
        table #nodes {
            thead { tr { th { "Node" } th { "Kind" } th { "Branch" } th { "Depth" } th { "Content" } th { "Score" } } }
            tbody {
                @for n in &d.nodes {
                    tr {
                        td { code { (n.node_id) } @if n.pruned.is_some() { " (pruned)" } }
                        td { (n.kind) }
                        td { code { (n.branch_id) } }
                        td { (n.depth) }
                        td {
                            @match texts.text(&n.content) {
                                Some(text) => div.thought { (text) },
                                None => (erased_mark(erasures.get(&n.content.commitment))),
                            }
                        }
                        td { @if let Some(score) = n.score { (format!("{score:.2}")) } }
                    }
                }
            }
        }
    }
}
