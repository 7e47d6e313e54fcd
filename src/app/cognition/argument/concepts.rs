//! Concepts: content words lower-cased and lightly stemmed, mapped to a few synonym groups, a
//! negation in the three words before a grouped word turning it into the group's opposite.
//!
//! Must not know: inference links, fallacies or scores.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use super::passage::Token;
use crate::app::cognition::argument_words::{GROUPS, NEGATIVE, OPPOSITES, POSITIVE};

pub(in crate::app::cognition) const NEGATIONS: &[&str] = &[
    "not", "no", "never", "without", "cannot", "cant", "dont", "doesnt", "isnt", "arent", "wasnt",
    "werent", "wont", "didnt", "hasnt", "havent", "shouldnt", "couldnt",
];

/// Function words, and words too general to carry a claim's content.
pub(in crate::app::cognition) const STOP: &[&str] = &[
    "a",
    "an",
    "the",
    "and",
    "or",
    "but",
    "if",
    "then",
    "than",
    "that",
    "this",
    "these",
    "those",
    "there",
    "here",
    "it",
    "its",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "am",
    "do",
    "does",
    "did",
    "done",
    "have",
    "has",
    "had",
    "having",
    "will",
    "would",
    "shall",
    "should",
    "can",
    "could",
    "may",
    "might",
    "must",
    "of",
    "in",
    "on",
    "at",
    "to",
    "for",
    "from",
    "by",
    "with",
    "about",
    "as",
    "into",
    "onto",
    "over",
    "under",
    "after",
    "before",
    "between",
    "through",
    "during",
    "without",
    "within",
    "upon",
    "we",
    "us",
    "our",
    "ours",
    "i",
    "me",
    "my",
    "mine",
    "you",
    "your",
    "yours",
    "he",
    "him",
    "his",
    "she",
    "her",
    "hers",
    "they",
    "them",
    "their",
    "theirs",
    "who",
    "whom",
    "whose",
    "which",
    "what",
    "when",
    "where",
    "why",
    "how",
    "all",
    "any",
    "each",
    "every",
    "some",
    "no",
    "not",
    "nor",
    "so",
    "too",
    "very",
    "just",
    "also",
    "only",
    "even",
    "still",
    "yet",
    "again",
    "more",
    "most",
    "much",
    "many",
    "few",
    "less",
    "least",
    "other",
    "another",
    "such",
    "same",
    "own",
    "one",
    "ones",
    "both",
    "either",
    "neither",
    "anyone",
    "everyone",
    "someone",
    "nobody",
    "none",
    "something",
    "anything",
    "everything",
    "nothing",
    "thing",
    "things",
    "way",
    "ways",
    "lot",
    "lots",
    "kind",
    "sort",
    "part",
    "really",
    "simply",
    "precisely",
    "quite",
    "rather",
    "let",
    "lets",
    "up",
    "down",
    "out",
    "off",
    "now",
    "today",
    "new",
    "get",
    "got",
    "gets",
    "make",
    "makes",
    "made",
    "take",
    "takes",
    "took",
    "go",
    "goes",
    "went",
    "going",
    "come",
    "comes",
    "came",
    "said",
    "says",
    "say",
    "tell",
    "tells",
    "told",
    "know",
    "knows",
    "knew",
    "think",
    "thinks",
    "thought",
    "believe",
    "believes",
    "believed",
    "clearly",
    "obviously",
    "surely",
    "certainly",
    "definitely",
    "probably",
    "likely",
    "unlikely",
    "perhaps",
    "maybe",
    "possibly",
    "need",
    "needs",
    "needed",
    "time",
    "times",
    "year",
    "years",
    "day",
    "days",
    "week",
    "weeks",
    "month",
    "months",
    "people",
    "person",
    "therefore",
    "thus",
    "hence",
    "because",
    "since",
    "consequently",
    "accordingly",
    "given",
    "due",
    "follows",
    "follow",
    "following",
    "shows",
    "show",
    "showed",
    "shown",
    "proves",
    "prove",
    "proved",
    "means",
    "mean",
    "meant",
    "implies",
    "imply",
    "suggests",
    "suggest",
    "suggested",
    "settles",
    "settle",
    "settled",
    "choice",
    "choices",
    "option",
    "options",
    "reason",
    "reasons",
    "fact",
    "case",
    "cases",
    "whole",
    "entire",
    "well",
    "good",
    "better",
    "best",
    "bad",
    "worse",
    "worst",
];

/// Pronouns that can stand for a conclusion's subject in its premise.
pub(in crate::app::cognition) const PRONOUNS: &[&str] = &[
    "it", "they", "she", "he", "them", "her", "him", "this", "these", "its",
];

static CANON: LazyLock<std::collections::HashMap<&'static str, &'static str>> =
    LazyLock::new(|| {
        GROUPS
            .iter()
            .flat_map(|(g, words)| words.split(' ').map(move |w| (w, *g)))
            .collect()
    });

/// The synonym group of a word, if it has one.
pub(in crate::app::cognition) fn group(word: &str) -> Option<&'static str> {
    CANON.get(word).copied()
}

fn opposite(g: &str) -> Option<&'static str> {
    OPPOSITES.iter().find_map(|(a, b)| {
        if *a == g {
            Some(*b)
        } else if *b == g {
            Some(*a)
        } else {
            None
        }
    })
}

/// The polarity of a concept: `Some(true)` for a positive judgement, `Some(false)` negative.
pub(in crate::app::cognition) fn polarity(concept: &str) -> Option<bool> {
    if POSITIVE.contains(&concept) {
        Some(true)
    } else if NEGATIVE.contains(&concept) {
        Some(false)
    } else {
        None
    }
}

/// A light stemmer: the first of a few suffixes that leaves at least three letters.
pub(in crate::app::cognition) fn stem(word: &str) -> String {
    const SUFFIXES: &[(&str, &str)] = &[
        ("ies", "y"),
        ("iness", "y"),
        ("ness", ""),
        ("ments", "ment"),
        ("ingly", ""),
        ("edly", ""),
        ("ing", ""),
        ("ed", ""),
        ("ly", ""),
        ("es", ""),
        ("s", ""),
    ];
    if word.len() <= 4 {
        return word.to_owned();
    }
    for (suffix, replacement) in SUFFIXES {
        if !word.ends_with(suffix) || word.len() - suffix.len() < 3 {
            continue;
        }
        if *suffix == "s" && word.ends_with("ss") {
            continue;
        }
        if *suffix == "es"
            && !["ses", "xes", "ches", "shes", "zes"]
                .iter()
                .any(|s| word.ends_with(s))
        {
            continue;
        }
        return format!("{}{replacement}", &word[..word.len() - suffix.len()]);
    }
    word.to_owned()
}

pub(in crate::app::cognition) fn has_digit(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit())
}

/// The concepts of a run of tokens, in order: a grouped word as its group (its opposite when
/// one of the three words before it negates it), other content words stemmed.
pub(in crate::app::cognition) fn concepts(ts: &[Token]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, t) in ts.iter().enumerate() {
        let w = t.word.as_str();
        if has_digit(w) {
            continue;
        }
        if let Some(g) = group(w) {
            let negated = ts[i.saturating_sub(3)..i]
                .iter()
                .any(|x| NEGATIONS.contains(&x.word.as_str()));
            let g = if negated { opposite(g).unwrap_or(g) } else { g };
            out.push(g.to_owned());
            continue;
        }
        if STOP.contains(&w) || NEGATIONS.contains(&w) || w.len() < 3 {
            continue;
        }
        out.push(stem(w));
    }
    out
}

pub(in crate::app::cognition) fn concept_set(ts: &[Token]) -> BTreeSet<String> {
    concepts(ts).into_iter().collect()
}
