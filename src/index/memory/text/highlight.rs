//! Showing a hit: the highlighter over the owner's memories, the best fragment with the
//! query's matches in `<b>…</b>`, and the query's terms a memory matched.
//!
//! Must not know: how hits are found or scored.

use std::collections::{BTreeMap, BTreeSet};

use tantivy::Term;
use tantivy::query::Bm25StatisticsProvider;
use tantivy::snippet::SnippetGenerator;

use super::super::IndexError;
use super::{OwnerStatistics, ParsedQuery, SNIPPET_CHARS, StoredMemory, TextIndex};

impl TextIndex {
    /// The highlighter for `query` over the owner's memories: fragments chosen by the owner's
    /// document frequencies, matches wrapped in `<b>…</b>`.
    pub(in crate::index::memory) fn highlighter(
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
    /// The terms of the query's words and phrases outside any negation, sorted.
    pub(in crate::index::memory) fn query_terms(&self, query: &ParsedQuery) -> Vec<Term> {
        query.positive_terms.clone()
    }

    /// The query's terms (as indexed: lower-cased, stemmed) that occur in the memory's content
    /// or keywords, sorted.
    pub(in crate::index::memory) fn matched_terms(
        &self,
        query: &ParsedQuery,
        memory: &StoredMemory,
    ) -> Vec<String> {
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

/// The best fragment of `content` with the query's matches in `<b>…</b>`; when nothing matched,
/// the start of the content (HTML-escaped like a fragment), so every hit shows something.
pub(in crate::index::memory) fn highlight(generator: &SnippetGenerator, content: &str) -> String {
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
