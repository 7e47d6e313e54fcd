//! The pages besides a session's: the frame every page shares, the session list with its
//! filters, the diff of two sessions, the chain's status, the export download and the one
//! "not found" page.
//!
//! Every value is spliced with maud's `(…)`, which escapes it; there is no `PreEscaped` of
//! anything a caller wrote. Must not know: how a viewer is authenticated (only `Viewer`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Form, FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

use super::login::{RequestParts, unauthenticated, viewer};
use super::read::{self, Exported, may_see};
use super::{Review, Viewers, same_origin};
use crate::events::SessionId;
use crate::export::diff::{Aligned, Op, Presence, SessionDiff, ThoughtRef, diff as diff_sessions};
use crate::projections::SessionStatus;
use crate::server::auth::Refusal;
use crate::tools::{Principal, Role};

/// Most sessions the list shows (the newest first); the filters narrow the rest.
const MOST_LISTED: usize = 500;

/// The page's stylesheet: inline, so the page needs nothing from anywhere else.
const STYLE: &str = "
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#fafbfc}
header{background:#1d2330;color:#fff;padding:.6em 1.2em;display:flex;gap:1.2em;align-items:center}
header a{color:#cfe0ff}header form{margin-left:auto}main{padding:1em 1.4em;max-width:72em}
table{border-collapse:collapse;width:100%;margin:.6em 0}td,th{border-bottom:1px solid #dde2ea;
padding:.3em .5em;text-align:left;vertical-align:top}th{background:#eef1f6}
.thought{white-space:pre-wrap;word-break:break-word}.erased{color:#8a8f99;font-style:italic}
.tag{background:#e4ecfb;border-radius:3px;padding:0 .3em;margin-right:.2em;font-size:.9em}
table.diff td{width:46%}table.diff td:first-child{width:8%}.op-added{background:#e6f6e6}.op-removed{background:#fbe9e9}.op-changed{background:#fff6dc}
.refused{color:#a01818}.note{color:#5a6170;font-size:.92em}
.ok{color:#17702a}.bad{color:#a01818}.diagram{overflow:auto;border:1px solid #dde2ea;background:#fff}
form.filters{display:flex;flex-wrap:wrap;gap:.6em;align-items:end}label{display:block;font-size:.85em}
code,pre{font-family:ui-monospace,monospace;font-size:.9em}pre{white-space:pre-wrap;word-break:break-all}
details{margin:.3em 0}summary{cursor:pointer;color:#2a4f9a}table.kv{width:auto;margin:.2em 0}
table.kv th{background:none;font-weight:600;color:#3b4252;white-space:nowrap}.fact h4{margin:.5em 0 .1em}
.model{background:#f3e6fb}.model-output{color:#6b2a8a}mark{background:#ffe58a}tr.refused td{background:#fff4f4}
";

/// The frame of every page: title, navigation (with the viewer and a logout button when there
/// is one), and `body`.
pub(super) fn layout(title: &str, viewer: Option<&SignedIn>, body: Markup) -> Html<String> {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · thinkledger review" }
                style { (maud::PreEscaped(STYLE)) }
            }
            body {
                header {
                    strong { "thinkledger review" }
                    @if let Some(viewer) = viewer {
                        a href="/review" { "Sessions" }
                        a href="/review/search" { "Search" }
                        a href="/review/memories" { "Memories" }
                        @if viewer.role == Role::Auditor { a href="/review/refusals" { "Refused calls" } }
                        a href="/review/verify" { "Chain status" }
                        span {
                            "Signed in as " strong.viewer { (viewer.name) }
                            @if viewer.role == Role::Auditor { " (auditor)" }
                        }
                        @if viewer.can_log_out {
                            form method="post" action="/review/logout" {
                                button type="submit" { "Log out" }
                            }
                        }
                    }
                }
                main { (body) }
            }
        }
    };
    Html(page.into_string())
}

/// The viewer of a request, or why there is none (handlers choose: a redirect or a 401).
pub(super) struct Viewer(pub Result<SignedIn, Refusal>);

/// A viewer the page knows.
pub(super) struct SignedIn {
    principal: Principal,
    /// Whether the viewer logged in (with a token) and so can log out.
    can_log_out: bool,
}

impl std::ops::Deref for SignedIn {
    type Target = Principal;

    fn deref(&self) -> &Principal {
        &self.principal
    }
}

impl FromRequestParts<Arc<Review>> for Viewer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        review: &Arc<Review>,
    ) -> Result<Self, Self::Rejection> {
        let request = RequestParts {
            headers: &parts.headers,
        };
        let can_log_out = matches!(review.viewers, Viewers::Tokens(_));
        Ok(Self(viewer(review, &request).map(|principal| SignedIn {
            principal,
            can_log_out,
        })))
    }
}

/// The page for a session that does not exist or that the viewer may not see: the same bytes
/// either way, so a page never tells whether someone else's session exists.
pub(super) fn no_such_session(viewer: &SignedIn) -> Response {
    let body = html! {
        h1 { "No such session" }
        p { "There is no session with that id among the sessions you may review." }
        p { a href="/review" { "Back to the sessions" } }
    };
    (
        StatusCode::NOT_FOUND,
        layout("Not found", Some(viewer), body),
    )
        .into_response()
}

/// Any other path under `/review`.
pub(super) async fn not_found() -> Response {
    let body = html! { h1 { "Not found" } p { a href="/review" { "Back to the sessions" } } };
    (StatusCode::NOT_FOUND, layout("Not found", None, body)).into_response()
}

/// The page when the ledger cannot be read.
pub(super) fn unavailable(viewer: &SignedIn, error: &str) -> Response {
    let body = html! {
        h1 { "The ledger cannot be read" }
        p.refused { (error) }
    };
    (
        StatusCode::SERVICE_UNAVAILABLE,
        layout("Unavailable", Some(viewer), body),
    )
        .into_response()
}

/// A recorded time as `YYYY-MM-DD HH:MM:SS` (UTC), the full value kept for the tooltip.
pub(super) fn when(at: &str) -> Markup {
    let short = at.get(..19).unwrap_or(at).replace('T', " ");
    html! { time datetime=(at) title=(at) { (short) } }
}

/// A date filter value: `YYYY-MM-DD`, or nothing.
fn date_filter(value: Option<&String>) -> Option<&str> {
    let value = value?.trim();
    // A real calendar day in the one form every recorded time starts with.
    (value.len() == 10 && chrono::NaiveDate::parse_from_str(value, "%Y-%m-%d").is_ok())
        .then_some(value)
}

/// The signed-in viewer and the latest durable state, or the page that says why not (the login
/// page, or the ledger's failure): what every page starts with.
pub(super) async fn signed_in_view(
    review: &Review,
    viewer: Result<SignedIn, Refusal>,
) -> Result<(SignedIn, Arc<crate::app::App>), Response> {
    let viewer = viewer.map_err(|refusal| unauthenticated(review, refusal))?;
    match read::state(&review.ledger).await {
        Ok(app) => Ok((viewer, app)),
        Err(e) => Err(unavailable(&viewer, &e.to_string())),
    }
}

/// `GET /review`: the sessions the viewer may see, newest first, filtered by principal, date
/// and tool.
pub(super) async fn sessions(
    State(review): State<Arc<Review>>,
    Viewer(viewer): Viewer,
    Query(filters): Query<HashMap<String, String>>,
) -> Response {
    let (viewer, app) = match signed_in_view(&review, viewer).await {
        Ok(both) => both,
        Err(response) => return response,
    };
    let principal = filters
        .get("principal")
        .map(|p| p.trim())
        .filter(|p| !p.is_empty());
    let from = date_filter(filters.get("from"));
    let to = date_filter(filters.get("to"));
    // A date that is not one is said, not silently ignored.
    let bad_dates: Vec<String> = [("from", "Active on or after"), ("to", "Started on or before")]
        .iter()
        .filter_map(|(key, label)| {
            let raw = filters.get(*key)?.trim();
            (!raw.is_empty() && date_filter(filters.get(*key)).is_none()).then(|| {
                format!("\u{201c}{raw}\u{201d} is not a date ({label}): write it as YYYY-MM-DD, e.g. 2026-11-28; the filter was not applied")
            })
        })
        .collect();
    let tool = filters
        .get("tool")
        .map(|t| t.trim())
        .filter(|t| !t.is_empty());
    let state = app.state();
    let mut shown: Vec<_> = state
        .heads()
        .filter(|s| may_see(&viewer, s))
        .filter(|s| principal.is_none_or(|p| s.principal == p))
        // Dates compare as text: every recorded time is RFC 3339 UTC in one format.
        .filter(|s| from.is_none_or(|d| s.updated_at.get(..10).is_some_and(|u| u >= d)))
        .filter(|s| to.is_none_or(|d| s.started_at.get(..10).is_some_and(|u| u <= d)))
        .collect();
    let mut used = HashMap::new();
    if let Some(tool) = tool {
        let ids = shown.iter().map(|s| s.id.clone()).collect();
        used = match read::tools_used(&review.ledger, ids).await {
            Ok(used) => used,
            Err(e) => return unavailable(&viewer, &e.to_string()),
        };
        shown.retain(|s| used.get(&s.id).is_some_and(|tools| tools.contains(tool)));
    }
    let total = shown.len();
    shown.reverse();
    shown.truncate(MOST_LISTED);
    let deliberations = app.deliberations();
    let tools: Vec<&str> = review
        .catalog
        .all_entries()
        .iter()
        .map(|e| e.tool.name.as_ref())
        .collect();
    let field = |name: &str| filters.get(name).map(String::as_str).unwrap_or_default();
    let body = html! {
        h1 { "Sessions" }
        p.note {
            @if viewer.role == Role::Auditor { "As an auditor you see every principal's sessions." }
            @else { "You see the sessions you started." }
        }
        form.filters method="get" action="/review" {
            div { label for="principal" { "Principal" } input #principal name="principal" value=(field("principal")); }
            div { label for="from" { "Active on or after" } input #from type="date" name="from" value=(field("from")); }
            div { label for="to" { "Started on or before" } input #to type="date" name="to" value=(field("to")); }
            div {
                label for="tool" { "Used the tool" }
                select #tool name="tool" {
                    option value="" { "any" }
                    @for name in &tools {
                        option value=(name) selected[tool == Some(*name)] { (name) }
                    }
                }
            }
            div { button type="submit" { "Filter" } " " a href="/review" { "Clear" } }
        }
        @for problem in &bad_dates {
            p.refused.filter-problem { (problem) }
        }
        @if tool.is_some() {
            p.note { "Tools are read from each session's recorded calls." }
        }
        p { (total) " session(s)" @if total > shown.len() { ", the newest " (shown.len()) " shown" } "." }
        table #sessions {
            thead { tr { th { "Session" } th { "Principal" } th { "Status" } th { "Started" } th { "Updated" } th { "Thoughts" } th { "Branches" } th { "Calls" } } }
            tbody {
                @for s in &shown {
                    tr {
                        td {
                            a.session href={ "/review/session/" (s.id) } { code { (s.id) } }
                            @if deliberations.get(&s.id).is_some() { " " span.tag { "deliberation" } }
                        }
                        td { (s.principal) }
                        td { @match &s.status { SessionStatus::Active => "active", SessionStatus::Closed { .. } => "closed" } }
                        td { (when(&s.started_at)) }
                        td { (when(&s.updated_at)) }
                        td { (s.thought_count) }
                        td { (s.branch_ids().len()) }
                        td { (s.events) }
                    }
                }
            }
        }
    };
    drop(used);
    layout("Sessions", Some(&viewer), body).into_response()
}

/// `GET /review/diff?a=ID&b=ID`: what `diff_sessions` computes, as a table.
pub(super) async fn diff(
    State(review): State<Arc<Review>>,
    Viewer(viewer): Viewer,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let (viewer, app) = match signed_in_view(&review, viewer).await {
        Ok(both) => both,
        Err(response) => return response,
    };
    let state = app.state();
    let find = |key: &str| {
        query
            .get(key)
            .and_then(|raw| SessionId::parse(raw.trim()))
            .and_then(|id| state.head(&id))
            .filter(|s| may_see(&viewer, s))
    };
    let (Some(a), Some(b)) = (find("a"), find("b")) else {
        return no_such_session(&viewer);
    };
    let (a, b) = match (state.body(a), state.body(b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return unavailable(&viewer, &e.to_string()),
    };
    let diff = diff_sessions(&a, &b);
    let body = diff_body(&diff);
    layout("Diff", Some(&viewer), body).into_response()
}

fn diff_body(diff: &SessionDiff) -> Markup {
    let summary = &diff.summary;
    html! {
        h1 { "Diff" }
        p {
            "From " a href={ "/review/session/" (diff.a.session_id) } { code { (diff.a.session_id) } }
            " (−) to " a href={ "/review/session/" (diff.b.session_id) } { code { (diff.b.session_id) } } " (+)."
        }
        p #diff-summary {
            @if diff.identical { "The sessions are identical." }
            @else {
                (summary.added) " added, " (summary.removed) " removed, " (summary.changed) " changed; "
                (summary.tag_changes) " tag change(s); conclusion "
                @if summary.conclusion_changed { "changed" } @else { "the same" } "."
            }
        }
        h2 { "Main line" }
        (aligned_table(&diff.main_line))
        @for branch in &diff.branches {
            h2 {
                "Branch " code { (branch.branch_id) }
                @match branch.presence {
                    Presence::Both => "",
                    Presence::OnlyA => " (only in −)",
                    Presence::OnlyB => " (only in +)",
                }
            }
            (aligned_table(&branch.thoughts))
        }
        @if !diff.tags.is_empty() {
            h2 { "Tag changes" }
            ul {
                @for change in &diff.tags {
                    li {
                        "#" (change.thought_number_a) " → #" (change.thought_number_b)
                        @if let Some(branch) = &change.branch_id { " on " code { (branch) } }
                        ": "
                        @for tag in &change.added { span.tag { "+" (tag) } }
                        @for tag in &change.removed { span.tag { "−" (tag) } }
                    }
                }
            }
        }
    }
}

fn aligned_table(rows: &[Aligned]) -> Markup {
    let side = |t: &Option<ThoughtRef>| -> Markup {
        html! {
            @if let Some(t) = t {
                "#" (t.thought_number) " "
                @match &t.text {
                    Some(text) => span.thought { (text) },
                    None => span.erased { "[text erased]" },
                }
            }
        }
    };
    html! {
        table.diff {
            thead { tr { th { "" } th { "−" } th { "+" } } }
            tbody {
                @for row in rows {
                    @let (class, mark) = match row.op {
                        Op::Same => ("op-same", " "),
                        Op::Added => ("op-added", "added"),
                        Op::Removed => ("op-removed", "removed"),
                        Op::Changed => ("op-changed", "changed"),
                    };
                    tr class=(class) { td { (mark) } td { (side(&row.a)) } td { (side(&row.b)) } }
                }
            }
        }
    }
}

/// `GET /review/session/{id}/export`: the session's audit export as a JSON attachment; 401
/// without a valid viewer (a download is not a page to redirect).
pub(super) async fn export(
    State(review): State<Arc<Review>>,
    viewer: Viewer,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    export_since(&review, viewer, &id, &headers, None).await
}

/// The form a reviewer posts for an export since a checkpoint they kept.
#[derive(serde::Deserialize)]
pub(super) struct SinceForm {
    checkpoint: String,
}

/// `POST /review/session/{id}/export`: the export with a consistency proof from the checkpoint
/// the reviewer kept to the one the export is proven against.
pub(super) async fn export_since_checkpoint(
    State(review): State<Arc<Review>>,
    viewer: Viewer,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<SinceForm>,
) -> Response {
    let kept = form.checkpoint.replace("\r\n", "\n");
    let kept = format!("{}\n", kept.trim_end());
    export_since(&review, viewer, &id, &headers, Some(kept)).await
}

async fn export_since(
    review: &Review,
    Viewer(viewer): Viewer,
    id: &str,
    headers: &HeaderMap,
    since: Option<String>,
) -> Response {
    // The download records a call: another site may not make a browser ask for it (without
    // tokens no cookie would stop it).
    if !same_origin(headers) {
        return (
            StatusCode::FORBIDDEN,
            "the export is downloaded from this page only",
        )
            .into_response();
    }
    let viewer = match viewer {
        Ok(viewer) => viewer,
        Err(refusal) => {
            return (StatusCode::UNAUTHORIZED, refusal.describe()).into_response();
        }
    };
    let app = match read::state(&review.ledger).await {
        Ok(app) => app,
        Err(e) => return unavailable(&viewer, &e.to_string()),
    };
    let Some(session) = SessionId::parse(id)
        .and_then(|id| app.state().head(&id))
        .filter(|s| may_see(&viewer, s))
    else {
        return no_such_session(&viewer);
    };
    let id = session.id.clone();
    drop(app);
    match read::audit_export(review, &viewer, &id, since).await {
        Exported::File(file) => (
            [
                (header::CONTENT_TYPE, "application/json".to_owned()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"thinkledger-audit-{id}.json\""),
                ),
            ],
            file,
        )
            .into_response(),
        Exported::NoSuchSession => no_such_session(&viewer),
        Exported::Failed(e) => unavailable(&viewer, &format!("the export could not be built: {e}")),
    }
}

/// `GET /review/verify`: the head of the chain and its latest signed checkpoint, with what was
/// checked of it now, and what was not.
pub(super) async fn verify(State(review): State<Arc<Review>>, Viewer(viewer): Viewer) -> Response {
    let viewer = match viewer {
        Ok(viewer) => viewer,
        Err(refusal) => return unauthenticated(&review, refusal),
    };
    let status = match read::chain_status(&review.ledger).await {
        Ok(status) => status,
        Err(e) => return unavailable(&viewer, &e.to_string()),
    };
    let verdict = |result: &Result<bool, String>, yes: &str, no: &str| -> Markup {
        html! {
            @match result {
                Ok(true) => span.ok { (yes) },
                Ok(false) => span.bad { (no) },
                Err(e) => span.bad { "could not be checked: " (e) },
            }
        }
    };
    let body = html! {
        h1 { "Chain status" }
        table #chain {
            tr { th { "Ledger" } td { code { (status.ledger_id) } } }
            @match &status.head {
                Some((seq, hash)) => {
                    tr { th { "Head" } td { "seq " (seq) } }
                    tr { th { "Head event hash" } td { code { (hash) } } }
                }
                None => { tr { th { "Head" } td { "the log is empty" } } }
            }
        }
        h2 { "Latest signed checkpoint" }
        @match &status.checkpoint {
            None => p { "No checkpoint has been signed yet (the server signs one every minute while the log grows, and before every export)." },
            Some(cp) => {
                table #checkpoint {
                    tr { th { "Tree size" } td { (cp.size) " events" } }
                    tr { th { "Root" } td { code { (cp.root_hex) } } }
                    tr { th { "Signed at" } td { (when(&cp.signed_at)) } }
                    tr {
                        th { "Checked against the live log now" }
                        td { (verdict(&cp.root_matches_log, "the Merkle root of the log's first events equals the signed root", "the log's root over those events differs from the signed root")) }
                    }
                    tr {
                        th { "Signature" }
                        td { (verdict(&cp.signature_valid, "valid under this ledger's own key", "does not verify under this ledger's key")) }
                    }
                }
                details { summary { "Signed note" } pre { (cp.note) } }
            }
        }
        h2 { "Not checked here" }
        p.note {
            "This page does not re-hash every event or text: that is a full verification, "
            code { "thinkledger verify" } " (offline), or per session "
            code { "thinkledger verify-export FILE --pubkey KEY" } " on a downloaded export. "
            "The signature is checked with the key this server holds; an independent check uses the key you were given."
        }
    };
    layout("Chain status", Some(&viewer), body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_calendar_dates_filter() {
        let s = |v: &str| v.to_owned();
        assert_eq!(date_filter(Some(&s("2026-11-25"))), Some("2026-11-25"));
        assert_eq!(date_filter(Some(&s(" 2026-11-25 "))), Some("2026-11-25"));
        for bad in ["2026-1-25", "yesterday", "2026/11/25", "", "2026-11-25T00"] {
            assert_eq!(date_filter(Some(&s(bad))), None, "{bad}");
        }
    }

    #[test]
    fn caller_text_is_escaped_in_the_frame() {
        let viewer = SignedIn {
            principal: Principal::member("<b>mallory</b>"),
            can_log_out: true,
        };
        let page = layout("t", Some(&viewer), html! { p { ("<script>x</script>") } }).0;
        assert!(page.contains("&lt;b&gt;mallory&lt;/b&gt;"));
        assert!(page.contains("&lt;script&gt;x&lt;/script&gt;"));
        assert!(!page.contains("<script>"));
    }
}
