//! Each owner's BM25 statistics and the names of the index's documents, kept beside tantivy as
//! memories are staged and committed, so a query reads them instead of counting them.
//!
//! BM25 needs, for the querying owner alone (see `text`): how many live memories it has, how
//! many tokens their content and keywords hold, and in how many of them each query term occurs.
//! Counting those over tantivy's postings costs time linear in the owner's memories on every
//! query. Here each memory's analyzed terms (numbered per owner) are kept when it is staged, and
//! the counts move when tantivy's commit makes the change visible: [`Statistics::commit`] is
//! called right after it, so the counts are always those of the documents a fresh searcher
//! sees — the same numbers the postings would give, whatever the segment layout, deleted
//! documents not yet merged away, or other owners' memories (a test compares the two).
//!
//! A document is named by its `ordinal` (a fast field): a number given when it is staged and
//! never reused, which maps back to its memory id here, so a hit is named without reading
//! the stored document.
//!
//! Owns: the counts and names. Must not know tantivy's types (the caller analyzes text).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Which analyzed field a term belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TermField {
    /// The memory's content.
    Content,
    /// Its keywords and tags.
    Keywords,
}

/// A field's analysis for the statistics: its token count and its distinct terms.
#[derive(Debug, Default)]
pub(super) struct Analyzed {
    /// Tokens the analyzer made (repeats counted).
    pub(super) tokens: u64,
    /// The distinct terms, as indexed.
    pub(super) terms: BTreeSet<String>,
}

/// One memory's share of its owner's statistics.
#[derive(Debug, Clone)]
struct DocTerms {
    /// Its document's `ordinal`.
    ordinal: u64,
    content_tokens: u64,
    keyword_tokens: u64,
    /// The distinct content terms, by their number in the owner's table.
    content: Box<[u32]>,
    /// The distinct keyword terms, likewise.
    keywords: Box<[u32]>,
}

/// The committed counts of one owner.
#[derive(Debug, Default)]
struct Counts {
    docs: u64,
    content_tokens: u64,
    keyword_tokens: u64,
    /// Documents holding each content term, by term number.
    content_df: Vec<u64>,
    /// Documents holding each keyword term, by term number.
    keyword_df: Vec<u64>,
}

fn step(df: &mut Vec<u64>, terms: &[u32], add: bool) {
    for &t in terms {
        let Ok(t) = usize::try_from(t) else { continue };
        if df.len() <= t {
            df.resize(t + 1, 0);
        }
        df[t] = if add {
            df[t].saturating_add(1)
        } else {
            df[t].saturating_sub(1)
        };
    }
}

impl Counts {
    fn apply(&mut self, doc: &DocTerms, add: bool) {
        let (docs, content, keywords) = (1, doc.content_tokens, doc.keyword_tokens);
        if add {
            self.docs = self.docs.saturating_add(docs);
            self.content_tokens = self.content_tokens.saturating_add(content);
            self.keyword_tokens = self.keyword_tokens.saturating_add(keywords);
        } else {
            self.docs = self.docs.saturating_sub(docs);
            self.content_tokens = self.content_tokens.saturating_sub(content);
            self.keyword_tokens = self.keyword_tokens.saturating_sub(keywords);
        }
        step(&mut self.content_df, &doc.content, add);
        step(&mut self.keyword_df, &doc.keywords, add);
    }
}

/// One owner's term tables, staged memories and committed counts.
#[derive(Debug, Default)]
pub(super) struct OwnerTerms {
    /// Content term → its number.
    content_terms: HashMap<String, u32>,
    /// Keyword term → its number.
    keyword_terms: HashMap<String, u32>,
    /// The owner's memories as staged (committed or not), by id.
    docs: HashMap<Arc<str>, DocTerms>,
    committed: Counts,
}

fn number(table: &mut HashMap<String, u32>, terms: BTreeSet<String>) -> Box<[u32]> {
    terms
        .into_iter()
        .map(|term| {
            let next = u32::try_from(table.len()).unwrap_or(u32::MAX);
            *table.entry(term).or_insert(next)
        })
        .collect()
}

impl OwnerTerms {
    /// The owner's committed live memories.
    pub(super) fn docs(&self) -> u64 {
        self.committed.docs
    }

    /// Tokens in the field over the owner's committed live memories.
    pub(super) fn tokens(&self, field: TermField) -> u64 {
        match field {
            TermField::Content => self.committed.content_tokens,
            TermField::Keywords => self.committed.keyword_tokens,
        }
    }

    /// How many of the owner's committed live memories hold `term` in `field`.
    pub(super) fn doc_freq(&self, field: TermField, term: &str) -> u64 {
        let (table, df) = match field {
            TermField::Content => (&self.content_terms, &self.committed.content_df),
            TermField::Keywords => (&self.keyword_terms, &self.committed.keyword_df),
        };
        table
            .get(term)
            .and_then(|&t| usize::try_from(t).ok())
            .and_then(|t| df.get(t).copied())
            .unwrap_or(0)
    }
}

/// Every owner's statistics and every document's name (see the module doc).
#[derive(Debug, Default)]
pub(super) struct Statistics {
    owners: HashMap<String, OwnerTerms>,
    /// Ordinal → memory id, for every committed or staged document.
    names: HashMap<u64, Arc<str>>,
    next_ordinal: u64,
    /// Changes since the last commit, in order: (owner, memory, added or removed).
    staged: Vec<(String, DocTerms, bool)>,
}

impl Statistics {
    /// The owner's tables, if it ever had a memory here.
    pub(super) fn owner(&self, owner: &str) -> Option<&OwnerTerms> {
        self.owners.get(owner)
    }

    /// Whether no owner but `owner` has a committed live memory.
    pub(super) fn only_owner(&self, owner: &str) -> bool {
        self.owners
            .iter()
            .all(|(name, terms)| name == owner || terms.docs() == 0)
    }

    /// The memory id of the document with this ordinal.
    pub(super) fn name(&self, ordinal: u64) -> Option<&Arc<str>> {
        self.names.get(&ordinal)
    }

    /// Whether `owner`'s memory `id` is staged (committed or not).
    pub(super) fn holds(&self, owner: &str, id: &str) -> bool {
        self.owners
            .get(owner)
            .is_some_and(|o| o.docs.contains_key(id))
    }

    /// Stages `owner`'s memory `id` (replacing the one staged under that id, if any) and
    /// returns the ordinal its document must carry.
    pub(super) fn stage_upsert(
        &mut self,
        owner: &str,
        id: &str,
        content: Analyzed,
        keywords: Analyzed,
    ) -> u64 {
        self.stage_delete(owner, id);
        let ordinal = self.next_ordinal;
        self.next_ordinal = self.next_ordinal.saturating_add(1);
        let doc = self.insert(owner, id, ordinal, content, keywords);
        self.staged.push((owner.to_owned(), doc, true));
        ordinal
    }

    /// Stages the removal of `owner`'s memory `id`; true if one was staged.
    pub(super) fn stage_delete(&mut self, owner: &str, id: &str) -> bool {
        let Some(doc) = self.owners.get_mut(owner).and_then(|o| o.docs.remove(id)) else {
            return false;
        };
        self.staged.push((owner.to_owned(), doc, false));
        true
    }

    /// Takes a document already committed in the index (an index reopened from its directory).
    pub(super) fn restore(
        &mut self,
        owner: &str,
        id: &str,
        ordinal: u64,
        content: Analyzed,
        keywords: Analyzed,
    ) {
        self.next_ordinal = self.next_ordinal.max(ordinal.saturating_add(1));
        let doc = self.insert(owner, id, ordinal, content, keywords);
        if let Some(o) = self.owners.get_mut(owner) {
            o.committed.apply(&doc, true);
        }
    }

    fn insert(
        &mut self,
        owner: &str,
        id: &str,
        ordinal: u64,
        content: Analyzed,
        keywords: Analyzed,
    ) -> DocTerms {
        let o = self.owners.entry(owner.to_owned()).or_default();
        let doc = DocTerms {
            ordinal,
            content_tokens: content.tokens,
            keyword_tokens: keywords.tokens,
            content: number(&mut o.content_terms, content.terms),
            keywords: number(&mut o.keyword_terms, keywords.terms),
        };
        let name: Arc<str> = Arc::from(id);
        o.docs.insert(Arc::clone(&name), doc.clone());
        self.names.insert(ordinal, name);
        doc
    }

    /// Counts every staged change: call right after tantivy's commit made them visible.
    pub(super) fn commit(&mut self) {
        for (owner, doc, added) in std::mem::take(&mut self.staged) {
            if let Some(o) = self.owners.get_mut(&owner) {
                o.committed.apply(&doc, added);
            }
            if !added {
                self.names.remove(&doc.ordinal);
            }
        }
    }
}
