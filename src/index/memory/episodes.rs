//! Episodes: each owner's memories in the order they were told, per session. A memory's
//! *neighbours* are the memories stored just before and just after it in the same session
//! (`sessionId`) of the same owner, by position (the seq of the event that stored it). Fusion
//! lets a memory borrow part of its best neighbour's similarity ([`Fusion::Weighted`]'s
//! `context`): a conversational memory's words are often in the turn that asked for it.
//!
//! Derived like the rest of the index: fed with each document, dropped with it, rebuilt from
//! the memories. The order is a function of the documents (session, position, id), never of
//! the order they were fed in, so a rebuilt index finds the same neighbours.
//!
//! [`Fusion::Weighted`]: super::Fusion::Weighted

use std::collections::HashMap;
use std::sync::Arc;

/// Where a memory sits, and who sits beside it: each session is a list linked through its
/// memories, so a neighbour is one lookup and a removal unlinks in place.
#[derive(Debug)]
struct Place {
    session: Arc<str>,
    position: u64,
    before: Option<Arc<str>>,
    after: Option<Arc<str>>,
}

#[derive(Debug, Default)]
struct OwnerEpisodes {
    /// Each memory's place.
    place_of: HashMap<Arc<str>, Place>,
    /// Each session's last memory, by (position, id); the key is the one text of the name.
    last: HashMap<Arc<str>, (u64, Arc<str>)>,
}

/// Every owner's episodes.
#[derive(Debug, Default)]
pub(super) struct Episodes {
    owners: HashMap<String, OwnerEpisodes>,
}

impl Episodes {
    /// Places `owner`'s memory `id` in `session` at `position` (moving it if it was elsewhere).
    /// `id` is the caller's text of the id, shared. A memory placed after its session's last
    /// costs one lookup; one placed earlier walks back from the last to its place (a rebuild
    /// feeds memories in position order, see `MemoryState::build`).
    pub(super) fn upsert(&mut self, owner: &str, id: Arc<str>, session: &str, position: u64) {
        self.remove(owner, &id);
        let o = match self.owners.get_mut(owner) {
            Some(o) => o,
            None => self.owners.entry(owner.to_owned()).or_default(),
        };
        let key = (position, &*id);
        let (session, mut before) = match o.last.get_key_value(session) {
            Some((name, (p, last))) => (Arc::clone(name), Some((*p, Arc::clone(last)))),
            None => (Arc::<str>::from(session), None),
        };
        let mut after: Option<Arc<str>> = None;
        while let Some((p, b)) = before.take() {
            if (p, &*b) < key {
                before = Some((p, b));
                break;
            }
            let earlier = o.place_of.get(&b).and_then(|x| x.before.clone());
            before = earlier.map(|e| (o.place_of.get(&e).map_or(0, |x| x.position), e));
            after = Some(b);
        }
        let before = before.map(|(_, b)| b);
        if let Some(b) = &before
            && let Some(x) = o.place_of.get_mut(b)
        {
            x.after = Some(Arc::clone(&id));
        }
        match &after {
            Some(a) => {
                if let Some(x) = o.place_of.get_mut(a) {
                    x.before = Some(Arc::clone(&id));
                }
            }
            None => {
                o.last
                    .insert(Arc::clone(&session), (position, Arc::clone(&id)));
            }
        }
        o.place_of.insert(
            id,
            Place {
                session,
                position,
                before,
                after,
            },
        );
    }

    /// Drops `owner`'s memory `id` (its neighbours become each other's).
    pub(super) fn remove(&mut self, owner: &str, id: &str) {
        let Some(o) = self.owners.get_mut(owner) else {
            return;
        };
        let Some(place) = o.place_of.remove(id) else {
            return;
        };
        if let Some(b) = &place.before
            && let Some(x) = o.place_of.get_mut(b)
        {
            x.after.clone_from(&place.after);
        }
        match &place.after {
            Some(a) => {
                if let Some(x) = o.place_of.get_mut(a) {
                    x.before.clone_from(&place.before);
                }
            }
            None => match place.before {
                Some(b) => {
                    let p = o.place_of.get(&b).map_or(0, |x| x.position);
                    o.last.insert(place.session, (p, b));
                }
                None => {
                    o.last.remove(&place.session);
                }
            },
        }
        if o.place_of.is_empty() {
            self.owners.remove(owner);
        }
    }

    /// The memories just before and just after `id` in its session, when there are.
    #[cfg(test)]
    pub(super) fn neighbours(&self, owner: &str, id: &str) -> [Option<Arc<str>>; 2] {
        self.of(owner).neighbours(id)
    }

    /// `owner`'s sessions, for many lookups.
    pub(super) fn of(&self, owner: &str) -> OwnersEpisodes<'_> {
        OwnersEpisodes(self.owners.get(owner))
    }
}

/// One owner's sessions ([`Episodes::of`]).
pub(super) struct OwnersEpisodes<'a>(Option<&'a OwnerEpisodes>);

impl OwnersEpisodes<'_> {
    /// [`Episodes::neighbours`] of this owner's memory `id`.
    pub(super) fn neighbours(&self, id: &str) -> [Option<Arc<str>>; 2] {
        match self.0.and_then(|o| o.place_of.get(id)) {
            Some(p) => [p.before.clone(), p.after.clone()],
            None => [None, None],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: [Option<Arc<str>>; 2]) -> [Option<String>; 2] {
        n.map(|x| x.map(|s| s.to_string()))
    }

    fn some(s: &str) -> Option<String> {
        Some(s.to_owned())
    }

    /// Upserts with the id as a fresh text.
    fn put(e: &mut Episodes, owner: &str, id: &str, session: &str, position: u64) {
        e.upsert(owner, id.into(), session, position);
    }

    #[test]
    fn neighbours_are_the_same_sessions_previous_and_next_by_position() {
        let mut e = Episodes::default();
        // Fed out of order: the order is the positions', not the feeding's.
        put(&mut e, "u", "c", "s1", 30);
        put(&mut e, "u", "a", "s1", 10);
        put(&mut e, "u", "x", "s2", 20);
        put(&mut e, "u", "b", "s1", 20);
        put(&mut e, "v", "b2", "s1", 15);
        assert_eq!(ids(e.neighbours("u", "b")), [some("a"), some("c")]);
        assert_eq!(ids(e.neighbours("u", "a")), [None, some("b")]);
        assert_eq!(ids(e.neighbours("u", "c")), [some("b"), None]);
        // Another session, another owner: not neighbours.
        assert_eq!(ids(e.neighbours("u", "x")), [None, None]);
        assert_eq!(ids(e.neighbours("v", "b2")), [None, None]);
        assert_eq!(ids(e.neighbours("u", "missing")), [None, None]);

        e.remove("u", "b");
        assert_eq!(ids(e.neighbours("u", "a")), [None, some("c")]);
        // Moved to another session.
        put(&mut e, "u", "c", "s2", 30);
        assert_eq!(ids(e.neighbours("u", "x")), [None, some("c")]);
        assert_eq!(ids(e.neighbours("u", "a")), [None, None]);
        // "a" is s1's last now: a memory told after it follows it.
        put(&mut e, "u", "d", "s1", 40);
        assert_eq!(ids(e.neighbours("u", "a")), [None, some("d")]);
        assert_eq!(ids(e.neighbours("u", "d")), [some("a"), None]);
        e.remove("u", "d");
        e.remove("u", "a");
        e.remove("u", "x");
        e.remove("u", "c");
        assert!(!e.owners.contains_key("u"));
    }

    #[test]
    fn a_session_name_is_held_once_and_let_go_when_its_last_memory_goes() {
        let mut e = Episodes::default();
        put(&mut e, "u", "a", "s", 1);
        put(&mut e, "u", "b", "s", 2);
        put(&mut e, "u", "z", "t", 1);
        let o = &e.owners["u"];
        assert!(Arc::ptr_eq(
            &o.place_of["a"].session,
            &o.place_of["b"].session
        ));
        e.remove("u", "a");
        e.remove("u", "b");
        assert!(!e.owners["u"].last.contains_key("s"));
        assert!(e.owners["u"].last.contains_key("t"));
    }
}
