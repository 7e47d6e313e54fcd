//! Catalog entries of the governance tools: the assumption ledger, verification against
//! caller-supplied evidence, quality evaluation and checkpoints, convergence and the consensus
//! policy guard (decided in `app::deliberation::governance`).

use super::super::catalog::{Effect, ToolEntry, entry, render_json};
use crate::app::deliberation::governance::{
    AssumptionStatusArgs, AssumptionStatusOutput, CheckpointArgs, CheckpointOutput, ConsensusArgs,
    ConsensusOutput, ConvergeArgs, ConvergeOutput, EvaluateArgs, EvaluateOutput,
    RecordAssumptionArgs, RecordAssumptionOutput, VerifyArgs, VerifyOutput,
};
use crate::app::{
    CONSENSUS_ANSWER_TOOL, CONVERGE_REASONING_TOOL, EVALUATE_REASONING_QUALITY_TOOL,
    RECORD_ASSUMPTION_TOOL, RUN_REASONING_CHECKPOINT_TOOL, SET_ASSUMPTION_STATUS_TOOL,
    VERIFY_THOUGHTS_TOOL,
};

pub(super) fn entries() -> Vec<ToolEntry> {
    vec![
        entry::<RecordAssumptionArgs, RecordAssumptionOutput>(
            RECORD_ASSUMPTION_TOOL,
            "Record Assumption",
            "Add an assumption to the deliberation's ledger (id asm-N, status unverified), with \
             its criticality (low, medium, high, critical; default medium), whether evidence \
             could settle it (verifiable, default true) and the nodes it is made in. A high or \
             critical verifiable assumption blocks converge_reasoning and consensus_answer until \
             set_assumption_status validates or retracts it; the response says whether it blocks.",
            Effect::Appends,
            render_json,
        ),
        entry::<AssumptionStatusArgs, AssumptionStatusOutput>(
            SET_ASSUMPTION_STATUS_TOOL,
            "Set Assumption Status",
            "Mark an assumption validated, falsified, retracted or unverified. validated and \
             falsified need evidence or a rationale. A falsified high or critical verifiable \
             assumption keeps blocking consensus; retract it if the reasoning no longer relies \
             on it. Returns the assumption and every assumption still blocking.",
            Effect::Appends,
            render_json,
        ),
        entry::<VerifyArgs, VerifyOutput>(
            VERIFY_THOUGHTS_TOOL,
            "Verify Claims",
            "Put claims under verification and weigh the evidence you supply; this server \
             retrieves and fact-checks nothing, it only evaluates caller-supplied evidence. \
             Evidence counts once per independence group at its strongest tier (primary 1.0, \
             secondary 0.6, tertiary 0.3). A high or critical claim is verified (or refuted) at \
             a weight of 1.0 from at least 2 groups; a low or medium claim at one group of at \
             least 0.6. A claim one group supports and another refutes is contested until you \
             send a resolution (verified or refuted, with a rationale). New claims get ids \
             claim-N in order, so evidence in the same call can cite them. Returns statuses, \
             a claims × groups verification matrix, conflicts, and chain-of-verification \
             questions (fixed templates quoting each new claim, within the question budget;              provider model_backed has the configured model write them).",
            Effect::Appends,
            render_json,
        )
        .may_ask_model(),
        entry::<EvaluateArgs, EvaluateOutput>(
            EVALUATE_REASONING_QUALITY_TOOL,
            "Evaluate Reasoning Quality",
            "Read-only assessment of the deliberation's structure: a quality score in [0, 1] \
             from verification coverage, assumption coverage, the critical gates, branch \
             diversity, scoring coverage and conflict handling, with its tier (low, moderate, \
             high, excellent); structural bias signals (confirmation_bias, anchoring, \
             premature_convergence, single_source_reliance, unexamined_assumptions) with the ids \
             that show them; the five consensus checks as they stand; and the tools to use \
             next. It scores structure, not the meaning of the content.",
            Effect::Reads,
            render_json,
        ),
        entry::<CheckpointArgs, CheckpointOutput>(
            RUN_REASONING_CHECKPOINT_TOOL,
            "Run Reasoning Checkpoint",
            "Record a quality checkpoint (id ckpt-N): the quality score and tier against a \
             threshold (default by profile: quick 0.5, balanced 0.65, deep 0.75, paranoid \
             0.85), the blocking gaps (failed consensus checks on claims, conflicts, assumptions \
             and diversity, and quality_threshold when below), and a route decision (converge, \
             verify, resolve_assumptions, resolve_conflicts, expand or score) with a rule-based, \
             uncalibrated confidence. In governed mode (Test / reasonkit, or the paranoid \
             profile) consensus_answer needs a checkpoint or route decision taken after the \
             deliberation's last change.",
            Effect::Appends,
            render_json,
        ),
        entry::<ConvergeArgs, ConvergeOutput>(
            CONVERGE_REASONING_TOOL,
            "Converge Reasoning",
            "Add a convergence node over the best-scored live leaf of each branch (up to 3), \
             with subsumes edges to them, and mark the deliberation converged. Refused \
             (convergence_blocked) while a critical claim is unverified, insufficiently \
             evidenced or contested, a high or critical verifiable assumption is unverified or \
             falsified, or the quality score is below the threshold. The node's content is your \
             summary, or else a list of the chosen nodes quoting their content.",
            Effect::Appends,
            render_json,
        ),
        entry::<ConsensusArgs, ConsensusOutput>(
            CONSENSUS_ANSWER_TOOL,
            "Consensus Answer",
            "Conclude the deliberation with an answer (yours, or the convergence node's \
             content) behind a policy guard of five checks: no_unresolved_critical_claim (no \
             critical claim unverified or with insufficient evidence), \
             no_unhandled_source_conflict (no critical claim contested without a resolution), \
             no_blocking_assumption (no high or critical verifiable assumption unverified or \
             falsified), diversity_floor (enough distinct branches in deliberate modes: quick 1, \
             balanced 2, deep 3, paranoid 3) and route_decision_emitted (in governed mode, a \
             route decision newer than the last change). Any failure refuses the call \
             (consensus_blocked) naming every blocker. The confidence is heuristic (quality \
             score × share of critical claims verified); semantic_confidence is null.",
            Effect::Appends,
            render_json,
        ),
    ]
}
