//! Admission: the moment a call's command is in the ledger writer's queue (or a resource read
//! has the view of state it reads), reported to the transport edge so it can let the
//! connection's next request through.
//!
//! Calls of one connection take effect in arrival order because the edge forwards request N+1
//! only once request N is admitted (or answered); the writer decides what it is given in queue
//! order, so admission order is effect order, while the writer still makes calls of every
//! connection durable with one sync. Reads do not enter the writer's queue: a read takes the
//! latest published view that holds the connection's last admitted command ([`ConnectionOrder`],
//! waiting only while that command's batch is not yet durable), and is admitted once it has
//! it, so it sees every earlier call of its connection and none that came after it. This module owns the per-request [`Admission`], carried in
//! a task-local for the duration of one handler so the ledger calls deep inside it can report
//! themselves without new parameters. It knows rmcp's request context and the ledger handle;
//! it does not know how an edge orders its queue (stdio, HTTP), only the two ways it is told:
//! a hook keyed by the JSON-RPC request id, and a [`Ticket`] carried in the HTTP request.

use std::future::Future;
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::RequestId;
use rmcp::service::RequestContext;

use super::ThinkServer;
use crate::app::{App, Command, Query};
use crate::ledger::{Admitted, Committed, Decider, LedgerError, LedgerHandle};
use serde_json::Value;

/// Told the id of each request of a connection once it is admitted (or, if it never reaches
/// the ledger, once its handler is done).
pub type ArrivalHook = Arc<dyn Fn(&RequestId) + Send + Sync>;

/// A release the HTTP edge puts in a request's extensions; fired once, when the request is
/// admitted or its handler ends (and by the edge itself when the response ends first).
#[derive(Clone)]
pub struct Ticket(Arc<Mutex<Option<Release>>>);

/// What a [`Ticket`] does when it is released.
type Release = Box<dyn FnOnce() + Send>;

impl Ticket {
    pub fn new(release: impl FnOnce() + Send + 'static) -> Self {
        Self(Arc::new(Mutex::new(Some(Box::new(release)))))
    }

    /// Runs the release unless it already ran.
    pub fn release(&self) {
        let release = match self.0.lock() {
            Ok(mut guard) => guard.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(release) = release {
            release();
        }
    }
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ticket")
    }
}

/// The last command a connection had admitted into the ledger's queue: its reads wait for
/// that command's effect. Shared by the handlers of one connection.
#[derive(Clone, Default)]
pub struct ConnectionOrder(Arc<Mutex<Admitted>>);

impl ConnectionOrder {
    fn last(&self) -> Admitted {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn note(&self, admitted: Admitted) {
        let mut last = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *last = (*last).max(admitted);
    }
}

/// One request's admission: reported once, at the first ledger enqueue inside its handler,
/// or when the handler ends (also by a panic or cancellation) without one.
pub struct Admission {
    hook: Option<ArrivalHook>,
    id: RequestId,
    ticket: Option<Ticket>,
    /// The request's connection, when it has one (a request that stands alone has no order).
    order: Option<ConnectionOrder>,
    /// The seq the request's `_meta` says its client last saw ([`AFTER_SEQ_META`]; 0: none):
    /// its reads wait until this node has read that far.
    after_seq: u64,
    reported: std::sync::atomic::AtomicBool,
}

/// The request `_meta` key naming the seq of the last answer a client saw, so that a read on
/// another node of a shared ledger holds at least what the client wrote (docs/scaling.md).
pub const AFTER_SEQ_META: &str = "thinkledger/afterSeq";

tokio::task_local! {
    static ADMISSION: Admission;
}

impl Admission {
    /// The admission of the request `context` belongs to: reported to `hook` (stdio) and to the
    /// ticket the HTTP edge left in the request, if any.
    pub fn of(hook: Option<&ArrivalHook>, context: &RequestContext<RoleServer>) -> Self {
        let ticket = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Ticket>())
            .cloned();
        let mut admission = Self::new(hook.cloned(), context.id.clone(), ticket);
        admission.after_seq = context
            .meta
            .get(AFTER_SEQ_META)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        admission
    }

    pub fn new(hook: Option<ArrivalHook>, id: RequestId, ticket: Option<Ticket>) -> Self {
        Self {
            hook,
            id,
            ticket,
            order: None,
            after_seq: 0,
            reported: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Orders the request within its connection: its commands are noted there, its reads see
    /// the connection's earlier commands.
    #[must_use]
    pub fn in_order(mut self, order: Option<ConnectionOrder>) -> Self {
        self.order = order;
        self
    }

    /// Runs `future` with this admission current; it is reported at its first enqueue, or at
    /// the latest when `future` ends or is dropped.
    pub async fn scope<F: Future>(self, future: F) -> F::Output {
        ADMISSION.scope(self, future).await
    }

    fn report(&self) {
        if self
            .reported
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        if let Some(hook) = &self.hook {
            hook(&self.id);
        }
        if let Some(ticket) = &self.ticket {
            ticket.release();
        }
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.report();
    }
}

/// Reports the current request (if any) as admitted.
fn admitted() {
    // Outside a scope (the CLI, unit tests) there is nobody to tell.
    let _ = ADMISSION.try_with(Admission::report);
}

/// `LedgerHandle::submit`, noting the command in its connection's order and reporting
/// admission in between.
pub(super) async fn submit(
    ledger: &LedgerHandle<App>,
    command: Command,
) -> Result<Committed, LedgerError> {
    let pending = ledger.enqueue(command).await;
    if let Ok(pending) = &pending {
        let at = pending.admitted();
        let _ = ADMISSION.try_with(|a| {
            if let Some(order) = &a.order {
                order.note(at);
            }
        });
    }
    admitted();
    pending?.wait().await
}

/// `LedgerHandle::query_after` the connection's last command: admitted once the view is taken,
/// answered from it on this task.
pub(super) async fn query(ledger: &LedgerHandle<App>, query: Query) -> Result<Value, LedgerError> {
    let (after, seq) = reads_after();
    let view = ledger.view_after_seq(after, seq).await;
    admitted();
    Ok(App::answer(&*view?, query))
}

/// The latest published state that holds the connection's earlier commands, for a call's
/// prepare to read (a model prompt built from the session as the caller last saw it). Reports
/// no admission: the call itself is enqueued after.
pub(super) async fn view(ledger: &LedgerHandle<App>) -> Result<Arc<App>, LedgerError> {
    let (after, seq) = reads_after();
    ledger.view_after_seq(after, seq).await
}

/// What the current request's reads must hold: its connection's earlier commands, and the
/// event its client last saw.
fn reads_after() -> (Admitted, u64) {
    ADMISSION
        .try_with(|a| {
            (
                a.order
                    .as_ref()
                    .map(ConnectionOrder::last)
                    .unwrap_or_default(),
                a.after_seq,
            )
        })
        .unwrap_or_default()
}

impl ThinkServer {
    /// Reports each request's admission to `hook` (the stdio edge orders its requests by it).
    #[must_use]
    pub fn with_arrival(mut self, hook: ArrivalHook) -> Self {
        self.arrival = Some(hook);
        self
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn counting() -> (ArrivalHook, Arc<AtomicUsize>) {
        let count = Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        let hook: ArrivalHook = Arc::new(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
        });
        (hook, count)
    }

    #[tokio::test]
    async fn an_admission_is_reported_once_at_the_first_enqueue_or_at_the_end() {
        let (hook, count) = counting();
        let fired = Arc::new(AtomicUsize::new(0));
        let on_ticket = fired.clone();
        let ticket = Ticket::new(move || {
            on_ticket.fetch_add(1, Ordering::SeqCst);
        });
        let admission = Admission::new(Some(hook.clone()), RequestId::Number(1), Some(ticket));
        admission
            .scope(async {
                admitted();
                admitted();
                assert_eq!(count.load(Ordering::SeqCst), 1, "reported at once");
            })
            .await;
        assert_eq!(count.load(Ordering::SeqCst), 1, "and never again");
        assert_eq!(fired.load(Ordering::SeqCst), 1, "the ticket too");

        // A handler that never reaches the ledger is reported when it ends.
        Admission::new(Some(hook), RequestId::Number(2), None)
            .scope(async {})
            .await;
        assert_eq!(count.load(Ordering::SeqCst), 2);
        // Outside any scope nothing happens.
        admitted();
    }
}
