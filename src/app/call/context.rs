//! The context of one call decided at the ledger's decision time ([`super::Decide::InContext`]):
//! who calls, when (the `recordedAt` the event will carry), the arguments as sent and as
//! recorded, the texts the decision derives, committed as it goes, and the draws (salts, new
//! session ids) from the seed the call was prepared with.
//!
//! Families add their own methods to [`Call`] in their own modules (the deliberation finds its
//! deliberation and scans caller text through it). Must not know any family.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::super::draws::Draws;
use super::super::{App, Command, Decided, TextPolicy};
use super::Refusal;
use crate::events::{Fact, SessionId, TextRef};
use crate::ledger::NewText;

/// The context of one call: who, when, the arguments as sent and as recorded, and the texts
/// the decision derives (committed as it goes).
pub struct Call<'a> {
    pub app: &'a App,
    pub command: &'a Command,
    /// The decision time: the `recordedAt` the event will carry.
    pub at: &'a str,
    pub args: &'a Value,
    pub recorded: &'a Value,
    pub texts: Vec<NewText>,
    /// The decision's draws from its call's seed (shared with the recording of the arguments,
    /// so no salt is drawn twice).
    draws: &'a Draws,
}

impl Call<'_> {
    /// ThoughtMCP's response envelope around `data` (the memory and cognition families):
    /// `success`, `data`, `metadata.{timestamp, componentsUsed}`; the tools layer adds
    /// `processingTime`.
    pub fn seed_envelope<T: serde::Serialize>(&self, data: T, components: &[&str]) -> Value {
        serde_json::json!({
            "success": true,
            "data": data,
            "metadata": {
                "timestamp": self.at,
                "componentsUsed": components,
            },
        })
    }
}

impl<'a> Call<'a> {
    pub fn new(
        app: &'a App,
        command: &'a Command,
        at: &'a str,
        draws: &'a Draws,
        args: &'a Value,
        recorded: &'a Value,
    ) -> Self {
        Self {
            app,
            command,
            at,
            args,
            recorded,
            texts: Vec::new(),
            draws,
        }
    }

    fn policy(&self) -> TextPolicy<'a> {
        TextPolicy {
            max_text_bytes: self.app.config().max_text_bytes,
            draws: self.draws,
        }
    }

    /// A new session's id, drawn from the call's seed (recorded in the event that starts it).
    pub fn new_session_id(&self) -> SessionId {
        self.draws.session_id()
    }

    /// The id of a session this call starts: the caller's current session when that has not
    /// started yet, else one drawn from the call's seed. A re-execution passes the recorded
    /// session as the caller's, so the session starts again under its recorded id.
    pub fn starting_session_id(&self) -> SessionId {
        let own = &self.command.connection_session;
        if self.app.state().head(own).is_none() {
            own.clone()
        } else {
            self.new_session_id()
        }
    }

    /// Parses the typed arguments; a failure names the problem and the expected shape.
    pub fn parse<T: DeserializeOwned>(&self, usage: &str) -> Result<T, Refusal> {
        super::parse(self.args, usage).map_err(|r| (r, None))
    }

    /// Commits a text the decision derived (a template, a question, a redacted text).
    pub fn derive_text(&mut self, text: &str) -> TextRef {
        let (text_ref, new) = self.policy().commit(text);
        self.texts.push(new);
        text_ref
    }

    /// The commitment the recorded arguments hold at `path` (e.g. `["claims", 1, "text"]`).
    pub fn recorded_ref(&self, path: &[PathStep]) -> Option<TextRef> {
        let mut at = self.recorded;
        for step in path {
            at = match step {
                PathStep::Key(k) => at.get(*k)?,
                PathStep::Index(i) => at.get(*i)?,
            };
        }
        serde_json::from_value(at.clone()).ok()
    }

    /// The successful outcome, carrying the derived texts.
    pub fn done(
        &mut self,
        session_id: Option<SessionId>,
        facts: Vec<Fact>,
        body: impl serde::Serialize,
    ) -> Result<Decided, Refusal> {
        Ok(Decided::new(session_id, facts, body).with_texts(std::mem::take(&mut self.texts)))
    }

    /// Ends the decision in the caller's current session, which the call starts when it is
    /// that session's first (so a family without sessions of its own, memory, still shows in
    /// `thinkledger sessions`, its replay and its export).
    pub fn done_in_current_session(
        &mut self,
        facts: Vec<Fact>,
        body: impl serde::Serialize,
    ) -> Result<Decided, Refusal> {
        // An auditor's own session counts too: its reads are recorded there, and change nothing
        // else.
        let own = self.command.connection_session.clone();
        let mut all = Vec::new();
        match self.app.state().head(&own) {
            None => all.push(Fact::SessionStarted {
                session_id: own.clone(),
            }),
            Some(head) if head.principal == self.command.actor.principal => {}
            // Only a hand-made command names another principal's session as its caller's.
            Some(_) => {
                return Err((
                    super::super::Rejection::new(
                        crate::app::ErrorCode::UnknownSession,
                        format!("there is no session {own} in this ledger"),
                        "pass sessionId to name one of your own sessions",
                    ),
                    None,
                ));
            }
        }
        all.extend(facts);
        self.done(Some(own), all, body)
    }
}

/// One step of a path into the recorded arguments.
#[derive(Debug, Clone, Copy)]
pub enum PathStep {
    Key(&'static str),
    Index(usize),
}
