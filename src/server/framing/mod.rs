//! The transport edge: every message a client sends, on stdio or HTTP, is judged here before
//! rmcp sees it, and whatever rmcp would drop or misname is answered here.
//!
//! [`classify`] is the pure part: it reads one message (a stdio line, an HTTP body) and says
//! what it is. What is not JSON (including `NaN`, lone surrogates, invalid UTF-8 and nesting
//! deeper than [`MAX_DEPTH`]) is refused -32700 with `id: null`; what is JSON but no request
//! (`5`, `[]` — MCP has had no batches since 2025-06-18 —, an object without `jsonrpc: "2.0"`
//! or a string `method`, an id that is null or fractional) -32600; a known method whose params
//! rmcp's own types cannot decode -32602, a `tools/call` among them being also recorded as a
//! rejected call. Everything else goes to rmcp, which answers -32601 for unknown methods only.
//! `stdio` and `http` are the two edges that act on it. This module knows rmcp's message types
//! and nothing of the ledger or the tools' rules.

pub mod http;
pub mod stdio;

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ErrorCode, ErrorData, GetMeta,
    Implementation, ProtocolVersion, RequestId,
};
use serde_json::{Value, json};

/// Deepest nesting of arrays and objects accepted in one message. A JSON-RPC envelope uses
/// three levels (message, params, arguments); tool arguments need a handful more. Deeper input
/// is refused -32700 before it is parsed, so no parser recursion depends on it.
pub const MAX_DEPTH: usize = 64;

/// Largest message accepted, in bytes: one stdio line or one HTTP body (as rmcp's HTTP default).
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// UTF-8 byte order mark, which RFC 8259 §8.1 lets a parser ignore (rmcp does).
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Methods rmcp decodes into typed requests: when one of them falls back to rmcp's catch-all
/// `CustomRequest`, its params did not decode.
const KNOWN_METHODS: &[&str] = &[
    "ping",
    "initialize",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "subscriptions/listen",
    "resources/subscribe",
    "resources/unsubscribe",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
    "resources/directory/read",
];

/// What one incoming message is, and what the edge does with it.
#[derive(Debug)]
pub enum Frame {
    /// An empty line: nothing to do.
    Blank,
    /// Answered by the edge with this error; rmcp never sees it.
    Refused(Refusal),
    /// A request rmcp decodes: forwarded, and answered by rmcp. `unordered` when it reads
    /// nothing of the ledger (see [`UNORDERED`]), so it need not wait its turn.
    Request {
        id: RequestId,
        kind: RequestKind,
        unordered: bool,
    },
    /// A notification (or a client's response to a server request): forwarded, never answered.
    Notice {
        /// The request a `notifications/cancelled` gives up on.
        cancels: Option<RequestId>,
    },
    /// A notification rmcp cannot decode: dropped (a notification is never answered).
    Dropped,
    /// A `tools/call` whose params do not decode: recorded as a rejected call, answered -32602.
    UndecodableCall { id: RequestId, params: Value },
}

/// What a forwarded request does to the connection's lifecycle (rmcp's pre-`initialize`
/// phase accepts only requests; a notification there would end the connection).
#[derive(Debug, Clone, PartialEq)]
pub enum RequestKind {
    /// `initialize`: the lifecycle is open once it is answered with a result.
    Initialize(Option<Implementation>),
    /// A 2026-07-28 request with complete `_meta` of a supported version (not
    /// `server/discover`): opens the stateless lifecycle as soon as rmcp reads it.
    OpensLifecycle(Option<Implementation>),
    /// Anything else (`ping`, `server/discover`, requests after the lifecycle is open).
    Other,
}

/// An error the edge answers itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The request's id when it could be read; `null` on the wire otherwise.
    pub id: Option<RequestId>,
    pub error: ErrorData,
}

impl Refusal {
    fn new(id: Option<RequestId>, code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            id,
            error: ErrorData::new(code, message.into(), None),
        }
    }

    /// The refusal of a message over [`MAX_MESSAGE_BYTES`], naming its request's id when the
    /// message's first or last bytes (`cut`) show it.
    pub fn too_large(cut: &Cut) -> Self {
        Self::new(
            cut.id(),
            ErrorCode::INVALID_REQUEST,
            format!("Invalid Request: a message may not exceed {MAX_MESSAGE_BYTES} bytes"),
        )
    }

    /// The JSON-RPC error response, with `"id": null` when the id is unknown (JSON-RPC 2.0 §5).
    pub fn to_json(&self) -> Value {
        error_response(self.id.as_ref(), &self.error)
    }
}

/// How much of an oversized message's start and end is kept to find its id.
pub const CUT_BYTES: usize = 64 * 1024;

/// The first and last [`CUT_BYTES`] of a message too large to read whole.
#[derive(Debug, Default, Clone)]
pub struct Cut {
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
}

impl Cut {
    /// Takes in the next `bytes` of the message.
    pub fn push(&mut self, bytes: &[u8]) {
        let room = CUT_BYTES.saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        self.tail.extend_from_slice(rest);
        if self.tail.len() > CUT_BYTES {
            self.tail.drain(..self.tail.len() - CUT_BYTES);
        }
    }

    /// The request id of the message, when its top-level `id` member lies within the head (a
    /// scan of the object's members, skipping values), or is the last member of the tail.
    pub fn id(&self) -> Option<RequestId> {
        let raw = id_in_head(&self.head).or_else(|| id_in_tail(&self.tail))?;
        match serde_json::from_str::<Value>(&raw).ok()? {
            Value::Number(n) => n.as_i64().map(RequestId::Number),
            Value::String(s) => Some(RequestId::String(s.into())),
            _ => None,
        }
    }
}

/// The raw value of the top-level `id` member, if the object's members up to it are whole in
/// `head`.
fn id_in_head(head: &[u8]) -> Option<String> {
    let mut at = skip_ws(head, 0);
    if head.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_ws(head, at);
        let key_start = at;
        at = skip_string(head, at)?;
        let key = &head[key_start..at];
        at = skip_ws(head, at);
        if head.get(at) != Some(&b':') {
            return None;
        }
        at = skip_ws(head, at + 1);
        let value_start = at;
        at = skip_value(head, at)?;
        if key == b"\"id\"" {
            return std::str::from_utf8(&head[value_start..at])
                .ok()
                .map(str::to_owned);
        }
        at = skip_ws(head, at);
        match head.get(at) {
            Some(b',') => at += 1,
            _ => return None,
        }
    }
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The index after the string starting at `at`, if it ends within `bytes`.
fn skip_string(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    while let Some(b) = bytes.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The index after the value starting at `at`, if it ends within `bytes`.
fn skip_value(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => skip_string(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while let Some(b) = bytes.get(i) {
                match b {
                    b'"' => {
                        i = skip_string(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let end = bytes[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())?;
            Some(at + end)
        }
    }
}

/// The raw value of an `id` member that closes the message (`…,"id":7}`), from its last bytes.
fn id_in_tail(tail: &[u8]) -> Option<String> {
    static LAST_ID: std::sync::LazyLock<regex::bytes::Regex> = std::sync::LazyLock::new(|| {
        regex::bytes::Regex::new(r#"[,{]\s*"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")\s*\}\s*$"#)
            .expect("a valid pattern")
    });
    let found = LAST_ID.captures(tail)?;
    String::from_utf8(found.get(1)?.as_bytes().to_vec()).ok()
}

/// A JSON-RPC error response.
pub fn error_response(id: Option<&RequestId>, error: &ErrorData) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id.map_or(Value::Null, |id| id.clone().into_json_value()),
        "error": error,
    })
}

/// The -32602 answer to an undecodable `tools/call`, carrying its recorded rejection.
pub fn undecodable_call_error(recorded: Value) -> ErrorData {
    ErrorData::invalid_params(
        "Invalid params: tools/call needs a string `name`, an object `arguments` (if any), an \
         object `inputResponses` (if any) and a string `requestState` (if any)",
        Some(recorded),
    )
}

/// Judges one message (without its line end).
pub fn classify(raw: &[u8]) -> Frame {
    let raw = raw.strip_prefix(BOM).unwrap_or(raw);
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Frame::Blank;
    }
    if raw.len() > MAX_MESSAGE_BYTES {
        let mut cut = Cut::default();
        cut.push(raw);
        return Frame::Refused(Refusal::too_large(&cut));
    }
    if depth_exceeds(raw, MAX_DEPTH) {
        return Frame::Refused(Refusal::new(
            None,
            ErrorCode::PARSE_ERROR,
            format!("Parse error: nesting deeper than {MAX_DEPTH} levels"),
        ));
    }
    let value: Value = match serde_json::from_slice(raw) {
        Ok(value) => value,
        Err(e) => {
            return Frame::Refused(Refusal::new(
                None,
                ErrorCode::PARSE_ERROR,
                format!("Parse error: {e}"),
            ));
        }
    };
    judge(raw, &value)
}

/// Judges a message that is JSON.
fn judge(raw: &[u8], value: &Value) -> Frame {
    let invalid = |id: Option<RequestId>, why: &str| {
        Frame::Refused(Refusal::new(
            id,
            ErrorCode::INVALID_REQUEST,
            format!("Invalid Request: {why}"),
        ))
    };
    let Value::Object(object) = value else {
        let why = if value.is_array() {
            "batches are not supported (MCP removed them in 2025-06-18); send one message"
        } else {
            "a message must be a JSON object"
        };
        return invalid(None, why);
    };
    // The id as rmcp reads it (a string or an integer); null, fractions and objects are none.
    let id = object
        .get("id")
        .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(id, "`jsonrpc` must be \"2.0\"");
    }
    let method = match object.get("method") {
        Some(Value::String(method)) => Some(method.as_str()),
        Some(_) => return invalid(id, "`method` must be a string"),
        None => None,
    };
    if object.contains_key("id") && id.is_none() {
        return invalid(None, "`id` must be a string or an integer");
    }
    let Some(method) = method else {
        // A client's answer to a server request carries `result` or `error` and the id.
        let answer = object.contains_key("result") != object.contains_key("error");
        if answer && id.is_some() {
            return match serde_json::from_slice::<ClientJsonRpcMessage>(raw) {
                Ok(_) => Frame::Notice { cancels: None },
                Err(_) => Frame::Dropped,
            };
        }
        return invalid(id, "a request needs a `method`");
    };
    // Decoded exactly as rmcp will decode the same bytes.
    let decoded = serde_json::from_slice::<ClientJsonRpcMessage>(raw);
    match (id, decoded) {
        (None, Ok(ClientJsonRpcMessage::Notification(notification))) => Frame::Notice {
            cancels: match notification.notification {
                ClientNotification::CancelledNotification(cancelled) => cancelled.params.request_id,
                _ => None,
            },
        },
        (None, _) => Frame::Dropped,
        (Some(id), Ok(ClientJsonRpcMessage::Request(request))) => match request.request {
            ClientRequest::CustomRequest(_) if removed_and_stateless(method, object) => {
                Frame::Request {
                    id,
                    kind: RequestKind::Other,
                    unordered: true,
                }
            }
            ClientRequest::CustomRequest(custom) if KNOWN_METHODS.contains(&method) => {
                undecodable(id, method, custom.params)
            }
            // rmcp reads a `null` or mistyped `inputResponses` / `requestState` (2026-07-28,
            // SEP-2322) as absent; the schema allows only an object and a string.
            ClientRequest::CallToolRequest(_) if mistyped_round_trip_params(object) => {
                undecodable(id, method, object.get("params").cloned())
            }
            request => Frame::Request {
                id,
                kind: kind_of(&request),
                unordered: UNORDERED.contains(&method),
            },
        },
        (Some(id), _) if removed_and_stateless(method, object) => Frame::Request {
            id,
            kind: RequestKind::Other,
            unordered: true,
        },
        (Some(id), _) if KNOWN_METHODS.contains(&method) => {
            undecodable(id, method, object.get("params").cloned())
        }
        (Some(id), _) => invalid(
            Some(id),
            "the message does not decode as a JSON-RPC request",
        ),
    }
}

/// Methods answered without the ledger: they need not wait behind a call of the same
/// connection, so a client's `ping` or list is answered at once even while its calls wait
/// (for a ledger still opening, say). Nor do later requests wait behind them: a 2026-07-28
/// `subscriptions/listen` stays open for the connection's life.
pub const UNORDERED: &[&str] = &[
    "ping",
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "subscriptions/listen",
];

/// Methods the stateless 2026-07-28 revision removed (SEP-2575).
const REMOVED_IN_STATELESS_ERA: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Whether `method` is one the stateless revision removed and the message names that revision
/// in its `_meta`: then its params are not the old ones, and rmcp answers it as an unknown
/// method (-32601; HTTP 404), as the revision asks, instead of the edge calling them invalid.
fn removed_and_stateless(method: &str, message: &serde_json::Map<String, Value>) -> bool {
    REMOVED_IN_STATELESS_ERA.contains(&method)
        && message
            .get("params")
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
            .and_then(Value::as_str)
            .is_some_and(|version| version >= "2026-07-28")
}

/// Whether a `tools/call`'s `inputResponses` is present but no object of objects, or its
/// `requestState` present but no string.
fn mistyped_round_trip_params(message: &serde_json::Map<String, Value>) -> bool {
    let Some(Value::Object(params)) = message.get("params") else {
        return false;
    };
    // An object of responses, each itself an object (an elicitation, sampling or roots result).
    let responses = params.get("inputResponses").is_some_and(|v| {
        v.as_object()
            .is_none_or(|responses| responses.values().any(|r| !r.is_object()))
    });
    let state = params.get("requestState").is_some_and(|v| !v.is_string());
    responses || state
}

fn undecodable(id: RequestId, method: &str, params: Option<Value>) -> Frame {
    if method == "tools/call" {
        return Frame::UndecodableCall {
            id,
            params: params.unwrap_or(Value::Null),
        };
    }
    Frame::Refused(Refusal::new(
        Some(id),
        ErrorCode::INVALID_PARAMS,
        format!("Invalid params: the params of {method} do not decode"),
    ))
}

fn kind_of(request: &ClientRequest) -> RequestKind {
    match request {
        ClientRequest::InitializeRequest(init) => {
            RequestKind::Initialize(Some(init.params.client_info.clone()))
        }
        ClientRequest::DiscoverRequest(_) | ClientRequest::PingRequest(_) => RequestKind::Other,
        request => {
            let meta = request.get_meta();
            let complete = meta
                .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty();
            match meta.protocol_version() {
                Some(version) if complete && ProtocolVersion::KNOWN_VERSIONS.contains(&version) => {
                    RequestKind::OpensLifecycle(meta.client_info())
                }
                _ => RequestKind::Other,
            }
        }
    }
}

/// Whether arrays and objects in `raw` nest deeper than `limit` (brackets inside strings do
/// not count). Linear, and never recursive.
fn depth_exceeds(raw: &[u8], limit: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in raw {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_oversized_message_is_answered_with_its_id_when_its_ends_show_it() {
        let big = "x".repeat(2 * CUT_BYTES);
        let id_of = |text: String| {
            let mut cut = Cut::default();
            for chunk in text.as_bytes().chunks(1000) {
                cut.push(chunk);
            }
            cut.id()
        };
        let first = format!(
            r#"{{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{{"name":"t","arguments":{{"thought":"{big}"}}}}}}"#
        );
        assert_eq!(id_of(first), Some(RequestId::Number(42)));
        let named = format!(
            r#"{{"jsonrpc":"2.0","method":"tools/call","id":"a\"b","params":{{"x":"{big}"}}}}"#
        );
        assert_eq!(id_of(named), Some(RequestId::String("a\"b".into())));
        let last = format!(
            r#"{{"method":"tools/call","params":{{"x":"{big}","nested":{{"id":9}}}},"jsonrpc":"2.0","id":7}}"#
        );
        assert_eq!(id_of(last), Some(RequestId::Number(7)));
        // An id only inside the parameters is not the request's.
        let nested = format!(r#"{{"method":"m","params":{{"x":"{big}","y":{{"id":9}}}}}}"#);
        assert_eq!(id_of(nested), None);
        let middle = format!(r#"{{"method":"m","params":{{"x":"{big}"}},"id":3,"tail":"{big}"}}"#);
        assert_eq!(id_of(middle), None, "neither end shows it");
    }

    use super::*;

    /// The code of the edge's own answer, or what else the message is.
    fn check(raw: &str, expect: &str) {
        let got = match classify(raw.as_bytes()) {
            Frame::Blank => "blank".to_owned(),
            Frame::Refused(r) => format!(
                "{} id={}",
                r.error.code.0,
                r.id.map_or("null".into(), |id| id.to_string())
            ),
            Frame::Request {
                id,
                kind,
                unordered,
            } => format!(
                "request {id} {kind:?}{}",
                if unordered { " unordered" } else { "" }
            ),
            Frame::Notice { cancels } => format!("notice cancels={cancels:?}"),
            Frame::Dropped => "dropped".to_owned(),
            Frame::UndecodableCall { id, params } => format!("undecodable call {id} {params}"),
        };
        assert_eq!(got, expect, "for {raw}");
    }

    #[test]
    fn what_is_not_json_is_a_parse_error_without_id() {
        check("{\"jsonrpc\":\"2.0\",\"id\":1,", "-32700 id=null");
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":NaN}}",
            "-32700 id=null",
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\\ud800\"}",
            "-32700 id=null",
        );
        check(
            &format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
            "-32700 id=null",
        );
        check(
            &format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH)),
            "-32600 id=null",
        );
        check("\u{feff}   ", "blank");
        check("", "blank");
    }

    #[test]
    fn what_is_no_request_is_an_invalid_request() {
        check("5", "-32600 id=null");
        check("[]", "-32600 id=null");
        check(
            "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
            "-32600 id=null",
        );
        check("{\"id\":1,\"method\":\"ping\"}", "-32600 id=1");
        check("{\"jsonrpc\":\"2.0\",\"id\":\"a\"}", "-32600 id=a");
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
            "-32600 id=null",
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
            "-32600 id=null",
        );
        check("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", "-32600 id=1");
    }

    #[test]
    fn known_methods_with_bad_params_are_invalid_params_and_unknown_ones_go_to_rmcp() {
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":5}}",
            "undecodable call 7 {\"name\":5}",
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\"}",
            "undecodable call 7 null",
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"inputResponses\":null}}",
            "undecodable call 8 {\"inputResponses\":null,\"name\":\"x\"}",
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"inputResponses\":{\"a\":5}}}",
            "undecodable call 8 {\"inputResponses\":{\"a\":5},\"name\":\"x\"}",
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"initialize\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}",
            "request 9 Other unordered",
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"initialize\",\"params\":{}}",
            "-32602 id=9",
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"requestState\":5}}",
            "undecodable call 8 {\"name\":\"x\",\"requestState\":5}",
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"resources/read\",\"params\":{\"uri\":[]}}",
            "-32602 id=8",
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"no/such\"}",
            "request 9 Other",
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"search\",\"arguments\":{}}}",
            "request 9 Other",
        );
    }

    #[test]
    fn notifications_are_never_answered() {
        check(
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3}}",
            "notice cancels=Some(Number(3))",
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
            "notice cancels=None",
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"result\":{},\"id\":4}",
            "notice cancels=None",
        );
    }

    #[test]
    fn requests_say_whether_they_open_the_lifecycle() {
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}",
            "request 1 Initialize(Some(Implementation { name: \"c\", title: None, version: \"1\", description: None, icons: None, website_url: None }))",
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
            "request 2 OpensLifecycle(None) unordered",
        );
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"server/discover\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
            "request 3 Other unordered",
        );
        // Reads nothing of the ledger, so it need not wait behind a call.
        check(
            "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}",
            "request 4 Other unordered",
        );
    }
}
