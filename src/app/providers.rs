//! The analysis provider boundary (the seed's Analysis Contract): which provider derives the
//! workspace's outputs, and the reserved model-backed and retrieval providers that fail closed.
//!
//! The default provider is `heuristic` (deterministic templates, rule checks, weighted
//! structural scores, evaluation of caller-supplied evidence), with its skeleton-of-thought
//! flavour `sot_heuristic_scaffold`. `model_backed` asks the configured model provider, for the
//! tools that have a model plan (`expand_thoughts`, `score_thoughts`, `verify_thoughts`); its
//! calls are taken in prepare and a missing provider refuses the call there
//! (`model_not_configured`). Any other tool refuses it, and `retrieval` is reserved: nothing can
//! invoke it, so every request for it is refused rather than answered by a heuristic dressed as
//! retrieval.
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
use crate::model::{API_KEY_VAR, DEFAULT_MODEL_VAR, MAX_TOKENS_VAR, PROVIDER_URL_VAR};

/// The active provider of every derived output.
pub const HEURISTIC: &str = "heuristic";

/// The provider that asks the configured model (`expand_thoughts`, `score_thoughts`,
/// `verify_thoughts`).
pub const MODEL_BACKED: &str = "model_backed";

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

/// Refuses a request for a capability the tool cannot use: retrieval is reserved in this build
/// (no invocation binding, configured or not), and `model_backed` serves only the tools with a
/// model plan. The refusal does not depend on the environment, so a replay refuses alike.
pub fn require(capability: Capability) -> Result<(), Rejection> {
    let env = capability.env().join(", ");
    let message = match capability {
        Capability::ModelBacked => "the model_backed provider does not serve this tool: only \
             expand_thoughts, score_thoughts and verify_thoughts (and the lux toolset) ask a \
             model; this tool's output comes from rules (fail-closed, no heuristic stand-in)"
            .to_owned(),
        Capability::Retrieval => format!(
            "the retrieval provider is unavailable in this build: there is no invocation \
             binding, so setting {env} does not enable it (fail-closed, no heuristic stand-in)"
        ),
    };
    Err(Rejection::new(
        ErrorCode::ProviderUnavailable,
        message,
        "use the heuristic tools and supply the content yourself (add_thought_node, \
         expand_thoughts with candidates, verify_thoughts with your evidence); \
         reasoning://config/providers shows what is active",
    ))
}

/// Checks the provider a call asks for (its `provider` argument): none or `heuristic` goes on;
/// `model_backed` goes on for a tool with a model plan (`model_bound`: its model calls are
/// taken in prepare, and a missing provider refuses the call there, naming the variables), and
/// is refused for any other; `retrieval` is refused (fail-closed); anything else is not a
/// provider.
pub fn requested(args: &Value, model_bound: bool) -> Result<(), Rejection> {
    match args.get("provider") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(p)) if p == HEURISTIC => Ok(()),
        Some(Value::String(p)) if p == MODEL_BACKED && model_bound => Ok(()),
        Some(Value::String(p)) if p == MODEL_BACKED => require(Capability::ModelBacked),
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
    let model_configured = is_set(PROVIDER_URL_VAR);
    let model_env: Vec<Value> = [
        PROVIDER_URL_VAR,
        DEFAULT_MODEL_VAR,
        API_KEY_VAR,
        MAX_TOKENS_VAR,
    ]
    .iter()
    .map(|name| json!({ "name": name, "set": is_set(name) }))
    .collect();
    let model = json!({
        "mode": MODEL_BACKED,
        "purpose": "model-written expansions (expand_thoughts), a model judgement per node \
                    (score_thoughts' model dimension) and model-written verification questions \
                    (verify_thoughts), when a call asks for provider model_backed; the lux \
                    toolset's tools always use it",
        "required_env": [PROVIDER_URL_VAR],
        "optional_env": [DEFAULT_MODEL_VAR, API_KEY_VAR, MAX_TOKENS_VAR],
        "env": model_env,
        "configured": model_configured,
        "state": if model_configured {
            "active: calls that ask for it are sent to the configured provider, and each model \
             call is recorded with the call"
        } else {
            "unavailable: THINKLEDGER_MODEL_PROVIDER_URL is not set, so calls that ask for it \
             are refused (model_not_configured), never answered by a heuristic"
        },
    });
    let mut active = vec![
        json!({
            "mode": HEURISTIC,
            "purpose": "deterministic templates, rule checks, weighted structural scores and \
                        evaluation of caller-supplied evidence",
            "state": "active",
        }),
        json!({
            "mode": SOT_HEURISTIC_SCAFFOLD,
            "purpose": "skeleton-of-thought phases and prompt packs; scaffold nodes are \
                        outline templates, not semantic model output",
            "state": "active",
        }),
    ];
    let mut reserved_list = Vec::new();
    if model_configured {
        active.push(model);
    } else {
        reserved_list.push(model);
    }
    reserved_list.push(reserved(
        Capability::Retrieval,
        "evidence retrieval and fact checking; verification today uses only caller-supplied \
         evidence",
    ));
    json!({
        "active_mode": HEURISTIC,
        "active": active,
        "reserved": reserved_list,
        "semantic_confidence": "null in every output: no output claims a model's confidence",
        "note": "a reserved provider is refused (provider_unavailable, model_not_configured) \
                 instead of being answered with fabricated model output",
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
        let model = &report["active"][2];
        assert_eq!(model["mode"], "model_backed");
        assert_eq!(model["configured"], true);
        assert!(model["state"].as_str().unwrap().starts_with("active"));
        let retrieval = &report["reserved"][0];
        assert_eq!(retrieval["configured"], false);
        assert_eq!(retrieval["required_env"][0], "THINKLEDGER_RETRIEVAL_URL");
        assert!(text.contains(SOT_HEURISTIC_SCAFFOLD));
    }

    #[test]
    fn without_a_provider_url_model_backed_is_reserved() {
        let report = providers_report_with(|name| name == "THINKLEDGER_MODEL_API_KEY");
        let model = &report["reserved"][0];
        assert_eq!(model["mode"], "model_backed");
        assert_eq!(model["configured"], false);
        assert_eq!(model["env"][0]["set"], false);
        assert_eq!(model["env"][2]["set"], true);
        assert!(model["state"].as_str().unwrap().starts_with("unavailable"));
    }

    #[test]
    fn reserved_capabilities_fail_closed_naming_their_variables() {
        for capability in [Capability::Retrieval] {
            let refusal = require(capability).expect_err("fail-closed");
            assert_eq!(refusal.code, "provider_unavailable");
            for name in capability.env() {
                assert!(refusal.message.contains(name), "{}", refusal.message);
            }
        }
    }
}
