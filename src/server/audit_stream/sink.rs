//! Where the audit stream's records go: a syslog receiver over TCP, or a file of JSON lines.
//! Each says what it may count as acknowledged: for the file, what was written and
//! `fdatasync`ed; for TCP, what was written and flushed, once the connection has stayed open
//! a little longer (see [`ACK_GRACE`]) or the receiver closed it in answer to ours.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a connection must stay open after records were written to it before they count
/// as received. TCP takes bytes into the receiver's socket buffer whether or not the receiver
/// will read them: a receiver stopped a moment after a write loses what it had not read, and
/// the sender's write succeeded all the same. A receiver reads what arrives within
/// milliseconds, so a second is a wide margin; the price is that a receiver outage makes the
/// stream send again the records of its last second, each marked by its seq.
pub const ACK_GRACE: Duration = Duration::from_secs(1);

/// Longest a write may wait on a receiver that takes nothing: then the connection counts as
/// broken, and the records are sent again on a new one.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A syslog receiver over TCP (RFC 6587 octet-counted frames).
pub struct SyslogSink {
    /// `HOST:PORT` as connected to (an IPv6 host without its brackets in `host`).
    host: String,
    port: u16,
    stream: Option<TcpStream>,
}

impl SyslogSink {
    pub fn new(host: String, port: u16) -> Self {
        Self {
            host,
            port,
            stream: None,
        }
    }

    pub fn is_connected(&self) -> bool {
        self.stream.is_some()
    }

    pub async fn connect(&mut self) -> std::io::Result<()> {
        let connect = TcpStream::connect((self.host.as_str(), self.port));
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, connect)
            .await
            .map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out")
            })??;
        stream.set_nodelay(true)?;
        self.stream = Some(stream);
        Ok(())
    }

    /// Writes `bytes` whole and flushes them; an error drops the connection.
    pub async fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let Some(stream) = &mut self.stream else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "not connected",
            ));
        };
        let written = tokio::time::timeout(WRITE_TIMEOUT, async {
            stream.write_all(bytes).await?;
            stream.flush().await
        })
        .await
        .unwrap_or_else(|_| {
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the receiver took nothing for 30 s",
            ))
        });
        if written.is_err() {
            self.stream = None;
        }
        written
    }

    /// Whether the connection is still open as far as can be told without writing: the
    /// receiver has not closed or reset it. A receiver sends nothing; anything it does send
    /// is read and ignored.
    pub fn is_healthy(&mut self) -> bool {
        let Some(stream) = &self.stream else {
            return false;
        };
        let mut buffer = [0u8; 512];
        loop {
            match stream.try_read(&mut buffer) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                Err(_) => break,
            }
        }
        self.stream = None;
        false
    }

    pub fn disconnect(&mut self) {
        self.stream = None;
    }

    /// Closes our side and waits up to `limit` for the receiver to close its own: it does so
    /// only after it has read everything sent, so `true` means every record written arrived.
    pub async fn close(&mut self, limit: Duration) -> bool {
        let Some(mut stream) = self.stream.take() else {
            return false;
        };
        if stream.shutdown().await.is_err() {
            return false;
        }
        let mut buffer = [0u8; 512];
        let closed = tokio::time::timeout(limit, async {
            loop {
                match stream.read(&mut buffer).await {
                    Ok(0) => return true,
                    Ok(_) => continue,
                    Err(_) => return false,
                }
            }
        })
        .await;
        closed.unwrap_or(false)
    }
}

/// A file of JSON lines, appended to and `fdatasync`ed after every write.
pub struct FileSink {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl FileSink {
    pub fn new(path: PathBuf) -> Self {
        Self { path, file: None }
    }

    pub fn is_open(&self) -> bool {
        self.file.is_some()
    }

    /// Opens the file for appending (made, mode 0600, if missing); cuts off a last line a
    /// crash left without its newline (it was never acknowledged) and returns the last whole
    /// line, for the stream to resume after it.
    pub async fn open(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        let path = self.path.clone();
        let (file, last) = tokio::task::spawn_blocking(move || open_repaired(&path)).await??;
        self.file = Some(file);
        Ok(last)
    }

    /// Appends `bytes` and makes them durable; an error closes the file (it is opened and
    /// repaired again before the next write).
    pub async fn write(&mut self, bytes: Vec<u8>) -> std::io::Result<()> {
        let Some(mut file) = self.file.take() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "the file is not open",
            ));
        };
        let (file, written) = tokio::task::spawn_blocking(move || {
            let written = file.write_all(&bytes).and_then(|()| file.sync_data());
            (file, written)
        })
        .await?;
        if written.is_ok() {
            self.file = Some(file);
        }
        written
    }
}

/// How far back the last line is looked for; a longer line is not resumed after (the stream
/// then goes by its cursor alone).
const MAX_LINE_BYTES: u64 = 16 << 20;

fn open_repaired(path: &Path) -> std::io::Result<(std::fs::File, Option<Vec<u8>>)> {
    let mut file = crate::ledger::private::options()
        .create(true)
        .read(true)
        .append(true)
        .open(path)?;
    let len = file.metadata()?.len();
    let whole = match last_newline(&mut file, len, len)? {
        Some(at) => at + 1,
        None if len <= MAX_LINE_BYTES => 0,
        None => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{} ends in more than 16 MiB without a newline: not a file of the audit \
                     stream's JSON lines",
                    path.display()
                ),
            ));
        }
    };
    if whole != len {
        file.set_len(whole)?;
        file.sync_data()?;
    }
    let last = match whole {
        0 => None,
        _ => {
            let start = match last_newline(&mut file, whole - 1, whole)? {
                Some(at) => at + 1,
                None if whole <= MAX_LINE_BYTES => 0,
                None => return Ok((file, None)),
            };
            let mut line = vec![0u8; usize::try_from(whole - 1 - start).unwrap_or(0)];
            file.seek(SeekFrom::Start(start))?;
            file.read_exact(&mut line)?;
            Some(line)
        }
    };
    Ok((file, last))
}

/// The offset of the last `\n` before `end`, looking back at most [`MAX_LINE_BYTES`] (and
/// never past `len`).
fn last_newline(file: &mut std::fs::File, end: u64, len: u64) -> std::io::Result<Option<u64>> {
    let floor = end.saturating_sub(MAX_LINE_BYTES);
    let mut at = end.min(len);
    let mut block = vec![0u8; 8192];
    while at > floor {
        let start = at.saturating_sub(8192).max(floor);
        let size = usize::try_from(at - start).unwrap_or(0);
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block[..size])?;
        if let Some(i) = block[..size].iter().rposition(|b| *b == b'\n') {
            return Ok(Some(start + i as u64));
        }
        at = start;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_torn_last_line_is_cut_off_and_the_last_whole_one_returned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut sink = FileSink::new(path.clone());
        assert_eq!(sink.open().await.unwrap(), None);
        sink.write(b"{\"seq\":1}\n{\"seq\":2}\n".to_vec())
            .await
            .unwrap();
        drop(sink);
        let mut torn = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        torn.write_all(b"{\"seq\":3").unwrap();
        let mut sink = FileSink::new(path.clone());
        assert_eq!(sink.open().await.unwrap(), Some(b"{\"seq\":2}".to_vec()));
        sink.write(b"{\"seq\":3}\n".to_vec()).await.unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"{\"seq\":1}\n{\"seq\":2}\n{\"seq\":3}\n"
        );
        let long = format!("{{\"x\":\"{}\"}}\n", "y".repeat(20_000));
        sink.write(long.clone().into_bytes()).await.unwrap();
        let mut sink = FileSink::new(path);
        assert_eq!(
            sink.open().await.unwrap(),
            Some(long.trim_end().as_bytes().to_vec())
        );
    }

    #[tokio::test]
    async fn a_receiver_that_closes_is_seen_before_the_next_write() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut sink = SyslogSink::new("127.0.0.1".into(), port);
        sink.connect().await.unwrap();
        let (mut peer, _) = listener.accept().await.unwrap();
        sink.write(b"3 abc").await.unwrap();
        let mut got = [0u8; 5];
        peer.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"3 abc");
        assert!(sink.is_healthy());
        drop(peer);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while sink.is_healthy() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the close was not seen"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(!sink.is_connected());
    }

    #[tokio::test]
    async fn a_graceful_close_says_whether_the_receiver_read_everything() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut sink = SyslogSink::new("127.0.0.1".into(), port);
        sink.connect().await.unwrap();
        let (mut peer, _) = listener.accept().await.unwrap();
        sink.write(b"3 abc").await.unwrap();
        let reader = tokio::spawn(async move {
            let mut all = Vec::new();
            peer.read_to_end(&mut all).await.unwrap();
            all
        });
        assert!(sink.close(Duration::from_secs(5)).await);
        assert_eq!(reader.await.unwrap(), b"3 abc");
    }
}
