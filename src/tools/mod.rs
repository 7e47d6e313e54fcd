//! The MCP face of the application: tool definitions (names, schemas, annotations), resources,
//! and the rmcp `ServerHandler` that turns each `tools/call` into one ledger command.
//!
//! One file per tool family holds its definitions; this module joins them. Arguments are not
//! parsed here: they go to `app` as received, so that even a malformed call is decided — and
//! recorded — by the one place that owns the rules. This layer knows rmcp but not sled, axum or
//! any transport detail beyond the name it records.

mod arrival;
mod audit;
mod call_flow;
mod catalog;
mod cognition;
pub mod connection;
mod current;
mod deliberation;
mod handler;
mod lux;
mod maxential;
mod memory;
mod origin;
mod prompts;
pub mod quotas;
mod reasoning;
mod rejected;
mod replay;
mod resources;
mod thinking;
mod toolsets;
mod utilities;

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::ProtocolVersion;
use rmcp::service::RequestContext;
use serde_json::Value;

pub use arrival::{Admission, ArrivalHook, ConnectionOrder, Ticket};
pub use catalog::{
    CallerEffect, Catalog, DEFAULT_FAMILIES, FAMILIES, ToolEntry, Toolsets, UnknownToolset,
};
pub use current::{CurrentSessions, LOCAL_PRINCIPAL, Principal, Role, SessionSlot};
pub use origin::{CallOrigin, TRACEPARENT, TRACESTATE};
pub use resources::{session_document, sessions_document, summary};
pub use toolsets::{EnabledToolsets, ToolsetsByPrincipal};
pub use utilities::{ConnectionLevel, Reporter};

use crate::app::App;
use crate::effects::{Effects, SystemEffects};
use crate::events::{Actor, SessionId};
use crate::ledger::{Admitted, LedgerHandle};
use quotas::Quotas;

/// How long clients may cache the prompt and resource lists (2026-07-28 `ttlMs`): they are
/// fixed for a server's life and the same for every caller (`cacheScope: public`). The tool
/// list is the caller's own (dynamic toolsets): `ttlMs: 0`, `private`. Resource reads are not
/// cached (rmcp fills `ttlMs: 0`, `private`).
const LIST_TTL_MS: u64 = 60_000;

/// The `_meta` key of a `tools/call` that carries its idempotency key.
pub const IDEMPOTENCY_META_KEY: &str = "idempotencyKey";

/// Instructions sent to clients at initialization: every family beyond the default ones is
/// named, from the catalog's list, so the text cannot fall behind it.
static INSTRUCTIONS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let more: Vec<&str> = FAMILIES
        .iter()
        .copied()
        .filter(|family| !DEFAULT_FAMILIES.contains(family))
        .collect();
    format!(
        "thinkledger records every tool call as a hash-chained event. Use sequentialthinking to \
         think step by step (branches and revisions allowed). Every response names its session \
         handle (sessionId; session_id for deliberation and lux tools): pass it back to continue \
         that session, also after a restart. Without it a call continues your current session. \
         Read ledger://sessions for past sessions. More tools are in toolsets ({}): \
         list_toolsets names them and what each costs, enable_toolset adds a set to your tool \
         list.",
        more.join(", ")
    )
});

/// One MCP connection's handler. Cheap to clone; the ledger is shared by all connections.
#[derive(Clone)]
pub struct ThinkServer {
    ledger: LedgerHandle<App>,
    catalog: Arc<Catalog>,
    /// `stdio` or `http`: recorded in every event's actor.
    transport: &'static str,
    /// This connection's current session, for calls that come over a connection of their own.
    connection_session: SessionSlot,
    /// The principals' current sessions, for calls that come without a connection (stateless
    /// HTTP); shared by every handler of the server.
    current: Arc<CurrentSessions>,
    /// Told when each request is admitted into the ledger's queue (`arrival`).
    arrival: Option<ArrivalHook>,
    /// This connection's last admitted command, which its resource reads wait for.
    connection_order: ConnectionOrder,
    /// The families this connection has enabled (starting as `--toolsets`).
    connection_toolsets: EnabledToolsets,
    /// The principals' enabled families, for calls that come without a connection; shared by
    /// every handler of the server.
    principal_toolsets: Arc<ToolsetsByPrincipal>,
    /// Where each call's effects (time, seed) and the providers report's environment come
    /// from: taken here, on the caller's task, before the call is sent to the writer.
    effects: Arc<dyn Effects>,
    /// The log level this connection's client set (`logging/setLevel`).
    log_level: ConnectionLevel,
    /// Every principal's use of its quotas, shared by the handlers of a server.
    quotas: Arc<Quotas>,
    /// A relayed connection's relay, told of each change of the connection's state.
    state_out: Option<connection::StateOut>,
}

impl ThinkServer {
    pub fn new(ledger: LedgerHandle<App>, catalog: Arc<Catalog>, transport: &'static str) -> Self {
        let connection_toolsets = EnabledToolsets::new(catalog.defaults().clone());
        Self {
            ledger,
            catalog,
            transport,
            connection_session: SessionSlot::fresh(),
            current: Arc::new(CurrentSessions::default()),
            arrival: None,
            connection_order: ConnectionOrder::default(),
            connection_toolsets,
            principal_toolsets: Arc::new(ToolsetsByPrincipal::default()),
            effects: Arc::new(SystemEffects),
            log_level: ConnectionLevel::default(),
            quotas: Arc::new(Quotas::default()),
            state_out: None,
        }
    }

    /// Takes up a relayed connection where `state` left it: its current session, its toolsets
    /// (`None`: as `--toolsets` said) and its log level.
    #[must_use]
    pub fn with_connection_state(self, state: &connection::ConnectionState) -> Self {
        if let Some(id) = state.session.as_deref().and_then(SessionId::parse) {
            self.connection_session.continue_with(id);
        }
        if let Some(id) = state.workspace.as_deref().and_then(SessionId::parse) {
            self.connection_session.continue_workspace(id);
        }
        let server = match &state.toolsets {
            Some(names) => Self {
                connection_toolsets: EnabledToolsets::new(Toolsets::of_names(names)),
                ..self
            },
            None => self,
        };
        if let Some(level) = state.log_level {
            server.log_level.set(level);
        }
        server
    }

    /// Tells `out` of every change of this connection's state (a relayed connection).
    #[must_use]
    pub fn with_state_out(mut self, out: connection::StateOut) -> Self {
        self.state_out = Some(out);
        self
    }

    /// This connection's state now.
    pub fn connection_state(&self) -> connection::ConnectionState {
        connection::ConnectionState {
            session: Some(self.connection_session.current().as_str().to_owned()),
            workspace: self
                .connection_session
                .workspace()
                .map(|id| id.as_str().to_owned()),
            toolsets: Some(self.connection_toolsets.get().families().to_vec()),
            log_level: self.log_level.get(),
        }
    }

    /// Tells the relay, if any, the connection's state when it changed.
    async fn report_state(&self) {
        if let Some(out) = &self.state_out {
            out.report(self.connection_state()).await;
        }
    }

    /// Holds every principal to `quotas` (shared by the handlers of a server).
    #[must_use]
    pub fn with_quotas(mut self, quotas: Arc<Quotas>) -> Self {
        self.quotas = quotas;
        self
    }

    /// Takes every call's effects from `effects` instead of the system (a fixed clock and
    /// seeded randomness in tests).
    #[must_use]
    pub fn with_effects(mut self, effects: Arc<dyn Effects>) -> Self {
        self.effects = effects;
        self
    }

    /// Shares the principals' current sessions with the other handlers of a server.
    #[must_use]
    pub fn with_current_sessions(mut self, current: Arc<CurrentSessions>) -> Self {
        self.current = current;
        self
    }

    /// Shares the principals' enabled toolsets with the other handlers of a server.
    #[must_use]
    pub fn with_principal_toolsets(mut self, toolsets: Arc<ToolsetsByPrincipal>) -> Self {
        self.principal_toolsets = toolsets;
        self
    }

    /// Whether a request stands alone (HTTP without an MCP session): it then belongs to its
    /// principal rather than to a connection.
    fn standalone(context: &RequestContext<RoleServer>) -> bool {
        context
            .extensions
            .get::<http::request::Parts>()
            .is_some_and(|parts| !parts.headers.contains_key("mcp-session-id"))
    }

    /// Whether a request speaks the 2026-07-28 revision (per-request `_meta`, no sessions).
    fn stateless_revision(context: &RequestContext<RoleServer>) -> bool {
        context
            .meta
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
    }

    /// The log level a request's client chose: a 2026-07-28 request's own `_meta` logLevel,
    /// else its connection's (`logging/setLevel`); a request that stands alone in an older
    /// revision has neither.
    #[allow(deprecated)] // MCP logging (see `utilities`)
    fn log_level_of(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Option<rmcp::model::LoggingLevel> {
        if Self::stateless_revision(context) {
            context.meta.log_level()
        } else if Self::standalone(context) {
            None
        } else {
            self.log_level.get()
        }
    }

    /// The toolsets a request's caller has enabled: its connection's, or its principal's.
    fn toolsets(&self, context: &RequestContext<RoleServer>) -> EnabledToolsets {
        if Self::standalone(context) {
            self.principal_toolsets
                .of_principal(&principal(context).name, self.catalog.defaults())
        } else {
            self.connection_toolsets.clone()
        }
    }

    /// The current session a request continues when it names none: its connection's, or, for a
    /// request that stands alone (HTTP without an MCP session), its principal's.
    fn slot(&self, context: &RequestContext<RoleServer>, principal: &str) -> SessionSlot {
        if Self::standalone(context) {
            self.current.of_principal(principal)
        } else {
            self.connection_session.clone()
        }
    }

    /// Whether the session `id` ended with a thought that needed no next one, in the latest
    /// published state (which holds every call this connection was answered).
    async fn concluded(&self, id: &SessionId) -> bool {
        let Ok(view) = self.ledger.view_after(Admitted::default()).await else {
            return false;
        };
        matches!(
            view.state().session(id),
            Ok(Some(session)) if session.thoughts.last().is_some_and(|t| !t.next_thought_needed)
        )
    }
}

/// JSON as the reference server prints it: two-space indentation.
pub fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// One `tools/call` as the handler hands it to [`ThinkServer::call`].
pub struct Call {
    pub tool: String,
    pub arguments: Value,
    pub actor: Actor,
    /// The caller's current session.
    pub slot: SessionSlot,
    /// The caller's enabled toolsets.
    pub toolsets: EnabledToolsets,
    pub idempotency_key: Option<String>,
    /// The request's logs, progress and cancellation ([`Reporter::silent`] for none).
    pub reporter: Reporter,
    /// Where the request came from: its ids and the caller's trace context (the default for
    /// a call no MCP request made).
    pub origin: CallOrigin,
}

/// The principal a transport set on the request, `local` when none did.
fn principal(context: &RequestContext<RoleServer>) -> Principal {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Principal>())
        .cloned()
        .unwrap_or_else(|| Principal::member(LOCAL_PRINCIPAL))
}

fn actor(context: &RequestContext<RoleServer>, transport: &'static str) -> Actor {
    let client = context.client_info();
    let principal = principal(context);
    Actor {
        principal: principal.name,
        transport: transport.to_owned(),
        client_name: client.as_ref().map(|c| c.name.clone()),
        client_version: client.as_ref().map(|c| c.version.clone()),
        role: principal.role,
        user_ids: principal.user_ids,
    }
}
