//! The sequential-thinking projection: sessions, their thought chains, branches and tags.
//!
//! Branch rule (the reference server's): a branch exists once a thought carries both
//! `branchFromThought` and `branchId`; later thoughts carrying that `branchId` continue it.
//!
//! Every session keeps a small [`SessionHead`] in memory, whatever the log's length: enough to
//! list it and to decide a new thought. Its body (the thoughts, their texts, the branches) is
//! a pure fold of the session's own events. Without a log to read them from (tests, a
//! re-execution's scratch state) every body stays in memory, folded with the heads
//! ("resident"). A server attaches its log ([`ThinkingState::load_bodies_from`]): bodies are
//! then folded again from the session's events when asked for, and kept in a cache bounded by
//! bytes ([`BODY_CACHE_BYTES`]), which the writer's fold keeps current for the sessions it
//! holds. Either way [`ThinkingState::session`] gives the same body.
//!
//! The state is cheap to clone, because the writer publishes a copy after every batch for
//! reads to use (`ledger::writer`): heads sit in a persistent map (`imbl`, structural sharing)
//! each behind an `Arc`, and a fold copies only the heads it changes, once per batch. Views
//! share the body cache; a body there is only handed to a view whose head it matches.

use std::ops::Deref;
use std::sync::Arc;

use imbl::{HashMap, HashSet, Vector};
use serde::{Deserialize, Serialize};

use crate::events::{Event, Fact, SessionId, TextLookup, TextRef, ThoughtRecorded};

/// Bytes of session bodies a server keeps in memory (estimated from each thought's fields and
/// text, see `thought_bytes`): with 50-thought sessions of about 300-byte thoughts, the last
/// few thousand sessions used.
pub const BODY_CACHE_BYTES: usize = 24 * 1024 * 1024;

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

/// What a thought holds in memory, roughly: its fields, its strings and a share of the
/// persistent vector's node.
pub fn thought_bytes(thought: &Thought) -> usize {
    std::mem::size_of::<Thought>()
        + 16
        + thought.recorded_at.len()
        + thought.text.as_deref().map_or(0, |t| t.len() + 16)
        + thought.text_ref.commitment.len()
        + thought.branch_id.as_deref().map_or(0, str::len)
        + thought.tags.iter().map(|t| t.len() + 24).sum::<usize>()
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

/// What every session keeps in memory: who owns it, where it stands, and what a new thought's
/// decision checks (which numbers exist, which branches are open).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionHead {
    pub id: SessionId,
    /// The principal whose call started it; only that principal's calls may continue it.
    pub principal: String,
    pub started_seq: u64,
    pub started_at: String,
    pub status: SessionStatus,
    /// Events recorded against this session, rejected calls included.
    pub events: u64,
    pub last_seq: u64,
    pub updated_at: String,
    /// Thoughts recorded.
    pub thought_count: usize,
    /// Branch ids in the order they were opened.
    branch_names: Vec<String>,
    /// The numbers thoughts were recorded under, ascending, each once.
    numbers: Vec<u32>,
}

impl SessionHead {
    /// The head of the session `event` starts (its first event), if it starts `id`.
    fn starting(id: &SessionId, event: &Event) -> Option<Self> {
        let starts = event
            .facts
            .iter()
            .any(|f| matches!(f, Fact::SessionStarted { session_id } if session_id == id));
        starts.then(|| Self {
            id: id.clone(),
            principal: event.actor.principal.clone(),
            started_seq: event.seq,
            started_at: event.recorded_at.clone(),
            status: SessionStatus::Active,
            events: 1,
            last_seq: event.seq,
            updated_at: event.recorded_at.clone(),
            thought_count: 0,
            branch_names: Vec::new(),
            numbers: Vec::new(),
        })
    }

    /// The head of a session not started yet (what a call that would start it decides
    /// against).
    pub fn unstarted(id: SessionId) -> Self {
        Self {
            id,
            principal: String::new(),
            started_seq: 0,
            started_at: String::new(),
            status: SessionStatus::Active,
            events: 0,
            last_seq: 0,
            updated_at: String::new(),
            thought_count: 0,
            branch_names: Vec::new(),
            numbers: Vec::new(),
        }
    }

    pub fn is_active(&self) -> bool {
        self.status == SessionStatus::Active
    }

    /// Whether a thought was recorded under `number`.
    pub fn has_thought(&self, number: u32) -> bool {
        self.numbers.binary_search(&number).is_ok()
    }

    pub fn branch_ids(&self) -> Vec<String> {
        self.branch_names.clone()
    }

    /// Folds a later event recorded against this session.
    fn fold(&mut self, event: &Event) {
        self.touch(event);
        for fact in &event.facts {
            self.fold_fact(fact, event);
        }
    }

    /// A thought recorded under `number`, on `branch` (opened when `from` is given).
    fn note_thought(&mut self, number: u32, branch: Option<&str>, from: Option<u32>) {
        self.thought_count += 1;
        if let Err(at) = self.numbers.binary_search(&number) {
            self.numbers.insert(at, number);
        }
        if let (Some(branch), Some(_)) = (branch, from)
            && !self.branch_names.iter().any(|b| b == branch)
        {
            self.branch_names.push(branch.to_owned());
        }
    }

    fn touch(&mut self, event: &Event) {
        self.events += 1;
        self.last_seq = event.seq;
        self.updated_at.clone_from(&event.recorded_at);
    }

    fn fold_fact(&mut self, fact: &Fact, event: &Event) {
        match fact {
            Fact::ThoughtRecorded(recorded) if recorded.session_id == self.id => {
                self.note_thought(
                    recorded.thought_number,
                    recorded.branch_id.as_deref(),
                    recorded.branch_from_thought,
                );
            }
            Fact::SessionClosed { session_id, reason } if *session_id == self.id => {
                self.status = SessionStatus::Closed {
                    seq: event.seq,
                    at: event.recorded_at.clone(),
                    reason: reason.clone(),
                };
            }
            _ => {}
        }
    }
}

/// One thinking session in full: its head, its thoughts and its branches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub head: SessionHead,
    /// Every thought in the order recorded (the reference server's `thoughtHistory`): a
    /// persistent vector, so that a copy of a session costs the same for a thousand thoughts as
    /// for one.
    pub thoughts: Vector<Thought>,
    /// Branches in the order they were opened.
    pub branches: Vec<Branch>,
}

impl Deref for Session {
    type Target = SessionHead;

    fn deref(&self) -> &SessionHead {
        &self.head
    }
}

impl Session {
    /// A session with no thoughts yet.
    pub fn new(head: SessionHead) -> Self {
        Self {
            head,
            thoughts: Vector::new(),
            branches: Vec::new(),
        }
    }

    /// The session `event` starts, with the rest of that event folded in.
    pub fn starting(id: &SessionId, event: &Event, texts: &TextLookup<'_>) -> Option<Self> {
        let mut session = Self::new(SessionHead::starting(id, event)?);
        for fact in &event.facts {
            session.fold_fact(fact, event, texts);
        }
        Some(session)
    }

    /// The latest thought with this number (numbers may repeat when a client re-sends one).
    pub fn thought_by_number(&self, number: u32) -> Option<&Thought> {
        self.thoughts
            .iter()
            .rev()
            .find(|t| t.thought_number == number)
    }

    /// Folds a later event recorded against this session.
    pub fn fold(&mut self, event: &Event, texts: &TextLookup<'_>) {
        self.head.touch(event);
        for fact in &event.facts {
            self.fold_fact(fact, event, texts);
        }
    }

    fn fold_fact(&mut self, fact: &Fact, event: &Event, texts: &TextLookup<'_>) {
        match fact {
            Fact::ThoughtRecorded(recorded) if recorded.session_id == self.head.id => {
                self.push_thought(recorded_thought(event, recorded, texts));
            }
            Fact::ThoughtTagged {
                session_id,
                thought_seq,
                added,
                removed,
            } if *session_id == self.head.id => {
                let Some(thought) = self.thoughts.iter_mut().find(|t| t.seq == *thought_seq) else {
                    return;
                };
                thought.tags.retain(|t| !removed.contains(t));
                for tag in added {
                    if !thought.tags.contains(tag) {
                        thought.tags.push(tag.clone());
                    }
                }
            }
            _ => self.head.fold_fact(fact, event),
        }
    }

    /// Appends a thought: to the chain, to its branch (opened when it names the thought it
    /// branches from), and to the head's count and numbers.
    pub fn push_thought(&mut self, thought: Thought) {
        self.head.note_thought(
            thought.thought_number,
            thought.branch_id.as_deref(),
            thought.branch_from_thought,
        );
        let index = self.thoughts.len();
        if let Some(branch_id) = &thought.branch_id {
            if let Some(branch) = self.branches.iter_mut().find(|b| &b.id == branch_id) {
                branch.thoughts.push_back(index);
            } else if let Some(from) = thought.branch_from_thought {
                self.branches.push(Branch {
                    id: branch_id.clone(),
                    from_thought: from,
                    thoughts: Vector::unit(index),
                });
            }
        }
        self.thoughts.push_back(thought);
    }

    /// Its estimated size in memory (for a cache's byte budget).
    pub fn bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.thoughts.iter().map(thought_bytes).sum::<usize>()
    }
}

fn recorded_thought(event: &Event, recorded: &ThoughtRecorded, texts: &TextLookup<'_>) -> Thought {
    Thought {
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
    }
}

/// Where the bodies a state does not hold are had: a cache kept beside the state
/// (`app::bodies`), which reads them back from the log, shared by every view. The fold tells it
/// what it folded, so that it holds the bodies of events not yet durable too (the log cannot
/// give those back); it holds no lock and reads nothing itself.
pub trait SessionBodies: Send + Sync + std::fmt::Debug {
    /// The body of the session `head` stands for, as of that head, with no text of an `erased`
    /// commitment.
    fn body(&self, head: &SessionHead, erased: &HashSet<String>)
    -> Result<Arc<Session>, LoadError>;
    /// The writer started a session with `body`, under `epoch` erasures.
    fn started(&self, body: Session, epoch: usize);
    /// The writer folded `event` into the head of `id`, which stood at `prior`.
    fn advanced(
        &self,
        id: &SessionId,
        prior: u64,
        epoch: usize,
        event: &Event,
        texts: &TextLookup<'_>,
    );
    /// Erasures now number `epoch`: no body folded under fewer may be handed out.
    fn erased(&self, epoch: usize);
    /// Forgets every body (the state was replaced).
    fn clear(&self);
}

/// A session's body could not be read again from the log.
#[derive(Debug, Clone, thiserror::Error)]
#[error("session {session} could not be read from the log: {reason}")]
pub struct LoadError {
    pub session: SessionId,
    pub reason: String,
}

/// All sessions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThinkingState {
    heads: HashMap<SessionId, Arc<SessionHead>>,
    /// Session ids in the order they started.
    order: Vector<SessionId>,
    /// Every text commitment erased so far: a body folded again from the log never shows
    /// their texts, whatever it reads. Its size counts erasures, so that a cached body folded
    /// before one is not handed out after it.
    erased: HashSet<String>,
    /// Every session's body, while no log is attached to read them from.
    resident: Option<HashMap<SessionId, Arc<Session>>>,
    /// Bodies read from the log on demand, once one is attached; shared by every view.
    #[serde(skip)]
    bodies: Option<Arc<dyn SessionBodies>>,
}

impl Default for ThinkingState {
    fn default() -> Self {
        Self {
            heads: HashMap::new(),
            order: Vector::new(),
            erased: HashSet::new(),
            resident: Some(HashMap::new()),
            bodies: None,
        }
    }
}

impl ThinkingState {
    /// From now on, bodies are had from `bodies` when asked for (read from the log and
    /// cached), instead of all kept in memory. Bodies already folded are dropped.
    pub fn load_bodies_from(&mut self, bodies: Arc<dyn SessionBodies>) {
        self.resident = None;
        self.bodies = Some(bodies);
    }

    /// Takes `loaded` (from a snapshot) as the state, keeping how bodies are had. A state with
    /// resident bodies cannot take one saved without them.
    pub fn adopt(&mut self, mut loaded: ThinkingState) -> Result<(), String> {
        match &self.bodies {
            Some(bodies) => {
                bodies.clear();
                loaded.resident = None;
                loaded.bodies = Some(bodies.clone());
            }
            None if loaded.resident.is_none() && !loaded.heads.is_empty() => {
                return Err(
                    "the snapshot holds no session bodies and no log is attached to \
                            read them from"
                        .into(),
                );
            }
            None => {
                loaded.resident.get_or_insert_with(HashMap::new);
            }
        }
        *self = loaded;
        Ok(())
    }

    pub fn head(&self, id: &SessionId) -> Option<&SessionHead> {
        self.heads.get(id).map(|h| &**h)
    }

    /// Every session's head, in the order they started.
    pub fn heads(&self) -> impl Iterator<Item = &SessionHead> {
        self.order.iter().filter_map(|id| self.head(id))
    }

    /// The session `id` in full, read from the log if it is not at hand.
    pub fn session(&self, id: &SessionId) -> Result<Option<Arc<Session>>, LoadError> {
        match self.head(id) {
            None => Ok(None),
            Some(head) => self.body(head).map(Some),
        }
    }

    /// The body of the session `head` stands for, as of that head.
    pub fn body(&self, head: &SessionHead) -> Result<Arc<Session>, LoadError> {
        if let Some(resident) = &self.resident {
            return resident.get(&head.id).cloned().ok_or_else(|| LoadError {
                session: head.id.clone(),
                reason: "no body is held for it".into(),
            });
        }
        let bodies = self.bodies.as_ref().ok_or_else(|| LoadError {
            session: head.id.clone(),
            reason: "no log is attached".into(),
        })?;
        bodies.body(head, &self.erased)
    }

    /// Folds one event. Facts about a session count only in an event recorded against it;
    /// facts about unknown sessions or thoughts cannot occur in a log written by `app`, and if
    /// they do (a hand-made log) they are ignored rather than invented.
    pub fn apply(&mut self, event: &Event, texts: &TextLookup<'_>) {
        for fact in &event.facts {
            if let Fact::TextsErased { commitments, .. } = fact {
                self.erase(commitments);
            }
        }
        let Some(id) = &event.session_id else {
            return;
        };
        let epoch = self.erased.len();
        if let Some(head) = self.heads.get_mut(id) {
            let head = Arc::make_mut(head);
            let prior = head.last_seq;
            head.fold(event);
            if let Some(resident) = &mut self.resident
                && let Some(body) = resident.get_mut(id)
            {
                Arc::make_mut(body).fold(event, texts);
            }
            if let Some(bodies) = &self.bodies {
                bodies.advanced(id, prior, epoch, event, texts);
            }
            return;
        }
        let Some(body) = Session::starting(id, event, texts) else {
            return;
        };
        self.order.push_back(id.clone());
        self.heads.insert(id.clone(), Arc::new(body.head.clone()));
        if let Some(resident) = &mut self.resident {
            resident.insert(id.clone(), Arc::new(body));
        } else if let Some(bodies) = &self.bodies {
            bodies.started(body, epoch);
        }
    }

    fn erase(&mut self, commitments: &[String]) {
        for c in commitments {
            self.erased.insert(c.clone());
        }
        let Some(resident) = &mut self.resident else {
            // Cached bodies folded before the erasure no longer match the count; they are
            // dropped now rather than when evicted, so the erased texts leave memory.
            if let Some(bodies) = &self.bodies {
                bodies.erased(self.erased.len());
            }
            return;
        };
        // A commitment is random per text, so it names at most one thought. Only the sessions
        // holding one are changed (and so copied).
        let holding: Vec<SessionId> = resident
            .iter()
            .filter(|(_, s)| {
                s.thoughts
                    .iter()
                    .any(|t| commitments.contains(&t.text_ref.commitment))
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &holding {
            let Some(session) = resident.get_mut(id).map(Arc::make_mut) else {
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
