//! `GET /review/session/{id}`: one session for a reviewer: its status and counts, the thought
//! tree (SVG) and every thought with its tags, revision and branch marks and erasures, the
//! deliberation graph when the session has one, the timeline of every recorded call, the
//! export link and the diff form.
//!
//! Must not know: how the drawings are laid out (`svg`), how the viewer was authenticated.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};

use super::Review;
use super::pages::{Viewer, layout, no_such_session, signed_in_view, unavailable, when};
use super::read::{self, Erasure, Row, may_see};
use super::svg;
use crate::events::SessionId;
use crate::projections::{
    Deliberation, DeliberationState, Session, SessionHead, SessionStatus, Thought,
};

/// Most other sessions offered in the diff form's list.
const MOST_DIFF_CHOICES: usize = 200;

pub(super) async fn page(
    State(review): State<Arc<Review>>,
    Viewer(viewer): Viewer,
    Path(id): Path<String>,
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
    let session = match state.body(head) {
        Ok(session) => session,
        Err(e) => return unavailable(&viewer, &e.to_string()),
    };
    let session = &*session;
    let deliberation = app.deliberations().get(&session.id);
    let mut erased: Vec<String> = session
        .thoughts
        .iter()
        .filter(|t| t.text.is_none())
        .map(|t| t.text_ref.commitment.clone())
        .collect();
    if let Some(d) = deliberation {
        erased.extend(
            d.nodes
                .iter()
                .filter(|n| app.deliberations().text(&n.content).is_none())
                .map(|n| n.content.commitment.clone()),
        );
    }
    let log = match read::session_log(&review.ledger, session.id.clone(), erased).await {
        Ok(log) => log,
        Err(e) => return unavailable(&viewer, &e),
    };
    let others: Vec<&SessionHead> = state
        .heads()
        .filter(|s| s.id != session.id && may_see(&viewer, s))
        .collect();
    let body = html! {
        h1 { "Session " code { (session.id) } }
        (overview(session, deliberation.is_some()))
        p {
            a #export href={ "/review/session/" (session.id) "/export" } download { "Download the audit export (JSON)" }
            span.note { " — every event of the session with its inclusion proof to the latest signed checkpoint, signed by the ledger key; check it with "
                code { "thinkledger verify-export" } "." }
        }
        (diff_form(session, &others))
        h2 { "Thought tree" }
        @if session.thoughts.is_empty() {
            p.note { "No thoughts recorded." }
        } @else {
            div.diagram { (svg::thought_tree(session)) }
            p.note { "Top to bottom in recorded order; one column per line of thought (main, then each branch from its branch point); dashed arrows point from a revision to the thought it revises." }
        }
        h2 { "Thoughts" }
        (thoughts(session, &log.erasures))
        @if let Some(d) = deliberation {
            (deliberation_section(d, app.deliberations(), &log.erasures))
        }
        h2 { "Timeline" }
        (timeline(&log.rows))
    };
    layout(&format!("Session {}", session.id), Some(&viewer), body).into_response()
}

fn overview(session: &Session, deliberation: bool) -> Markup {
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
            tr { th { "Thoughts" } td { (session.thoughts.len()) } }
            tr { th { "Branches" } td {
                (session.branches.len())
                @for b in &session.branches { " " code.branch { (b.id) } }
            } }
            tr { th { "Calls recorded" } td { (session.events) } }
            @if deliberation { tr { th { "Deliberation" } td { "yes (graph below)" } } }
        }
    }
}

fn diff_form(session: &Session, others: &[&SessionHead]) -> Markup {
    html! {
        form #diff-form method="get" action="/review/diff" {
            input type="hidden" name="a" value=(session.id);
            label for="diff-b" { "Diff with another session" }
            @if others.is_empty() {
                input #diff-b name="b" placeholder="session id" required;
            } @else {
                select #diff-b name="b" {
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

/// An erased text: says so, and why when the erasure recorded a reason.
pub(super) fn erased_mark(erasure: Option<&Erasure>) -> Markup {
    html! {
        span.erased {
            "[text erased"
            @if let Some(e) = erasure {
                " at seq " (e.seq)
                @if let Some(reason) = &e.reason { ": " (reason) }
            }
            "]"
        }
    }
}

fn thoughts(session: &Session, erasures: &HashMap<String, Erasure>) -> Markup {
    let kind = |t: &Thought| -> String {
        let mut parts = Vec::new();
        if t.is_revision || t.revises_thought.is_some() {
            parts.push(match t.revises_thought {
                Some(n) => format!("revises #{n}"),
                None => "revision".to_owned(),
            });
        }
        if let (Some(id), Some(from)) = (&t.branch_id, t.branch_from_thought) {
            parts.push(format!("branch {id} from #{from}"));
        } else if let Some(id) = &t.branch_id {
            parts.push(format!("on branch {id}"));
        }
        if !t.next_thought_needed {
            parts.push("concludes".to_owned());
        }
        parts.join("; ")
    };
    html! {
        table #thoughts {
            thead { tr { th { "Seq" } th { "#" } th { "Thought" } th { "Tags" } th { "Marks" } } }
            tbody {
                @for t in &session.thoughts {
                    tr id={ "thought-" (t.seq) } {
                        td { (t.seq) }
                        td { (t.thought_number) "/" (t.total_thoughts) }
                        td {
                            @match &t.text {
                                Some(text) => div.thought { (text) },
                                None => (erased_mark(erasures.get(&t.text_ref.commitment))),
                            }
                        }
                        td { @for tag in &t.tags { span.tag { (tag) } } }
                        td { (kind(t)) }
                    }
                }
            }
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

fn timeline(rows: &[Row]) -> Markup {
    html! {
        table #timeline {
            thead { tr { th { "Seq" } th { "Recorded" } th { "Tool" } th { "Outcome" } th { "Principal" } th { "What it did" } } }
            tbody {
                @for row in rows {
                    @let e = &row.entry;
                    tr {
                        td { (e.seq) }
                        td { (when(&e.recorded_at)) }
                        td { code { (e.tool) } }
                        td {
                            (e.status)
                            @if let Some(code) = &e.error_code { ": " code { (code) } }
                        }
                        td { (row.principal) }
                        td { (e.summary) }
                    }
                }
            }
        }
    }
}
