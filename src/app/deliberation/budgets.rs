//! Profiles and budgets: the budgets each profile starts a deliberation with, the hard
//! ceilings, and the caller's overrides checked against them.
//!
//! Owns those numbers and their refusals. Must not know MCP or storage.

use crate::app::ErrorCode;
use crate::app::Rejection;
use crate::app::call::Refusal;
use crate::events::deliberation::Budgets;

pub const PROFILES: &[&str] = &["quick", "balanced", "deep", "paranoid"];

/// Hard ceilings no budget may exceed (a caller may ask for less, never more).
pub const BUDGET_CEILING: Budgets = Budgets {
    max_nodes: 5_000,
    max_depth: 64,
    max_expansions_per_call: 32,
    max_verification_questions: 64,
};

/// The budgets a profile starts with.
pub fn profile_budgets(profile: &str) -> Budgets {
    match profile {
        "quick" => Budgets {
            max_nodes: 60,
            max_depth: 6,
            max_expansions_per_call: 3,
            max_verification_questions: 4,
        },
        "deep" => Budgets {
            max_nodes: 1_000,
            max_depth: 24,
            max_expansions_per_call: 8,
            max_verification_questions: 24,
        },
        "paranoid" => Budgets {
            max_nodes: 500,
            max_depth: 16,
            max_expansions_per_call: 5,
            max_verification_questions: 32,
        },
        _ => Budgets {
            max_nodes: 200,
            max_depth: 12,
            max_expansions_per_call: 5,
            max_verification_questions: 12,
        },
    }
}

/// Refuses an unknown profile name.
pub fn profile_or_refuse(raw: Option<&str>) -> Result<&'static str, Refusal> {
    let name = raw.map_or("balanced".to_owned(), |p| p.trim().to_ascii_lowercase());
    PROFILES
        .iter()
        .find(|p| **p == name)
        .copied()
        .ok_or_else(|| {
            (
                Rejection::new(
                    ErrorCode::InvalidProfile,
                    format!("\"{name}\" is not a profile"),
                    "use quick, balanced, deep or paranoid",
                ),
                None,
            )
        })
}

/// Budget overrides a caller may pass (each at most the ceiling).
#[derive(Debug, Clone, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct BudgetArgs {
    #[serde(default)]
    #[schemars(range(min = 1, max = 5000))]
    pub max_nodes: Option<u32>,
    #[serde(default)]
    #[schemars(range(min = 1, max = 64))]
    pub max_depth: Option<u32>,
    #[serde(default)]
    #[schemars(range(min = 1, max = 32))]
    pub max_expansions_per_call: Option<u32>,
    #[serde(default)]
    #[schemars(range(min = 1, max = 64))]
    pub max_verification_questions: Option<u32>,
}

/// The profile's budgets with the caller's overrides; refuses values out of range.
pub fn budgets_or_refuse(profile: &str, args: Option<&BudgetArgs>) -> Result<Budgets, Refusal> {
    let mut b = profile_budgets(profile);
    let Some(args) = args else { return Ok(b) };
    let c = BUDGET_CEILING;
    for (name, value, ceiling, slot) in [
        ("max_nodes", args.max_nodes, c.max_nodes, &mut b.max_nodes),
        ("max_depth", args.max_depth, c.max_depth, &mut b.max_depth),
        (
            "max_expansions_per_call",
            args.max_expansions_per_call,
            c.max_expansions_per_call,
            &mut b.max_expansions_per_call,
        ),
        (
            "max_verification_questions",
            args.max_verification_questions,
            c.max_verification_questions,
            &mut b.max_verification_questions,
        ),
    ] {
        if let Some(v) = value {
            if v == 0 || v > ceiling {
                return Err((
                    Rejection::new(
                        ErrorCode::InvalidBudget,
                        format!("budgets.{name} is {v}; it must be between 1 and {ceiling}"),
                        format!("pass a value from 1 to {ceiling}, or omit it for the profile's"),
                    ),
                    None,
                ));
            }
            *slot = v;
        }
    }
    Ok(b)
}
