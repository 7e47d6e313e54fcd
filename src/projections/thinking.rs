//! The sequential-thinking projection: sessions, their thought chains, branches and tags.
//!
//! Branch rule (the reference server's): a branch exists once a thought carries both
//! `branchFromThought` and `branchId`; later thoughts carrying that `branchId` continue it.
//!
//! The state is cheap to clone, because the writer publishes a copy after every batch for
//! reads to use (`ledger::writer`): sessions sit in a persistent map (`imbl`, structural
//! sharing) each behind an `Arc`, and a fold copies only the sessions it changes
//! (`Arc::make_mut`), once per batch.

use std::sync::Arc;

use imbl::{HashMap, Vector};

use serde::{Deserialize, Serialize};

use crate::events::{Event, Fact, SessionId, TextLookup, TextRef, ThoughtRecorded};

/// One thought as the tools see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thought {
    /// Seq of the event that recorded it: its stable identity.
    pub seq: u64,
    pub recorded_at: String,
    pub thought_number: u32,
    pub total_thoughts: u32,
    pub next_thought_needed: bool,
    /// The text; `None` when it has been erased (the commitment stays).
    pub text: Option<Arc<str>>,
    pub text_ref: TextRef,
    pub is_revision: bool,
    pub revises_thought: Option<u32>,
    pub branch_from_thought: Option<u32>,
    pub branch_id: Option<String>,
    pub needs_more_thoughts: bool,
    /// Normalized tags in the order they were added.
    pub tags: Vec<String>,
}

impl Thought {
    /// The branch this thought belongs to, if its branch exists in `session`.
    pub fn branch<'s>(&self, session: &'s Session) -> Option<&'s Branch> {
        let id = self.branch_id.as_deref()?;
        session.branches.iter().find(|b| b.id == id)
    }
}

/// A branch of a session's chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Branch {
    pub id: String,
    /// The thought number it branched from (as the client said).
    pub from_thought: u32,
    /// Indexes into [`Session::thoughts`], in order.
    pub thoughts: Vector<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SessionStatus {
    Active,
    Closed {
        seq: u64,
        at: String,
        reason: String,
    },
}

/// One thinking session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub id: SessionId,
    /// The principal whose call started it; only that principal's calls may continue it.
    pub principal: String,
    pub started_seq: u64,
    pub started_at: String,
    pub status: SessionStatus,
    /// Every thought in the order recorded (the reference server's `thoughtHistory`): a
    /// persistent vector, so that the copy a fold makes of a session it changes (the published
    /// view still shares the old one) costs the same for a thousand thoughts as for one.
    pub thoughts: Vector<Thought>,
    /// Branches in the order they were opened.
    pub branches: Vec<Branch>,
    /// Events recorded against this session, rejected calls included.
    pub events: u64,
    pub last_seq: u64,
    pub updated_at: String,
}

impl Session {
    pub fn is_active(&self) -> bool {
        self.status == SessionStatus::Active
    }

    /// The latest thought with this number (numbers may repeat when a client re-sends one).
    pub fn thought_by_number(&self, number: u32) -> Option<&Thought> {
        self.thoughts
            .iter()
            .rev()
            .find(|t| t.thought_number == number)
    }

    pub fn branch_ids(&self) -> Vec<String> {
        self.branches.iter().map(|b| b.id.clone()).collect()
    }
}

/// All sessions.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct ThinkingState {
    sessions: HashMap<SessionId, Arc<Session>>,
    /// Session ids in the order they started.
    order: Vector<SessionId>,
}

impl ThinkingState {
    pub fn session(&self, id: &SessionId) -> Option<&Session> {
        self.sessions.get(id).map(|s| &**s)
    }

    /// Sessions in the order they started.
    pub fn sessions(&self) -> impl Iterator<Item = &Session> {
        self.order.iter().filter_map(|id| self.session(id))
    }

    /// The session to change, copied first if a published view still shares it.
    fn session_mut(&mut self, id: &SessionId) -> Option<&mut Session> {
        self.sessions.get_mut(id).map(Arc::make_mut)
    }

    /// Folds one event. Facts about unknown sessions or thoughts cannot occur in a log written
    /// by `app`; if they do (a hand-made log) they are ignored rather than invented.
    pub fn apply(&mut self, event: &Event, texts: &TextLookup<'_>) {
        if let Some(id) = &event.session_id
            && let Some(session) = self.session_mut(id)
        {
            session.events += 1;
            session.last_seq = event.seq;
            session.updated_at = event.recorded_at.clone();
        }
        for fact in &event.facts {
            match fact {
                Fact::SessionStarted { session_id } => {
                    if self.sessions.contains_key(session_id) {
                        continue;
                    }
                    self.order.push_back(session_id.clone());
                    self.sessions.insert(
                        session_id.clone(),
                        Arc::new(Session {
                            id: session_id.clone(),
                            principal: event.actor.principal.clone(),
                            started_seq: event.seq,
                            started_at: event.recorded_at.clone(),
                            status: SessionStatus::Active,
                            thoughts: Vector::new(),
                            branches: Vec::new(),
                            events: 1,
                            last_seq: event.seq,
                            updated_at: event.recorded_at.clone(),
                        }),
                    );
                }
                Fact::ThoughtRecorded(recorded) => {
                    if let Some(session) = self.session_mut(&recorded.session_id) {
                        record_thought(session, event, recorded, texts);
                    }
                }
                Fact::ThoughtTagged {
                    session_id,
                    thought_seq,
                    added,
                    removed,
                } => {
                    let Some(session) = self.session_mut(session_id) else {
                        continue;
                    };
                    let Some(thought) = session.thoughts.iter_mut().find(|t| t.seq == *thought_seq)
                    else {
                        continue;
                    };
                    thought.tags.retain(|t| !removed.contains(t));
                    for tag in added {
                        if !thought.tags.contains(tag) {
                            thought.tags.push(tag.clone());
                        }
                    }
                }
                Fact::SessionClosed { session_id, reason } => {
                    if let Some(session) = self.session_mut(session_id) {
                        session.status = SessionStatus::Closed {
                            seq: event.seq,
                            at: event.recorded_at.clone(),
                            reason: reason.clone(),
                        };
                    }
                }
                // Deliberation facts are folded by the deliberation projection.
                Fact::DeliberationStarted(_)
                | Fact::NodeAdded(_)
                | Fact::EdgeAdded(_)
                | Fact::RubricSet(_)
                | Fact::NodesScored(_)
                | Fact::NodesPruned(_)
                | Fact::AssumptionRecorded(_)
                | Fact::AssumptionStatusSet(_)
                | Fact::VerificationRecorded(_)
                | Fact::RouteDecided(_)
                | Fact::CheckpointRecorded(_)
                | Fact::DeliberationStatusChanged(_)
                | Fact::ConsensusReached(_)
                | Fact::SkeletonPhaseStarted(_)
                | Fact::SkeletonElaborated(_)
                | Fact::MemoryStored(_)
                | Fact::MemorySuperseded(_)
                | Fact::MemoriesRetrieved(_)
                | Fact::MemorySoftDeleted(_)
                | Fact::MemoryErased(_)
                | Fact::ModelConferred(_)
                | Fact::TracedThoughtRecorded(_)
                | Fact::PlanStepRecorded(_)
                | Fact::BiasedStepRecorded(_)
                | Fact::AgentRunStarted(_)
                | Fact::AgentModelRequested(_)
                | Fact::AgentModelResponded(_)
                | Fact::AgentModelFailed(_)
                | Fact::AgentToolRequested(_)
                | Fact::AgentToolReturned(_)
                | Fact::AgentBreakerTripped(_)
                | Fact::AgentIntentDetected(_)
                | Fact::AgentNudged(_)
                | Fact::AgentRunEnded(_)
                | Fact::CognitionRecorded(_) => {}
                Fact::TextsErased { commitments, .. } => {
                    // A commitment is random per text, so it names at most one thought. Only
                    // the sessions holding one are changed (and so copied).
                    let holding: Vec<SessionId> = self
                        .sessions
                        .iter()
                        .filter(|(_, s)| {
                            s.thoughts
                                .iter()
                                .any(|t| commitments.contains(&t.text_ref.commitment))
                        })
                        .map(|(id, _)| id.clone())
                        .collect();
                    for id in &holding {
                        let Some(session) = self.session_mut(id) else {
                            continue;
                        };
                        for thought in &mut session.thoughts {
                            if commitments.contains(&thought.text_ref.commitment) {
                                thought.text = None;
                            }
                        }
                    }
                }
            }
        }
    }
}

fn record_thought(
    session: &mut Session,
    event: &Event,
    recorded: &ThoughtRecorded,
    texts: &TextLookup<'_>,
) {
    let index = session.thoughts.len();
    session.thoughts.push_back(Thought {
        seq: event.seq,
        recorded_at: event.recorded_at.clone(),
        thought_number: recorded.thought_number,
        total_thoughts: recorded.total_thoughts,
        next_thought_needed: recorded.next_thought_needed,
        text: texts(&recorded.text),
        text_ref: recorded.text.clone(),
        is_revision: recorded.is_revision,
        revises_thought: recorded.revises_thought,
        branch_from_thought: recorded.branch_from_thought,
        branch_id: recorded.branch_id.clone(),
        needs_more_thoughts: recorded.needs_more_thoughts,
        tags: recorded.tags.clone(),
    });
    let Some(branch_id) = &recorded.branch_id else {
        return;
    };
    if let Some(branch) = session.branches.iter_mut().find(|b| &b.id == branch_id) {
        branch.thoughts.push_back(index);
    } else if let Some(from) = recorded.branch_from_thought {
        session.branches.push(Branch {
            id: branch_id.clone(),
            from_thought: from,
            thoughts: Vector::unit(index),
        });
    }
}
