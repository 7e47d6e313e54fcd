//! The owner's side: the ledger opened by this process, its socket, and what each peer gets —
//! a relay an MCP connection of its own (served by the stdio edge, its state reported back),
//! a command its run against this ledger.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use std::future::Future;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{HANDSHAKE_TIMEOUT, Hello, OwnerLock, Welcome, build, read_line, socket_path};
use crate::app::App;
use crate::ledger::LedgerHandle;
use crate::server::audit_stream::AuditStream;
use crate::server::framing;
use crate::tools::{Catalog, ThinkServer, Toolsets};

/// What a command run through the owner printed, and how it ended.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CommandReply {
    /// Its standard output, base64.
    pub stdout: String,
    /// Its standard error, base64.
    pub stderr: String,
    /// Its exit status.
    pub exit: u8,
}

impl CommandReply {
    pub fn new(stdout: &[u8], stderr: &[u8], exit: u8) -> Self {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        Self {
            stdout: b64.encode(stdout),
            stderr: b64.encode(stderr),
            exit,
        }
    }

    pub fn stdout_bytes(&self) -> Vec<u8> {
        decoded(&self.stdout)
    }

    pub fn stderr_bytes(&self) -> Vec<u8> {
        decoded(&self.stderr)
    }
}

fn decoded(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_default()
}

/// The owner's reply to the command a connection's hello carried: read to the end.
pub async fn read_reply(connection: super::Connection) -> Result<CommandReply, super::DoorError> {
    use tokio::io::AsyncReadExt;
    let mut reader = connection.reader;
    let mut bytes = Vec::new();
    reader
        .read_to_end(&mut bytes)
        .await
        .map_err(super::io_error("reading the serving process's answer"))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        super::DoorError::Refused(format!(
            "the serving process (pid {}) ended before answering the command ({e}); run it              again",
            connection.welcome.pid
        ))
    })
}

/// Runs a command (as the CLI serialized it) against the owner's ledger.
pub type CommandRunner = Arc<
    dyn Fn(
            serde_json::Value,
            LedgerHandle<App>,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = CommandReply> + Send>>
        + Send
        + Sync,
>;

/// How long a closing owner waits for its relays' calls in flight to be answered.
const HAND_OFF_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The ledger this process owns and the socket its relays and commands reach it by.
pub struct Owned {
    pub ledger: LedgerHandle<App>,
    /// Open MCP connections of relays.
    relays: watch::Receiver<usize>,
    /// Asks every relayed connection to take no new request, answer what it holds and close.
    drain: CancellationToken,
    /// Stops accepting.
    stop: CancellationToken,
    /// The relayed connections' tasks, dropped if a hand-off outlasts its limit.
    connections: Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
    /// The socket file, when one could be made.
    socket: Option<PathBuf>,
    /// The audit stream that follows the ledger, finished before the ledger closes.
    stream: Option<AuditStream>,
    _lock: OwnerLock,
}

impl Owned {
    /// Takes up the ledger `ledger` (opened by this process under `lock`) and listens for
    /// relays and commands on the directory's socket until [`Owned::close`]. A socket that
    /// cannot be made is said once in the log: the process then serves alone.
    pub fn listen(
        data_dir: &Path,
        lock: OwnerLock,
        ledger: LedgerHandle<App>,
        runner: Option<CommandRunner>,
    ) -> Self {
        let (count, relays) = watch::channel(0usize);
        // Not children of `shutdown`: on a signal the owner hands its relays off as when its
        // own client leaves, answering their calls in flight first.
        let stop = CancellationToken::new();
        let drain = CancellationToken::new();
        let connections = Arc::<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>::default();
        let path = socket_path(data_dir);
        let socket = match bind(&path) {
            Ok(listener) => {
                tokio::spawn(accept_loop(
                    listener,
                    Peers {
                        ledger: ledger.clone(),
                        runner,
                        relays: Arc::new(count),
                        drain: drain.clone(),
                        stop: stop.clone(),
                        connections: connections.clone(),
                    },
                ));
                tracing::debug!(socket = %path.display(), "owner of the data directory");
                Some(path)
            }
            Err(e) => {
                tracing::warn!(
                    socket = %path.display(),
                    error = %e,
                    "no socket for other processes in the data directory: this process serves \
                     alone, and a second `thinkledger serve` on it will be refused"
                );
                None
            }
        };
        Self {
            ledger,
            relays,
            drain,
            stop,
            connections,
            socket,
            stream: None,
            _lock: lock,
        }
    }

    /// The same owner, with the audit stream that follows its ledger: [`Owned::close`] lets
    /// it send what is left before the ledger closes.
    pub fn with_stream(mut self, stream: Option<AuditStream>) -> Self {
        self.stream = stream;
        self
    }

    /// Hands the ledger on and closes it: no new peer (the socket goes), each relay's calls in
    /// flight answered (for up to [`HAND_OFF_LIMIT`]) before its connection closes — it then
    /// finds the next owner, or becomes it, once this process has let go of the lock — and the
    /// ledger synced and closed.
    pub async fn close(self) {
        if let Some(path) = &self.socket {
            let _ = std::fs::remove_file(path);
        }
        self.drain.cancel();
        let mut relays = self.relays.clone();
        if tokio::time::timeout(HAND_OFF_LIMIT, relays.wait_for(|n| *n == 0))
            .await
            .is_err()
        {
            // Their connections are dropped, not cancelled: a call still in flight is then
            // either recorded before the ledger closes (the relay's resend is answered from the
            // log) or not at all (the next owner decides it), never recorded as cancelled.
            tracing::warn!("relays' calls still in flight after 10 s: their connections close now");
            let tasks = std::mem::take(
                &mut *self
                    .connections
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            );
            for task in tasks {
                task.abort();
            }
        }
        self.stop.cancel();
        if let Some(stream) = self.stream {
            stream.finish().await;
        }
        self.ledger.shutdown().await;
    }
}

/// Binds the socket (mode 0600), replacing a file a crashed owner left: the lock says no
/// owner lives.
fn bind(path: &Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// What every peer of the owner shares.
#[derive(Clone)]
struct Peers {
    ledger: LedgerHandle<App>,
    runner: Option<CommandRunner>,
    relays: Arc<watch::Sender<usize>>,
    drain: CancellationToken,
    stop: CancellationToken,
    connections: Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

async fn accept_loop(listener: UnixListener, peers: Peers) {
    loop {
        let stream = tokio::select! {
            () = peers.stop.cancelled() => return,
            () = peers.drain.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting on the owner's socket failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let task = tokio::spawn(peer(stream, peers.clone()));
        let mut tasks = peers
            .connections
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        tasks.retain(|t| !t.is_finished());
        tasks.push(task.abort_handle());
    }
}

/// The refusal of a peer whose process runs as another user.
fn other_user(stream: &UnixStream) -> Option<String> {
    let me = rustix::process::getuid().as_raw();
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == me => None,
        Ok(cred) => Some(format!(
            "this ledger belongs to user {me}; a process of user {} may not use it",
            cred.uid()
        )),
        Err(e) => Some(format!("the peer's user could not be read: {e}")),
    }
}

async fn peer(stream: UnixStream, peers: Peers) {
    let Peers {
        ledger,
        runner,
        relays,
        drain,
        ..
    } = peers;
    let refused_user = other_user(&stream);
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    let hello = match tokio::time::timeout(HANDSHAKE_TIMEOUT, read_line(&mut read)).await {
        Ok(Ok(Some(line))) => serde_json::from_slice::<Hello>(&line).map_err(|e| e.to_string()),
        Ok(Ok(None)) => return,
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("no hello within 5 s".to_owned()),
    };
    let ours = build();
    // A relay's toolsets, parsed once: refused below if they do not parse.
    let toolsets = match &hello {
        Ok(Hello::Mcp { toolsets, .. }) => Some(Toolsets::parse(toolsets)),
        _ => None,
    };
    let refused = match (&refused_user, &hello) {
        (Some(why), _) => Some(why.clone()),
        (None, Err(e)) => Some(format!(
            "{ours} serves this data directory and could not read the peer's hello ({e}): \
             is the peer another version?"
        )),
        (None, Ok(hello)) if hello.build() != ours => Some(format!(
            "this data directory is served by {ours} (pid {}); this process is {}: quit the \
             clients of one version, or give each version a data directory of its own \
             (--data-dir)",
            std::process::id(),
            hello.build()
        )),
        (None, Ok(Hello::Mcp { .. })) => match &toolsets {
            Some(Err(e)) => Some(format!("--toolsets: {e}")),
            _ => None,
        },
        (None, Ok(Hello::Command { .. })) => None,
    };
    let welcome = Welcome {
        build: ours,
        pid: std::process::id(),
        refused: refused.clone(),
    };
    let mut line = serde_json::to_vec(&welcome).unwrap_or_default();
    line.push(b'\n');
    if write.write_all(&line).await.is_err() {
        return;
    }
    if let Some(why) = refused {
        tracing::warn!(reason = %why, "refused a peer on the owner's socket");
        return;
    }
    match hello {
        Ok(Hello::Mcp { state, .. }) => {
            let Some(Ok(toolsets)) = toolsets else {
                return;
            };
            relays.send_modify(|n| *n += 1);
            // Counted in `thinkledger_relays_connected` until this task ends or is dropped.
            let _counted = crate::metrics::process().relay_connected();
            let server = ThinkServer::new(ledger, Arc::new(Catalog::new(toolsets)), "stdio")
                .with_connection_state(&state);
            // When the owner hands off, the connection's input ends at the next line boundary:
            // the edge answers what it holds and closes, and the relay sends what it did not
            // hear answered to the next owner.
            let input = UntilDrained::new(read, drain);
            // Never cancelled from here (see `Owned::close`): a connection ends when its
            // input does, or is dropped.
            let never = CancellationToken::new();
            if let Err(e) = framing::stdio::serve_relayed(server, input, write, never).await {
                tracing::debug!(error = %e, "a relayed connection ended abnormally");
            }
            relays.send_modify(|n| *n -= 1);
        }
        Ok(Hello::Command { command, .. }) => {
            let reply = match runner {
                Some(runner) => runner(command, ledger).await,
                None => CommandReply::new(
                    b"",
                    b"thinkledger: this server runs no commands for other processes\n",
                    1,
                ),
            };
            let mut line = serde_json::to_vec(&reply).unwrap_or_default();
            line.push(b'\n');
            let _ = write.write_all(&line).await;
            let _ = write.shutdown().await;
        }
        Err(_) => {}
    }
}

/// A relayed connection's input that ends (EOF) once `drain` is cancelled, at a line boundary:
/// a line begun is read to its end, and what follows it is dropped (the relay sends again any
/// request it does not hear answered).
struct UntilDrained<R> {
    inner: R,
    drained: std::pin::Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
    at_boundary: bool,
    ended: bool,
}

impl<R> UntilDrained<R> {
    fn new(inner: R, drain: CancellationToken) -> Self {
        Self {
            inner,
            drained: Box::pin(drain.cancelled_owned()),
            at_boundary: true,
            ended: false,
        }
    }
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for UntilDrained<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        if self.ended {
            return Poll::Ready(Ok(()));
        }
        let draining = self.drained.as_mut().poll(cx).is_ready();
        if draining && self.at_boundary {
            self.ended = true;
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        match std::pin::Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let read = &buf.filled()[before..];
                if read.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                if draining {
                    let end = read
                        .iter()
                        .position(|b| *b == b'\n')
                        .map(|at| before + at + 1);
                    if let Some(end) = end {
                        buf.set_filled(end);
                        self.ended = true;
                    }
                    // No newline yet: the line goes on; keep reading it.
                    self.at_boundary = end.is_some();
                } else {
                    self.at_boundary = read.last() == Some(&b'\n');
                }
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}
