//! Where each tool is decided: every family's specs in one list, looked up by tool name, and
//! the toolsets that serve them.
//!
//! The one module under `app/` besides the root that knows every family: adding a family is one
//! line in [`FAMILY_SPECS`], and its tools' names in [`TOOL_FAMILIES`]. Owns no rules.

use super::call::ToolSpec;
use super::{audit_export, deliberation, erase, maxential, replay, thinking, toolsets};

/// The specs of every family offered over MCP.
const FAMILY_SPECS: &[&[ToolSpec]] = &[
    thinking::SPECS,
    maxential::SPECS,
    replay::tools::SPECS,
    audit_export::SPECS,
    deliberation::SPECS,
    toolsets::SPECS,
];

/// The names of the tools this layer decides, by toolset (for `--toolsets`, the toolset tools
/// and the `unknown_tool` refusal, which lists them in this order).
pub const TOOL_FAMILIES: &[(&str, &[&str])] = &[
    ("thinking", &["sequentialthinking"]),
    (
        "maxential",
        &["reset", "search", "tag", "export", "visualize"],
    ),
    (
        "audit",
        &[
            "replay_reasoning_session",
            "diff_sessions",
            "export_reasoning_audit",
        ],
    ),
    ("deliberation", deliberation::TOOLS),
    (toolsets::FAMILY, toolsets::TOOLS),
];

/// The spec of `tool`, if this layer offers it over MCP.
pub(crate) fn spec(tool: &str) -> Option<&'static ToolSpec> {
    FAMILY_SPECS
        .iter()
        .flat_map(|specs| specs.iter())
        .find(|s| s.name == tool)
}

/// The spec of the operator's command `tool` (CLI only, never offered over MCP), if there is
/// one.
pub(crate) fn admin_spec(tool: &str) -> Option<&'static ToolSpec> {
    erase::ADMIN_SPECS.iter().find(|s| s.name == tool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_one_spec_and_one_toolset() {
        let names: Vec<&str> = FAMILY_SPECS
            .iter()
            .flat_map(|specs| specs.iter())
            .map(|s| s.name)
            .collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "a tool name has two specs");
        let mut listed: Vec<&str> = TOOL_FAMILIES
            .iter()
            .flat_map(|(_, t)| t.iter().copied())
            .collect();
        listed.sort_unstable();
        assert_eq!(
            listed, unique,
            "TOOL_FAMILIES and the specs name different tools"
        );
    }
}
