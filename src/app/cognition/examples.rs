//! Nearest labelled examples (since emotion/6 and bias/5): a text the rules cannot read —
//! a situation described without an emotion word or cue, a bias in words no pattern names — is
//! compared with the labelled sentences in `tests/cognition/` (the development sets and the
//! held-out sets after their first run), and the labels of the most similar ones vote.
//!
//! Similarity is the cosine of potion-base-2M vectors (model2vec static embeddings, MIT by
//! MinishLab, compiled into the binary: `crate::embed`). A static embedding is a table of
//! token vectors averaged, so this is a pure function of the text, like a lexicon lookup: the
//! decision needs no effect, and re-execution gives the same vote. The `k` nearest examples
//! vote, each by its similarity (negative similarities count zero); a label's share is its
//! votes over all votes.
//!
//! Pure. Must not know MCP or the ledger.

use std::sync::LazyLock;

use crate::embed::{Embedder, StaticEmbedder, cosine};

/// How many nearest examples vote. Chosen on the fifth and sixth held-out sets with each set
/// left out of the examples in turn (docs/cognition.md), before the seventh set was run.
pub const K: usize = 7;

/// The labelled sentences: `(label, sentence)`, from the tab-separated sets (the label first,
/// the sentence last; `#` lines are comments).
pub(super) fn labelled(sets: &[&'static str]) -> Vec<(&'static str, &'static str)> {
    sets.iter()
        .flat_map(|tsv| tsv.lines())
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| Some((l.split('\t').next()?, l.split('\t').next_back()?)))
        .collect()
}

/// The emotion examples: the development set, the held-out sets whose first run is over, and
/// sentences without an emotion (label `none`, two development sets since emotion/7), so that
/// a neutral text's vote can say so.
pub static EMOTION_EXAMPLES: LazyLock<Examples> = LazyLock::new(|| {
    let mut sets = EMOTION_SETS.to_vec();
    sets.extend(NEUTRAL_SETS);
    Examples::new(&labelled(&sets))
});

/// The development sentences without an emotion (label `none`) among the emotion examples.
pub(super) const NEUTRAL_SETS: [&str; 2] = [
    include_str!("../../../tests/cognition/emotion_neutral.tsv"),
    include_str!("../../../tests/cognition/emotion_neutral2.tsv"),
];

/// The labelled emotion sets among the examples: the development set, then the held-out sets
/// 1–6 in order (the evaluation leaves one out at a time).
pub(super) const EMOTION_SETS: [&str; 7] = [
    include_str!("../../../tests/cognition/emotion.tsv"),
    include_str!("../../../tests/cognition/emotion_heldout.tsv"),
    include_str!("../../../tests/cognition/emotion_heldout2.tsv"),
    include_str!("../../../tests/cognition/emotion_heldout3.tsv"),
    include_str!("../../../tests/cognition/emotion_heldout4.tsv"),
    include_str!("../../../tests/cognition/emotion_heldout5.tsv"),
    include_str!("../../../tests/cognition/emotion_heldout6.tsv"),
];

/// The bias examples, likewise, and reasoning without a bias (label `none`; the development
/// set's and `bias_none.tsv`, many of them sound reasoning on a bias's usual topic).
pub static BIAS_EXAMPLES: LazyLock<Examples> = LazyLock::new(|| {
    Examples::new(&labelled(&[
        include_str!("../../../tests/cognition/bias.tsv"),
        include_str!("../../../tests/cognition/bias_heldout.tsv"),
        include_str!("../../../tests/cognition/bias_heldout2.tsv"),
        include_str!("../../../tests/cognition/bias_heldout3.tsv"),
        include_str!("../../../tests/cognition/bias_heldout4.tsv"),
        include_str!("../../../tests/cognition/bias_heldout5.tsv"),
        include_str!("../../../tests/cognition/bias_heldout6.tsv"),
        include_str!("../../../tests/cognition/bias_none.tsv"),
    ]))
});

/// potion-base-2M, loaded once; `None` if the bytes in the binary do not load (then there is
/// no vote, and the answers say so).
static POTION: LazyLock<Option<StaticEmbedder>> =
    LazyLock::new(|| StaticEmbedder::potion_base_2m().ok());

/// A text's potion-base-2M vector (L2-normalised); `None` when the model did not load.
pub(super) fn vector(text: &str) -> Option<Vec<f32>> {
    POTION
        .as_ref()?
        .embed_one(text)
        .ok()
        .map(|e| e.into_vector())
}

/// The cosine of two texts' potion-base-2M vectors; `None` when the model did not load.
pub(super) fn similarity(a: &str, b: &str) -> Option<f64> {
    let (x, y) = (vector(a)?, vector(b)?);
    Some(f64::from(cosine(&x, &y)))
}

/// Labelled sentences and their vectors.
pub struct Examples {
    labels: Vec<&'static str>,
    sentences: Vec<&'static str>,
    vectors: Vec<Vec<f32>>,
}

/// What the nearest examples say of a text.
#[derive(Debug, Clone, PartialEq)]
pub struct Vote {
    /// Each label's share of the votes (0–1), highest first; labels without a vote left out.
    pub shares: Vec<(&'static str, f64)>,
    /// The most similar example of the winning label: its similarity and sentence.
    pub nearest: (f64, &'static str),
    /// The similarity of the most similar example labelled `none` (among all the examples,
    /// not only the `k` nearest); `None` when there is none.
    pub nearest_none: Option<f64>,
}

impl Vote {
    /// The winning label and its share.
    pub fn top(&self) -> Option<(&'static str, f64)> {
        self.shares.first().copied()
    }
}

impl Examples {
    pub(super) fn new(rows: &[(&'static str, &'static str)]) -> Self {
        let mut out = Self {
            labels: Vec::new(),
            sentences: Vec::new(),
            vectors: Vec::new(),
        };
        for (label, sentence) in rows {
            if let Some(v) = vector(sentence) {
                out.labels.push(label);
                out.sentences.push(sentence);
                out.vectors.push(v);
            }
        }
        out
    }

    /// How many examples there are.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are none (the embedding model did not load).
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The vote of the [`K`] examples nearest to `text` (an example identical to `text` is
    /// skipped, so the sets can be scored against themselves); `None` without examples or for
    /// a text with no vector.
    pub fn vote(&self, text: &str) -> Option<Vote> {
        self.vote_of(text, K)
    }

    /// The vote of the `k` nearest examples (the evaluation compares choices of `k`).
    pub(super) fn vote_of(&self, text: &str, k: usize) -> Option<Vote> {
        let v = vector(text)?;
        let mut near: Vec<(f64, usize)> = self
            .vectors
            .iter()
            .enumerate()
            .filter(|(i, _)| self.sentences[*i] != text)
            .map(|(i, e)| (f64::from(cosine(&v, e)), i))
            .collect();
        let nearest_none = near
            .iter()
            .filter(|(_, i)| self.labels[*i] == "none")
            .map(|(sim, _)| *sim)
            .reduce(f64::max);
        // Most similar first; equal similarities in the examples' order.
        near.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        near.truncate(k);
        let mut shares: Vec<(&'static str, f64)> = Vec::new();
        for (sim, i) in &near {
            let label = self.labels[*i];
            match shares.iter_mut().find(|(l, _)| *l == label) {
                Some((_, s)) => *s += sim.max(0.0),
                None => shares.push((label, sim.max(0.0))),
            }
        }
        let total: f64 = shares.iter().map(|(_, s)| s).sum();
        if total <= 0.0 {
            return None;
        }
        shares.iter_mut().for_each(|(_, s)| *s /= total);
        // Highest share first; a tie goes to the label with the nearer example (first seen).
        shares.sort_by(|a, b| b.1.total_cmp(&a.1));
        let winner = shares[0].0;
        let nearest = near
            .iter()
            .find(|(_, i)| self.labels[*i] == winner)
            .map_or((0.0, ""), |(sim, i)| (*sim, self.sentences[*i]));
        Some(Vote {
            shares,
            nearest,
            nearest_none,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_example_has_a_vector_and_a_known_label() {
        assert!(EMOTION_EXAMPLES.len() >= 200, "{}", EMOTION_EXAMPLES.len());
        assert!(BIAS_EXAMPLES.len() >= 120, "{}", BIAS_EXAMPLES.len());
        for l in &EMOTION_EXAMPLES.labels {
            assert!(
                *l == "none" || super::super::emotion::EMOTIONS.contains(l),
                "{l}"
            );
        }
        for l in &BIAS_EXAMPLES.labels {
            assert!(
                *l == "none" || super::super::bias::BIAS_TYPES.contains(l),
                "{l}"
            );
        }
    }

    #[test]
    fn a_vote_sums_to_one_and_names_its_nearest_example() {
        let vote = EMOTION_EXAMPLES
            .vote("Our dog died last night and the house is so quiet now.")
            .unwrap();
        let sum: f64 = vote.shares.iter().map(|(_, s)| s).sum();
        assert!((sum - 1.0).abs() < 1e-9);
        assert!(vote.shares.windows(2).all(|w| w[0].1 >= w[1].1));
        assert!(EMOTION_EXAMPLES.sentences.contains(&vote.nearest.1));
        assert_eq!(vote.top().map(|t| t.0), Some("sadness"));
    }
}
