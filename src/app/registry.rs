//! Where each tool is decided: every family in one list, with the toolset that offers its
//! tools, looked up by tool name.
//!
//! The one module under `app/` besides the root that knows every family: adding a family is one
//! line in [`FAMILIES`] (its toolset and its specs). Every list of tool or toolset names, here
//! and in the tools layer, is derived from that line. Owns no rules.

use std::sync::LazyLock;

use super::call::ToolSpec;
use super::{
    agent, audit_export, cognition, deliberation, erase, lux, maxential, memory, replay, thinking,
    toolsets,
};

/// One family's tools as the decider dispatches them (a family whose tools sit in two toolsets
/// has two).
pub(crate) struct Family {
    /// The toolset that offers its tools (`--toolsets`, `enable_toolset`). Several families
    /// may share one.
    pub toolset: &'static str,
    /// Its tools, in the order clients see them listed.
    pub specs: &'static [ToolSpec],
}

/// The tools an auditor may call: they read what others recorded and change nothing of theirs
/// (`retrieve_memories` then reinforces nothing). Any other tool refuses an auditor.
pub(crate) const AUDITOR_TOOLS: &[&str] = &[
    maxential::SEARCH_TOOL,
    maxential::EXPORT_TOOL,
    maxential::VISUALIZE_TOOL,
    deliberation::EVALUATE_REASONING_QUALITY_TOOL,
    toolsets::LIST_TOOLSETS_TOOL,
    // These change which tools the caller itself is offered, nothing recorded of anyone.
    toolsets::ENABLE_TOOLSET_TOOL,
    toolsets::DISABLE_TOOLSET_TOOL,
    replay::tools::REPLAY_REASONING_SESSION_TOOL,
    replay::tools::DIFF_SESSIONS_TOOL,
    audit_export::EXPORT_REASONING_AUDIT_TOOL,
    memory::RETRIEVE_MEMORIES_TOOL,
    memory::SEARCH_MEMORIES_TOOL,
];

/// Whether an auditor may call `tool`.
pub(crate) fn auditor_may_call(tool: &str) -> bool {
    AUDITOR_TOOLS.contains(&tool)
}

/// Every family offered over MCP, in listing order: the dispatch.
const FAMILIES: &[Family] = &[
    Family {
        toolset: "thinking",
        specs: thinking::SPECS,
    },
    Family {
        toolset: "maxential",
        specs: thinking::RESET_SPECS,
    },
    Family {
        toolset: "maxential",
        specs: maxential::SPECS,
    },
    Family {
        toolset: "audit",
        specs: replay::tools::SPECS,
    },
    Family {
        toolset: "audit",
        specs: audit_export::SPECS,
    },
    Family {
        toolset: "deliberation",
        specs: deliberation::SPECS,
    },
    Family {
        toolset: "memory",
        specs: memory::SPECS,
    },
    Family {
        toolset: "lux",
        specs: lux::SPECS,
    },
    Family {
        toolset: "cognition",
        specs: cognition::SPECS,
    },
    Family {
        toolset: toolsets::FAMILY,
        specs: toolsets::SPECS,
    },
];

/// The names of the tools this layer decides, by toolset, in listing order (for `--toolsets`,
/// the toolset tools and the `unknown_tool` refusal, which lists them in this order).
pub static TOOL_FAMILIES: LazyLock<Vec<(&'static str, Vec<&'static str>)>> = LazyLock::new(|| {
    let mut sets: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for family in FAMILIES {
        let names = family.specs.iter().map(|s| s.name);
        match sets.iter_mut().find(|(set, _)| *set == family.toolset) {
            Some((_, tools)) => tools.extend(names),
            None => sets.push((family.toolset, names.collect())),
        }
    }
    sets
});

/// The toolset that offers `tool`, if this layer offers it over MCP.
pub fn toolset_of(tool: &str) -> Option<&'static str> {
    FAMILIES
        .iter()
        .find(|f| f.specs.iter().any(|s| s.name == tool))
        .map(|f| f.toolset)
}

/// The spec of `tool`, if this layer offers it over MCP.
pub(crate) fn spec(tool: &str) -> Option<&'static ToolSpec> {
    FAMILIES
        .iter()
        .flat_map(|f| f.specs.iter())
        .find(|s| s.name == tool)
}

/// The spec of the operator's command `tool` (CLI only, never offered over MCP), if there is
/// one.
pub(crate) fn admin_spec(tool: &str) -> Option<&'static ToolSpec> {
    erase::ADMIN_SPECS
        .iter()
        .chain(agent::ADMIN_SPECS)
        .find(|s| s.name == tool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_one_spec() {
        let names: Vec<&str> = FAMILIES
            .iter()
            .flat_map(|f| f.specs.iter())
            .chain(erase::ADMIN_SPECS)
            .chain(agent::ADMIN_SPECS)
            .map(|s| s.name)
            .collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "a tool name has two specs");
    }

    #[test]
    fn toolsets_list_their_tools_in_dispatch_order() {
        let listed: Vec<&str> = TOOL_FAMILIES
            .iter()
            .flat_map(|(_, t)| t.iter().copied())
            .collect();
        assert_eq!(listed[..3], ["sequentialthinking", "reset", "search"]);
        assert_eq!(toolset_of("reset"), Some("maxential"));
        assert_eq!(toolset_of("diff_sessions"), Some("audit"));
        assert_eq!(
            toolset_of("erase"),
            None,
            "the operator's commands are not offered"
        );
        let sets: Vec<&str> = TOOL_FAMILIES.iter().map(|(s, _)| *s).collect();
        assert_eq!(
            sets,
            [
                "thinking",
                "maxential",
                "audit",
                "deliberation",
                "memory",
                "lux",
                "cognition",
                toolsets::FAMILY
            ]
        );
    }
}
