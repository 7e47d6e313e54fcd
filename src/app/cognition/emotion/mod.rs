//! `detect_emotion`'s rules: the circumplex (valence, arousal, dominance) and the seed's eleven
//! discrete emotions, from two published lexicons (docs/cognition.md):
//!
//! - valence is VADER's compound score (Hutto & Gilbert 2014, MIT, crate `vader_sentiment`),
//!   with VADER's own negation, booster, capitals and punctuation rules, plus the emotion words
//!   VADER has no entry for, valued by their emotions' pleasure anchors; when VADER is neutral
//!   or its sign disagrees with the emotions found, the emotions decide (since emotion/4);
//! - the discrete emotions come from `wn-affect-emotions.tsv`: the words of WordNet-Affect 1.1
//!   (Strapparava & Valitutti 2004; CC BY 3.0, as part of WordNet Domains) whose affective
//!   category falls under one of the eleven, by the category table in docs/cognition.md, and
//!   thinkledger's own `emotion-additions.tsv` (words and phrases WN-Affect lacks). A word
//!   naming an emotion counts for it alone; a lexicon word under several emotions is shared by
//!   1 / vocabulary; since emotion/4 also the appraisal cues of [`appraisal`] (what happened,
//!   and to whom). A word or cue counts 1, 1.5 after an intensifier, 0.5 after a downtoner,
//!   and nothing when one of the three words before it negates it (VADER's window), unless
//!   the negator's scope ends at a verb's object ([`reaches`]); a text with no emotion word
//!   and no cue takes the vote of its nearest labelled examples ([`examples`], since
//!   emotion/6), each emotion weighing its share, unless (since emotion/7) a sentence without
//!   an emotion is among the nearest or within [`NONE_MARGIN`] of the winner's nearest;
//!   a word whose everyday sense is physical ([`PHYSICAL_SENSE`]: "blue", "broken") counts
//!   only when a person feels it; with none of these there is no emotion (null primary);
//! - arousal and dominance are the emotions' PAD anchors (`ANCHORS`) weighted by their scores.
//!
//! Pure: text in, numbers out. Must not know MCP or the ledger.

use std::sync::LazyLock;

use schemars::JsonSchema;
use serde::Serialize;

use super::{appraisal, examples};

mod lexicon;

use lexicon::{emotions_of, named, phrase_at, shares};

/// The rule set and version every answer names.
pub const RULES: &str = "thinkledger.cognition.emotion/7 (VADER lexicon 3.3 + WordNet-Affect 1.1 + thinkledger additions and appraisal cues + nearest labelled examples in potion-base-2M)";

/// The seed's eleven discrete emotions, in its order.
pub const EMOTIONS: [&str; 11] = [
    "joy",
    "sadness",
    "anger",
    "fear",
    "disgust",
    "surprise",
    "pride",
    "shame",
    "guilt",
    "gratitude",
    "awe",
];

/// Pleasure, arousal, dominance anchors of each emotion, each in [-1, 1]: joy, sadness (OCC
/// "distress"), anger, fear, pride, shame, guilt (OCC "remorse"), gratitude and awe (OCC
/// "admiration") as the ALMA model tabulates them from Mehrabian's PAD space (Gebhard 2005);
/// surprise and disgust are not in that table and are placed by thinkledger (ambiguous valence
/// and high arousal; negative valence, moderate arousal), as docs/cognition.md says.
const ANCHORS: [(f64, f64, f64); 11] = [
    (0.40, 0.20, 0.10),
    (-0.40, -0.20, -0.50),
    (-0.51, 0.59, 0.25),
    (-0.64, 0.60, -0.43),
    (-0.60, 0.35, 0.11),
    (0.00, 0.70, -0.10),
    (0.40, 0.30, 0.30),
    (-0.30, 0.10, -0.60),
    (-0.30, 0.10, -0.60),
    (0.40, 0.20, -0.30),
    (0.50, 0.30, -0.20),
];

/// Words formed from an emotion's own name (the name, its adjective and adverb forms): such a
/// word means that emotion only, though WordNet-Affect may list it under a second category too
/// (`guilty` is also under shame, `awe` and `awestruck` under surprise).
const NAME_WORDS: [&[&str]; 11] = [
    &["joy", "joyful", "joyfully", "joyous", "joyously"],
    &["sad", "sadly", "sadness"],
    &["anger", "angry", "angrily", "angered"],
    &["fear", "feared", "fearful", "fearfully", "afraid"],
    &["disgust", "disgusted", "disgusting", "disgustingly"],
    &["surprise", "surprised", "surprising", "surprisingly"],
    &["pride", "proud", "proudly"],
    &["shame", "ashamed", "shameful", "shamefully", "shamed"],
    &["guilt", "guilty", "guiltily"],
    &["gratitude", "grateful", "gratefully"],
    &[
        "awe",
        "awed",
        "awestruck",
        "awestricken",
        "awe-struck",
        "awe-inspiring",
    ],
];

/// VADER's normalisation constant: compound = x / √(x² + α).
const VADER_ALPHA: f64 = 15.0;

/// The valence, on VADER's word scale (−4…4), a lexicon word VADER has no entry for adds: 4 ×
/// the mean pleasure anchor of its emotions (awe 0.5 → 2.0, fear −0.64 → −2.56).
const LEXICON_VALENCE_SCALE: f64 = 4.0;

/// Lexicon words whose everyday sense is physical (a colour, the weather, an injury, a
/// broken thing, an illness): since emotion/7 they count only when one of the three words
/// before them puts a person in a feeling ([`FEELING_FRAME`]): "feeling blue", "I'm sick of
/// it", but not "The sky is blue" or "the printer is broken".
const PHYSICAL_SENSE: &[&str] = &["blue", "sunny", "sore", "broken", "sick"];

/// Words before a [`PHYSICAL_SENSE`] word that make it a feeling: a verb of feeling or
/// seeming, or a person as the subject (possessives such as "her" and "my" are left out: "her
/// blue dress").
const FEELING_FRAME: &[&str] = &[
    "feel", "feels", "felt", "feeling", "look", "looks", "looked", "looking", "seem", "seems",
    "seemed", "get", "gets", "got", "getting", "grew", "became", "become", "went", "am", "i", "im",
    "ive", "you", "youre", "he", "hes", "she", "shes", "we", "they", "theyre", "me", "him", "us",
    "them",
];

/// Whether the word at `tokens[i]` is one of [`PHYSICAL_SENSE`] outside a feeling frame.
fn physical_sense(tokens: &[String], i: usize) -> bool {
    PHYSICAL_SENSE.contains(&tokens[i].as_str())
        && !tokens[i.saturating_sub(3)..i]
            .iter()
            .any(|w| FEELING_FRAME.contains(&w.as_str()))
}

/// How much more similar than any sentence without an emotion the winning emotion's nearest
/// example must be for the vote to count (since emotion/7; cosine of potion-base-2M vectors).
/// Chosen on the development sentences without an emotion (docs/cognition.md): among their
/// votes the margin never reached 0.08, and among right votes on the labelled sets it fell
/// below it once.
pub const NONE_MARGIN: f64 = 0.08;

static VADER: LazyLock<vader_sentiment::SentimentIntensityAnalyzer<'static>> =
    LazyLock::new(vader_sentiment::SentimentIntensityAnalyzer::new);

/// Words that negate an emotion word up to three words after them (VADER's negation window).
const NEGATORS: &[&str] = &[
    "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without", "hardly",
    "barely", "cannot", "cant", "dont", "doesnt", "didnt", "isnt", "wasnt", "arent", "werent",
    "wont", "wouldnt", "shouldnt", "couldnt", "havent", "hasnt", "hadnt", "aint",
];

/// Words that strengthen the next emotion word (from VADER's booster list).
const INTENSIFIERS: &[&str] = &[
    "very",
    "really",
    "so",
    "extremely",
    "incredibly",
    "absolutely",
    "totally",
    "completely",
    "deeply",
    "utterly",
    "truly",
    "highly",
    "hugely",
    "immensely",
    "terribly",
    "awfully",
    "enormously",
    "especially",
    "exceptionally",
    "extraordinarily",
    "fully",
    "most",
    "such",
    "thoroughly",
    "tremendously",
    "unbelievably",
    "remarkably",
    "super",
    "quite",
    "too",
];

/// Words that weaken the next emotion word (VADER's negative boosters).
const DOWNTONERS: &[&str] = &[
    "slightly",
    "somewhat",
    "barely",
    "little",
    "marginally",
    "partly",
    "kinda",
    "mildly",
    "occasionally",
    "sort",
    "kind",
    "bit",
    "less",
];

/// Verbs that link a subject to a state ("was not happy"): a negator before one of them keeps
/// its scope over what follows.
const LINKING: &[&str] = &[
    "be", "am", "is", "are", "was", "were", "been", "being", "feel", "feels", "felt", "feeling",
    "seem", "seems", "seemed", "look", "looks", "looked", "sound", "sounds", "sounded", "become",
    "became", "get", "got", "getting",
];

/// Determiners that open a verb's object: a negator before another verb does not reach past
/// one ("couldn't shake the guilt", "didn't hide her joy").
const OBJECT_DETERMINERS: &[&str] = &[
    "the", "his", "her", "my", "their", "our", "your", "its", "this", "that", "these", "those",
];

/// Verbs of stopping: a negator before one keeps what follows going ("can't stop smiling",
/// "couldn't help laughing").
const CESSATION: &[&str] = &["stop", "help", "resist", "quit"];

/// Whether the negator at `j` reaches the word at `i` (j < i): not past a determiner opening
/// the object of a verb other than a linking one, not past a verb of stopping (since
/// emotion/5), and not in "couldn't be prouder" / "couldn't be more proud" (a comparative
/// after a negated *be* intensifies).
fn reaches(tokens: &[String], j: usize, i: usize) -> bool {
    let between = &tokens[j + 1..i];
    if let Some(first) = between.first() {
        if CESSATION.contains(&first.as_str()) {
            return false;
        }
        let comparative = tokens[i].ends_with("er") || between.iter().any(|w| w == "more");
        if (first == "be" || first == "have") && comparative {
            return false;
        }
        if !LINKING.contains(&first.as_str())
            && between[1..]
                .iter()
                .any(|w| OBJECT_DETERMINERS.contains(&w.as_str()))
        {
            return false;
        }
    }
    true
}

/// Whether the word at `i` is negated: a negator among the three words before it that reaches
/// it ([`reaches`]).
fn negated(tokens: &[String], i: usize) -> bool {
    (i.saturating_sub(3)..i)
        .any(|j| NEGATORS.contains(&tokens[j].as_str()) && reaches(tokens, j, i))
}

/// The text VADER scores: the text without the negators whose scope [`reaches`] says ends
/// before any word VADER values ("He couldn't shake the guilt" is scored as "He shake the
/// guilt"). Unchanged when there is none.
fn for_vader(text: &str) -> String {
    let spans: Vec<(usize, usize, String)> = WORD
        .find_iter(text)
        .map(|m| {
            let w = words(m.as_str()).concat();
            (m.start(), m.end(), w)
        })
        .collect();
    let tokens: Vec<String> = spans.iter().map(|(_, _, w)| w.clone()).collect();
    let mut drop: Vec<(usize, usize)> = Vec::new();
    for (j, (start, end, w)) in spans.iter().enumerate() {
        if !NEGATORS.contains(&w.as_str()) {
            continue;
        }
        let window = (j + 1..tokens.len().min(j + 4)).collect::<Vec<_>>();
        let valued = |k: usize| vader_word(&tokens[k]) != 0.0;
        let out_of_scope = window.iter().any(|&i| valued(i) && !reaches(&tokens, j, i))
            && window
                .iter()
                .take_while(|&&i| !OBJECT_DETERMINERS.contains(&tokens[i].as_str()))
                .all(|&i| {
                    !valued(i) || !reaches(&tokens, j, i) || CESSATION.contains(&tokens[i].as_str())
                });
        if out_of_scope {
            drop.push((*start, *end));
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in drop {
        out.push_str(&text[at..start]);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// A word as `words` splits them, with its place in the text.
static WORD: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"[\p{L}\p{N}'’-]+")
        .unwrap_or_else(|_| unreachable!("a constant regex compiles"))
});

/// One emotion's score.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct EmotionScore {
    pub emotion: String,
    /// 0–1: 1 − e^(−weight), the weight being the sum of its matched words' weights.
    pub score: f64,
    /// `high` (≥ 0.7), `moderate` (≥ 0.4) or `low`.
    pub intensity: String,
}

/// The seed's `circumplex`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Circumplex {
    /// −1…1: VADER's compound score.
    pub valence: f64,
    /// 0…1.
    pub arousal: f64,
    /// −1…1.
    pub dominance: f64,
    /// matched words / (matched words + 2): how much of the text the lexicons covered.
    pub confidence: f64,
}

/// The seed's `discrete`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Discrete {
    /// The highest-scoring emotion; null without an emotion word, cue or vote.
    pub primary: Option<String>,
    /// Emotions with a score above zero, highest first.
    pub emotions: Vec<EmotionScore>,
    pub confidence: f64,
    /// `lexicon` (an emotion word or appraisal cue) or `examples` (none of those: the nearest
    /// labelled examples voted), null without a primary.
    pub basis: Option<String>,
    /// The vote of the nearest labelled examples, when they decided (`basis: "examples"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub examples: Option<ExampleVote>,
}

/// How the nearest labelled examples voted (docs/cognition.md).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ExampleVote {
    /// How many examples voted.
    pub k: usize,
    /// Each label's share of the votes, highest first.
    pub shares: Vec<LabelShare>,
    /// The most similar example of the winning label.
    pub nearest: NearestExample,
}

/// One label's share of a vote.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LabelShare {
    pub label: String,
    pub share: f64,
}

/// A labelled example (thinkledger's own sentence) and its cosine similarity to the text.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct NearestExample {
    pub similarity: f64,
    pub sentence: String,
}

/// What the rules found in one text.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub circumplex: Circumplex,
    pub discrete: Discrete,
    /// Emotion words matched (negated ones excluded).
    pub matched: usize,
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The words of a text, lower case, apostrophes dropped (`don't` → `dont`).
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’' || c == '-'))
        .map(|w| {
            w.trim_matches('-')
                .chars()
                .filter(|c| *c != '\'' && *c != '’')
                .flat_map(char::to_lowercase)
                .collect::<String>()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

fn intensity(score: f64) -> &'static str {
    if score >= 0.7 {
        "high"
    } else if score >= 0.4 {
        "moderate"
    } else {
        "low"
    }
}

/// VADER's compound score of one word alone (0 when VADER has no entry for it).
fn vader_word(word: &str) -> f64 {
    VADER
        .polarity_scores(word)
        .get("compound")
        .copied()
        .unwrap_or(0.0)
}

/// VADER's compound score with `extra` (on VADER's word scale) added to the sum it normalised:
/// the sum is recovered from the compound (x = c·√(α / (1 − c²))), `extra` added, and the sum
/// normalised again. Without `extra` the compound is VADER's unchanged.
fn with_lexicon_valence(compound: f64, extra: f64) -> f64 {
    if extra == 0.0 || !compound.is_finite() {
        return compound;
    }
    let c = compound.clamp(-0.9999, 0.9999);
    let sum = c * (VADER_ALPHA / (1.0 - c * c)).sqrt() + extra;
    sum / (sum * sum + VADER_ALPHA).sqrt()
}

/// 1.5 after an intensifier, 0.5 after a downtoner, else 1.
fn intensifier(tokens: &[String], i: usize) -> f64 {
    match i.checked_sub(1).map(|j| tokens[j].as_str()) {
        Some(w) if INTENSIFIERS.contains(&w) => 1.5,
        Some(w) if DOWNTONERS.contains(&w) => 0.5,
        _ => 1.0,
    }
}

/// What the reading of a text's words found, threaded through its two passes (appraisal cues,
/// then lexicon words).
struct Tally {
    /// Each emotion's summed weight.
    weight: [f64; 11],
    /// Emotions named outright (a word of `NAME_WORDS`): they win a tie.
    named_outright: [bool; 11],
    /// Emotions an appraisal cue points to: after a name, they win a tie.
    cued: [bool; 11],
    /// How many emotion words and cues were read.
    matched: usize,
    /// Emotion words and cues found negated: the text speaks of emotions, so no vote.
    negated_words: usize,
    /// VADER's word scale sum of the emotion words VADER itself does not know.
    unknown_to_vader: f64,
    /// The tokens an appraisal cue spans, not read again as lexicon words.
    covered: Vec<bool>,
}

impl Tally {
    fn new(tokens: usize) -> Self {
        Self {
            weight: [0.0; 11],
            named_outright: [false; 11],
            cued: [false; 11],
            matched: 0,
            negated_words: 0,
            unknown_to_vader: 0.0,
            covered: vec![false; tokens],
        }
    }

    /// The first pass: each appraisal cue not overlapping an earlier one and not negated
    /// weighs for its emotion, and covers its words.
    fn read_cues(&mut self, tokens: &[String]) {
        for cue in appraisal::find(tokens) {
            if self.covered[cue.start..cue.end].iter().any(|c| *c) {
                continue;
            }
            if negated(tokens, cue.start) {
                self.negated_words += 1;
                continue;
            }
            self.covered[cue.start..cue.end]
                .iter_mut()
                .for_each(|c| *c = true);
            let Some(k) = EMOTIONS.iter().position(|e| *e == cue.emotion) else {
                continue;
            };
            let factor = intensifier(tokens, cue.start);
            self.matched += 1;
            self.cued[k] = true;
            self.weight[k] += factor * cue.weight;
            if let Some(n) = tokens[cue.start..cue.end].iter().find_map(|w| named(w)) {
                self.named_outright[n] = true;
            }
            if tokens[cue.start..cue.end]
                .iter()
                .all(|w| vader_word(w) == 0.0)
            {
                self.unknown_to_vader += factor * cue.weight * LEXICON_VALENCE_SCALE * ANCHORS[k].0;
            }
        }
    }

    /// The second pass: each uncovered addition phrase or lexicon word (not in a physical
    /// sense, not negated) shares its weight among its emotions.
    fn read_words(&mut self, tokens: &[String]) {
        let mut i = 0;
        while i < tokens.len() {
            if self.covered[i] {
                i += 1;
                continue;
            }
            let token = &tokens[i];
            let (emotions, span) = match phrase_at(tokens, i) {
                Some((k, n)) => (vec![k], n),
                None => match emotions_of(token) {
                    Some(_) if physical_sense(tokens, i) => {
                        i += 1;
                        continue;
                    }
                    Some(emotions) => (emotions, 1),
                    None => {
                        i += 1;
                        continue;
                    }
                },
            };
            let start = i;
            i += span;
            if negated(tokens, start) {
                self.negated_words += 1;
                continue;
            }
            let i = start;
            let factor = intensifier(tokens, i);
            self.matched += 1;
            let shares = shares(&emotions);
            for (&k, share) in emotions.iter().zip(&shares) {
                self.weight[k] += factor * share;
            }
            if let Some(k) = named(token) {
                self.named_outright[k] = true;
            }
            if tokens[i..i + span].iter().all(|w| vader_word(w) == 0.0) {
                let pleasure: f64 = emotions
                    .iter()
                    .zip(&shares)
                    .map(|(&k, share)| ANCHORS[k].0 * share)
                    .sum();
                self.unknown_to_vader += factor * LEXICON_VALENCE_SCALE * pleasure;
            }
        }
    }

    /// No emotion word and no cue: the nearest labelled examples vote (since emotion/6), each
    /// emotion weighing its share of the votes. A sentence without an emotion (`none`) among
    /// the nearest, or (since emotion/7) one nearly as similar as the winner's nearest example:
    /// the text may be one too, and no emotion is read into it.
    fn example_vote(&mut self, text: &str) -> Option<examples::Vote> {
        let vote = if self.matched == 0 && self.negated_words == 0 {
            examples::EMOTION_EXAMPLES.vote(text).filter(|v| {
                v.shares.iter().all(|(label, _)| *label != "none")
                    && v.nearest_none
                        .is_none_or(|none| v.nearest.0 - none >= NONE_MARGIN)
            })
        } else {
            None
        };
        if let Some(vote) = &vote {
            for (label, share) in &vote.shares {
                if let Some(k) = EMOTIONS.iter().position(|e| e == label) {
                    self.weight[k] += share;
                }
            }
        }
        vote
    }
}

/// The text's valence: VADER's compound, with the emotion words VADER does not know added.
/// When VADER is neutral, the emotions' pleasure is its sum; when VADER's sign disagrees with
/// the emotions found, they decide: VADER reads words, and misreads a negator's scope, an
/// idiom, or a kind word in a bad situation ("the cake saved for my brother").
fn valence(text: &str, tally: &Tally) -> f64 {
    let valence = with_lexicon_valence(
        VADER
            .polarity_scores(&for_vader(text))
            .get("compound")
            .copied()
            .unwrap_or(0.0),
        tally.unknown_to_vader,
    );
    let pleasure: f64 = tally
        .weight
        .iter()
        .zip(ANCHORS)
        .map(|(w, (p, _, _))| w * LEXICON_VALENCE_SCALE * p)
        .sum();
    if valence * pleasure < 0.0 || valence == 0.0 {
        with_lexicon_valence(0.0, pleasure)
    } else {
        valence
    }
}

/// Arousal and dominance: the emotions' anchors weighted by their scores; with no emotion, the
/// only signal is how strong the valence is.
fn arousal_and_dominance(scores: &[f64], valence: f64, exclamations: usize) -> (f64, f64) {
    let total: f64 = scores.iter().sum();
    if total > 0.0 {
        let a: f64 = scores.iter().zip(ANCHORS).map(|(s, (_, a, _))| s * a).sum();
        let d: f64 = scores.iter().zip(ANCHORS).map(|(s, (_, _, d))| s * d).sum();
        ((a / total + 1.0) / 2.0, d / total)
    } else {
        (
            0.5 * valence.abs() + 0.1 * f64::from(u8::try_from(exclamations).unwrap_or(3)),
            0.0,
        )
    }
}

/// The emotions with a score, highest first; on a tie an emotion named outright first, then
/// one an appraisal cue points to, then the seed's order.
fn ranked(scores: &[f64], tally: &Tally) -> Vec<EmotionScore> {
    let mut emotions: Vec<EmotionScore> = scores
        .iter()
        .enumerate()
        .filter(|(_, s)| **s > 0.0)
        .map(|(k, s)| EmotionScore {
            emotion: EMOTIONS[k].to_owned(),
            score: round3(*s),
            intensity: intensity(*s).to_owned(),
        })
        .collect();
    let index = |e: &EmotionScore| EMOTIONS.iter().position(|x| *x == e.emotion).unwrap_or(0);
    emotions.sort_by(|a, b| {
        let (i, j) = (index(a), index(b));
        b.score
            .total_cmp(&a.score)
            .then_with(|| tally.named_outright[j].cmp(&tally.named_outright[i]))
            .then_with(|| tally.cued[j].cmp(&tally.cued[i]))
    });
    emotions
}

/// The discrete reading: the ranked emotions, the primary one and on what basis, and how
/// clearly it leads. Without an emotion word, a cue or a vote there is no emotion to name
/// (emotion/6 named joy or sadness by a valence of 0.3 or more: on the labelled sets that was
/// never right, and it named an emotion in requests and notices VADER finds mildly positive or
/// negative).
fn discrete(emotions: Vec<EmotionScore>, vote: Option<examples::Vote>) -> Discrete {
    let (primary, basis) = match emotions.first() {
        Some(top) if vote.is_some() => (Some(top.emotion.clone()), Some("examples".to_owned())),
        Some(top) => (Some(top.emotion.clone()), Some("lexicon".to_owned())),
        None => (None, None),
    };
    let discrete_confidence = match &emotions[..] {
        [top, second, ..] => round3(top.score * (1.0 - second.score / (top.score + 1.0))),
        [top] => round3(top.score),
        [] => 0.0,
    };
    Discrete {
        primary,
        emotions,
        confidence: discrete_confidence,
        basis,
        examples: vote.map(|v| ExampleVote {
            k: examples::K,
            shares: v
                .shares
                .iter()
                .map(|(label, share)| LabelShare {
                    label: (*label).to_owned(),
                    share: round3(*share),
                })
                .collect(),
            nearest: NearestExample {
                similarity: round3(v.nearest.0),
                sentence: v.nearest.1.to_owned(),
            },
        }),
    }
}

/// Reads the emotions of `text`: appraisal cues first, then lexicon words, then (when neither
/// found anything) the nearest labelled examples; scores from the weights, the circumplex from
/// VADER and the emotions' anchors.
pub fn read(text: &str) -> Reading {
    let tokens = words(text);
    let mut tally = Tally::new(tokens.len());
    tally.read_cues(&tokens);
    tally.read_words(&tokens);
    let vote = tally.example_vote(text);
    let exclamations = text.matches('!').count().min(3);
    #[allow(clippy::cast_precision_loss)] // at most 3
    let emphasis = 1.0 + 0.1 * exclamations as f64;
    let scores: Vec<f64> = tally
        .weight
        .iter()
        .map(|w| 1.0 - (-(w * emphasis)).exp())
        .collect();
    let valence = valence(text, &tally);
    let (arousal, dominance) = arousal_and_dominance(&scores, valence, exclamations);
    let vader_words = tokens.iter().filter(|w| vader_word(w) != 0.0).count();
    let coverage = tally.matched.max(vader_words);
    #[allow(clippy::cast_precision_loss)] // word counts
    let confidence = coverage as f64 / (coverage as f64 + 2.0);
    let emotions = ranked(&scores, &tally);
    Reading {
        circumplex: Circumplex {
            valence: round3(valence),
            arousal: round3(arousal.clamp(0.0, 1.0)),
            dominance: round3(dominance.clamp(-1.0, 1.0)),
            confidence: round3(confidence),
        },
        discrete: discrete(emotions, vote),
        matched: tally.matched,
    }
}

#[cfg(test)]
mod tests {
    use super::lexicon::LEXICON;
    use super::*;

    #[test]
    fn the_lexicon_covers_every_emotion() {
        for (k, e) in EMOTIONS.iter().enumerate() {
            assert!(LEXICON.values().any(|v| v.contains(&k)), "{e} has no word");
        }
    }

    #[test]
    fn without_an_emotion_word_the_nearest_examples_vote() {
        // No emotion word, no cue: a described loss.
        let r = read("The vet said there was nothing more they could do for our dog.");
        assert_eq!(r.matched, 0);
        assert_eq!(r.discrete.basis.as_deref(), Some("examples"));
        assert_eq!(r.discrete.primary.as_deref(), Some("sadness"));
        let vote = r.discrete.examples.as_ref().unwrap();
        assert_eq!(vote.k, examples::K);
        assert!(r.circumplex.valence < 0.0, "{r:?}");
        // A plain statement: the sentences without an emotion win the vote.
        let r = read("The meeting moved to room 204 on the third floor.");
        assert_ne!(r.discrete.basis.as_deref(), Some("examples"));
        assert!(r.discrete.examples.is_none());
        // An emotion word, even negated, keeps the vote out.
        assert_ne!(
            read("I am not happy.").discrete.basis.as_deref(),
            Some("examples")
        );
        assert!(read("I am not happy.").discrete.examples.is_none());
    }

    #[test]
    fn a_plain_statement_reads_no_emotion() {
        // emotion/6 read sadness 0.63 here ("blue" is WN-Affect's sadness).
        for text in [
            "The sky is blue.",
            "The cat sleeps on the blue sofa most afternoons.",
            "He wore a black coat and a grey scarf.",
            "The report is due on Monday morning.",
        ] {
            let r = read(text);
            assert_eq!(r.discrete.primary, None, "{text}: {r:?}");
            assert!(r.discrete.emotions.is_empty(), "{text}: {r:?}");
            assert!(r.circumplex.valence.abs() < 0.3, "{text}: {r:?}");
        }
        // A person feeling it: the affective sense.
        let r = read("The final episode left him feeling blue for days.");
        assert_eq!(r.discrete.primary.as_deref(), Some("sadness"));
        assert_eq!(
            read("I'm sick of being talked over.").discrete.primary,
            read("I'm fed up with being talked over.").discrete.primary
        );
    }

    #[test]
    fn negation_removes_and_intensifiers_raise() {
        let plain = read("I am happy.");
        let very = read("I am very happy.");
        let not = read("I am not happy.");
        let top = |r: &Reading| r.discrete.emotions.first().map_or(0.0, |e| e.score);
        assert!(top(&very) > top(&plain));
        assert!(not.discrete.emotions.iter().all(|e| e.emotion != "joy"));
        assert!(plain.circumplex.valence > 0.0);
        assert!(not.circumplex.valence < 0.0);
    }

    #[test]
    fn inflected_forms_are_found() {
        assert_eq!(
            read("She was terrified.").discrete.primary.as_deref(),
            Some("fear")
        );
        assert_eq!(
            read("He felt ashamed").discrete.primary.as_deref(),
            Some("shame")
        );
        assert_eq!(
            read("We are grateful").discrete.primary.as_deref(),
            Some("gratitude")
        );
    }

    #[test]
    fn a_word_naming_an_emotion_counts_for_that_emotion_only() {
        // WN-Affect lists "guilty" under guilt and shame, "awe" under awe and surprise.
        assert_eq!(LEXICON.get("guilty").map(Vec::len), Some(2));
        assert_eq!(
            read("I feel guilty.").discrete.primary.as_deref(),
            Some("guilt")
        );
        assert_eq!(
            read("We were in awe.").discrete.primary.as_deref(),
            Some("awe")
        );
        let awe = read("We were in awe.");
        assert_eq!(awe.discrete.emotions.len(), 1, "{awe:?}");
    }

    #[test]
    fn a_word_under_several_emotions_is_shared_by_their_vocabularies() {
        let (fear, shame) = (3, 7);
        let split = shares(&[fear, shame]);
        assert!((split.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(
            split[1] > split[0],
            "shame has the smaller vocabulary: {split:?}"
        );
        assert_eq!(shares(&[fear]), vec![1.0]);
        assert_eq!(
            read("He was embarrassed.").discrete.primary.as_deref(),
            Some("shame")
        );
    }

    #[test]
    fn additions_match_whole_phrases_and_are_negated_like_words() {
        assert_eq!(
            read("It came out of the blue.").discrete.primary.as_deref(),
            Some("surprise")
        );
        assert_eq!(
            read("Thanks for the help.").discrete.primary.as_deref(),
            Some("gratitude")
        );
        // A phrase's words alone are not the phrase.
        assert_eq!(
            read("They caught me off guard.")
                .discrete
                .primary
                .as_deref(),
            Some("surprise")
        );
        assert_eq!(read("The guard was off duty.").matched, 0);
        assert!(
            read("I was not thrilled.")
                .discrete
                .emotions
                .iter()
                .all(|e| e.emotion != "joy")
        );
    }

    #[test]
    fn emotion_words_vader_lacks_move_the_valence_by_their_emotion() {
        // VADER has no entry for "awe": its valence alone is 0.
        assert_eq!(vader_word("awe"), 0.0);
        assert!(read("It left me in awe.").circumplex.valence > 0.3);
        // Unchanged when there is nothing to add, and still within (-1, 1) at the extremes.
        assert_eq!(with_lexicon_valence(0.42, 0.0), 0.42);
        for (c, extra) in [(0.9999, 8.0), (-0.9999, -8.0), (1.0, 2.0), (-0.5, 2.0)] {
            let v = with_lexicon_valence(c, extra);
            assert!(v.abs() < 1.0 && v.is_finite(), "{c} {extra} -> {v}");
        }
        assert!(with_lexicon_valence(-0.5, 4.0) > 0.0);
    }

    #[test]
    fn odd_input_reads_without_panicking() {
        for text in [
            "",
            "!!!",
            "😀😀",
            "'''",
            "a-b-c",
            "ÆØÅ ü",
            &"x".repeat(10_000),
        ] {
            let _ = read(text);
        }
    }
}
