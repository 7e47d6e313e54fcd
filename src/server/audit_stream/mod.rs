//! The audit stream (`serve --audit-stream TARGET`): every committed event, as one record,
//! to a syslog receiver over TCP (RFC 5424 in RFC 6587 octet-counted frames) or to a file of
//! JSON lines, in seq order and at least once, resumed after a restart or a receiver outage
//! from the last record the target acknowledged.
//!
//! The stream follows the log from a task of its own: it waits on the writer's published head
//! ([`LedgerHandle::head_past`], a watch, no message to the writer) and reads the events by
//! seq beside the writer ([`LedgerHandle::log_reader`]), so a slow or absent receiver never
//! holds up a call: the records it has not taken wait in the ledger itself. How far each
//! target got is kept durably in the data directory (`cursor.rs`), and only the process that
//! owns the data directory streams (it is started with the ledger, `main.rs`'s
//! `start_ledger`). It must not know the rules: a record is made from the stored event alone
//! (`record.rs`).

mod cursor;
mod record;
mod sink;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use cursor::{CURSORS_FILE, Cursors, Position};
pub use record::{Origin, RECORD_FORMAT, Record};
use sink::{ACK_GRACE, FileSink, SyslogSink};

use crate::ledger::hash::parse_hex32;
use crate::ledger::{Decider, LedgerHandle, SessionLog};

/// Where the stream goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `syslog+tcp://HOST:PORT`.
    Syslog { host: String, port: u16 },
    /// `file:PATH` (absolute once the command line was read).
    File(PathBuf),
}

impl Target {
    /// Reads `syslog+tcp://HOST:PORT` (an IPv6 host in brackets) or `file:PATH`.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let wrong = || {
            format!(
                "--audit-stream {raw:?}: give syslog+tcp://HOST:PORT (a syslog receiver, e.g. \
                 rsyslog's imtcp) or file:PATH (a file of JSON lines)"
            )
        };
        if let Some(path) = raw.strip_prefix("file:") {
            if path.is_empty() {
                return Err(wrong());
            }
            return Ok(Self::File(PathBuf::from(path)));
        }
        let address = raw.strip_prefix("syslog+tcp://").ok_or_else(wrong)?;
        let address = address.trim_end_matches('/');
        let (host, port) = address.rsplit_once(':').ok_or_else(wrong)?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port: u16 = port.parse().map_err(|_| wrong())?;
        if host.is_empty() || port == 0 {
            return Err(wrong());
        }
        Ok(Self::Syslog {
            host: host.to_owned(),
            port,
        })
    }

    /// The target with a relative file path made absolute against `cwd`.
    pub fn absolute(self, cwd: &Path) -> Self {
        match self {
            Self::File(path) if path.is_relative() => Self::File(cwd.join(path)),
            other => other,
        }
    }

    /// The target's name, which its cursor is kept under.
    pub fn name(&self) -> String {
        match self {
            Self::Syslog { host, port } if host.contains(':') => {
                format!("syslog+tcp://[{host}]:{port}")
            }
            Self::Syslog { host, port } => format!("syslog+tcp://{host}:{port}"),
            Self::File(path) => format!("file:{}", path.display()),
        }
    }
}

/// What the operator asked of the stream.
#[derive(Debug, Clone)]
pub struct StreamConfig {
    pub target: Target,
    /// Send each call's recorded arguments with their texts (caller text) too.
    pub arguments: bool,
}

/// Longest [`AuditStream::finish`] spends sending what is left and closing.
const FINISH_LIMIT: Duration = Duration::from_secs(5);

/// Most events read and sent in one write.
const CHUNK: u64 = 256;

/// How often written records are looked at to be counted as acknowledged.
const TICK: Duration = Duration::from_millis(200);

/// Longest wait between two attempts to reach a receiver that is down.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// The stream's task, started with the ledger it follows.
pub struct AuditStream {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl AuditStream {
    /// Starts streaming `ledger`'s committed events to `config.target` once the ledger is
    /// open, from where the target's cursor in `data_dir` says it stopped.
    pub fn start<D: Decider>(
        ledger: LedgerHandle<D>,
        data_dir: PathBuf,
        config: StreamConfig,
    ) -> Self {
        let stop = CancellationToken::new();
        let task = tokio::spawn(run(ledger, data_dir, config, stop.clone()));
        Self { stop, task }
    }

    /// Sends what the ledger holds that the target has not taken (for up to a few seconds),
    /// closes the connection as a receiver can tell is complete, keeps the cursor, and stops.
    /// Called before the ledger is closed: the stream reads the log until then.
    pub async fn finish(self) {
        self.stop.cancel();
        if tokio::time::timeout(FINISH_LIMIT * 2, self.task)
            .await
            .is_err()
        {
            tracing::warn!("the audit stream did not stop in time; it resumes from its cursor");
        }
    }
}

async fn run<D: Decider>(
    ledger: LedgerHandle<D>,
    data_dir: PathBuf,
    config: StreamConfig,
    stop: CancellationToken,
) {
    tokio::select! {
        opened = ledger.opened() => if opened.is_err() { return },
        () = stop.cancelled() => return,
    }
    let Some(log) = ledger.log_reader() else {
        tracing::error!(
            "the audit stream follows a ledger in a data directory; this store cannot be read \
             beside its writer, so nothing is streamed"
        );
        return;
    };
    let name = config.target.name();
    let cursors = match Cursors::load(&data_dir) {
        Ok(cursors) => cursors,
        Err(e) => {
            tracing::error!(error = %e, "the audit stream's cursors cannot be read: nothing is streamed until the file is repaired or removed (removing it sends the whole log again)");
            return;
        }
    };
    let sink = match &config.target {
        Target::Syslog { host, port } => Sink::Syslog(SyslogSink::new(host.clone(), *port)),
        Target::File(path) => Sink::File(FileSink::new(path.clone())),
    };
    let origin = Origin::new(&hostname(), std::process::id());
    let acked = cursors
        .streams
        .get(&name)
        .cloned()
        .unwrap_or_else(Position::start);
    let mut follower = Follower {
        ledger,
        log,
        data_dir,
        name,
        arguments: config.arguments,
        origin,
        sink,
        cursors,
        sent: acked.clone(),
        acked,
        pending: VecDeque::new(),
        backoff: None,
    };
    follower.resume().await;
    follower.follow(stop).await;
}

/// The host's name for the syslog HOSTNAME field, where the system says it (Linux); `-`
/// otherwise.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default()
}

enum Sink {
    Syslog(SyslogSink),
    File(FileSink),
}

/// Why a round of sending stopped.
enum Failure {
    /// The log could not be read (it is closing, or damaged): tried again later.
    Log(String),
    /// The target could not take the records: reached again, and sent again from the cursor.
    Target(std::io::Error),
}

struct Follower<D: Decider> {
    ledger: LedgerHandle<D>,
    log: Arc<dyn SessionLog>,
    data_dir: PathBuf,
    /// The target's name, which its cursor is kept under.
    name: String,
    arguments: bool,
    origin: Origin,
    sink: Sink,
    cursors: Cursors,
    /// The last record the target acknowledged (kept durably in `cursors`).
    acked: Position,
    /// The last record written to the target on the current connection or file.
    sent: Position,
    /// Records written to a TCP receiver and not yet acknowledged: when each write ended, and
    /// the last record it held.
    pending: VecDeque<(Instant, Position)>,
    /// While the target fails: the wait before the next attempt.
    backoff: Option<Duration>,
}

impl<D: Decider> Follower<D> {
    /// Checks the cursor against the log (a ledger restored from an older copy ends before
    /// it) and, for a file, resumes after its last whole record.
    async fn resume(&mut self) {
        let head = self.ledger.head();
        if self.acked.seq > head {
            tracing::warn!(
                target = %self.name,
                acknowledged = self.acked.seq,
                head,
                "the audit stream's target acknowledged events past this ledger's end (the \
                 ledger was restored from an older copy, or rolled back): the events recorded \
                 from now on are streamed under the seqs that follow this ledger's head"
            );
            self.acked = Position {
                seq: head,
                hash: self.hash_of(head).unwrap_or_default(),
            };
        } else if self.acked.seq > 0
            && self.hash_of(self.acked.seq) != Some(self.acked.hash.clone())
        {
            tracing::warn!(
                target = %self.name,
                seq = self.acked.seq,
                "the event the audit stream's cursor names is not the one it streamed (this data \
                 directory holds another copy of the ledger): streaming goes on after it"
            );
        }
        if let Sink::File(file) = &mut self.sink {
            match file.open().await {
                Ok(Some(line)) => {
                    if let Ok(last) = serde_json::from_slice::<Record>(&line)
                        && last.seq > self.acked.seq
                        && last.seq <= head
                        && self.hash_of(last.seq).as_deref() == Some(last.hash.as_str())
                    {
                        self.acked = Position {
                            seq: last.seq,
                            hash: last.hash,
                        };
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(target = %self.name, error = %e, "the audit stream's file cannot be opened; trying again")
                }
            }
        }
        self.sent = self.acked.clone();
        self.keep_cursor().await;
        tracing::info!(target = %self.name, from = self.acked.seq + 1, head, "audit stream started");
    }

    async fn follow(&mut self, stop: CancellationToken) {
        loop {
            if stop.is_cancelled() {
                self.finish().await;
                return;
            }
            self.count_acknowledged().await;
            let head = self.ledger.head();
            if self.sent.seq < head {
                // A receiver that takes nothing may hold a write for long: a stop does not wait
                // for it (the finish sends again on a connection of its own). A file's write is
                // local and never left halfway.
                let sent = match self.sink {
                    Sink::Syslog(_) => tokio::select! {
                        sent = self.send_up_to(head) => Some(sent),
                        () = stop.cancelled() => None,
                    },
                    Sink::File(_) => Some(self.send_up_to(head).await),
                };
                match sent {
                    None => self.abandon(),
                    Some(Ok(())) => {}
                    Some(Err(Failure::Log(_))) if self.ledger.readiness().is_err() => {
                        tracing::warn!(target = %self.name, acknowledged = self.acked.seq, "the ledger stopped: so does the audit stream, which resumes from its cursor at the next start");
                        self.keep_cursor().await;
                        return;
                    }
                    Some(Err(failure)) => {
                        self.failed(failure);
                        let wait = self.backoff.unwrap_or(TICK);
                        tokio::select! {
                            () = tokio::time::sleep(wait) => {}
                            () = stop.cancelled() => {}
                        }
                    }
                }
                continue;
            }
            tokio::select! {
                next = self.ledger.head_past(self.sent.seq) => if next.is_err() {
                    // The writer stopped without this stream being finished first: what was
                    // acknowledged is kept, the rest is sent from the cursor at the next start.
                    self.count_acknowledged().await;
                    self.keep_cursor().await;
                    return;
                },
                () = stop.cancelled() => {}
                () = tokio::time::sleep(TICK), if !self.pending.is_empty() => {}
            }
        }
    }

    /// Sends the events after the last one sent, up to `head` (at most [`CHUNK`] of them).
    async fn send_up_to(&mut self, head: u64) -> Result<(), Failure> {
        self.ready().await.map_err(Failure::Target)?;
        let from = self.sent.seq + 1;
        let to = head.min(self.sent.seq + CHUNK);
        let records = self.read(from, to).await.map_err(Failure::Log)?;
        let Some(last) = records.last() else {
            return Ok(());
        };
        let last = Position {
            seq: last.seq,
            hash: last.hash.clone(),
        };
        match &mut self.sink {
            Sink::Syslog(syslog) => {
                let bytes: Vec<u8> = records
                    .iter()
                    .flat_map(|r| r.syslog_frame(&self.origin))
                    .collect();
                syslog.write(&bytes).await.map_err(Failure::Target)?;
                self.pending.push_back((Instant::now(), last.clone()));
                self.sent = last;
            }
            Sink::File(file) => {
                let bytes: Vec<u8> = records.iter().flat_map(Record::json_line).collect();
                file.write(bytes).await.map_err(Failure::Target)?;
                self.sent = last.clone();
                self.acked = last;
                self.keep_cursor().await;
            }
        }
        if self.backoff.take().is_some() {
            tracing::info!(target = %self.name, from, "audit stream: the target takes records again");
        }
        Ok(())
    }

    /// Connects to the receiver, or opens the file, when needed.
    async fn ready(&mut self) -> std::io::Result<()> {
        match &mut self.sink {
            // A receiver that closed while the stream was idle is found before the next write,
            // which the kernel would otherwise take without complaint.
            Sink::Syslog(syslog) if syslog.is_connected() => match syslog.is_healthy() {
                true => Ok(()),
                false => Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "the receiver closed the connection",
                )),
            },
            Sink::Syslog(syslog) => syslog.connect().await,
            Sink::File(file) if !file.is_open() => file.open().await.map(drop),
            Sink::File(_) => Ok(()),
        }
    }

    /// The records of events `from..=to`, read beside the writer.
    async fn read(&self, from: u64, to: u64) -> Result<Vec<Record>, String> {
        let log = self.log.clone();
        let arguments = self.arguments;
        tokio::task::spawn_blocking(move || {
            (from..=to)
                .map(|seq| {
                    let bytes = log
                        .event_bytes(seq)
                        .map_err(|e| e.to_string())?
                        .ok_or_else(|| format!("event {seq} is not in the log"))?;
                    let texts = |commitment: &str| {
                        let raw = parse_hex32(commitment)?;
                        log.text(&raw).ok().flatten().map(|record| record.text)
                    };
                    Record::of_event(&bytes, arguments.then_some(&texts as &record::TextOf<'_>))
                        .map_err(|e| format!("event {seq}: {e}"))
                })
                .collect()
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// Records written to a TCP receiver at least [`ACK_GRACE`] ago on a connection still
    /// open count as acknowledged; a connection found closed sends them again.
    async fn count_acknowledged(&mut self) {
        let Sink::Syslog(syslog) = &mut self.sink else {
            return;
        };
        let Some((written, _)) = self.pending.front() else {
            return;
        };
        if written.elapsed() < ACK_GRACE {
            return;
        }
        if !syslog.is_healthy() {
            self.failed(Failure::Target(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "the receiver closed the connection",
            )));
            return;
        }
        let mut moved = false;
        while let Some((written, position)) = self.pending.front()
            && written.elapsed() >= ACK_GRACE
        {
            self.acked = position.clone();
            self.pending.pop_front();
            moved = true;
        }
        if moved {
            self.keep_cursor().await;
        }
    }

    /// After a failure: the target is reached again after a wait, and everything not
    /// acknowledged is sent again.
    fn failed(&mut self, failure: Failure) {
        let wait = match self.backoff {
            None => Duration::from_millis(100),
            Some(wait) => (wait * 2).min(MAX_BACKOFF),
        };
        match &failure {
            Failure::Log(why) if self.backoff.is_none() => {
                tracing::warn!(target = %self.name, error = %why, "audit stream: the log cannot be read; trying again");
            }
            Failure::Log(_) => {}
            Failure::Target(e) if self.backoff.is_none() => {
                tracing::warn!(
                    target = %self.name,
                    error = %e,
                    resend_from = self.acked.seq + 1,
                    "audit stream: the target does not take records; they wait in the ledger and \
                     are sent again from the last acknowledged one when it does"
                );
            }
            Failure::Target(_) => {}
        }
        if let Failure::Target(_) = failure {
            self.abandon();
        }
        self.backoff = Some(wait);
    }

    /// Drops a connection whose last write was cut off: nothing it holds past the last
    /// acknowledged record counts, and it is all sent again.
    fn abandon(&mut self) {
        if let Sink::Syslog(syslog) = &mut self.sink {
            syslog.disconnect();
        }
        self.pending.clear();
        self.sent = self.acked.clone();
    }

    /// Sends what is left (for up to [`FINISH_LIMIT`]), closes, and keeps the cursor.
    async fn finish(&mut self) {
        let deadline = Instant::now() + FINISH_LIMIT;
        let head = self.ledger.head();
        while self.sent.seq < head && Instant::now() < deadline {
            match tokio::time::timeout_at(deadline, self.send_up_to(head)).await {
                Ok(Ok(())) => {}
                // A target that does not take records now is not waited for: the ledger keeps
                // them, and the next start sends them.
                Ok(Err(failure)) => {
                    self.failed(failure);
                    break;
                }
                // Cut off halfway: what the connection holds is not acknowledged.
                Err(_) => {
                    self.abandon();
                    break;
                }
            }
        }
        if let Sink::Syslog(syslog) = &mut self.sink {
            let left = deadline.saturating_duration_since(Instant::now());
            if syslog.close(left.max(Duration::from_millis(500))).await {
                self.acked = self.sent.clone();
                self.pending.clear();
            } else {
                self.count_acknowledged().await;
            }
        }
        self.keep_cursor().await;
        tracing::info!(
            target = %self.name,
            acknowledged = self.acked.seq,
            head,
            "audit stream stopped"
        );
    }

    /// Writes the cursor when it moved.
    async fn keep_cursor(&mut self) {
        if self.cursors.streams.get(&self.name) == Some(&self.acked) {
            return;
        }
        self.cursors
            .streams
            .insert(self.name.clone(), self.acked.clone());
        let (cursors, dir) = (self.cursors.clone(), self.data_dir.clone());
        let saved = tokio::task::spawn_blocking(move || cursors.save(&dir)).await;
        if let Ok(Err(e)) | Err(e) = saved.map_err(std::io::Error::other) {
            tracing::warn!(error = %e, "the audit stream's cursor could not be kept; a restart sends again from the last one kept");
        }
    }

    /// The hash of event `seq`, read beside the writer.
    fn hash_of(&self, seq: u64) -> Option<String> {
        if seq == 0 {
            return Some(String::new());
        }
        let bytes = self.log.event_bytes(seq).ok()??;
        Record::of_event(&bytes, None).ok().map(|r| r.hash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_read_and_named() {
        assert_eq!(
            Target::parse("syslog+tcp://logs.internal:6514").unwrap(),
            Target::Syslog {
                host: "logs.internal".into(),
                port: 6514
            }
        );
        let v6 = Target::parse("syslog+tcp://[::1]:514").unwrap();
        assert_eq!(
            v6,
            Target::Syslog {
                host: "::1".into(),
                port: 514
            }
        );
        assert_eq!(v6.name(), "syslog+tcp://[::1]:514");
        assert_eq!(
            Target::parse("file:audit.jsonl")
                .unwrap()
                .absolute(Path::new("/srv"))
                .name(),
            "file:/srv/audit.jsonl"
        );
        for wrong in [
            "syslog://h:1",
            "syslog+tcp://h",
            "syslog+tcp://h:0",
            "syslog+tcp://:5",
            "file:",
            "udp://h:1",
        ] {
            assert!(Target::parse(wrong).is_err(), "{wrong}");
        }
    }
}
