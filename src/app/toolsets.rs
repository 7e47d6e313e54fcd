//! The dynamic-toolset tools: `list_toolsets`, `enable_toolset`, `disable_toolset`.
//!
//! They describe and change which tool families the *caller* is offered (its connection, or its
//! principal when requests stand alone), not the ledger: they carry no facts and start no
//! session. They are still decided here and recorded like every call, so the one-event-per-call
//! rule holds and the answer is covered by the event's response digest. What the caller is
//! offered arrives in the command ([`Command::toolsets`], filled by the tools layer, which knows
//! the sizes of the MCP definitions); this module judges the request against it and against
//! [`TOOL_FAMILIES`], and never changes anything itself: the tools layer applies an accepted
//! change once it is recorded. It knows nothing of MCP.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::call::{ArgsShape, Decide, ToolSpec, parse};
use super::{App, Command, Decided, Outcome, Rejection, TOOL_FAMILIES};
use crate::app::ErrorCode;

/// The family of these three tools: always offered, so no one can lock themselves out.
pub const FAMILY: &str = "toolsets";

/// The name of the `list_toolsets` tool: its spec, its catalog entry and every reference use this.
pub const LIST_TOOLSETS_TOOL: &str = "list_toolsets";
/// The name of the `enable_toolset` tool: its spec, its catalog entry and every reference use this.
pub const ENABLE_TOOLSET_TOOL: &str = "enable_toolset";
/// The name of the `disable_toolset` tool: its spec, its catalog entry and every reference use this.
pub const DISABLE_TOOLSET_TOOL: &str = "disable_toolset";

pub(super) const SPECS: &[ToolSpec] = &[
    ToolSpec {
        name: LIST_TOOLSETS_TOOL,
        args: ArgsShape::of::<ListToolsetsArgs>,
        decide: Decide::Pure(decide_list),
    },
    ToolSpec {
        name: ENABLE_TOOLSET_TOOL,
        args: ArgsShape::of::<ToolsetArgs>,
        decide: Decide::Pure(decide_enable),
    },
    ToolSpec {
        name: DISABLE_TOOLSET_TOOL,
        args: ArgsShape::of::<ToolsetArgs>,
        decide: Decide::Pure(decide_disable),
    },
];

/// One toolset as the caller is offered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolsetStatus {
    /// The set's name, as `--toolsets` and `enable_toolset` take it.
    pub name: String,
    /// Its tools, in listing order.
    pub tools: Vec<String>,
    /// Bytes its tools add to `tools/list` (compact JSON of their definitions).
    pub bytes: u64,
    /// Whether its tools are in your `tools/list` and callable now.
    pub enabled: bool,
}

/// Arguments of `list_toolsets`: none.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ListToolsetsArgs {}

/// The answer of `list_toolsets`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListToolsetsOutput {
    pub toolsets: Vec<ToolsetStatus>,
    /// Bytes of the tools enabled now.
    #[serde(rename = "enabledBytes")]
    pub enabled_bytes: u64,
}

/// Arguments of `enable_toolset` and `disable_toolset`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ToolsetArgs {
    /// A toolset name from list_toolsets, e.g. deliberation.
    pub toolset: String,
}

/// The answer of `enable_toolset` and `disable_toolset`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ToolsetChangeOutput {
    pub toolset: ToolsetStatus,
    /// False when the set already was in the state asked for (no list change is announced).
    pub changed: bool,
    /// What to do next.
    pub message: String,
}

fn decide_list(_app: &App, command: &Command, _args: &Value, _recorded: &Value) -> Outcome {
    let enabled_bytes = command
        .toolsets
        .iter()
        .filter(|t| t.enabled)
        .map(|t| t.bytes)
        .sum();
    let output = ListToolsetsOutput {
        toolsets: command.toolsets.clone(),
        enabled_bytes,
    };
    Ok(Decided::new(None, Vec::new(), output))
}

fn decide_enable(_app: &App, command: &Command, args: &Value, _recorded: &Value) -> Outcome {
    change(command, args, true)
}

fn decide_disable(_app: &App, command: &Command, args: &Value, _recorded: &Value) -> Outcome {
    change(command, args, false)
}

fn change(command: &Command, args: &Value, enable: bool) -> Outcome {
    let args: ToolsetArgs =
        parse(args, "required: toolset (a name from list_toolsets)").map_err(|r| (r, None))?;
    let names = || {
        TOOL_FAMILIES
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| *name != FAMILY)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(current) = command.toolsets.iter().find(|t| t.name == args.toolset) else {
        return Err((
            Rejection::new(
                ErrorCode::UnknownToolset,
                format!("there is no toolset named \"{}\"", args.toolset),
                format!("use one of: {}", names()),
            ),
            None,
        ));
    };
    if current.name == FAMILY && !enable {
        return Err((
            Rejection::new(
                ErrorCode::ToolsetRequired,
                "the toolsets set cannot be disabled: it is how sets are enabled again",
                format!("disable one of: {}", names()),
            ),
            None,
        ));
    }
    let changed = current.enabled != enable;
    let mut toolset = current.clone();
    toolset.enabled = enable;
    let message = match (enable, changed) {
        (true, true) => format!(
            "{} is enabled: its tools are in your tools/list now ({})",
            toolset.name,
            toolset.tools.join(", ")
        ),
        (false, true) => format!(
            "{} is disabled: its tools left your tools/list",
            toolset.name
        ),
        (true, false) => format!("{} was already enabled", toolset.name),
        (false, false) => format!("{} was already disabled", toolset.name),
    };
    let output = ToolsetChangeOutput {
        toolset,
        changed,
        message,
    };
    Ok(Decided::new(None, Vec::new(), output))
}
