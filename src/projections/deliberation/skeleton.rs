//! Skeleton phases folded: a phase started with its skeleton points, then elaborated and merged.
//!
//! Must not know: how a skeleton is planned or elaborated (that is `app`).

use std::collections::BTreeMap;

use super::{DeliberationState, SkeletonPhase, Stamp};
use crate::events::deliberation::{SkeletonElaborated, SkeletonPhaseStarted};

impl DeliberationState {
    /// `SkeletonPhaseStarted`: a phase in state `skeleton`.
    pub(super) fn start_phase(&mut self, p: &SkeletonPhaseStarted, stamp: &Stamp) {
        if let Some(d) = self.get_mut(&p.session_id) {
            d.phases.push(SkeletonPhase {
                phase_id: p.phase_id.clone(),
                source_node_id: p.source_node_id.clone(),
                state: "skeleton".to_owned(),
                style: p.style.clone(),
                suitability: p.suitability.clone(),
                skeleton_node_ids: p.skeleton_node_ids.clone(),
                elaboration_node_ids_by_skeleton: BTreeMap::new(),
                prompt_pack: p.prompt_pack.clone(),
                score_run_ids: Vec::new(),
                checkpoint_ids: Vec::new(),
                merge_node_id: None,
                analysis: p.analysis.clone(),
                created: stamp.clone(),
                updated: stamp.clone(),
            });
        }
    }

    /// `SkeletonElaborated`: the phase's elaborations, merge node and new state.
    pub(super) fn elaborate_phase(&mut self, p: &SkeletonElaborated, stamp: &Stamp) {
        let Some(d) = self.get_mut(&p.session_id) else {
            return;
        };
        if let Some(phase) = d.phases.iter_mut().find(|x| x.phase_id == p.phase_id) {
            for (skeleton, ids) in &p.elaboration_node_ids_by_skeleton {
                phase
                    .elaboration_node_ids_by_skeleton
                    .entry(skeleton.clone())
                    .or_default()
                    .extend(ids.iter().cloned());
            }
            if p.merge_node_id.is_some() {
                phase.merge_node_id = p.merge_node_id.clone();
            }
            phase.state = p.state.clone();
            phase.updated = stamp.clone();
        }
    }
}
