//! Which session a call continues when it names none: one current session per caller.
//!
//! A caller is the MCP connection when the protocol gives one (a stdio process, an HTTP
//! session with `Mcp-Session-Id`), otherwise the principal: the stateless 2026-07-28 revision
//! and `--stateless` HTTP make every request stand alone, so their calls continue the
//! principal's current session, as the reference server keeps one history per process. Slots
//! are keyed by principal, so two principals' calls never meet in one session; the decision in
//! `app` also refuses a session that another principal started. This module knows nothing of
//! transports beyond that choice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::events::SessionId;
pub use crate::events::{LOCAL_PRINCIPAL, Role};

/// The principal of a request, set by the transport (from a bearer token, or a trusted proxy
/// header) in the request's extensions; `local` when absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub name: String,
    pub role: Role,
    /// Memory owners (`userId`s) it may act for besides its own name.
    pub user_ids: Vec<String>,
}

impl Principal {
    /// A member named `name`, acting for itself only.
    pub fn member(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            role: Role::Member,
            user_ids: Vec::new(),
        }
    }
}

/// One caller's current sessions: the one a call that names no session continues. Tools of
/// the families whose sessions are workspaces of their own (deliberation, lux: their handle is
/// `session_id`) continue the workspace the caller last started, if any; every other tool the
/// caller's thinking session. A reset closes the thinking session, and later calls start a new
/// one; starting a workspace leaves the thinking session as it was.
#[derive(Debug, Clone)]
pub struct SessionSlot(Arc<Mutex<Slots>>);

#[derive(Debug, Clone)]
struct Slots {
    thinking: SessionId,
    workspace: Option<SessionId>,
}

/// The toolsets whose calls continue the caller's workspace (see [`SessionSlot`]).
pub const WORKSPACE_TOOLSETS: &[&str] = &["deliberation", "lux"];

impl SessionSlot {
    /// A slot holding a fresh, not yet started session id.
    pub fn fresh() -> Self {
        Self(Arc::new(Mutex::new(Slots {
            thinking: SessionId::random(),
            workspace: None,
        })))
    }

    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The thinking session a call that names none continues.
    pub fn current(&self) -> SessionId {
        self.lock().thinking.clone()
    }

    /// The session a call of `toolset` that names none continues.
    pub fn current_for(&self, toolset: &str) -> SessionId {
        let slots = self.lock();
        match &slots.workspace {
            Some(workspace) if WORKSPACE_TOOLSETS.contains(&toolset) => workspace.clone(),
            _ => slots.thinking.clone(),
        }
    }

    /// The workspace the caller last started, if any.
    pub fn workspace(&self) -> Option<SessionId> {
        self.lock().workspace.clone()
    }

    /// Makes `id` the thinking session later calls continue.
    pub fn continue_with(&self, id: SessionId) {
        self.lock().thinking = id;
    }

    /// Makes `id` the workspace later workspace calls continue.
    pub fn continue_workspace(&self, id: SessionId) {
        self.lock().workspace = Some(id);
    }

    /// Makes a new, not yet started session the one later calls continue (a conversation's
    /// first thought, where no connection tells conversations apart).
    pub fn begin_new(&self) {
        self.lock().thinking = SessionId::random();
    }

    /// After `closed` was reset, later calls start a new session (unless the slot moved on).
    pub fn rotate_if(&self, closed: &str) {
        let mut slots = self.lock();
        if slots.thinking.as_str() == closed {
            slots.thinking = SessionId::random();
        }
        if slots
            .workspace
            .as_ref()
            .is_some_and(|w| w.as_str() == closed)
        {
            slots.workspace = None;
        }
    }
}

/// The current sessions of callers without a connection of their own, one per principal;
/// shared by every handler of a server.
#[derive(Debug, Default)]
pub struct CurrentSessions {
    by_principal: Mutex<HashMap<String, SessionSlot>>,
}

impl CurrentSessions {
    /// The slot of `principal`, made on first use.
    pub fn of_principal(&self, principal: &str) -> SessionSlot {
        let mut map = self
            .by_principal
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        map.entry(principal.to_owned())
            .or_insert_with(SessionSlot::fresh)
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_principal_has_its_own_slot_and_keeps_it() {
        let current = CurrentSessions::default();
        let alice = current.of_principal("alice");
        let bob = current.of_principal("bob");
        assert_ne!(alice.current(), bob.current());
        assert_eq!(current.of_principal("alice").current(), alice.current());
        let before = alice.current();
        alice.rotate_if(before.as_str());
        assert_ne!(current.of_principal("alice").current(), before);
        bob.rotate_if("not-bobs");
        assert_eq!(current.of_principal("bob").current(), bob.current());
    }
}
