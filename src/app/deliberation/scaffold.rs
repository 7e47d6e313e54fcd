//! Planned nodes with the texts they show: a [`GraphEdit`] that also keeps each planned node's
//! shown text for the response, and the preview of a deliberation a call is about to start.
//! Shared by the thinking modes and skeleton-of-thought.
//!
//! Owns: planning scaffold nodes against the projection's checks. Must not know: what any
//! workflow scaffolds.

use serde_json::Value;

use crate::app::call::{Call, PathStep, Refusal};
use crate::app::deliberation::graph_edit::GraphEdit;
use crate::app::deliberation::injection::shown;
use crate::app::deliberation::outputs::NodeOut;
use crate::app::deliberation::start::Started;
use crate::events::Fact;
use crate::events::deliberation::{AnalysisMetadata, ScannedText};
use crate::projections::{Deliberation, DeliberationState};

/// Where a planned node goes and what it is.
pub(super) struct NodeSpec {
    pub parents: Vec<String>,
    pub branch_id: String,
    pub kind: &'static str,
    pub tags: Vec<String>,
    pub analysis: AnalysisMetadata,
}

/// A [`GraphEdit`] that also keeps the text each planned node shows, for the response.
pub(super) struct Scaffold<'a> {
    pub edit: GraphEdit<'a>,
    shown: Vec<String>,
}

impl<'a> Scaffold<'a> {
    pub fn new(d: &'a Deliberation) -> Self {
        Self {
            edit: GraphEdit::new(d),
            shown: Vec::new(),
        }
    }

    /// A node whose content is rule-written (committed as a derived text).
    pub fn derived(
        &mut self,
        call: &mut Call<'_>,
        spec: NodeSpec,
        text: &str,
    ) -> Result<String, Refusal> {
        let content = ScannedText {
            text: call.derive_text(text),
            original: None,
            redactions: Vec::new(),
        };
        self.push(spec, content, text.to_owned())
    }

    /// A node whose content is a caller text at `path` of the arguments (scanned).
    pub fn caller(
        &mut self,
        call: &mut Call<'_>,
        spec: NodeSpec,
        field: &str,
        path: &[PathStep],
        text: &str,
    ) -> Result<String, Refusal> {
        let content = call.scanned(field, path, text);
        self.push(spec, content, shown(text, field))
    }

    fn push(
        &mut self,
        spec: NodeSpec,
        content: ScannedText,
        shown: String,
    ) -> Result<String, Refusal> {
        let id = self.edit.add_node(
            spec.parents,
            content,
            spec.branch_id,
            spec.kind,
            spec.tags,
            spec.analysis,
        )?;
        self.shown.push(shown);
        Ok(id)
    }

    pub fn edge(&mut self, from: &str, to: &str, edge_type: &str) -> Result<(), Refusal> {
        self.edit.add_edge(from, to, edge_type)
    }

    /// The planned nodes as responses show them.
    pub fn nodes_out(&self, at: &str) -> Vec<NodeOut> {
        self.edit
            .planned()
            .iter()
            .zip(&self.shown)
            .map(|(n, s)| NodeOut::planned(n, s, at))
            .collect()
    }

    pub fn into_facts(self) -> Vec<Fact> {
        self.edit.into_facts()
    }
}

/// The deliberation `started` will create, folded ahead of time so a call that starts one can
/// plan nodes against it with the same checks as any other (the projection is the one place
/// that knows how facts fold). Texts are not needed for planning and are left out.
pub(super) fn preview(started: &Started, at: &str) -> DeliberationState {
    let event = crate::events::Event {
        v: crate::events::ENVELOPE_VERSION,
        kind: crate::events::KIND_TOOL_CALL_RECORDED.to_owned(),
        seq: 0,
        ledger_id: String::new(),
        session_id: Some(started.session_id.clone()),
        recorded_at: at.to_owned(),
        actor: crate::events::Actor {
            principal: String::new(),
            transport: String::new(),
            client_name: None,
            client_version: None,
            role: Default::default(),
            user_ids: Vec::new(),
        },
        call: crate::events::Call {
            tool: String::new(),
            arguments: Value::Null,
            idempotency_key: None,
            effects: None,
        },
        facts: started.facts.clone(),
        outcome: crate::events::Outcome {
            status: crate::events::OutcomeStatus::Ok,
            response_digest: String::new(),
            error: None,
            response_ref: None,
            decide_micros: None,
        },
        provenance: crate::events::Provenance::rules("preview"),
        trace: None,
        prev_hash: String::new(),
        hash: String::new(),
    };
    let mut state = DeliberationState::default();
    state.apply(&event, &|_| None);
    state
}
