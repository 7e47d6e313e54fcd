//! The audit stream's durable cursors: for each target, the last event the target
//! acknowledged (its seq and hash), in `audit-stream.json` in the data directory. Written
//! whole to a temporary file, made durable, then renamed over the old one, so a crash leaves
//! the old cursors or the new ones, never a torn file.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The cursors' file in a data directory.
pub const CURSORS_FILE: &str = "audit-stream.json";

/// How far one target has acknowledged the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Position {
    /// The last event acknowledged; 0: none yet.
    pub seq: u64,
    /// That event's hash (empty for seq 0): tells whether the log under the cursor is still
    /// the one it was streamed from.
    pub hash: String,
}

impl Position {
    /// Before the first event.
    pub fn start() -> Self {
        Self {
            seq: 0,
            hash: String::new(),
        }
    }
}

/// Every target's position, by the target's name (`syslog+tcp://HOST:PORT`, `file:PATH`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursors {
    pub streams: BTreeMap<String, Position>,
}

/// The cursors' file of `data_dir`.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(CURSORS_FILE)
}

impl Cursors {
    /// The cursors kept in `data_dir`; none when there is no file yet.
    pub fn load(data_dir: &Path) -> std::io::Result<Self> {
        match std::fs::read(path(data_dir)) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{} is not a cursors file: {e}", path(data_dir).display()),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(e),
        }
    }

    /// Writes the cursors to `data_dir` durably, replacing what was there.
    pub fn save(&self, data_dir: &Path) -> std::io::Result<()> {
        let target = path(data_dir);
        let temp = data_dir.join(format!("{CURSORS_FILE}.tmp"));
        let mut bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        let mut file = crate::ledger::private::options()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&temp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, &target)?;
        std::fs::File::open(data_dir)?.sync_all()
    }

    /// These cursors as they must stand beside a copy of the log that ends at `head` (whose
    /// hash is `head_hash`): a target that acknowledged more is set back to the copy's head,
    /// so a server started on the copy streams the events it will record after `head`.
    pub fn clamped(mut self, head: u64, head_hash: &str) -> Self {
        for position in self.streams.values_mut() {
            if position.seq > head {
                *position = Position {
                    seq: head,
                    hash: head_hash.to_owned(),
                };
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_are_saved_whole_and_read_back_and_clamped_to_a_copy() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Cursors::load(dir.path()).unwrap(), Cursors::default());
        let mut cursors = Cursors::default();
        cursors.streams.insert(
            "file:/x".into(),
            Position {
                seq: 9,
                hash: "aa".into(),
            },
        );
        cursors.streams.insert(
            "syslog+tcp://h:1".into(),
            Position {
                seq: 3,
                hash: "bb".into(),
            },
        );
        cursors.save(dir.path()).unwrap();
        cursors.save(dir.path()).unwrap();
        assert_eq!(Cursors::load(dir.path()).unwrap(), cursors);
        assert!(!dir.path().join("audit-stream.json.tmp").exists());
        let clamped = cursors.clamped(5, "cc");
        assert_eq!(clamped.streams["file:/x"].seq, 5);
        assert_eq!(clamped.streams["file:/x"].hash, "cc");
        assert_eq!(clamped.streams["syslog+tcp://h:1"].seq, 3);
        std::fs::write(path(dir.path()), b"{").unwrap();
        assert!(Cursors::load(dir.path()).is_err());
    }
}
