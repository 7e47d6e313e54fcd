//! The intent router: keyword cues, the classification rules that route a query to a mode,
//! the safety notes a route carries, and `reasoning_intent_router`, which records the route in
//! the target deliberation when there is one.
//!
//! Owns: which mode a query routes to and why. Must not know: what a mode scaffolds.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::catalog::{
    EstimatedCost, ThinkingModeContract, contract, estimated_cost, mode_named, strings,
};
use super::{existing_deliberation, profile_of};
use crate::app::ErrorCode;
use crate::app::call::Call;
use crate::app::deliberation::REASONING_INTENT_ROUTER_TOOL;
use crate::app::deliberation::budgets::profile_or_refuse;
use crate::app::deliberation::injection::shown;
use crate::app::deliberation::mode::Mode;
use crate::app::deliberation::outputs::{AnalysisOut, RouteDecisionOut};
use crate::app::providers::HEURISTIC;
use crate::app::{Outcome, Rejection};
use crate::events::Fact;
use crate::events::deliberation::{RouteDecided, RouteDecision};
use crate::projections::Deliberation;

/// A cue: a label and the word forms (or space-separated phrases) that match it.
pub(in crate::app::deliberation) struct Cue {
    pub label: &'static str,
    pub forms: &'static [&'static str],
}

/// Lowercased words of `text` (letters and digits; everything else separates).
pub(in crate::app::deliberation) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The labels of `cues` some form of which occurs in `words` as whole words.
pub(in crate::app::deliberation) fn matched_cues(
    words: &[String],
    cues: &[Cue],
) -> Vec<&'static str> {
    cues.iter()
        .filter(|cue| {
            cue.forms.iter().any(|form| {
                let phrase: Vec<&str> = form.split(' ').collect();
                words
                    .windows(phrase.len())
                    .any(|w| w.iter().zip(&phrase).all(|(a, b)| a == b))
            })
        })
        .map(|cue| cue.label)
        .collect()
}

const TEST_CUES: &[Cue] = &[
    Cue {
        label: "verify",
        forms: &[
            "verify",
            "verifies",
            "verified",
            "verifying",
            "verification",
        ],
    },
    Cue {
        label: "fact",
        forms: &["fact", "facts", "factual", "factually"],
    },
    Cue {
        label: "check",
        forms: &["check", "checks", "checking", "checked"],
    },
    Cue {
        label: "evidence",
        forms: &["evidence", "evidenced", "proof of"],
    },
    Cue {
        label: "claim",
        forms: &["claim", "claims", "claimed"],
    },
    Cue {
        label: "compliance",
        forms: &[
            "compliance",
            "compliant",
            "comply",
            "regulation",
            "regulations",
            "regulatory",
        ],
    },
    Cue {
        label: "accuracy",
        forms: &[
            "accurate",
            "accuracy",
            "correct",
            "correctness",
            "is it true",
        ],
    },
    Cue {
        label: "source",
        forms: &["source", "sources", "cite", "citation", "citations"],
    },
    Cue {
        label: "validate",
        forms: &["validate", "validates", "validated", "validation"],
    },
];

const EXPLORE_CUES: &[Cue] = &[
    Cue {
        label: "compare",
        forms: &["compare", "compares", "comparing", "comparison"],
    },
    Cue {
        label: "options",
        forms: &["option", "options"],
    },
    Cue {
        label: "alternatives",
        forms: &["alternative", "alternatives"],
    },
    Cue {
        label: "trade-off",
        forms: &["trade off", "trade offs", "tradeoff", "tradeoffs"],
    },
    Cue {
        label: "choose",
        forms: &["choose", "choosing", "choice", "pick", "select"],
    },
    Cue {
        label: "versus",
        forms: &["versus", "vs"],
    },
    Cue {
        label: "pros and cons",
        forms: &["pros", "cons"],
    },
    Cue {
        label: "best",
        forms: &["best", "better"],
    },
    Cue {
        label: "brainstorm",
        forms: &["brainstorm", "ideas", "approaches"],
    },
];

const MAP_CUES: &[Cue] = &[
    Cue {
        label: "depend",
        forms: &[
            "depend",
            "depends",
            "dependency",
            "dependencies",
            "dependent",
        ],
    },
    Cue {
        label: "relationship",
        forms: &[
            "relationship",
            "relationships",
            "relation",
            "relations",
            "interplay",
            "interact",
            "interaction",
            "interactions",
        ],
    },
    Cue {
        label: "system",
        forms: &["system", "systems", "ecosystem"],
    },
    Cue {
        label: "architecture",
        forms: &["architecture", "architectural", "component", "components"],
    },
    Cue {
        label: "cause",
        forms: &["cause", "causes", "causal", "causality", "root cause"],
    },
    Cue {
        label: "impact",
        forms: &[
            "impact", "impacts", "affect", "affects", "effect", "effects",
        ],
    },
    Cue {
        label: "conflict",
        forms: &["conflict", "conflicts", "conflicting"],
    },
];

const SKETCH_CUES: &[Cue] = &[
    Cue {
        label: "outline",
        forms: &["outline", "outlines"],
    },
    Cue {
        label: "draft",
        forms: &["draft", "drafts", "drafting"],
    },
    Cue {
        label: "write",
        forms: &["write", "writing", "compose"],
    },
    Cue {
        label: "plan",
        forms: &["plan", "plans", "planning", "roadmap"],
    },
    Cue {
        label: "document",
        forms: &[
            "document",
            "documentation",
            "report",
            "essay",
            "article",
            "guide",
            "proposal",
        ],
    },
    Cue {
        label: "sections",
        forms: &["section", "sections", "chapter", "chapters"],
    },
    Cue {
        label: "steps",
        forms: &["steps", "step by step", "checklist", "milestones"],
    },
];

/// Words a simple question starts with.
const INTERROGATIVES: &[&str] = &[
    "what", "who", "when", "where", "which", "how", "why", "is", "are", "does", "do", "can",
    "should", "was", "were", "will",
];

/// A query of at most this many words is short.
const SHORT_QUERY_WORDS: usize = 12;

/// Routed modes, in tie-break order: on equal scores the more careful mode wins (verification
/// before structure, structure before breadth, breadth before outline, outline before brevity).
const ROUTE_ORDER: &[&str] = &["Test", "Map", "Explore", "Sketch", "Quick"];

/// One mode's score under the router rules.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ModeScore {
    pub user_mode: String,
    pub internal_method: String,
    /// Cues matched (one point each).
    pub score: u32,
    /// The matched cues: labels from the router's own lists, never the query's text.
    pub matched_cues: Vec<String>,
}

/// The router's classification of a query.
#[derive(Debug, Clone, PartialEq)]
pub struct Classification {
    pub mode: Mode,
    /// Heuristic confidence in [0, 1] (see [`classify`]).
    pub confidence: f64,
    pub rationale: String,
    /// Every routed mode's score, the chosen first, then by score and tie-break order.
    pub scores: Vec<ModeScore>,
}

/// Whether `text` holds a list: at least two lines starting with `-`, `*`, `•` or `1.` / `1)`.
fn has_list(text: &str) -> bool {
    let marked = text
        .lines()
        .map(str::trim_start)
        .filter(|l| {
            l.starts_with("- ")
                || l.starts_with("* ")
                || l.starts_with('•')
                || l.split_once(['.', ')']).is_some_and(|(n, rest)| {
                    !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) && rest.starts_with(' ')
                })
        })
        .count();
    marked >= 2
}

/// Routes a query by keyword and structure rules.
///
/// Each mode scores one point per distinct cue it matches, as whole words:
/// - Test: verify, fact, check, evidence, claim, compliance, accuracy, source, validate.
/// - Explore: compare, options, alternatives, trade-off, choose, versus, pros and cons, best,
///   brainstorm; plus "either-or question" (a question holding the word "or").
/// - Map: depend, relationship, system, architecture, cause, impact, conflict.
/// - Sketch: outline, draft, write, plan, document, sections, steps; plus "list structure".
/// - Quick: "short simple question" — at most 12 words, ending in `?` or starting with an
///   interrogative, and no cue of another mode.
///
/// The highest score wins; ties go by [`ROUTE_ORDER`]. With no point anywhere the route is the
/// default, Explore. Confidence: 0.3 for the default; else `0.5 + 0.45 × margin × strength`,
/// where margin = (best − second) / best and strength = min(best, 3) / 3, so a tie is 0.5, one
/// unopposed cue 0.65 and three or more unopposed cues 0.95 — rounded to two decimals. It
/// measures how clearly the rules separate the modes, not whether the route is right.
pub fn classify(query: &str) -> Classification {
    let w = words(query);
    let trimmed = query.trim();
    let question = trimmed.ends_with('?');
    let mut by_mode: BTreeMap<&str, Vec<&'static str>> = BTreeMap::new();
    by_mode.insert("Test", matched_cues(&w, TEST_CUES));
    let mut explore = matched_cues(&w, EXPLORE_CUES);
    if question && w.iter().any(|x| x == "or") {
        explore.push("either-or question");
    }
    by_mode.insert("Explore", explore);
    by_mode.insert("Map", matched_cues(&w, MAP_CUES));
    let mut sketch = matched_cues(&w, SKETCH_CUES);
    if has_list(query) {
        sketch.push("list structure");
    }
    by_mode.insert("Sketch", sketch);
    let other_cues = by_mode.values().any(|v| !v.is_empty());
    let interrogative = w
        .first()
        .is_some_and(|first| INTERROGATIVES.contains(&first.as_str()));
    let short_simple = !w.is_empty() && w.len() <= SHORT_QUERY_WORDS && (question || interrogative);
    by_mode.insert(
        "Quick",
        if short_simple && !other_cues {
            vec!["short simple question"]
        } else {
            Vec::new()
        },
    );
    let score = |m: &str| {
        by_mode
            .get(m)
            .map_or(0, |v| u32::try_from(v.len()).unwrap_or(u32::MAX))
    };
    let mut ranked: Vec<&str> = ROUTE_ORDER.to_vec();
    // Stable: equal scores keep the tie-break order.
    ranked.sort_by_key(|m| std::cmp::Reverse(score(m)));
    let best = score(ranked[0]);
    let second = score(ranked[1]);
    let (chosen, confidence, rationale) = if best == 0 {
        (
            "Explore",
            0.3,
            "no routing cue matched; Explore is the default route".to_owned(),
        )
    } else {
        let margin = f64::from(best - second) / f64::from(best);
        let strength = f64::from(best.min(3)) / 3.0;
        let confidence = ((0.5 + 0.45 * margin * strength) * 100.0).round() / 100.0;
        let cues = by_mode
            .get(ranked[0])
            .cloned()
            .unwrap_or_default()
            .join(", ");
        let runner_up = if second == 0 {
            "no other mode matched a cue".to_owned()
        } else if second == best {
            format!(
                "tied with {} at {second}; the tie goes to the more careful mode",
                ranked[1]
            )
        } else {
            format!("next: {} with {second}", ranked[1])
        };
        (
            ranked[0],
            confidence,
            format!("{} matched {best} cue(s): {cues}; {runner_up}", ranked[0]),
        )
    };
    let mut order: Vec<&str> = vec![chosen];
    order.extend(ranked.iter().copied().filter(|m| *m != chosen));
    let scores = order
        .iter()
        .map(|m| {
            let mode = mode_named(m);
            ModeScore {
                user_mode: mode.user_mode.to_owned(),
                internal_method: mode.internal_method.to_owned(),
                score: score(m),
                matched_cues: by_mode.get(m).map(|v| strings(v)).unwrap_or_default(),
            }
        })
        .collect();
    Classification {
        mode: mode_named(chosen),
        confidence,
        rationale,
        scores,
    }
}

/// Safety notes every answer about `mode` under `profile` carries.
pub(super) fn safety_notes(mode: Mode, profile: &str) -> Vec<String> {
    let mut notes = vec![
        "heuristic provider: no model was invoked; nodes are rule-written prompts for the client \
         to answer, and confidences are rule margins, not calibrated probabilities"
            .to_owned(),
    ];
    match mode.user_mode {
        "Quick" => notes.push(
            "Quick records a concise audit of decisive steps; it does not ask for or store raw \
             hidden chain-of-thought"
                .to_owned(),
        ),
        "Sketch" => notes.push(
            "Sketch scaffold points are outline templates (sot_heuristic_scaffold), not content"
                .to_owned(),
        ),
        "Test" => notes.push(
            "Test is governed: claim statuses come only from client-supplied evidence, and \
             consensus_answer is refused until the policy guard passes"
                .to_owned(),
        ),
        _ => {}
    }
    if profile == "paranoid" && mode.user_mode != "Test" {
        notes.push(
            "paranoid profile: governed regardless of mode — consensus needs a fresh route \
             decision; verify factual claims with verify_thoughts before answering"
                .to_owned(),
        );
    }
    notes
}

// ---------------------------------------------------------------------------------------------
// reasoning_intent_router
// ---------------------------------------------------------------------------------------------

/// Arguments of `reasoning_intent_router`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct RouterArgs {
    /// The question or task to route.
    #[schemars(extend("x-text" = true))]
    pub query: String,
    /// quick, balanced, deep or paranoid: sets estimated_cost (default: the deliberation's
    /// profile, else balanced).
    #[serde(default)]
    #[schemars(with = "String")]
    pub profile: Option<String>,
    /// A session whose deliberation records the route (default: your current session, if
    /// it holds one). Without a deliberation nothing is recorded.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Another mode the router scored.
pub type Alternative = ModeScore;

/// Response of `reasoning_intent_router`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RouterOutput {
    pub user_mode: String,
    pub internal_method: String,
    /// Why: the matched cues (the router's own labels) and the runner-up.
    pub mode_rationale: String,
    pub safety_notes: Vec<String>,
    pub estimated_cost: EstimatedCost,
    pub mode_contract: ThinkingModeContract,
    pub route_decision: RouteDecisionOut,
    /// Always null: no model calibrates the route.
    pub semantic_confidence: Option<f64>,
    /// The other routed modes with their scores and cues.
    pub alternatives: Vec<Alternative>,
    /// `route-N` when the route was recorded in a deliberation, else null.
    pub route_id: Option<String>,
    /// The session whose deliberation recorded the route; null when none did.
    pub session_id: Option<String>,
    pub deliberation_id: Option<String>,
    pub analysis: AnalysisOut,
}

const ROUTER_LIMITATIONS: &[&str] = &[
    "keyword and structure rules over the query's words; no semantic understanding",
    "confidence is the margin between rule scores, not a calibrated probability",
];

pub(super) fn route_fact(
    d: &Deliberation,
    source: &str,
    mode: Mode,
    decision: RouteDecision,
) -> Fact {
    Fact::RouteDecided(RouteDecided {
        session_id: d.session_id.clone(),
        route_id: format!("route-{}", d.routes.len() + 1),
        source: source.to_owned(),
        user_mode: mode.user_mode.to_owned(),
        internal_method: mode.internal_method.to_owned(),
        decision,
    })
}

/// Decides `reasoning_intent_router`: classifies the query; records the route in the target
/// deliberation when there is an open one.
pub(crate) fn decide_intent_router(call: &mut Call<'_>) -> Outcome {
    let args: RouterArgs = call.parse(
        "reasoning_intent_router takes {query: string, profile?: quick|balanced|deep|paranoid, \
         session_id?: string}",
    )?;
    if args.query.trim().is_empty() {
        return Err((
            Rejection::new(
                ErrorCode::InvalidArguments,
                "query is empty",
                "send the question or task to route",
            ),
            None,
        ));
    }
    let profile_arg = args
        .profile
        .as_deref()
        .map(|p| profile_or_refuse(Some(p)))
        .transpose()?;
    let existing = existing_deliberation(call, args.session_id.as_deref())?;
    let routed = classify(&shown(&args.query, "query"));
    let mode = routed.mode;
    let profile = profile_arg
        .or(existing.map(profile_of))
        .unwrap_or("balanced");
    let decision = RouteDecision {
        decision: mode.user_mode.to_owned(),
        confidence: routed.confidence,
        rationale: routed.rationale.clone(),
        blocking_gaps: Vec::new(),
    };
    let mut notes = safety_notes(mode, profile);
    let recorder = existing.filter(|d| d.status != "concluded");
    if existing.is_some() && recorder.is_none() {
        notes.push(
            "the deliberation concluded with a consensus answer; the route was not recorded"
                .to_owned(),
        );
    }
    let mut facts = Vec::new();
    let mut route_id = None;
    if let Some(d) = recorder {
        route_id = Some(format!("route-{}", d.routes.len() + 1));
        facts.push(route_fact(
            d,
            REASONING_INTENT_ROUTER_TOOL,
            mode,
            decision.clone(),
        ));
    }
    let analysis = call.analysis(
        mode.user_mode,
        "router.keyword_rules",
        HEURISTIC,
        Vec::new(),
        ROUTER_LIMITATIONS,
    );
    let body = RouterOutput {
        user_mode: mode.user_mode.to_owned(),
        internal_method: mode.internal_method.to_owned(),
        mode_rationale: routed.rationale.clone(),
        safety_notes: notes,
        estimated_cost: estimated_cost(mode, profile),
        mode_contract: contract(mode),
        route_decision: RouteDecisionOut::from(&decision),
        semantic_confidence: None,
        alternatives: routed.scores.into_iter().skip(1).collect(),
        route_id,
        session_id: recorder.map(|d| d.session_id.to_string()),
        deliberation_id: recorder.map(|d| d.deliberation_id.clone()),
        analysis: AnalysisOut::from(&analysis),
    };
    let session = recorder.map(|d| d.session_id.clone());
    call.done(session, facts, body)
}
