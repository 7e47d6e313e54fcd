//! TODO(helper): catalog entries.

use super::super::catalog::ToolEntry;

pub(super) fn entries() -> Vec<ToolEntry> {
    Vec::new()
}
