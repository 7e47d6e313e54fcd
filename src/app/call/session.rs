//! The session a call acts on: the one it names by handle, else its caller's current one
//! (started by the call when it has not started yet). A session belongs to the principal whose
//! call started it; to any other principal it does not exist.
//!
//! Shared by every family that acts on a session. Must not know any family's rules.

use std::borrow::Cow;

use super::super::{App, Command, Rejection};
use super::access;
use crate::app::ErrorCode;
use crate::events::{Fact, SessionId};
use crate::projections::{Session, SessionStatus};

/// The session a call acts on.
pub(crate) enum Target<'a> {
    Existing(&'a Session),
    /// The connection's session, not started yet: the call starts it.
    New(SessionId),
}

impl Target<'_> {
    pub(crate) fn id(&self) -> SessionId {
        match self {
            Target::Existing(s) => s.id.clone(),
            Target::New(id) => id.clone(),
        }
    }

    /// The id to attribute a refused call to: only a session that exists (a refused call does
    /// not start one).
    pub(crate) fn existing_id(&self) -> Option<SessionId> {
        match self {
            Target::Existing(s) => Some(s.id.clone()),
            Target::New(_) => None,
        }
    }

    /// The `SessionStarted` fact a call on a new session must carry.
    pub(crate) fn start_facts(&self) -> Vec<Fact> {
        match self {
            Target::Existing(_) => Vec::new(),
            Target::New(id) => vec![Fact::SessionStarted {
                session_id: id.clone(),
            }],
        }
    }

    /// The session as it stands (an empty one for a new session), borrowed: a decision must
    /// not copy a long session's thoughts on every call.
    pub(crate) fn view(&self) -> Cow<'_, Session> {
        match self {
            Target::Existing(s) => Cow::Borrowed(*s),
            Target::New(id) => Cow::Owned(Session {
                id: id.clone(),
                principal: String::new(),
                started_seq: 0,
                started_at: String::new(),
                status: SessionStatus::Active,
                thoughts: imbl::Vector::new(),
                branches: Vec::new(),
                events: 0,
                last_seq: 0,
                updated_at: String::new(),
            }),
        }
    }
}

/// Resolves the session of a call: the named one, else the caller's current one (new if not
/// started). A session belongs to the principal whose call started it: to any other principal it
/// does not exist, and its caller's current session is never another principal's.
pub(crate) fn target<'a>(
    app: &'a App,
    command: &Command,
    requested: Option<&str>,
) -> Result<Target<'a>, (Rejection, Option<SessionId>)> {
    let Some(raw) = requested else {
        let own = &command.connection_session;
        return match (owned_session(app, command, own), app.state.session(own)) {
            (Some(session), _) => Ok(Target::Existing(session)),
            (None, None) => Ok(Target::New(own.clone())),
            // Only a hand-made command could name another principal's session as its caller's
            // current one: refused as if that session did not exist.
            (None, Some(_)) => Err((
                Rejection::new(
                    ErrorCode::UnknownSession,
                    format!("there is no session {own} in this ledger"),
                    "pass sessionId to name one of your own sessions",
                ),
                None,
            )),
        };
    };
    let Some(id) = SessionId::parse(raw) else {
        return Err((
            Rejection::new(
                ErrorCode::UnknownSession,
                format!("\"{raw}\" is not a session id"),
                "session ids are lowercase UUIDs as returned in `sessionId`; omit sessionId to \
                 continue your current session, or read ledger://sessions to list them",
            ),
            None,
        ));
    };
    match owned_session(app, command, &id) {
        Some(session) => Ok(Target::Existing(session)),
        None => Err((
            Rejection::new(
                ErrorCode::UnknownSession,
                format!("there is no session {id} in this ledger"),
                "omit sessionId to continue your current session, or read ledger://sessions to \
                 list the sessions that exist",
            ),
            None,
        )),
    }
}

/// The session `id` if it exists and the calling principal may change it (it started it).
pub(crate) fn owned_session<'a>(
    app: &'a App,
    command: &Command,
    id: &SessionId,
) -> Option<&'a Session> {
    app.state
        .session(id)
        .filter(|s| access::may_write(&command.actor, &s.principal))
}

/// The session `id` if it exists and the calling principal may read it (its own, or any for an
/// auditor).
pub(crate) fn readable_session<'a>(
    app: &'a App,
    command: &Command,
    id: &SessionId,
) -> Option<&'a Session> {
    app.state
        .session(id)
        .filter(|s| access::may_read(&command.actor, &s.principal))
}
