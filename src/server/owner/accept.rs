//! The owner's side: the ledger opened by this process, its socket, and what each peer gets —
//! a relay an MCP connection of its own (served by the stdio edge, its state reported back),
//! a command its run against this ledger.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{HANDSHAKE_TIMEOUT, Hello, OwnerLock, Welcome, build, read_line, socket_path};
use crate::app::App;
use crate::ledger::LedgerHandle;
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

/// The ledger this process owns and the socket its relays and commands reach it by.
pub struct Owned {
    pub ledger: LedgerHandle<App>,
    /// Open MCP connections of relays.
    relays: watch::Receiver<usize>,
    /// Stops accepting and serving peers.
    stop: CancellationToken,
    /// The socket file, when one could be made.
    socket: Option<PathBuf>,
    _lock: OwnerLock,
}

impl Owned {
    /// Takes up the ledger `ledger` (opened by this process under `lock`) and listens for
    /// relays and commands on the directory's socket until `shutdown`. A socket that cannot be
    /// made is said once in the log: the process then serves alone.
    pub fn listen(
        data_dir: &Path,
        lock: OwnerLock,
        ledger: LedgerHandle<App>,
        runner: Option<CommandRunner>,
        shutdown: &CancellationToken,
    ) -> Self {
        let (count, relays) = watch::channel(0usize);
        let stop = shutdown.child_token();
        let path = socket_path(data_dir);
        let socket = match bind(&path) {
            Ok(listener) => {
                tokio::spawn(accept_loop(
                    listener,
                    ledger.clone(),
                    runner,
                    Arc::new(count),
                    stop.clone(),
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
            stop,
            socket,
            _lock: lock,
        }
    }

    /// Resolves once no relay is connected (at once if none is), or on `shutdown`.
    pub async fn idle(&self, shutdown: &CancellationToken) {
        let mut relays = self.relays.clone();
        tokio::select! {
            _ = relays.wait_for(|n| *n == 0) => {}
            () = shutdown.cancelled() => {}
        }
    }

    /// Stops taking peers once every relay has left (or at `shutdown`), then closes the ledger.
    /// The lock goes with the process.
    pub async fn close(self, shutdown: &CancellationToken) {
        loop {
            self.idle(shutdown).await;
            // No new peer from here on; one that connected meanwhile is served to its end.
            if let Some(path) = &self.socket {
                let _ = std::fs::remove_file(path);
            }
            if shutdown.is_cancelled() || *self.relays.borrow() == 0 {
                break;
            }
        }
        self.stop.cancel();
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

async fn accept_loop(
    listener: UnixListener,
    ledger: LedgerHandle<App>,
    runner: Option<CommandRunner>,
    relays: Arc<watch::Sender<usize>>,
    stop: CancellationToken,
) {
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting on the owner's socket failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        tokio::spawn(peer(
            stream,
            ledger.clone(),
            runner.clone(),
            relays.clone(),
            stop.clone(),
        ));
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

async fn peer(
    stream: UnixStream,
    ledger: LedgerHandle<App>,
    runner: Option<CommandRunner>,
    relays: Arc<watch::Sender<usize>>,
    stop: CancellationToken,
) {
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
        (None, Ok(Hello::Mcp { toolsets, .. })) => Toolsets::parse(toolsets)
            .err()
            .map(|e| format!("--toolsets: {e}")),
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
        Ok(Hello::Mcp {
            toolsets, state, ..
        }) => {
            let Ok(toolsets) = Toolsets::parse(&toolsets) else {
                return;
            };
            relays.send_modify(|n| *n += 1);
            let server = ThinkServer::new(ledger, Arc::new(Catalog::new(toolsets)), "stdio")
                .with_connection_state(&state);
            if let Err(e) = framing::stdio::serve_relayed(server, read, write, stop).await {
                tracing::debug!(error = %e, "a relayed connection ended abnormally");
            }
            relays.send_modify(|n| *n -= 1);
        }
        Ok(Hello::Command { command, .. }) => {
            let reply = match runner {
                Some(runner) => runner(command, ledger).await,
                None => CommandReply {
                    stderr: base64_text("this server runs no commands for other processes\n"),
                    exit: 1,
                    ..CommandReply::default()
                },
            };
            let mut line = serde_json::to_vec(&reply).unwrap_or_default();
            line.push(b'\n');
            let _ = write.write_all(&line).await;
            let _ = write.shutdown().await;
        }
        Err(_) => {}
    }
}

fn base64_text(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}
