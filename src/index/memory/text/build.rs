//! The boolean syntax of [`super::super::query`] built into tantivy's queries. A word or phrase becomes a term query (a phrase query when the analyzer gives it
//! several tokens) on the content and the keywords, one `Should` clause each, as tantivy's own
//! query parser built them, so plain queries score as they did under it. Juxtaposed clauses
//! are one `BooleanQuery` (`Should`; `+` `Must`; `-` `MustNot`), `AND` one of `Must` and
//! `MustNot` clauses, `OR` one of `Should` clauses; a clause of negations alone gets a `Must`
//! clause matching every document, so `a AND NOT b`, `a OR NOT b` and `NOT b` mean what they
//! say (tantivy's parser reads `a AND NOT b` as `+a +(-b)`, and there a clause of negations
//! alone matches nothing). That "every document" scores 0 in a query with a word outside any
//! negation, so only words rank; in a query without one it scores each match 1. The owner
//! clause is put around the whole query (`search`, `count`), so "every document" is every
//! document of the owner. Words under a negation are neither matched terms nor highlighted.
//!
//! Must not know: how hits are scored or shown.

use std::collections::BTreeSet;

use tantivy::Term;
use tantivy::query::{
    AllQuery, BooleanQuery, ConstScoreQuery, EmptyQuery, Occur, PhraseQuery, Query, TermQuery,
};
use tantivy::schema::IndexRecordOption;

use super::super::query::{self, FieldName, Leaf, Node, Sign};
use super::{ParsedQuery, TextIndex};

impl TextIndex {
    /// Parses user text in the syntax of [`super::super::query`] (AND, OR, NOT, +, -, parentheses,
    /// "phrases"), leniently: what is malformed is repaired and reported, never refused here.
    pub(in crate::index::memory) fn parse(&self, text: &str) -> ParsedQuery {
        let parsed = query::parse(text);
        let mut terms = BTreeSet::new();
        let built = parsed.node.as_ref().and_then(|node| {
            let universe_score = if has_positive(node, true) { 0.0 } else { 1.0 };
            self.build(node, true, universe_score, &mut terms)
        });
        ParsedQuery {
            query: built.unwrap_or_else(|| Box::new(EmptyQuery)),
            positive_terms: terms.into_iter().collect(),
            problems: parsed.problems,
        }
    }

    /// The tantivy query of `node` (see the module doc); `None` when nothing of it is left
    /// after analysis (a word of punctuation or stop words alone), and its parent goes without
    /// it. `positive`: whether `node` stands under an even number of negations (its terms are
    /// then ones a hit may have matched).
    fn build(
        &self,
        node: &Node,
        positive: bool,
        universe_score: f32,
        terms: &mut BTreeSet<Term>,
    ) -> Option<Box<dyn Query>> {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        match node {
            Node::Leaf(leaf) => return self.leaf(leaf, positive, terms),
            Node::Group(items) => {
                for (sign, child) in items {
                    let (occur, negated) = match sign {
                        Sign::Plain => (Occur::Should, false),
                        Sign::Required => (Occur::Must, false),
                        Sign::Negated => (Occur::MustNot, true),
                    };
                    if let Some(q) = self.build(child, positive != negated, universe_score, terms) {
                        clauses.push((occur, q));
                    }
                }
            }
            Node::And(operands) => {
                for (negated, child) in operands {
                    let occur = if *negated {
                        Occur::MustNot
                    } else {
                        Occur::Must
                    };
                    if let Some(q) = self.build(child, positive != *negated, universe_score, terms)
                    {
                        clauses.push((occur, q));
                    }
                }
            }
            Node::Or(groups) => {
                for child in groups {
                    if let Some(q) = self.build(child, positive, universe_score, terms) {
                        clauses.push((Occur::Should, q));
                    }
                }
            }
        }
        if clauses.iter().all(|(o, _)| *o == Occur::MustNot) {
            if clauses.is_empty() {
                return None;
            }
            let every: Box<dyn Query> =
                Box::new(ConstScoreQuery::new(Box::new(AllQuery), universe_score));
            clauses.insert(0, (Occur::Must, every));
        }
        if clauses.len() == 1 {
            return clauses.pop().map(|(_, q)| q);
        }
        Some(Box::new(BooleanQuery::new(clauses)))
    }

    /// A word or phrase: a term query (a phrase query for several tokens) per field it is
    /// looked for in, one `Should` clause each.
    fn leaf(
        &self,
        leaf: &Leaf,
        positive: bool,
        terms: &mut BTreeSet<Term>,
    ) -> Option<Box<dyn Query>> {
        let f = self.fields;
        let fields = match leaf.field {
            None => vec![f.content, f.keywords],
            Some(FieldName::Content) => vec![f.content],
            Some(FieldName::Keywords) => vec![f.keywords],
            Some(FieldName::Sector) => {
                // Stored raw: the text exactly.
                let term = Term::from_field_text(f.sector, &leaf.text);
                if positive {
                    terms.insert(term.clone());
                }
                return Some(Box::new(TermQuery::new(term, IndexRecordOption::Basic)));
            }
        };
        let mut tokens: Vec<(usize, String)> = Vec::new();
        let mut analyzer = self.analyzer.clone();
        let mut stream = analyzer.token_stream(&leaf.text);
        while stream.advance() {
            let t = stream.token();
            tokens.push((t.position, t.text.clone()));
        }
        if tokens.is_empty() {
            return None;
        }
        let mut per_field: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for field in fields {
            let field_terms: Vec<(usize, Term)> = tokens
                .iter()
                .map(|(at, text)| (*at, Term::from_field_text(field, text)))
                .collect();
            if positive {
                terms.extend(field_terms.iter().map(|(_, t)| t.clone()));
            }
            let q: Box<dyn Query> = match &field_terms[..] {
                [(_, one)] => Box::new(TermQuery::new(one.clone(), IndexRecordOption::WithFreqs)),
                _ => Box::new(PhraseQuery::new_with_offset(field_terms)),
            };
            per_field.push((Occur::Should, q));
        }
        if per_field.len() == 1 {
            return per_field.pop().map(|(_, q)| q);
        }
        Some(Box::new(BooleanQuery::new(per_field)))
    }
}

/// Whether `node` has a word or phrase under an even number of negations (`positive`: whether
/// `node` itself stands so).
fn has_positive(node: &Node, positive: bool) -> bool {
    match node {
        Node::Leaf(_) => positive,
        Node::Group(items) => items
            .iter()
            .any(|(sign, child)| has_positive(child, positive != (*sign == Sign::Negated))),
        Node::And(operands) => operands
            .iter()
            .any(|(negated, child)| has_positive(child, positive != *negated)),
        Node::Or(groups) => groups.iter().any(|child| has_positive(child, positive)),
    }
}
