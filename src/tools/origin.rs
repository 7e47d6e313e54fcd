//! Where a `tools/call` came from on the wire, as its span and its log line name it: its
//! JSON-RPC id, its MCP session (a Streamable HTTP session's `Mcp-Session-Id`), and the W3C
//! trace context its caller sent.
//!
//! The trace context comes in a request's `params._meta` (`traceparent`, `tracestate`: MCP
//! SEP-414) or, over HTTP, in the request's `traceparent` and `tracestate` headers; the first
//! well-formed `traceparent` of the two, in that order, is taken with the `tracestate` beside
//! it. An ill-formed one is ignored (logged at debug): it never fails the call. This module
//! reads requests and knows nothing of what becomes of the context (the event, the span).

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use serde_json::Value;

use crate::events::TraceContext;

/// The `_meta` key (and HTTP header) of a call's W3C `traceparent`.
pub const TRACEPARENT: &str = "traceparent";

/// The `_meta` key (and HTTP header) of a call's W3C `tracestate`.
pub const TRACESTATE: &str = "tracestate";

/// The HTTP header of a Streamable HTTP session's id.
const MCP_SESSION_ID: &str = "mcp-session-id";

/// A call's origin on the wire (see the module's documentation).
#[derive(Debug, Clone, Default)]
pub struct CallOrigin {
    /// The request's JSON-RPC id, as text (`jsonrpc.request.id`); `None` for a call no
    /// JSON-RPC request made (the reviewer's page, an agent run's steps).
    pub request_id: Option<String>,
    /// The MCP session the request belongs to, when its transport has one (`mcp.session.id`).
    pub mcp_session_id: Option<String>,
    /// The caller's trace context, well formed; recorded with the call's event.
    pub trace: Option<TraceContext>,
}

impl CallOrigin {
    /// The origin of a request whose `params._meta` member `key` is `meta(key)`.
    pub fn of<'a>(
        meta: impl Fn(&str) -> Option<&'a Value>,
        context: &RequestContext<RoleServer>,
    ) -> Self {
        let headers = context
            .extensions
            .get::<http::request::Parts>()
            .map(|parts| &parts.headers);
        let header = |name: &str| {
            headers
                .and_then(|h| h.get(name))
                .map(|v| v.to_str().map_err(|_| ()))
        };
        let from_meta = meta(TRACEPARENT).map(|traceparent| {
            (
                traceparent.as_str().ok_or(()),
                meta(TRACESTATE).map(|s| s.as_str().ok_or(())),
            )
        });
        let from_headers = header(TRACEPARENT).map(|traceparent| (traceparent, header(TRACESTATE)));
        let trace = [("_meta", from_meta), ("header", from_headers)]
            .into_iter()
            .filter_map(|(source, found)| Some((source, found?)))
            .find_map(|(source, (traceparent, tracestate))| take(source, traceparent, tracestate));
        Self {
            request_id: Some(context.id.to_string()),
            mcp_session_id: headers
                .and_then(|h| h.get(MCP_SESSION_ID))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            trace,
        }
    }
}

/// The context a `traceparent` and `tracestate` from `source` make, if the `traceparent` is a
/// well-formed string; what is not taken is logged at debug.
fn take(
    source: &str,
    traceparent: Result<&str, ()>,
    tracestate: Option<Result<&str, ()>>,
) -> Option<TraceContext> {
    let Ok(traceparent) = traceparent else {
        tracing::debug!(source, "traceparent ignored: not a string");
        return None;
    };
    let tracestate = match tracestate {
        Some(Err(())) => {
            tracing::debug!(source, "tracestate ignored: not a string");
            None
        }
        Some(Ok(list)) => Some(list),
        None => None,
    };
    match TraceContext::parse(traceparent, tracestate) {
        Ok((context, dropped)) => {
            if let Some(why) = dropped {
                tracing::debug!(source, reason = %why, "tracestate ignored");
            }
            Some(context)
        }
        Err(why) => {
            tracing::debug!(source, reason = %why, "traceparent ignored");
            None
        }
    }
}
