//! `verify_thoughts`: puts new claims under verification, weighs the evidence the caller sends
//! on new or existing claims, records resolutions of contested claims, and answers with the
//! statuses, the verification matrix, the conflicts and chain-of-verification questions within
//! the question budget. The rules themselves live in `claims`.
//!
//! Must not know: where evidence comes from. This server retrieves nothing; it weighs what the
//! caller sends.
//!
//! Layout: this file holds the arguments, the response, the decision's order and the statuses
//! it settles; `plan` checks and plans the claims, evidence and resolutions; `questions` writes
//! the verification questions (templates, or the model's) within the budget.

mod plan;
mod questions;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use self::plan::{check_counts, plan_claims, plan_evidence, plan_resolutions};
pub(crate) use self::questions::plan_verify;
use self::questions::{Questions, model_questions, plan_questions};
use super::claims::{
    ClaimView, EvidenceView, matrix, planned_evidence, recorded_evidence, tallies,
};
use super::{Tally, VerificationMatrix, claim_status};
use crate::app::call::{Call, PathStep};
use crate::app::deliberation::model;
use crate::app::deliberation::outputs::{AnalysisOut, RedactionOut};
use crate::app::{Outcome, lenient};
use crate::events::Fact;
use crate::events::deliberation::{
    AnalysisMetadata, ClaimRecorded, ConflictResolved, EvidenceRecorded, VerificationRecorded,
};
use crate::projections::Deliberation;

/// A new claim to put under verification.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ClaimArg {
    /// The claim, as a checkable statement.
    #[schemars(extend("x-text" = true))]
    pub text: String,
    /// `low`, `medium`, `high` or `critical` (default medium). Critical claims gate consensus.
    #[serde(default)]
    #[schemars(with = "String")]
    pub criticality: Option<String>,
    /// Nodes that make the claim (each must exist).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub node_ids: Option<Vec<String>>,
}

/// A piece of evidence you found. This server retrieves nothing: it weighs what you send.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct EvidenceArg {
    /// Where it comes from: a citation, URL or document name.
    #[schemars(extend("x-text" = true))]
    pub source: String,
    /// What it says, when useful.
    #[serde(default)]
    #[schemars(with = "String")]
    #[schemars(extend("x-text" = true))]
    pub excerpt: Option<String>,
    /// `primary` (weight 1.0), `secondary` (0.6) or `tertiary` (0.3).
    pub tier: String,
    /// Evidence sharing a group is one source: it counts once, at its strongest tier. Give
    /// sources that share an origin (same author, dataset, outlet) the same group.
    pub independence_group: String,
    /// Claims it supports: existing ids, or `claim-N` ids of the claims in this call (numbered
    /// in order after the existing ones).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub supports_claims: Option<Vec<String>>,
    /// Claims it refutes (same ids as supports_claims).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub refutes_claims: Option<Vec<String>>,
}

/// Your resolution of a contested claim (supported by one group, refuted by another).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ResolutionArg {
    pub claim_id: String,
    /// `verified` or `refuted`.
    pub outcome: String,
    /// Why one side prevails.
    #[schemars(extend("x-text" = true))]
    pub rationale: String,
}

/// Arguments of `verify_thoughts`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct VerifyArgs {
    /// `heuristic` (default), or `model_backed`: the configured model writes the verification
    /// questions (statuses still follow your evidence; refused without a provider).
    /// `retrieval` is reserved.
    #[serde(default)]
    #[schemars(with = "String")]
    pub provider: Option<String>,
    /// New claims; they get ids `claim-N` in order.
    #[serde(default)]
    #[schemars(with = "Vec<ClaimArg>")]
    pub claims: Option<Vec<ClaimArg>>,
    /// New evidence, on new or existing claims.
    #[serde(default)]
    #[schemars(with = "Vec<EvidenceArg>")]
    pub evidence: Option<Vec<EvidenceArg>>,
    /// Resolutions of contested claims.
    #[serde(default)]
    #[schemars(with = "Vec<ResolutionArg>")]
    pub resolutions: Option<Vec<ResolutionArg>>,
    /// Generate chain-of-verification questions for the new claims (default true), up to the
    /// deliberation's budgets.max_verification_questions; past it, questions are cut and
    /// `questions_truncated` is true.
    #[serde(default, deserialize_with = "lenient::bool_optional")]
    #[schemars(with = "bool")]
    pub generate_questions: Option<bool>,
    /// Deliberation handle (`session_id` of an earlier response); omit for your current one.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// A claim as `verify_thoughts` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ClaimOut {
    pub claim_id: String,
    /// The text as stored (redacted if the injection scan matched); null once erased.
    pub text: Option<String>,
    pub criticality: String,
    /// `unverified`, `insufficient_evidence`, `verified`, `refuted` or `contested`.
    pub status: String,
    /// The status before this call (null for a new claim).
    pub previous_status: Option<String>,
    /// Sum over supporting groups of each group's strongest tier weight.
    pub support_weight: f64,
    pub refute_weight: f64,
    pub supporting_groups: Vec<String>,
    pub refuting_groups: Vec<String>,
    /// The recorded resolution's outcome, if any.
    pub resolution: Option<String>,
    pub node_ids: Vec<String>,
}

/// A verification question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct QuestionOut {
    pub claim_id: String,
    pub question: String,
}

/// A claim whose sources conflict.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ConflictOut {
    pub claim_id: String,
    pub criticality: String,
    pub supporting_groups: Vec<String>,
    pub refuting_groups: Vec<String>,
    /// The recorded resolution's outcome; null while unresolved.
    pub resolution: Option<String>,
    pub status: String,
}

/// New evidence and the id it got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct EvidenceOut {
    pub evidence_id: String,
    pub tier: String,
    pub independence_group: String,
    pub supports_claims: Vec<String>,
    pub refutes_claims: Vec<String>,
}

/// Response of `verify_thoughts`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct VerifyOutput {
    pub verification_id: String,
    /// Every claim this call created, gave evidence on or resolved, with its status now.
    pub claims: Vec<ClaimOut>,
    pub evidence: Vec<EvidenceOut>,
    pub verification_matrix: VerificationMatrix,
    /// Chain-of-verification questions for the new claims (fixed templates quoting the claim;
    /// they are for you to answer with evidence).
    pub questions: Vec<QuestionOut>,
    /// Whether the question budget cut some questions.
    pub questions_truncated: bool,
    /// Questions generated so far in this deliberation, and its budget.
    pub questions_used: u32,
    pub questions_budget: u32,
    /// Every claim of the deliberation whose sources conflict.
    pub conflicts: Vec<ConflictOut>,
    pub redactions: Vec<RedactionOut>,
    pub analysis: AnalysisOut,
    pub session_id: String,
    pub deliberation_id: String,
}

fn lower(s: &str) -> String {
    s.trim().to_ascii_lowercase()
}

/// A claim of this call, planned: its index in `claims`, id, criticality and nodes.
type NewClaim = (usize, String, String, Vec<String>);

/// Decides `verify_thoughts`, step by step: the counts, the claims, the evidence, the
/// resolutions, the statuses they give, the questions within the budget, then the fact and the
/// response. Any refusal comes before anything is recorded.
pub(crate) fn decide_verify(call: &mut Call<'_>) -> Outcome {
    let args: VerifyArgs = call.parse(
        "send {\"claims\": [{\"text\": \"…\", \"criticality\": \"critical\", \"node_ids\": \
         [\"node-2\"]}], \"evidence\": [{\"source\": \"…\", \"tier\": \"primary\", \
         \"independence_group\": \"a\", \"supports_claims\": [\"claim-1\"]}], \"resolutions\": \
         [{\"claim_id\": \"claim-1\", \"outcome\": \"verified\", \"rationale\": \"…\"}]}",
    )?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    let claims = args.claims.unwrap_or_default();
    let evidence = args.evidence.unwrap_or_default();
    let resolutions = args.resolutions.unwrap_or_default();
    check_counts(d, &claims, &evidence, &resolutions)?;
    let (mut views, new_claims) = plan_claims(call, d, &claims)?;
    let planned = plan_evidence(call, d, &views, &evidence)?;
    let all_tallies = tallies(recorded_evidence(d).chain(planned_evidence(&planned)));
    let planned_resolutions = plan_resolutions(call, d, &views, &all_tallies, &resolutions)?;
    let statuses = settle_statuses(
        &mut views,
        &new_claims,
        &planned,
        &planned_resolutions,
        &all_tallies,
    );
    let asked = model::asks_model(call.args);
    let questions = if !args.generate_questions.unwrap_or(true) {
        Questions::none(d)
    } else if asked {
        model_questions(call, d, &new_claims)?
    } else {
        plan_questions(call, d, &views, &new_claims)
    };
    let (recorded_claims, redactions) =
        record_claims(call, &claims, new_claims, &planned, &planned_resolutions);
    let analysis = verify_analysis(call, d, asked, &views, &statuses);
    let verification_id = format!("verif-{}", d.verifications.len() + 1);
    let body = VerifyOutput {
        verification_id: verification_id.clone(),
        claims: claim_outs(&views, &statuses, &all_tallies),
        evidence: evidence_outs(&planned),
        verification_matrix: matrix(
            &views,
            &recorded_evidence(d)
                .chain(planned_evidence(&planned))
                .collect::<Vec<EvidenceView<'_>>>(),
        ),
        questions_used: questions
            .used
            .saturating_add(u32::try_from(questions.recorded.len()).unwrap_or(u32::MAX)),
        questions: questions.shown,
        questions_truncated: questions.truncated,
        questions_budget: questions.budget,
        conflicts: conflicts(&views, &all_tallies),
        redactions,
        analysis: AnalysisOut::from(&analysis),
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
    };
    let fact = Fact::VerificationRecorded(VerificationRecorded {
        session_id: d.session_id.clone(),
        verification_id,
        claims: recorded_claims,
        evidence: planned,
        resolutions: planned_resolutions,
        questions: questions.recorded,
        statuses: statuses.statuses,
        analysis,
    });
    call.done(Some(d.session_id.clone()), vec![fact], body)
}

/// The claims a call touches, with their statuses after it.
struct Statuses {
    /// The claims the call adds, weighs evidence on or resolves.
    touched: BTreeSet<String>,
    /// Each touched claim's status after the call.
    statuses: BTreeMap<String, String>,
    /// The status a touched recorded claim had before the call.
    previous: HashMap<String, String>,
}

/// Sets the status of every claim the call touches in `views` (keeping the previous one).
fn settle_statuses(
    views: &mut [ClaimView],
    new_claims: &[NewClaim],
    planned: &[EvidenceRecorded],
    planned_resolutions: &[ConflictResolved],
    all_tallies: &HashMap<String, Tally>,
) -> Statuses {
    let mut touched: BTreeSet<String> = new_claims.iter().map(|(_, id, _, _)| id.clone()).collect();
    for e in planned {
        touched.extend(e.supports_claims.iter().chain(&e.refutes_claims).cloned());
    }
    touched.extend(planned_resolutions.iter().map(|r| r.claim_id.clone()));
    let empty = Tally::default();
    let mut statuses = BTreeMap::new();
    let mut previous: HashMap<String, String> = HashMap::new();
    for v in views.iter_mut().filter(|v| touched.contains(&v.claim_id)) {
        if let Some(r) = planned_resolutions
            .iter()
            .find(|r| r.claim_id == v.claim_id)
        {
            v.resolution = Some(r.outcome.clone());
        }
        let tally = all_tallies.get(&v.claim_id).unwrap_or(&empty);
        let status = claim_status(&v.criticality, tally, v.resolution.as_deref());
        if !v.new {
            previous.insert(
                v.claim_id.clone(),
                std::mem::replace(&mut v.status, status.to_owned()),
            );
        } else {
            v.status = status.to_owned();
        }
        statuses.insert(v.claim_id.clone(), status.to_owned());
    }
    Statuses {
        touched,
        statuses,
        previous,
    }
}

/// The call's analysis metadata: who wrote the questions (the model named, or the templates),
/// drawn from the nodes of the claims the call touches, with the limits of weighing
/// caller-supplied evidence.
fn verify_analysis(
    call: &Call<'_>,
    d: &Deliberation,
    asked: bool,
    views: &[ClaimView],
    statuses: &Statuses,
) -> AnalysisMetadata {
    let source_node_ids: Vec<String> = views
        .iter()
        .filter(|v| statuses.touched.contains(&v.claim_id))
        .flat_map(|v| v.node_ids.iter().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let evidence_limits = [
        "evaluates only caller-supplied evidence; no retrieval or fact-checking provider is \
         configured",
        "statuses follow the tiers (primary 1.0, secondary 0.6, tertiary 0.3) and \
         independence groups as the caller declared them; neither is checked",
    ];
    let model_name = call.model_answers().first().map(model::model_name);
    match model_name.filter(|_| asked) {
        Some(name) => call.model_analysis(
            &d.user_mode,
            "verify.tiered_independent_evidence",
            &name,
            source_node_ids,
            &[
                evidence_limits[0],
                evidence_limits[1],
                "verification questions were written by the model named here; nothing \
                 answers them, and the model judged no claim",
            ],
        ),
        None => call.analysis(
            &d.user_mode,
            "verify.tiered_independent_evidence",
            "heuristic",
            source_node_ids,
            &[
                evidence_limits[0],
                evidence_limits[1],
                "verification questions are fixed templates quoting the claim; nothing answers \
                 them",
            ],
        ),
    }
}

/// The new claims as recorded (their text scanned), and every redaction of the call's texts.
fn record_claims(
    call: &mut Call<'_>,
    claims: &[ClaimArg],
    new_claims: Vec<NewClaim>,
    planned: &[EvidenceRecorded],
    planned_resolutions: &[ConflictResolved],
) -> (Vec<ClaimRecorded>, Vec<RedactionOut>) {
    let mut recorded_claims = Vec::with_capacity(new_claims.len());
    let mut redactions: Vec<RedactionOut> = Vec::new();
    for (i, claim_id, criticality, node_ids) in new_claims {
        let field = format!("claims[{i}].text");
        let text = call.scanned(
            &field,
            &[
                PathStep::Key("claims"),
                PathStep::Index(i),
                PathStep::Key("text"),
            ],
            &claims[i].text,
        );
        redactions.extend(text.redactions.iter().map(RedactionOut::from));
        recorded_claims.push(ClaimRecorded {
            claim_id,
            text,
            criticality,
            node_ids,
        });
    }
    for e in planned {
        redactions.extend(e.source.redactions.iter().map(RedactionOut::from));
        if let Some(x) = &e.excerpt {
            redactions.extend(x.redactions.iter().map(RedactionOut::from));
        }
    }
    for r in planned_resolutions {
        redactions.extend(r.rationale.redactions.iter().map(RedactionOut::from));
    }
    (recorded_claims, redactions)
}

/// Every touched claim as the response shows it.
fn claim_outs(
    views: &[ClaimView],
    statuses: &Statuses,
    all_tallies: &HashMap<String, Tally>,
) -> Vec<ClaimOut> {
    let empty = Tally::default();
    views
        .iter()
        .filter(|v| statuses.touched.contains(&v.claim_id))
        .map(|v| {
            let t = all_tallies.get(&v.claim_id).unwrap_or(&empty);
            ClaimOut {
                claim_id: v.claim_id.clone(),
                text: v.text.clone(),
                criticality: v.criticality.clone(),
                status: v.status.clone(),
                previous_status: statuses.previous.get(&v.claim_id).cloned(),
                support_weight: t.support_weight(),
                refute_weight: t.refute_weight(),
                supporting_groups: t.support.keys().cloned().collect(),
                refuting_groups: t.refute.keys().cloned().collect(),
                resolution: v.resolution.clone(),
                node_ids: v.node_ids.clone(),
            }
        })
        .collect()
}

/// Every claim whose sources conflict, resolved or not.
fn conflicts(views: &[ClaimView], all_tallies: &HashMap<String, Tally>) -> Vec<ConflictOut> {
    views
        .iter()
        .filter_map(|v| {
            let t = all_tallies.get(&v.claim_id)?;
            t.conflicted().then(|| ConflictOut {
                claim_id: v.claim_id.clone(),
                criticality: v.criticality.clone(),
                supporting_groups: t.support.keys().cloned().collect(),
                refuting_groups: t.refute.keys().cloned().collect(),
                resolution: v.resolution.clone(),
                status: v.status.clone(),
            })
        })
        .collect()
}

/// The call's evidence as the response shows it.
fn evidence_outs(planned: &[EvidenceRecorded]) -> Vec<EvidenceOut> {
    planned
        .iter()
        .map(|e| EvidenceOut {
            evidence_id: e.evidence_id.clone(),
            tier: e.tier.clone(),
            independence_group: e.independence_group.clone(),
            supports_claims: e.supports_claims.clone(),
            refutes_claims: e.refutes_claims.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::tests::{message, quick, start};
    use crate::app::deliberation::testing::given;

    #[tokio::test]
    async fn evidence_can_cite_claims_of_the_same_call_and_resolutions_need_a_conflict() {
        let g = given();
        let s = quick(&g).await;
        let v = g
            .ok(
                "verify_thoughts",
                json!({"claims": [
                           {"text": "Claim A", "criticality": "low"},
                           {"text": "Claim B", "criticality": "high"}],
                       "evidence": [
                           {"source": "s1", "tier": "secondary", "independence_group": "g1",
                            "supports_claims": ["claim-1", "claim-2"]},
                           {"source": "s2", "excerpt": "same author", "tier": "primary",
                            "independence_group": "g1", "supports_claims": ["claim-2"]}],
                       "session_id": s}),
            )
            .await;
        assert_eq!(v["claims"][0]["status"], "verified");
        assert_eq!(v["claims"][1]["status"], "insufficient_evidence");
        assert_eq!(v["claims"][1]["support_weight"], 1.0);
        assert_eq!(v["evidence"][1]["evidence_id"], "ev-2");
        let cell = &v["verification_matrix"]["rows"][1]["cells"][0];
        assert_eq!(cell["tier"], "primary");
        assert_eq!(cell["evidence_ids"], json!(["ev-1", "ev-2"]));
        // low → 2 questions, high → 3.
        assert_eq!(v["questions"].as_array().map(Vec::len), Some(5));

        let refused = g
            .refused(
                "verify_thoughts",
                json!({"resolutions": [{"claim_id": "claim-2", "outcome": "verified",
                                        "rationale": "looks right"}], "session_id": s}),
                "no_conflict",
            )
            .await;
        assert!(message(&refused).contains("claim-2"));
        g.refused(
            "verify_thoughts",
            json!({"evidence": [{"source": "s", "tier": "primary", "independence_group": "g",
                                 "supports_claims": ["claim-9"]}], "session_id": s}),
            "unknown_claim",
        )
        .await;
        g.refused(
            "verify_thoughts",
            json!({"evidence": [{"source": "s", "tier": "gossip", "independence_group": "g",
                                 "supports_claims": ["claim-1"]}], "session_id": s}),
            "invalid_tier",
        )
        .await;
        g.refused(
            "verify_thoughts",
            json!({"evidence": [{"source": "s", "tier": "primary", "independence_group": "g",
                                 "supports_claims": ["claim-1"], "refutes_claims": ["claim-1"]}],
                   "session_id": s}),
            "invalid_evidence",
        )
        .await;
        g.refused(
            "verify_thoughts",
            json!({"session_id": s}),
            "nothing_to_verify",
        )
        .await;
    }
    #[tokio::test]
    async fn verification_questions_stop_at_the_budget() {
        let g = given();
        // The quick profile allows 4 questions.
        let s = start(&g, "Quick", "quick").await;
        let v = g
            .ok(
                "verify_thoughts",
                json!({"claims": [{"text": "One", "criticality": "high"},
                                  {"text": "Two", "criticality": "high"}], "session_id": s}),
            )
            .await;
        assert_eq!(v["questions"].as_array().map(Vec::len), Some(4));
        assert_eq!(v["questions_truncated"], true);
        assert_eq!(v["questions_used"], 4);
        let v = g
            .ok(
                "verify_thoughts",
                json!({"claims": [{"text": "Three"}], "session_id": s}),
            )
            .await;
        assert_eq!(v["questions"], json!([]));
        assert_eq!(v["questions_truncated"], true);
    }
}
