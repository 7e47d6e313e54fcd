//! The chain-of-verification questions of one `verify_thoughts` call: fixed templates quoting
//! each new claim, or the configured model's questions, within the deliberation's question
//! budget; and the model calls `model_backed` plans for them.
//!
//! Must not know: evidence, statuses or the response's other parts.

use serde::Deserialize;

use super::super::claims::{ClaimView, QUESTION_TEMPLATES, questions_for, quote};
use super::{NewClaim, QuestionOut, VerifyArgs, lower};
use crate::app::ErrorCode;
use crate::app::call::model::ModelStep;
use crate::app::call::{Call, Refusal};
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::injection::shown;
use crate::app::deliberation::model;
use crate::app::{App, Command};
use crate::events::deliberation::VerificationQuestion;
use crate::projections::Deliberation;

/// The verification questions of a call, within the deliberation's budget.
pub(super) struct Questions {
    /// As recorded (the question text committed).
    pub(super) recorded: Vec<VerificationQuestion>,
    /// As shown in the response.
    pub(super) shown: Vec<QuestionOut>,
    /// Whether the budget cut some.
    pub(super) truncated: bool,
    /// Questions asked before this call.
    pub(super) used: u32,
    /// The deliberation's question budget.
    pub(super) budget: u32,
}

impl Questions {
    /// No questions (the caller asked for none).
    pub(super) fn none(d: &Deliberation) -> Self {
        Self {
            recorded: Vec::new(),
            shown: Vec::new(),
            truncated: false,
            used: u32::try_from(d.questions.len()).unwrap_or(u32::MAX),
            budget: d.budgets.max_verification_questions,
        }
    }
}

/// The questions for the new claims (more for more critical ones), until the budget runs out.
pub(super) fn plan_questions(
    call: &mut Call<'_>,
    d: &Deliberation,
    views: &[ClaimView],
    new_claims: &[NewClaim],
) -> Questions {
    let mut out = Questions::none(d);
    let mut remaining = out.budget.saturating_sub(out.used);
    for (_, claim_id, criticality, _) in new_claims {
        let text = views
            .iter()
            .find(|v| &v.claim_id == claim_id)
            .and_then(|v| v.text.clone())
            .unwrap_or_default();
        for template in QUESTION_TEMPLATES.iter().take(questions_for(criticality)) {
            if remaining == 0 {
                out.truncated = true;
                break;
            }
            remaining -= 1;
            let question = template.replacen("{}", &quote(&text), 1);
            out.recorded.push(VerificationQuestion {
                claim_id: claim_id.clone(),
                question: call.derive_text(&question),
            });
            out.shown.push(QuestionOut {
                claim_id: claim_id.clone(),
                question,
            });
        }
    }
    out
}

/// How many questions each new claim of a call gets, in order (more for more critical ones),
/// until the deliberation's budget runs out; and whether the budget cut some.
fn question_counts(d: &Deliberation, criticalities: &[String]) -> (Vec<usize>, bool) {
    let used = u32::try_from(d.questions.len()).unwrap_or(u32::MAX);
    let mut remaining =
        usize::try_from(d.budgets.max_verification_questions.saturating_sub(used)).unwrap_or(0);
    let mut truncated = false;
    let counts = criticalities
        .iter()
        .map(|c| {
            let wanted = questions_for(c);
            let k = wanted.min(remaining);
            truncated |= k < wanted;
            remaining -= k;
            k
        })
        .collect();
    (counts, truncated)
}

/// The model's questions for one claim.
#[derive(Debug, Deserialize)]
struct ModelQuestions {
    questions: Vec<String>,
}

/// The model calls of `verify_thoughts` with `provider: "model_backed"`: one per new claim
/// that gets questions within the budget, asking for that many verification questions as JSON.
pub(crate) fn plan_verify(app: &App, command: &Command) -> Result<Option<ModelStep>, Refusal> {
    let Some(args) = model::plan_args::<VerifyArgs>(command) else {
        return Ok(None);
    };
    let claims = args.claims.unwrap_or_default();
    if !model::asks_model(&command.arguments)
        || !args.generate_questions.unwrap_or(true)
        || claims.is_empty()
    {
        return Ok(None);
    }
    let Some(d) = model::deliberation_of(app, command, args.session_id.as_deref()) else {
        return Ok(None);
    };
    let criticalities: Vec<String> = claims
        .iter()
        .map(|c| lower(c.criticality.as_deref().unwrap_or("medium")))
        .collect();
    let (counts, _) = question_counts(d, &criticalities);
    let asked = command.prepared.model.answers.len();
    let Some((i, k)) = counts
        .iter()
        .enumerate()
        .filter(|(_, k)| **k > 0)
        .nth(asked)
    else {
        return Ok(None);
    };
    let text = shown(&claims[i].text, &format!("claims[{i}].text"));
    let prompt = format!(
        "Goal: {}\n\nClaim: {text}\n\nWrite {k} questions whose answers would verify or \
         refute this claim; each must be answerable by checking a source.",
        model::text_or_erased(app, &d.goal)
    );
    Ok(Some(ModelStep::Chat(model::json_request(
        "You write chain-of-verification questions. Answer only with JSON.",
        &prompt,
        "verification_questions",
        serde_json::json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": 240},
                    "minItems": k,
                    "maxItems": k,
                }
            },
            "required": ["questions"],
            "additionalProperties": false,
        }),
    ))))
}

/// The questions for the new claims written by the model, one answer per claim that gets
/// questions within the budget (as [`plan_verify`] asked).
pub(super) fn model_questions(
    call: &mut Call<'_>,
    d: &Deliberation,
    new_claims: &[NewClaim],
) -> Result<Questions, Refusal> {
    let mut out = Questions::none(d);
    let criticalities: Vec<String> = new_claims.iter().map(|c| c.2.clone()).collect();
    let (counts, truncated) = question_counts(d, &criticalities);
    out.truncated = truncated;
    let answers = call.model_answers().to_vec();
    let mut answers = answers.iter();
    for ((_, claim_id, _, _), k) in new_claims.iter().zip(counts) {
        if k == 0 {
            continue;
        }
        let written: ModelQuestions =
            model::parse_answer(d, answers.next(), &format!("{k} questions on {claim_id}"))?;
        if written.questions.len() != k || written.questions.iter().any(|q| q.trim().is_empty()) {
            return Err(refuse(
                d,
                ErrorCode::ModelAnswerUnusable,
                format!(
                    "the model wrote {} question(s) on {claim_id}, some perhaps empty, where {k} \
                     were asked for",
                    written.questions.len()
                ),
                "retry, or verify without provider model_backed (template questions)",
            ));
        }
        for (j, question) in written.questions.iter().enumerate() {
            let field = format!("model.questions[{claim_id}][{j}]");
            let question = shown(question, &field);
            out.recorded.push(VerificationQuestion {
                claim_id: claim_id.clone(),
                question: call.derive_text(&question),
            });
            out.shown.push(QuestionOut {
                claim_id: claim_id.clone(),
                question,
            });
        }
    }
    Ok(out)
}
