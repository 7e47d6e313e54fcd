//! What each thinking mode scaffolds under a run's subject: Quick's linear chain, Explore's
//! lens branches, Map's dependency frame, Sketch's skeleton phase and Test's verification
//! stage. Every node is a rule-written prompt for the client to answer.
//!
//! Must not know: routing, starting a deliberation, the route fact or the response (`run`).

use super::super::scaffold::{NodeSpec, Scaffold};
use super::super::skeleton::{self, SkeletonPlan};
use super::catalog::strings;
use crate::app::call::{Call, Refusal};
use crate::app::deliberation::mode::Mode;
use crate::app::providers::HEURISTIC;
use crate::events::Fact;
use crate::events::deliberation::AnalysisMetadata;

/// What every mode scaffold admits about itself.
pub(super) const SCAFFOLD_LIMITATIONS: &[&str] = &[
    "no model invoked: the nodes are rule-written prompts for the client to answer, not \
     reasoning content",
    "the scaffold is the same for every goal of a mode; only routing reads the goal's words",
];

/// The lenses Explore opens branches with, in order.
const LENSES: &[(&str, &str)] = &[
    (
        "conventional",
        "the approach most practitioners would take first; state it, then what would make it \
         win or fail",
    ),
    (
        "contrarian",
        "an approach that deliberately inverts the obvious one; state it, then what would make \
         it win or fail",
    ),
    (
        "constraint-first",
        "start from the hardest constraint and build the approach that satisfies it first",
    ),
    (
        "analogy",
        "borrow a solution from a different domain facing a similar problem, and map it over",
    ),
    (
        "minimal",
        "the simplest thing that could work; what does it leave out, and does that matter?",
    ),
    (
        "risk-averse",
        "the approach that minimises the worst case; what does that caution cost?",
    ),
    (
        "first-principles",
        "rebuild the answer from the basic facts and constraints, ignoring convention",
    ),
    (
        "stakeholder",
        "the approach the most affected party would choose; whose interests does it serve?",
    ),
];

/// Tags as the scaffolds record them.
pub(super) fn tags(items: &[&str]) -> Vec<String> {
    strings(items)
}

/// Where a mode's scaffold goes: the mode, the node it hangs under and that node's branch.
struct Under<'p> {
    mode: Mode,
    /// The run's subject: the node every scaffold node descends from.
    parent: &'p str,
    /// The parent's branch (`main` if it is not a recorded node), which linear scaffolds keep.
    branch: String,
}

impl Under<'_> {
    /// The analysis of a rule-written scaffold node, drawn from the parent.
    fn analysis(&self, call: &Call<'_>, method: &str) -> AnalysisMetadata {
        call.analysis(
            self.mode.user_mode,
            method,
            HEURISTIC,
            vec![self.parent.to_owned()],
            SCAFFOLD_LIMITATIONS,
        )
    }
}

/// Runs a mode's scaffold on `d` under `parent`; returns the Sketch phase fact, if any.
pub(super) fn scaffold_mode(
    call: &mut Call<'_>,
    s: &mut Scaffold<'_>,
    mode: Mode,
    parent: &str,
    subject_text: &str,
) -> Result<Option<Fact>, Refusal> {
    let branch = s
        .edit
        .d
        .node(parent)
        .map_or_else(|| "main".to_owned(), |n| n.branch_id.clone());
    let under = Under {
        mode,
        parent,
        branch,
    };
    match mode.user_mode {
        "Quick" => scaffold_quick(call, s, &under).map(|()| None),
        "Explore" => scaffold_explore(call, s, &under).map(|()| None),
        "Map" => scaffold_map(call, s, &under).map(|()| None),
        "Sketch" => {
            let phase = skeleton::plan_skeleton(
                call,
                s,
                &SkeletonPlan {
                    source_node_id: parent,
                    source_text: subject_text,
                    points: &[],
                    style: "numbered",
                    max_points: skeleton::DEFAULT_SCAFFOLD_POINTS,
                },
            )?;
            Ok(Some(Fact::SkeletonPhaseStarted(phase)))
        }
        "Test" => scaffold_test(call, s, &under).map(|()| None),
        _ => Ok(None),
    }
}

/// Quick: a linear chain of three prompts (restate, key steps, answer check), each after the
/// one before.
fn scaffold_quick(
    call: &mut Call<'_>,
    s: &mut Scaffold<'_>,
    under: &Under<'_>,
) -> Result<(), Refusal> {
    let steps = [
        (
            "restate",
            "Restate: in one or two sentences, what is asked and what a good answer \
             must satisfy (constraints included).",
        ),
        (
            "key_steps",
            "Key steps: list the few decisive steps or facts the answer rests on — a \
             concise audit, not a transcript of private reasoning.",
        ),
        (
            "answer_check",
            "Answer check: state the answer and check it against the restatement and \
             each constraint; name anything still unverified.",
        ),
    ];
    let mut previous = under.parent.to_owned();
    for (i, (tag, text)) in steps.iter().enumerate() {
        let spec = NodeSpec {
            parents: vec![previous.clone()],
            branch_id: under.branch.clone(),
            kind: "template",
            tags: tags(&["quick", "cot", *tag]),
            analysis: under.analysis(call, "quick.linear_scaffold"),
        };
        let id = s.derived(call, spec, text)?;
        if i > 0 {
            s.edge(&previous, &id, "temporally_precedes")?;
        }
        previous = id;
    }
    Ok(())
}

/// Explore: one branch per lens, as many as the deliberation's expansion budget allows.
fn scaffold_explore(
    call: &mut Call<'_>,
    s: &mut Scaffold<'_>,
    under: &Under<'_>,
) -> Result<(), Refusal> {
    let d = s.edit.d;
    let count = usize::try_from(d.budgets.max_expansions_per_call)
        .unwrap_or(usize::MAX)
        .min(LENSES.len());
    for (lens, text) in LENSES.iter().take(count) {
        // Each branch is named after its first node: distinct within the run and from
        // every earlier run's branches.
        let branch_id = s.edit.next_node_id();
        let spec = NodeSpec {
            parents: vec![under.parent.to_owned()],
            branch_id,
            kind: "expansion",
            tags: vec![
                "explore".to_owned(),
                "tot".to_owned(),
                format!("lens:{lens}"),
            ],
            analysis: under.analysis(call, "explore.lens_templates"),
        };
        s.derived(call, spec, &format!("Branch ({lens} lens): {text}"))?;
    }
    Ok(())
}

/// Map: drivers, constraints and risks under the subject, a synthesis over the three, and the
/// dependency edges between them.
fn scaffold_map(
    call: &mut Call<'_>,
    s: &mut Scaffold<'_>,
    under: &Under<'_>,
) -> Result<(), Refusal> {
    let d = s.edit.d;
    let constraints = d.constraints.len();
    let constraints_text = if constraints == 0 {
        "Constraints: what limits the possible answers (resources, rules, time, \
         compatibility)? Relate each to the drivers it bounds."
            .to_owned()
    } else {
        format!(
            "Constraints: the deliberation lists {constraints} constraint(s); add any \
             unstated ones and relate each to the drivers it bounds."
        )
    };
    let spec = |kind_tag: &str| NodeSpec {
        parents: vec![under.parent.to_owned()],
        branch_id: under.branch.clone(),
        kind: "template",
        tags: tags(&["map", "got", kind_tag]),
        analysis: under.analysis(call, "map.dependency_scaffold"),
    };
    let drivers_spec = spec("drivers");
    let constraints_spec = spec("constraints");
    let risks_spec = spec("risks");
    let drivers = s.derived(
        call,
        drivers_spec,
        "Drivers: which forces, causes or goals shape the outcome? One node per \
         driver, linked here with depends_on where one driver needs another.",
    )?;
    let limits = s.derived(call, constraints_spec, &constraints_text)?;
    let risks = s.derived(
        call,
        risks_spec,
        "Risks: what could break the outcome, and which drivers or constraints does \
         each risk depend on? Mark incompatible risks with conflicts edges.",
    )?;
    let synthesis_spec = NodeSpec {
        parents: vec![drivers.clone(), limits.clone(), risks.clone()],
        branch_id: under.branch.clone(),
        kind: "template",
        tags: tags(&["map", "got", "synthesis"]),
        analysis: under.analysis(call, "map.dependency_scaffold"),
    };
    let synthesis = s.derived(
        call,
        synthesis_spec,
        "Synthesis: how do the drivers, constraints and risks interact? Name each \
         conflict (conflicts / contradicts_fatally) and refinement (refines) you find.",
    )?;
    s.edge(&limits, &drivers, "contextualizes")?;
    s.edge(&risks, &drivers, "depends_on")?;
    s.edge(&risks, &limits, "depends_on")?;
    s.edge(&synthesis, &drivers, "depends_on")?;
    s.edge(&synthesis, &limits, "depends_on")?;
    s.edge(&synthesis, &risks, "depends_on")?;
    Ok(())
}

/// Test: prompts for the claims to verify and the assumptions, and a verification stage that
/// depends on both.
fn scaffold_test(
    call: &mut Call<'_>,
    s: &mut Scaffold<'_>,
    under: &Under<'_>,
) -> Result<(), Refusal> {
    let claims_spec = NodeSpec {
        parents: vec![under.parent.to_owned()],
        branch_id: under.branch.clone(),
        kind: "template",
        tags: tags(&["test", "reasonkit", "claims"]),
        analysis: under.analysis(call, "test.verification_scaffold"),
    };
    let claims = s.derived(
        call,
        claims_spec,
        "Claims to verify: list each factual claim the answer will rest on, with its \
         criticality (low, medium, high, critical); send them to verify_thoughts as \
         claims.",
    )?;
    let assumptions_spec = NodeSpec {
        parents: vec![under.parent.to_owned()],
        branch_id: under.branch.clone(),
        kind: "template",
        tags: tags(&["test", "reasonkit", "assumptions"]),
        analysis: under.analysis(call, "test.verification_scaffold"),
    };
    let assumptions = s.derived(
        call,
        assumptions_spec,
        "Assumptions: what is taken for granted? Record each with record_assumption \
         (criticality, verifiable) and settle the verifiable ones with evidence.",
    )?;
    let stage_spec = NodeSpec {
        parents: vec![claims.clone(), assumptions.clone()],
        branch_id: under.branch.clone(),
        kind: "stage",
        tags: tags(&["test", "reasonkit", "stage:verification"]),
        analysis: under.analysis(call, "test.verification_scaffold"),
    };
    let stage = s.derived(
        call,
        stage_spec,
        "Verification stage: call verify_thoughts with the claims and your evidence \
         (tier, independence_group), record_assumption for each assumption, then \
         run_reasoning_checkpoint. consensus_answer is refused until the policy guard \
         passes.",
    )?;
    s.edge(&stage, &claims, "depends_on")?;
    s.edge(&stage, &assumptions, "depends_on")?;
    Ok(())
}
