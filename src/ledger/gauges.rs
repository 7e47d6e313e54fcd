//! What a metrics scrape reads of a ledger at once, without asking its writer: the writer
//! stores the log's size and its latest signed checkpoint here as they change (at open, after
//! each durable batch, after each signature), and [`super::LedgerHandle::gauges`] adds the
//! queue's depth and the published head.
//!
//! Owns two atomics and their meaning; knows nothing of Prometheus (the server encodes them).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use chrono::{DateTime, Utc};

use super::view::SignedCheckpoint;

/// What one scrape reads of the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerGauges {
    /// Messages waiting in the writer's queue (calls, mostly).
    pub queued: usize,
    /// Events in the log, once it is open.
    pub events: Option<u64>,
    /// Bytes of the log (events and texts as stored), when the store can say cheaply (the
    /// embedded ledger's log file; a database cannot).
    pub log_bytes: Option<u64>,
    /// When the latest signed checkpoint was signed, if there is one.
    pub checkpoint_signed_at: Option<DateTime<Utc>>,
}

/// Where the writer leaves what [`LedgerGauges`] reports of it.
#[derive(Debug)]
pub(super) struct Levels {
    /// [`NONE_U64`]: unknown.
    log_bytes: AtomicU64,
    /// Milliseconds since the Unix epoch; [`NONE_I64`]: no checkpoint.
    checkpoint_signed_ms: AtomicI64,
}

const NONE_U64: u64 = u64::MAX;
const NONE_I64: i64 = i64::MIN;

impl Default for Levels {
    fn default() -> Self {
        Self {
            log_bytes: AtomicU64::new(NONE_U64),
            checkpoint_signed_ms: AtomicI64::new(NONE_I64),
        }
    }
}

impl Levels {
    pub(super) fn set_log_bytes(&self, bytes: Option<u64>) {
        self.log_bytes
            .store(bytes.unwrap_or(NONE_U64), Ordering::Relaxed);
    }

    /// The latest checkpoint is `latest` (a time that does not parse counts as none).
    pub(super) fn set_checkpoint(&self, latest: Option<&SignedCheckpoint>) {
        let ms = latest
            .and_then(|c| DateTime::parse_from_rfc3339(&c.signed_at).ok())
            .map_or(NONE_I64, |at| at.timestamp_millis());
        self.checkpoint_signed_ms.store(ms, Ordering::Relaxed);
    }

    pub(super) fn log_bytes(&self) -> Option<u64> {
        Some(self.log_bytes.load(Ordering::Relaxed)).filter(|b| *b != NONE_U64)
    }

    pub(super) fn checkpoint_signed_at(&self) -> Option<DateTime<Utc>> {
        let ms = self.checkpoint_signed_ms.load(Ordering::Relaxed);
        if ms == NONE_I64 {
            return None;
        }
        DateTime::from_timestamp_millis(ms)
    }
}
