//! What a decision draws from its call's seed: text salts and new session ids, each expanded
//! from the seed the call was prepared with ([`crate::effects::Prepared`]) with BLAKE3
//! `derive_key` (`ledger::hash::call_draw`), one purpose and one counter per kind of draw.
//!
//! Owns: the order of draws within one decision (the n-th salt, the n-th new session id), so
//! that the same command with the same seed draws the same values. Must not know: where the
//! seed came from (the caller's side took it; a decision reads no clock, no randomness and no
//! environment).

use std::cell::Cell;

use crate::effects::Seed;
use crate::events::SessionId;
use crate::ledger::hash::{SALT_LEN, call_draw};

/// The draw purpose of text salts.
const SALT: &str = "text salt";
/// The draw purpose of new session ids.
const SESSION_ID: &str = "session id";

/// The draws of one decision. Not shared between threads: a decision runs on one.
#[derive(Debug)]
pub struct Draws {
    seed: [u8; 32],
    salts: Cell<u64>,
    sessions: Cell<u64>,
}

impl Draws {
    pub fn new(seed: &Seed) -> Self {
        Self {
            seed: *seed.bytes(),
            salts: Cell::new(0),
            sessions: Cell::new(0),
        }
    }

    fn next(&self, purpose: &str, counter: &Cell<u64>) -> [u8; 32] {
        let index = counter.get();
        counter.set(index.wrapping_add(1));
        call_draw(&self.seed, purpose, index)
    }

    /// The next text salt (stored beside its text, never in an event).
    pub fn salt(&self) -> [u8; SALT_LEN] {
        self.next(SALT, &self.salts)
    }

    /// The next new session id (recorded in the event that starts the session).
    pub fn session_id(&self) -> SessionId {
        let drawn = self.next(SESSION_ID, &self.sessions);
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&drawn[..16]);
        SessionId::from_random_bytes(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_draws_the_same_values_in_order_and_no_two_alike() {
        let (a, b) = (
            Draws::new(&Seed::new([3; 32])),
            Draws::new(&Seed::new([3; 32])),
        );
        let salts = [a.salt(), a.salt()];
        assert_eq!(salts, [b.salt(), b.salt()]);
        assert_ne!(salts[0], salts[1]);
        assert_eq!(a.session_id(), b.session_id());
        assert_ne!(a.session_id(), Draws::new(&Seed::new([4; 32])).session_id());
    }
}
