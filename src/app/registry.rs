//! Where each tool is decided: every family's specs in one list, looked up by tool name, and
//! the families' names for `--toolsets`.
//!
//! The one module under `app/` besides the root that knows every family: adding a family is one
//! line in [`FAMILY_SPECS`] (and one in [`TOOL_FAMILIES`] when it is served as a toolset of its
//! own). Owns no rules.

use super::call::ToolSpec;
use super::{audit_export, deliberation, erase, maxential, replay, thinking};

/// The specs of every family offered over MCP.
const FAMILY_SPECS: &[&[ToolSpec]] = &[
    thinking::SPECS,
    maxential::SPECS,
    replay::tools::SPECS,
    audit_export::SPECS,
    deliberation::SPECS,
];

/// The names of the tools this layer decides, by family (for `--toolsets`).
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
