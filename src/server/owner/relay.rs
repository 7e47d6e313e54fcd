//! The relay's side: a `thinkledger serve` whose directory has an owner copies its client's
//! MCP lines to the owner and the owner's back, and keeps what it needs to go on with another
//! owner: the client's `initialize` and `notifications/initialized` (sent again, the answer
//! kept from the client), every request not yet answered (sent again, in order), and the
//! connection's state as the owner last reported it (handed to the next owner in the hello).
//! Each `tools/call` gets an idempotency key when first sent (unless the client gave one), so a
//! call the lost owner recorded is answered from the log by the next, never recorded twice.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::{Connection, Door, DoorError, Hello, OwnerLock, build, find_next_owner, read_line};
use crate::events::SessionId;
use crate::tools::IDEMPOTENCY_META_KEY;
use crate::tools::connection::{ConnectionState, STATE_NOTIFICATION};

/// How long a relay looks for the next owner (or the lock to become it) once the last is gone.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Makes this process the owner (opens the ledger, listens on the socket) under `lock`; the
/// relay then connects to it like any other.
pub type Promote = Box<dyn FnMut(OwnerLock) -> Result<(), String> + Send>;

/// The hello of a relay starting with `toolsets` in `state`.
pub fn hello(toolsets: &str, state: &ConnectionState) -> Hello {
    Hello::Mcp {
        build: build(),
        toolsets: toolsets.to_owned(),
        state: state.clone(),
    }
}

/// A new connection's state: a session of its own, chosen here so that a call in flight when
/// the first owner goes is recorded in the same session by the next.
pub fn first_state() -> ConnectionState {
    ConnectionState {
        session: Some(SessionId::random().as_str().to_owned()),
        ..ConnectionState::default()
    }
}

/// What a relay keeps to go on with another owner.
struct Memory {
    data_dir: PathBuf,
    toolsets: String,
    state: ConnectionState,
    /// This relay's prefix of the idempotency keys it adds.
    relay_id: String,
    /// The client's `initialize` request and `notifications/initialized`, as sent.
    initialize: Option<(String, Vec<u8>)>,
    initialized: Option<Vec<u8>>,
    /// Requests not yet answered, in the order sent: (id as JSON, line as sent).
    in_flight: BTreeMap<u64, (String, Vec<u8>)>,
    by_id: HashMap<String, u64>,
    next: u64,
    /// The id of an `initialize` sent again to a new owner, whose answer the client never sees.
    reinit: Option<String>,
    /// The owner's pid, for the log.
    owner: u32,
}

#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
}

impl Memory {
    /// The line to send the owner for the client's `line`, remembered if it is a request.
    fn client_line(&mut self, line: Vec<u8>) -> Vec<u8> {
        let Ok(peek) = serde_json::from_slice::<Peek>(&line) else {
            return line;
        };
        match (peek.id.filter(|id| !id.is_null()), peek.method) {
            (Some(id), Some(method)) => {
                let n = self.next;
                self.next += 1;
                let line = if method == "tools/call" {
                    self.with_key(line, n)
                } else {
                    line
                };
                let key = id.to_string();
                if method == "initialize" {
                    self.initialize = Some((key.clone(), line.clone()));
                }
                self.by_id.insert(key.clone(), n);
                self.in_flight.insert(n, (key, line.clone()));
                line
            }
            (None, Some(method)) if method == "notifications/initialized" => {
                self.initialized = Some(line.clone());
                line
            }
            _ => line,
        }
    }

    /// `line` (a `tools/call`) with an idempotency key in its `_meta`, unless it has one.
    fn with_key(&self, line: Vec<u8>, n: u64) -> Vec<u8> {
        let key = format!("relay-{}-{n}", self.relay_id);
        // Most calls carry no `_meta`: the key's member goes in front of the params' first
        // member, without parsing the call (a thought may be long).
        if let Some(spliced) = splice_meta(&line, &key) {
            return spliced;
        }
        let Ok(mut message) = serde_json::from_slice::<Value>(&line) else {
            return line;
        };
        let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else {
            return line;
        };
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        let Some(meta) = meta.as_object_mut() else {
            return line;
        };
        if meta.contains_key(IDEMPOTENCY_META_KEY) {
            return line;
        }
        meta.insert(IDEMPOTENCY_META_KEY.to_owned(), Value::String(key));
        serde_json::to_vec(&message).unwrap_or(line)
    }

    /// The line to give the client for the owner's `line`, if any: a state report is kept, the
    /// answer to an `initialize` sent again is dropped.
    fn owner_line(&mut self, line: Vec<u8>) -> Option<Vec<u8>> {
        let Ok(peek) = serde_json::from_slice::<Peek>(&line) else {
            return Some(line);
        };
        match (peek.id, peek.method) {
            (None, Some(method)) if method == STATE_NOTIFICATION => {
                #[derive(Deserialize)]
                struct Report {
                    params: ConnectionState,
                }
                if let Ok(report) = serde_json::from_slice::<Report>(&line) {
                    self.state = report.params;
                }
                None
            }
            (Some(id), None) => {
                let key = id.to_string();
                if self.reinit.as_deref() == Some(key.as_str()) {
                    self.reinit = None;
                    return None;
                }
                if let Some(n) = self.by_id.remove(&key) {
                    self.in_flight.remove(&n);
                }
                Some(line)
            }
            _ => Some(line),
        }
    }

    /// Finds the next owner (becoming it if no process is), and sends it what the client is
    /// waiting on.
    async fn reconnect(&mut self, promote: &mut Promote) -> Result<Connection, DoorError> {
        let lost = Instant::now();
        tracing::warn!(
            owner = self.owner,
            in_flight = self.in_flight.len(),
            "the ledger's owner went away; finding the next"
        );
        loop {
            let hello = hello(&self.toolsets, &self.state);
            match find_next_owner(&self.data_dir, &hello, PATIENCE).await? {
                Door::Owner(lock) => promote(lock).map_err(DoorError::Refused)?,
                Door::Relay(mut connection) => {
                    match self.send_again(&mut connection).await {
                        Ok(()) => {
                            self.owner = connection.welcome.pid;
                            tracing::info!(
                                owner = self.owner,
                                paused_ms = lost.elapsed().as_millis() as u64,
                                "relaying to the ledger's new owner"
                            );
                            return Ok(connection);
                        }
                        // That owner went too: look again.
                        Err(_) => continue,
                    }
                }
            }
        }
    }

    /// Sends a new owner the client's handshake and every request not yet answered.
    async fn send_again(&mut self, connection: &mut Connection) -> std::io::Result<()> {
        let mut lines = Vec::new();
        self.reinit = None;
        if let Some((id, line)) = &self.initialize
            && !self.by_id.contains_key(id)
            && let Ok(mut message) = serde_json::from_slice::<Value>(line)
        {
            let reinit = Value::String(format!("thinkledger-relay-reinit-{}", self.next));
            self.next += 1;
            message["id"] = reinit.clone();
            self.reinit = Some(reinit.to_string());
            lines.push(serde_json::to_vec(&message).unwrap_or_default());
            if let Some(initialized) = &self.initialized {
                lines.push(initialized.clone());
            }
        }
        lines.extend(self.in_flight.values().map(|(_, line)| line.clone()));
        for mut line in lines {
            line.push(b'\n');
            connection.writer.write_all(&line).await?;
        }
        connection.writer.flush().await
    }
}

/// Relays the client on `input`/`output` to the owner `first` connects to, and to the next
/// owner whenever one goes (this process becoming it through `promote` when it takes the
/// lock), until the client closes `input` (or `shutdown`: a signal) and every request it made
/// is answered.
#[allow(clippy::too_many_arguments)]
pub async fn run<R, W>(
    data_dir: PathBuf,
    toolsets: String,
    state: ConnectionState,
    first: Connection,
    input: R,
    output: W,
    mut promote: Promote,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<(), DoorError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut memory = Memory {
        data_dir,
        toolsets,
        state,
        relay_id: SessionId::random().as_str().to_owned(),
        initialize: None,
        initialized: None,
        in_flight: BTreeMap::new(),
        by_id: HashMap::new(),
        next: 0,
        reinit: None,
        owner: first.welcome.pid,
    };
    tracing::info!(owner = memory.owner, "relaying to the ledger's owner");
    let (client_tx, mut client_rx) = mpsc::channel::<Vec<u8>>(1024);
    let reader = tokio::spawn(read_client(input, client_tx));
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(1024);
    let writer = tokio::spawn(write_lines(output, out_rx));
    let mut client_open = true;
    let mut connection = first;
    'connections: loop {
        let (owner_tx, mut owner_rx) = mpsc::channel::<Vec<u8>>(1024);
        let Connection {
            reader: owner_reader,
            writer: mut owner_writer,
            welcome,
        } = connection;
        let owner_task = tokio::spawn(read_owner(owner_reader, owner_tx));
        if !client_open {
            let _ = owner_writer.shutdown().await;
        }
        let lost = loop {
            tokio::select! {
                line = client_rx.recv(), if client_open => match line {
                    Some(line) => {
                        let mut line = memory.client_line(line);
                        line.push(b'\n');
                        if owner_writer.write_all(&line).await.is_err() {
                            break true;
                        }
                    }
                    None => {
                        // The client is done: the owner answers what it holds, then closes.
                        client_open = false;
                        let _ = owner_writer.shutdown().await;
                    }
                },
                () = shutdown.cancelled(), if client_open => {
                    // Asked to stop: as if the client were done.
                    client_open = false;
                    let _ = owner_writer.shutdown().await;
                }
                line = owner_rx.recv() => match line {
                    Some(line) => {
                        if let Some(line) = memory.owner_line(line)
                            && out_tx.send(line).await.is_err()
                        {
                            // The client's output is gone: nothing more to relay.
                            break false;
                        }
                    }
                    None if !client_open && memory.in_flight.is_empty() => break false,
                    None => break true,
                },
            }
        };
        owner_task.abort();
        drop(welcome);
        if !lost {
            break 'connections;
        }
        connection = match memory.reconnect(&mut promote).await {
            Ok(connection) => connection,
            Err(e) => {
                reader.abort();
                drop(out_tx);
                let _ = writer.await;
                return Err(e);
            }
        };
    }
    reader.abort();
    drop(out_tx);
    let _ = writer.await;
    Ok(())
}

/// `line` with `"_meta":{"idempotencyKey":KEY}` as the first member of its `params` object,
/// when the line has no `_meta` anywhere (else `None`: the caller merges it into the one there).
/// The first `"params"` in a line is the request's own member: quotes inside strings are
/// escaped, and the tool's arguments sit inside `params`.
fn splice_meta(line: &[u8], key: &str) -> Option<Vec<u8>> {
    fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
        haystack.windows(needle.len()).position(|w| w == needle)
    }
    if find(line, b"\"_meta\"").is_some() {
        return None;
    }
    let skip_ws = |mut at: usize| {
        while line.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        at
    };
    let at = find(line, b"\"params\"")? + b"\"params\"".len();
    let at = skip_ws(at);
    (line.get(at) == Some(&b':')).then_some(())?;
    let at = skip_ws(at + 1);
    (line.get(at) == Some(&b'{')).then_some(())?;
    let inside = at + 1;
    let empty = line.get(skip_ws(inside)) == Some(&b'}');
    let member = serde_json::to_string(&serde_json::json!({ IDEMPOTENCY_META_KEY: key })).ok()?;
    let mut out = Vec::with_capacity(line.len() + member.len() + 12);
    out.extend_from_slice(&line[..inside]);
    out.extend_from_slice(b"\"_meta\":");
    out.extend_from_slice(member.as_bytes());
    if !empty {
        out.push(b',');
    }
    out.extend_from_slice(&line[inside..]);
    Some(out)
}

async fn read_client<R: AsyncRead + Unpin>(input: R, lines: mpsc::Sender<Vec<u8>>) {
    let mut input = BufReader::new(input);
    loop {
        let mut line = Vec::new();
        match input.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if lines.send(line).await.is_err() {
            return;
        }
    }
}

async fn read_owner(
    mut reader: BufReader<tokio::net::unix::OwnedReadHalf>,
    lines: mpsc::Sender<Vec<u8>>,
) {
    loop {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        } else {
            // A line cut off by the owner's end is not a message.
            return;
        }
        if lines.send(line).await.is_err() {
            return;
        }
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(mut output: W, mut lines: mpsc::Receiver<Vec<u8>>) {
    while let Some(mut line) = lines.recv().await {
        line.push(b'\n');
        if output.write_all(&line).await.is_err() {
            return;
        }
        if lines.is_empty() && output.flush().await.is_err() {
            return;
        }
    }
    let _ = output.flush().await;
}

/// Answers every request the client makes with `message` as a JSON-RPC error until it closes
/// `input`: a client whose directory's owner refuses this process hears why.
pub async fn refuse_all<R, W>(input: R, mut output: W, message: String)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut input = BufReader::new(input);
    while let Ok(Some(line)) = read_line(&mut input).await {
        let Ok(peek) = serde_json::from_slice::<Peek>(&line) else {
            continue;
        };
        let (Some(id), Some(_)) = (peek.id, peek.method) else {
            continue;
        };
        let mut answer = serde_json::to_vec(&serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32603, "message": message},
        }))
        .unwrap_or_default();
        answer.push(b'\n');
        if output.write_all(&answer).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_spliced_into_params_or_merged_into_the_meta_there() {
        let key = "relay-x-1";
        for (line, expected) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":"\"params\":{"}}}"#,
                serde_json::json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"idempotencyKey":key},"name":"t","arguments":{"a":"\"params\":{"}}}),
            ),
            (
                r#"{"method":"tools/call","params" : { },"id":2,"jsonrpc":"2.0"}"#,
                serde_json::json!({"method":"tools/call","params":{"_meta":{"idempotencyKey":key}},"id":2,"jsonrpc":"2.0"}),
            ),
        ] {
            let spliced = splice_meta(line.as_bytes(), key).expect("spliced");
            let parsed: Value = serde_json::from_slice(&spliced).expect("still JSON");
            assert_eq!(parsed, expected);
        }
        let with_meta =
            r#"{"id":3,"method":"tools/call","params":{"_meta":{"progressToken":1},"name":"t"}}"#;
        assert_eq!(splice_meta(with_meta.as_bytes(), key), None);
    }

    /// The owner decides a relayed call from the client's own `_meta`: the relay adds its key
    /// beside the trace context (MCP SEP-414) and the rest, and changes none of them.
    #[test]
    fn a_relayed_call_keeps_its_meta_whole() {
        let memory = Memory {
            data_dir: PathBuf::new(),
            toolsets: String::new(),
            state: ConnectionState::default(),
            relay_id: "x".into(),
            initialize: None,
            initialized: None,
            in_flight: BTreeMap::new(),
            by_id: HashMap::new(),
            next: 1,
            reinit: None,
            owner: 0,
        };
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let meta = serde_json::json!({
            "traceparent": traceparent,
            "tracestate": "congo=t61rcWkgMzE",
            "progressToken": 3,
        });
        let line = serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"_meta": meta, "name": "t", "arguments": {"a": 1}},
        });
        let sent = memory.with_key(serde_json::to_vec(&line).expect("JSON"), 4);
        let sent: Value = serde_json::from_slice(&sent).expect("still JSON");
        let mut expected = line.clone();
        expected["params"]["_meta"]["idempotencyKey"] = "relay-x-4".into();
        assert_eq!(sent, expected);
        // A key the client chose is kept too.
        let mut keyed = line;
        keyed["params"]["_meta"]["idempotencyKey"] = "mine".into();
        let sent = memory.with_key(serde_json::to_vec(&keyed).expect("JSON"), 5);
        assert_eq!(serde_json::from_slice::<Value>(&sent).expect("JSON"), keyed);
    }
}
