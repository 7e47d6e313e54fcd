//! The full-text half of the memory index: a tantivy index with one document per memory, English
//! analysis (lower-casing, ASCII folding, Snowball stemming and, optionally, stop words;
//! stemming and stop words switchable for measurement), BM25 scoring whose statistics are the querying owner's alone, the query
//! parser's boolean syntax read leniently, `<b>` highlights and matched terms.
//!
//! BM25 statistics per owner: tantivy's default statistics (document count, average length,
//! document frequencies) span the whole index, so one owner's scores would depend on other
//! owners' memories, on deleted documents not yet merged away and on the segment layout.
//! [`OwnerStatistics`] counts only the owner's live documents instead, which makes a score a
//! function of that owner's memories alone: owner isolation extends to the numbers, and a
//! replay that rebuilds the index reproduces the scores whatever merges ran.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use tantivy::collector::{Count, DocSetCollector, TopDocs};
use tantivy::directory::MmapDirectory;
use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, QueryParser, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TantivyDocument,
    TextFieldIndexing, TextOptions, Value,
};
use tantivy::snippet::SnippetGenerator;
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
    StopWordFilter, TextAnalyzer,
};
use tantivy::{
    DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, Term,
    query::Bm25StatisticsProvider,
};

use super::{IndexError, MemoryDocument, TextAnalysis};

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
    /// The owner (`userId`), indexed raw: every query is filtered on it.
    owner: Field,
    /// The memory text: analyzed, positions kept (phrases), stored (snippets).
    content: Field,
    /// Keywords and tags, one value each, analyzed like the content.
    keywords: Field,
    /// The sector, stored.
    sector: Field,
    /// Creation time (ms since the epoch), stored.
    created: Field,
    /// Tokens the analyzer made of `content`: the per-owner average length for BM25.
    content_tokens: Field,
    /// Tokens the analyzer made of `keywords`.
    keyword_tokens: Field,
}

/// One lexical hit: the memory id and its BM25 score under the owner's statistics.
#[derive(Debug, Clone)]
pub(super) struct LexicalHit {
    pub(super) id: String,
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

/// A parsed user query, with the parts of it the lenient parser had to drop.
pub(super) struct ParsedQuery {
    query: Box<dyn Query>,
    /// Lenient-parse complaints (the query still runs without the offending parts).
    pub(super) warnings: Vec<String>,
}

/// The tantivy side of the memory index.
pub(super) struct TextIndex {
    index: Index,
    fields: Fields,
    writer: IndexWriter<TantivyDocument>,
    reader: IndexReader,
    /// The analyzer, kept to count tokens and to find matched terms in a hit.
    analyzer: TextAnalyzer,
    parser: QueryParser,
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
        owner: b.add_text_field("owner", STRING),
        content: b.add_text_field("content", analyzed.clone()),
        keywords: b.add_text_field("keywords", analyzed),
        sector: b.add_text_field("sector", STRING | STORED),
        created: b.add_i64_field("created", STORED | INDEXED),
        content_tokens: b.add_u64_field("content_tokens", FAST),
        keyword_tokens: b.add_u64_field("keyword_tokens", FAST),
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
            .try_into()?;
        let parser = QueryParser::for_index(&index, vec![fields.content, fields.keywords]);
        Ok(Self {
            index,
            fields,
            writer,
            reader,
            analyzer,
            parser,
        })
    }

    fn count_tokens(&self, texts: &[&str]) -> u64 {
        let mut analyzer = self.analyzer.clone();
        let mut n = 0u64;
        for text in texts {
            let mut stream = analyzer.token_stream(text);
            while stream.advance() {
                n += 1;
            }
        }
        n
    }

    /// Stages `doc`, replacing any memory of the same owner and id. Visible after [`Self::commit`].
    pub(super) fn upsert(&mut self, doc: &MemoryDocument) -> Result<(), IndexError> {
        let f = self.fields;
        let key = key_of(&doc.owner, &doc.id);
        self.writer.delete_term(Term::from_field_text(f.key, &key));
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
        d.add_u64(f.content_tokens, self.count_tokens(&[&doc.content]));
        let keywords: Vec<&str> = doc.keywords.iter().map(String::as_str).collect();
        d.add_u64(f.keyword_tokens, self.count_tokens(&keywords));
        self.writer.add_document(d)?;
        Ok(())
    }

    /// Stages the removal of one memory. Visible after [`Self::commit`]; its bytes stay in their
    /// segment's files until that segment is merged ([`Self::purge_deleted`]).
    pub(super) fn delete(&mut self, owner: &str, id: &str) {
        self.writer
            .delete_term(Term::from_field_text(self.fields.key, &key_of(owner, id)));
    }

    /// Makes staged changes durable (for a directory) and visible to searches.
    pub(super) fn commit(&mut self) -> Result<(), IndexError> {
        self.writer.commit()?;
        self.reader.reload()?;
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

    /// Parses user text with the query parser's syntax (AND, OR, NOT, +, -, "phrases"), leniently:
    /// what cannot be parsed is dropped and reported, never refused.
    pub(super) fn parse(&self, text: &str) -> ParsedQuery {
        let (query, errors) = self.parser.parse_query_lenient(text);
        ParsedQuery {
            query,
            warnings: errors.into_iter().map(|e| e.to_string()).collect(),
        }
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

    /// The owner's BM25 statistics over the current searcher.
    pub(super) fn owner_statistics<'a>(
        &self,
        searcher: &'a Searcher,
        owner: &str,
    ) -> Result<OwnerStatistics<'a>, IndexError> {
        let docs = searcher.search(&self.owner_query(owner), &DocSetCollector)?;
        let mut content_tokens = 0u64;
        let mut keyword_tokens = 0u64;
        let mut by_segment: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for a in &docs {
            by_segment.entry(a.segment_ord).or_default().push(a.doc_id);
        }
        for (segment, ids) in by_segment {
            let fast = searcher.segment_reader(segment).fast_fields();
            let c = fast.u64("content_tokens")?;
            let k = fast.u64("keyword_tokens")?;
            for id in ids {
                content_tokens += c.first(id).unwrap_or(0);
                keyword_tokens += k.first(id).unwrap_or(0);
            }
        }
        Ok(OwnerStatistics {
            searcher,
            owner: Term::from_field_text(self.fields.owner, owner),
            docs: docs.len() as u64,
            content_tokens,
            keyword_tokens,
            fields: self.fields,
        })
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
        let scoped = BooleanQuery::new(vec![
            (
                Occur::Must,
                Box::new(ConstScoreQuery::new(Box::new(self.owner_query(owner)), 0.0)),
            ),
            (Occur::Must, query.query.box_clone()),
        ]);
        let top = searcher.search_with_statistics_provider(
            &scoped,
            &TopDocs::with_limit(limit).order_by_score(),
            stats,
        )?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            hits.push(LexicalHit {
                id: self.stored_id(searcher, address)?,
                score,
            });
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

    fn stored_id(&self, searcher: &Searcher, address: DocAddress) -> Result<String, IndexError> {
        let doc: TantivyDocument = searcher.doc(address)?;
        Ok(doc
            .get_first(self.fields.id)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned())
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

    /// The highlighter for `query` over the owner's memories: fragments chosen by the owner's
    /// document frequencies, matches wrapped in `<b>…</b>`.
    pub(super) fn highlighter(
        &self,
        stats: &OwnerStatistics<'_>,
        query: &ParsedQuery,
    ) -> Result<SnippetGenerator, IndexError> {
        let mut terms_text = BTreeMap::new();
        for term in self.query_terms(query) {
            if term.field() != self.fields.content {
                continue;
            }
            let df = stats.doc_freq(&term)?;
            if let (Some(text), true) = (term.value().as_str(), df > 0) {
                // The weight tantivy's own generator gives a term (rarer terms win fragments).
                #[allow(clippy::cast_precision_loss)]
                let weight = 1.0 / (1.0 + df as f32);
                terms_text.insert(text.to_owned(), weight);
            }
        }
        Ok(SnippetGenerator::new(
            terms_text,
            self.analyzer.clone(),
            self.fields.content,
            SNIPPET_CHARS,
        ))
    }

    fn query_terms(&self, query: &ParsedQuery) -> Vec<Term> {
        let mut terms = BTreeSet::new();
        query.query.query_terms(&mut |term, _| {
            terms.insert(term.clone());
        });
        terms.into_iter().collect()
    }

    /// The query's terms (as indexed: lower-cased, stemmed) that occur in the memory's content
    /// or keywords, sorted.
    pub(super) fn matched_terms(&self, query: &ParsedQuery, memory: &StoredMemory) -> Vec<String> {
        let wanted: BTreeSet<String> = self
            .query_terms(query)
            .into_iter()
            .filter(|t| t.field() == self.fields.content || t.field() == self.fields.keywords)
            .filter_map(|t| t.value().as_str().map(str::to_owned))
            .collect();
        if wanted.is_empty() {
            return Vec::new();
        }
        let mut analyzer = self.analyzer.clone();
        let mut found = BTreeSet::new();
        let texts = std::iter::once(memory.content.as_str())
            .chain(memory.keywords.iter().map(String::as_str));
        for text in texts {
            let mut stream = analyzer.token_stream(text);
            while stream.advance() {
                let token = &stream.token().text;
                if wanted.contains(token) {
                    found.insert(token.clone());
                }
            }
        }
        found.into_iter().collect()
    }
}

/// BM25 statistics over one owner's live memories (see the module doc).
pub(super) struct OwnerStatistics<'a> {
    searcher: &'a Searcher,
    owner: Term,
    /// The owner's live memories.
    pub(super) docs: u64,
    content_tokens: u64,
    keyword_tokens: u64,
    fields: Fields,
}

impl Bm25StatisticsProvider for OwnerStatistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        if field == self.fields.content {
            Ok(self.content_tokens)
        } else if field == self.fields.keywords {
            Ok(self.keyword_tokens)
        } else {
            // Raw fields (owner, key) are matched exactly and scored 0 or not at all.
            Ok(self.docs)
        }
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.docs)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let q = BooleanQuery::new(vec![
            (
                Occur::Must,
                Box::new(TermQuery::new(self.owner.clone(), IndexRecordOption::Basic))
                    as Box<dyn Query>,
            ),
            (
                Occur::Must,
                Box::new(TermQuery::new(term.clone(), IndexRecordOption::Basic)),
            ),
        ]);
        let n = self.searcher.search(&q, &Count)?;
        Ok(n as u64)
    }
}

/// The best fragment of `content` with the query's matches in `<b>…</b>`; when nothing matched,
/// the start of the content (HTML-escaped like a fragment), so every hit shows something.
pub(super) fn highlight(generator: &SnippetGenerator, content: &str) -> String {
    let snippet = generator.snippet(content);
    if !snippet.is_empty() && !snippet.highlighted().is_empty() {
        return snippet.to_html();
    }
    let start: String = content.chars().take(SNIPPET_CHARS).collect();
    escape_html(&start)
}

fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            _ => out.push(c),
        }
    }
    out
}
