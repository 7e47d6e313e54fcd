//! The HTTP edge: an axum layer in front of rmcp's Streamable HTTP service.
//!
//! It reads each POST body itself (at most [`MAX_MESSAGE_BYTES`]: 413 beyond), answers what
//! [`classify`] refuses (400 with a JSON-RPC error without id; a known method's undecodable
//! params in band, 200 with the request's id, a `tools/call` among them recorded as a rejected
//! call), and forwards the rest. Every error rmcp answers in plain text (400, 403, 404 unknown
//! session, 405, 406, 415, 5xx) is rewritten as a JSON-RPC error body with the same status and
//! `Content-Type: application/json`; ending a session (DELETE) answers 204.
//!
//! Order within an MCP session: a POST carrying `Mcp-Session-Id` waits for the session's
//! previous request to be admitted into the ledger's queue (a [`Ticket`] in the request's
//! extensions, which rmcp hands to the handler inside `http::request::Parts`), or for its
//! response body to end. This module knows axum and the wire, not the tools' rules.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, Limited};
use rmcp::model::{ErrorCode, ErrorData};
use serde_json::Value;

use super::{
    Cut, Frame, MAX_MESSAGE_BYTES, Refusal, classify, error_response, undecodable_call_error,
};
use crate::app::App;
use crate::ledger::LedgerHandle;
use crate::tools::{Catalog, LOCAL_PRINCIPAL, Principal, ThinkServer, Ticket};

/// The header naming a legacy MCP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// Largest plain-text error body of rmcp's that is carried into the JSON-RPC message.
const MAX_ERROR_TEXT: usize = 16 * 1024;

/// What the edge needs: the ledger (to record undecodable calls) and one order per session.
pub struct HttpEdge {
    ledger: LedgerHandle<App>,
    catalog: Arc<Catalog>,
    /// One admission line per MCP session; an entry lives while a request of it waits or runs.
    sessions: Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>,
}

impl HttpEdge {
    pub fn new(ledger: LedgerHandle<App>, catalog: Arc<Catalog>) -> Self {
        Self {
            ledger,
            catalog,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// Waits for the session's previous request to be admitted; the ticket lets the next go.
    async fn admission_ticket(&self, session: &str) -> Ticket {
        let line = {
            let mut sessions = match self.sessions.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            if let Some(line) = sessions.get(session).and_then(Weak::upgrade) {
                line
            } else {
                if sessions.len() >= 64 {
                    sessions.retain(|_, line| line.strong_count() > 0);
                }
                let line = Arc::new(tokio::sync::Mutex::new(()));
                sessions.insert(session.to_owned(), Arc::downgrade(&line));
                line
            }
        };
        // tokio's mutex is fair: waiters are let through in the order they arrived.
        let turn = line.lock_owned().await;
        Ticket::new(move || drop(turn))
    }
}

/// A request body as read.
enum ReadBody {
    Whole(Bytes),
    /// Over [`MAX_MESSAGE_BYTES`]: its first and last bytes.
    TooLarge(Cut),
}

/// Bytes of an oversized body read (and dropped) to find its id at its end; past this the rest
/// is not read.
const DRAIN_BYTES: usize = 64 * 1024 * 1024;

/// Reads a body whole up to [`MAX_MESSAGE_BYTES`]; a longer one is read on (up to
/// [`DRAIN_BYTES`]) keeping only its first and last bytes.
async fn read_body(mut body: Body) -> Result<ReadBody, axum::Error> {
    use http_body_util::BodyExt;
    let mut whole: Vec<u8> = Vec::new();
    let mut cut: Option<Cut> = None;
    let mut read = 0usize;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        read += data.len();
        match &mut cut {
            Some(cut) => cut.push(&data),
            None if whole.len() + data.len() > MAX_MESSAGE_BYTES => {
                let mut started = Cut::default();
                started.push(&whole);
                started.push(&data);
                whole = Vec::new();
                cut = Some(started);
            }
            None => whole.extend_from_slice(&data),
        }
        if read > DRAIN_BYTES {
            break;
        }
    }
    Ok(match cut {
        Some(cut) => ReadBody::TooLarge(cut),
        None => ReadBody::Whole(whole.into()),
    })
}

/// Wraps `router` (rmcp's service) in the edge.
pub fn layer(router: axum::Router, edge: HttpEdge) -> axum::Router {
    router.layer(axum::middleware::from_fn_with_state(Arc::new(edge), handle))
}

async fn handle(State(edge): State<Arc<HttpEdge>>, request: Request, next: Next) -> Response {
    let method = request.method().clone();
    if method == Method::POST
        && is_json(request.headers())
        && accepts_json_and_sse(request.headers())
    {
        return post(&edge, request, next).await;
    }
    let response = next.run(request).await;
    if method == Method::DELETE && response.status() == StatusCode::ACCEPTED {
        // The session is ended: nothing to say (the Python SDK expects 200 or 204).
        return StatusCode::NO_CONTENT.into_response();
    }
    as_json_rpc(response).await
}

async fn post(edge: &HttpEdge, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let bytes = match read_body(body).await {
        Ok(ReadBody::Whole(bytes)) => bytes,
        Ok(ReadBody::TooLarge(cut)) => {
            return refusal(StatusCode::PAYLOAD_TOO_LARGE, &Refusal::too_large(&cut));
        }
        Err(e) => {
            tracing::debug!(error = %e, "reading a request body failed");
            let error = ErrorData::invalid_request(format!("Invalid Request: {e}"), None);
            return json_response(StatusCode::BAD_REQUEST, &error_response(None, &error));
        }
    };
    let session = parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match classify(&bytes) {
        Frame::Blank => {
            let error = ErrorData::parse_error("Parse error: the body is empty", None);
            json_response(StatusCode::BAD_REQUEST, &error_response(None, &error))
        }
        Frame::Refused(refused) if refused.error.code == ErrorCode::INVALID_PARAMS => {
            json_response(StatusCode::OK, &refused.to_json())
        }
        Frame::Refused(refused) => refusal(StatusCode::BAD_REQUEST, &refused),
        Frame::Dropped => {
            let error = ErrorData::invalid_request(
                "Invalid Request: the notification does not decode",
                None,
            );
            json_response(StatusCode::BAD_REQUEST, &error_response(None, &error))
        }
        Frame::UndecodableCall { id, params } => {
            let ticket = match &session {
                Some(session) => Some(edge.admission_ticket(session).await),
                None => None,
            };
            let server = ThinkServer::new(edge.ledger.clone(), edge.catalog.clone(), "http");
            let admission = crate::tools::Admission::new(None, id.clone(), ticket);
            let principal = parts
                .extensions
                .get::<Principal>()
                .map_or(LOCAL_PRINCIPAL, |p| p.name.as_str());
            let recorded = admission
                .scope(server.record_undecodable_call(params, None, principal))
                .await;
            let answer = error_response(Some(&id), &undecodable_call_error(recorded));
            json_response(StatusCode::OK, &answer)
        }
        Frame::Request { unordered, .. } => {
            // A request that reads nothing of the ledger does not wait its turn.
            let ticket = match &session {
                Some(session) if !unordered => Some(edge.admission_ticket(session).await),
                _ => None,
            };
            if let Some(ticket) = &ticket {
                parts.extensions.insert(ticket.clone());
            }
            let response = next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
            let response = match ticket {
                Some(ticket) => response.map(|body| {
                    Body::new(ReleaseOnEnd {
                        inner: body,
                        ticket: Some(ticket),
                    })
                }),
                None => response,
            };
            as_json_rpc(response).await
        }
        Frame::Notice { .. } => {
            let response = next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
            as_json_rpc(response).await
        }
    }
}

/// Whether the request says its body is JSON (rmcp answers 415 otherwise).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split(';').next().unwrap_or_default().trim();
            essence.eq_ignore_ascii_case("application/json")
        })
}

/// Whether the client accepts both answers a POST may get (rmcp answers 406 otherwise).
fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let mut json = false;
    let mut sse = false;
    for value in headers.get_all(header::ACCEPT) {
        for entry in value.to_str().unwrap_or_default().split(',') {
            let essence = entry.split(';').next().unwrap_or_default().trim();
            json |= essence.eq_ignore_ascii_case("application/json");
            sse |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

fn refusal(status: StatusCode, refused: &Refusal) -> Response {
    json_response(status, &refused.to_json())
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

/// The JSON-RPC code an HTTP error status of rmcp's stands for.
fn code_for(status: StatusCode) -> ErrorCode {
    match status {
        StatusCode::BAD_REQUEST => ErrorCode::INVALID_REQUEST,
        // As the TypeScript SDK: "Session not found".
        StatusCode::NOT_FOUND => ErrorCode(-32001),
        s if s.is_server_error() => ErrorCode::INTERNAL_ERROR,
        // 403 (Host or Origin refused), 405, 406, 413, 415: the server-defined range, as the
        // TypeScript SDK answers them.
        _ => ErrorCode(-32000),
    }
}

/// rmcp's plain-text errors, as JSON-RPC errors with the same status and headers.
async fn as_json_rpc(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = match Limited::new(body, MAX_ERROR_TEXT).collect().await {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes())
            .trim()
            .to_owned(),
        Err(_) => String::new(),
    };
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        text
    };
    let error = ErrorData::new(code_for(status), message, None);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, Body::from(error_response(None, &error).to_string()))
}

/// A response body that lets the session's next request through when it ends (or is dropped),
/// in case the request was never admitted.
struct ReleaseOnEnd {
    inner: Body,
    ticket: Option<Ticket>,
}

impl ReleaseOnEnd {
    fn release(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            ticket.release();
        }
    }
}

impl HttpBody for ReleaseOnEnd {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            self.release();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for ReleaseOnEnd {
    fn drop(&mut self) {
        self.release();
    }
}
