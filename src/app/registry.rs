//! Where each tool is decided: every family in one list, with the toolset that offers its
//! tools, looked up by tool name.
//!
//! The one module under `app/` besides the root that knows every family: adding a family is one
//! line in [`FAMILIES`] (its toolset and its specs). Every list of tool or toolset names, here
//! and in the tools layer, is derived from that line. Owns no rules.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::call::{ArgsShape, ToolSpec};
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

/// Every tool's argument shape (what its events record), derived once from its argument type.
static SHAPES: LazyLock<HashMap<&'static str, ArgsShape>> = LazyLock::new(|| {
    FAMILIES
        .iter()
        .flat_map(|f| f.specs.iter())
        .chain(erase::ADMIN_SPECS)
        .chain(agent::ADMIN_SPECS)
        .map(|spec| (spec.name, (spec.args)()))
        .collect()
});

/// What a call of `spec`'s tool records: the shape of its argument type.
pub(crate) fn shape(spec: &ToolSpec) -> &'static ArgsShape {
    SHAPES
        .get(spec.name)
        .expect("every spec is in FAMILIES or an admin list")
}

/// What a call of `tool` records (an MCP tool's or an operator's command's), if there is such
/// a tool.
pub fn recorded_arguments(tool: &str) -> Option<&'static ArgsShape> {
    SHAPES.get(tool)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What makes re-execution sound: a decision parses its arguments into its tool's type, so
    /// every name serde reads into that type must be one the event records. A field the schema
    /// skips, or an alias, would be used live and be missing when the event is re-executed.
    #[test]
    fn every_argument_a_decision_reads_is_recorded() {
        let unrecorded: Vec<String> = SHAPES
            .iter()
            .filter(|(_, shape)| !shape.unrecorded.is_empty())
            .map(|(tool, shape)| format!("{tool}: {:?}", shape.unrecorded))
            .collect();
        assert!(
            unrecorded.is_empty(),
            "arguments read but not recorded: {unrecorded:#?}"
        );
        let specs = FAMILIES.iter().map(|f| f.specs.len()).sum::<usize>()
            + erase::ADMIN_SPECS.len()
            + agent::ADMIN_SPECS.len();
        assert_eq!(SHAPES.len(), specs, "every spec has its shape");
    }

    /// What each tool's events record and which of it is erasable text, in dispatch order: a
    /// change here changes what the ledger keeps, and is reviewed as such.
    #[test]
    fn what_each_tool_records() {
        let text: String = FAMILIES
            .iter()
            .flat_map(|f| f.specs.iter())
            .chain(erase::ADMIN_SPECS)
            .chain(agent::ADMIN_SPECS)
            .map(|spec| {
                let shape = shape(spec);
                format!(
                    "{}\n  records: {}\n  texts:   {}\n",
                    spec.name,
                    shape.fields.join(", "),
                    shape.texts.join(", ")
                )
            })
            .collect();
        insta::with_settings!({ snapshot_path => "../../snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!("registry__recorded_arguments", text);
        });
    }

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
