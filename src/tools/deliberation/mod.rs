//! The deliberation family's tool definitions (ReasonKit Think v2): one file per group, each
//! owning the tools its `app::deliberation` counterpart decides.

mod governance;
mod graph;
mod modes;
mod skeleton;

use super::catalog::ToolEntry;

pub(super) fn entries() -> Vec<ToolEntry> {
    let mut entries = modes::entries();
    entries.extend(graph::entries());
    entries.extend(governance::entries());
    entries.extend(skeleton::entries());
    entries
}
