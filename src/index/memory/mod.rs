//! The memory index: hybrid retrieval over memories (id, owner, content, keywords, sector,
//! creation time) for the memory family. Derived from the log and never the truth: the family's
//! events feed it ([`MemoryIndex::upsert`], [`MemoryIndex::delete`]) and a replay rebuilds it;
//! `derived` keeps it beside a server's state ([`DerivedIndex`]).
//!
//! Two halves, one answer: `text` (tantivy: BM25 under the owner's own statistics, the boolean
//! syntax of `query` — AND, OR, NOT, `+`, `-`, parentheses, phrases — read leniently, `<b>`
//! highlights, matched terms) and `vectors`
//! (exact cosine over each owner's unit vectors); `fusion` makes their scores one similarity in
//! [0, 1], deterministically. It knows no embedder: vectors arrive with their model id, taken as
//! effects by the caller, and a query vector of another model than the owner's is refused.
//!
//! **Architecture Invariant:** a query names one owner and sees only that owner's memories, in
//! its results and in its scores (BM25 statistics are the owner's; vectors are kept per owner).
//!
//! Deleting: [`MemoryIndex::delete`] + [`MemoryIndex::commit`] remove a memory from every result
//! at once, but tantivy only marks it deleted: its text stays in its segment's files (stored
//! document, terms, positions) until that segment is merged. [`MemoryIndex::purge_deleted`]
//! merges every segment into one and collects the old files, after which no deleted memory's
//! bytes are in the index's files (a hard delete runs it; a test searches the files for them).
//! What the file system does with freed blocks is beyond the index.

mod derived;
mod episodes;
mod fusion;
mod query;
mod statistics;
mod text;
mod vectors;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

pub use derived::{Change, DerivedIndex, Lent, Source};
pub use fusion::{CosineScaling, Fusion};
pub use vectors::{NearestHint, RowsToSearch};

use crate::embed::Embedding;
use episodes::Episodes;
use fusion::Signals;
use text::TextIndex;
use vectors::VectorStore;

/// At least this many candidates are taken from each signal before fusion.
pub const CANDIDATES: usize = 100;

/// Why the memory index could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// tantivy failed (I/O on a directory index, a corrupt index). An internal error to a client.
    #[error("full-text index: {0}")]
    FullText(#[from] tantivy::TantivyError),
    /// The index directory could not be opened.
    #[error("index directory: {0}")]
    Directory(String),
    /// The index failed while it was made current for a query, and was dropped: the next use
    /// rebuilds it from the state.
    #[error("the memory index failed and will be rebuilt: {0}")]
    Dropped(Box<IndexError>),
    /// The ledger is shutting down: the index was let go of for good.
    #[error("the memory index is closed: the ledger is shutting down")]
    Closed,
    /// A vector of another model (or dimension) than the owner's stored vectors. A tool error
    /// that names both models: the memories must be re-embedded before they can be compared.
    #[error("vector of {given} cannot be compared with stored vectors of {stored}")]
    ModelMismatch {
        /// The owner's model and dimension.
        stored: String,
        /// The offending vector's model and dimension.
        given: String,
    },
}

/// How text is analyzed, for indexing and queries alike. Part of a retrieval's provenance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextAnalysis {
    /// English Snowball stemming ("adopted" and "adopting" meet at "adopt").
    pub stem: bool,
    /// Drop Lucene's English stop words ("the", "of", "and", …).
    pub stop_words: bool,
}

impl Default for TextAnalysis {
    /// Stemming, no stop-word list: measured best for the fused default on the tuning half of
    /// LoCoMo-10 (docs/benchmarks.md). BM25's IDF already weighs common words down, and
    /// dropping them loses phrases such as "how long" or "at home".
    fn default() -> Self {
        Self {
            stem: true,
            stop_words: false,
        }
    }
}

/// How the index analyzes text: fixed when the index is built (a change means a rebuild).
/// Recorded with every retrieval's provenance, as is the query's [`Retrieval`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryIndexConfig {
    /// Text analysis.
    pub analysis: TextAnalysis,
}

/// One memory as the index takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryDocument {
    /// The memory id, unique per owner.
    pub id: String,
    /// The owner (`userId`).
    pub owner: String,
    /// The text searched, highlighted and returned.
    pub content: String,
    /// Keywords and tags, searched like the content.
    pub keywords: Vec<String>,
    /// The sector (`episodic`, `semantic`, …), returned with hits.
    pub sector: String,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// The session it was told in (`sessionId`), and its place there: memories of one owner
    /// and session are in `position` order, and each one's neighbours lend it context.
    pub session: String,
    /// Orders the session's memories (the seq of the event that stored the memory).
    pub position: u64,
}

/// Which signals a query uses, and how they are fused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Retrieval {
    /// BM25 and vectors, fused.
    Hybrid(Fusion),
    /// BM25 alone (similarity = BM25 / best BM25).
    Lexical,
    /// Vectors alone (similarity = clamped cosine).
    Vector,
}

impl Default for Retrieval {
    /// Hybrid with [`Fusion::DEFAULT`].
    fn default() -> Self {
        Retrieval::Hybrid(Fusion::DEFAULT)
    }
}

/// One query.
#[derive(Debug, Clone, Copy)]
pub struct MemoryQuery<'a> {
    /// Whose memories to search; no other owner's are seen.
    pub owner: &'a str,
    /// User text, in the syntax of [`read_query`] (read leniently: malformed parts repaired).
    pub text: &'a str,
    /// The text's vector, of the owner's model; without it, the vector signal is off.
    pub embedding: Option<&'a Embedding>,
    /// How many hits at most.
    pub limit: usize,
    /// Which signals to use.
    pub signals: Retrieval,
}

/// One retrieved memory.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryHit {
    /// The memory id.
    pub id: String,
    /// The fused similarity in [0, 1] (see [`Fusion`]).
    pub similarity: f64,
    /// Its BM25 score under the owner's statistics, when it was among the BM25 candidates.
    pub bm25: Option<f32>,
    /// Its cosine with the query vector, when both have vectors.
    pub cosine: Option<f32>,
    /// The best fragment of the content, matches in `<b>…</b>` (HTML-escaped otherwise); the
    /// start of the content when nothing matched.
    pub highlight: String,
    /// The query's terms, as indexed (lower-cased, stemmed), found in the memory; sorted.
    pub matched_terms: Vec<String>,
    /// The memory's content.
    pub content: String,
    /// Its keywords.
    pub keywords: Vec<String>,
    /// Its sector.
    pub sector: String,
    /// Its creation time (ms).
    pub created_at_ms: i64,
}

/// One ranked memory: its id and signals.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedMemory {
    pub id: String,
    /// The fused similarity in [0, 1].
    pub similarity: f64,
    /// Its BM25 score, when it was among the BM25 candidates.
    pub bm25: Option<f32>,
    /// Its cosine with the query vector, when both have vectors.
    pub cosine: Option<f32>,
}

/// A query's answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemoryResults {
    /// Best first; ties by id.
    pub hits: Vec<MemoryHit>,
    /// What the lenient reading of the text repaired (e.g. an unclosed quote), one sentence
    /// each.
    pub warnings: Vec<String>,
}

/// What the query syntax makes of a text, before any index is asked: the problems a lenient
/// reading repairs, and the query as repaired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryReading {
    /// What is malformed, one sentence each (empty for a well-formed query).
    pub problems: Vec<String>,
    /// The query as the lenient reading runs it, in the same syntax; `None` when no word or
    /// phrase is left.
    pub repaired: Option<String>,
}

/// Reads `text` in the full-text query syntax (`query`'s module doc: AND, OR, NOT, `+`, `-`,
/// parentheses, "phrases", `content:`/`keywords:`/`sector:`), without searching: for a caller
/// that refuses malformed queries rather than run them as repaired.
pub fn read_query(text: &str) -> QueryReading {
    let parsed = query::parse(text);
    QueryReading {
        problems: parsed.problems.iter().map(ToString::to_string).collect(),
        repaired: parsed.node.map(|n| n.to_string()),
    }
}

/// The commit payload of a directory index anchored at event `seq`, `hash`: the format, the
/// analysis (another analysis means other terms) and the event.
fn anchor_text(config: MemoryIndexConfig, seq: u64, hash: &str) -> String {
    let TextAnalysis { stem, stop_words } = config.analysis;
    format!("thinkledger-memory-index/1 stem={stem} stop_words={stop_words} seq={seq} hash={hash}")
}

/// A query's candidates: each memory once, in the order first met, with its signals.
#[derive(Default)]
struct Candidates {
    ids: Vec<Arc<str>>,
    signals: Vec<Signals>,
    at: HashMap<Arc<str>, usize>,
}

impl Candidates {
    /// The place of `id`, added (with no signals yet) if new.
    fn slot(&mut self, id: Arc<str>) -> usize {
        match self.at.entry(id) {
            std::collections::hash_map::Entry::Occupied(e) => *e.get(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let at = self.ids.len();
                self.ids.push(Arc::clone(e.key()));
                self.signals.push(Signals::default());
                e.insert(at);
                at
            }
        }
    }
}

/// The memory index (see the module doc).
pub struct MemoryIndex {
    text: TextIndex,
    vectors: VectorStore,
    episodes: Episodes,
    config: MemoryIndexConfig,
}

impl std::fmt::Debug for MemoryIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryIndex")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl MemoryIndex {
    /// An index held in memory.
    pub fn in_ram(config: MemoryIndexConfig) -> Result<Self, IndexError> {
        Ok(Self::with_text(TextIndex::in_ram(config.analysis)?, config))
    }

    /// An index whose full-text half lives in `dir` (created if empty). The vectors are in
    /// memory: they are fed again, with the documents, when the index is rebuilt from the log.
    pub fn in_dir(dir: &Path, config: MemoryIndexConfig) -> Result<Self, IndexError> {
        Ok(Self::with_text(
            TextIndex::in_dir(dir, config.analysis)?,
            config,
        ))
    }

    fn with_text(text: TextIndex, config: MemoryIndexConfig) -> Self {
        Self {
            text,
            vectors: VectorStore::default(),
            episodes: Episodes::default(),
            config,
        }
    }

    /// The configuration (for provenance).
    pub fn config(&self) -> MemoryIndexConfig {
        self.config
    }

    /// The index whose full-text half is in `dir`, when its last commit was anchored at the
    /// event `seq`, `hash` with this configuration ([`MemoryIndex::anchor_at`]): its documents
    /// are kept, its statistics counted from them; the vectors and sessions, which live in
    /// memory, are then fed with [`MemoryIndex::adopt`]. `None` when `dir` holds no such index (the caller
    /// rebuilds).
    pub fn reopen(
        dir: &Path,
        config: MemoryIndexConfig,
        seq: u64,
        hash: &str,
    ) -> Result<Option<Self>, IndexError> {
        Ok(
            TextIndex::reopen(dir, config.analysis, &anchor_text(config, seq, hash))?
                .map(|text| Self::with_text(text, config)),
        )
    }

    /// Records that the index holds the memories as of the event `seq`, `hash` (the last
    /// event that changed them): every later commit of a directory index writes it with the
    /// documents.
    pub fn anchor_at(&mut self, seq: u64, hash: &str) {
        let anchor = anchor_text(self.config, seq, hash);
        self.text.set_payload(anchor);
    }

    /// Live documents of the full-text half (committed ones).
    pub fn live_documents(&self) -> u64 {
        self.text.live_documents()
    }

    /// Stages a memory (replacing one of the same owner and id) with its vector, if any. The
    /// vector counts at once ([`MemoryIndex::nearest`]); the text after [`MemoryIndex::commit`].
    /// A vector of another model than the owner's is refused (the text is staged regardless).
    pub fn upsert(
        &mut self,
        doc: &MemoryDocument,
        embedding: Option<&Embedding>,
    ) -> Result<(), IndexError> {
        self.text.upsert(doc)?;
        self.adopt(doc, embedding)
    }

    /// [`MemoryIndex::upsert`] of a memory whose text the index already holds (it was
    /// reopened): its vector and its place in its session only.
    pub fn adopt(
        &mut self,
        doc: &MemoryDocument,
        embedding: Option<&Embedding>,
    ) -> Result<(), IndexError> {
        self.vectors.remove(&doc.owner, &doc.id);
        let stored = match embedding {
            Some(e) => self.vectors.upsert(&doc.owner, &doc.id, e),
            None => Ok(()),
        };
        // The id's text is the vectors' when they hold it.
        let id = self
            .vectors
            .id_text(&doc.owner, &doc.id)
            .unwrap_or_else(|| doc.id.as_str().into());
        self.episodes
            .upsert(&doc.owner, id, &doc.session, doc.position);
        stored
    }

    /// Stages the removal of `owner`'s memory `id` (its vector goes at once).
    pub fn delete(&mut self, owner: &str, id: &str) {
        self.text.delete(owner, id);
        self.episodes.remove(owner, id);
        self.vectors.remove(owner, id);
    }

    /// Makes staged text changes visible (and durable, for a directory index).
    pub fn commit(&mut self) -> Result<(), IndexError> {
        self.text.commit()
    }

    /// The owner's `k` memories whose vectors are nearest `embedding` (cosine, best first, ties
    /// by id). Sees every upsert at once, committed or not.
    pub fn nearest(
        &self,
        owner: &str,
        embedding: &Embedding,
        k: usize,
    ) -> Result<Vec<(String, f32)>, IndexError> {
        self.vectors.nearest(owner, embedding, k)
    }

    /// The owner's vectors, to search for a [`NearestHint`] after this index's lock is
    /// released (`None`: the owner has none); fails for a query of another model.
    pub fn rows_for(
        &self,
        owner: &str,
        embedding: &Embedding,
    ) -> Result<Option<RowsToSearch>, IndexError> {
        self.vectors.rows_for(owner, embedding)
    }

    /// [`MemoryIndex::nearest`], the same answer, comparing only `hint`'s best and the vectors
    /// added since it was found when it still holds.
    pub fn nearest_after(
        &self,
        owner: &str,
        embedding: &Embedding,
        k: usize,
        hint: Option<&NearestHint>,
    ) -> Result<Vec<(String, f32)>, IndexError> {
        self.vectors.nearest_after(owner, embedding, k, hint)
    }

    /// How many of the owner's committed memories match `text` (the syntax of [`read_query`],
    /// read leniently).
    pub fn count_matches(&self, owner: &str, text: &str) -> Result<u64, IndexError> {
        let searcher = self.text.searcher();
        let parsed = self.text.parse(text);
        self.text.count(&searcher, owner, &parsed)
    }

    /// Commits, then rewrites the full-text index without its deleted memories (see the module
    /// doc). Costs a rewrite of the whole index: run it for hard deletes, not after each call.
    pub fn purge_deleted(&mut self) -> Result<(), IndexError> {
        self.commit()?;
        self.text.purge_deleted()
    }

    /// The owner's best memories for `query`: ids and signals only, nothing read back from
    /// the stored documents (for callers that hold the memories themselves).
    pub fn rank(&self, query: &MemoryQuery<'_>) -> Result<Vec<RankedMemory>, IndexError> {
        let searcher = self.text.searcher();
        let stats = self.text.owner_statistics(&searcher, query.owner);
        let parsed = self.text.parse(query.text);
        self.rank_with(&searcher, &stats, &parsed, query)
    }

    fn rank_with(
        &self,
        searcher: &tantivy::Searcher,
        stats: &text::OwnerStatistics<'_>,
        parsed: &text::ParsedQuery,
        query: &MemoryQuery<'_>,
    ) -> Result<Vec<RankedMemory>, IndexError> {
        let use_text = query.signals != Retrieval::Vector;
        let vector_query = query
            .embedding
            .filter(|_| query.signals != Retrieval::Lexical);
        let owner_has_text = stats.docs > 0;
        if query.limit == 0 || (!owner_has_text && vector_query.is_none()) {
            return Ok(Vec::new());
        }
        let pool = query.limit.max(CANDIDATES);

        let mut candidates = Candidates::default();
        if use_text && owner_has_text {
            let hits = self
                .text
                .search(searcher, stats, query.owner, parsed, pool)?;
            for (rank, hit) in hits.into_iter().enumerate() {
                let at = candidates.slot(hit.id);
                candidates.signals[at].bm25 = Some((hit.score, rank + 1));
            }
        }
        if let Some(e) = vector_query {
            let nearest = self.vectors.nearest_shared(query.owner, e, pool, None)?;
            for (rank, (id, cos)) in nearest.into_iter().enumerate() {
                let at = candidates.slot(id);
                let c = &mut candidates.signals[at];
                c.cosine = Some(cos);
                c.cosine_rank = Some(rank + 1);
            }
        }
        let context = match query.signals {
            Retrieval::Hybrid(fusion) => fusion.context(),
            _ => 0.0,
        };
        // With context, the hits' neighbours (ring 1) are candidates too, and ring 1's own
        // neighbours (ring 2) are scored only to lend them theirs. Candidates `..ranked` are
        // ranked; each memory's neighbours are looked up once.
        let mut ranked = candidates.ids.len();
        let mut neighbours: Vec<[Option<usize>; 2]> = Vec::new();
        if context > 0.0 {
            let sessions = self.episodes.of(query.owner);
            let mut ring = 0..candidates.ids.len();
            for round in 0..2 {
                for i in ring.clone() {
                    let n = sessions
                        .neighbours(&candidates.ids[i])
                        .map(|x| x.map(|x| candidates.slot(x)));
                    neighbours.push(n);
                }
                if round == 0 {
                    ranked = candidates.ids.len();
                }
                ring = ring.end..candidates.ids.len();
            }
            // The lenders' own neighbours are not looked up.
            neighbours.resize(candidates.ids.len(), [None, None]);
        }
        let Candidates {
            ids, mut signals, ..
        } = candidates;
        if let Some(e) = vector_query {
            let missing: Vec<usize> = (0..ids.len())
                .filter(|&i| signals[i].cosine.is_none())
                .collect();
            let names: Vec<&str> = missing.iter().map(|&i| &*ids[i]).collect();
            let cosines = self.vectors.cosines(query.owner, &names, e)?;
            for (i, cosine) in missing.into_iter().zip(cosines) {
                signals[i].cosine = cosine;
            }
        }
        let fusion = match query.signals {
            Retrieval::Hybrid(fusion) => fusion,
            Retrieval::Lexical => Fusion::Weighted {
                text_weight: 1.0,
                vector_weight: 0.0,
                cosine: CosineScaling::Clamped,
                context: 0.0,
            },
            Retrieval::Vector => Fusion::Weighted {
                text_weight: 0.0,
                vector_weight: 1.0,
                cosine: CosineScaling::Clamped,
                context: 0.0,
            },
        };
        let mut similarity = fusion::fuse(fusion, &signals);
        if context > 0.0 {
            similarity = fusion::with_neighbours(&similarity, &neighbours, context);
        }
        let mut order: Vec<usize> = (0..ranked).collect();
        order.sort_by(|&a, &b| {
            similarity[b]
                .total_cmp(&similarity[a])
                .then_with(|| ids[a].cmp(&ids[b]))
        });
        order.truncate(query.limit);
        Ok(order
            .into_iter()
            .map(|i| RankedMemory {
                id: ids[i].to_string(),
                similarity: similarity[i],
                bm25: signals[i].bm25.map(|(s, _)| s),
                cosine: signals[i].cosine,
            })
            .collect())
    }

    /// For each of the owner's memories given (content, keywords), its highlight for `text`
    /// (matches in `<b>…</b>`, fragments chosen by the owner's statistics) and the query terms
    /// it matched: the decoration of a page of results, from memories the caller holds.
    pub fn explain(
        &self,
        owner: &str,
        text: &str,
        memories: &[(&str, &[String])],
    ) -> Result<Vec<(String, Vec<String>)>, IndexError> {
        let searcher = self.text.searcher();
        let stats = self.text.owner_statistics(&searcher, owner);
        let parsed = self.text.parse(text);
        let highlighter = self.text.highlighter(&stats, &parsed)?;
        Ok(memories
            .iter()
            .map(|(content, keywords)| {
                let stored = text::StoredMemory {
                    content: (*content).to_owned(),
                    keywords: keywords.to_vec(),
                    sector: String::new(),
                    created_at_ms: 0,
                };
                (
                    text::highlight(&highlighter, content),
                    self.text.matched_terms(&parsed, &stored),
                )
            })
            .collect())
    }

    /// The owner's best memories for `query`, with highlights, matched terms and the stored
    /// memory.
    pub fn search(&self, query: &MemoryQuery<'_>) -> Result<MemoryResults, IndexError> {
        let searcher = self.text.searcher();
        let stats = self.text.owner_statistics(&searcher, query.owner);
        if stats.docs == 0 || query.limit == 0 {
            return Ok(MemoryResults::default());
        }
        let parsed = self.text.parse(query.text);
        let ranked = self.rank_with(&searcher, &stats, &parsed, query)?;
        let highlighter = self.text.highlighter(&stats, &parsed)?;
        let mut hits = Vec::with_capacity(ranked.len());
        for r in ranked {
            let Some(doc) = self.text.fetch(&searcher, query.owner, &r.id)? else {
                continue;
            };
            let stored = self.text.stored(&doc);
            let highlight = text::highlight(&highlighter, &stored.content);
            hits.push(MemoryHit {
                id: r.id,
                similarity: r.similarity,
                bm25: r.bm25,
                cosine: r.cosine,
                highlight,
                matched_terms: self.text.matched_terms(&parsed, &stored),
                content: stored.content,
                keywords: stored.keywords,
                sector: stored.sector,
                created_at_ms: stored.created_at_ms,
            });
        }
        Ok(MemoryResults {
            hits,
            warnings: parsed.warnings(),
        })
    }
}
