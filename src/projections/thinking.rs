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
use std::sync::{Arc, Mutex, MutexGuard};

use imbl::{HashMap, HashSet, Vector};
use lru::LruCache;
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
fn thought_bytes(thought: &Thought) -> usize {
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
    fn starting(id: &SessionId, event: &Event, texts: &TextLookup<'_>) -> Option<Self> {
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
    fn fold(&mut self, event: &Event, texts: &TextLookup<'_>) {
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

    fn bytes(&self) -> usize {
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

/// Where a session's events and texts are read again from: the log.
pub trait BodySource: Send + Sync {
    /// The events recorded against `session` with seq ≤ `through`, in seq order.
    fn events(&self, session: &SessionId, through: u64) -> Result<Vec<Event>, String>;
    /// The stored text behind `text`; `None` when it was erased (or never stored).
    fn text(&self, text: &TextRef) -> Result<Option<Arc<str>>, String>;
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
    bodies: Option<Arc<Bodies>>,
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
    /// From now on, bodies are read from `source` when asked for and kept in a cache of
    /// `budget` bytes, instead of all in memory. Bodies already folded are dropped.
    pub fn load_bodies_from(&mut self, source: Box<dyn BodySource>, budget: usize) {
        self.resident = None;
        self.bodies = Some(Arc::new(Bodies::new(source, budget)));
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
        bodies.get(head, &self.erased)
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
                bodies.advance(id, prior, epoch, event, texts);
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
            bodies.start(body, epoch);
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
                bodies.forget_before(self.erased.len());
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

/// Session bodies read from the log, the most recently used kept up to a byte budget.
pub struct Bodies {
    source: Box<dyn BodySource>,
    budget: usize,
    cache: Mutex<Cache>,
}

impl std::fmt::Debug for Bodies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cache = self.lock();
        f.debug_struct("Bodies")
            .field("budget", &self.budget)
            .field("sessions", &cache.lru.len())
            .field("bytes", &cache.bytes)
            .finish()
    }
}

struct Cache {
    lru: LruCache<SessionId, Cached>,
    bytes: usize,
    /// Bodies folded under fewer erasures than this are not taken in (a read from a view
    /// published before an erasure may finish after it).
    floor: usize,
}

/// A cached body, with the one before the writer's last fold of it (a view published before
/// that fold still asks for it).
struct Cached {
    current: Arc<Session>,
    previous: Option<Arc<Session>>,
    /// Erasures counted when it was folded.
    epoch: usize,
    bytes: usize,
}

impl Bodies {
    fn new(source: Box<dyn BodySource>, budget: usize) -> Self {
        Self {
            source,
            budget,
            cache: Mutex::new(Cache {
                lru: LruCache::unbounded(),
                bytes: 0,
                floor: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Cache> {
        // A panic while holding the lock leaves at worst a body missing or stale by count,
        // which every lookup checks.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn clear(&self) {
        let mut cache = self.lock();
        cache.lru.clear();
        cache.bytes = 0;
    }

    /// Drops every body folded before the `epoch`-th erasure, and takes none in later.
    fn forget_before(&self, epoch: usize) {
        let mut cache = self.lock();
        cache.floor = cache.floor.max(epoch);
        let stale: Vec<SessionId> = cache
            .lru
            .iter()
            .filter(|(_, c)| c.epoch < epoch)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &stale {
            cache.remove(id);
        }
    }

    /// The body as of `head`: cached, else folded from the session's events.
    fn get(&self, head: &SessionHead, erased: &HashSet<String>) -> Result<Arc<Session>, LoadError> {
        let epoch = erased.len();
        if let Some(cached) = self.lock().lru.get(&head.id)
            && cached.epoch == epoch
        {
            if cached.current.last_seq == head.last_seq {
                return Ok(cached.current.clone());
            }
            if let Some(previous) = &cached.previous
                && previous.last_seq == head.last_seq
            {
                return Ok(previous.clone());
            }
        }
        let body = Arc::new(self.load(head, erased)?);
        let mut cache = self.lock();
        let newer = epoch >= cache.floor
            && cache.lru.peek(&head.id).is_none_or(|c| {
                c.epoch < epoch || (c.epoch == epoch && c.current.last_seq < head.last_seq)
            });
        if newer {
            let bytes = body.bytes();
            cache.put(
                head.id.clone(),
                Cached {
                    current: body.clone(),
                    previous: None,
                    epoch,
                    bytes,
                },
            );
            cache.evict(self.budget);
        }
        Ok(body)
    }

    /// Folds the session's events from the log, up to the head's last one.
    fn load(&self, head: &SessionHead, erased: &HashSet<String>) -> Result<Session, LoadError> {
        let fail = |reason: String| LoadError {
            session: head.id.clone(),
            reason,
        };
        let events = self.source.events(&head.id, head.last_seq).map_err(fail)?;
        let failure = std::cell::RefCell::new(None);
        let texts = |text: &TextRef| -> Option<Arc<str>> {
            if erased.contains(&text.commitment) {
                return None;
            }
            self.source.text(text).unwrap_or_else(|e| {
                failure.borrow_mut().get_or_insert(e);
                None
            })
        };
        let mut body: Option<Session> = None;
        for event in &events {
            match &mut body {
                Some(session) => session.fold(event, &texts),
                None => body = Session::starting(&head.id, event, &texts),
            }
        }
        if let Some(reason) = failure.into_inner() {
            return Err(fail(reason));
        }
        let body = body.ok_or_else(|| fail("the log holds no event that starts it".into()))?;
        if body.last_seq != head.last_seq || body.events != head.events {
            return Err(fail(format!(
                "its events in the log (through {}, {} of them) do not match the state (through \
                 {}, {})",
                body.last_seq, body.events, head.last_seq, head.events
            )));
        }
        Ok(body)
    }

    /// A session just started by the writer: cached from its first event.
    fn start(&self, body: Session, epoch: usize) {
        let bytes = body.bytes();
        let mut cache = self.lock();
        cache.put(
            body.id.clone(),
            Cached {
                current: Arc::new(body),
                previous: None,
                epoch,
                bytes,
            },
        );
        cache.evict(self.budget);
    }

    /// The writer folded `event` into the head of `id`, which stood at `prior`: a body cached
    /// as of that head is folded too; one that is not is dropped.
    fn advance(
        &self,
        id: &SessionId,
        prior: u64,
        epoch: usize,
        event: &Event,
        texts: &TextLookup<'_>,
    ) {
        let mut guard = self.lock();
        let cache = &mut *guard;
        let Some(cached) = cache.lru.get_mut(id) else {
            return;
        };
        if cached.epoch != epoch || cached.current.last_seq != prior {
            cache.remove(id);
            return;
        }
        let mut next = Session::clone(&cached.current);
        let before = next.thoughts.len();
        next.fold(event, texts);
        // `skip` on the vector, not its iterator: that steps through every thought before.
        let added: usize = next.thoughts.skip(before).iter().map(thought_bytes).sum();
        cached.previous = Some(std::mem::replace(&mut cached.current, Arc::new(next)));
        cached.bytes += added;
        cache.bytes += added;
        cache.evict(self.budget);
    }
}

impl Cache {
    fn put(&mut self, id: SessionId, cached: Cached) {
        self.bytes += cached.bytes;
        if let Some(old) = self.lru.put(id, cached) {
            self.bytes -= old.bytes;
        }
    }

    fn remove(&mut self, id: &SessionId) {
        if let Some(old) = self.lru.pop(id) {
            self.bytes -= old.bytes;
        }
    }

    /// Drops the least recently used bodies until the rest fit `budget` (the last one used
    /// is kept even when it alone is larger).
    fn evict(&mut self, budget: usize) {
        while self.bytes > budget && self.lru.len() > 1 {
            let Some((_, old)) = self.lru.pop_lru() else {
                break;
            };
            self.bytes -= old.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::Value;

    use super::*;
    use crate::events::{Actor, Call, ENVELOPE_VERSION, KIND_TOOL_CALL_RECORDED, Outcome};

    /// The log as a source: events by seq, texts by commitment (removed when erased), and how
    /// many times a session was read back.
    #[derive(Default)]
    struct Log {
        events: Mutex<Vec<Event>>,
        texts: Mutex<BTreeMap<String, Arc<str>>>,
        loads: Mutex<usize>,
    }

    impl BodySource for Arc<Log> {
        fn events(&self, session: &SessionId, through: u64) -> Result<Vec<Event>, String> {
            *self.loads.lock().unwrap() += 1;
            Ok(self
                .events
                .lock()
                .unwrap()
                .iter()
                .filter(|e| e.session_id.as_ref() == Some(session) && e.seq <= through)
                .cloned()
                .collect())
        }

        fn text(&self, text: &TextRef) -> Result<Option<Arc<str>>, String> {
            Ok(self.texts.lock().unwrap().get(&text.commitment).cloned())
        }
    }

    fn event(seq: u64, session: &SessionId, facts: Vec<Fact>) -> Event {
        Event {
            v: ENVELOPE_VERSION,
            kind: KIND_TOOL_CALL_RECORDED.to_owned(),
            seq,
            ledger_id: "test".into(),
            session_id: Some(session.clone()),
            recorded_at: format!("2026-11-26T10:00:{:02}.000000Z", seq % 60),
            actor: Actor {
                principal: "alice".into(),
                transport: "stdio".into(),
                client_name: None,
                client_version: None,
                role: Default::default(),
                user_ids: Vec::new(),
            },
            call: Call {
                tool: "sequentialthinking".into(),
                arguments: Value::Null,
                idempotency_key: None,
                effects: None,
            },
            facts,
            outcome: Outcome {
                status: crate::events::OutcomeStatus::Ok,
                response_digest: String::new(),
                error: None,
                response_ref: None,
                decide_micros: None,
            },
            provenance: crate::events::Provenance::rules("test"),
            trace: None,
            prev_hash: String::new(),
            hash: String::new(),
        }
    }

    fn thought(session: &SessionId, seq: u64, number: u32) -> Fact {
        Fact::ThoughtRecorded(ThoughtRecorded {
            session_id: session.clone(),
            text: TextRef {
                commitment: format!("{seq:064x}"),
            },
            thought_number: number,
            total_thoughts: number.max(3),
            next_thought_needed: true,
            is_revision: false,
            revises_thought: None,
            branch_from_thought: number.is_multiple_of(4).then_some(1),
            branch_id: number.is_multiple_of(4).then(|| format!("b{}", number % 8)),
            needs_more_thoughts: false,
            tags: Vec::new(),
        })
    }

    /// Folds `event` into the states the way the writer does, with the text it carries. An
    /// erasure's texts stay in the log here: the writer folds an erasure before it removes
    /// them from disk, so a body read back in between must not show them either.
    fn fold(log: &Arc<Log>, states: &mut [&mut ThinkingState], event: Event) {
        let mut pending = BTreeMap::new();
        for fact in &event.facts {
            if let Fact::ThoughtRecorded(r) = fact {
                let text: Arc<str> = Arc::from(format!("thought at {}", event.seq));
                pending.insert(r.text.commitment.clone(), text.clone());
                log.texts
                    .lock()
                    .unwrap()
                    .insert(r.text.commitment.clone(), text);
            }
        }
        let lookup = |r: &TextRef| pending.get(&r.commitment).cloned();
        for state in states.iter_mut() {
            state.apply(&event, &lookup);
        }
        log.events.lock().unwrap().push(event);
    }

    fn all(state: &ThinkingState) -> Vec<Session> {
        state
            .heads()
            .map(|h| Session::clone(&state.body(h).unwrap()))
            .collect()
    }

    #[test]
    fn bodies_read_back_from_the_log_equal_the_resident_ones() {
        let log = Arc::new(Log::default());
        let mut resident = ThinkingState::default();
        let mut on_demand = ThinkingState::default();
        // A budget of a few sessions: most bodies are evicted and read back.
        on_demand.load_bodies_from(Box::new(log.clone()), 6_000);
        let sessions: Vec<SessionId> = (0..12).map(|_| SessionId::random()).collect();
        let mut seq = 0;
        let mut next = || {
            seq += 1;
            seq
        };
        let mut earlier_views = Vec::new();
        for round in 0..10u32 {
            for (i, id) in sessions.iter().enumerate() {
                let s = next();
                let mut facts = Vec::new();
                if round == 0 {
                    facts.push(Fact::SessionStarted {
                        session_id: id.clone(),
                    });
                }
                facts.push(thought(id, s, round + 1));
                if round == 5 && i % 3 == 0 {
                    facts.push(Fact::ThoughtTagged {
                        session_id: id.clone(),
                        thought_seq: s - 12,
                        added: vec!["kept".into()],
                        removed: Vec::new(),
                    });
                }
                if round == 9 && i == 0 {
                    facts.push(Fact::SessionClosed {
                        session_id: id.clone(),
                        reason: "done".into(),
                    });
                }
                fold(
                    &log,
                    &mut [&mut resident, &mut on_demand],
                    event(s, id, facts),
                );
            }
            if round == 7 {
                // Erase two texts of session 1, recorded in an event of session 2.
                let erased = vec![format!("{:064x}", 2u64), format!("{:064x}", 14u64)];
                let s = next();
                let erase = event(
                    s,
                    &sessions[2],
                    vec![Fact::TextsErased {
                        commitments: erased,
                        reason: "asked".into(),
                        session_id: Some(sessions[1].clone()),
                    }],
                );
                fold(&log, &mut [&mut resident, &mut on_demand], erase);
            }
            assert_eq!(all(&on_demand), all(&resident), "round {round}");
            earlier_views.push((on_demand.clone(), all(&resident)));
        }
        // A view published earlier still reads its sessions as they stood then.
        for (view, expected) in earlier_views {
            assert_eq!(all(&view), expected);
        }
        assert!(
            resident.heads().all(|h| h.thought_count == 10),
            "every thought counted"
        );
        // No body folded before the erasure (two texts) is cached, though earlier views read
        // some back since.
        {
            let cache = on_demand.bodies.as_ref().unwrap().lock();
            assert!(cache.lru.iter().all(|(_, cached)| cached.epoch >= 2));
        }
        let erased = on_demand.session(&sessions[1]).unwrap().unwrap();
        assert!(erased.thoughts[0].text.is_none() && erased.thoughts[1].text.is_none());
        assert!(erased.thoughts[2].text.is_some());
        let cache = on_demand.bodies.as_ref().unwrap().lock();
        assert!(
            cache.bytes <= 6_000 || cache.lru.len() == 1,
            "{} bytes",
            cache.bytes
        );
        assert!(*log.loads.lock().unwrap() > 0, "bodies were read back");
    }

    #[test]
    fn a_body_that_does_not_match_its_head_is_an_error_not_an_answer() {
        let log = Arc::new(Log::default());
        let mut state = ThinkingState::default();
        state.load_bodies_from(Box::new(log.clone()), 0);
        let id = SessionId::random();
        let other = SessionId::random();
        let start = |s: &SessionId| {
            vec![Fact::SessionStarted {
                session_id: s.clone(),
            }]
        };
        fold(&log, &mut [&mut state], event(1, &id, start(&id)));
        fold(&log, &mut [&mut state], event(2, &other, start(&other)));
        // The budget of 0 keeps only the last one used.
        log.events.lock().unwrap().retain(|e| e.seq != 1);
        let err = state.session(&id).unwrap_err();
        assert!(err.to_string().contains("no event that starts it"), "{err}");
    }
}
