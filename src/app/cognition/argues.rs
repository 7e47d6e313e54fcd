//! `thinkledger.cognition.argues/2`: whether a passage argues at all — a binary logistic
//! regression over reader/2's inputs and the passage's discourse ([`discourse`]: how much of it
//! asks, instructs, greets, narrates or reports, and how much of it concludes, gives reasons,
//! prescribes, judges or predicts). It decides one thing, the neutral answer of
//! `analyze_reasoning` for text with no argument: a passage with a finding (the rules' or
//! reader/2's) argues, however badly, and is never neutral. Adopted by the seventh held-out
//! set's one run (10/12 argument-free texts neutral, 0/24 sound passages; docs/cognition.md).
//!
//! Its weights (`argues_weights.json`) are trained by `reader_training` on ten development sets,
//! a test regenerating them bit for bit. Pure, as reader/2: the embedding and the weights are
//! compiled in, so re-execution gives the same answer. Must not know MCP or the ledger.

use std::sync::LazyLock;

use super::reader::{self, Weights};

/// The model's name and version, as answers and the evaluation name it.
pub const RULES: &str = "thinkledger.cognition.argues/2";

/// Words that mark a conclusion drawn.
const CONCLUDE: &[&str] = &[
    "therefore",
    "thus",
    "hence",
    "so",
    "consequently",
    "accordingly",
    "proves",
    "shows",
    "means",
    "clearly",
    "obviously",
];

/// Words that mark a reason given.
const REASON: &[&str] = &[
    "because", "since", "given", "due", "evidence", "data", "studies",
];

/// Words that prescribe.
const PRESCRIBE: &[&str] = &[
    "should",
    "shouldn't",
    "must",
    "mustn't",
    "ought",
    "need",
    "needs",
    "recommend",
    "worth",
    "better",
    "best",
    "worse",
    "worst",
];

/// Words that judge.
const JUDGE: &[&str] = &[
    "good",
    "bad",
    "great",
    "terrible",
    "awful",
    "excellent",
    "right",
    "wrong",
    "mistake",
    "waste",
    "smart",
    "stupid",
    "fair",
    "unfair",
    "safe",
    "unsafe",
    "reliable",
    "effective",
    "useless",
    "pointless",
    "overrated",
    "ideal",
    "sense",
];

/// Words that predict.
const PREDICT: &[&str] = &[
    "will", "won't", "going", "likely", "unlikely", "probably", "would", "might",
];

/// Words of greeting, thanks and notice.
const SOCIAL: &[&str] = &[
    "thanks",
    "thank",
    "congrats",
    "congratulations",
    "hi",
    "hello",
    "hey",
    "welcome",
    "cheers",
    "please",
    "reminder",
    "fyi",
    "dear",
];

/// Verbs that open an instruction.
const INSTRUCT: &[&str] = &[
    "add", "bake", "boil", "bring", "call", "check", "chop", "click", "combine", "cook", "cut",
    "don't", "drop", "enter", "fill", "follow", "grab", "heat", "hold", "join", "keep", "leave",
    "let", "make", "meet", "mix", "note", "open", "pack", "pick", "place", "please", "pour",
    "preheat", "press", "put", "read", "register", "remember", "remove", "reply", "send", "serve",
    "set", "sign", "stir", "submit", "take", "tap", "toss", "turn", "use", "wait", "wash",
];

/// Names of the [`discourse`] columns, in order.
pub(super) const DISCOURSE: [&str; 13] = [
    "questions per sentence",
    "exclamations per sentence",
    "instructions per sentence",
    "conclusion words per sentence",
    "reason words per sentence",
    "prescriptions per sentence",
    "judgements per sentence",
    "predictions per sentence",
    "greetings and thanks",
    "numbers per word",
    "first person per word",
    "past tense per word",
    "log of words",
];

/// The passage's discourse, as [`DISCOURSE`] names it: what share of its sentences ask,
/// exclaim or instruct, how often it uses words that conclude, give reasons, prescribe, judge or
/// predict, and how much of it is greeting, numbers, first person and past tense.
#[allow(clippy::cast_precision_loss)] // word and sentence counts
pub(super) fn discourse(text: &str) -> [f64; DISCOURSE.len()] {
    let sentences: Vec<&str> = text
        .split_inclusive(['.', '?', '!'])
        .map(str::trim)
        .filter(|s| s.chars().any(char::is_alphanumeric))
        .collect();
    let n = sentences.len().max(1) as f64;
    let ends = |c: char| sentences.iter().filter(|s| s.ends_with(c)).count() as f64 / n;
    let words = words_of(text);
    let w = words.len().max(1) as f64;
    let of = |list: &[&str]| words.iter().filter(|x| list.contains(&x.as_str())).count() as f64;
    let instructions = sentences
        .iter()
        .filter(|s| {
            words_of(s)
                .first()
                .is_some_and(|first| INSTRUCT.contains(&first.as_str()))
        })
        .count() as f64;
    let numbers = words
        .iter()
        .filter(|x| x.chars().any(|c| c.is_ascii_digit()))
        .count() as f64;
    let first_person = of(&[
        "i", "i'm", "i've", "my", "we", "we're", "we've", "our", "us", "me",
    ]);
    let past = words
        .iter()
        .filter(|x| x.len() > 4 && x.ends_with("ed"))
        .count() as f64
        + of(&[
            "was", "were", "had", "did", "went", "got", "came", "took", "made", "said",
        ]);
    [
        ends('?'),
        ends('!'),
        instructions / n,
        of(CONCLUDE) / n,
        of(REASON) / n,
        of(PRESCRIBE) / n,
        of(JUDGE) / n,
        of(PREDICT) / n,
        of(SOCIAL).min(1.0),
        numbers / w,
        first_person / w,
        past / w,
        w.ln(),
    ]
}

/// The words of `text`, lowercased, a typographic apostrophe made plain.
fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase().replace('’', "'"))
        .collect()
}

/// reader/2's inputs, then the passage's [`discourse`]; `None` when the embedding did not load.
pub fn inputs(text: &str) -> Option<Vec<f64>> {
    let mut out = reader::inputs(text)?;
    out.extend(discourse(text));
    Some(out)
}

/// The weights in the binary (two rows: argues, argues nothing); `None` if they do not parse.
static WEIGHTS: LazyLock<Option<Weights>> =
    LazyLock::new(|| serde_json::from_str(include_str!("argues_weights.json")).ok());

/// The probability that `inputs` argue nothing, under `w`.
pub(super) fn no_argument_probability(w: &Weights, inputs: &[f64]) -> f64 {
    reader::probabilities(w, inputs)
        .get(1)
        .copied()
        .unwrap_or(0.0)
}

/// Whether the passage of `inputs` ([`inputs`]) argues nothing, by the weights' `neutral_at`,
/// and the probability; `None` when the weights did not load (then the answer is never neutral).
pub fn argues_nothing(inputs: &[f64]) -> Option<(bool, f64)> {
    let w = WEIGHTS.as_ref()?;
    let p = no_argument_probability(w, inputs);
    Some((p >= w.neutral_at, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discourse_counts_what_a_passage_does() {
        let d = discourse("Preheat the oven. Do we have eggs? Thanks!");
        assert!(
            (d[0] - 1.0 / 3.0).abs() < 1e-9,
            "one question of three: {d:?}"
        );
        assert!((d[1] - 1.0 / 3.0).abs() < 1e-9, "one exclamation: {d:?}");
        assert!((d[2] - 1.0 / 3.0).abs() < 1e-9, "one instruction: {d:?}");
        assert!((d[8] - 1.0).abs() < 1e-9, "thanks: {d:?}");
        let d = discourse("We should fix it, because it will break. So it is best now.");
        assert!(
            d[3] > 0.0 && d[4] > 0.0 && d[5] > 0.0 && d[7] > 0.0,
            "{d:?}"
        );
    }

    #[test]
    fn the_weights_in_the_binary_load_and_fit_the_inputs() {
        let w = WEIGHTS.as_ref().expect("argues_weights.json parses");
        let x = inputs("The sky is blue because it is blue.").expect("embeds");
        assert_eq!(w.columns, x.len());
        assert_eq!(w.bias.len(), 2);
        assert!(w.weights.iter().all(|r| r.len() == w.columns));
        let x = inputs("Is the bus running late today?").expect("embeds");
        let (_, p) = argues_nothing(&x).expect("reads");
        assert!((0.0..=1.0).contains(&p));
    }
}
