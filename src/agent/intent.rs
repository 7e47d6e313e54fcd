//! `EmbeddingIntentAnalyzer`: the seed's semantic intent analysis, with cue rules first.
//!
//! Rules (`intent-rules/1`), in order, on the answer's sentences:
//! 1. nothing but blanks: `ambiguous`;
//! 2. a short greeting or thanks (at most 8 words): `general_conversation`;
//! 3. the last sentence ends with `?`: `asks_clarifying_question`;
//! 4. it names its answer ("the answer is", "in summary", "therefore", "final answer", "here
//!    is", …): `provides_final_answer`;
//! 5. a sentence opens in the first person future or intent ("I will", "I'll", "Let me",
//!    "I'm going to", "First, I", "My plan", "I need to", "I should", …), or describes using a
//!    tool (names a tool with "use", "call", "run" or "invoke") without calling it:
//!    `provides_plan_without_explicit_action`.
//!
//! Otherwise the answer asks nothing and plans nothing: it is embedded and given the intent of
//! its nearest answer or small-talk prototype by cosine, when one is near enough (question and
//! plan prototypes do not compete without their cues: potion-base-2M put half the plain
//! answers of the labelled set nearest to "My plan is to start by checking the data."); and an
//! answer near none is a statement: `provides_final_answer` (a text-only answer is the model's way of
//! ending; before these rules such plain answers as "The capital of France is Paris." scored
//! 0.06 against every prototype and ended runs as `needs_input`). The `method` of each analysis
//! names the rule or the embedding model that decided. Measured on the labelled answers of
//! `tests/fixtures/agent/intents.tsv` (a development set) by the tests below. The built-in
//! potion-base-2M embedder by default (no download, no configuration).

use std::sync::Arc;

use super::error::ReasoningError;
use super::traits::{DetectedIntent, IntentAnalysis, IntentAnalyzer};
use crate::embed::{Embedder, StaticEmbedder};

/// The prototype phrases of each intent.
const PROTOTYPES: &[(DetectedIntent, &str)] = &[
    (DetectedIntent::ProvidesFinalAnswer, "The answer is"),
    (DetectedIntent::ProvidesFinalAnswer, "The task is complete."),
    (
        DetectedIntent::ProvidesFinalAnswer,
        "Here is the result you asked for.",
    ),
    (
        DetectedIntent::ProvidesFinalAnswer,
        "In summary, the final answer is this.",
    ),
    (
        DetectedIntent::ProvidesPlanWithoutExplicitAction,
        "First I will do this, then I will do that.",
    ),
    (
        DetectedIntent::ProvidesPlanWithoutExplicitAction,
        "I will use the tool to find out.",
    ),
    (
        DetectedIntent::ProvidesPlanWithoutExplicitAction,
        "My plan is to start by checking the data.",
    ),
    (
        DetectedIntent::ProvidesPlanWithoutExplicitAction,
        "Let me think step by step and call the tool next.",
    ),
    (
        DetectedIntent::AsksClarifyingQuestion,
        "Could you clarify what you mean?",
    ),
    (
        DetectedIntent::AsksClarifyingQuestion,
        "Which one do you want?",
    ),
    (
        DetectedIntent::AsksClarifyingQuestion,
        "Can you give me more details?",
    ),
    (
        DetectedIntent::GeneralConversation,
        "Hello! How can I help you today?",
    ),
    (
        DetectedIntent::GeneralConversation,
        "Thank you, you are welcome.",
    ),
];

/// Reads intents by the nearest prototype phrase.
pub struct EmbeddingIntentAnalyzer {
    embedder: Arc<dyn Embedder>,
    prototypes: Vec<(DetectedIntent, &'static str, Vec<f32>)>,
    /// The least cosine that names an intent; below it the answer is `ambiguous`.
    threshold: f32,
}

impl EmbeddingIntentAnalyzer {
    /// Over the built-in potion-base-2M embedder.
    pub fn local() -> Result<Self, ReasoningError> {
        let embedder =
            StaticEmbedder::potion_base_2m().map_err(|e| ReasoningError::Intent(e.to_string()))?;
        Self::new(Arc::new(embedder), 0.3)
    }

    /// Over `embedder`, naming an intent from a cosine of `threshold` up.
    pub fn new(embedder: Arc<dyn Embedder>, threshold: f32) -> Result<Self, ReasoningError> {
        let texts: Vec<&str> = PROTOTYPES.iter().map(|(_, t)| *t).collect();
        let vectors = embedder
            .embed(&texts)
            .map_err(|e| ReasoningError::Intent(e.to_string()))?;
        let prototypes = PROTOTYPES
            .iter()
            .zip(vectors)
            .map(|((intent, text), v)| (*intent, *text, v.into_vector()))
            .collect();
        Ok(Self {
            embedder,
            prototypes,
            threshold,
        })
    }
}

/// The version of the cue rules, named in each analysis they decide.
const RULES: &str = "intent-rules/1";

/// Openings of a sentence that say what the model is about to do.
const PLAN_OPENINGS: &[&str] = &[
    "i will ",
    "i'll ",
    "let me ",
    "i am going to ",
    "i'm going to ",
    "first, i",
    "first i ",
    "next, i",
    "next i ",
    "then i ",
    "my plan ",
    "i need to ",
    "i should ",
    "i must ",
    "to answer this, i",
    "to solve this, i",
    "to do this, i",
    "i can use ",
    "i would ",
    "i plan to ",
    "i intend to ",
];

/// Verbs that, in a sentence naming a tool, describe using it.
const TOOL_USE_VERBS: &[&str] = &["use ", "using ", "call ", "calling ", "run ", "invoke "];

/// Phrases that say an answer is being given, which outweigh any plan wording.
const ANSWER_MARKERS: &[&str] = &[
    "the answer is",
    "answer:",
    "in summary",
    "in conclusion",
    "therefore",
    "final answer",
    "the result is",
    "here is",
    "here are",
];

/// Openings of small talk.
const CONVERSATION_OPENINGS: &[&str] = &[
    "hello",
    "hi ",
    "hi!",
    "hi,",
    "hey",
    "thanks",
    "thank you",
    "you're welcome",
    "you are welcome",
    "good morning",
    "good afternoon",
    "good evening",
];

/// Sentences of `text`, lowercased, split after `.`, `!` and `?`.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        current.push(c);
        if matches!(c, '.' | '!' | '?' | '\n') {
            let s = current.trim().to_lowercase();
            if !s.is_empty() {
                out.push(s);
            }
            current.clear();
        }
    }
    let s = current.trim().to_lowercase();
    if !s.is_empty() {
        out.push(s);
    }
    out
}

/// The intent the cue rules give `text`, with the rule's name, if one applies.
fn by_rules(text: &str) -> Option<(DetectedIntent, &'static str)> {
    let sentences = sentences(text);
    let last = sentences.last()?;
    let lower = text.to_lowercase();
    let words = text.split_whitespace().count();
    if words <= 8 && CONVERSATION_OPENINGS.iter().any(|o| lower.starts_with(o)) {
        return Some((DetectedIntent::GeneralConversation, "greeting or thanks"));
    }
    if last.ends_with('?') {
        return Some((
            DetectedIntent::AsksClarifyingQuestion,
            "ends with a question",
        ));
    }
    if ANSWER_MARKERS.iter().any(|m| lower.contains(m)) {
        return Some((DetectedIntent::ProvidesFinalAnswer, "names its answer"));
    }
    let describes_tool_use =
        |s: &String| s.contains("tool") && TOOL_USE_VERBS.iter().any(|v| s.contains(v));
    if sentences
        .iter()
        .any(|s| PLAN_OPENINGS.iter().any(|p| s.starts_with(p)) || describes_tool_use(s))
    {
        return Some((
            DetectedIntent::ProvidesPlanWithoutExplicitAction,
            "says what it will do",
        ));
    }
    None
}

impl IntentAnalyzer for EmbeddingIntentAnalyzer {
    fn analyze_intent(&self, text: &str) -> Result<IntentAnalysis, ReasoningError> {
        if text.trim().is_empty() {
            return Ok(IntentAnalysis {
                intent: DetectedIntent::Ambiguous,
                score: 0.0,
                matched: None,
                method: format!("rules:{RULES} (empty answer)"),
            });
        }
        if let Some((intent, rule)) = by_rules(text) {
            return Ok(IntentAnalysis {
                intent,
                score: 1.0,
                matched: Some(rule.to_owned()),
                method: format!("rules:{RULES}"),
            });
        }
        let vector = self
            .embedder
            .embed_one(text)
            .map_err(|e| ReasoningError::Intent(e.to_string()))?;
        // Only the intents whose cues are present compete: an answer that does not end in a
        // question asks none, and one that does not say what it will do plans nothing (the
        // rules above found neither), so only an answer or small talk remain.
        let best = self
            .prototypes
            .iter()
            .filter(|(intent, ..)| {
                matches!(
                    intent,
                    DetectedIntent::ProvidesFinalAnswer | DetectedIntent::GeneralConversation
                )
            })
            .map(|(intent, phrase, v)| (*intent, *phrase, crate::embed::cosine(vector.vector(), v)))
            .max_by(|a, b| a.2.total_cmp(&b.2));
        let method = format!("embedding:{}", self.embedder.model());
        Ok(match best {
            Some((intent, phrase, score)) if score >= self.threshold => IntentAnalysis {
                intent,
                score,
                matched: Some(phrase.to_owned()),
                method,
            },
            // Near no prototype, asking and planning nothing: a statement, so an answer.
            Some((_, phrase, score)) => IntentAnalysis {
                intent: DetectedIntent::ProvidesFinalAnswer,
                score,
                matched: Some(phrase.to_owned()),
                method: format!(
                    "rules:{RULES} (a statement that asks and plans nothing; {method})"
                ),
            },
            None => IntentAnalysis {
                intent: DetectedIntent::Ambiguous,
                score: 0.0,
                matched: None,
                method,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intent(text: &str) -> IntentAnalysis {
        EmbeddingIntentAnalyzer::local()
            .and_then(|a| a.analyze_intent(text))
            .expect("the built-in embedder loads")
    }

    #[test]
    fn clear_answers_are_read_by_their_nearest_prototype() {
        let cases = [
            (
                "Could you tell me which file you mean?",
                DetectedIntent::AsksClarifyingQuestion,
            ),
            (
                "Hello! How can I help you?",
                DetectedIntent::GeneralConversation,
            ),
            ("The answer is 42.", DetectedIntent::ProvidesFinalAnswer),
            (
                "To solve this, I will use the sequentialthinking tool to break it down.",
                DetectedIntent::ProvidesPlanWithoutExplicitAction,
            ),
        ];
        for (text, expected) in cases {
            let read = intent(text);
            assert_eq!(read.intent, expected, "{text:?} read as {read:?}");
            assert!(read.score >= 0.3, "{read:?}");
            assert!(
                read.method == "rules:intent-rules/1"
                    || read.method == "embedding:minishlab/potion-base-2M",
                "{read:?}"
            );
        }
    }

    #[test]
    fn a_plain_statement_is_a_final_answer_and_blanks_are_ambiguous() {
        let read = intent("The capital of France is Paris.");
        assert_eq!(read.intent, DetectedIntent::ProvidesFinalAnswer, "{read:?}");
        assert!(read.method.starts_with("rules:intent-rules/1"), "{read:?}");
        assert_eq!(intent("  \n ").intent, DetectedIntent::Ambiguous);
    }

    /// Every labelled answer of the development set is read as labelled.
    #[test]
    fn the_labelled_answers_are_read_as_labelled() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/agent/intents.tsv"
        );
        let set = std::fs::read_to_string(path).expect("the labelled set");
        let analyzer = EmbeddingIntentAnalyzer::local().expect("the built-in embedder loads");
        let mut wrong = Vec::new();
        let mut total = 0;
        for line in set
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        {
            let (label, text) = line.split_once('\t').expect("intent<TAB>text");
            let expected = match label {
                "final" => DetectedIntent::ProvidesFinalAnswer,
                "plan" => DetectedIntent::ProvidesPlanWithoutExplicitAction,
                "question" => DetectedIntent::AsksClarifyingQuestion,
                "conversation" => DetectedIntent::GeneralConversation,
                other => panic!("unknown label {other}"),
            };
            total += 1;
            let read = analyzer.analyze_intent(text).expect("analysis");
            if read.intent != expected {
                wrong.push(format!("{text:?}: {label}, read {read:?}"));
            }
        }
        assert!(total >= 40, "{total} labelled answers");
        assert!(
            wrong.is_empty(),
            "{} of {total} misread:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
}
