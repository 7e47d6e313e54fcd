//! How well a problem suits skeleton-of-thought, read from keyword cues of its text, and the
//! outline templates (`sot_heuristic_scaffold`) a phase falls back on when the caller sends no
//! points.
//!
//! Owns: the cues, the score, the templates and how a style writes a point. Must not know: the
//! graph.

use super::super::modes::{Cue, matched_cues, words};
use crate::events::deliberation::Suitability;

/// Cues that a problem decomposes into independent points.
const SUITABLE_CUES: &[Cue] = &[
    Cue {
        label: "list",
        forms: &["list", "lists", "listing", "checklist"],
    },
    Cue {
        label: "plan",
        forms: &["plan", "plans", "planning", "roadmap"],
    },
    Cue {
        label: "sections",
        forms: &["section", "sections", "outline", "outlines", "chapters"],
    },
    Cue {
        label: "steps",
        forms: &["steps", "stages", "phases", "milestones"],
    },
    Cue {
        label: "compare",
        forms: &[
            "compare",
            "comparing",
            "comparison",
            "versus",
            "vs",
            "options",
            "alternatives",
        ],
    },
    Cue {
        label: "document",
        forms: &[
            "document", "report", "guide", "essay", "article", "overview", "summary", "write",
            "draft", "proposal",
        ],
    },
    Cue {
        label: "aspects",
        forms: &["aspects", "factors", "considerations", "dimensions"],
    },
];

/// Cues that a problem is one chain of dependent steps, which parallel points would break.
const UNSUITABLE_CUES: &[Cue] = &[
    Cue {
        label: "proof",
        forms: &["prove", "proof", "proofs", "proving", "theorem", "lemma"],
    },
    Cue {
        label: "derivation",
        forms: &["derive", "derivation", "derivations", "deduce", "induction"],
    },
    Cue {
        label: "sequential math",
        forms: &[
            "equation",
            "equations",
            "integral",
            "calculate",
            "compute",
            "arithmetic",
        ],
    },
    Cue {
        label: "code debugging",
        forms: &[
            "debug",
            "debugging",
            "bug",
            "bugs",
            "traceback",
            "stacktrace",
            "segfault",
            "exception",
        ],
    },
];

/// How well `text` suits skeleton-of-thought. Score = 0.5 (neutral) + 0.1 per distinct
/// suitable cue − 0.15 per distinct unsuitable cue, clamped to [0, 1] and rounded to two
/// decimals; suitable when ≥ 0.5. Unsuitable cues weigh more because forcing independent
/// points on a proof, derivation or debugging session breaks the chain it depends on, while a
/// missed outline only costs speed. Keyword cues only: the text's meaning is not read.
pub fn suitability(text: &str) -> Suitability {
    let w = words(text);
    let good = matched_cues(&w, SUITABLE_CUES);
    let bad = matched_cues(&w, UNSUITABLE_CUES);
    let count = |v: &[&str]| f64::from(u32::try_from(v.len()).unwrap_or(u32::MAX));
    let raw = 0.5 + 0.1 * count(&good) - 0.15 * count(&bad);
    let score = (raw.clamp(0.0, 1.0) * 100.0).round() / 100.0;
    let mut reasons: Vec<String> = good
        .iter()
        .map(|c| format!("outline cue: {c} (decomposes into independent points)"))
        .collect();
    reasons.extend(bad.iter().map(|c| {
        format!(
            "sequential cue: {c} (each step depends on the one before; parallel points break it)"
        )
    }));
    if reasons.is_empty() {
        reasons.push("no cue either way: neutral".to_owned());
    }
    Suitability {
        suitable: score >= 0.5,
        score,
        reasons,
    }
}

// ---------------------------------------------------------------------------------------------
// Outline templates
// ---------------------------------------------------------------------------------------------

const COMPARISON_CUES: &[Cue] = &[
    Cue {
        label: "compare",
        forms: &["compare", "comparing", "comparison"],
    },
    Cue {
        label: "versus",
        forms: &["versus", "vs"],
    },
    Cue {
        label: "options",
        forms: &["options", "alternatives"],
    },
    Cue {
        label: "choose",
        forms: &["choose", "choosing", "choice"],
    },
    Cue {
        label: "trade-off",
        forms: &["trade off", "trade offs", "tradeoff", "tradeoffs"],
    },
];

const PLAN_CUES: &[Cue] = &[
    Cue {
        label: "plan",
        forms: &["plan", "planning", "roadmap"],
    },
    Cue {
        label: "steps",
        forms: &["steps", "milestones"],
    },
    Cue {
        label: "launch",
        forms: &["launch", "rollout"],
    },
    Cue {
        label: "migrate",
        forms: &["migrate", "migration"],
    },
    Cue {
        label: "implement",
        forms: &["implement", "implementation"],
    },
    Cue {
        label: "schedule",
        forms: &["schedule", "timeline"],
    },
];

const COMPARISON_OUTLINE: &[&str] = &[
    "Options in scope",
    "Criteria that decide between them",
    "Each option against the criteria",
    "Trade-offs: where each option wins",
    "Risks of each option",
    "Evidence behind the key differences",
    "Recommendation and its conditions",
    "What would change the recommendation",
];

const PLAN_OUTLINE: &[&str] = &[
    "Objective and success criteria",
    "Scope and constraints",
    "Milestones in order",
    "Resources and owners",
    "Dependencies between milestones",
    "Risks and mitigations",
    "Checkpoints: how progress is measured",
    "First concrete step",
];

const GENERAL_OUTLINE: &[&str] = &[
    "Context: what is asked and why it matters",
    "Key considerations that decide the answer",
    "Approach: the main steps or the core argument",
    "Evidence for each step, and what would refute it",
    "Risks and open questions",
    "Alternatives considered and why they lost",
    "Conclusion in a few sentences",
    "Next steps",
];

/// The outline template for `text`: comparison when its comparison cues outnumber its plan
/// cues, plan when the reverse, general otherwise; with its name.
pub(super) fn outline_for(text: &str) -> (&'static str, &'static [&'static str]) {
    let w = words(text);
    let compare = matched_cues(&w, COMPARISON_CUES).len();
    let plan = matched_cues(&w, PLAN_CUES).len();
    if compare > plan {
        ("comparison", COMPARISON_OUTLINE)
    } else if plan > compare {
        ("plan", PLAN_OUTLINE)
    } else {
        ("general", GENERAL_OUTLINE)
    }
}

/// A point as the style writes it.
pub(super) fn styled(style: &str, position: usize, text: &str) -> String {
    match style {
        "bullet" => format!("- {text}"),
        "sections" => format!("## {text}"),
        _ => format!("{position}. {text}"),
    }
}
