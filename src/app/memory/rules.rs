//! The memory family's rules that are not a tool: ids, keyword extraction, sector
//! classification, decay, recency and the composite score. Every constant here is part of what
//! a decision means: a change to one changes how recorded calls re-execute.

use std::collections::HashMap;

use crate::index::memory::{CosineScaling, Fusion};

/// The five sectors, in the seed's order.
pub const SECTORS: [&str; 5] = [
    "episodic",
    "semantic",
    "procedural",
    "emotional",
    "reflective",
];

/// Strength decay per day by sector (OpenMemory's λ values): `strength(t) = s₀ · e^(−λ·days)`
/// since the strength was last set (stored, updated or reinforced).
pub fn decay_per_day(sector: &str) -> f64 {
    match sector {
        "episodic" => 0.015,
        "semantic" => 0.005,
        "procedural" => 0.008,
        "emotional" => 0.020,
        "reflective" => 0.001,
        _ => 0.005,
    }
}

/// Milliseconds in a day.
const DAY_MS: f64 = 86_400_000.0;

/// What an access adds to a memory's (decayed) strength, up to 1.
pub const REINFORCEMENT: f64 = 0.1;

/// The half-life of recency, in days: a memory last accessed this long ago has recency 0.5.
pub const RECENCY_HALF_LIFE_DAYS: f64 = 14.0;

/// The composite score's weights (the seed's): similarity, salience, recency, link weight.
pub const COMPOSITE: [f64; 4] = [0.6, 0.2, 0.1, 0.1];

/// How BM25 and the cosine are fused for a query embedded by `model`: the share of BM25
/// measured best for that model's tier on the tuning half of LoCoMo-10 (docs/benchmarks.md):
/// 0.3 for all-MiniLM-L6-v2, 0.4 (the default) otherwise; the cosine clamped at 0; half the
/// best session neighbour's similarity added (the default's context). The model id is
/// recorded with the call, so a re-execution fuses the same way.
pub fn fusion_for(model: &str) -> Fusion {
    if model != crate::embed::ALL_MINILM_L6_V2 {
        return Fusion::DEFAULT;
    }
    Fusion::weighted(
        crate::embed::MINILM_FUSION_TEXT_WEIGHT,
        CosineScaling::Clamped,
    )
    .and_then(|f| f.with_context(Fusion::DEFAULT.context()))
    .unwrap_or(Fusion::DEFAULT)
}

/// At most this many waypoints are made when a memory is stored.
pub const MAX_LINKS: usize = 3;

/// A waypoint needs at least this cosine between the two memories' vectors.
pub const MIN_LINK_COSINE: f32 = 0.5;

/// Keywords extracted from content that has none given.
pub const EXTRACTED_KEYWORDS: usize = 5;

/// The strength at `now_ms` of a memory whose strength was `strength` at `at_ms`.
pub fn decayed(strength: f64, at_ms: i64, now_ms: i64, sector: &str) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let days = (now_ms.saturating_sub(at_ms)).max(0) as f64 / DAY_MS;
    strength * (-decay_per_day(sector) * days).exp()
}

/// Recency in (0, 1]: 1 when just accessed, halving every [`RECENCY_HALF_LIFE_DAYS`].
pub fn recency(last_ms: i64, now_ms: i64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let days = (now_ms.saturating_sub(last_ms)).max(0) as f64 / DAY_MS;
    (-std::f64::consts::LN_2 * days / RECENCY_HALF_LIFE_DAYS).exp()
}

/// The seed's composite: `0.6·similarity + 0.2·salience + 0.1·recency + 0.1·linkWeight`.
pub fn composite(similarity: f64, salience: f64, recency: f64, link_weight: f64) -> f64 {
    COMPOSITE[0] * similarity
        + COMPOSITE[1] * salience
        + COMPOSITE[2] * recency
        + COMPOSITE[3] * link_weight
}

/// The strength after an access at a memory whose decayed strength is `strength`.
pub fn reinforced(strength: f64) -> f64 {
    (strength + REINFORCEMENT).min(1.0)
}

/// The id of the owner's `ordinal`-th stored memory (from 0): `mem-` and the first 16 hex
/// digits of `ledger::hash::memory_id_digest`, so a re-execution derives it again and two
/// owners' ids differ.
pub fn memory_id(owner: &str, ordinal: u64) -> String {
    let digest = crate::ledger::hash::memory_id_digest(owner, ordinal);
    format!("mem-{}", crate::ledger::hash::hex(&digest[..8]))
}

/// English words too common to be keywords (and to name a sector).
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "even",
    "every",
    "few",
    "for",
    "from",
    "further",
    "get",
    "got",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "like",
    "made",
    "make",
    "many",
    "may",
    "me",
    "might",
    "more",
    "most",
    "much",
    "must",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "really",
    "said",
    "same",
    "say",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "us",
    "very",
    "was",
    "we",
    "well",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// The words of `text`: lower-cased runs of letters, digits, `'` and `-`, trimmed of the
/// latter two.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
        .map(|w| w.trim_matches(['\'', '-']).to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Up to [`EXTRACTED_KEYWORDS`] keywords of `content`: its most frequent words of three or more
/// characters that are not stop words or numbers, ties broken by first occurrence.
pub fn extract_keywords(content: &str) -> Vec<String> {
    let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
    for (position, word) in words(content).into_iter().enumerate() {
        if word.chars().count() < 3
            || STOP_WORDS.contains(&word.as_str())
            || word.chars().all(|c| c.is_numeric())
        {
            continue;
        }
        counts.entry(word).or_insert((0, position)).0 += 1;
    }
    let mut ranked: Vec<(String, (usize, usize))> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.1.1.cmp(&b.1.1)));
    ranked
        .into_iter()
        .take(EXTRACTED_KEYWORDS)
        .map(|(w, _)| w)
        .collect()
}

/// Words and phrases that place a memory in a sector besides its primary one.
const SECTOR_CUES: &[(&str, &[&str])] = &[
    (
        "episodic",
        &[
            "yesterday",
            "today",
            "tonight",
            "tomorrow",
            "last week",
            "last month",
            "last year",
            "this morning",
            "met",
            "visited",
            "went",
            "attended",
            "happened",
            "meeting",
            "monday",
            "tuesday",
            "wednesday",
            "thursday",
            "friday",
            "saturday",
            "sunday",
            "remember when",
            "trip",
        ],
    ),
    (
        "procedural",
        &[
            "how to",
            "step",
            "steps",
            "first",
            "then run",
            "install",
            "configure",
            "run the",
            "procedure",
            "process",
            "recipe",
            "instructions",
            "workflow",
            "command",
            "setup",
        ],
    ),
    (
        "emotional",
        &[
            "feel",
            "feels",
            "felt",
            "feeling",
            "happy",
            "sad",
            "angry",
            "afraid",
            "scared",
            "excited",
            "anxious",
            "worried",
            "frustrated",
            "proud",
            "upset",
            "love",
            "loves",
            "hate",
            "hates",
            "joy",
            "grateful",
            "lonely",
            "stressed",
        ],
    ),
    (
        "reflective",
        &[
            "realized",
            "realised",
            "learned",
            "learnt",
            "insight",
            "lesson",
            "in hindsight",
            "reflect",
            "reflecting",
            "pattern",
            "noticed",
            "i think",
            "i believe",
            "takeaway",
        ],
    ),
    (
        "semantic",
        &[
            "is a",
            "are a",
            "means",
            "defined",
            "definition",
            "fact",
            "prefers",
            "preference",
            "known as",
            "consists of",
        ],
    ),
];

/// The sectors a memory belongs to: `primary` first, then every other sector whose cue words
/// or phrases occur in `content` (whole words, case-insensitive), in the seed's order. Rules,
/// no model.
pub fn classify(primary: &str, content: &str) -> Vec<String> {
    let text = format!(" {} ", words(content).join(" "));
    let mut sectors = vec![primary.to_owned()];
    for (sector, cues) in SECTOR_CUES {
        if *sector == primary {
            continue;
        }
        if cues.iter().any(|cue| text.contains(&format!(" {cue} "))) {
            sectors.push((*sector).to_owned());
        }
    }
    sectors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_are_the_most_frequent_content_words() {
        let k = extract_keywords(
            "User prefers dark mode for all applications; dark mode everywhere, in 2024.",
        );
        assert_eq!(k[..2], ["dark", "mode"]);
        assert!(k.contains(&"prefers".to_owned()));
        assert!(!k.iter().any(|w| w == "for" || w == "all" || w == "2024"));
    }

    #[test]
    fn sectors_follow_cues_after_the_primary() {
        assert_eq!(
            classify("semantic", "Yesterday I felt happy about the trip"),
            ["semantic", "episodic", "emotional"]
        );
        assert_eq!(classify("procedural", "plain words"), ["procedural"]);
    }

    #[test]
    fn decay_recency_and_reinforcement() {
        let day = 86_400_000;
        assert!((decayed(1.0, 0, 0, "episodic") - 1.0).abs() < 1e-12);
        let d = decayed(1.0, 0, 100 * day, "episodic");
        assert!((d - (-1.5f64).exp()).abs() < 1e-12);
        assert!((recency(0, 14 * day) - 0.5).abs() < 1e-12);
        assert!((reinforced(0.95) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn memory_ids_are_stable_and_owner_scoped() {
        assert_eq!(memory_id("u", 0), memory_id("u", 0));
        assert_ne!(memory_id("u", 0), memory_id("u", 1));
        assert_ne!(memory_id("u", 0), memory_id("v", 0));
        assert_eq!(memory_id("u", 0).len(), 20);
    }
}
