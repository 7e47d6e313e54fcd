//! Catalog entries of the thinking-mode tools: `run_thinking_mode`, `reasoning_intent_router`,
//! `reasoning_autopilot`, `run_reasonkit_pipeline` (decided in `app::deliberation::modes`).

use super::super::catalog::{CallerEffect, Effect, ToolEntry, entry, render_json};
use crate::app::deliberation::modes::{
    AutopilotArgs, AutopilotOutput, PipelineArgs, PipelineOutput, RouterArgs, RouterOutput,
    RunModeArgs, RunModeOutput,
};
use crate::app::{
    REASONING_AUTOPILOT_TOOL, REASONING_INTENT_ROUTER_TOOL, RUN_REASONKIT_PIPELINE_TOOL,
    RUN_THINKING_MODE_TOOL,
};

pub(super) fn entries() -> Vec<ToolEntry> {
    vec![
        entry::<RunModeArgs, RunModeOutput>(
            RUN_THINKING_MODE_TOOL,
            "Run Thinking Mode",
            "Run a thinking mode on a goal: Auto (routed by keyword rules), Quick (concise \
             linear audit), Explore (branches to score and prune), Map (drivers, constraints \
             and risks with typed edges), Sketch (skeleton-of-thought outline) or Test \
             (claims and assumptions to verify, then the governance gates). Starts a \
             deliberation if the session has none, adds the mode's scaffold nodes (rule-written \
             prompts for you to answer; no model is invoked) and records the route decision.",
            Effect::Appends,
            render_json,
        )
        .with_caller(CallerEffect::ContinuesStartedSession),
        entry::<RouterArgs, RouterOutput>(
            REASONING_INTENT_ROUTER_TOOL,
            "Route Reasoning Intent",
            "Classify a query into a thinking mode with documented keyword and structure rules \
             (verify/evidence/claim → Test; compare/options/trade-off → Explore; \
             depend/system/cause → Map; outline/draft/plan/steps → Sketch; a short simple \
             question → Quick; otherwise Explore). Returns the mode contract, estimated cost, \
             the matched cues and a heuristic confidence (the score margin, not a probability). \
             Records the route when the session holds a deliberation.",
            Effect::Appends,
            render_json,
        ),
        entry::<AutopilotArgs, AutopilotOutput>(
            REASONING_AUTOPILOT_TOOL,
            "Reasoning Autopilot",
            "run_thinking_mode in Auto, plus autopilot_plan: the ordered tools to call next for \
             the routed mode and profile, each with why.",
            Effect::Appends,
            render_json,
        )
        .with_caller(CallerEffect::ContinuesStartedSession),
        entry::<PipelineArgs, PipelineOutput>(
            RUN_REASONKIT_PIPELINE_TOOL,
            "Run ReasonKit Pipeline",
            "Add ReasonKit stage markers to the deliberation — gigathink (perspectives), \
             laserlogic (conflicts, orphans), bedrock (first principles), proofguard \
             (verification status), brutalhonesty (adversarial critique) — the profile's \
             default set or the stages you name. Each stage adds one prompt node and reports \
             findings counted from the graph, claims and assumptions; it judges no content.",
            Effect::Appends,
            render_json,
        ),
    ]
}
