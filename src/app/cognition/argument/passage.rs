//! The passage as the argument rules read it: tokens, sentences and clauses, and the inference
//! links (markers such as "because", "so", "if … then", and the conclusion each introduces).
//!
//! Must not know: fallacies or scores (they read a passage; this only reads the text).

use std::sync::LazyLock;

use regex::Regex;

use super::concepts::group;
use crate::app::cognition::argument_words::{
    ABBREVIATIONS, EVALUATIVE, FORWARD, SO_NOT_AFTER, SO_NOT_BEFORE, TIME_AFTER,
};

/// A word of the text, lower-cased without apostrophes, with its byte offsets.
#[derive(Debug, Clone)]
pub(in crate::app::cognition) struct Token {
    pub word: String,
    pub start: usize,
    pub end: usize,
}

/// An inference: where its conclusion is.
#[derive(Debug, Clone)]
pub(in crate::app::cognition) struct Link {
    pub conclusion: (usize, usize),
}

/// A text read for argument.
pub(in crate::app::cognition) struct Passage<'a> {
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
pub(in crate::app::cognition) fn compile(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|_| {
        Regex::new(r"[^\s\S]").unwrap_or_else(|_| unreachable!("a constant regex compiles"))
    })
}

pub(in crate::app::cognition) fn tokens(text: &str) -> Vec<Token> {
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
pub(in crate::app::cognition) fn sentences(text: &str) -> Vec<(usize, usize)> {
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
pub(in crate::app::cognition) fn clauses(text: &str) -> Vec<(usize, usize)> {
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
    pub(in crate::app::cognition) fn new(text: &'a str) -> Self {
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
    pub(in crate::app::cognition) fn sentence_of(&self, pos: usize) -> (usize, usize) {
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
    pub(in crate::app::cognition) fn tokens_in(&self, spans: &[(usize, usize)]) -> Vec<Token> {
        self.tokens
            .iter()
            .filter(|t| spans.iter().any(|(a, b)| *a <= t.start && t.start < *b))
            .cloned()
            .collect()
    }

    /// Everything but `span`: the premises around a conclusion.
    pub(in crate::app::cognition) fn around(&self, span: (usize, usize)) -> [(usize, usize); 2] {
        [(0, span.0), (span.1, self.text.len())]
    }

    /// The conclusions to test: each inference's, or without one every sentence (each with
    /// the rest of the passage as its premises). The flag says whether a marker introduced it.
    pub(in crate::app::cognition) fn conclusions(&self) -> Vec<((usize, usize), bool)> {
        if self.links.is_empty() {
            self.sentences.iter().map(|s| (*s, false)).collect()
        } else {
            self.links.iter().map(|l| (l.conclusion, true)).collect()
        }
    }

    /// A claim (a modal, a hedge, an evaluation) in a passage of two or more clauses: an
    /// argument without a marker ("Load tests … We probably need more capacity").
    pub(super) fn claims_with_support(&self) -> bool {
        clauses(self.text).len() >= 2
            && self.sentences.iter().any(|(a, b)| {
                CLAIM.is_match(&self.lower[*a..*b]) || evaluative(&tokens(&self.text[*a..*b]))
            })
    }
}

/// A copula or "can" followed within three words by an evaluative word ("is a reliable
/// source", "can trust").
pub(in crate::app::cognition) fn evaluative(ts: &[Token]) -> bool {
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
pub(in crate::app::cognition) fn judges(ts: &[Token]) -> bool {
    ts.iter()
        .any(|t| group(&t.word).is_some_and(|g| EVALUATIVE.contains(&g)))
}
