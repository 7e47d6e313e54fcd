//! Who may see and change what: the one rule every family applies, from the principal the
//! call's actor records (so a replay decides exactly as the call was decided).
//!
//! - A session, and the deliberation, plans and conversations in it, belongs to the principal
//!   whose call started it. Only that principal continues it; an auditor may also read it.
//! - A memory belongs to its `userId`. A principal acts for its own name and for the memory
//!   owners its token grants; `local` (the process owner on stdio or an HTTP server without
//!   authentication) acts for every owner. An auditor may read every owner's memories.
//! - An auditor reads and changes nothing: it may call only the tools the registry lists as
//!   reads ([`super::super::registry::auditor_may_call`]).
//!
//! To anyone else a thing they may not see does not exist: the answer is the one a missing id
//! gets, and the attempt is recorded like every call.

use crate::events::{Actor, LOCAL_PRINCIPAL, Role};

/// Whether `actor` reads everything and writes nothing.
pub(crate) fn is_auditor(actor: &Actor) -> bool {
    actor.role == Role::Auditor
}

/// Whether `actor` may read what `owner` (a principal) recorded.
pub(crate) fn may_read(actor: &Actor, owner: &str) -> bool {
    actor.principal == owner || is_auditor(actor)
}

/// Whether `actor` may change what `owner` (a principal) recorded.
pub(crate) fn may_write(actor: &Actor, owner: &str) -> bool {
    actor.principal == owner && !is_auditor(actor)
}

/// Whether `actor` acts for the memory owner `user_id` (stores, updates, deletes, and reads
/// with reinforcement).
pub(crate) fn acts_for(actor: &Actor, user_id: &str) -> bool {
    !is_auditor(actor)
        && (actor.principal == LOCAL_PRINCIPAL
            || actor.principal == user_id
            || actor.user_ids.iter().any(|u| u == user_id))
}

/// Whether `actor` may read the memories of `user_id`.
pub(crate) fn may_read_memories_of(actor: &Actor, user_id: &str) -> bool {
    is_auditor(actor) || acts_for(actor, user_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn actor(principal: &str, role: Role, user_ids: &[&str]) -> Actor {
        Actor {
            principal: principal.into(),
            transport: "http".into(),
            client_name: None,
            client_version: None,
            role,
            user_ids: user_ids.iter().map(|u| (*u).to_owned()).collect(),
        }
    }

    #[test]
    fn members_own_their_things_auditors_read_all_and_write_none() {
        let alice = actor("alice", Role::Member, &["team-a"]);
        let auditor = actor("carol", Role::Auditor, &[]);
        let local = actor(LOCAL_PRINCIPAL, Role::Member, &[]);
        assert!(may_read(&alice, "alice") && may_write(&alice, "alice"));
        assert!(!may_read(&alice, "bob") && !may_write(&alice, "bob"));
        assert!(may_read(&auditor, "bob") && !may_write(&auditor, "bob"));
        assert!(!may_write(&auditor, "carol"));
        assert!(acts_for(&alice, "alice") && acts_for(&alice, "team-a"));
        assert!(!acts_for(&alice, "bob") && !may_read_memories_of(&alice, "bob"));
        assert!(!acts_for(&auditor, "bob") && may_read_memories_of(&auditor, "bob"));
        assert!(acts_for(&local, "anyone"));
    }
}
