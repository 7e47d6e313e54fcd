//! What a deliberation call adds to the shared call context ([`Call`]): the deliberation it acts
//! on (refused when there is none or it concluded), caller text scanned for injection before it
//! is stored, the analysis metadata of what it derives, and refusals attributed to its session.
//!
//! Must not know MCP or storage.

use super::injection::scan;
use crate::app::ErrorCode;
use crate::app::Rejection;
use crate::app::call::{Call, PathStep, Refusal, Target, target};
use crate::events::TextRef;
use crate::events::deliberation::{AnalysisMetadata, ScannedText};
use crate::projections::Deliberation;

/// What a deliberation call adds to the shared call context: caller text scanned for
/// injection, analysis metadata, and the deliberation the call acts on.
impl<'a> Call<'a> {
    /// A caller text as stored: scanned for prompt injection; when something matched, the shown
    /// text is the redacted one (a derived text) and the original stays only behind its
    /// commitment in the arguments. `field` names it in the redaction record; `path` finds its
    /// commitment in the recorded arguments.
    pub fn scanned(&mut self, field: &str, path: &[PathStep], text: &str) -> ScannedText {
        let original = self
            .recorded_ref(path)
            .unwrap_or_else(|| self.derive_text(text));
        self.scanned_from(original, field, text)
    }

    /// `text`, whose commitment is `original`, as stored: itself, or, when the injection scan
    /// matched, the redacted text (derived) with `original` kept behind it.
    pub fn scanned_from(&mut self, original: TextRef, field: &str, text: &str) -> ScannedText {
        match scan(field, text) {
            None => ScannedText {
                text: original,
                original: None,
                redactions: Vec::new(),
            },
            Some((redacted, redactions)) => ScannedText {
                text: self.derive_text(&redacted),
                original: Some(original),
                redactions,
            },
        }
    }

    /// Metadata of an output this decision derives.
    pub fn analysis(
        &self,
        mode: &str,
        method: &str,
        provider: &str,
        source_node_ids: Vec<String>,
        limitations: &[&str],
    ) -> AnalysisMetadata {
        AnalysisMetadata {
            mode: mode.to_owned(),
            method: method.to_owned(),
            provider: provider.to_owned(),
            model: None,
            generated_at: self.at.to_owned(),
            source_node_ids,
            limitations: limitations.iter().map(|l| (*l).to_owned()).collect(),
        }
    }

    /// The deliberation the call acts on: the named session's, else the caller's current one.
    pub fn deliberation(&self, session_id: Option<&str>) -> Result<&'a Deliberation, Refusal> {
        let target = target(self.app, self.command, session_id)?;
        let Target::Existing(session) = target else {
            return Err((no_deliberation(), None));
        };
        self.app
            .deliberations()
            .get(&session.id)
            .ok_or_else(|| (no_deliberation(), Some(session.id.clone())))
    }

    /// Like [`Call::deliberation`], for a call that changes it: refused once it concluded.
    pub fn open_deliberation(&self, session_id: Option<&str>) -> Result<&'a Deliberation, Refusal> {
        let d = self.deliberation(session_id)?;
        if d.status == "concluded" {
            return Err((
                Rejection::new(
                    ErrorCode::DeliberationConcluded,
                    format!(
                        "deliberation {} concluded with a consensus answer; it no longer changes",
                        d.deliberation_id
                    ),
                    "start a new deliberation with start_deliberation; this one stays readable \
                     through reasoning://session/{id}/… and replay_reasoning_session",
                ),
                Some(d.session_id.clone()),
            ));
        }
        Ok(d)
    }
}

fn no_deliberation() -> Rejection {
    Rejection::new(
        ErrorCode::NoDeliberation,
        "this session has no deliberation",
        "start one with start_deliberation (or run_thinking_mode), then pass the session_id it \
         returns",
    )
}

/// A refusal attributed to `d`'s session.
pub fn refuse(
    d: &Deliberation,
    code: ErrorCode,
    message: impl Into<String>,
    suggestion: impl Into<String>,
) -> Refusal {
    (
        Rejection::new(code, message, suggestion),
        Some(d.session_id.clone()),
    )
}
