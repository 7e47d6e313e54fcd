//! The stdio edge: reads the client's lines, answers malformed ones itself, and forwards the
//! rest to rmcp through an in-memory pipe (`tokio::io::duplex`), one request at a time in
//! arrival order; everything reaches stdout through one writer, so lines never interleave.
//!
//! Order: request N+1 is forwarded only once request N is *admitted* (its command or query is
//! in the ledger writer's queue, reported through the [`ArrivalHook`] given to `ThinkServer`)
//! or answered (its response went out) or cancelled by the client. Handlers still run
//! concurrently and the writer still batches every connection's commands into one sync; only
//! admission is ordered. Notifications are never held back, except before the lifecycle is
//! open (rmcp's pre-`initialize` phase ends the connection on anything but a request): then
//! they wait in line behind the request that opens it, and are dropped if none did.
//! This module knows rmcp's wire and `ThinkServer`'s hook, not what a tool does.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{Implementation, RequestId};
use serde::Deserialize;
use serde::de::IgnoredAny;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{
    Cut, Frame, MAX_MESSAGE_BYTES, Refusal, RequestKind, error_response, undecodable_call_error,
};
use crate::tools::{Admission, ArrivalHook, LOCAL_PRINCIPAL, ThinkServer};

/// Bytes buffered between the edge and rmcp in each direction.
const PIPE_BYTES: usize = 1 << 20;

/// How long, once the client closed stdin, requests still queued may take to be admitted.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// Why the stdio edge stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    #[error("stdio: {0}")]
    Io(#[from] std::io::Error),
}

/// What the feeder hears about the request in flight.
#[derive(Debug)]
enum Release {
    /// The request was admitted into the ledger's queue (or its handler ended without it).
    Admitted(RequestId),
    /// rmcp answered the request (a result when `ok`).
    Answered { id: RequestId, ok: bool },
    /// rmcp's side of the pipe closed.
    Closed,
}

/// A message waiting for its turn.
enum Item {
    Request {
        id: RequestId,
        kind: RequestKind,
        line: Vec<u8>,
        /// Reads nothing of the ledger ([`super::UNORDERED`]): once the lifecycle is open it
        /// does not hold the line (a `subscriptions/listen` is never answered while it lives).
        unordered: bool,
    },
    Undecodable {
        id: RequestId,
        params: serde_json::Value,
    },
    /// A notification that arrived before the lifecycle was open.
    Notice(Vec<u8>),
}

/// Serves MCP on `input`/`output` (stdin/stdout) until the client closes `input` and every
/// answer is out, or `shutdown` is cancelled.
pub async fn serve<R, W>(
    server: ThinkServer,
    input: R,
    output: W,
    shutdown: CancellationToken,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_connection(server, input, output, shutdown, false).await
}

/// [`serve`] for a connection a relay opened on the owner's socket: the same edge, and the
/// connection's state ([`crate::tools::connection`]) sent to the relay whenever it changes,
/// ahead of the answer that changed it.
pub async fn serve_relayed<R, W>(
    server: ThinkServer,
    input: R,
    output: W,
    shutdown: CancellationToken,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_connection(server, input, output, shutdown, true).await
}

async fn serve_connection<R, W>(
    server: ThinkServer,
    input: R,
    output: W,
    shutdown: CancellationToken,
    relayed: bool,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(256);
    let server = if relayed {
        server.with_state_out(crate::tools::connection::StateOut::new(out_tx.clone()))
    } else {
        server
    };
    let (edge_side, rmcp_side) = tokio::io::duplex(PIPE_BYTES);
    let (release_tx, release_rx) = mpsc::unbounded_channel();
    let admitted = release_tx.clone();
    let hook: ArrivalHook = Arc::new(move |id: &RequestId| {
        let _ = admitted.send(Release::Admitted(id.clone()));
    });
    let server = server.with_arrival(hook.clone());

    let rmcp_ct = shutdown.child_token();
    let rmcp = tokio::spawn({
        let server = server.clone();
        let ct = rmcp_ct.clone();
        async move {
            match server.serve_with_ct(rmcp_side, ct).await {
                Ok(running) => {
                    if let Err(e) = running.waiting().await {
                        tracing::warn!(error = %e, "the MCP service ended abnormally");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "the MCP connection did not start"),
            }
        }
    });

    let writer = tokio::spawn(write_lines(output, out_rx));
    let (edge_read, edge_write) = tokio::io::split(edge_side);
    let copier = tokio::spawn(copy_answers(edge_read, out_tx.clone(), release_tx));
    let (frames_tx, frames_rx) = mpsc::channel(1024);
    let reader = tokio::spawn(read_frames(input, frames_tx, out_tx.clone()));

    let feeder = Feeder {
        server,
        hook,
        rmcp: edge_write,
        out: out_tx,
        queue: VecDeque::new(),
        in_flight: None,
        initializing: None,
        lifecycle_open: false,
        client: None,
    };
    let fed = feeder.run(frames_rx, release_rx, shutdown.clone()).await;
    // The feeder is gone (and with it rmcp's input): rmcp answers what it holds and closes.
    if shutdown.is_cancelled() {
        rmcp_ct.cancel();
    }
    reader.abort();
    let _ = rmcp.await;
    let _ = copier.await;
    let written = writer.await;
    fed?;
    match written {
        Ok(result) => result.map_err(StdioError::from),
        Err(e) => Err(StdioError::Io(std::io::Error::other(e))),
    }
}

/// Writes each line and its newline to `output`, flushing when nothing else is waiting.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut output: W,
    mut lines: mpsc::Receiver<Vec<u8>>,
) -> std::io::Result<()> {
    while let Some(line) = lines.recv().await {
        output.write_all(&line).await?;
        output.write_all(b"\n").await?;
        if lines.is_empty() {
            output.flush().await?;
        }
    }
    output.flush().await
}

/// The fields of an outgoing message that say whether it answers a request.
#[derive(Deserialize)]
struct Peek {
    id: Option<RequestId>,
    method: Option<IgnoredAny>,
    result: Option<IgnoredAny>,
}

/// Copies rmcp's lines to the writer, telling the feeder which requests they answer.
async fn copy_answers<R: AsyncRead + Unpin>(
    from_rmcp: R,
    out: mpsc::Sender<Vec<u8>>,
    releases: mpsc::UnboundedSender<Release>,
) {
    let mut lines = BufReader::new(from_rmcp);
    let mut line = Vec::new();
    loop {
        line.clear();
        match lines.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line).to_vec();
        let answered = serde_json::from_slice::<Peek>(&text)
            .ok()
            .filter(|peek| peek.method.is_none())
            .and_then(|peek| {
                let ok = peek.result.is_some();
                peek.id.map(|id| Release::Answered { id, ok })
            });
        if out.send(text).await.is_err() {
            break;
        }
        if let Some(answered) = answered {
            let _ = releases.send(answered);
        }
    }
    let _ = releases.send(Release::Closed);
}

/// Reads the client's lines, answers the malformed ones at once, and hands the rest on.
async fn read_frames<R: AsyncRead + Unpin>(
    input: R,
    frames: mpsc::Sender<(Frame, Vec<u8>)>,
    out: mpsc::Sender<Vec<u8>>,
) {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = match read_bounded_line(&mut input, &mut line, MAX_MESSAGE_BYTES).await {
            Ok(read) => read,
            Err(e) => {
                tracing::warn!(error = %e, "reading stdin failed");
                return;
            }
        };
        let frame = match read {
            LineRead::Eof => return,
            LineRead::Oversized(cut) => Frame::Refused(Refusal::too_large(&cut)),
            LineRead::Line => {
                let text = line.strip_suffix(b"\n").unwrap_or(&line);
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                super::classify(text)
            }
        };
        match frame {
            Frame::Blank => {}
            Frame::Dropped => tracing::debug!("dropped a notification that does not decode"),
            Frame::Refused(refusal) => {
                if out
                    .send(refusal.to_json().to_string().into_bytes())
                    .await
                    .is_err()
                {
                    return;
                }
            }
            frame => {
                let text = line.strip_suffix(b"\n").unwrap_or(&line);
                let text = text.strip_suffix(b"\r").unwrap_or(text).to_vec();
                if frames.send((frame, text)).await.is_err() {
                    return;
                }
            }
        }
    }
}

enum LineRead {
    Line,
    Oversized(Cut),
    Eof,
}

/// Reads one line into `line`, never holding more than `limit` bytes of it: a longer line is
/// consumed to its end and reported as oversized, with its first and last bytes (to answer
/// with its id when they show it).
async fn read_bounded_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<LineRead> {
    let mut oversized: Option<Cut> = None;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            // A last line without its newline still counts.
            return Ok(match (oversized, line.is_empty()) {
                (Some(cut), _) => LineRead::Oversized(cut),
                (None, true) => LineRead::Eof,
                (None, false) => LineRead::Line,
            });
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.map_or(available.len(), |at| at + 1);
        match &mut oversized {
            None if line.len().saturating_add(take) > limit.saturating_add(2) => {
                let mut cut = Cut::default();
                cut.push(line);
                cut.push(&available[..take]);
                oversized = Some(cut);
                line.clear();
            }
            None => line.extend_from_slice(&available[..take]),
            Some(cut) => cut.push(&available[..take]),
        }
        input.consume(take);
        if newline.is_some() {
            return Ok(match oversized {
                Some(cut) => LineRead::Oversized(cut),
                None => LineRead::Line,
            });
        }
    }
}

/// Owns rmcp's input: forwards requests one admission at a time, notifications at once.
struct Feeder<W> {
    server: ThinkServer,
    hook: ArrivalHook,
    rmcp: W,
    out: mpsc::Sender<Vec<u8>>,
    /// Requests (and, before the lifecycle is open, notifications) waiting their turn.
    queue: VecDeque<Item>,
    /// The request forwarded last and not yet admitted, answered or cancelled.
    in_flight: Option<RequestId>,
    /// The `initialize` request in flight, whose answer opens the lifecycle.
    initializing: Option<RequestId>,
    /// Whether rmcp is past its pre-`initialize` phase (notifications may go to it).
    lifecycle_open: bool,
    /// The client, as its `initialize` (or a 2026-07-28 request's `_meta`) named it.
    client: Option<Implementation>,
}

impl<W: AsyncWrite + Unpin> Feeder<W> {
    /// Feeds rmcp until the input is done (or `shutdown`), then closes rmcp's input, so that
    /// it answers what it holds and closes its side.
    async fn run(
        mut self,
        frames: mpsc::Receiver<(Frame, Vec<u8>)>,
        releases: mpsc::UnboundedReceiver<Release>,
        shutdown: CancellationToken,
    ) -> Result<(), StdioError> {
        let fed = self.feed(frames, releases, shutdown).await;
        let closed = self.rmcp.shutdown().await;
        fed?;
        Ok(closed?)
    }

    async fn feed(
        &mut self,
        mut frames: mpsc::Receiver<(Frame, Vec<u8>)>,
        mut releases: mpsc::UnboundedReceiver<Release>,
        shutdown: CancellationToken,
    ) -> Result<(), StdioError> {
        let mut input_open = true;
        let drain = tokio::time::sleep(Duration::MAX);
        tokio::pin!(drain);
        loop {
            self.pump().await?;
            if !input_open && self.queue.is_empty() && self.in_flight.is_none() {
                return Ok(());
            }
            tokio::select! {
                frame = frames.recv(), if input_open => match frame {
                    Some((frame, line)) => self.accept(frame, line).await?,
                    None => {
                        input_open = false;
                        drain.as_mut().reset(tokio::time::Instant::now() + DRAIN_LIMIT);
                    }
                },
                release = releases.recv() => match release {
                    Some(Release::Admitted(id)) => self.release(&id),
                    Some(Release::Answered { id, ok }) => {
                        if self.initializing.as_ref() == Some(&id) {
                            self.initializing = None;
                            self.lifecycle_open |= ok;
                        }
                        self.release(&id);
                    }
                    Some(Release::Closed) | None => {
                        tracing::debug!("the MCP service closed its side");
                        return Ok(());
                    }
                },
                () = &mut drain => {
                    tracing::warn!("requests still queued when stdin closed were not admitted in time");
                    return Ok(());
                }
                () = shutdown.cancelled() => return Ok(()),
            }
        }
    }

    fn release(&mut self, id: &RequestId) {
        if self.in_flight.as_ref() == Some(id) {
            self.in_flight = None;
        }
    }

    async fn accept(&mut self, frame: Frame, line: Vec<u8>) -> Result<(), StdioError> {
        match frame {
            // Reads nothing of the ledger: answered at once, whatever waits ahead of it.
            Frame::Request {
                unordered: true, ..
            } if self.lifecycle_open => self.forward(&line).await?,
            Frame::Request {
                id,
                kind,
                unordered,
            } => {
                self.queue.push_back(Item::Request {
                    id,
                    kind,
                    line,
                    unordered,
                });
            }
            Frame::UndecodableCall { id, params } => {
                self.queue.push_back(Item::Undecodable { id, params });
            }
            Frame::Notice { cancels } if self.lifecycle_open => {
                if let Some(cancelled) = cancels {
                    // The client gave up on it: a queued request is dropped unanswered, the
                    // one in flight no longer holds the line.
                    self.queue.retain(|item| !matches!(item, Item::Request { id, .. } | Item::Undecodable { id, .. } if *id == cancelled));
                    self.release(&cancelled);
                }
                self.forward(&line).await?;
            }
            Frame::Notice { .. } => self.queue.push_back(Item::Notice(line)),
            Frame::Blank | Frame::Dropped | Frame::Refused(_) => {}
        }
        Ok(())
    }

    /// Sends queued messages while no request is in flight.
    async fn pump(&mut self) -> Result<(), StdioError> {
        while self.in_flight.is_none() {
            let Some(item) = self.queue.pop_front() else {
                return Ok(());
            };
            match item {
                Item::Request {
                    id,
                    kind,
                    line,
                    unordered,
                } => {
                    // An `initialize` holds the line until answered; a 2026-07-28 request that
                    // opens the lifecycle reaches rmcp first, so later ones may follow it.
                    let initialize = matches!(kind, RequestKind::Initialize(_));
                    match kind {
                        RequestKind::Initialize(client) => {
                            self.client = client;
                            self.initializing = Some(id.clone());
                        }
                        RequestKind::OpensLifecycle(client) => {
                            if !self.lifecycle_open {
                                self.lifecycle_open = true;
                                self.client = client;
                            }
                        }
                        RequestKind::Other => {}
                    }
                    if !(unordered && !initialize && self.lifecycle_open) {
                        self.in_flight = Some(id);
                    }
                    self.forward(&line).await?;
                }
                Item::Undecodable { id, params } => {
                    self.in_flight = Some(id.clone());
                    let server = self.server.clone();
                    let client = self.client.clone();
                    let out = self.out.clone();
                    let admission = Admission::new(Some(self.hook.clone()), id.clone(), None);
                    tokio::spawn(async move {
                        let recorded = admission
                            .scope(server.record_undecodable_call(
                                params,
                                client.as_ref(),
                                LOCAL_PRINCIPAL,
                            ))
                            .await;
                        let answer = error_response(Some(&id), &undecodable_call_error(recorded));
                        let _ = out.send(answer.to_string().into_bytes()).await;
                    });
                }
                Item::Notice(line) if self.lifecycle_open => self.forward(&line).await?,
                Item::Notice(_) => {
                    tracing::debug!("dropped a notification sent before the lifecycle opened");
                }
            }
        }
        Ok(())
    }

    async fn forward(&mut self, line: &[u8]) -> Result<(), StdioError> {
        self.rmcp.write_all(line).await?;
        self.rmcp.write_all(b"\n").await?;
        self.rmcp.flush().await?;
        Ok(())
    }
}
