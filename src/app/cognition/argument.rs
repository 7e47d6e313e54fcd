//! The argument rules `thinkledger.cognition.argument/2`: where a passage infers something (its
//! inference markers and the conclusion each introduces), whether it argues at all, and the
//! fallacies [`super::fallacies`] finds in it; then the seed's four quality measures, lowered
//! by the findings, and the strengths and weaknesses that follow from them (docs/cognition.md
//! gives every rule and its figures).
//!
//! **Measured, not adopted.** On the second held-out set (its first run) argument/2 as a whole
//! ([`quality`], [`judge`]) ordered sound above fallacious passages no better than features/1,
//! found fewer than half the fallacies and flagged three sound passages, so `analyze_reasoning`
//! does not answer with it: it answers with features/2 ([`super::features2`]), which takes only
//! [`assess`]'s circular and hasty-generalisation findings. The rest is kept, tested and
//! measured by `argument_evaluation`, for the next attempt.
//!
//! The premises of a conclusion are the whole passage around it, not only the clause beside
//! "because" or "so". Words are compared as concepts: lower-cased, lightly stemmed, and mapped
//! to a few synonym groups (reliable/dependable/trust, fair/just, lower/less/drop, …), with a
//! negation in the three words before a grouped word turning it into the group's opposite
//! ("doesn't break" is reliable).
//!
//! Pure (the non-sequitur test compares potion-base-2M vectors, a table lookup compiled into
//! the binary). Must not know MCP or the ledger.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;
use schemars::JsonSchema;
use serde::Serialize;

use super::bias::Span;
use super::fallacies;
use super::features::{self, Dimensions, Features, Quality};

use super::argument_words::{
    ABBREVIATIONS, CERTAINTY, EVALUATIVE, EVIDENCE_NOUNS, FORWARD, GROUPS, NEGATIVE, NUMBER_WORDS,
    OPPOSITES, POSITIVE, SO_NOT_AFTER, SO_NOT_BEFORE, TIME_AFTER,
};

/// The rule set and version every answer made by these rules names.
pub const RULES: &str = "thinkledger.cognition.argument/2";

/// The fallacies the rules name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Fallacy {
    /// The conclusion restates what the premises already say.
    Circular,
    /// A general or absolute claim resting on a few cases, or on none.
    HastyGeneralisation,
    /// Two options (or one) offered as the only ones.
    FalseDilemma,
    /// A person's standing given as the reason, without evidence for the claim.
    AppealToAuthority,
    /// A conclusion unrelated to everything before it.
    NonSequitur,
    /// What many do or believe given as the reason it is right.
    Bandwagon,
}

impl Fallacy {
    /// The label used in answers, events and the labelled sets.
    pub fn label(self) -> &'static str {
        match self {
            Self::Circular => "circular",
            Self::HastyGeneralisation => "hasty_generalisation",
            Self::FalseDilemma => "false_dilemma",
            Self::AppealToAuthority => "appeal_to_authority",
            Self::NonSequitur => "non_sequitur",
            Self::Bandwagon => "bandwagon",
        }
    }

    /// The quality measure the fallacy lowers.
    pub fn lowered(self) -> Measure {
        self.lowers().0
    }

    /// The quality measure the fallacy lowers, and by how much at full confidence.
    pub(super) fn lowers(self) -> (Measure, f64) {
        match self {
            Self::Circular | Self::NonSequitur => (Measure::LogicalValidity, 0.6),
            Self::FalseDilemma => (Measure::LogicalValidity, 0.5),
            Self::HastyGeneralisation | Self::AppealToAuthority | Self::Bandwagon => {
                (Measure::EvidenceSupport, 0.5)
            }
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Circular => "Circular reasoning",
            Self::HastyGeneralisation => "Hasty generalisation",
            Self::FalseDilemma => "False dilemma",
            Self::AppealToAuthority => "Appeal to authority",
            Self::NonSequitur => "Non sequitur",
            Self::Bandwagon => "Bandwagon",
        }
    }

    pub(super) fn advice(self) -> &'static str {
        match self {
            Self::Circular => "Give a reason that does not already assume the conclusion",
            Self::HastyGeneralisation => {
                "Narrow the claim to the cases observed, or cite enough cases to support it"
            }
            Self::FalseDilemma => "Name the other options and say why they are ruled out",
            Self::AppealToAuthority => "Cite the evidence behind the expert's view, not the expert",
            Self::NonSequitur => "Show the steps that connect the premises to the conclusion",
            Self::Bandwagon => "Give evidence that the choice is right, not that it is popular",
        }
    }
}

/// A quality measure a finding lowers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    LogicalValidity,
    EvidenceSupport,
}

impl Measure {
    /// The measure's field name in `quality`.
    pub fn field(self) -> &'static str {
        match self {
            Self::LogicalValidity => "logicalValidity",
            Self::EvidenceSupport => "evidenceSupport",
        }
    }
}

/// One fallacy found.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub fallacy: Fallacy,
    /// Where the offending clause or sentence is (byte offsets into the text).
    pub span: Span,
    /// 0–1: how sure the rule is (it scales how much the measure is lowered).
    pub confidence: f64,
    /// Why, in the rules' words (never the caller's).
    pub reason: &'static str,
}

/// What the rules make of a passage.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    /// False when the text states no argument (no inference, no claim with support): nothing
    /// is scored then.
    pub assessed: bool,
    /// The inference markers found (because, so, therefore, it follows that, …).
    pub inferences: usize,
    pub findings: Vec<Finding>,
}

/// Finds the passage's inferences and fallacies.
pub fn assess(text: &str) -> Assessment {
    let p = Passage::new(text);
    let mut findings = Vec::new();
    findings.extend(fallacies::hasty(&p));
    findings.extend(fallacies::bandwagon(&p));
    findings.extend(fallacies::authority(&p));
    findings.extend(fallacies::dilemma(&p));
    // A restatement with its scope widened (a few cases → all) or its subject swapped (others
    // → us) is that fallacy, not circularity.
    let widened = findings.iter().any(|f| {
        f.fallacy == Fallacy::Bandwagon
            || (f.fallacy == Fallacy::HastyGeneralisation && f.reason == fallacies::FEW_CASES)
    });
    if !widened {
        findings.extend(fallacies::circular(&p));
    }
    findings.extend(fallacies::non_sequitur(&p));
    let assessed = !p.links.is_empty() || !findings.is_empty() || p.claims_with_support();
    Assessment {
        assessed,
        inferences: p.links.len(),
        findings,
    }
}

// ---------------------------------------------------------------------------------------------
// The passage: tokens, sentences, clauses, inference links.

/// A word of the text, lower-cased without apostrophes, with its byte offsets.
#[derive(Debug, Clone)]
pub(super) struct Token {
    pub word: String,
    pub start: usize,
    pub end: usize,
}

/// An inference: where its conclusion is.
#[derive(Debug, Clone)]
pub(super) struct Link {
    pub conclusion: (usize, usize),
}

/// A text read for argument.
pub(super) struct Passage<'a> {
    pub text: &'a str,
    /// ASCII-lower-cased text (same byte offsets).
    pub lower: String,
    pub tokens: Vec<Token>,
    pub sentences: Vec<(usize, usize)>,
    pub links: Vec<Link>,
}

static TOKEN: LazyLock<Regex> =
    LazyLock::new(|| compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*(?:[.,][0-9]+)*"));

/// Compiles a constant pattern; one that does not compile matches nothing (the patterns are
/// constants, tested; this keeps a broken edit from panicking a server).
pub(super) fn compile(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|_| {
        Regex::new(r"[^\s\S]").unwrap_or_else(|_| unreachable!("a constant regex compiles"))
    })
}

pub(super) fn tokens(text: &str) -> Vec<Token> {
    TOKEN
        .find_iter(text)
        .map(|m| Token {
            word: m
                .as_str()
                .chars()
                .filter(|c| *c != '\'' && *c != '’')
                .collect::<String>()
                .trim_matches('-')
                .to_ascii_lowercase(),
            start: m.start(),
            end: m.end(),
        })
        .collect()
}

/// Sentence spans: split at `!`, `?`, `;`, a line break, and a full stop followed by a space
/// or the end (not after an abbreviation such as "Dr.").
pub(super) fn sentences(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        let stop = matches!(c, '!' | '?' | '\n' | ';')
            || (c == '.' && bytes.get(i + 1).is_none_or(u8::is_ascii_whitespace));
        if !stop {
            continue;
        }
        if c == '.' && i + 1 < text.len() {
            let before = &text[start..i];
            let word: String = before
                .chars()
                .rev()
                .take_while(char::is_ascii_alphabetic)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<String>()
                .to_ascii_lowercase();
            if !word.is_empty() && ABBREVIATIONS.contains(&word.as_str()) {
                continue;
            }
        }
        if !text[start..i].trim().is_empty() {
            spans.push((start, i));
        }
        start = i + c.len_utf8();
    }
    if !text[start..].trim().is_empty() {
        spans.push((start, text.len()));
    }
    spans
}

static CLAUSE_CUT: LazyLock<Regex> =
    LazyLock::new(|| compile(r",? (?:and|but|so|therefore|because|since|which) |: |, "));

/// Clause spans: sentences cut before a comma, a colon and the words that join clauses.
pub(super) fn clauses(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (a, b) in sentences(text) {
        let segment = &text[a..b];
        let mut cuts = vec![0];
        cuts.extend(CLAUSE_CUT.find_iter(segment).map(|m| m.start()));
        cuts.push(segment.len());
        for w in cuts.windows(2) {
            let (x, y) = (w[0], w[1]);
            if !segment[x..y]
                .trim_matches(|c: char| c == ' ' || c == ',' || c == ':')
                .is_empty()
            {
                out.push((a + x, a + y));
            }
        }
    }
    out
}

static PHRASE_MARKERS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"as a result,?",
        r"it follows that",
        r"\b(?:which|this|that|it) (?:proves|shows|means|suggests|implies|confirms|tells you|tells us)(?: that)?",
        r"that settles it[;:,.]?",
        r"\b(?:which|that) is (?:precisely |exactly )?why",
        r"\bthat['’]s why",
        r"\bwhich means(?: that)?",
    ]
    .iter()
    .map(|p| compile(p))
    .collect()
});

static IF_THEN: LazyLock<Regex> = LazyLock::new(|| compile(r"\bif\b[^.;!?]*?,? then\b"));

static CLAIM: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"\b(suggests|suggest|indicates|indicate|points to|consistent with|explains|explanation|caused|cause|due to|led to|shouldn['’]t|mustn['’]t|should|must|ought|need to|needs to|have to|has to|had better|probably|likely|unlikely|clearly|obviously|surely|certainly|definitely|would|let['’]s|lets|we['’]d|it is time|is the (?:right|best|only|correct)|(?:is|are) (?:right|wrong|better|best|worse|correct|justified|reasonable|fair|unfair|good|bad|great|reliable)|seems|appears|recommend)\b",
    )
});

impl<'a> Passage<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        let mut p = Self {
            text,
            lower: text.to_ascii_lowercase(),
            tokens: tokens(text),
            sentences: sentences(text),
            links: Vec::new(),
        };
        p.links = p.find_links();
        p
    }

    /// The sentence holding byte `pos` (the last one when none does).
    pub(super) fn sentence_of(&self, pos: usize) -> (usize, usize) {
        self.sentences
            .iter()
            .copied()
            .find(|(a, b)| *a <= pos && pos <= *b)
            .or_else(|| self.sentences.last().copied())
            .unwrap_or((0, self.text.len()))
    }

    fn sentence_index(&self, pos: usize) -> usize {
        self.sentences
            .iter()
            .position(|(a, b)| *a <= pos && pos <= *b)
            .unwrap_or(self.sentences.len().saturating_sub(1))
    }

    fn find_links(&self) -> Vec<Link> {
        let mut out = Vec::new();
        let text = self.text;
        for (i, t) in self.tokens.iter().enumerate() {
            let (a, b) = self.sentence_of(t.start);
            let prev = i
                .checked_sub(1)
                .map(|j| &self.tokens[j])
                .filter(|x| x.start >= a)
                .map(|x| x.word.as_str());
            let next = self
                .tokens
                .get(i + 1)
                .filter(|x| x.start < b)
                .map(|x| x.word.as_str());
            let w = t.word.as_str();
            if FORWARD.contains(&w) {
                if w == "so"
                    && (next.is_none_or(|n| SO_NOT_BEFORE.contains(&n))
                        || prev.is_some_and(|p| SO_NOT_AFTER.contains(&p)))
                {
                    continue;
                }
                let before = text[a..t.start].trim_end();
                let mid_sentence = !before.is_empty()
                    && !before.ends_with([',', ';', ':'])
                    && !matches!(prev, Some("and" | "but"))
                    && t.start - a > 2;
                let conclusion = if mid_sentence { (a, b) } else { (t.end, b) };
                out.push(Link { conclusion });
            } else if w == "because" || w == "since" {
                if w == "since"
                    && next.is_none_or(|n| {
                        n.ends_with("ing")
                            || TIME_AFTER.contains(&n)
                            || n.starts_with(|c: char| c.is_ascii_digit())
                    })
                {
                    continue;
                }
                if text[a..t.start].trim().is_empty() {
                    // Sentence-initial: the premise runs to the first comma, the conclusion
                    // after it.
                    let Some(comma) = text[t.end..b].find(',') else {
                        continue;
                    };
                    out.push(Link {
                        conclusion: (t.end + comma + 1, b),
                    });
                } else {
                    out.push(Link {
                        conclusion: (a, t.start),
                    });
                }
            }
        }
        for re in PHRASE_MARKERS.iter() {
            for m in re.find_iter(&self.lower) {
                let si = self.sentence_index(m.start());
                let (_, b) = self.sentence_of(m.start());
                if m.as_str().contains("settles") && m.end() + 1 >= b {
                    // "That settles it." — the conclusion is the next sentence.
                    if let Some(next) = self.sentences.get(si + 1) {
                        out.push(Link { conclusion: *next });
                    }
                    continue;
                }
                out.push(Link {
                    conclusion: (m.end().min(b), b),
                });
            }
        }
        for m in IF_THEN.find_iter(&self.lower) {
            let (_, b) = self.sentence_of(m.start());
            out.push(Link {
                conclusion: (m.end().min(b), b),
            });
        }
        out
    }

    /// The tokens starting inside any of `spans`.
    pub(super) fn tokens_in(&self, spans: &[(usize, usize)]) -> Vec<Token> {
        self.tokens
            .iter()
            .filter(|t| spans.iter().any(|(a, b)| *a <= t.start && t.start < *b))
            .cloned()
            .collect()
    }

    /// Everything but `span`: the premises around a conclusion.
    pub(super) fn around(&self, span: (usize, usize)) -> [(usize, usize); 2] {
        [(0, span.0), (span.1, self.text.len())]
    }

    /// The conclusions to test: each inference's, or without one every sentence (each with
    /// the rest of the passage as its premises). The flag says whether a marker introduced it.
    pub(super) fn conclusions(&self) -> Vec<((usize, usize), bool)> {
        if self.links.is_empty() {
            self.sentences.iter().map(|s| (*s, false)).collect()
        } else {
            self.links.iter().map(|l| (l.conclusion, true)).collect()
        }
    }

    /// A claim (a modal, a hedge, an evaluation) in a passage of two or more clauses: an
    /// argument without a marker ("Load tests … We probably need more capacity").
    fn claims_with_support(&self) -> bool {
        clauses(self.text).len() >= 2
            && self.sentences.iter().any(|(a, b)| {
                CLAIM.is_match(&self.lower[*a..*b]) || evaluative(&tokens(&self.text[*a..*b]))
            })
    }
}

/// A copula or "can" followed within three words by an evaluative word ("is a reliable
/// source", "can trust").
pub(super) fn evaluative(ts: &[Token]) -> bool {
    const HEADS: &[&str] = &[
        "is", "are", "be", "can", "cannot", "cant", "isnt", "arent", "was", "were",
    ];
    ts.iter().enumerate().any(|(i, t)| {
        HEADS.contains(&t.word.as_str())
            && ts[i + 1..]
                .iter()
                .take(3)
                .any(|x| group(&x.word).is_some_and(|g| EVALUATIVE.contains(&g)))
    })
}

/// Whether any of the tokens is an evaluative word (good, right, reliable, fair, …).
pub(super) fn judges(ts: &[Token]) -> bool {
    ts.iter()
        .any(|t| group(&t.word).is_some_and(|g| EVALUATIVE.contains(&g)))
}

// ---------------------------------------------------------------------------------------------
// Concepts: stemmed content words and synonym groups.

pub(super) const NEGATIONS: &[&str] = &[
    "not", "no", "never", "without", "cannot", "cant", "dont", "doesnt", "isnt", "arent", "wasnt",
    "werent", "wont", "didnt", "hasnt", "havent", "shouldnt", "couldnt",
];

/// Function words, and words too general to carry a claim's content.
pub(super) const STOP: &[&str] = &[
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
pub(super) const PRONOUNS: &[&str] = &[
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
pub(super) fn group(word: &str) -> Option<&'static str> {
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
pub(super) fn polarity(concept: &str) -> Option<bool> {
    if POSITIVE.contains(&concept) {
        Some(true)
    } else if NEGATIVE.contains(&concept) {
        Some(false)
    } else {
        None
    }
}

/// A light stemmer: the first of a few suffixes that leaves at least three letters.
pub(super) fn stem(word: &str) -> String {
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

pub(super) fn has_digit(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit())
}

/// The concepts of a run of tokens, in order: a grouped word as its group (its opposite when
/// one of the three words before it negates it), other content words stemmed.
pub(super) fn concepts(ts: &[Token]) -> Vec<String> {
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

pub(super) fn concept_set(ts: &[Token]) -> BTreeSet<String> {
    concepts(ts).into_iter().collect()
}

// ---------------------------------------------------------------------------------------------
// Evidence.

/// Counts that are exact (a crowd of "twelve labs" is counted, "millions" is not).
pub(super) const EXACT_NUMBERS: &[&str] = &[
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "fifteen", "twenty", "thirty", "forty", "fifty",
];
/// Verbs that report an observation.
pub(super) const OBSERVED: &[&str] = &[
    "found",
    "measured",
    "measure",
    "showed",
    "recorded",
    "tested",
    "observed",
    "compared",
    "sampled",
    "surveyed",
    "confirmed",
    "logged",
    "monitored",
    "replicated",
    "analysed",
    "analyzed",
    "counted",
    "audited",
    "inspected",
    "tracked",
    "ran",
    "studied",
    "reported",
];

/// Whether tokens carry evidence: a number, an evidence noun or an observation verb.
pub(super) fn evidence(ts: &[Token]) -> bool {
    ts.iter().any(|t| {
        let w = t.word.as_str();
        has_digit(w)
            || NUMBER_WORDS.contains(&w)
            || EVIDENCE_NOUNS.contains(&w)
            || OBSERVED.contains(&w)
    })
}

// ---------------------------------------------------------------------------------------------
// Scores.

/// The neutral value of every measure of a text that is not assessed.
pub const NEUTRAL: f64 = 0.5;

/// The seed's quality measures: features/1's coherence and completeness; logical validity
/// from certainty words, universal claims without a figure beside them, contradictions and
/// whether anything is inferred; evidence support from the figures and source words
/// (features/1's); each lowered by the findings that bear on it. A text that is not assessed
/// gets the neutral 0.5 for each.
pub fn quality(text: &str, x: &Features, d: &Dimensions, a: &Assessment) -> Quality {
    if !a.assessed {
        return Quality {
            coherence: NEUTRAL,
            completeness: NEUTRAL,
            logical_validity: NEUTRAL,
            evidence_support: NEUTRAL,
        };
    }
    let base = features::quality(text, x, d);
    let ts = tokens(text);
    let certainty = ts
        .iter()
        .filter(|t| CERTAINTY.contains(&t.word.as_str()))
        .count();
    let lower = text.to_ascii_lowercase();
    let universals: usize = sentences(text)
        .iter()
        .filter(|(s, e)| !has_digit(&text[*s..*e]))
        .map(|(s, e)| fallacies::UNIVERSAL.find_iter(&lower[*s..*e]).count())
        .sum();
    let mut validity = 1.0
        - 0.15 * count(certainty)
        - 0.1 * count(universals)
        - 0.3 * count(x.contradictions)
        - if a.inferences == 0 { 0.1 } else { 0.0 };
    let mut support = base.evidence_support;
    for f in &a.findings {
        let (measure, weight) = f.fallacy.lowers();
        match measure {
            Measure::LogicalValidity => validity -= weight * f.confidence,
            Measure::EvidenceSupport => support -= weight * f.confidence,
        }
    }
    Quality {
        coherence: base.coherence,
        completeness: base.completeness,
        logical_validity: round2(validity.clamp(0.0, 1.0)),
        evidence_support: round2(support.clamp(0.0, 1.0)),
    }
}

/// The mean of the four measures: what the evaluation orders passages by.
pub fn overall(q: &Quality) -> f64 {
    (q.coherence + q.completeness + q.logical_validity + q.evidence_support) / 4.0
}

/// Strengths, weaknesses and recommendations that agree with the measures and findings.
pub fn judge(x: &Features, q: &Quality, a: &Assessment) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut strengths = Vec::new();
    let mut weaknesses = Vec::new();
    let mut recommendations = Vec::new();
    if !a.assessed {
        recommendations.push(
            "Not assessed: the text states no argument (no inference such as because, so or \
             therefore, and no claim with support). State a conclusion and the grounds for it \
             to have the reasoning assessed"
                .to_owned(),
        );
        return (strengths, weaknesses, recommendations);
    }
    for f in &a.findings {
        let (measure, _) = f.fallacy.lowers();
        weaknesses.push(format!(
            "{} (bytes {}–{}): {}; lowers {}",
            f.fallacy.name(),
            f.span.start,
            f.span.end,
            f.reason,
            measure.field()
        ));
        let advice = f.fallacy.advice().to_owned();
        if !recommendations.contains(&advice) {
            recommendations.push(advice);
        }
    }
    let validity_finding = a
        .findings
        .iter()
        .any(|f| f.fallacy.lowers().0 == Measure::LogicalValidity);
    if a.inferences > 0 && !validity_finding {
        strengths.push("Premises are linked to conclusions (because, therefore, …)".to_owned());
    } else if a.inferences == 0 {
        weaknesses.push("No stated link between premises and conclusion".to_owned());
        recommendations.push("Say why the conclusion follows (because …)".to_owned());
    }
    if q.evidence_support >= 0.6 {
        strengths.push("Claims cite figures or sources".to_owned());
    } else {
        weaknesses.push("Limited evidence".to_owned());
        recommendations.push("Gather more data".to_owned());
    }
    if x.alternatives > 0 {
        strengths.push("Alternatives or risks are considered".to_owned());
    } else {
        weaknesses.push("Missing alternative perspectives".to_owned());
        recommendations.push("Consider counterarguments".to_owned());
    }
    if x.contradictions > 0 {
        weaknesses.push("Statements that may contradict each other".to_owned());
        recommendations.push("Resolve the contradictions".to_owned());
    }
    let absolute = a
        .findings
        .iter()
        .any(|f| f.fallacy == Fallacy::HastyGeneralisation);
    if absolute || q.logical_validity < 0.7 {
        weaknesses.push("Absolute or unsupported claims weaken validity".to_owned());
        recommendations.push("Qualify absolute claims".to_owned());
    } else {
        strengths.push("No unsupported absolute claims".to_owned());
    }
    (strengths, weaknesses, recommendations)
}

#[allow(clippy::cast_precision_loss)] // small counts
fn count(n: usize) -> f64 {
    n as f64
}

pub(super) fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<&'static str> {
        assess(text)
            .findings
            .iter()
            .map(|f| f.fallacy.label())
            .collect()
    }

    #[test]
    fn the_issue_examples_are_findings_not_strengths() {
        let text = "The sky is blue because it is blue.";
        let a = assess(text);
        assert_eq!(kinds(text), ["circular"]);
        let x = features::count(text, &[], None);
        let d = features::dimensions(&x);
        let q = quality(text, &x, &d, &a);
        assert!(q.logical_validity < 0.7, "{q:?}");
        let (strengths, weaknesses, _) = judge(&x, &q, &a);
        assert!(
            !strengths
                .iter()
                .any(|s| s.starts_with("Premises are linked")),
            "{strengths:?}"
        );
        assert!(
            weaknesses
                .iter()
                .any(|w| w.starts_with("Circular reasoning (bytes 0–")),
            "{weaknesses:?}"
        );

        let text = "All users hate the new UI. Therefore we must roll it back.";
        let a = assess(text);
        assert_eq!(kinds(text), ["hasty_generalisation"]);
        let x = features::count(text, &[], None);
        let q = quality(text, &x, &features::dimensions(&x), &a);
        let (strengths, _, _) = judge(&x, &q, &a);
        assert!(
            !strengths
                .iter()
                .any(|s| s == "No unsupported absolute claims"),
            "{strengths:?}"
        );
    }

    #[test]
    fn text_without_an_argument_is_not_assessed() {
        for text in [
            "The meeting has been moved to Thursday at ten in the small conference room.",
            "Since moving to Berlin last spring, I have been taking German lessons twice a week.",
            "What time does the library open on Sundays?",
        ] {
            let a = assess(text);
            assert!(!a.assessed, "{text}: {a:?}");
            let x = features::count(text, &[], None);
            let q = quality(text, &x, &features::dimensions(&x), &a);
            assert_eq!(overall(&q), NEUTRAL);
            let (s, w, r) = judge(&x, &q, &a);
            assert!(s.is_empty() && w.is_empty() && r[0].starts_with("Not assessed"));
        }
    }

    #[test]
    fn structure_reads_markers_sentences_and_concepts() {
        assert_eq!(
            sentences("Dr. Patel says so. Then we go."),
            [(0, 17), (18, 29)]
        );
        let p = Passage::new("Since it doesn't break, we can count on it.");
        assert_eq!(p.links.len(), 1);
        assert_eq!(
            &p.text[p.links[0].conclusion.0..p.links[0].conclusion.1],
            " we can count on it"
        );
        assert_eq!(concepts(&tokens("it doesn't break")), ["RELIABLE"]);
        assert_eq!(stem("dependencies"), "dependency");
        assert_eq!(stem("boxes"), "box");
        assert_eq!(stem("makes"), "make");
    }
}
