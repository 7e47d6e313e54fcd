//! One ledger, any number of processes: the owner of a data directory and its relays.
//!
//! Every MCP client starts its own `thinkledger serve`, so one person's three clients are three
//! processes on one data directory, and a ledger has one writer. The first process to take the
//! directory's owner lock (`owner.lock`, flock(2): the kernel lets go of it when the process
//! ends, SIGKILL included) opens the ledger and listens on `owner.sock` beside it (a Unix
//! socket, mode 0600, peers of another user refused by their credentials). Every later process
//! finds the owner there and relays its client's MCP lines to it over a connection of its own
//! ([`relay`]); commands (`sessions`, `verify`, `audit`, `erase`, …) send themselves to the
//! owner and print what it answers ([`accept`]). When the owner is gone, the relays race for
//! the lock: one becomes the owner in its own process, the others connect to it, and each
//! resends what was in flight (every `tools/call` carries an idempotency key from the first
//! send, so a call the old owner recorded is answered from the log, not recorded again).
//!
//! A connection opens with one JSON line each way: the [`Hello`] (which build, what for) and
//! the [`Welcome`] (the owner's build and pid, or why it refuses). Owner and relay must be the
//! same build ([`build`]); a refusal names both.
//!
//! Where sockets do not exist (Windows) or one cannot be made in the directory, a process
//! serves alone, as before: a second one is told the ledger is in use.

pub mod accept;
pub mod relay;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::tools::connection::ConnectionState;

/// The version of the lines exchanged on the owner's socket; part of [`build`].
pub const PROTOCOL: u32 = 1;

/// The longest hello, welcome or command line accepted.
const MAX_HANDSHAKE_BYTES: usize = 1 << 20;

/// How long a peer has to send its hello, and a relay to hear the welcome.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a process holding the lock may go without a socket before it is taken to serve
/// alone.
const NO_SOCKET_WAIT: Duration = Duration::from_secs(3);

/// The owner's socket in a data directory.
pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join("owner.sock")
}

/// The owner's lock file in a data directory.
pub fn lock_path(data_dir: &Path) -> PathBuf {
    data_dir.join("owner.lock")
}

/// What a relay and its owner must agree on: the package version and [`PROTOCOL`]. Debug
/// builds take `THINKLEDGER_TEST_BUILD` instead when set, so tests can stage a mismatch.
pub fn build() -> String {
    #[cfg(debug_assertions)]
    if let Ok(build) = std::env::var("THINKLEDGER_TEST_BUILD") {
        return build;
    }
    format!(
        "thinkledger {} (relay protocol {PROTOCOL})",
        env!("CARGO_PKG_VERSION")
    )
}

/// The first line a peer sends on the owner's socket.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Hello {
    /// A relay: MCP lines follow, both ways.
    #[serde(rename_all = "camelCase")]
    Mcp {
        build: String,
        /// The relay's `--toolsets`: what the connection starts with when `state` names none.
        toolsets: String,
        /// Where the connection stood with the previous owner (or the session the relay chose
        /// for its first calls).
        state: ConnectionState,
    },
    /// A command to run on the owner's ledger; its [`accept::CommandReply`] follows the
    /// welcome.
    #[serde(rename_all = "camelCase")]
    Command {
        build: String,
        command: serde_json::Value,
    },
}

impl Hello {
    fn build(&self) -> &str {
        match self {
            Hello::Mcp { build, .. } | Hello::Command { build, .. } => build,
        }
    }
}

/// The owner's answer to a hello.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Welcome {
    pub build: String,
    pub pid: u32,
    /// Why the owner will not serve this peer; the connection closes after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// Why no owner could be found or become.
#[derive(Debug, thiserror::Error)]
pub enum DoorError {
    /// The owner refused the peer (another build, another user).
    #[error("{0}")]
    Refused(String),
    /// Another process holds the directory but takes no relays.
    #[error(
        "the ledger in {dir} is in use by another thinkledger process that takes no relays \
         (it could not make its socket {socket}); quit the MCP client that started it, or \
         serve the directory with `thinkledger serve --http` and point every client at that"
    )]
    NoSocket { dir: PathBuf, socket: PathBuf },
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

fn io_error(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> DoorError {
    move |source| DoorError::Io {
        what: what.into(),
        source,
    }
}

/// This process's hold on a data directory: while it lives, no other process owns it.
#[derive(Debug)]
pub struct OwnerLock {
    _file: Option<std::fs::File>,
}

impl OwnerLock {
    /// Takes the directory's owner lock if no process holds it; `None` if one does.
    pub fn try_take(data_dir: &Path) -> Result<Option<Self>, DoorError> {
        crate::ledger::private::dir(data_dir).map_err(io_error(format!(
            "cannot create the data directory {}",
            data_dir.display()
        )))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let path = lock_path(data_dir);
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(&path)
                .map_err(io_error(format!("cannot open {}", path.display())))?;
            match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => Ok(Some(Self { _file: Some(file) })),
                Err(e) if e == rustix::io::Errno::WOULDBLOCK => Ok(None),
                Err(e) => Err(DoorError::Io {
                    what: format!("cannot lock {}", path.display()),
                    source: e.into(),
                }),
            }
        }
        #[cfg(not(unix))]
        Ok(Some(Self { _file: None }))
    }
}

/// What [`find_or_become`] found.
pub enum Door {
    /// No process owned the directory: this one does now.
    Owner(OwnerLock),
    /// Another process owns it; this connection to it is open.
    Relay(Connection),
}

/// A connection to the owner, past the handshake.
pub struct Connection {
    #[cfg(unix)]
    pub reader: tokio::io::BufReader<tokio::net::unix::OwnedReadHalf>,
    #[cfg(unix)]
    pub writer: tokio::net::unix::OwnedWriteHalf,
    pub welcome: Welcome,
}

/// Connects to the directory's owner and says `hello`; `Ok(None)` when no owner listens.
#[cfg(unix)]
pub async fn connect(data_dir: &Path, hello: &Hello) -> Result<Option<Connection>, DoorError> {
    use tokio::io::{AsyncWriteExt, BufReader};
    let path = socket_path(data_dir);
    let stream = match tokio::net::UnixStream::connect(&path).await {
        Ok(stream) => stream,
        Err(_) => return Ok(None),
    };
    let (read, mut writer) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut line = serde_json::to_vec(hello).unwrap_or_default();
    line.push(b'\n');
    if writer.write_all(&line).await.is_err() {
        return Ok(None);
    }
    let welcome = match tokio::time::timeout(HANDSHAKE_TIMEOUT, read_line(&mut reader)).await {
        Ok(Ok(Some(line))) => line,
        // The owner went away (or hung) between accepting and answering: look again.
        _ => return Ok(None),
    };
    let welcome: Welcome = serde_json::from_slice(&welcome).map_err(|e| {
        DoorError::Refused(format!(
            "the process serving {} answered in a way this build does not read ({e}); it is \
             probably another version: quit the clients of the other version",
            data_dir.display()
        ))
    })?;
    if let Some(why) = welcome.refused {
        return Err(DoorError::Refused(why));
    }
    Ok(Some(Connection {
        reader,
        writer,
        welcome,
    }))
}

/// Reads one line (without its newline) of at most [`MAX_HANDSHAKE_BYTES`]; `None` at the end.
#[cfg(unix)]
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
) -> std::io::Result<Option<Vec<u8>>> {
    use tokio::io::AsyncBufReadExt;
    let mut line = Vec::new();
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok((!line.is_empty()).then_some(line));
        }
        if let Some(at) = buf.iter().position(|b| *b == b'\n') {
            line.extend_from_slice(&buf[..at]);
            reader.consume(at + 1);
            return Ok(Some(line));
        }
        let n = buf.len();
        line.extend_from_slice(buf);
        reader.consume(n);
        if line.len() > MAX_HANDSHAKE_BYTES {
            return Err(std::io::Error::other("a handshake line over 1 MiB"));
        }
    }
}

/// Finds the directory's owner, or becomes it: connects to its socket when one answers,
/// otherwise takes the owner lock when no process holds it, trying again until `patience` runs
/// out (an owner that has the lock but is not yet listening; a command holding the directory
/// for a moment). A process that holds the lock and has made no socket for seconds is taken to
/// serve alone ([`DoorError::NoSocket`]) — unless `handing_off`: a relay that lost its owner
/// waits out an owner that removed its socket and still answers its other relays' calls.
pub async fn find_or_become(
    data_dir: &Path,
    hello: &Hello,
    patience: Duration,
) -> Result<Door, DoorError> {
    find_or_become_with(data_dir, hello, patience, false).await
}

/// [`find_or_become`] for a relay whose owner went away (see there).
pub async fn find_next_owner(
    data_dir: &Path,
    hello: &Hello,
    patience: Duration,
) -> Result<Door, DoorError> {
    find_or_become_with(data_dir, hello, patience, true).await
}

async fn find_or_become_with(
    data_dir: &Path,
    hello: &Hello,
    patience: Duration,
    handing_off: bool,
) -> Result<Door, DoorError> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        #[cfg(unix)]
        if let Some(connection) = connect(data_dir, hello).await? {
            return Ok(Door::Relay(connection));
        }
        if let Some(lock) = OwnerLock::try_take(data_dir)? {
            return Ok(Door::Owner(lock));
        }
        // An owner binds its socket within milliseconds of taking the lock: one that has had
        // none for seconds made none (it serves alone).
        let no_socket =
            !handing_off && !socket_path(data_dir).exists() && started.elapsed() >= NO_SOCKET_WAIT;
        if no_socket || started.elapsed() >= patience {
            return Err(DoorError::NoSocket {
                dir: data_dir.to_path_buf(),
                socket: socket_path(data_dir),
            });
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(25));
    }
}
