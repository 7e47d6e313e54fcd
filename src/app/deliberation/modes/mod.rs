//! Thinking Modes (the seed's Thinking Modes & Profiles): the mode contract catalog and the
//! prompt packs behind `reasoning://thinking-modes` and MCP prompts, the intent router's rules,
//! `run_thinking_mode` and its compatibility flow `reasoning_autopilot`, and the ReasonKit
//! stage markers of `run_reasonkit_pipeline`.
//!
//! Every workflow here is deterministic heuristic scaffolding: rule-written prompts added as
//! nodes through [`GraphEdit`](super::graph_edit::GraphEdit), which the client answers with its own
//! reasoning. No model is invoked (see `providers`); route confidences are margins between rule
//! scores.
//! Owns: which mode a query routes to and why, what each mode scaffolds, what each stage finds
//! in the graph's structure. Must not know: MCP, storage, the environment.
//!
//! Layout: `catalog` (mode contracts and costs), `packs` (prompt packs), `plans` (autopilot
//! workflows), `router` (cues, classification, `reasoning_intent_router`), `run`
//! (`run_thinking_mode`, `reasoning_autopilot`), `scaffolds` (what each mode plans under a
//! run's subject), `pipeline` (`run_reasonkit_pipeline`). The
//! scaffolding they plan nodes with is shared with skeleton-of-thought in `super::scaffold`.

mod catalog;
mod packs;
mod pipeline;
mod plans;
mod router;
mod run;
mod scaffolds;
#[cfg(test)]
mod tests;

pub(crate) use catalog::contracts;
pub use catalog::{EstimatedCost, ThinkingModeContract, contract, estimated_cost};
pub(crate) use packs::prompt_packs;
pub use packs::{PromptArgument, PromptMessage, PromptPack};
pub(crate) use pipeline::decide_pipeline;
pub use pipeline::{PipelineArgs, PipelineOutput, StageOut};
pub use plans::{PlanStep, autopilot_steps};
pub(crate) use router::decide_intent_router;
pub use router::{Alternative, Classification, ModeScore, RouterArgs, RouterOutput, classify};
pub(super) use router::{Cue, matched_cues, words};
pub use run::{AutopilotArgs, AutopilotOutput, RunModeArgs, RunModeOutput};
pub(crate) use run::{decide_autopilot, decide_run_thinking_mode};

use crate::app::call::{Call, Refusal};
use crate::app::call::{owned_session, target};
use crate::app::deliberation::budgets::PROFILES;
use crate::projections::Deliberation;

// ---------------------------------------------------------------------------------------------
// The deliberation a call targets
// ---------------------------------------------------------------------------------------------

/// The profile a deliberation runs under (`balanced` if it names none this build knows).
fn profile_of(d: &Deliberation) -> &'static str {
    PROFILES
        .iter()
        .copied()
        .find(|p| *p == d.profile)
        .unwrap_or("balanced")
}

/// The deliberation a call names or this connection holds, if any: a named session must
/// exist; a session without a deliberation is not an error here.
fn existing_deliberation<'a>(
    call: &Call<'a>,
    session_id: Option<&str>,
) -> Result<Option<&'a Deliberation>, Refusal> {
    let app = call.app;
    let id = match session_id {
        Some(raw) => target(app, call.command, Some(raw))?.id(),
        None => match owned_session(app, call.command, &call.command.connection_session) {
            Some(session) => session.id.clone(),
            None => return Ok(None),
        },
    };
    Ok(app.deliberations().get(&id))
}
