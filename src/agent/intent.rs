//! `EmbeddingIntentAnalyzer`: the seed's semantic intent analysis. Prototype phrases of each
//! intent are embedded once; an answer is embedded and given the intent of its nearest
//! prototype by cosine, or `ambiguous` when none is near enough. The built-in potion-base-2M
//! embedder by default (no download, no configuration).

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

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

impl IntentAnalyzer for EmbeddingIntentAnalyzer {
    fn analyze_intent(&self, text: &str) -> Result<IntentAnalysis, ReasoningError> {
        let vector = self
            .embedder
            .embed_one(text)
            .map_err(|e| ReasoningError::Intent(e.to_string()))?;
        let best = self
            .prototypes
            .iter()
            .map(|(intent, phrase, v)| (*intent, *phrase, cosine(vector.vector(), v)))
            .max_by(|a, b| a.2.total_cmp(&b.2));
        let method = format!("embedding:{}", self.embedder.model());
        Ok(match best {
            Some((intent, phrase, score)) if score >= self.threshold => IntentAnalysis {
                intent,
                score,
                matched: Some(phrase.to_owned()),
                method,
            },
            Some((_, phrase, score)) => IntentAnalysis {
                intent: DetectedIntent::Ambiguous,
                score,
                matched: Some(phrase.to_owned()),
                method,
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
            assert!(read.score >= 0.3 && read.method == "embedding:minishlab/potion-base-2M");
        }
    }

    #[test]
    fn an_answer_near_no_prototype_is_ambiguous_and_says_how_near() {
        let read = intent("zxq vbn 0x7f");
        assert_eq!(read.intent, DetectedIntent::Ambiguous, "{read:?}");
        assert!(read.score < 0.3 && read.matched.is_some());
    }
}
