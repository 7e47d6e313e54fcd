//! The scoring rubric and score_thoughts: structural and lexical scores weighted by the rubric
//! (prune_thoughts keeps the beam from them: `prune.rs`). Must not know: how nodes were made
//! (lenses, templates, patterns).

use std::collections::{BTreeMap, HashMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::invalid;
use crate::app::ErrorCode;
use crate::app::Outcome;
use crate::app::call::model::ModelStep;
use crate::app::call::{Call, Refusal};
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::graph_edit::GraphEdit;
use crate::app::deliberation::model;
use crate::app::deliberation::outputs::AnalysisOut;
use crate::app::{App, Command};
use crate::events::Fact;
use crate::events::deliberation::{AnalysisMetadata, NodeScore, NodesScored, RubricSet};
use crate::projections::Deliberation;

// ---------------------------------------------------------------------------------------------
// set_scoring_rubric / score_thoughts
// ---------------------------------------------------------------------------------------------

/// The scoring dimensions, each in [0, 1], higher is better.
///
/// - `grounding`: support from the graph and from verification. p = live `supports` edges into
///   the node + verified claims made in it; q = refuted or contested claims made in it;
///   grounding = (p + 0.5) / (p + q + 1) (0.5 with neither).
/// - `coherence`: 1 / (1 + incident `conflicts` edges with live nodes, either direction); 0 when
///   a live node and this one are joined by `contradicts_fatally`.
/// - `novelty`: 1 − the largest Jaccard similarity between the node's word set and that of any
///   other live node (words: lowercase alphanumeric runs of 3+ characters); 0 for an empty or
///   erased text.
/// - `specificity`: lexical only: the share of tokens that contain a digit or have at least 7
///   characters, doubled and capped at 1.
/// - `assumption_risk`: 1 − the share of the node's (not retracted) assumptions that are
///   high or critical and unverified or falsified; 1 with none.
/// - `agent`: the caller's own judgement, only for nodes it was given for.
/// - `model`: the configured model's 0–10 judgement of the node against the goal, divided by
///   10, only in a call with `provider: "model_backed"`.
pub const DIMENSIONS: &[&str] = &[
    "grounding",
    "coherence",
    "novelty",
    "specificity",
    "assumption_risk",
    "agent",
    "model",
];

/// Weights used when no rubric was set. `agent` and `model` count only for nodes that have
/// them; a node's score is the weighted mean over the dimensions it has.
pub const DEFAULT_WEIGHTS: &[(&str, f64)] = &[
    ("grounding", 0.25),
    ("coherence", 0.20),
    ("novelty", 0.20),
    ("specificity", 0.15),
    ("assumption_risk", 0.20),
    ("agent", 0.40),
    ("model", 0.40),
];

fn default_weights() -> BTreeMap<String, f64> {
    DEFAULT_WEIGHTS
        .iter()
        .map(|(k, v)| ((*k).to_owned(), *v))
        .collect()
}

/// Arguments of `set_scoring_rubric`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct RubricArgs {
    /// Weight by dimension, each in [0, 1]: grounding, coherence, novelty, specificity,
    /// assumption_risk, agent. Dimensions not named weigh 0; at least one must weigh more.
    pub weights: BTreeMap<String, f64>,
    /// Deliberation handle (`session_id` of an earlier response); omit for your current one.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `set_scoring_rubric`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RubricOutput {
    pub session_id: String,
    pub deliberation_id: String,
    /// Every dimension's weight now in force (0 for those not named).
    pub weights: BTreeMap<String, f64>,
    /// The weights in force before (the defaults when no rubric was set).
    pub previous_weights: BTreeMap<String, f64>,
    pub dimensions: Vec<String>,
}

const RUBRIC_USAGE: &str =
    "send {\"weights\": {\"grounding\": 0.4, \"novelty\": 0.3, \"specificity\": 0.3}}";

fn invalid_rubric(d: &Deliberation, message: String) -> Refusal {
    refuse(
        d,
        ErrorCode::InvalidRubric,
        message,
        format!(
            "weigh these dimensions, each from 0 to 1, at least one above 0: {}",
            DIMENSIONS.join(", ")
        ),
    )
}

pub(crate) fn decide_rubric(call: &mut Call<'_>) -> Outcome {
    let args: RubricArgs = call.parse(RUBRIC_USAGE)?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    let mut weights: BTreeMap<String, f64> =
        DIMENSIONS.iter().map(|k| ((*k).to_owned(), 0.0)).collect();
    for (name, w) in &args.weights {
        let Some(slot) = weights.get_mut(name.as_str()) else {
            return Err(invalid_rubric(
                d,
                format!("\"{name}\" is not a scoring dimension"),
            ));
        };
        if !w.is_finite() || !(0.0..=1.0).contains(w) {
            return Err(invalid_rubric(
                d,
                format!("the weight of {name} is {w}; weights lie in [0, 1]"),
            ));
        }
        *slot = *w;
    }
    if weights.values().all(|w| *w == 0.0) {
        return Err(invalid_rubric(
            d,
            "every weight is 0: nothing would be scored".to_owned(),
        ));
    }
    let previous_weights = d.rubric.clone().unwrap_or_else(default_weights);
    let fact = Fact::RubricSet(RubricSet {
        session_id: d.session_id.clone(),
        weights: weights.clone(),
    });
    let body = RubricOutput {
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
        weights,
        previous_weights,
        dimensions: DIMENSIONS.iter().map(|s| (*s).to_owned()).collect(),
    };
    call.done(Some(d.session_id.clone()), vec![fact], body)
}

/// Arguments of `score_thoughts`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ScoreArgs {
    /// `heuristic` (default), or `model_backed`: the configured model also judges each node
    /// (the `model` dimension; refused without a provider). `retrieval` is reserved.
    #[serde(default)]
    #[schemars(with = "String")]
    pub provider: Option<String>,
    /// Nodes to score (default: every live node but the root).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub node_ids: Option<Vec<String>>,
    /// The caller's own judgement by node id, each in [0, 1]: the `agent` dimension.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, f64>")]
    pub agent_scores: Option<BTreeMap<String, f64>>,
    /// Deliberation handle (`session_id` of an earlier response); omit for your current one.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// One node's score.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ScoredNode {
    /// 1 for the best.
    pub rank: usize,
    pub node_id: String,
    /// Weighted mean of the node's dimensions, in [0, 1].
    pub score: f64,
    /// Each dimension's value in [0, 1].
    pub dimensions: BTreeMap<String, f64>,
    pub branch_id: String,
    pub depth: u32,
}

/// Response of `score_thoughts`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ScoreOutput {
    pub session_id: String,
    pub deliberation_id: String,
    pub score_run_id: String,
    /// Best first; ties in node order.
    pub scores: Vec<ScoredNode>,
    /// The weights used.
    pub weights: BTreeMap<String, f64>,
    /// `rubric` (set_scoring_rubric) or `default`.
    pub weights_source: String,
    /// Null: a semantic judgement would need a model; none is configured.
    pub semantic_confidence: Option<f64>,
    pub analysis: AnalysisOut,
}

const SCORE_USAGE: &str =
    "send {\"node_ids\": [\"node-2\", \"node-3\"], \"agent_scores\": {\"node-2\": 0.8}} or {}";

/// Lowercase alphanumeric runs of at least 3 characters (short function words say little
/// about overlap).
fn word_set(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect()
}

/// The word sets of the live nodes with an inverted index (word → nodes), so a node's closest
/// neighbour is found through the words it shares instead of by comparing it with every node:
/// scoring stays near-linear in the graph's size rather than quadratic.
struct WordIndex<'a> {
    sets: HashMap<&'a str, HashSet<String>>,
    postings: HashMap<String, Vec<&'a str>>,
}

impl<'a> WordIndex<'a> {
    fn new(sets: HashMap<&'a str, HashSet<String>>) -> Self {
        let mut postings: HashMap<String, Vec<&'a str>> = HashMap::new();
        for (id, words) in &sets {
            for w in words {
                postings.entry(w.clone()).or_default().push(id);
            }
        }
        Self { sets, postings }
    }

    /// The largest Jaccard similarity between `own` and the word set of any other live node
    /// (0 when it shares no word with any): |A ∩ B| / (|A| + |B| − |A ∩ B|).
    fn closest(&self, id: &str, own: &HashSet<String>) -> f64 {
        let mut shared: HashMap<&str, usize> = HashMap::new();
        for w in own {
            for other in self.postings.get(w).into_iter().flatten() {
                if *other != id {
                    *shared.entry(other).or_default() += 1;
                }
            }
        }
        shared
            .into_iter()
            .map(|(other, inter)| {
                let theirs = self.sets.get(other).map_or(0, HashSet::len);
                ratio(inter, own.len() + theirs - inter)
            })
            .fold(0.0, f64::max)
    }
}

/// A count as a float (counts here stay far below 2^32, where the conversion is exact).
fn count(n: usize) -> f64 {
    u32::try_from(n).map_or(f64::from(u32::MAX), f64::from)
}

fn ratio(num: usize, den: usize) -> f64 {
    if den == 0 {
        0.0
    } else {
        count(num) / count(den)
    }
}

fn specificity(text: &str) -> f64 {
    let tokens: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .collect();
    let specific = tokens
        .iter()
        .filter(|t| t.chars().any(|c| c.is_ascii_digit()) || t.chars().count() >= 7)
        .count();
    (2.0 * ratio(specific, tokens.len())).min(1.0)
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// The structural dimensions of one node (every dimension but `agent`).
fn structural_dimensions(
    d: &Deliberation,
    id: &str,
    words: &WordIndex<'_>,
    text: &str,
) -> BTreeMap<String, f64> {
    let live = |n: &str| d.node(n).is_some_and(|x| x.pruned.is_none());
    let supports = d
        .edges
        .iter()
        .filter(|e| e.to == id && e.edge_type == "supports" && live(&e.from))
        .count();
    let mut verified = 0;
    let mut against = 0;
    for c in d
        .claims
        .iter()
        .filter(|c| c.node_ids.iter().any(|n| n == id))
    {
        match c.status.as_str() {
            "verified" => verified += 1,
            "refuted" | "contested" => against += 1,
            _ => {}
        }
    }
    let p = supports + verified;
    let grounding = (count(p) + 0.5) / (count(p + against) + 1.0);

    let incident = |t: &str| {
        d.edges
            .iter()
            .filter(|e| e.edge_type == t)
            .filter(|e| (e.from == id && live(&e.to)) || (e.to == id && live(&e.from)))
            .count()
    };
    let coherence = if incident("contradicts_fatally") > 0 {
        0.0
    } else {
        1.0 / (count(incident("conflicts")) + 1.0)
    };

    let own = word_set(text);
    let novelty = if own.is_empty() {
        0.0
    } else {
        1.0 - words.closest(id, &own)
    };

    let mut linked = 0;
    let mut risky = 0;
    for a in d
        .assumptions
        .iter()
        .filter(|a| a.status != "retracted" && a.source_node_ids.iter().any(|n| n == id))
    {
        linked += 1;
        let severe = matches!(a.criticality.as_str(), "high" | "critical");
        let open = matches!(a.status.as_str(), "unverified" | "falsified");
        if severe && open {
            risky += 1;
        }
    }
    let assumption_risk = 1.0 - ratio(risky, linked);

    BTreeMap::from([
        ("grounding".to_owned(), round4(grounding)),
        ("coherence".to_owned(), round4(coherence)),
        ("novelty".to_owned(), round4(novelty)),
        ("specificity".to_owned(), round4(specificity(text))),
        ("assumption_risk".to_owned(), round4(assumption_risk)),
    ])
}

/// The weighted mean over the dimensions present; None when they all weigh 0.
fn weighted(dimensions: &BTreeMap<String, f64>, weights: &BTreeMap<String, f64>) -> Option<f64> {
    let mut sum = 0.0;
    let mut total = 0.0;
    for (name, value) in dimensions {
        let w = weights.get(name).copied().unwrap_or(0.0);
        sum += w * value;
        total += w;
    }
    (total > 0.0).then(|| round4(sum / total))
}

const SCORE_LIMITATIONS: &[&str] = &[
    "scores are structural and lexical: edges, verification results, assumption statuses and \
     word overlap; they do not judge whether a thought is true or sound",
    "specificity counts numbers and long words; it is lexical, not semantic",
    "novelty is word-set overlap (Jaccard); paraphrases look novel and templates quoting the \
     same parent look alike",
    "the agent dimension is the caller's own judgement, taken as given",
];

/// The model's judgements (`provider: "model_backed"`).
#[derive(Debug, Deserialize)]
struct ModelScores {
    scores: Vec<ModelScore>,
}

#[derive(Debug, Deserialize)]
struct ModelScore {
    node_id: String,
    score: u32,
}

/// The nodes a `score_thoughts` call scores: those named (in creation order), else every live
/// node but the root. `None` when one named does not exist (the decision refuses).
fn score_targets<'a>(d: &'a Deliberation, node_ids: Option<&[String]>) -> Option<Vec<&'a str>> {
    match node_ids {
        Some(ids) => {
            if ids.iter().any(|id| d.node(id).is_none()) {
                return None;
            }
            Some(
                d.nodes
                    .iter()
                    .map(|n| n.node_id.as_str())
                    .filter(|n| ids.iter().any(|i| i == n))
                    .collect(),
            )
        }
        None => Some(
            d.live_nodes()
                .filter(|n| n.node_id != d.root_node_id)
                .map(|n| n.node_id.as_str())
                .collect(),
        ),
    }
}

/// The model call of `score_thoughts` with `provider: "model_backed"`: the goal and each node's
/// text, asking for a 0–10 judgement per node as JSON.
pub(crate) fn plan_score(app: &App, command: &Command) -> Result<Option<ModelStep>, Refusal> {
    let Some(args) = model::plan_args::<ScoreArgs>(command) else {
        return Ok(None);
    };
    if !model::asks_model(&command.arguments) || !command.prepared.model.answers.is_empty() {
        return Ok(None);
    }
    let Some(d) = model::deliberation_of(app, command, args.session_id.as_deref()) else {
        return Ok(None);
    };
    let Some(targets) = score_targets(d, args.node_ids.as_deref()) else {
        return Ok(None);
    };
    if targets.is_empty() {
        return Ok(None);
    }
    let mut prompt = format!(
        "Goal: {}\n\nThoughts:\n",
        model::text_or_erased(app, &d.goal)
    );
    for id in &targets {
        let text = d
            .node(id)
            .map_or("[erased]", |n| model::text_or_erased(app, &n.content));
        prompt.push_str(&format!("- {id}: {text}\n"));
    }
    prompt.push_str(
        "\nRate each thought from 0 (unsound, or irrelevant to the goal) to 10 (sound, \
         specific and useful for the goal).",
    );
    let n = targets.len();
    Ok(Some(ModelStep::Chat(model::json_request(
        "You judge reasoning steps. Answer only with JSON.",
        &prompt,
        "scores",
        json!({
            "type": "object",
            "properties": {
                "scores": {
                    "type": "array",
                    "minItems": n,
                    "maxItems": n,
                    "items": {
                        "type": "object",
                        "properties": {
                            "node_id": {"type": "string", "enum": targets},
                            "score": {"type": "integer", "minimum": 0, "maximum": 10},
                        },
                        "required": ["node_id", "score"],
                        "additionalProperties": false,
                    },
                }
            },
            "required": ["scores"],
            "additionalProperties": false,
        }),
    ))))
}

/// Decides `score_thoughts`: the nodes to score, the model's judgement (`model_backed`), the
/// caller's agent scores, each node's dimensions weighted by the rubric, then the ranking, the
/// fact and the response.
pub(crate) fn decide_score(call: &mut Call<'_>) -> Outcome {
    let args: ScoreArgs = call.parse(SCORE_USAGE)?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    let targets = targets_or_refuse(d, args.node_ids.as_deref())?;
    let judged = if model::asks_model(call.args) {
        Some(model_judgement(call, d, &targets)?)
    } else {
        None
    };
    let agent = args.agent_scores.unwrap_or_default();
    check_agent_scores(d, &agent, &targets)?;
    let (weights, weights_source) = match &d.rubric {
        Some(r) => (r.clone(), "rubric"),
        None => (default_weights(), "default"),
    };
    let model_scores = judged.as_ref().map(|(scores, _)| scores);
    let scores = score_nodes(call, d, &targets, &agent, model_scores, &weights)?;
    let score_run_id = format!("score-{}", d.score_runs.len() + 1);
    let sources: Vec<String> = targets.iter().map(|s| (*s).to_owned()).collect();
    let model_name = judged.as_ref().map(|(_, name)| name.as_str());
    let analysis = score_analysis(call, d, model_name, sources);
    let out: Vec<ScoredNode> = scores
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let node = d.node(&s.node_id);
            ScoredNode {
                rank: i + 1,
                node_id: s.node_id.clone(),
                score: s.score,
                dimensions: s.dimensions.clone(),
                branch_id: node.map(|n| n.branch_id.clone()).unwrap_or_default(),
                depth: node.map_or(0, |n| n.depth),
            }
        })
        .collect();
    let body = ScoreOutput {
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
        score_run_id: score_run_id.clone(),
        scores: out,
        weights: weights.clone(),
        weights_source: weights_source.to_owned(),
        semantic_confidence: None,
        analysis: AnalysisOut::from(&analysis),
    };
    let fact = Fact::NodesScored(NodesScored {
        session_id: d.session_id.clone(),
        score_run_id,
        scores,
        weights,
        analysis,
    });
    call.done(Some(d.session_id.clone()), vec![fact], body)
}

/// The nodes the call scores: those named (each must exist), in creation order so ties rank
/// the same whatever order the caller listed; else every live node but the root. Refuses when
/// there is none.
fn targets_or_refuse<'a>(
    d: &'a Deliberation,
    node_ids: Option<&[String]>,
) -> Result<Vec<&'a str>, Refusal> {
    let targets: Vec<&str> = match node_ids {
        Some(ids) => {
            let edit = GraphEdit::new(d);
            for id in ids {
                edit.require_node(id, "node_ids entry")?;
            }
            d.nodes
                .iter()
                .map(|n| n.node_id.as_str())
                .filter(|n| ids.iter().any(|i| i == n))
                .collect()
        }
        None => d
            .live_nodes()
            .filter(|n| n.node_id != d.root_node_id)
            .map(|n| n.node_id.as_str())
            .collect(),
    };
    if targets.is_empty() {
        return Err(refuse(
            d,
            ErrorCode::NothingToScore,
            "there is no node to score: the deliberation holds only its root (or every other \
             node was pruned)",
            "add thoughts first (add_thought_node, expand_thoughts, apply_algorithm_template)",
        ));
    }
    Ok(targets)
}

/// The model's judgement (as [`plan_score`] asked): each target's 0–10 score as a value in
/// [0, 1], and the model's name. Refuses a score out of range, of a node not shown, or missing.
fn model_judgement(
    call: &Call<'_>,
    d: &Deliberation,
    targets: &[&str],
) -> Result<(BTreeMap<String, f64>, String), Refusal> {
    let answer = call.model_answers().first().cloned();
    let written: ModelScores = model::parse_answer(d, answer.as_ref(), "a score per node")?;
    let mut by_node = BTreeMap::new();
    for s in written.scores {
        if s.score > 10 || !targets.contains(&s.node_id.as_str()) {
            return Err(refuse(
                d,
                ErrorCode::ModelAnswerUnusable,
                format!("the model scored {} as {}", s.node_id, s.score),
                "retry; the model must score each node it was shown from 0 to 10",
            ));
        }
        by_node.insert(s.node_id, f64::from(s.score) / 10.0);
    }
    if let Some(missing) = targets.iter().find(|t| !by_node.contains_key(**t)) {
        return Err(refuse(
            d,
            ErrorCode::ModelAnswerUnusable,
            format!("the model gave no score for {missing}"),
            "retry; the model must score each node it was shown",
        ));
    }
    Ok((
        by_node,
        answer.as_ref().map(model::model_name).unwrap_or_default(),
    ))
}

/// Refuses an agent score for a node not being scored, or one outside [0, 1].
fn check_agent_scores(
    d: &Deliberation,
    agent: &BTreeMap<String, f64>,
    targets: &[&str],
) -> Result<(), Refusal> {
    for (id, v) in agent {
        if !targets.contains(&id.as_str()) {
            return Err(invalid(
                d,
                format!("agent_scores names {id}, which is not being scored"),
                "give agent scores only for nodes in node_ids (or live non-root nodes when \
                 node_ids is omitted)",
            ));
        }
        if !v.is_finite() || !(0.0..=1.0).contains(v) {
            return Err(invalid(
                d,
                format!("the agent score of {id} is {v}; scores lie in [0, 1]"),
                "send each agent score as a number from 0 to 1",
            ));
        }
    }
    Ok(())
}

/// Each target's dimensions (structural, then the agent's and the model's where given) and
/// weighted score, best first (equal scores keep creation order). Refuses when the rubric
/// weighs only dimensions some node lacks.
fn score_nodes(
    call: &Call<'_>,
    d: &Deliberation,
    targets: &[&str],
    agent: &BTreeMap<String, f64>,
    judged: Option<&BTreeMap<String, f64>>,
    weights: &BTreeMap<String, f64>,
) -> Result<Vec<NodeScore>, Refusal> {
    let app = call.app;
    let text_of = |id: &str| {
        d.node(id)
            .and_then(|n| app.deliberations().text(&n.content))
            .unwrap_or("")
    };
    // Novelty compares against live nodes only: pruned ones left the search.
    let live_words = WordIndex::new(
        d.live_nodes()
            .map(|n| (n.node_id.as_str(), word_set(text_of(&n.node_id))))
            .collect(),
    );
    let mut scores = Vec::with_capacity(targets.len());
    let mut unweighted = Vec::new();
    for id in targets {
        let text = text_of(id);
        let mut dimensions = structural_dimensions(d, id, &live_words, text);
        if let Some(v) = agent.get(*id) {
            dimensions.insert("agent".to_owned(), round4(*v));
        }
        if let Some(v) = judged.and_then(|scores| scores.get(*id)) {
            dimensions.insert("model".to_owned(), round4(*v));
        }
        match weighted(&dimensions, weights) {
            Some(score) => scores.push(NodeScore {
                node_id: (*id).to_owned(),
                score,
                dimensions,
            }),
            None => unweighted.push((*id).to_owned()),
        }
    }
    if !unweighted.is_empty() {
        return Err(refuse(
            d,
            ErrorCode::MissingAgentScores,
            format!(
                "the rubric weighs only dimensions these nodes lack (the agent score): {}",
                unweighted.join(", ")
            ),
            "send agent_scores for these nodes, or set a rubric that also weighs a structural \
             dimension",
        ));
    }
    // Stable: equal scores keep node (creation) order.
    scores.sort_by(|a, b| b.score.total_cmp(&a.score));
    Ok(scores)
}

/// The score run's analysis: structural, or structural and the named model's judgement.
fn score_analysis(
    call: &Call<'_>,
    d: &Deliberation,
    model_name: Option<&str>,
    sources: Vec<String>,
) -> AnalysisMetadata {
    match model_name {
        Some(name) => {
            let mut limitations = SCORE_LIMITATIONS.to_vec();
            limitations.push(
                "the model dimension is the named model's 0-10 judgement of each thought \
                 against the goal, taken as it answered; it weighs as the rubric says",
            );
            call.model_analysis(
                &d.user_mode,
                "score.weighted_structural_and_model",
                name,
                sources,
                &limitations,
            )
        }
        None => call.analysis(
            &d.user_mode,
            "score.weighted_structural",
            "heuristic",
            sources,
            SCORE_LIMITATIONS,
        ),
    }
}
