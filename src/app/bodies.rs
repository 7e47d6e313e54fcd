//! Where a server has a thinking session's body when its state does not hold it: a cache of
//! bodies beside the state ([`Bodies`], the [`SessionBodies`] the projection borrows), the most
//! recently used kept up to a byte budget, each folded from the session's stored events and
//! their texts when missing ([`BodySource`], over the ledger's [`SessionLog`]). The writer's
//! fold keeps cached bodies current (a body of events not yet durable is had only here), and
//! every view shares the cache: a body is handed only to a view whose head it matches.
//!
//! It holds the lock the projection may not (`tidy::folds_and_decisions_do_no_io`); it reads
//! the log only through the ledger's reading interface, never a file.

use std::sync::{Arc, Mutex, MutexGuard};

use imbl::HashSet;
use lru::LruCache;

use crate::events::{Event, SessionId, TextLookup, TextRef};
use crate::ledger::SessionLog;
use crate::ledger::hash::parse_hex32;
use crate::projections::{LoadError, Session, SessionBodies, SessionHead, thought_bytes};

/// Bytes of bodies a server keeps.
pub(super) use crate::projections::BODY_CACHE_BYTES;

/// Where a session's events and texts are read again from: the log.
pub(super) trait BodySource: Send + Sync {
    /// The events recorded against `session` with seq ≤ `through`, in seq order.
    fn events(&self, session: &SessionId, through: u64) -> Result<Vec<Event>, String>;
    /// The stored text behind `text`; `None` when it was erased (or never stored).
    fn text(&self, text: &TextRef) -> Result<Option<Arc<str>>, String>;
}

/// The bodies of a server whose log is `log`, cached up to [`BODY_CACHE_BYTES`].
pub(super) fn from_log(log: Arc<dyn SessionLog>) -> Arc<dyn SessionBodies> {
    Arc::new(Bodies::new(Box::new(LogBodies(log)), BODY_CACHE_BYTES))
}

/// The log, read through the ledger's [`SessionLog`].
struct LogBodies(Arc<dyn SessionLog>);

impl BodySource for LogBodies {
    fn events(&self, session: &SessionId, through: u64) -> Result<Vec<Event>, String> {
        let seqs = self.0.session_seqs(session).map_err(|e| e.to_string())?;
        seqs.into_iter()
            .take_while(|seq| *seq <= through)
            .map(|seq| {
                let bytes = self
                    .0
                    .event_bytes(seq)
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| format!("event {seq} is indexed but not stored"))?;
                serde_json::from_slice(&bytes).map_err(|e| format!("event {seq}: {e}"))
            })
            .collect()
    }

    fn text(&self, text: &TextRef) -> Result<Option<Arc<str>>, String> {
        let commitment = parse_hex32(&text.commitment)
            .ok_or_else(|| format!("text commitment {:?} is not 64 hex digits", text.commitment))?;
        Ok(self
            .0
            .text(&commitment)
            .map_err(|e| e.to_string())?
            .map(|record| Arc::from(record.text)))
    }
}

/// Session bodies read from the log, the most recently used kept up to a byte budget.
pub(super) struct Bodies {
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
    /// Bodies read from `source`, up to `budget` bytes of them kept.
    pub(super) fn new(source: Box<dyn BodySource>, budget: usize) -> Self {
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
}

impl SessionBodies for Bodies {
    /// The body as of `head`: cached, else folded from the session's events.
    fn body(
        &self,
        head: &SessionHead,
        erased: &HashSet<String>,
    ) -> Result<Arc<Session>, LoadError> {
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

    /// A session just started by the writer: cached from its first event.
    fn started(&self, body: Session, epoch: usize) {
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
    fn advanced(
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

    /// Drops every body folded before the `epoch`-th erasure, and takes none in later.
    fn erased(&self, epoch: usize) {
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

    /// Forgets every body.
    fn clear(&self) {
        let mut cache = self.lock();
        cache.lru.clear();
        cache.bytes = 0;
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
    use crate::events::{
        Actor, Call, ENVELOPE_VERSION, Fact, KIND_TOOL_CALL_RECORDED, Outcome, ThoughtRecorded,
    };
    use crate::projections::ThinkingState;

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
        let bodies = Arc::new(Bodies::new(Box::new(log.clone()), 6_000));
        on_demand.load_bodies_from(bodies.clone());
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
            let cache = bodies.lock();
            assert!(cache.lru.iter().all(|(_, cached)| cached.epoch >= 2));
        }
        let erased = on_demand.session(&sessions[1]).unwrap().unwrap();
        assert!(erased.thoughts[0].text.is_none() && erased.thoughts[1].text.is_none());
        assert!(erased.thoughts[2].text.is_some());
        let cache = bodies.lock();
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
        state.load_bodies_from(Arc::new(Bodies::new(Box::new(log.clone()), 0)));
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
