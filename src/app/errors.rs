//! The machine-readable code of every refusal: one [`ErrorCode`] variant per code a client can
//! see in a rejected (or failed) call's `code`, each with its wire string, the one recorded in
//! the event's `outcome.error.code`.
//!
//! Shared by every family. The wire strings are a persisted contract (docs/ledger-format.md and
//! the docs name them, events hold them): a variant may be added, never renamed. Knows no
//! family and no tool.

use crate::ledger::problem_code::wire_codes;

wire_codes! {
    /// Why a call was refused, as the client reads it in `code`.
    ErrorCode {
        InvalidParams => "invalid_params",
        InvalidArguments => "invalid_arguments",
        ArgumentsTooLarge => "arguments_too_large",
        TextTooLarge => "text_too_large",
        UnknownTool => "unknown_tool",
        ToolDisabled => "tool_disabled",
        TimeLimitExceeded => "time_limit_exceeded",
        RandomnessUnavailable => "randomness_unavailable",
        InternalError => "internal_error",
        MissingParameter => "missing_parameter",
        InvalidSector => "invalid_sector",
        EmptyContent => "empty_content",
        MemoryNotFound => "memory_not_found",
        NothingToUpdate => "nothing_to_update",
        EmbeddingUnavailable => "embedding_unavailable",
        EmbeddingModelMismatch => "embedding_model_mismatch",
        InvalidIdempotencyKey => "invalid_idempotency_key",
        IdempotencyKeyReused => "idempotency_key_reused",
        UnknownSession => "unknown_session",
        InvalidSessionId => "invalid_session_id",
        SessionClosed => "session_closed",
        UnknownThought => "unknown_thought",
        UnknownBranch => "unknown_branch",
        InvalidTag => "invalid_tag",
        InvalidQuery => "invalid_query",
        NothingToErase => "nothing_to_erase",
        InvalidEdgeType => "invalid_edge_type",
        InvalidEdge => "invalid_edge",
        CycleDetected => "cycle_detected",
        UnknownTemplate => "unknown_template",
        UnknownPattern => "unknown_pattern",
        ReasonRequired => "reason_required",
        ConfirmationRequired => "confirmation_required",
        UnknownToolset => "unknown_toolset",
        ToolsetRequired => "toolset_required",
        ReplayFailed => "replay_failed",
        LogUnreadable => "log_unreadable",
        NoCheckpoint => "no_checkpoint",
        EmptySession => "empty_session",
        InvalidRange => "invalid_range",
        NoSigningKey => "no_signing_key",
        ForeignCheckpoint => "foreign_checkpoint",
        Rollback => "rollback",
        Fork => "fork",
        TextMissing => "text_missing",
        LedgerCorrupt => "ledger_corrupt",
        ProviderUnavailable => "provider_unavailable",
        InvalidProvider => "invalid_provider",
        NoDeliberation => "no_deliberation",
        DeliberationExists => "deliberation_exists",
        DeliberationConcluded => "deliberation_concluded",
        InvalidMode => "invalid_mode",
        InvalidProfile => "invalid_profile",
        InvalidBudget => "invalid_budget",
        BudgetExceeded => "budget_exceeded",
        UnknownNode => "unknown_node",
        NodePruned => "node_pruned",
        UnknownPhase => "unknown_phase",
        PhaseMerged => "phase_merged",
        UnknownStage => "unknown_stage",
        UnknownClaim => "unknown_claim",
        UnknownAssumption => "unknown_assumption",
        UnknownCommitment => "unknown_commitment",
        InvalidCommitment => "invalid_commitment",
        InvalidEvidence => "invalid_evidence",
        InvalidStatus => "invalid_status",
        InvalidCriticality => "invalid_criticality",
        InvalidOutcome => "invalid_outcome",
        InvalidRubric => "invalid_rubric",
        InvalidThreshold => "invalid_threshold",
        InvalidTier => "invalid_tier",
        InvalidStyle => "invalid_style",
        InvalidMaxPoints => "invalid_max_points",
        TooManyPoints => "too_many_points",
        TooManyItems => "too_many_items",
        RationaleRequired => "rationale_required",
        MissingAgentScores => "missing_agent_scores",
        UnscoredNodes => "unscored_nodes",
        LensesExhausted => "lenses_exhausted",
        NoConflict => "no_conflict",
        NoAnswer => "no_answer",
        NothingToVerify => "nothing_to_verify",
        NothingToScore => "nothing_to_score",
        NothingToPrune => "nothing_to_prune",
        NothingToMerge => "nothing_to_merge",
        NothingToElaborate => "nothing_to_elaborate",
        NothingToConverge => "nothing_to_converge",
        ConvergenceBlocked => "convergence_blocked",
        ConsensusBlocked => "consensus_blocked",
        LedgerOpening => "ledger_opening",
        LedgerUnavailable => "ledger_unavailable",
        ModelNotConfigured => "model_not_configured",
        ModelCallFailed => "model_call_failed",
        ModelAnswerStale => "model_answer_stale",
        ModelAnswerUnusable => "model_answer_unusable",
        CallCancelled => "call_cancelled",
        AgentRunUnknown => "agent_run_unknown",
        AgentRunEnded => "agent_run_ended",
        AgentStepOutOfOrder => "agent_step_out_of_order",
        AgentRunUnreadable => "agent_run_unreadable",
        ReadOnlyRole => "read_only_role",
        UserIdNotYours => "user_id_not_yours",
        QuotaExceeded => "quota_exceeded",
    }
}

impl ErrorCode {
    /// The code whose wire string is `wire`, if there is one.
    pub fn from_wire(wire: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|code| code.as_str() == wire)
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    /// Every code with its wire string, written out: renaming a variant's string, or adding a
    /// variant without its line here, fails.
    const WIRE: &[(ErrorCode, &str)] = &[
        (ErrorCode::InvalidParams, "invalid_params"),
        (ErrorCode::InvalidArguments, "invalid_arguments"),
        (ErrorCode::ArgumentsTooLarge, "arguments_too_large"),
        (ErrorCode::TextTooLarge, "text_too_large"),
        (ErrorCode::UnknownTool, "unknown_tool"),
        (ErrorCode::ToolDisabled, "tool_disabled"),
        (ErrorCode::TimeLimitExceeded, "time_limit_exceeded"),
        (ErrorCode::RandomnessUnavailable, "randomness_unavailable"),
        (ErrorCode::InternalError, "internal_error"),
        (ErrorCode::MissingParameter, "missing_parameter"),
        (ErrorCode::InvalidSector, "invalid_sector"),
        (ErrorCode::EmptyContent, "empty_content"),
        (ErrorCode::MemoryNotFound, "memory_not_found"),
        (ErrorCode::NothingToUpdate, "nothing_to_update"),
        (ErrorCode::EmbeddingUnavailable, "embedding_unavailable"),
        (
            ErrorCode::EmbeddingModelMismatch,
            "embedding_model_mismatch",
        ),
        (ErrorCode::InvalidIdempotencyKey, "invalid_idempotency_key"),
        (ErrorCode::IdempotencyKeyReused, "idempotency_key_reused"),
        (ErrorCode::UnknownSession, "unknown_session"),
        (ErrorCode::InvalidSessionId, "invalid_session_id"),
        (ErrorCode::SessionClosed, "session_closed"),
        (ErrorCode::UnknownThought, "unknown_thought"),
        (ErrorCode::UnknownBranch, "unknown_branch"),
        (ErrorCode::InvalidTag, "invalid_tag"),
        (ErrorCode::InvalidQuery, "invalid_query"),
        (ErrorCode::NothingToErase, "nothing_to_erase"),
        (ErrorCode::InvalidEdgeType, "invalid_edge_type"),
        (ErrorCode::InvalidEdge, "invalid_edge"),
        (ErrorCode::CycleDetected, "cycle_detected"),
        (ErrorCode::UnknownTemplate, "unknown_template"),
        (ErrorCode::UnknownPattern, "unknown_pattern"),
        (ErrorCode::ReasonRequired, "reason_required"),
        (ErrorCode::ConfirmationRequired, "confirmation_required"),
        (ErrorCode::UnknownToolset, "unknown_toolset"),
        (ErrorCode::ToolsetRequired, "toolset_required"),
        (ErrorCode::ReplayFailed, "replay_failed"),
        (ErrorCode::LogUnreadable, "log_unreadable"),
        (ErrorCode::NoCheckpoint, "no_checkpoint"),
        (ErrorCode::EmptySession, "empty_session"),
        (ErrorCode::InvalidRange, "invalid_range"),
        (ErrorCode::NoSigningKey, "no_signing_key"),
        (ErrorCode::ForeignCheckpoint, "foreign_checkpoint"),
        (ErrorCode::Rollback, "rollback"),
        (ErrorCode::Fork, "fork"),
        (ErrorCode::TextMissing, "text_missing"),
        (ErrorCode::LedgerCorrupt, "ledger_corrupt"),
        (ErrorCode::ProviderUnavailable, "provider_unavailable"),
        (ErrorCode::InvalidProvider, "invalid_provider"),
        (ErrorCode::NoDeliberation, "no_deliberation"),
        (ErrorCode::DeliberationExists, "deliberation_exists"),
        (ErrorCode::DeliberationConcluded, "deliberation_concluded"),
        (ErrorCode::InvalidMode, "invalid_mode"),
        (ErrorCode::InvalidProfile, "invalid_profile"),
        (ErrorCode::InvalidBudget, "invalid_budget"),
        (ErrorCode::BudgetExceeded, "budget_exceeded"),
        (ErrorCode::UnknownNode, "unknown_node"),
        (ErrorCode::NodePruned, "node_pruned"),
        (ErrorCode::UnknownPhase, "unknown_phase"),
        (ErrorCode::PhaseMerged, "phase_merged"),
        (ErrorCode::UnknownStage, "unknown_stage"),
        (ErrorCode::UnknownClaim, "unknown_claim"),
        (ErrorCode::UnknownAssumption, "unknown_assumption"),
        (ErrorCode::UnknownCommitment, "unknown_commitment"),
        (ErrorCode::InvalidCommitment, "invalid_commitment"),
        (ErrorCode::InvalidEvidence, "invalid_evidence"),
        (ErrorCode::InvalidStatus, "invalid_status"),
        (ErrorCode::InvalidCriticality, "invalid_criticality"),
        (ErrorCode::InvalidOutcome, "invalid_outcome"),
        (ErrorCode::InvalidRubric, "invalid_rubric"),
        (ErrorCode::InvalidThreshold, "invalid_threshold"),
        (ErrorCode::InvalidTier, "invalid_tier"),
        (ErrorCode::InvalidStyle, "invalid_style"),
        (ErrorCode::InvalidMaxPoints, "invalid_max_points"),
        (ErrorCode::TooManyPoints, "too_many_points"),
        (ErrorCode::TooManyItems, "too_many_items"),
        (ErrorCode::RationaleRequired, "rationale_required"),
        (ErrorCode::MissingAgentScores, "missing_agent_scores"),
        (ErrorCode::UnscoredNodes, "unscored_nodes"),
        (ErrorCode::LensesExhausted, "lenses_exhausted"),
        (ErrorCode::NoConflict, "no_conflict"),
        (ErrorCode::NoAnswer, "no_answer"),
        (ErrorCode::NothingToVerify, "nothing_to_verify"),
        (ErrorCode::NothingToScore, "nothing_to_score"),
        (ErrorCode::NothingToPrune, "nothing_to_prune"),
        (ErrorCode::NothingToMerge, "nothing_to_merge"),
        (ErrorCode::NothingToElaborate, "nothing_to_elaborate"),
        (ErrorCode::NothingToConverge, "nothing_to_converge"),
        (ErrorCode::ConvergenceBlocked, "convergence_blocked"),
        (ErrorCode::ConsensusBlocked, "consensus_blocked"),
        (ErrorCode::LedgerOpening, "ledger_opening"),
        (ErrorCode::LedgerUnavailable, "ledger_unavailable"),
        (ErrorCode::ModelNotConfigured, "model_not_configured"),
        (ErrorCode::ModelCallFailed, "model_call_failed"),
        (ErrorCode::ModelAnswerStale, "model_answer_stale"),
        (ErrorCode::ModelAnswerUnusable, "model_answer_unusable"),
        (ErrorCode::CallCancelled, "call_cancelled"),
        (ErrorCode::AgentRunUnknown, "agent_run_unknown"),
        (ErrorCode::AgentRunEnded, "agent_run_ended"),
        (ErrorCode::AgentStepOutOfOrder, "agent_step_out_of_order"),
        (ErrorCode::AgentRunUnreadable, "agent_run_unreadable"),
        (ErrorCode::ReadOnlyRole, "read_only_role"),
        (ErrorCode::UserIdNotYours, "user_id_not_yours"),
        (ErrorCode::QuotaExceeded, "quota_exceeded"),
    ];

    #[test]
    fn every_code_keeps_its_wire_string() {
        assert_eq!(
            WIRE.len(),
            ErrorCode::ALL.len(),
            "a code without its line in WIRE"
        );
        for (code, wire) in WIRE {
            assert_eq!(code.as_str(), *wire);
            assert_eq!(code.to_string(), *wire);
            assert_eq!(
                serde_json::to_value(code).ok(),
                Some(serde_json::json!(wire))
            );
            assert_eq!(ErrorCode::from_wire(wire), Some(*code));
        }
        for code in ErrorCode::ALL {
            assert!(
                WIRE.iter().any(|(c, _)| c == code),
                "{code:?} missing from WIRE"
            );
        }
    }

    #[test]
    fn every_wire_string_is_unique_and_snake_case() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ErrorCode::ALL {
            let wire = code.as_str();
            assert!(seen.insert(wire), "two codes share the wire string {wire}");
            assert!(
                !wire.is_empty() && wire.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{wire} is not snake_case"
            );
        }
        assert_eq!(ErrorCode::from_wire("no_such_code"), None);
    }
}
