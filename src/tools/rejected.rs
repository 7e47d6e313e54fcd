//! A `tools/call` whose params rmcp cannot decode (a `name` that is no string, `arguments`
//! that are no object, a malformed `_meta`): the transport edge answers it -32602 itself, and
//! records it here as one rejected call, so that every `tools/call` still has its event.
//!
//! The raw params go to `app` under [`crate::app::UNDECODABLE_CALL`], which records them as an
//! opaque committed text and changes no state. This module knows nothing of the wire.

use rmcp::model::Implementation;
use serde_json::{Value, json};

use super::{ThinkServer, arrival};
use crate::app::{Command, UNDECODABLE_CALL};
use crate::events::Actor;

impl ThinkServer {
    /// Records an undecodable `tools/call` of `principal` with its raw `params` as a rejected
    /// call; returns
    /// the rejection as the client should see it (`code`, `error`, `suggestion`, `seq`,
    /// `eventHash`), or `ledger_unavailable` when it could not be recorded.
    pub async fn record_undecodable_call(
        &self,
        params: Value,
        client: Option<&Implementation>,
        principal: &str,
    ) -> Value {
        let command = Command {
            tool: UNDECODABLE_CALL.to_owned(),
            arguments: params,
            actor: Actor {
                principal: principal.to_owned(),
                transport: self.transport.to_owned(),
                client_name: client.map(|c| c.name.clone()),
                client_version: client.map(|c| c.version.clone()),
                role: Default::default(),
                user_ids: Vec::new(),
            },
            connection_session: self.connection_session.current(),
            refused_in: Some(self.connection_session.current()),
            tool_enabled: false,
            toolsets: Vec::new(),
            admin: false,
            idempotency_key: None,
            trace: None,
            prepared: self.effects.prepare(),
            watch: Default::default(),
            precomputed: Default::default(),
        };
        match arrival::submit(&self.ledger, command).await {
            Ok(committed) => {
                let mut body = committed.body;
                if let Value::Object(map) = &mut body {
                    map.insert("seq".into(), json!(committed.seq));
                    map.insert("eventHash".into(), json!(committed.hash));
                }
                body
            }
            Err(e) => {
                tracing::error!(error = %e, "an undecodable call could not be recorded");
                super::call_flow::unrecorded(&e)
            }
        }
    }
}
