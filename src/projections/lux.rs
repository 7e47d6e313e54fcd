//! The model-backed tools' projection: per session, the `confer` conversation, the
//! `traced_reasoning` thoughts (with their vectors, for the similarity metrics), the `planner`
//! steps and the `biased_reasoning` steps, folded from `events::lux` facts.
//!
//! Texts are held with their commitment, so an erasure blanks them everywhere (a prompt built
//! from an erased turn says so instead of its text). Sessions sit in a persistent map, each
//! behind an `Arc` copied on write, so publishing a view is cheap. Holds no rules: what a step
//! is, its metrics and what comes next arrive decided.

use std::sync::Arc;

use imbl::HashMap;
use serde::{Deserialize, Serialize};

use crate::embed::Embedding;
use crate::events::lux::{
    BiasedStepRecorded, ModelConferred, PlanStepRecorded, TracedThoughtRecorded,
};
use crate::events::{Event, Fact, SessionId, TextLookup, TextRef};

/// A text and its commitment; `None` once erased (or never stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Text {
    pub commitment: String,
    pub text: Option<Arc<str>>,
}

impl Text {
    fn of(text_ref: &TextRef, texts: &TextLookup<'_>) -> Self {
        Self {
            commitment: text_ref.commitment.clone(),
            text: texts(text_ref),
        }
    }

    /// The text, or a marker that it was erased.
    pub fn or_erased(&self) -> &str {
        self.text.as_deref().unwrap_or("[erased]")
    }

    fn erase_if(&mut self, commitments: &[String]) {
        if commitments.contains(&self.commitment) {
            self.text = None;
        }
    }
}

/// One `confer` turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub message: Text,
    pub reply: Text,
    pub model: String,
}

/// One traced thought, with the vector its content was embedded as.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TracedThought {
    pub fact: TracedThoughtRecorded,
    pub guidance: Text,
    pub content: Text,
    /// The content's vector and the commitment of the text that holds it (dropped when that
    /// text is erased).
    pub vector: Option<(String, Vec<f32>)>,
    pub vector_model: Option<String>,
}

/// One planning step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanStep {
    pub fact: PlanStepRecorded,
    pub guidance: Text,
    pub content: Text,
}

/// One step of a biased-reasoning session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BiasedStep {
    pub fact: BiasedStepRecorded,
    pub content: Text,
    /// The session's question (its first step only).
    pub question: Option<Text>,
    /// The bias found: its type, description and suggested correction.
    pub bias: Option<(Text, Text, Text)>,
}

/// A session's model-backed work.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LuxSession {
    pub conversation: Vec<Turn>,
    pub traced: Vec<TracedThought>,
    pub plan: Vec<PlanStep>,
    pub biased: Vec<BiasedStep>,
}

impl LuxSession {
    fn erase(&mut self, commitments: &[String]) {
        for turn in &mut self.conversation {
            turn.message.erase_if(commitments);
            turn.reply.erase_if(commitments);
        }
        for thought in &mut self.traced {
            thought.guidance.erase_if(commitments);
            thought.content.erase_if(commitments);
            if thought
                .vector
                .as_ref()
                .is_some_and(|(c, _)| commitments.contains(c))
            {
                thought.vector = None;
            }
        }
        for step in &mut self.plan {
            step.guidance.erase_if(commitments);
            step.content.erase_if(commitments);
        }
        for step in &mut self.biased {
            step.content.erase_if(commitments);
            if let Some(q) = &mut step.question {
                q.erase_if(commitments);
            }
            if let Some((kind, description, correction)) = &mut step.bias {
                kind.erase_if(commitments);
                description.erase_if(commitments);
                correction.erase_if(commitments);
            }
        }
    }
}

/// Every session's model-backed work.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LuxState {
    sessions: HashMap<SessionId, Arc<LuxSession>>,
}

impl LuxState {
    /// The session's model-backed work, if it has any.
    pub fn session(&self, id: &SessionId) -> Option<&LuxSession> {
        self.sessions.get(id).map(AsRef::as_ref)
    }

    fn session_mut(&mut self, id: &SessionId) -> &mut LuxSession {
        Arc::make_mut(self.sessions.entry(id.clone()).or_default())
    }

    /// Folds one event. Cannot fail.
    pub fn apply(&mut self, event: &Event, texts: &TextLookup<'_>) {
        for fact in &event.facts {
            match fact {
                Fact::ModelConferred(f) => self.conferred(event, f, texts),
                Fact::TracedThoughtRecorded(f) => self.traced(event, f, texts),
                Fact::PlanStepRecorded(f) => self.planned(event, f, texts),
                Fact::BiasedStepRecorded(f) => self.biased(event, f, texts),
                Fact::TextsErased { commitments, .. } => {
                    let ids: Vec<SessionId> = self.sessions.keys().cloned().collect();
                    for id in ids {
                        self.session_mut(&id).erase(commitments);
                    }
                }
                _ => {}
            }
        }
    }

    fn conferred(&mut self, event: &Event, f: &ModelConferred, texts: &TextLookup<'_>) {
        let Some(id) = &event.session_id else { return };
        self.session_mut(id).conversation.push(Turn {
            message: Text::of(&f.message, texts),
            reply: Text::of(&f.reply, texts),
            model: f.model.clone(),
        });
    }

    fn traced(&mut self, event: &Event, f: &TracedThoughtRecorded, texts: &TextLookup<'_>) {
        let Some(id) = &event.session_id else { return };
        let recorded = event
            .call
            .effects
            .as_ref()
            .and_then(|e| e.embedding.as_ref());
        let vector = recorded.and_then(|r| {
            let text = texts(&r.vector)?;
            let embedding = Embedding::from_base64(Arc::from(r.model.as_str()), &text)?;
            Some((r.vector.commitment.clone(), embedding.into_vector()))
        });
        self.session_mut(id).traced.push(TracedThought {
            fact: f.clone(),
            guidance: Text::of(&f.guidance, texts),
            content: Text::of(&f.content, texts),
            vector,
            vector_model: recorded.map(|r| r.model.clone()),
        });
    }

    fn planned(&mut self, event: &Event, f: &PlanStepRecorded, texts: &TextLookup<'_>) {
        let Some(id) = &event.session_id else { return };
        self.session_mut(id).plan.push(PlanStep {
            fact: f.clone(),
            guidance: Text::of(&f.guidance, texts),
            content: Text::of(&f.content, texts),
        });
    }

    fn biased(&mut self, event: &Event, f: &BiasedStepRecorded, texts: &TextLookup<'_>) {
        let Some(id) = &event.session_id else { return };
        self.session_mut(id).biased.push(BiasedStep {
            fact: f.clone(),
            content: Text::of(&f.content, texts),
            question: f.question.as_ref().map(|q| Text::of(q, texts)),
            bias: f.bias.as_ref().map(|b| {
                (
                    Text::of(&b.bias_type, texts),
                    Text::of(&b.description, texts),
                    Text::of(&b.suggested_correction, texts),
                )
            }),
        });
    }
}
