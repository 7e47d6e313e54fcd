//! MCP's utilities for long work, per request: log messages to the client
//! (`notifications/message`) at or above the level it chose, progress
//! (`notifications/progress`) when the request carries a `progressToken`, and cancellation
//! (`notifications/cancelled`, or a 2026-07-28 client closing its response stream).
//!
//! Levels: a session-era client sets its connection's with `logging/setLevel`; a 2026-07-28
//! request carries its own in `_meta["io.modelcontextprotocol/logLevel"]` and, without one, gets
//! no log messages (that revision removed `logging/setLevel`). What is logged is listed in
//! [`Reporter`]'s methods; never an erasable text (a refusal's message may quote the caller, a
//! provider's error body may echo the prompt: neither is sent), never a secret.
//!
//! Notices go out in the order they were made, all of them before the call's result
//! ([`Reporter::finish`]): the decision on the writer only queues them.

// rmcp marks MCP logging deprecated (SEP-2577, 2026-07-28); the session-era revisions this
// server speaks still have it, and 2026-07-28 keeps the per-request level.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::Peer;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::app::call::CallWatch;
use crate::model::Retrying;

/// How long a finished call waits for its last notices to be handed to the transport; a client
/// that stopped reading must not hold the answer forever.
const FLUSH_PATIENCE: Duration = Duration::from_secs(5);

/// Logger names a client can filter on.
pub const LOGGER_CALL: &str = "thinkledger.call";
pub const LOGGER_MODEL: &str = "thinkledger.model";
pub const LOGGER_LEDGER: &str = "thinkledger.ledger";

/// A connection's log level (`logging/setLevel`): none until the client sets one.
#[derive(Clone, Default)]
pub struct ConnectionLevel(Arc<Mutex<Option<LoggingLevel>>>);

impl ConnectionLevel {
    pub fn set(&self, level: LoggingLevel) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(level);
    }

    pub fn get(&self) -> Option<LoggingLevel> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The severity order of MCP's levels (RFC 5424's, least severe first).
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

enum Notice {
    Log(LoggingMessageNotificationParam),
    Progress(ProgressNotificationParam),
    /// Everything before has been handed to the transport.
    Flushed(oneshot::Sender<()>),
}

/// One request's utilities. Cheap to clone; [`Reporter::watch`] gives the decision its view.
#[derive(Clone)]
pub struct Reporter(Arc<Inner>);

struct Inner {
    /// Where notices go; `None` when the client asked for neither logs nor progress.
    tx: Option<mpsc::UnboundedSender<Notice>>,
    level: Option<LoggingLevel>,
    progress_token: Option<ProgressToken>,
    /// The last progress value sent (f64 bits): progress must increase.
    last_progress: AtomicU64,
    cancel: CancellationToken,
}

impl Reporter {
    /// A reporter for one request: `level` is the client's threshold (`None`: no log messages),
    /// `progress_token` the request's, `cancel` fires when the client cancels it. Notices are
    /// sent through `peer` by a task of their own, in order.
    pub fn new(
        peer: &Peer<RoleServer>,
        level: Option<LoggingLevel>,
        progress_token: Option<ProgressToken>,
        cancel: CancellationToken,
    ) -> Self {
        let tx = (level.is_some() || progress_token.is_some()).then(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(deliver(peer.clone(), rx));
            tx
        });
        Self(Arc::new(Inner {
            tx,
            level,
            progress_token,
            last_progress: AtomicU64::new(0),
            cancel,
        }))
    }

    /// A reporter that sends nothing and is never cancelled (requests that did not come from an
    /// MCP client).
    pub fn silent() -> Self {
        Self(Arc::new(Inner {
            tx: None,
            level: None,
            progress_token: None,
            last_progress: AtomicU64::new(0),
            cancel: CancellationToken::new(),
        }))
    }

    /// The decision's view of this request.
    pub fn watch(&self) -> crate::app::call::Watch {
        crate::app::call::Watch(Some(Arc::new(self.clone())))
    }

    /// Whether the client has cancelled the request.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancel.is_cancelled()
    }

    /// Resolves when the client cancels the request.
    pub async fn cancelled(&self) {
        self.0.cancel.cancelled().await;
    }

    /// Sends `data` as a log message from `logger`, if the client's level lets it through.
    pub fn log(&self, level: LoggingLevel, logger: &str, data: Value) {
        let Some(threshold) = self.0.level else {
            return;
        };
        if rank(level) < rank(threshold) {
            return;
        }
        if let Some(tx) = &self.0.tx {
            let mut param = LoggingMessageNotificationParam::new(level, data);
            param.logger = Some(logger.to_owned());
            let _ = tx.send(Notice::Log(param));
        }
    }

    /// Reports progress, if the request asked for it. A value not above the last one sent is
    /// dropped (MCP requires progress to increase).
    pub fn progress(&self, progress: f64, total: Option<f64>, message: impl Into<String>) {
        let (Some(token), Some(tx)) = (&self.0.progress_token, &self.0.tx) else {
            return;
        };
        let bits = progress.to_bits();
        let previous = self.0.last_progress.fetch_max(bits, Ordering::AcqRel);
        // Non-negative floats order as their bits do.
        if progress < 0.0 || previous >= bits {
            return;
        }
        let mut param = ProgressNotificationParam::new(token.clone(), progress);
        param.total = total;
        param.message = Some(message.into());
        let _ = tx.send(Notice::Progress(param));
    }

    /// Logs a call the ledger refused: its tool, code and seq (the message may quote the caller,
    /// so it stays out).
    pub fn refused(&self, tool: &str, code: &str, seq: u64) {
        self.log(
            LoggingLevel::Warning,
            LOGGER_CALL,
            json!({"event": "call_refused", "tool": tool, "code": code, "seq": seq}),
        );
    }

    /// Logs a retry of a model call.
    pub fn model_retry(&self, tool: &str, retry: &Retrying) {
        self.log(
            LoggingLevel::Warning,
            LOGGER_MODEL,
            json!({
                "event": "model_retry",
                "tool": tool,
                "failedAttempt": retry.failed_attempt,
                "waitMs": u64::try_from(retry.wait.as_millis()).unwrap_or(u64::MAX),
                "failure": retry.kind,
                "httpStatus": retry.status,
            }),
        );
    }

    /// Logs a model call that failed for good (its kind; the message may carry the provider's
    /// body).
    pub fn model_failed(&self, tool: &str, kind: &str) {
        self.log(
            LoggingLevel::Error,
            LOGGER_MODEL,
            json!({"event": "model_call_failed", "tool": tool, "failure": kind}),
        );
    }

    /// Logs that a call waited for the ledger to finish opening.
    pub fn waited_for_open(&self, tool: &str, waited: Duration) {
        self.log(
            LoggingLevel::Notice,
            LOGGER_LEDGER,
            json!({
                "event": "waited_for_open",
                "tool": tool,
                "waitedMs": u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
            }),
        );
    }

    /// Logs a call stopped because the client cancelled it.
    pub fn cancelled_call(&self, tool: &str, progress: &str) {
        self.log(
            LoggingLevel::Notice,
            LOGGER_CALL,
            json!({"event": "call_cancelled", "tool": tool, "progress": progress}),
        );
    }

    /// Waits until every notice made so far has been handed to the transport, so that they all
    /// reach the client before the call's result.
    pub async fn finish(&self) {
        let Some(tx) = &self.0.tx else {
            return;
        };
        let (ack, flushed) = oneshot::channel();
        if tx.send(Notice::Flushed(ack)).is_ok()
            && tokio::time::timeout(FLUSH_PATIENCE, flushed).await.is_err()
        {
            tracing::debug!("notices not flushed before the result");
        }
    }
}

impl CallWatch for Reporter {
    fn progress(&self, done: u64, total: Option<u64>, message: &str) {
        #[allow(clippy::cast_precision_loss)] // counts of events, far below 2^52
        Reporter::progress(self, done as f64, total.map(|t| t as f64), message);
    }

    fn cancelled(&self) -> bool {
        self.is_cancelled()
    }
}

/// Sends each notice in turn, waiting for the transport to take it before the next.
async fn deliver(peer: Peer<RoleServer>, mut rx: mpsc::UnboundedReceiver<Notice>) {
    while let Some(notice) = rx.recv().await {
        let sent = match notice {
            Notice::Log(param) => peer.notify_logging_message(param).await,
            Notice::Progress(param) => peer.notify_progress(param).await,
            Notice::Flushed(ack) => {
                let _ = ack.send(());
                continue;
            }
        };
        if let Err(e) = sent {
            tracing::debug!(error = %e, "a notice to the client was not delivered");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_by_severity() {
        let all = [
            LoggingLevel::Debug,
            LoggingLevel::Info,
            LoggingLevel::Notice,
            LoggingLevel::Warning,
            LoggingLevel::Error,
            LoggingLevel::Critical,
            LoggingLevel::Alert,
            LoggingLevel::Emergency,
        ];
        for pair in all.windows(2) {
            assert!(rank(pair[0]) < rank(pair[1]), "{pair:?}");
        }
    }
}
