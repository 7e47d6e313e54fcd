//! `verify_thoughts`: puts new claims under verification, weighs the evidence the caller sends
//! on new or existing claims, records resolutions of contested claims, and answers with the
//! statuses, the verification matrix, the conflicts and chain-of-verification questions within
//! the question budget. The rules themselves live in `claims`.
//!
//! Must not know: where evidence comes from. This server retrieves nothing; it weighs what the
//! caller sends.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::claims::{
    ClaimView, EvidenceView, QUESTION_TEMPLATES, matrix, planned_evidence, questions_for, quote,
    recorded_evidence, tallies,
};
use super::{
    MAX_CLAIMS_PER_CALL, MAX_EVIDENCE_PER_CALL, MAX_IDS, Tally, VerificationMatrix, claim_status,
    criticality_or_refuse, empty_text, require_nodes, tier_weight, too_many,
};
use crate::app::ErrorCode;
use crate::app::call::model::ModelStep;
use crate::app::call::{Call, PathStep, Refusal};
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::injection::shown;
use crate::app::deliberation::model;
use crate::app::deliberation::outputs::{AnalysisOut, RedactionOut};
use crate::app::{App, Command};
use crate::app::{Outcome, lenient};
use crate::events::Fact;
use crate::events::deliberation::{
    ClaimRecorded, ConflictResolved, EvidenceRecorded, VerificationQuestion, VerificationRecorded,
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
    let analysis = match model_name.filter(|_| asked) {
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
    };
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

/// Refuses a call that sends nothing, or more than a call may hold.
fn check_counts(
    d: &Deliberation,
    claims: &[ClaimArg],
    evidence: &[EvidenceArg],
    resolutions: &[ResolutionArg],
) -> Result<(), Refusal> {
    if claims.is_empty() && evidence.is_empty() && resolutions.is_empty() {
        return Err(refuse(
            d,
            ErrorCode::NothingToVerify,
            "no claims, evidence or resolutions were sent",
            "send new claims, evidence on claims (new or existing), or resolutions of contested \
             claims",
        ));
    }
    if claims.len() > MAX_CLAIMS_PER_CALL {
        return Err(too_many(d, "claims", claims.len(), MAX_CLAIMS_PER_CALL));
    }
    if evidence.len() > MAX_EVIDENCE_PER_CALL {
        return Err(too_many(
            d,
            "evidence",
            evidence.len(),
            MAX_EVIDENCE_PER_CALL,
        ));
    }
    if resolutions.len() > MAX_CLAIMS_PER_CALL {
        return Err(too_many(
            d,
            "resolutions",
            resolutions.len(),
            MAX_CLAIMS_PER_CALL,
        ));
    }
    Ok(())
}

/// The recorded claims, then the new ones with their ids (checked: text, criticality, nodes).
fn plan_claims(
    call: &Call<'_>,
    d: &Deliberation,
    claims: &[ClaimArg],
) -> Result<(Vec<ClaimView>, Vec<NewClaim>), Refusal> {
    let state = call.app.deliberations();
    let mut views: Vec<ClaimView> = d
        .claims
        .iter()
        .map(|c| ClaimView {
            claim_id: c.claim_id.clone(),
            criticality: c.criticality.clone(),
            text: state.text(&c.text).map(str::to_owned),
            status: c.status.clone(),
            resolution: c.resolution.as_ref().map(|(o, _)| o.clone()),
            node_ids: c.node_ids.clone(),
            new: false,
        })
        .collect();
    let mut new_claims = Vec::with_capacity(claims.len());
    for (i, c) in claims.iter().enumerate() {
        let field = format!("claims[{i}].text");
        if c.text.trim().is_empty() {
            return Err(empty_text(d, &field, "the claim as a checkable statement"));
        }
        let criticality = criticality_or_refuse(
            d,
            c.criticality.as_deref(),
            &format!("claims[{i}].criticality"),
        )?;
        let node_ids = c.node_ids.clone().unwrap_or_default();
        if node_ids.len() > MAX_IDS {
            return Err(too_many(
                d,
                &format!("claims[{i}].node_ids"),
                node_ids.len(),
                MAX_IDS,
            ));
        }
        require_nodes(d, &node_ids, "claim node")?;
        let claim_id = format!("claim-{}", d.claims.len() + i + 1);
        views.push(ClaimView {
            claim_id: claim_id.clone(),
            criticality: criticality.clone(),
            text: Some(shown(&c.text, &field)),
            status: "unverified".to_owned(),
            resolution: None,
            node_ids: node_ids.clone(),
            new: true,
        });
        new_claims.push((i, claim_id, criticality, node_ids));
    }
    Ok((views, new_claims))
}

/// The refusal of a claim id that is neither recorded nor new in this call.
fn unknown_claim(d: &Deliberation, id: &str, role: &str) -> Refusal {
    refuse(
        d,
        ErrorCode::UnknownClaim,
        format!("{role} names \"{id}\", which is not a claim of this deliberation"),
        format!(
            "use an existing claim id (claim-1 … claim-{}) or claim-{} … for the claims of \
             this call, in order",
            d.claims.len(),
            d.claims.len() + 1
        ),
    )
}

/// The evidence, checked and planned with its ids.
fn plan_evidence(
    call: &mut Call<'_>,
    d: &Deliberation,
    views: &[ClaimView],
    evidence: &[EvidenceArg],
) -> Result<Vec<EvidenceRecorded>, Refusal> {
    let known = |id: &str| views.iter().any(|v| v.claim_id == id);
    let mut planned: Vec<EvidenceRecorded> = Vec::with_capacity(evidence.len());
    for (i, e) in evidence.iter().enumerate() {
        let at = format!("evidence[{i}]");
        if e.source.trim().is_empty() {
            return Err(empty_text(
                d,
                &format!("{at}.source"),
                "where the evidence comes from",
            ));
        }
        let tier = lower(&e.tier);
        if tier_weight(&tier).is_none() {
            return Err(refuse(
                d,
                ErrorCode::InvalidTier,
                format!("{at}.tier \"{tier}\" is not an evidence tier"),
                "use primary (weight 1.0), secondary (0.6) or tertiary (0.3)",
            ));
        }
        let group = e.independence_group.trim().to_owned();
        if group.is_empty() {
            return Err(refuse(
                d,
                ErrorCode::InvalidEvidence,
                format!("{at}.independence_group is empty"),
                "name the source's independence group; sources sharing an origin share a group",
            ));
        }
        let supports = e.supports_claims.clone().unwrap_or_default();
        let refutes = e.refutes_claims.clone().unwrap_or_default();
        if supports.is_empty() && refutes.is_empty() {
            return Err(refuse(
                d,
                ErrorCode::InvalidEvidence,
                format!("{at} neither supports nor refutes a claim"),
                "list the claims it bears on in supports_claims or refutes_claims",
            ));
        }
        if supports.len() + refutes.len() > MAX_IDS {
            return Err(too_many(
                d,
                &format!("{at} claims"),
                supports.len() + refutes.len(),
                MAX_IDS,
            ));
        }
        if let Some(both) = supports.iter().find(|c| refutes.contains(c)) {
            return Err(refuse(
                d,
                ErrorCode::InvalidEvidence,
                format!("{at} both supports and refutes {both}"),
                "send the supporting and the refuting parts as two pieces of evidence, in \
                 different independence groups if they come from different sources",
            ));
        }
        for id in supports.iter().chain(&refutes) {
            if !known(id) {
                return Err(unknown_claim(d, id, &at));
            }
        }
        let source = call.scanned(
            &format!("{at}.source"),
            &[
                PathStep::Key("evidence"),
                PathStep::Index(i),
                PathStep::Key("source"),
            ],
            &e.source,
        );
        let excerpt = e
            .excerpt
            .as_deref()
            .filter(|x| !x.trim().is_empty())
            .map(|x| {
                call.scanned(
                    &format!("{at}.excerpt"),
                    &[
                        PathStep::Key("evidence"),
                        PathStep::Index(i),
                        PathStep::Key("excerpt"),
                    ],
                    x,
                )
            });
        planned.push(EvidenceRecorded {
            evidence_id: format!("ev-{}", d.evidence.len() + i + 1),
            source,
            excerpt,
            tier,
            independence_group: group,
            supports_claims: supports,
            refutes_claims: refutes,
        });
    }
    Ok(planned)
}

/// The resolutions, only for claims whose sources conflict.
fn plan_resolutions(
    call: &mut Call<'_>,
    d: &Deliberation,
    views: &[ClaimView],
    all_tallies: &HashMap<String, Tally>,
    resolutions: &[ResolutionArg],
) -> Result<Vec<ConflictResolved>, Refusal> {
    let mut planned_resolutions: Vec<ConflictResolved> = Vec::with_capacity(resolutions.len());
    for (i, r) in resolutions.iter().enumerate() {
        let at = format!("resolutions[{i}]");
        let Some(view) = views.iter().find(|v| v.claim_id == r.claim_id) else {
            return Err(unknown_claim(d, &r.claim_id, &at));
        };
        if planned_resolutions.iter().any(|p| p.claim_id == r.claim_id) {
            return Err(refuse(
                d,
                ErrorCode::InvalidArguments,
                format!("{} is resolved twice in this call", r.claim_id),
                "send one resolution per claim",
            ));
        }
        let outcome = lower(&r.outcome);
        if !matches!(outcome.as_str(), "verified" | "refuted") {
            return Err(refuse(
                d,
                ErrorCode::InvalidOutcome,
                format!("{at}.outcome \"{outcome}\" is not a resolution outcome"),
                "use verified or refuted",
            ));
        }
        if !all_tallies
            .get(&view.claim_id)
            .is_some_and(Tally::conflicted)
        {
            return Err(refuse(
                d,
                ErrorCode::NoConflict,
                format!(
                    "{} has no source conflict to resolve: no group supports it while another \
                     refutes it",
                    view.claim_id
                ),
                "resolutions are for contested claims; add evidence instead, and its status \
                 follows the tier and independence rules",
            ));
        }
        if r.rationale.trim().is_empty() {
            return Err(refuse(
                d,
                ErrorCode::RationaleRequired,
                format!("{at}.rationale is empty"),
                "say why one side of the conflict prevails",
            ));
        }
        let rationale = call.scanned(
            &format!("{at}.rationale"),
            &[
                PathStep::Key("resolutions"),
                PathStep::Index(i),
                PathStep::Key("rationale"),
            ],
            &r.rationale,
        );
        planned_resolutions.push(ConflictResolved {
            claim_id: view.claim_id.clone(),
            outcome,
            rationale,
        });
    }
    Ok(planned_resolutions)
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

/// The verification questions of a call, within the deliberation's budget.
struct Questions {
    /// As recorded (the question text committed).
    recorded: Vec<VerificationQuestion>,
    /// As shown in the response.
    shown: Vec<QuestionOut>,
    /// Whether the budget cut some.
    truncated: bool,
    /// Questions asked before this call.
    used: u32,
    /// The deliberation's question budget.
    budget: u32,
}

impl Questions {
    /// No questions (the caller asked for none).
    fn none(d: &Deliberation) -> Self {
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
fn plan_questions(
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
fn model_questions(
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
