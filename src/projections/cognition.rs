//! The cognition tools' projection: per session, each analysis in log order (its tool, rule
//! set, model, numbers and labels, and the texts it derived), folded from
//! `events::cognition` facts. Texts are held with their commitment, so an erasure blanks them.
//! Holds no rules: every number arrives decided.

use std::sync::Arc;

use imbl::HashMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::events::{Event, Fact, SessionId, TextLookup};

/// One recorded analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub seq: u64,
    pub tool: String,
    pub rules: String,
    pub model: Option<String>,
    pub result: Value,
    /// Each derived text's commitment and text (`None` once erased).
    pub texts: Vec<(String, Option<Arc<str>>)>,
}

/// Every session's analyses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CognitionState {
    sessions: HashMap<SessionId, Arc<Vec<Analysis>>>,
}

impl CognitionState {
    /// A session's analyses, oldest first.
    pub fn session(&self, id: &SessionId) -> &[Analysis] {
        self.sessions.get(id).map_or(&[], |a| a.as_slice())
    }

    /// Folds one event. Cannot fail.
    pub fn apply(&mut self, event: &Event, texts: &TextLookup<'_>) {
        for fact in &event.facts {
            match fact {
                Fact::CognitionRecorded(f) => {
                    let Some(id) = &event.session_id else {
                        continue;
                    };
                    let analysis = Analysis {
                        seq: event.seq,
                        tool: f.tool.clone(),
                        rules: f.rules.clone(),
                        model: f.model.clone(),
                        result: f.result.clone(),
                        texts: f
                            .texts
                            .iter()
                            .map(|t| (t.commitment.clone(), texts(t)))
                            .collect(),
                    };
                    Arc::make_mut(self.sessions.entry(id.clone()).or_default()).push(analysis);
                }
                Fact::TextsErased { commitments, .. } => {
                    let ids: Vec<SessionId> = self
                        .sessions
                        .iter()
                        .filter(|(_, a)| {
                            a.iter()
                                .any(|x| x.texts.iter().any(|(c, _)| commitments.contains(c)))
                        })
                        .map(|(id, _)| id.clone())
                        .collect();
                    for id in ids {
                        if let Some(list) = self.sessions.get_mut(&id) {
                            for a in Arc::make_mut(list) {
                                for (c, t) in &mut a.texts {
                                    if commitments.contains(c) {
                                        *t = None;
                                    }
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
}
