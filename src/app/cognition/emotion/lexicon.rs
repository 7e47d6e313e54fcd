//! `detect_emotion`'s word lists: the vendored WordNet-Affect subset and thinkledger's
//! additions, each emotion's vocabulary size, and a word's emotions (the one it names, an
//! addition's, or the lexicon's for it or its base form) with how its weight is shared.
//!
//! Must not know: negation, intensity, VADER or how a reading is scored.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::{EMOTIONS, NAME_WORDS};

/// The vendored lexicon: `word<TAB>emotion`, one pair a line.
const LEXICON_TSV: &str = include_str!("../wn-affect-emotions.tsv");

/// Lexicon words left out (since emotion/4): in everyday text they are rarely affective
/// ("kid" is WN-Affect's verb *to kid*, "close" and "black" are senses of joy and shame,
/// "humbled" before a mountain is awe, not shame; "shy" describes a person, not a feeling).
const NOT_AFFECTIVE: &[&str] = &[
    "kid", "close", "rag", "black", "dark", "down", "low", "bad", "humble", "chill", "shy",
];

pub(super) static LEXICON: LazyLock<HashMap<&'static str, Vec<usize>>> = LazyLock::new(|| {
    let mut map: HashMap<&'static str, Vec<usize>> = HashMap::new();
    for line in LEXICON_TSV.lines() {
        let mut cols = line.split('\t');
        let (Some(word), Some(emotion)) = (cols.next(), cols.next()) else {
            continue;
        };
        if NOT_AFFECTIVE.contains(&word) {
            continue;
        }
        if let Some(k) = EMOTIONS.iter().position(|e| *e == emotion) {
            let entry = map.entry(word).or_default();
            if !entry.contains(&k) {
                entry.push(k);
            }
        }
    }
    map
});

/// thinkledger's own additions (`emotion-additions.tsv`): words and phrases of up to
/// [`LONGEST_PHRASE`] words that WordNet-Affect 1.1 lacks, each with its emotion.
const ADDITIONS_TSV: &str = include_str!("../emotion-additions.tsv");

/// The most words an addition spans.
const LONGEST_PHRASE: usize = 4;

static ADDITIONS: LazyLock<HashMap<&'static str, usize>> = LazyLock::new(|| {
    ADDITIONS_TSV
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|line| {
            let (phrase, emotion) = line.split_once('\t')?;
            Some((phrase, EMOTIONS.iter().position(|e| *e == emotion)?))
        })
        .collect()
});

/// How many words each emotion has in the lexicon: a word listed under several emotions is
/// shared among them in proportion to 1 / vocabulary ([`shares`]).
static VOCABULARY: LazyLock<[usize; 11]> = LazyLock::new(|| {
    let mut sizes = [0usize; 11];
    for emotions in LEXICON.values() {
        for &k in emotions {
            sizes[k] += 1;
        }
    }
    sizes
});

/// The emotion a word names, when it is one of [`NAME_WORDS`].
pub(super) fn named(word: &str) -> Option<usize> {
    NAME_WORDS.iter().position(|names| names.contains(&word))
}

/// The emotions of a word: the one it names, else thinkledger's addition, else the lexicon's
/// for it or its base form.
pub(super) fn emotions_of(word: &str) -> Option<Vec<usize>> {
    match named(word).or_else(|| ADDITIONS.get(word).copied()) {
        Some(k) => Some(vec![k]),
        None => lookup(word).cloned(),
    }
}

/// How one word's weight is shared among its emotions: all of it for one emotion; for a word
/// listed under several, in proportion to 1 / each emotion's vocabulary (the word is more
/// telling of a small category: `guilty` is 2/3 guilt, 1/3 shame; `embarrassed` 3/4 shame,
/// 1/4 fear), as a naive Bayes reading with uniform priors would.
pub(super) fn shares(emotions: &[usize]) -> Vec<f64> {
    #[allow(clippy::cast_precision_loss)] // word counts
    let inverse: Vec<f64> = emotions
        .iter()
        .map(|&k| 1.0 / VOCABULARY[k].max(1) as f64)
        .collect();
    let total: f64 = inverse.iter().sum();
    inverse.iter().map(|x| x / total).collect()
}

/// The addition phrase of two or more words starting at `tokens[i]`, longest first: its
/// emotion and how many words it spans.
pub(super) fn phrase_at(tokens: &[String], i: usize) -> Option<(usize, usize)> {
    (2..=LONGEST_PHRASE).rev().find_map(|n| {
        let words = tokens.get(i..i + n)?;
        ADDITIONS.get(words.join(" ").as_str()).map(|&k| (k, n))
    })
}

/// The lexicon's emotions of a word or of its base form (plural, past, gerund, adverb; a past
/// participle also as its gerund: `excited` → `exciting`).
fn lookup(word: &str) -> Option<&'static Vec<usize>> {
    if let Some(hit) = LEXICON.get(word) {
        return Some(hit);
    }
    let mut forms: Vec<String> = Vec::new();
    for (suffix, replacements) in [
        ("ies", &["y"][..]),
        ("ied", &["y"][..]),
        ("ier", &["y"][..]),
        ("ily", &["y"][..]),
        ("ness", &[""][..]),
        ("fully", &["ful"][..]),
        ("ly", &["", "le"][..]),
        ("ing", &["", "e"][..]),
        ("ed", &["", "e", "ing"][..]),
        ("es", &["", "e"][..]),
        ("er", &["", "e"][..]),
        ("s", &[""][..]),
    ] {
        if let Some(stem) = word.strip_suffix(suffix)
            && stem.len() >= 3
        {
            for r in replacements {
                forms.push(format!("{stem}{r}"));
            }
            // doubled consonant: "stunned" → "stun"
            let b = stem.as_bytes();
            if b.len() >= 2 && b[b.len() - 1] == b[b.len() - 2] {
                forms.push(stem[..stem.len() - 1].to_owned());
            }
        }
    }
    forms.iter().find_map(|f| LEXICON.get(f.as_str()))
}
