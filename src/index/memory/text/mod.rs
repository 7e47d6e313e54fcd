//! The full-text half of the memory index: a tantivy index with one document per memory, English
//! analysis (lower-casing, ASCII folding, Snowball stemming and, optionally, stop words;
//! stemming and stop words switchable for measurement), BM25 scoring whose statistics are the
//! querying owner's alone, the boolean syntax of [`super::query`] built into tantivy's
//! queries, `<b>` highlights and matched terms.
//!
//! BM25 statistics per owner: tantivy's default statistics (document count, average length,
//! document frequencies) span the whole index, so one owner's scores would depend on other
//! owners' memories, on deleted documents not yet merged away and on the segment layout.
//! [`OwnerStatistics`] counts only the owner's live documents instead, which makes a score a
//! function of that owner's memories alone: owner isolation extends to the numbers, and a
//! replay that rebuilds the index reproduces the scores whatever merges ran. Those counts are
//! kept as memories are staged and committed (`statistics`), so a query looks them up; terms of
//! fields other than the content and keywords (a query may name any field) are counted over the
//! postings instead.
//!
//! A hit is named by its document's `ordinal` fast field, which `statistics` maps to the memory
//! id, instead of by reading its stored document.
//!
//! The query language is built into tantivy's queries by `build`; the owner's BM25 statistics
//! are `bm25`'s; highlights and matched terms `highlight`'s.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use tantivy::collector::{Count, TopDocs};
use tantivy::directory::MmapDirectory;
use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TantivyDocument,
    TextFieldIndexing, TextOptions, Value,
};
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
    StopWordFilter, TextAnalyzer,
};
use tantivy::{DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, Term};

use super::query::Problem;
use super::statistics::{Analyzed, Statistics};
use super::{IndexError, MemoryDocument, TextAnalysis};

mod bm25;
mod build;
mod highlight;

pub(super) use bm25::OwnerStatistics;
pub(super) use highlight::highlight;

/// The name the analyzer is registered under in the index's tokenizer manager.
const ANALYZER: &str = "memory_en";
/// Writer heap: tantivy's per-thread minimum is 15 MB; one indexing thread is plenty for
/// memories written one call at a time.
const WRITER_HEAP_BYTES: usize = 20_000_000;
/// Separates owner and id in the unique key (a control character no id or owner contains
/// unnoticed: keys are compared whole).
const KEY_SEPARATOR: char = '\u{1f}';
/// Longest highlighted fragment, in characters.
const SNIPPET_CHARS: usize = 200;

/// The schema's fields.
#[derive(Clone, Copy)]
struct Fields {
    /// `owner \u{1f} id`: the unique key deletes and upserts address.
    key: Field,
    /// The memory id, stored to name a hit.
    id: Field,
    /// The owner (`userId`), indexed raw: every query is filtered on it; stored, so an index
    /// reopened from its directory can count its statistics again.
    owner: Field,
    /// The memory text: analyzed, positions kept (phrases), stored (snippets).
    content: Field,
    /// Keywords and tags, one value each, analyzed like the content.
    keywords: Field,
    /// The sector, stored.
    sector: Field,
    /// Creation time (ms since the epoch), stored.
    created: Field,
    /// The document's number in `statistics`, which names its memory.
    ordinal: Field,
}

/// The name of the `ordinal` fast field.
const ORDINAL: &str = "ordinal";

/// One lexical hit: the memory id and its BM25 score under the owner's statistics.
#[derive(Debug, Clone)]
pub(super) struct LexicalHit {
    pub(super) id: Arc<str>,
    pub(super) score: f32,
}

/// A memory read back from the index, with what the query matched in it.
#[derive(Debug, Clone)]
pub(super) struct StoredMemory {
    pub(super) content: String,
    pub(super) keywords: Vec<String>,
    pub(super) sector: String,
    pub(super) created_at_ms: i64,
}

/// A parsed user query, with what the lenient reading had to repair.
pub(super) struct ParsedQuery {
    query: Box<dyn Query>,
    /// The terms of the words and phrases outside any negation: what a hit's matched terms
    /// and highlights are made of.
    positive_terms: Vec<Term>,
    /// What was malformed (the query runs as repaired).
    pub(super) problems: Vec<Problem>,
}

impl ParsedQuery {
    /// The problems as sentences.
    pub(super) fn warnings(&self) -> Vec<String> {
        self.problems.iter().map(ToString::to_string).collect()
    }
}

/// The tantivy side of the memory index.
pub(super) struct TextIndex {
    index: Index,
    fields: Fields,
    writer: IndexWriter<TantivyDocument>,
    reader: IndexReader,
    /// The analyzer, kept to count tokens and to find matched terms in a hit.
    analyzer: TextAnalyzer,
    /// Each owner's BM25 statistics and the documents' names.
    statistics: Statistics,
    /// Written with every commit (tantivy keeps it through merges): what the index holds, for
    /// [`TextIndex::reopen`] to compare.
    payload: Option<String>,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let analyzed = TextOptions::default()
        .set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        )
        .set_stored();
    let fields = Fields {
        key: b.add_text_field("key", STRING),
        id: b.add_text_field("id", STRING | STORED),
        owner: b.add_text_field("owner", STRING | STORED),
        content: b.add_text_field("content", analyzed.clone()),
        keywords: b.add_text_field("keywords", analyzed),
        sector: b.add_text_field("sector", STRING | STORED),
        created: b.add_i64_field("created", STORED | INDEXED),
        ordinal: b.add_u64_field(ORDINAL, FAST),
    };
    (b.build(), fields)
}

fn analyzer(analysis: TextAnalysis) -> TextAnalyzer {
    let base = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter);
    match (analysis.stop_words, analysis.stem) {
        (true, true) => base
            .filter(StopWordFilter::new(Language::English).unwrap_or_else(english_stop_words))
            .filter(Stemmer::new(Language::English))
            .build(),
        (true, false) => base
            .filter(StopWordFilter::new(Language::English).unwrap_or_else(english_stop_words))
            .build(),
        (false, true) => base.filter(Stemmer::new(Language::English)).build(),
        (false, false) => base.build(),
    }
}

/// Lucene's English stop words, used only if tantivy was built without its lists.
fn english_stop_words() -> StopWordFilter {
    StopWordFilter::remove(
        [
            "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into",
            "is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then",
            "there", "these", "they", "this", "to", "was", "will", "with",
        ]
        .map(str::to_owned),
    )
}

fn key_of(owner: &str, id: &str) -> String {
    format!("{owner}{KEY_SEPARATOR}{id}")
}

impl TextIndex {
    /// An index held in memory.
    pub(super) fn in_ram(analysis: TextAnalysis) -> Result<Self, IndexError> {
        let (schema, fields) = schema();
        Self::with_index(Index::create_in_ram(schema), fields, analysis)
    }

    /// An index in `dir` (created if empty, reopened if it holds one of this schema).
    pub(super) fn in_dir(dir: &Path, analysis: TextAnalysis) -> Result<Self, IndexError> {
        let (schema, fields) = schema();
        let directory =
            MmapDirectory::open(dir).map_err(|e| IndexError::Directory(e.to_string()))?;
        let index = Index::open_or_create(directory, schema)?;
        Self::with_index(index, fields, analysis)
    }

    /// The index in `dir` when it holds one of this schema whose last commit carried
    /// `payload`; `None` when it holds none, another schema's, or another payload (its files are
    /// left alone). The statistics are counted again from its documents.
    pub(super) fn reopen(
        dir: &Path,
        analysis: TextAnalysis,
        payload: &str,
    ) -> Result<Option<Self>, IndexError> {
        let (schema, fields) = schema();
        let directory =
            MmapDirectory::open(dir).map_err(|e| IndexError::Directory(e.to_string()))?;
        if !Index::exists(&directory).map_err(|e| IndexError::Directory(e.to_string()))? {
            return Ok(None);
        }
        let index = Index::open(directory)?;
        if index.schema() != schema || index.load_metas()?.payload.as_deref() != Some(payload) {
            return Ok(None);
        }
        let mut text = Self::with_index(index, fields, analysis)?;
        text.payload = Some(payload.to_owned());
        Ok(Some(text))
    }

    /// Sets the payload every later commit writes.
    pub(super) fn set_payload(&mut self, payload: String) {
        self.payload = Some(payload);
    }

    /// Live documents, as the current searcher sees them.
    pub(super) fn live_documents(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    fn with_index(
        index: Index,
        fields: Fields,
        analysis: TextAnalysis,
    ) -> Result<Self, IndexError> {
        let analyzer = analyzer(analysis);
        index.tokenizers().register(ANALYZER, analyzer.clone());
        let writer = index.writer_with_num_threads(1, WRITER_HEAP_BYTES)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            // Stored documents are read in order (the statistics of a reopened index) or one
            // at a time (`fetch`); tantivy's default keeps 100 decompressed blocks per segment
            // (13.8 MB at 100,000 memories) for a searcher's lifetime.
            .doc_store_cache_num_blocks(1)
            .try_into()?;
        let mut text = Self {
            index,
            fields,
            writer,
            reader,
            analyzer,
            statistics: Statistics::default(),
            payload: None,
        };
        text.restore_statistics()?;
        Ok(text)
    }

    /// Counts the statistics of the documents an index reopened from its directory holds.
    fn restore_statistics(&mut self) -> Result<(), IndexError> {
        let searcher = self.reader.searcher();
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let Ok(ord) = u32::try_from(ord) else {
                continue;
            };
            let ordinals = segment.fast_fields().u64(ORDINAL)?;
            for doc_id in segment.doc_ids_alive() {
                let doc: TantivyDocument = searcher.doc(DocAddress::new(ord, doc_id))?;
                let text = |field| {
                    doc.get_first(field)
                        .and_then(|v| v.as_str())
                        .unwrap_or_default()
                        .to_owned()
                };
                let stored = self.stored(&doc);
                let keywords: Vec<&str> = stored.keywords.iter().map(String::as_str).collect();
                let (content, keywords) =
                    (self.analyze(&[&stored.content]), self.analyze(&keywords));
                self.statistics.restore(
                    &text(self.fields.owner),
                    &text(self.fields.id),
                    ordinals.first(doc_id).unwrap_or(0),
                    content,
                    keywords,
                );
            }
        }
        Ok(())
    }

    /// The analyzer's tokens of `texts`: how many, and which.
    fn analyze(&self, texts: &[&str]) -> Analyzed {
        let mut analyzer = self.analyzer.clone();
        let mut analyzed = Analyzed::default();
        for text in texts {
            let mut stream = analyzer.token_stream(text);
            while stream.advance() {
                analyzed.tokens += 1;
                let token = &stream.token().text;
                if !analyzed.terms.contains(token) {
                    analyzed.terms.insert(token.clone());
                }
            }
        }
        analyzed
    }

    /// Stages `doc`, replacing any memory of the same owner and id. Visible after [`Self::commit`].
    pub(super) fn upsert(&mut self, doc: &MemoryDocument) -> Result<(), IndexError> {
        let f = self.fields;
        let key = key_of(&doc.owner, &doc.id);
        if self.statistics.holds(&doc.owner, &doc.id) {
            self.writer.delete_term(Term::from_field_text(f.key, &key));
        }
        let keywords: Vec<&str> = doc.keywords.iter().map(String::as_str).collect();
        let ordinal = self.statistics.stage_upsert(
            &doc.owner,
            &doc.id,
            self.analyze(&[&doc.content]),
            self.analyze(&keywords),
        );
        let mut d = TantivyDocument::default();
        d.add_text(f.key, &key);
        d.add_text(f.id, &doc.id);
        d.add_text(f.owner, &doc.owner);
        d.add_text(f.content, &doc.content);
        for k in &doc.keywords {
            d.add_text(f.keywords, k);
        }
        d.add_text(f.sector, &doc.sector);
        d.add_i64(f.created, doc.created_at_ms);
        d.add_u64(f.ordinal, ordinal);
        self.writer.add_document(d)?;
        Ok(())
    }

    /// Stages the removal of one memory. Visible after [`Self::commit`]; its bytes stay in their
    /// segment's files until that segment is merged ([`Self::purge_deleted`]).
    pub(super) fn delete(&mut self, owner: &str, id: &str) {
        if self.statistics.stage_delete(owner, id) {
            self.writer
                .delete_term(Term::from_field_text(self.fields.key, &key_of(owner, id)));
        }
    }

    /// Makes staged changes durable (for a directory) and visible to searches.
    pub(super) fn commit(&mut self) -> Result<(), IndexError> {
        let mut prepared = self.writer.prepare_commit()?;
        if let Some(payload) = &self.payload {
            prepared.set_payload(payload);
        }
        prepared.commit()?;
        self.reader.reload()?;
        self.statistics.commit();
        Ok(())
    }

    /// Rewrites every segment into one, dropping deleted documents, then removes the files no
    /// longer used: afterwards no deleted memory's bytes remain in the index's files.
    pub(super) fn purge_deleted(&mut self) -> Result<(), IndexError> {
        self.commit()?;
        let segments = self.index.searchable_segment_ids()?;
        if !segments.is_empty() {
            self.writer.merge(&segments).wait()?;
        }
        self.writer.garbage_collect_files().wait()?;
        self.reader.reload()?;
        Ok(())
    }

    pub(super) fn searcher(&self) -> Searcher {
        self.reader.searcher()
    }

    fn owner_query(&self, owner: &str) -> TermQuery {
        TermQuery::new(
            Term::from_field_text(self.fields.owner, owner),
            IndexRecordOption::Basic,
        )
    }

    /// The owner's `limit` best memories for `query` by BM25 (owner statistics), best first,
    /// ties by id.
    pub(super) fn search(
        &self,
        searcher: &Searcher,
        stats: &OwnerStatistics<'_>,
        owner: &str,
        query: &ParsedQuery,
        limit: usize,
    ) -> Result<Vec<LexicalHit>, IndexError> {
        if stats.docs == 0 || limit == 0 {
            return Ok(Vec::new());
        }
        let top_docs = TopDocs::with_limit(limit).order_by_score();
        let top = if stats.docs == searcher.num_docs() && self.statistics.only_owner(owner) {
            // Every live document is the owner's (the searcher's count and the statistics
            // agree): the owner clause would only cost an intersection with a posting list as
            // long as the index.
            searcher.search_with_statistics_provider(query.query.as_ref(), &top_docs, stats)?
        } else {
            let scoped = BooleanQuery::new(vec![
                (
                    Occur::Must,
                    Box::new(ConstScoreQuery::new(Box::new(self.owner_query(owner)), 0.0)),
                ),
                (Occur::Must, query.query.box_clone()),
            ]);
            searcher.search_with_statistics_provider(&scoped, &top_docs, stats)?
        };
        let mut hits = Vec::with_capacity(top.len());
        let mut ordinals: BTreeMap<u32, tantivy::columnar::Column<u64>> = BTreeMap::new();
        for (score, address) in top {
            let column = match ordinals.entry(address.segment_ord) {
                std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::btree_map::Entry::Vacant(e) => e.insert(
                    searcher
                        .segment_reader(address.segment_ord)
                        .fast_fields()
                        .u64(ORDINAL)?,
                ),
            };
            // Every committed document has its name; one without is no memory to return.
            if let Some(name) = column
                .first(address.doc_id)
                .and_then(|ordinal| self.statistics.name(ordinal))
            {
                hits.push(LexicalHit {
                    id: Arc::clone(name),
                    score,
                });
            }
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
        Ok(hits)
    }

    /// How many of the owner's memories match `query`.
    pub(super) fn count(
        &self,
        searcher: &Searcher,
        owner: &str,
        query: &ParsedQuery,
    ) -> Result<u64, IndexError> {
        let scoped = BooleanQuery::new(vec![
            (
                Occur::Must,
                Box::new(self.owner_query(owner)) as Box<dyn Query>,
            ),
            (Occur::Must, query.query.box_clone()),
        ]);
        Ok(searcher.search(&scoped, &Count)? as u64)
    }

    /// The stored memory `id` of `owner`, if present and live.
    pub(super) fn fetch(
        &self,
        searcher: &Searcher,
        owner: &str,
        id: &str,
    ) -> Result<Option<TantivyDocument>, IndexError> {
        let q = TermQuery::new(
            Term::from_field_text(self.fields.key, &key_of(owner, id)),
            IndexRecordOption::Basic,
        );
        let found = searcher.search(&q, &TopDocs::with_limit(1).order_by_score())?;
        match found.first() {
            Some((_, address)) => Ok(Some(searcher.doc(*address)?)),
            None => Ok(None),
        }
    }

    pub(super) fn stored(&self, doc: &TantivyDocument) -> StoredMemory {
        let f = self.fields;
        let text = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        StoredMemory {
            content: text(f.content),
            keywords: doc
                .get_all(f.keywords)
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            sector: text(f.sector),
            created_at_ms: doc
                .get_first(f.created)
                .and_then(|v| v.as_i64())
                .unwrap_or_default(),
        }
    }

    /// The owner's live memories, counted over the postings (to check the kept count).
    #[cfg(test)]
    pub(super) fn counted_docs(&self, searcher: &Searcher, owner: &str) -> u64 {
        let n = searcher
            .search(&self.owner_query(owner), &Count)
            .unwrap_or(0);
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    /// `text` read by tantivy's own query parser (the reference for queries it reads right).
    #[cfg(test)]
    pub(super) fn parse_with_tantivy(&self, text: &str) -> ParsedQuery {
        let parser = tantivy::query::QueryParser::for_index(
            &self.index,
            vec![self.fields.content, self.fields.keywords],
        );
        let (query, _) = parser.parse_query_lenient(text);
        let mut ours = self.parse(text);
        ours.query = query;
        ours
    }
}
