//! `analyze_systematically`'s rule table: the seed's eight frameworks, each with the cue words
//! that point to it and its steps. A problem (with its context) scores one point per cue word
//! it contains (two for a cue phrase); the highest score wins, ties go to the earlier row.
//!
//! Selection confidence: 0.3 when no cue matched (critical thinking is then the default);
//! else 0.5 + 0.4 × (top − second) / top + 0.05 × min(top, 2), at most 0.95. The selection is
//! hybrid when the runner-up scores at least 80 % of the winner. Docs: docs/cognition.md.
//!
//! Pure. Must not know MCP or the ledger.

use super::emotion::words;

/// The rule set and version every answer names.
pub const RULES: &str = "thinkledger.cognition.frameworks/1";

/// One framework of the table.
pub struct Framework {
    pub id: &'static str,
    pub name: &'static str,
    pub description: &'static str,
    /// The seed's "best for".
    pub best_for: &'static str,
    cues: &'static [&'static str],
    pub steps: &'static [&'static str],
}

pub const TABLE: &[Framework] = &[
    Framework {
        id: "root-cause-analysis",
        name: "Root Cause Analysis",
        description: "Systematic approach to identify underlying causes",
        best_for: "Debugging, failure analysis",
        cues: &[
            "why",
            "failure",
            "failures",
            "fail",
            "fails",
            "failing",
            "failed",
            "error",
            "errors",
            "bug",
            "bugs",
            "crash",
            "crashes",
            "outage",
            "incident",
            "broken",
            "intermittent",
            "regression",
            "root cause",
            "debug",
            "leak",
            "defect",
            "timeout",
            "timeouts",
            "slow",
            "degraded",
            "malfunction",
        ],
        steps: &[
            "Define problem",
            "Collect data",
            "Identify causes",
            "Verify root cause",
            "Recommend corrective actions",
        ],
    },
    Framework {
        id: "scientific-method",
        name: "Scientific Method",
        description: "Form a hypothesis and test it against evidence",
        best_for: "Hypothesis testing, empirical problems",
        cues: &[
            "hypothesis",
            "experiment",
            "test whether",
            "measure",
            "empirical",
            "evidence",
            "effect of",
            "correlation",
            "causes",
            "validate",
            "significant",
            "data shows",
        ],
        steps: &[
            "Observe and ask a question",
            "Form a hypothesis",
            "Design an experiment",
            "Collect and analyse data",
            "Draw a conclusion and iterate",
        ],
    },
    Framework {
        id: "design-thinking",
        name: "Design Thinking",
        description: "Understand users, then ideate, prototype and test",
        best_for: "User-centered problems, innovation",
        cues: &[
            "user",
            "users",
            "customer",
            "customers",
            "experience",
            "ux",
            "usability",
            "persona",
            "onboarding",
            "interface",
            "design",
            "needs",
            "journey",
            "adoption",
        ],
        steps: &["Empathize", "Define", "Ideate", "Prototype", "Test"],
    },
    Framework {
        id: "systems-thinking",
        name: "Systems Thinking",
        description: "Map the parts, their links and feedback loops",
        best_for: "Complex interconnected systems",
        cues: &[
            "ecosystem",
            "interconnected",
            "feedback",
            "dependencies",
            "system-wide",
            "organization",
            "supply chain",
            "interactions",
            "stakeholders",
            "complex",
            "loop",
            "loops",
            "network",
        ],
        steps: &[
            "Define the system boundary",
            "Map elements and relationships",
            "Identify feedback loops",
            "Find leverage points",
            "Test interventions",
        ],
    },
    Framework {
        id: "critical-thinking",
        name: "Critical Thinking",
        description: "Examine claims, evidence and arguments",
        best_for: "Evaluation, argument analysis",
        cues: &[
            "evaluate",
            "argument",
            "claim",
            "claims",
            "assess",
            "validity",
            "compare",
            "pros and cons",
            "should we",
            "trade-off",
            "tradeoff",
            "decide",
            "justify",
            "credible",
        ],
        steps: &[
            "Clarify the claim",
            "Examine the evidence",
            "Identify assumptions",
            "Consider alternatives",
            "Reach a reasoned judgement",
        ],
    },
    Framework {
        id: "creative-problem-solving",
        name: "Creative Problem Solving",
        description: "Diverge to generate options, then converge",
        best_for: "Novel solutions, brainstorming",
        cues: &[
            "new ideas",
            "innovate",
            "innovative",
            "brainstorm",
            "creative",
            "novel",
            "invent",
            "reimagine",
            "differentiate",
            "ideas",
            "original",
            "unconventional",
        ],
        steps: &[
            "Clarify the challenge",
            "Generate ideas",
            "Develop the strongest ideas",
            "Plan for action",
        ],
    },
    Framework {
        id: "first-principles",
        name: "First Principles",
        description: "Reduce the problem to fundamental truths and rebuild",
        best_for: "Fundamental understanding",
        cues: &[
            "fundamental",
            "fundamentally",
            "from scratch",
            "basic",
            "underlying",
            "physics",
            "rethink",
            "assumptions",
            "cost of",
            "first principles",
            "essence",
            "minimum",
        ],
        steps: &[
            "Identify current assumptions",
            "Break down to fundamental truths",
            "Rebuild a solution from them",
        ],
    },
    Framework {
        id: "scenario-planning",
        name: "Scenario Planning",
        description: "Explore plausible futures and prepare for each",
        best_for: "Future planning, uncertainty",
        cues: &[
            "future",
            "forecast",
            "next year",
            "years",
            "uncertain",
            "uncertainty",
            "scenario",
            "scenarios",
            "what if",
            "long-term",
            "roadmap",
            "trends",
            "plan for",
            "2030",
        ],
        steps: &[
            "Identify driving forces",
            "Rank critical uncertainties",
            "Build scenarios",
            "Assess implications",
            "Choose robust strategies and signposts",
        ],
    },
];

/// The framework with `id`.
pub fn by_id(id: &str) -> Option<&'static Framework> {
    TABLE.iter().find(|f| f.id == id)
}

/// Each framework's score for a text, in table order.
pub fn scores(text: &str) -> Vec<(usize, Vec<&'static str>)> {
    let tokens = words(text);
    let joined = format!(" {} ", tokens.join(" "));
    TABLE
        .iter()
        .map(|f| {
            let mut hits = Vec::new();
            let mut score = 0;
            for cue in f.cues {
                let found = if cue.contains(' ') || cue.contains('-') {
                    joined.contains(&format!(" {cue} "))
                } else {
                    tokens.iter().any(|t| t == cue)
                };
                if found {
                    score += if cue.contains(' ') { 2 } else { 1 };
                    hits.push(*cue);
                }
            }
            (score, hits)
        })
        .collect()
}

/// The chosen framework, its confidence, whether the choice is hybrid, the matched cues, and
/// the runners-up (index, score) best first.
pub struct Selection {
    pub framework: &'static Framework,
    pub confidence: f64,
    pub hybrid: bool,
    pub cues: Vec<&'static str>,
    pub runners_up: Vec<(&'static Framework, usize)>,
    pub top: usize,
}

pub fn select(text: &str) -> Selection {
    let scored = scores(text);
    let mut order: Vec<usize> = (0..TABLE.len()).collect();
    order.sort_by(|a, b| scored[*b].0.cmp(&scored[*a].0).then(a.cmp(b)));
    let top = scored[order[0]].0;
    let second = scored[order[1]].0;
    let (winner, confidence) = if top == 0 {
        (4, 0.3) // critical-thinking
    } else {
        #[allow(clippy::cast_precision_loss)] // small counts
        let (t, s) = (top as f64, second as f64);
        let c = 0.5 + 0.4 * (t - s) / t + 0.05 * t.min(2.0);
        (order[0], c.min(0.95))
    };
    let hybrid = top > 0 && second * 5 >= top * 4;
    let runners_up = order
        .iter()
        .filter(|i| **i != winner)
        .take(2)
        .map(|i| (&TABLE[*i], scored[*i].0))
        .collect();
    Selection {
        framework: &TABLE[winner],
        confidence: (confidence * 100.0_f64).round() / 100.0,
        hybrid,
        cues: scored[winner].1.clone(),
        runners_up,
        top,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_analysis_problem_gets_root_cause_analysis() {
        let s = select("Why is the system experiencing intermittent failures?");
        assert_eq!(s.framework.id, "root-cause-analysis");
        assert!(s.confidence > 0.8);
    }

    #[test]
    fn other_problems_get_their_frameworks() {
        assert_eq!(
            select("How do we improve onboarding for new users?")
                .framework
                .id,
            "design-thinking"
        );
        assert_eq!(
            select("Plan for the next 5 years under uncertainty")
                .framework
                .id,
            "scenario-planning"
        );
        assert_eq!(select("Hello there").framework.id, "critical-thinking");
    }
}
