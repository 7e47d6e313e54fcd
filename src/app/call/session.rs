//! The session a call acts on: the one it names by handle, else its caller's current one
//! (started by the call when it has not started yet). A session belongs to the principal whose
//! call started it; to any other principal it does not exist.
//!
//! Shared by every family that acts on a session. Must not know any family's rules.

use std::ops::Deref;
use std::sync::Arc;

use super::super::{App, Command, Rejection};
use super::access;
use crate::app::ErrorCode;
use crate::events::{Fact, SessionId};
use crate::projections::{LoadError, Session, SessionHead, ThinkingState};

/// The session a call acts on.
pub(crate) enum Target<'a> {
    Existing(Existing<'a>),
    /// The connection's session, not started yet: the call starts it.
    New(SessionId),
}

/// A session that exists: its head, and the state its body is read from when a decision
/// needs the thoughts.
#[derive(Clone, Copy)]
pub(crate) struct Existing<'a> {
    head: &'a SessionHead,
    state: &'a ThinkingState,
}

impl Deref for Existing<'_> {
    type Target = SessionHead;

    fn deref(&self) -> &SessionHead {
        self.head
    }
}

impl Existing<'_> {
    /// The session in full (read from the log if the state does not hold it).
    pub(crate) fn body(&self) -> Result<Arc<Session>, (Rejection, Option<SessionId>)> {
        self.state
            .body(self.head)
            .map_err(|e| (unreadable(&e), Some(self.head.id.clone())))
    }
}

/// The refusal of a call whose session could not be read back from the log.
pub(crate) fn unreadable(e: &LoadError) -> Rejection {
    Rejection::new(
        ErrorCode::LogUnreadable,
        e.to_string(),
        "run `thinkledger verify` to check the log",
    )
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

    /// The session's head as it stands (an empty one for a new session): what deciding a new
    /// thought needs, without the thoughts.
    pub(crate) fn head(&self) -> std::borrow::Cow<'_, SessionHead> {
        match self {
            Target::Existing(s) => std::borrow::Cow::Borrowed(s.head),
            Target::New(id) => std::borrow::Cow::Owned(SessionHead::unstarted(id.clone())),
        }
    }

    /// The session in full as it stands (an empty one for a new session), shared, not copied.
    pub(crate) fn view(&self) -> Result<Arc<Session>, (Rejection, Option<SessionId>)> {
        match self {
            Target::Existing(s) => s.body(),
            Target::New(id) => Ok(Arc::new(Session::new(SessionHead::unstarted(id.clone())))),
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
        return match (owned_session(app, command, own), app.state.head(own)) {
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

/// Resolves the session a call that only reads it acts on: as [`target`], except that a named
/// session the caller may read but not change (an auditor's view of another principal's) is
/// found too.
pub(crate) fn read_target<'a>(
    app: &'a App,
    command: &Command,
    requested: Option<&str>,
) -> Result<Target<'a>, (Rejection, Option<SessionId>)> {
    if let Some(id) = requested.and_then(SessionId::parse)
        && let Some(session) = readable_session(app, command, &id)
    {
        return Ok(Target::Existing(session));
    }
    target(app, command, requested)
}

/// The session `id` if it exists and the calling principal may change it (it started it).
pub(crate) fn owned_session<'a>(
    app: &'a App,
    command: &Command,
    id: &SessionId,
) -> Option<Existing<'a>> {
    app.state
        .head(id)
        .filter(|s| access::may_write(&command.actor, &s.principal))
        .map(|head| Existing {
            head,
            state: &app.state,
        })
}

/// The session `id` if it exists and the calling principal may read it (its own, or any for an
/// auditor).
/// Where a call that reads the session `read` is recorded: in that session when its caller
/// owns it, else (an auditor reading another principal's) in the caller's own current session,
/// so the person under review does not find the auditor's reads among their own calls.
pub(crate) fn reader_session(app: &App, command: &Command, read: &SessionId) -> SessionId {
    match owned_session(app, command, read) {
        Some(_) => read.clone(),
        None => command.connection_session.clone(),
    }
}

pub(crate) fn readable_session<'a>(
    app: &'a App,
    command: &Command,
    id: &SessionId,
) -> Option<Existing<'a>> {
    app.state
        .head(id)
        .filter(|s| access::may_read(&command.actor, &s.principal))
        .map(|head| Existing {
            head,
            state: &app.state,
        })
}
