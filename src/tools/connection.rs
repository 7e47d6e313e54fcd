//! A relayed connection's state (docs/scaling.md, "One ledger, many processes"): what a
//! connection of its own keeps between calls — the session a call that names none continues,
//! the enabled toolsets, the log level — as the owner tells its relay after each change and the
//! relay hands to the next owner when the first is gone, so that the client's conversation
//! goes on where it was. This module knows the state's shape and its one wire notification,
//! not sockets.
#![allow(deprecated)] // MCP logging (see `utilities`)

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::LoggingLevel;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// The notification an owner sends its relay (never forwarded to the client).
pub const STATE_NOTIFICATION: &str = "notifications/thinkledger/connection";

/// One connection's state between calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionState {
    /// The session a call that names none continues (not yet started, maybe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The deliberation or lux workspace a call of those families that names none continues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The enabled families; `None`: the relay's `--toolsets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolsets: Option<Vec<String>>,
    /// The level `logging/setLevel` chose, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<LoggingLevel>,
}

impl ConnectionState {
    /// The JSON-RPC notification line that carries this state to the relay.
    pub fn notification(&self) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "jsonrpc": "2.0",
            "method": STATE_NOTIFICATION,
            "params": self,
        }))
        .unwrap_or_default()
    }
}

/// Where an owner's connection sends its state when it changes: the connection's outgoing
/// lines, ahead of the answer of the call that changed it (the relay knows the state before it
/// sees the answer).
#[derive(Clone)]
pub struct StateOut {
    lines: mpsc::Sender<Vec<u8>>,
    last: Arc<Mutex<Option<ConnectionState>>>,
}

impl StateOut {
    pub fn new(lines: mpsc::Sender<Vec<u8>>) -> Self {
        Self {
            lines,
            last: Arc::new(Mutex::new(None)),
        }
    }

    /// Sends `state` unless it is the state sent last.
    pub async fn report(&self, state: ConnectionState) {
        {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            if last.as_ref() == Some(&state) {
                return;
            }
            *last = Some(state.clone());
        }
        let _ = self.lines.send(state.notification()).await;
    }
}
