//! Dynamic toolsets: the catalog entries of `list_toolsets`, `enable_toolset` and
//! `disable_toolset` (decided in `app::toolsets`), and which families each caller has enabled.
//!
//! A caller is found as for its current session (`current`): the connection when the protocol
//! gives one (stdio, an HTTP MCP session), else the principal (stateless requests), one choice
//! per principal shared by all its standalone requests. A caller starts with the server's
//! `--toolsets`. This module knows nothing of transports beyond that choice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

use super::catalog::{CallerEffect, Effect, ToolEntry, Toolsets, entry, render_json};
use crate::app::toolsets::{
    ListToolsetsArgs, ListToolsetsOutput, ToolsetArgs, ToolsetChangeOutput,
};
use crate::app::{DISABLE_TOOLSET_TOOL, ENABLE_TOOLSET_TOOL, LIST_TOOLSETS_TOOL};

pub(super) fn entries() -> Vec<ToolEntry> {
    vec![
        entry::<ListToolsetsArgs, ListToolsetsOutput>(
            LIST_TOOLSETS_TOOL,
            "List Toolsets",
            "List every toolset: its tools, their tools/list size in bytes, and whether it is \
             enabled for you. Enable one to use its tools.",
            Effect::Reads,
            render_json,
        ),
        entry::<ToolsetArgs, ToolsetChangeOutput>(
            ENABLE_TOOLSET_TOOL,
            "Enable Toolset",
            "Add a toolset's tools to your tools/list (announced by \
             notifications/tools/list_changed).",
            Effect::Idempotent,
            render_json,
        )
        .with_caller(CallerEffect::SetsToolset(true)),
        entry::<ToolsetArgs, ToolsetChangeOutput>(
            DISABLE_TOOLSET_TOOL,
            "Disable Toolset",
            "Remove a toolset's tools from your tools/list; nothing recorded is lost.",
            Effect::Idempotent,
            render_json,
        )
        .with_caller(CallerEffect::SetsToolset(false)),
    ]
}

/// One caller's enabled families, and a signal for its 2026-07-28 `subscriptions/listen`
/// streams each time they change.
#[derive(Debug, Clone)]
pub struct EnabledToolsets {
    sets: Arc<Mutex<Toolsets>>,
    /// Bumped on every change; a listen stream waits on it.
    changes: Arc<watch::Sender<u64>>,
}

impl EnabledToolsets {
    pub fn new(initial: Toolsets) -> Self {
        Self {
            sets: Arc::new(Mutex::new(initial)),
            changes: Arc::new(watch::Sender::new(0)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Toolsets> {
        self.sets.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A receiver that sees each later change.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The families enabled now.
    pub fn get(&self) -> Toolsets {
        self.lock().clone()
    }

    /// Enables or disables `family`; true when that changed the caller's list.
    pub fn set(&self, family: &str, enabled: bool) -> bool {
        let mut guard = self.lock();
        let before = guard.clone();
        if enabled {
            guard.insert(family);
        } else {
            guard.remove(family);
        }
        let changed = *guard != before;
        drop(guard);
        if changed {
            self.changes.send_modify(|generation| *generation += 1);
        }
        changed
    }
}

/// The enabled families of callers without a connection of their own, one per principal;
/// shared by every handler of a server.
#[derive(Debug, Default)]
pub struct ToolsetsByPrincipal {
    by_principal: Mutex<HashMap<String, EnabledToolsets>>,
}

impl ToolsetsByPrincipal {
    /// The choice of `principal`, starting as `initial` on first use.
    pub fn of_principal(&self, principal: &str, initial: &Toolsets) -> EnabledToolsets {
        let mut map = self
            .by_principal
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        map.entry(principal.to_owned())
            .or_insert_with(|| EnabledToolsets::new(initial.clone()))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::catalog::META_FAMILY;

    #[test]
    fn a_choice_changes_once_and_keeps_the_meta_family() {
        let enabled = EnabledToolsets::new(Toolsets::default_sets());
        let changes = enabled.changes();
        assert!(enabled.set("deliberation", true));
        assert!(!enabled.set("deliberation", true));
        assert!(changes.has_changed().unwrap());
        assert!(enabled.get().contains("deliberation"));
        assert!(enabled.set("thinking", false));
        assert!(!enabled.set(META_FAMILY, false));
        assert!(enabled.get().contains(META_FAMILY));
    }

    #[test]
    fn each_principal_has_its_own_choice() {
        let by = ToolsetsByPrincipal::default();
        by.of_principal("alice", &Toolsets::default_sets())
            .set("audit", true);
        assert!(
            by.of_principal("alice", &Toolsets::default_sets())
                .get()
                .contains("audit")
        );
        assert!(
            !by.of_principal("bob", &Toolsets::default_sets())
                .get()
                .contains("audit")
        );
    }
}
