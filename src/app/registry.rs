//! Where each tool is decided: every family's specs in one list, looked up by tool name.
//!
//! The one module under `app/` besides the root that knows every family: adding a family is one
//! line in [`FAMILY_SPECS`]. Owns no rules.

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

/// The names of every tool offered over MCP, family by family, in catalog order.
pub(crate) fn tool_names() -> impl Iterator<Item = &'static str> {
    FAMILY_SPECS
        .iter()
        .flat_map(|specs| specs.iter())
        .map(|s| s.name)
}

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
    fn every_tool_has_one_spec_and_the_deliberation_list_follows_its_specs() {
        let names: Vec<&str> = tool_names().collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "a tool name has two specs");
        let specs: Vec<&str> = deliberation::SPECS.iter().map(|s| s.name).collect();
        assert_eq!(specs, deliberation::TOOLS);
    }
}
