//! Where a server reads a thinking session's body again when its state does not hold it: the
//! session's stored events, parsed, and their texts ([`crate::projections::BodySource`] over
//! the ledger's [`SessionLog`]).

use std::sync::Arc;

use crate::events::{Event, SessionId, TextRef};
use crate::ledger::SessionLog;
use crate::ledger::hash::parse_hex32;
use crate::projections::BodySource;

pub(super) struct LogBodies(pub(super) Arc<dyn SessionLog>);

impl BodySource for LogBodies {
    fn events(&self, session: &SessionId, through: u64) -> Result<Vec<Event>, String> {
        let seqs = self.0.session_seqs(session).map_err(|e| e.to_string())?;
        seqs.into_iter()
            .take_while(|seq| *seq <= through)
            .map(|seq| {
                let bytes = self
                    .0
                    .event_bytes(seq)
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| format!("event {seq} is indexed but not stored"))?;
                serde_json::from_slice(&bytes).map_err(|e| format!("event {seq}: {e}"))
            })
            .collect()
    }

    fn text(&self, text: &TextRef) -> Result<Option<Arc<str>>, String> {
        let commitment = parse_hex32(&text.commitment)
            .ok_or_else(|| format!("text commitment {:?} is not 64 hex digits", text.commitment))?;
        Ok(self
            .0
            .text(&commitment)
            .map_err(|e| e.to_string())?
            .map(|record| Arc::from(record.text)))
    }
}
