//! Time-stamp tokens kept beside the signed checkpoints ([`TimestampLog`]): `timestamps.jsonl`
//! in the ledger directory, one JSON line per token, `{"note": <the checkpoint's signed note>,
//! "token": <base64 of the DER token>}` (docs/ledger-format.md §6), or the database's
//! `thinkledger_timestamps` (`pg::PgTimestamps`).
//!
//! Owns the file's layout and nothing of what a token is: the tokens are opaque bytes here
//! (`audit::rfc3161` reads them). They are kept beside the log, like the checkpoints they
//! stamp, not in it: a token arrives after its checkpoint is signed, from outside, and
//! recording it as an event would grow the log and so call for the next checkpoint, and its
//! token, without end. A token proves itself (the TSA's signature over the checkpoint's digest),
//! so losing one loses a proof of time, never the integrity of the log: a line that does not
//! read is skipped with a warning, not refused.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use super::LedgerError;

/// The file of time-stamp tokens inside a ledger directory.
pub const TIMESTAMPS_FILE: &str = "timestamps.jsonl";

/// A time-stamp token kept for a signed checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptTimestamp {
    /// The checkpoint's signed note, exactly as signed (its SHA-256 is what the token stamps).
    pub note: String,
    /// The RFC 3161 token (DER `ContentInfo`) as the TSA answered it.
    pub token: Vec<u8>,
}

/// One line of `timestamps.jsonl`.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Line {
    note: String,
    token: String,
}

/// Every token kept in `ledger_dir`, oldest first (none when there is no file). Lines that do
/// not read (an append cut short by a crash) are skipped.
pub fn read_timestamps(ledger_dir: &Path) -> Result<Vec<KeptTimestamp>, LedgerError> {
    read_tail(ledger_dir, u64::MAX)
}

/// How much of the end of `timestamps.jsonl` [`read_recent_timestamps`] reads: a few hundred
/// tokens, where a ledger that stamps every minute keeps some 3 MB a day.
pub const RECENT_BYTES: u64 = 1 << 20;

/// The tokens in the last [`RECENT_BYTES`] of the file, oldest first: what an export chooses
/// from (the latest token its checkpoint extends) without reading years of them.
pub fn read_recent_timestamps(ledger_dir: &Path) -> Result<Vec<KeptTimestamp>, LedgerError> {
    read_tail(ledger_dir, RECENT_BYTES)
}

/// The whole lines in the last `within` bytes of the file.
fn read_tail(ledger_dir: &Path, within: u64) -> Result<Vec<KeptTimestamp>, LedgerError> {
    let path = ledger_dir.join(TIMESTAMPS_FILE);
    let mut file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let len = file.metadata()?.len();
    let start = len.saturating_sub(within);
    file.seek(SeekFrom::Start(start))?;
    let mut lines = BufReader::new(file).split(b'\n');
    if start > 0 {
        // The first line read may be the end of one that starts before: not whole.
        lines.next().transpose()?;
    }
    let mut out = Vec::new();
    for (n, line) in (1..).zip(lines) {
        let line = line?;
        if line.is_empty() {
            continue;
        }
        let kept = serde_json::from_slice::<Line>(&line)
            .map_err(|e| e.to_string())
            .and_then(|l| {
                let token = STANDARD.decode(&l.token).map_err(|e| e.to_string())?;
                Ok(KeptTimestamp {
                    note: l.note,
                    token,
                })
            });
        match kept {
            Ok(kept) => out.push(kept),
            Err(e) => tracing::warn!(
                file = %path.display(),
                line = n,
                error = %e,
                "a kept time-stamp token does not read; skipped"
            ),
        }
    }
    Ok(out)
}

/// Most tokens a database is asked for by [`TimestampLog::recent`].
pub const RECENT_TOKENS: u64 = 512;

/// Where a ledger keeps its time-stamp tokens: `timestamps.jsonl` beside the embedded log
/// ([`TimestampFile`]) or a table of the ledger's database (`pg::PgTimestamps`), which every
/// node sees.
pub trait TimestampLog: Send + Sync + std::fmt::Debug {
    /// The latest tokens kept (a few hundred at most), oldest first.
    fn recent(&self) -> Result<Vec<KeptTimestamp>, LedgerError>;
    /// Every token kept, oldest first.
    fn all(&self) -> Result<Vec<KeptTimestamp>, LedgerError>;
    /// Keeps `kept` durably (a token kept already for the same note is kept once).
    fn append(&self, kept: &KeptTimestamp) -> Result<(), LedgerError>;
}

/// `timestamps.jsonl` in a ledger directory.
#[derive(Debug, Clone)]
pub struct TimestampFile {
    ledger_dir: std::path::PathBuf,
}

impl TimestampFile {
    pub fn new(ledger_dir: &Path) -> Self {
        Self {
            ledger_dir: ledger_dir.to_path_buf(),
        }
    }
}

impl TimestampLog for TimestampFile {
    fn recent(&self) -> Result<Vec<KeptTimestamp>, LedgerError> {
        read_recent_timestamps(&self.ledger_dir)
    }

    fn all(&self) -> Result<Vec<KeptTimestamp>, LedgerError> {
        read_timestamps(&self.ledger_dir)
    }

    fn append(&self, kept: &KeptTimestamp) -> Result<(), LedgerError> {
        append_timestamp(&self.ledger_dir, kept)
    }
}

/// Appends `kept` to `timestamps.jsonl` in `ledger_dir` (made if missing, readable by its
/// owner only) and syncs it. A torn last line is ended first, so that it stays one line.
pub fn append_timestamp(ledger_dir: &Path, kept: &KeptTimestamp) -> Result<(), LedgerError> {
    let path = ledger_dir.join(TIMESTAMPS_FILE);
    let mut file = super::private::options()
        .create(true)
        .read(true)
        .append(true)
        .open(&path)?;
    let mut line = Vec::new();
    if file.metadata()?.len() > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::End(-1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            line.push(b'\n');
        }
    }
    let json = serde_json::to_vec(&Line {
        note: kept.note.clone(),
        token: STANDARD.encode(&kept.token),
    })
    .map_err(|e| LedgerError::Corrupt(format!("a time-stamp line does not serialize: {e}")))?;
    line.extend_from_slice(&json);
    line.push(b'\n');
    file.write_all(&line)?;
    file.sync_data()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_read_back_in_order_past_a_torn_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(read_timestamps(dir.path()).expect("no file"), Vec::new());
        let one = KeptTimestamp {
            note: "thinkledger/x\n1\nroot\n\n— sig\n".to_owned(),
            token: vec![0x30, 0x00],
        };
        append_timestamp(dir.path(), &one).expect("append");
        // A crash in the middle of the next append.
        let path = dir.path().join(TIMESTAMPS_FILE);
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        file.write_all(b"{\"note\":\"cut sh").expect("write");
        let two = KeptTimestamp {
            note: "thinkledger/x\n2\nroot\n\n— sig\n".to_owned(),
            token: vec![0x30, 0x01, 0x00],
        };
        append_timestamp(dir.path(), &two).expect("append");
        assert_eq!(
            read_timestamps(dir.path()).expect("reads"),
            vec![one.clone(), two.clone()]
        );
        // The tail from the middle of the first line on holds only the whole lines after it.
        let len = std::fs::metadata(&path).expect("meta").len();
        let last = read_tail(dir.path(), len - 5).expect("reads");
        assert_eq!(last, vec![two.clone()]);
        assert_eq!(
            read_recent_timestamps(dir.path()).expect("reads"),
            vec![one, two]
        );
    }
}
