//! Telemetry folded from the log: per-tool calls, outcomes and decision latency, verification
//! outcomes, pruning, graph depth and skeleton-of-thought counters. Because it is a fold of the
//! ledger it survives restarts and needs no collector; `reasoning://telemetry/summary` shows it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::events::{Event, Fact, OutcomeStatus};

/// One tool's counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolStats {
    pub calls: u64,
    pub ok: u64,
    pub rejected: u64,
    pub failed: u64,
    /// Calls whose event records a decision time (events written before it was recorded have
    /// none).
    pub timed_calls: u64,
    /// Sum and maximum of the decision times, in microseconds.
    pub decide_micros_total: u64,
    pub decide_micros_max: u64,
    /// Refusals by error code.
    pub rejection_codes: BTreeMap<String, u64>,
}

/// Skeleton-of-thought counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkeletonStats {
    pub phases: u64,
    pub suitable: u64,
    pub unsuitable: u64,
    /// Skeleton points over all phases (the fan-out), and the widest phase.
    pub skeleton_points: u64,
    pub max_fanout: u64,
    pub elaborations: u64,
    pub merges: u64,
}

/// Everything counted.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Telemetry {
    pub tools: BTreeMap<String, ToolStats>,
    /// Claim statuses as verification rounds set them (one count per claim per round).
    pub verification_outcomes: BTreeMap<String, u64>,
    pub verification_rounds: u64,
    pub pruned_nodes: u64,
    pub nodes_added: u64,
    /// Depth of the latest node added, and the deepest ever.
    pub latest_graph_depth: u32,
    pub max_graph_depth: u32,
    pub checkpoints: u64,
    pub consensus_reached: u64,
    pub skeleton: SkeletonStats,
    pub events: u64,
    /// The decision time of the latest event, when it records one.
    pub last_decide_micros: Option<u64>,
}

impl Telemetry {
    pub fn apply(&mut self, event: &Event) {
        self.events += 1;
        let stats = self.tools.entry(event.call.tool.clone()).or_default();
        stats.calls += 1;
        match event.outcome.status {
            OutcomeStatus::Ok => stats.ok += 1,
            OutcomeStatus::Rejected => stats.rejected += 1,
            OutcomeStatus::Failed => stats.failed += 1,
        }
        if let Some(error) = &event.outcome.error {
            *stats.rejection_codes.entry(error.code.clone()).or_default() += 1;
        }
        self.last_decide_micros = event.outcome.decide_micros;
        if let Some(micros) = event.outcome.decide_micros {
            stats.timed_calls += 1;
            stats.decide_micros_total = stats.decide_micros_total.saturating_add(micros);
            stats.decide_micros_max = stats.decide_micros_max.max(micros);
        }
        for fact in &event.facts {
            match fact {
                Fact::NodeAdded(n) => {
                    self.nodes_added += 1;
                    self.latest_graph_depth = n.depth;
                    self.max_graph_depth = self.max_graph_depth.max(n.depth);
                }
                Fact::NodesPruned(p) => self.pruned_nodes += p.node_ids.len() as u64,
                Fact::VerificationRecorded(v) => {
                    self.verification_rounds += 1;
                    for status in v.statuses.values() {
                        *self
                            .verification_outcomes
                            .entry(status.clone())
                            .or_default() += 1;
                    }
                }
                Fact::CheckpointRecorded(_) => self.checkpoints += 1,
                Fact::ConsensusReached(_) => self.consensus_reached += 1,
                Fact::SkeletonPhaseStarted(p) => {
                    let s = &mut self.skeleton;
                    s.phases += 1;
                    if p.suitability.suitable {
                        s.suitable += 1;
                    } else {
                        s.unsuitable += 1;
                    }
                    let fanout = p.skeleton_node_ids.len() as u64;
                    s.skeleton_points += fanout;
                    s.max_fanout = s.max_fanout.max(fanout);
                }
                Fact::SkeletonElaborated(p) => {
                    let s = &mut self.skeleton;
                    s.elaborations += p
                        .elaboration_node_ids_by_skeleton
                        .values()
                        .map(|v| v.len() as u64)
                        .sum::<u64>();
                    if p.merge_node_id.is_some() {
                        s.merges += 1;
                    }
                }
                _ => {}
            }
        }
    }
}
