//! The deliberation family's tool definitions (ReasonKit Think v2): one file per group, each
//! owning the tools its `app::deliberation` counterpart decides.

mod governance;
mod graph;
mod modes;
mod skeleton;

use super::catalog::ToolEntry;

/// The family `--toolsets` selects these by.
pub(super) const FAMILY: &str = "deliberation";

pub(super) fn entries() -> Vec<ToolEntry> {
    let mut entries = modes::entries();
    entries.extend(graph::entries());
    entries.extend(governance::entries());
    entries.extend(skeleton::entries());
    // Listed in the seed's order (the family's tool table), whichever file defines them.
    let rank = |e: &ToolEntry| {
        crate::app::deliberation::TOOLS
            .iter()
            .position(|t| *t == e.tool.name)
            .unwrap_or(usize::MAX)
    };
    entries.sort_by_key(rank);
    entries
}
