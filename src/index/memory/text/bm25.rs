//! [`OwnerStatistics`]: the BM25 statistics tantivy scores with, over one owner's live memories
//! alone (see the module above): document and token counts kept by `statistics`, terms of other
//! fields counted over the postings.
//!
//! Must not know: how a query is built or a hit shown.

use tantivy::collector::Count;
use tantivy::query::{Bm25StatisticsProvider, BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{Searcher, Term};

use super::super::statistics::{OwnerTerms, TermField};
use super::{Fields, TextIndex};

impl TextIndex {
    /// The owner's BM25 statistics over the current searcher (kept by `statistics`, whose
    /// counts are the committed documents', which the searcher shows).
    pub(in crate::index::memory) fn owner_statistics<'a>(
        &'a self,
        searcher: &'a Searcher,
        owner: &str,
    ) -> OwnerStatistics<'a> {
        OwnerStatistics {
            searcher,
            owner: Term::from_field_text(self.fields.owner, owner),
            docs: self.statistics.owner(owner).map_or(0, OwnerTerms::docs),
            terms: self.statistics.owner(owner),
            fields: self.fields,
        }
    }
}

/// BM25 statistics over one owner's live memories (see the module doc).
pub(in crate::index::memory) struct OwnerStatistics<'a> {
    searcher: &'a Searcher,
    owner: Term,
    /// The owner's live memories.
    pub(in crate::index::memory) docs: u64,
    /// The owner's counts, when it has any memory here.
    terms: Option<&'a OwnerTerms>,
    fields: Fields,
}

impl OwnerStatistics<'_> {
    fn analyzed(&self, field: Field) -> Option<TermField> {
        if field == self.fields.content {
            Some(TermField::Content)
        } else if field == self.fields.keywords {
            Some(TermField::Keywords)
        } else {
            None
        }
    }

    /// How many of the owner's live memories hold `term`, counted over the postings: for the
    /// terms of fields the statistics do not count, and to check those they do.
    pub(in crate::index::memory) fn counted_doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
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
        Ok(u64::try_from(n).unwrap_or(u64::MAX))
    }
}

impl Bm25StatisticsProvider for OwnerStatistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        match (self.analyzed(field), self.terms) {
            (Some(f), Some(terms)) => Ok(terms.tokens(f)),
            (Some(_), None) => Ok(0),
            // Raw fields (owner, key) are matched exactly and scored 0 or not at all.
            (None, _) => Ok(self.docs),
        }
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.docs)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        match (self.analyzed(term.field()), term.value().as_str()) {
            (Some(field), Some(text)) => Ok(self.terms.map_or(0, |t| t.doc_freq(field, text))),
            _ => self.counted_doc_freq(term),
        }
    }
}
