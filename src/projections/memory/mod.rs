//! The memory projection: every owner's current memories (content, metadata, sectors, strength
//! anchors, waypoints, vector) folded from the memory facts, and a journal of what those folds
//! changed of the memory index.
//!
//! The memories are plain state, in persistent maps (cheap to clone for publication, like the
//! other projections), saved in snapshots. The index (`index::memory`: tantivy full text and
//! exact vectors) is derived from them and kept outside the state by
//! `index::memory::DerivedIndex`: the fold only journals each change to what the index holds
//! (a memory stored, re-indexed or erased, with the event that made it) and moves the index's
//! anchor; the writer hands the journal to the index after each fold
//! ([`MemoryState::forget_changes`]), and the index reads the memories and the journal through
//! [`Source`]. The fold touches no file, lock or clock.
//!
//! **Architecture Invariant:** a memory's texts leave every derived copy when it is erased: the
//! memory is removed from the state, and the fold journals its erasure, which the index carries
//! out (its documents deleted and its files rewritten without them, `purge_deleted`) before the
//! writer moves on to the next call.

mod journal;

use std::sync::Arc;

use imbl::{HashMap, OrdMap};
use serde::{Deserialize, Serialize};

use crate::embed::Embedding;
use crate::events::memory::{MemoryStored, MemorySuperseded, WaypointLink};
use crate::events::{Event, Fact, TextLookup, TextRef};
use crate::index::memory::MemoryDocument;
use journal::{IndexChange, Journal, Journaled};

/// A memory's metadata as stored (`metadata` texts hold its canonical JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryMetadata {
    /// Keywords and tags: texts shared with the nearest memories' equal ones (a memory's
    /// waypoints are the likeliest to repeat them) and, after a snapshot is loaded, with every
    /// equal one of the owner.
    #[serde(default)]
    pub keywords: Vec<Arc<str>>,
    #[serde(default)]
    pub tags: Vec<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    pub importance: f64,
}

/// One memory, current version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// Its id; the owner's map and the waypoints of other memories share this text.
    pub id: Arc<str>,
    /// The owner; one text shared by all the owner's memories.
    pub user_id: Arc<str>,
    pub context_session_id: Arc<str>,
    /// Seq of the event that stored it.
    pub stored_seq: u64,
    /// Times as recorded (RFC 3339); one text shared by every memory an event touches.
    pub created_at: Arc<str>,
    pub created_ms: i64,
    /// The current version (1 when stored) and when it became valid.
    pub version: u32,
    pub valid_from: Arc<str>,
    /// Sector names are few: each is one text shared by every memory (`sector_names`).
    pub primary_sector: Arc<str>,
    pub sectors: Arc<[Arc<str>]>,
    /// The content (a memory whose content text is erased leaves the state, see the module).
    pub content: Arc<str>,
    pub content_ref: Arc<TextRef>,
    pub metadata: Arc<MemoryMetadata>,
    pub keywords_extracted: bool,
    pub salience: f64,
    /// Strength at `strength_at_ms`; decay from there is computed at query time.
    pub strength: f64,
    pub strength_at_ms: i64,
    pub last_accessed: Arc<str>,
    pub last_accessed_ms: i64,
    /// Waypoints to and from this memory (memory id → weight).
    pub links: Links,
    pub soft_deleted: bool,
    /// The vector of the current content and its model. A snapshot holds the vector as the
    /// ledger records it (base64 of its little-endian components): a third of the bytes of
    /// decimal numbers, written and read several times faster, and exact.
    pub model: Arc<str>,
    #[serde(with = "vector_text")]
    pub vector: Arc<[f32]>,
    /// Every commitment of every version (content, metadata, vectors): what a hard delete
    /// erases.
    pub commitments: Arc<Commitments>,
}

/// Most memories have this many waypoints or fewer (a store makes at most three, and a few
/// more arrive from later stores); up to it they are kept in a sorted vector.
const FEW_LINKS: usize = 16;

/// A memory's waypoints (memory id → weight), in id order. A few are a sorted vector (three
/// take about a fifth of the bytes of a persistent map's smallest node); a memory that gathers
/// more (some gather thousands) keeps them in a persistent map, so adding one copies a path,
/// not every link.
/// Either way they are saved as one JSON object in id order.
#[derive(Debug, Clone, PartialEq)]
pub enum Links {
    /// At most [`FEW_LINKS`], sorted by id.
    Few(Vec<(Arc<str>, f64)>),
    /// More.
    Many(OrdMap<Arc<str>, f64>),
}

impl Default for Links {
    fn default() -> Self {
        Self::Few(Vec::new())
    }
}

impl Links {
    /// How many.
    pub fn len(&self) -> usize {
        match self {
            Self::Few(few) => few.len(),
            Self::Many(many) => many.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each linked id and its weight, in id order.
    pub fn iter(&self) -> LinksIter<'_> {
        match self {
            Self::Few(few) => LinksIter::Few(few.iter()),
            Self::Many(many) => LinksIter::Many(many.iter()),
        }
    }

    /// The linked ids, in order.
    pub fn keys(&self) -> impl Iterator<Item = &Arc<str>> + '_ {
        self.iter().map(|(id, _)| id)
    }

    /// Links `id` with `weight` (replacing its weight if linked already).
    pub fn insert(&mut self, id: Arc<str>, weight: f64) {
        match self {
            Self::Few(few) => match few.binary_search_by(|(k, _)| (**k).cmp(&*id)) {
                Ok(at) => few[at].1 = weight,
                Err(_) if few.len() >= FEW_LINKS => {
                    let mut many: OrdMap<Arc<str>, f64> = few.drain(..).collect();
                    many.insert(id, weight);
                    *self = Self::Many(many);
                }
                Err(at) => few.insert(at, (id, weight)),
            },
            Self::Many(many) => {
                many.insert(id, weight);
            }
        }
    }

    /// Unlinks `id`.
    pub fn remove(&mut self, id: &str) {
        match self {
            Self::Few(few) => few.retain(|(k, _)| &**k != id),
            Self::Many(many) => {
                many.remove(id);
            }
        }
    }
}

/// [`Links::iter`]'s iterator (either representation, no allocation).
pub enum LinksIter<'a> {
    /// Over a sorted vector.
    Few(std::slice::Iter<'a, (Arc<str>, f64)>),
    /// Over a persistent map.
    Many(imbl::ordmap::Iter<'a, Arc<str>, f64, imbl::shared_ptr::DefaultSharedPtr>),
}

impl<'a> Iterator for LinksIter<'a> {
    type Item = (&'a Arc<str>, &'a f64);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Self::Few(few) => few.next().map(|(id, w)| (id, w)),
            Self::Many(many) => many.next(),
        }
    }
}

impl FromIterator<(Arc<str>, f64)> for Links {
    fn from_iter<I: IntoIterator<Item = (Arc<str>, f64)>>(iter: I) -> Self {
        let mut links = Links::default();
        for (id, weight) in iter {
            links.insert(id, weight);
        }
        links
    }
}

impl Serialize for Links {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Links {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = std::collections::BTreeMap::<Arc<str>, f64>::deserialize(d)?;
        Ok(map.into_iter().collect())
    }
}

/// Text commitments, each held as its 32 bytes when it is 64 lowercase hex digits (as every
/// commitment the ledger makes is), else as written; without repeats, in the order first
/// added.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "Vec<String>", into = "Vec<String>")]
pub struct Commitments {
    digests: Vec<[u8; 32]>,
    others: Vec<String>,
}

/// The 32 bytes of 64 lowercase hex digits.
fn digest_of(hex: &str) -> Option<[u8; 32]> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (o, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *o = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

impl Commitments {
    /// Adds one (a repeat is dropped).
    pub fn push(&mut self, commitment: String) {
        match digest_of(&commitment) {
            Some(d) if !self.digests.contains(&d) => self.digests.push(d),
            Some(_) => {}
            None if !self.others.contains(&commitment) => self.others.push(commitment),
            None => {}
        }
    }

    /// Each commitment as written (lowercase hex).
    pub fn to_strings(&self) -> Vec<String> {
        self.digests
            .iter()
            .map(|d| crate::ledger::hash::hex(d))
            .chain(self.others.iter().cloned())
            .collect()
    }
}

impl Extend<String> for Commitments {
    fn extend<I: IntoIterator<Item = String>>(&mut self, iter: I) {
        for c in iter {
            self.push(c);
        }
    }
}

impl FromIterator<String> for Commitments {
    fn from_iter<I: IntoIterator<Item = String>>(iter: I) -> Self {
        let mut all = Commitments::default();
        all.extend(iter);
        all
    }
}

impl From<Vec<String>> for Commitments {
    fn from(list: Vec<String>) -> Self {
        list.into_iter().collect()
    }
}

impl From<Commitments> for Vec<String> {
    fn from(all: Commitments) -> Self {
        all.to_strings()
    }
}

impl Memory {
    /// The vector with its model.
    pub fn embedding(&self) -> Embedding {
        Embedding::shared(self.model.clone(), Arc::clone(&self.vector))
    }

    /// What the index holds of it. Keywords extracted from the content are not indexed: they
    /// are the content's own words, and counting them twice skews BM25 (LoCoMo-10 Recall@10
    /// through `retrieve_memories`, tuning half: 75.0 % without them, 73.6 % with). Keywords
    /// and tags a client gave are searched like the content.
    fn document(&self) -> MemoryDocument {
        let given_keywords = if self.keywords_extracted {
            &[][..]
        } else {
            &self.metadata.keywords[..]
        };
        MemoryDocument {
            id: self.id.to_string(),
            owner: self.user_id.to_string(),
            content: self.content.to_string(),
            keywords: given_keywords
                .iter()
                .chain(&self.metadata.tags)
                .map(|k| k.to_string())
                .collect(),
            sector: self.primary_sector.to_string(),
            created_at_ms: self.created_ms,
            session: self.context_session_id.to_string(),
            position: self.stored_seq,
        }
    }
}

/// One owner's memories.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "SavedOwner")]
pub struct Owner {
    pub memories: OrdMap<Arc<str>, Arc<Memory>>,
    /// How many memories this owner ever stored (erased ones included): the next id's ordinal.
    pub stored: u64,
}

/// An [`Owner`] as a snapshot holds it, before its memories share their texts again.
#[derive(Deserialize)]
struct SavedOwner {
    memories: std::collections::BTreeMap<Arc<str>, Memory>,
    stored: u64,
}

impl From<SavedOwner> for Owner {
    /// The texts a fold shares (each memory's id with the map's key and with the waypoints
    /// naming it, the owner's name, the sectors' names) are read from a snapshot as copies:
    /// share them again, so a loaded state takes the memory the folded one did.
    fn from(saved: SavedOwner) -> Self {
        let ids: std::collections::BTreeSet<Arc<str>> = saved.memories.keys().cloned().collect();
        let user_id = saved
            .memories
            .values()
            .next()
            .map(|m| Arc::clone(&m.user_id));
        // Keywords, tags and sessions repeat across an owner's memories: one text each.
        let mut words: std::collections::HashSet<Arc<str>> = std::collections::HashSet::new();
        let mut shared = |text: &mut Arc<str>| match words.get(text) {
            Some(same) => *text = Arc::clone(same),
            None => {
                words.insert(Arc::clone(text));
            }
        };
        let memories = saved
            .memories
            .into_iter()
            .map(|(id, mut m)| {
                m.id = Arc::clone(&id);
                shared(&mut m.context_session_id);
                let metadata = Arc::make_mut(&mut m.metadata);
                metadata.keywords.iter_mut().for_each(&mut shared);
                metadata.tags.iter_mut().for_each(&mut shared);
                if let Some(user_id) = &user_id
                    && *m.user_id == **user_id
                {
                    m.user_id = Arc::clone(user_id);
                }
                m.primary_sector = sector_name(&m.primary_sector);
                m.sectors = m.sectors.iter().map(|n| sector_name(n)).collect();
                m.links = m
                    .links
                    .iter()
                    .map(|(other, w)| {
                        (
                            ids.get(other).map_or_else(|| Arc::clone(other), Arc::clone),
                            *w,
                        )
                    })
                    .collect();
                (id, Arc::new(m))
            })
            .collect();
        Self {
            memories,
            stored: saved.stored,
        }
    }
}

/// Every owner's memories, and what their folds changed of the memory index.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MemoryState {
    owners: HashMap<String, Arc<Owner>>,
    /// The seq and hash of the last event that changed what the index holds (a memory stored,
    /// its content or metadata superseded, or erased): the index's anchor
    /// ([`Source::anchor`]). A directory index committed at that event is reopened instead of
    /// rebuilt; the hash tells that event from another that took its seq after a crash (an
    /// index may be committed before its batch is synced).
    #[serde(default)]
    index_seq: u64,
    #[serde(default)]
    index_hash: String,
    /// What the folds changed of what the index holds since it was last fed: data for the
    /// index's keeper (`index::memory::DerivedIndex`), never applied here.
    #[serde(skip, default = "Journal::unknown")]
    journal: Journal,
}

/// Milliseconds since the Unix epoch of an RFC 3339 time (0 if it does not parse).
pub fn millis(at: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(at).map_or(0, |t| t.timestamp_millis())
}

impl MemoryState {
    /// The owner's memories, if they have any.
    pub fn owner(&self, user_id: &str) -> Option<&Owner> {
        self.owners.get(user_id).map(Arc::as_ref)
    }

    /// The owner's memory `id`, if it exists (soft-deleted ones included).
    pub fn memory(&self, user_id: &str, id: &str) -> Option<&Arc<Memory>> {
        self.owner(user_id)?.memories.get(id)
    }

    /// Notes that the memory index was fed every change folded so far (the writer, once
    /// `index::memory::DerivedIndex::feed` took them): the journal starts again from here.
    pub fn forget_changes(&mut self) {
        self.journal.from = Some((self.index_seq, Arc::from(self.index_hash.as_str())));
        self.journal.changes.clear();
    }

    /// Every memory, owner by owner, each owner's in the order they were stored: fed so, each
    /// takes its place in its session at the end (see `index::memory::episodes`).
    fn in_stored_order(&self) -> impl Iterator<Item = &Arc<Memory>> {
        self.owners.values().flat_map(|owner| {
            let mut memories: Vec<&Arc<Memory>> = owner.memories.values().collect();
            memories.sort_by_key(|m| m.stored_seq);
            memories
        })
    }

    /// Records `change` to what the index holds, made by `event`: the index's new anchor.
    fn journal(&mut self, event: &Event, change: IndexChange) {
        self.index_seq = event.seq;
        self.index_hash.clone_from(&event.hash);
        let hash = match self.journal.changes.last() {
            Some(last) if last.seq == event.seq => Arc::clone(&last.hash),
            _ => Arc::from(event.hash.as_str()),
        };
        self.journal.changes.push(Journaled {
            seq: event.seq,
            hash,
            change,
        });
    }

    fn upsert_owner(&mut self, user_id: &str) -> &mut Owner {
        Arc::make_mut(self.owners.entry(user_id.to_owned()).or_default())
    }

    pub fn apply(&mut self, event: &Event, texts: &TextLookup<'_>) {
        for fact in &event.facts {
            match fact {
                Fact::MemoryStored(f) => self.stored(event, f, texts),
                Fact::MemorySuperseded(f) => self.superseded(event, f, texts),
                Fact::MemoriesRetrieved(f) => {
                    let at_ms = millis(&event.recorded_at);
                    let at: Arc<str> = Arc::from(event.recorded_at.as_str());
                    let owner = self.upsert_owner(&f.user_id);
                    for access in &f.memories {
                        if let Some(m) = owner.memories.get_mut(access.memory_id.as_str()) {
                            let m = Arc::make_mut(m);
                            m.strength = access.strength;
                            m.strength_at_ms = at_ms;
                            m.last_accessed = at.clone();
                            m.last_accessed_ms = at_ms;
                        }
                    }
                }
                Fact::MemorySoftDeleted(f) => {
                    let at_ms = millis(&event.recorded_at);
                    let owner = self.upsert_owner(&f.user_id);
                    if let Some(m) = owner.memories.get_mut(f.memory_id.as_str()) {
                        let m = Arc::make_mut(m);
                        m.soft_deleted = true;
                        m.strength = 0.0;
                        m.strength_at_ms = at_ms;
                    }
                }
                Fact::MemoryErased(f) => self.erase(event, &f.user_id, &f.memory_id),
                Fact::TextsErased { commitments, .. } => {
                    // Any erasure of a memory's content (the operator's `erase` of a session,
                    // say) takes the memory with it: nothing can be shown or searched.
                    let gone: Vec<(Arc<str>, Arc<str>)> = self
                        .owners
                        .values()
                        .flat_map(|o| o.memories.values())
                        .filter(|m| commitments.contains(&m.content_ref.commitment))
                        .map(|m| (m.user_id.clone(), m.id.clone()))
                        .collect();
                    for (user, id) in gone {
                        self.erase(event, &user, &id);
                    }
                }
                _ => {}
            }
        }
    }

    fn stored(&mut self, event: &Event, f: &MemoryStored, texts: &TextLookup<'_>) {
        let (Some(content), Some((model, vector, vector_ref))) =
            (texts(&f.content), recorded_vector(event, texts))
        else {
            // Its text is gone already (erased before this fold): nothing to show or search.
            let owner = self.upsert_owner(&f.user_id);
            owner.stored += 1;
            return;
        };
        let mut metadata = metadata(texts, &f.metadata);
        let mut context_session_id: Arc<str> = Arc::from(f.context_session_id.as_str());
        let at_ms = millis(&event.recorded_at);
        let at: Arc<str> = Arc::from(event.recorded_at.as_str());
        let id: Arc<str> = Arc::from(f.memory_id.as_str());
        let (user_id, links) = {
            let owner = self.owner(&f.user_id);
            // The owner's name and the linked memories' ids: texts already held, shared.
            let user_id = owner
                .and_then(|o| o.memories.values().next())
                .map_or_else(|| Arc::from(f.user_id.as_str()), |m| Arc::clone(&m.user_id));
            let links: Links = f
                .links
                .iter()
                .map(|l| (shared_id(owner, &l.memory_id), l.weight))
                .collect();
            // The nearest memories are the likeliest to hold equal keywords, tags and session.
            let near: Vec<Arc<str>> = f
                .links
                .iter()
                .filter_map(|l| owner?.memories.get(l.memory_id.as_str()))
                .flat_map(|m| {
                    let m = m.as_ref();
                    m.metadata
                        .keywords
                        .iter()
                        .chain(&m.metadata.tags)
                        .cloned()
                        .chain([Arc::clone(&m.context_session_id)])
                })
                .collect();
            let shared = |text: &mut Arc<str>| {
                if let Some(same) = near.iter().find(|n| ***n == **text) {
                    *text = Arc::clone(same);
                }
            };
            metadata.keywords.iter_mut().for_each(shared);
            metadata.tags.iter_mut().for_each(shared);
            shared(&mut context_session_id);
            (user_id, links)
        };
        let memory = Memory {
            id: Arc::clone(&id),
            user_id,
            context_session_id,
            stored_seq: event.seq,
            created_at: at.clone(),
            created_ms: at_ms,
            version: 1,
            valid_from: at.clone(),
            primary_sector: sector_name(&f.primary_sector),
            sectors: sector_names(&f.sectors),
            content,
            content_ref: Arc::new(f.content.clone()),
            metadata: Arc::new(metadata),
            keywords_extracted: f.keywords_extracted,
            salience: f.salience,
            strength: f.strength,
            strength_at_ms: at_ms,
            last_accessed: at,
            last_accessed_ms: at_ms,
            links,
            soft_deleted: false,
            model,
            vector,
            commitments: Arc::new(
                call_texts(event)
                    .into_iter()
                    .chain([
                        f.content.commitment.clone(),
                        f.metadata.commitment.clone(),
                        vector_ref,
                    ])
                    .collect(),
            ),
        };
        self.link_back(&f.user_id, &id, &f.links);
        let memory = Arc::new(memory);
        let owner = self.upsert_owner(&f.user_id);
        owner.stored += 1;
        owner.memories.insert(id, Arc::clone(&memory));
        self.journal(event, IndexChange::Upsert(memory));
    }

    fn superseded(&mut self, event: &Event, f: &MemorySuperseded, texts: &TextLookup<'_>) {
        let Some(current) = self.memory(&f.user_id, &f.memory_id).cloned() else {
            return;
        };
        let mut m = (*current).clone();
        Arc::make_mut(&mut m.commitments).extend(call_texts(event));
        m.version = f.version;
        m.valid_from = Arc::from(event.recorded_at.as_str());
        let at_ms = millis(&event.recorded_at);
        let mut reindex = false;
        if let Some(content) = &f.content {
            let (Some(text), Some((model, vector, vector_ref))) =
                (texts(content), recorded_vector(event, texts))
            else {
                return;
            };
            m.content = text;
            m.content_ref = Arc::new(content.clone());
            m.model = model;
            m.vector = vector;
            let commitments = Arc::make_mut(&mut m.commitments);
            commitments.push(content.commitment.clone());
            commitments.push(vector_ref);
            reindex = true;
        }
        if let Some(metadata_ref) = &f.metadata {
            m.metadata = Arc::new(metadata(texts, metadata_ref));
            Arc::make_mut(&mut m.commitments).push(metadata_ref.commitment.clone());
            reindex = true;
        }
        if let Some(extracted) = f.keywords_extracted {
            m.keywords_extracted = extracted;
        }
        if let Some(sectors) = &f.sectors {
            m.sectors = sector_names(sectors);
        }
        if let Some(strength) = f.strength {
            m.strength = strength;
            m.strength_at_ms = at_ms;
            m.soft_deleted = strength == 0.0 && m.soft_deleted;
        }
        if let Some(salience) = f.salience {
            m.salience = salience;
        }
        if let Some(links) = &f.links {
            let old: Vec<Arc<str>> = m.links.keys().cloned().collect();
            self.unlink(&f.user_id, &f.memory_id, &old);
            let owner = self.owner(&f.user_id);
            m.links = links
                .iter()
                .map(|l| (shared_id(owner, &l.memory_id), l.weight))
                .collect();
            self.link_back(&f.user_id, &m.id, links);
        }
        let m = Arc::new(m);
        self.upsert_owner(&f.user_id)
            .memories
            .insert(Arc::clone(&m.id), Arc::clone(&m));
        if reindex {
            self.journal(event, IndexChange::Upsert(m));
        }
    }

    /// Adds the reverse of `links` (from `id`) to the linked memories.
    fn link_back(&mut self, user_id: &str, id: &Arc<str>, links: &[WaypointLink]) {
        let owner = self.upsert_owner(user_id);
        for link in links {
            if let Some(other) = owner.memories.get_mut(link.memory_id.as_str()) {
                Arc::make_mut(other)
                    .links
                    .insert(Arc::clone(id), link.weight);
            }
        }
    }

    /// Removes the links between `id` and `others`, both ways.
    fn unlink(&mut self, user_id: &str, id: &str, others: &[Arc<str>]) {
        let owner = self.upsert_owner(user_id);
        for other in others {
            if let Some(m) = owner.memories.get_mut(&**other) {
                Arc::make_mut(m).links.remove(id);
            }
        }
    }

    fn erase(&mut self, event: &Event, user_id: &str, id: &str) {
        let Some(memory) = self.memory(user_id, id).cloned() else {
            return;
        };
        let others: Vec<Arc<str>> = memory.links.keys().cloned().collect();
        self.unlink(user_id, id, &others);
        self.upsert_owner(user_id).memories.remove(id);
        self.journal(
            event,
            IndexChange::Erase {
                owner: Arc::clone(&memory.user_id),
                id: Arc::clone(&memory.id),
            },
        );
    }
}

/// `id` as the text `owner`'s memory of that id already holds (shared), or a new one.
fn shared_id(owner: Option<&Owner>, id: &str) -> Arc<str> {
    owner
        .and_then(|o| o.memories.get(id))
        .map_or_else(|| Arc::from(id), |m| Arc::clone(&m.id))
}

/// A sector's name: the five sectors' names are one shared text each (every memory names one
/// to five of them); any other name (none is accepted today) is its own.
fn sector_name(name: &str) -> Arc<str> {
    static NAMES: std::sync::LazyLock<[Arc<str>; 5]> = std::sync::LazyLock::new(|| {
        [
            "episodic",
            "semantic",
            "procedural",
            "emotional",
            "reflective",
        ]
        .map(Arc::from)
    });
    NAMES
        .iter()
        .find(|n| ***n == *name)
        .map_or_else(|| Arc::from(name), Arc::clone)
}

/// A memory's sectors, each name shared ([`sector_name`]).
fn sector_names(names: &[String]) -> Arc<[Arc<str>]> {
    names.iter().map(|n| sector_name(n)).collect()
}

/// The vector the event's call recorded, with its model and the commitment of its text.
fn recorded_vector(
    event: &Event,
    texts: &TextLookup<'_>,
) -> Option<(Arc<str>, Arc<[f32]>, String)> {
    let recorded = event.call.effects.as_ref()?.embedding.as_ref()?;
    let text = texts(&recorded.vector)?;
    let model: Arc<str> = Arc::from(recorded.model.as_str());
    let embedding = Embedding::from_base64(model.clone(), &text)?;
    Some((
        model,
        Arc::clone(embedding.vector_arc()),
        recorded.vector.commitment.clone(),
    ))
}

/// The commitments of the texts a call's recorded arguments hold.
fn call_texts(event: &Event) -> Vec<String> {
    crate::ledger::verify::text_refs(&event.call.arguments)
}

fn metadata(texts: &TextLookup<'_>, metadata: &TextRef) -> MemoryMetadata {
    texts(metadata)
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// A vector in a snapshot: [`Embedding::to_base64`]'s text (the model is beside it).
mod vector_text {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serializer};

    use crate::embed::Embedding;

    pub(super) fn serialize<S: Serializer>(vector: &Arc<[f32]>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&Embedding::shared(Arc::from(""), Arc::clone(vector)).to_base64())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<[f32]>, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Embedding::from_base64(Arc::from(""), &text)
            .map(|e| Arc::clone(e.vector_arc()))
            .ok_or_else(|| serde::de::Error::custom("a vector is not base64 of f32 components"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Links behave as the persistent map they replace, on either side of [`FEW_LINKS`], and
    /// save the same JSON object.
    #[test]
    fn links_act_and_save_as_a_map_of_any_size() {
        let mut links = Links::default();
        let mut map: OrdMap<Arc<str>, f64> = OrdMap::new();
        for i in [
            7u32, 3, 11, 3, 40, 0, 25, 19, 2, 33, 8, 14, 5, 29, 1, 36, 22, 9, 17, 12,
        ] {
            let (id, weight): (Arc<str>, f64) =
                (Arc::from(format!("m{i:02}")), f64::from(i) / 40.0);
            links.insert(id.clone(), weight);
            map.insert(id, weight);
            assert_eq!(links.len(), map.len());
            assert!(links.iter().eq(map.iter()), "{links:?}");
        }
        assert!(matches!(links, Links::Many(_)));
        assert_eq!(
            serde_json::to_string(&links).unwrap(),
            serde_json::to_string(&map).unwrap()
        );
        let back: Links = serde_json::from_str(&serde_json::to_string(&map).unwrap()).unwrap();
        assert!(back.iter().eq(map.iter()));
        for id in ["m03", "m40", "m99"] {
            links.remove(id);
            map.remove(id);
        }
        assert!(links.keys().eq(map.keys()));
        let few: Links = [(Arc::from("b"), 0.5), (Arc::from("a"), 0.7)]
            .into_iter()
            .collect();
        assert!(matches!(few, Links::Few(_)));
        assert_eq!(serde_json::to_string(&few).unwrap(), r#"{"a":0.7,"b":0.5}"#);
    }
}
