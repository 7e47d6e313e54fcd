//! The in-memory [`LogView`] every test that needs one uses (the writer's, the audit
//! export's): real events (built with the ledger's own
//! `event_hash` and `canonical_bytes`), real text commitments, a real Merkle tree and real signed
//! checkpoints, held in plain collections. It stands in for the writer's view; it must not be
//! used outside tests.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use crate::events::{
    Actor, Call, ENVELOPE_VERSION, Event, Fact, KIND_TOOL_CALL_RECORDED, Outcome, OutcomeStatus,
    Provenance, SessionId, TextRef, ThoughtRecorded,
};
use crate::ledger::canonical::canonical_bytes;
use crate::ledger::checkpoint::{Checkpoint, NoteSigner, sign_checkpoint};
use crate::ledger::hash::{GENESIS_PREV_HASH, event_hash, parse_hex32, text_commitment};
use crate::ledger::keyfile::key_name;
use crate::ledger::merkle::{Blake3Hasher, MerkleError, MerkleTree, NodeHash};
use crate::ledger::{LedgerError, LedgerMeta, LogView, SignedCheckpoint, TextRecord, TextState};

pub struct TestLog {
    meta: LedgerMeta,
    /// Stored bytes of event `seq` at index `seq − 1`.
    events: Vec<Vec<u8>>,
    hashes: Vec<String>,
    sessions: BTreeMap<SessionId, Vec<u64>>,
    texts: HashMap<[u8; 32], TextState>,
    tree: MerkleTree<Blake3Hasher>,
    checkpoint: Option<SignedCheckpoint>,
    signer: NoteSigner,
}

impl TestLog {
    pub fn new() -> Self {
        let ledger_id = uuid::Uuid::new_v4().to_string();
        let signer = NoteSigner::generate(&key_name(&ledger_id)).expect("key");
        Self {
            meta: LedgerMeta {
                ledger_id,
                created_at: "2026-11-21T09:00:00.000000Z".into(),
                format: crate::ledger::FORMAT.into(),
            },
            events: Vec::new(),
            hashes: Vec::new(),
            sessions: BTreeMap::new(),
            texts: HashMap::new(),
            tree: MerkleTree::new(Blake3Hasher),
            checkpoint: None,
            signer,
        }
    }

    /// A second log of the same ledger and key holding this one's first `n` events: a restored
    /// backup, or the start of a fork.
    pub fn prefix(&self, n: u64) -> Self {
        let mut log = Self::new();
        log.signer = NoteSigner::from_skey(&self.signer.to_skey()).expect("key");
        log.meta = self.meta.clone();
        let n = usize::try_from(n).expect("size");
        log.events = self.events[..n].to_vec();
        log.hashes = self.hashes[..n].to_vec();
        for (session, seqs) in &self.sessions {
            let kept: Vec<u64> = seqs.iter().copied().filter(|s| *s <= n as u64).collect();
            if !kept.is_empty() {
                log.sessions.insert(session.clone(), kept);
            }
        }
        // Texts erased after the prefix were still there when it was taken; their records are
        // gone, so they count as lost.
        log.texts = self
            .texts
            .iter()
            .map(|(k, state)| match state {
                TextState::Erased { seq } if *seq > n as u64 => (*k, TextState::Missing),
                other => (*k, other.clone()),
            })
            .collect();
        for hash in &log.hashes {
            log.tree.push_leaf(&parse_hex32(hash).expect("hash"));
        }
        log
    }

    pub fn ledger_id(&self) -> &str {
        &self.meta.ledger_id
    }

    pub fn vkey(&self) -> String {
        self.signer.verifier().to_vkey()
    }

    pub fn key(&self) -> &NoteSigner {
        &self.signer
    }

    /// Records one thought of `session` with its text; returns its seq.
    pub fn think(&mut self, session: &SessionId, text: &str) -> u64 {
        let (text_ref, record) = commit(text);
        let thought = ThoughtRecorded {
            session_id: session.clone(),
            text: text_ref.clone(),
            thought_number: 1,
            total_thoughts: 1,
            next_thought_needed: true,
            is_revision: false,
            revises_thought: None,
            branch_from_thought: None,
            branch_id: None,
            needs_more_thoughts: false,
            tags: vec![],
        };
        self.texts
            .insert(key(&text_ref.commitment), TextState::Present(record));
        self.record(
            Some(session),
            "sequentialthinking",
            json!({"thought": text_ref, "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": true}),
            vec![Fact::ThoughtRecorded(thought)],
        )
    }

    /// Records a read-only call outside any session; returns its seq.
    pub fn read(&mut self) -> u64 {
        self.record(None, "visualize", json!({}), vec![])
    }

    /// Records the erasure of `commitments` and removes their texts; returns its seq.
    pub fn erase(&mut self, commitments: &[String]) -> u64 {
        let seq = self.record(
            None,
            "erase",
            json!({"commitments": commitments}),
            vec![Fact::TextsErased {
                commitments: commitments.to_vec(),
                reason: "data subject request".into(),
                session_id: None,
            }],
        );
        for c in commitments {
            self.texts.insert(key(c), TextState::Erased { seq });
        }
        seq
    }

    /// Records a read outside any session, changed by `edit` as JSON before it is hashed: an
    /// event a later version (or a faulty writer) could have recorded. Returns its seq.
    pub fn record_edited(&mut self, edit: impl FnOnce(&mut Value)) -> u64 {
        let seq = self.read();
        self.tree = MerkleTree::new(Blake3Hasher);
        for hash in &self.hashes[..self.hashes.len() - 1] {
            self.tree.push_leaf(&parse_hex32(hash).expect("hex"));
        }
        let mut value: Value =
            serde_json::from_slice(&self.events.pop().expect("the read")).expect("json");
        self.hashes.pop();
        if let Some(object) = value.as_object_mut() {
            object.remove("hash");
        }
        edit(&mut value);
        let hash = crate::ledger::hash::event_value_hash(&value).expect("hash");
        value["hash"] = Value::String(hash.clone());
        self.tree.push_leaf(&parse_hex32(&hash).expect("hex"));
        self.hashes.push(hash);
        self.events.push(canonical_bytes(&value).expect("jcs"));
        seq
    }

    /// Forgets a text without an erasure, as a damaged store would.
    pub fn lose_text(&mut self, commitment: &str) {
        self.texts.insert(key(commitment), TextState::Missing);
    }

    /// The first text commitment in the event at `seq`.
    pub fn commitment_of(&self, seq: u64) -> String {
        let value: Value =
            serde_json::from_slice(&self.event_bytes(seq).expect("event")).expect("json");
        crate::ledger::verify::text_refs(&value)
            .into_iter()
            .next()
            .expect("a text reference")
    }

    /// Signs a checkpoint of the whole log; returns the note.
    pub fn sign_checkpoint(&mut self) -> String {
        let checkpoint = Checkpoint::new(
            key_name(&self.meta.ledger_id),
            self.len(),
            self.tree.root(),
            vec![],
        )
        .expect("checkpoint");
        let note = sign_checkpoint(&self.signer, &checkpoint);
        self.checkpoint = Some(SignedCheckpoint {
            checkpoint,
            note: note.clone(),
            signed_at: "2026-11-21T10:00:00.000000Z".into(),
        });
        note
    }

    fn record(
        &mut self,
        session: Option<&SessionId>,
        tool: &str,
        arguments: Value,
        facts: Vec<Fact>,
    ) -> u64 {
        let seq = self.len() + 1;
        let mut event = Event {
            v: ENVELOPE_VERSION,
            kind: KIND_TOOL_CALL_RECORDED.into(),
            seq,
            ledger_id: self.meta.ledger_id.clone(),
            session_id: session.cloned(),
            recorded_at: format!("2026-11-21T09:30:{:02}.000000Z", seq % 60),
            actor: Actor {
                principal: "local".into(),
                transport: "stdio".into(),
                client_name: Some("test".into()),
                client_version: None,
                role: Default::default(),
                user_ids: Vec::new(),
            },
            call: Call {
                tool: tool.into(),
                arguments,
                idempotency_key: None,
                effects: None,
            },
            facts,
            outcome: Outcome {
                status: OutcomeStatus::Ok,
                response_digest: "00".repeat(32),
                error: None,
                response_ref: None,
                decide_micros: None,
            },
            provenance: Provenance::rules("thinkledger.test"),
            trace: None,
            prev_hash: self
                .hashes
                .last()
                .cloned()
                .unwrap_or_else(|| GENESIS_PREV_HASH.to_owned()),
            hash: String::new(),
        };
        event.hash = event_hash(&event).expect("hash");
        let bytes = canonical_bytes(&serde_json::to_value(&event).expect("value")).expect("jcs");
        self.tree.push_leaf(&parse_hex32(&event.hash).expect("hex"));
        self.hashes.push(event.hash);
        self.events.push(bytes);
        if let Some(session) = session {
            self.sessions.entry(session.clone()).or_default().push(seq);
        }
        seq
    }
}

/// A text reference and record with a salt no other text of the process has (a counter,
/// hashed: the ledger takes no effect, so no randomness here either).
fn commit(text: &str) -> (TextRef, TextRecord) {
    static SALTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SALTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let salt = *blake3::hash(&n.to_le_bytes()).as_bytes();
    let commitment = text_commitment(&salt, text);
    (
        TextRef { commitment },
        TextRecord {
            salt,
            text: text.to_owned(),
        },
    )
}

fn key(commitment: &str) -> [u8; 32] {
    parse_hex32(commitment).expect("commitment")
}

impl LogView for TestLog {
    fn meta(&self) -> &LedgerMeta {
        &self.meta
    }

    fn len(&self) -> u64 {
        self.events.len() as u64
    }

    fn event_bytes(&self, seq: u64) -> Result<Vec<u8>, LedgerError> {
        let index = usize::try_from(seq).ok().and_then(|s| s.checked_sub(1));
        index
            .and_then(|i| self.events.get(i))
            .cloned()
            .ok_or_else(|| LedgerError::Corrupt(format!("no event {seq}")))
    }

    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
        Ok(self.sessions.get(session).cloned().unwrap_or_default())
    }

    fn text(&self, commitment: &[u8; 32]) -> Result<TextState, LedgerError> {
        Ok(self
            .texts
            .get(commitment)
            .cloned()
            .unwrap_or(TextState::Missing))
    }

    fn root_at(&self, size: u64) -> Result<NodeHash, MerkleError> {
        self.tree.root_at(size)
    }

    fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<NodeHash>, MerkleError> {
        self.tree.inclusion_proof(index, size)
    }

    fn consistency_proof(
        &self,
        old_size: u64,
        new_size: u64,
    ) -> Result<Vec<NodeHash>, MerkleError> {
        self.tree.consistency_proof(old_size, new_size)
    }

    fn latest_checkpoint(&self) -> Option<&SignedCheckpoint> {
        self.checkpoint.as_ref()
    }

    fn verifier_key(&self) -> Option<String> {
        Some(self.vkey())
    }

    fn signer(&self) -> Option<&NoteSigner> {
        Some(&self.signer)
    }
}
