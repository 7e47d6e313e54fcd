//! The analysis provider boundary (the seed's Analysis Contract): which provider derives the
//! workspace's outputs, and the reserved model-backed and retrieval providers that fail closed.
//!
//! This build has one active provider, `heuristic` (deterministic templates, rule checks,
//! weighted structural scores, evaluation of caller-supplied evidence), with its
//! skeleton-of-thought flavour `sot_heuristic_scaffold`. `model_backed` and `retrieval` are
//! reserved: their environment variables can be set, and the report says so, but nothing here
//! can invoke them, so every request for them is refused rather than answered by a heuristic
//! dressed as model output.
//!
//! Owns: the provider names, the environment variable names, the report and the refusal.
//! Must not know: the values of those variables (only whether they are set, which is all
//! [`crate::effects::Effects::env_is_set`] tells, and only for the report, a resource read;
//! decisions never read the environment, so replay re-derives them).
//!
//! Shared machinery: the dispatcher refuses a reserved provider for every tool that takes a
//! `provider` argument, whatever its family; it knows no family.

use serde_json::{Value, json};

use super::Rejection;
use crate::app::ErrorCode;
use crate::effects::Effects;

/// The active provider of every derived output.
pub const HEURISTIC: &str = "heuristic";

/// The active provider of skeleton-of-thought scaffolds (outline templates, not model text).
pub const SOT_HEURISTIC_SCAFFOLD: &str = "sot_heuristic_scaffold";

/// Environment variables a model-backed provider would need: endpoint and key.
pub const MODEL_BACKED_ENV: &[&str] = &[
    "THINKLEDGER_MODEL_PROVIDER_URL",
    "THINKLEDGER_MODEL_API_KEY",
];

/// Environment variables a retrieval provider would need: endpoint.
pub const RETRIEVAL_ENV: &[&str] = &["THINKLEDGER_RETRIEVAL_URL"];

/// What the state of a reserved provider is in this build, whatever is configured.
pub const RESERVED_STATE: &str = "unavailable: fail-closed (no invocation binding in this build)";

/// A capability only a reserved provider could supply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    /// Semantic expansion, scoring, verification or synthesis by a model.
    ModelBacked,
    /// Evidence retrieval and fact checking against outside sources.
    Retrieval,
}

impl Capability {
    pub fn name(self) -> &'static str {
        match self {
            Capability::ModelBacked => "model_backed",
            Capability::Retrieval => "retrieval",
        }
    }

    pub fn env(self) -> &'static [&'static str] {
        match self {
            Capability::ModelBacked => MODEL_BACKED_ENV,
            Capability::Retrieval => RETRIEVAL_ENV,
        }
    }
}

/// Refuses a request for a reserved capability: none can be invoked in this build, configured
/// or not (the refusal does not depend on the environment, so a replay refuses alike).
pub fn require(capability: Capability) -> Result<(), Rejection> {
    let env = capability.env().join(", ");
    Err(Rejection::new(
        ErrorCode::ProviderUnavailable,
        format!(
            "the {} provider is unavailable in this build: there is no invocation binding, so \
             setting {env} does not enable it (fail-closed, no heuristic stand-in)",
            capability.name()
        ),
        "use the heuristic tools and supply the content yourself (add_thought_node, \
         expand_thoughts with candidates, verify_thoughts with your evidence); \
         reasoning://config/providers shows what is active",
    ))
}

/// Checks the provider a call asks for (its `provider` argument): none or `heuristic` goes on;
/// a reserved provider is refused (fail-closed); anything else is not a provider.
pub fn requested(args: &Value) -> Result<(), Rejection> {
    match args.get("provider") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(p)) if p == HEURISTIC => Ok(()),
        Some(Value::String(p)) if p == "model_backed" => require(Capability::ModelBacked),
        Some(Value::String(p)) if p == "retrieval" => require(Capability::Retrieval),
        Some(other) => Err(Rejection::new(
            ErrorCode::InvalidProvider,
            format!("{other} is not an analysis provider"),
            "use heuristic (the default); model_backed and retrieval are reserved and fail \
             closed",
        )),
    }
}

/// The `reasoning://config/providers` document: whether each reserved provider's variables are
/// set, as `effects` tells (the environment, through the one door).
pub(crate) fn providers_report(effects: &dyn Effects) -> Value {
    providers_report_with(|name| effects.env_is_set(name))
}

/// The providers document, with `is_set` saying whether a variable is set (and not blank). It
/// never sees a value, so none can leave.
pub fn providers_report_with(is_set: impl Fn(&str) -> bool) -> Value {
    let reserved = |capability: Capability, purpose: &str| {
        let variables: Vec<Value> = capability
            .env()
            .iter()
            .map(|name| json!({ "name": name, "set": is_set(name) }))
            .collect();
        json!({
            "mode": capability.name(),
            "purpose": purpose,
            "required_env": capability.env(),
            "env": variables,
            "configured": capability.env().iter().all(|name| is_set(name)),
            "state": RESERVED_STATE,
        })
    };
    json!({
        "active_mode": HEURISTIC,
        "active": [
            {
                "mode": HEURISTIC,
                "purpose": "deterministic templates, rule checks, weighted structural scores and \
                            evaluation of caller-supplied evidence",
                "state": "active",
            },
            {
                "mode": SOT_HEURISTIC_SCAFFOLD,
                "purpose": "skeleton-of-thought phases and prompt packs; scaffold nodes are \
                            outline templates, not semantic model output",
                "state": "active",
            },
        ],
        "reserved": [
            reserved(
                Capability::ModelBacked,
                "LLM-backed expansion, scoring, verification or synthesis",
            ),
            reserved(
                Capability::Retrieval,
                "evidence retrieval and fact checking; verification today uses only \
                 caller-supplied evidence",
            ),
        ],
        "semantic_confidence": "null in every output: no model supplies it",
        "note": "a configured reserved provider is reported as configured but stays unavailable: \
                 this build refuses (provider_unavailable) instead of fabricating model output",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_says_whether_set_and_never_the_value() {
        let effects = crate::effects::FixedEffects::new(chrono::DateTime::UNIX_EPOCH, [0; 32])
            .with_env(&[
                "THINKLEDGER_MODEL_PROVIDER_URL",
                "THINKLEDGER_MODEL_API_KEY",
            ]);
        let report = providers_report(&effects);
        let text = report.to_string();
        assert_eq!(report["active_mode"], HEURISTIC);
        let model = &report["reserved"][0];
        assert_eq!(model["mode"], "model_backed");
        assert_eq!(model["configured"], true);
        assert_eq!(model["state"], RESERVED_STATE);
        let retrieval = &report["reserved"][1];
        assert_eq!(retrieval["configured"], false);
        assert_eq!(retrieval["required_env"][0], "THINKLEDGER_RETRIEVAL_URL");
        assert!(text.contains(SOT_HEURISTIC_SCAFFOLD));
    }

    #[test]
    fn partly_configured_is_not_configured() {
        let report = providers_report_with(|name| name == "THINKLEDGER_MODEL_PROVIDER_URL");
        assert_eq!(report["reserved"][0]["configured"], false);
        assert_eq!(report["reserved"][0]["env"][0]["set"], true);
        assert_eq!(report["reserved"][0]["env"][1]["set"], false);
    }

    #[test]
    fn reserved_capabilities_fail_closed_naming_their_variables() {
        for capability in [Capability::ModelBacked, Capability::Retrieval] {
            let refusal = require(capability).expect_err("fail-closed");
            assert_eq!(refusal.code, "provider_unavailable");
            for name in capability.env() {
                assert!(refusal.message.contains(name), "{}", refusal.message);
            }
        }
    }
}
