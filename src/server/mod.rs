//! Transports: MCP over stdio and over Streamable HTTP (axum), and opening the ledger they
//! share.
//!
//! This is the only layer that knows axum and the wire. It takes its listener and a shutdown
//! token from the caller, so tests can bind `127.0.0.1:0` and stop it; the HTTP router is
//! buildable without a socket. On shutdown the ledger writer syncs before the process exits.
//! Both transports go through the edge in `framing`, which answers every message rmcp would
//! drop and orders each connection's requests by their admission into the ledger's queue.

pub mod audit_stream;
pub mod auth;
pub mod framing;
pub mod metrics;
#[cfg(unix)]
pub mod owner;
pub mod review;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::http::HeaderName;
use axum::response::IntoResponse;
use axum::serve::ListenerExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::app::{App, AppConfig};
use crate::ledger::notary::Notary;
use crate::ledger::{
    LedgerError, LedgerHandle, PgStore, SledStore, Store, WriterConfig, ensure_meta, keyfile,
    open_ledger, start_ledger,
};
use crate::tools::quotas::{QuotaLimits, Quotas};
use crate::tools::{
    Catalog, CurrentSessions, LOCAL_PRINCIPAL, Principal, ThinkServer, ToolsetsByPrincipal,
};

/// Where the sled database lives inside a data directory.
pub fn ledger_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("ledger")
}

/// Where the ledger's signing key lives inside a data directory.
pub fn key_path(data_dir: &Path) -> PathBuf {
    data_dir.join("signing.key")
}

/// Where a serving ledger keeps its memory index (a cache of the memory projection, rebuilt
/// from it when the server starts; offline commands keep theirs in memory).
pub fn memory_index_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("memory-index")
}

/// Where a ledger lives: its data directory (signing key, tokens, caches, and the embedded
/// ledger) and, when `store` names a PostgreSQL database, the database holding the ledger
/// instead of the data directory.
#[derive(Debug, Clone)]
pub struct LedgerPlace {
    pub data_dir: PathBuf,
    /// A `postgres://` URL; `None`: the embedded ledger in `data_dir`.
    pub store: Option<String>,
}

impl LedgerPlace {
    /// Where the ledger is, for messages: its directory or its database (without a password).
    pub fn shown(&self) -> String {
        match &self.store {
            None => ledger_dir(&self.data_dir).display().to_string(),
            Some(url) => crate::ledger::pg::shown(url),
        }
    }
}

impl From<&Path> for LedgerPlace {
    fn from(data_dir: &Path) -> Self {
        Self {
            data_dir: data_dir.to_path_buf(),
            store: None,
        }
    }
}

impl From<&PathBuf> for LedgerPlace {
    fn from(data_dir: &PathBuf) -> Self {
        data_dir.as_path().into()
    }
}

impl From<&LedgerPlace> for LedgerPlace {
    fn from(place: &LedgerPlace) -> Self {
        place.clone()
    }
}

/// Opens the ledger at `place`, replaying it into a fresh application state, with its signing
/// key (made, mode 0600, the first time) and its signed checkpoints, which the log must
/// extend. Returns once it is open (offline commands).
pub fn open(
    place: impl Into<LedgerPlace>,
    app: AppConfig,
) -> Result<LedgerHandle<App>, LedgerError> {
    let (store, notary) = prepare(&place.into(), false)?;
    let config = WriterConfig {
        notary: Some(notary),
        ..WriterConfig::default()
    };
    open_ledger(store, App::new(app), config)
}

/// Starts the ledger at `place` as [`open`] does, but returns at once: the store is opened
/// and replayed behind, so a transport answers `initialize` and the lists while calls wait for
/// it. [`LedgerHandle::opened`] tells whether it opened (a ledger another process holds fails
/// within milliseconds, before any replay).
pub fn start(
    place: impl Into<LedgerPlace>,
    app: AppConfig,
) -> Result<LedgerHandle<App>, LedgerError> {
    let place = place.into();
    let app = App::new(app).with_memory_index_dir(memory_index_dir(&place.data_dir));
    start_ledger(
        move || prepare(&place, true).map(|(store, notary)| (store, Some(notary))),
        app,
        WriterConfig::default(),
    )
}

/// The store and notary of the ledger at `place`; `serving`: opened for a long-running
/// server (see [`SledStore::open_for_serving`]).
fn prepare(place: &LedgerPlace, serving: bool) -> Result<(Box<dyn Store>, Notary), LedgerError> {
    let key = key_path(&place.data_dir);
    match &place.store {
        None => {
            let dir = ledger_dir(&place.data_dir);
            let mut store = if serving {
                SledStore::open_for_serving(&dir)?
            } else {
                SledStore::open(&dir)?
            };
            let meta = ensure_meta(&mut store)?;
            let signer = keyfile::load_or_create(&key, &meta.ledger_id)?;
            Ok((Box::new(store), Notary::open(&dir, signer)?))
        }
        Some(url) => {
            // The data directory still holds the signing key (and a server's caches).
            crate::ledger::private::dir(&place.data_dir)?;
            let mut store = PgStore::open(url)?;
            let existed = store.meta()?.is_some();
            let meta = ensure_meta(&mut store)?;
            // A node joining a ledger without its key would make one of its own and sign
            // checkpoints no verifier accepts: it must be given the key the others sign with.
            // Only the process that creates the ledger makes its key.
            if existed && !key.exists() {
                return Err(LedgerError::OpenFailed(format!(
                    "{} has no signing key for ledger {}, which exists already: copy \
                     signing.key from the data directory of a server of this ledger into it \
                     (docs/scaling.md, \"One key per ledger\")",
                    place.data_dir.display(),
                    meta.ledger_id
                )));
            }
            let checkpoints = store.checkpoint_log();
            let signer = keyfile::load_or_create(&key, &meta.ledger_id)?;
            let notary = Notary::with_log(signer, Box::new(checkpoints))?;
            Ok((Box::new(store), notary))
        }
    }
}

/// The ledger at `place` opened to be read beside anything writing it (verify, migrate), with
/// the checkpoints signed so far. The embedded ledger is opened as usual: one process at a
/// time.
pub fn open_for_reading(
    place: &LedgerPlace,
) -> Result<(Box<dyn Store>, Vec<crate::ledger::SignedCheckpoint>), LedgerError> {
    use crate::ledger::notary::{CHECKPOINTS_FILE, CheckpointLog, read_checkpoints};
    match &place.store {
        None => {
            let dir = ledger_dir(&place.data_dir);
            let store = SledStore::open(&dir)?;
            Ok((
                Box::new(store),
                read_checkpoints(&dir.join(CHECKPOINTS_FILE))?,
            ))
        }
        Some(url) => {
            let store = PgStore::open_for_reading(url)?;
            let checkpoints = store.checkpoint_log().read()?;
            Ok((Box::new(store), checkpoints))
        }
    }
}

/// Where the ledger at `place` keeps the time-stamp tokens of its checkpoints:
/// `ledger/timestamps.jsonl` in the data directory, or the database's table, which every node
/// of it sees.
pub fn timestamp_log(
    place: &LedgerPlace,
) -> Result<Arc<dyn crate::ledger::timestamps::TimestampLog>, LedgerError> {
    use crate::ledger::pg::PgTimestamps;
    use crate::ledger::timestamps::TimestampFile;
    Ok(match &place.store {
        None => Arc::new(TimestampFile::new(&ledger_dir(&place.data_dir))),
        Some(url) => Arc::new(PgTimestamps::open(url)?),
    })
}

/// A store to copy a ledger into, with its checkpoint log.
pub type Destination = (
    Box<dyn Store>,
    Box<dyn crate::ledger::notary::CheckpointLog>,
);

/// The store and checkpoint log at `place` opened for writing a copy into (`migrate`), without
/// creating the ledger's metadata: the copy brings it.
pub fn open_empty(place: &LedgerPlace) -> Result<Destination, LedgerError> {
    use crate::ledger::notary::CheckpointFile;
    match &place.store {
        None => {
            let dir = ledger_dir(&place.data_dir);
            let store = SledStore::open(&dir)?;
            Ok((Box::new(store), Box::new(CheckpointFile::open(&dir)?)))
        }
        Some(url) => {
            let store = PgStore::open(url)?;
            let checkpoints = store.checkpoint_log();
            Ok((Box::new(store), Box::new(checkpoints)))
        }
    }
}

/// How often a served ledger signs a checkpoint of calls recorded since the last one.
pub const CHECKPOINT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

/// Signs a checkpoint every [`CHECKPOINT_INTERVAL`] while the log grows, until `shutdown`.
pub fn spawn_checkpoints(ledger: LedgerHandle<App>, shutdown: CancellationToken) {
    tokio::spawn(async move {
        // Nothing to sign before the ledger is open, and nothing ever if it fails to open.
        tokio::select! {
            _ = shutdown.cancelled() => return,
            opened = ledger.opened() => if opened.is_err() { return },
        }
        let mut tick = tokio::time::interval(CHECKPOINT_INTERVAL);
        tick.tick().await;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {
                    if let Err(e) = ledger.checkpoint().await {
                        tracing::warn!(error = %e, "periodic checkpoint failed");
                        return;
                    }
                }
            }
        }
    });
}

/// How the HTTP transport behaves.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Without MCP sessions: every request stands alone (calls should pass `sessionId`).
    pub stateless: bool,
    /// Host header values accepted (the DNS-rebinding guard); loopback names by default.
    pub allowed_hosts: Vec<String>,
    /// A header set by an authenticating reverse proxy that names the request's principal
    /// (e.g. `X-Forwarded-User`); requests without it are refused. Only for a server that is
    /// reachable through that proxy alone.
    pub principal_header: Option<HeaderName>,
    /// Bearer tokens (`thinkledger token create`): every request to `/mcp` must carry one.
    pub auth: Option<Arc<auth::Authenticator>>,
    /// Each principal's quotas (unlimited by default).
    pub quotas: QuotaLimits,
    /// With `auth`: `/metrics` answers without a bearer token too (`--metrics-public`, for a
    /// scraper on a network the operator trusts). Without `auth` it always does.
    pub metrics_public: bool,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            stateless: false,
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            principal_header: None,
            auth: None,
            quotas: QuotaLimits::default(),
            metrics_public: false,
        }
    }
}

/// The axum router serving MCP at `/mcp`.
pub fn router(
    ledger: LedgerHandle<App>,
    catalog: Arc<Catalog>,
    config: &HttpConfig,
    shutdown: &CancellationToken,
) -> axum::Router {
    let current = Arc::new(CurrentSessions::default());
    let toolsets = Arc::new(ToolsetsByPrincipal::default());
    let quotas = Arc::new(Quotas::new(config.quotas));
    let review = review::router(
        ledger.clone(),
        catalog.clone(),
        review::Viewers::of(config),
        config,
        quotas.clone(),
    );
    let (ledger_for_edge, catalog_for_edge) = (ledger.clone(), catalog.clone());
    let ledger_for_probes = ledger.clone();
    // `/metrics` wants a token that may read it when the server takes tokens, unless the
    // operator made it public; otherwise it is as open as the probes.
    let metrics = metrics::router(ledger.clone());
    let metrics = match (config.auth.clone(), config.metrics_public) {
        (Some(tokens), false) => metrics.layer(axum::middleware::from_fn(move |request, next| {
            auth::require_metrics_reader(tokens.clone(), request, next)
        })),
        _ => metrics,
    };
    let service = StreamableHttpService::new(
        move || {
            Ok(ThinkServer::new(ledger.clone(), catalog.clone(), "http")
                .with_current_sessions(current.clone())
                .with_principal_toolsets(toolsets.clone())
                .with_quotas(quotas.clone()))
        },
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(!config.stateless)
            .with_allowed_hosts(config.allowed_hosts.clone())
            .with_cancellation_token(shutdown.child_token()),
    );
    let edge = framing::http::HttpEdge::new(ledger_for_edge, catalog_for_edge);
    let mcp = framing::http::layer(axum::Router::new().nest_service("/mcp", service), edge);
    // Outermost: a request without its principal is refused before anything else reads it.
    let mcp = match (config.principal_header.clone(), config.auth.clone()) {
        (Some(header), _) => mcp.layer(axum::middleware::from_fn(move |request, next| {
            principal_from_header(header.clone(), request, next)
        })),
        (None, Some(tokens)) => mcp.layer(axum::middleware::from_fn(move |request, next| {
            auth::require_bearer(tokens.clone(), request, next)
        })),
        (None, None) => mcp,
    };
    let mcp = match config.auth {
        Some(_) => mcp.route(
            auth::METADATA_PATH,
            axum::routing::get(auth::protected_resource_metadata),
        ),
        None => mcp,
    };
    // The reviewer's page identifies its viewers itself (a cookie, not a bearer header); the
    // probes answer anyone who can reach the port, and say nothing of what is recorded.
    mcp.merge(review)
        .merge(probes(ledger_for_probes))
        .merge(metrics)
}

/// `/healthz` (the process answers) and `/readyz` (the ledger takes calls: 200, else 503 with
/// the reason), for a supervisor or a load balancer.
fn probes(ledger: LedgerHandle<App>) -> axum::Router {
    use axum::http::StatusCode;
    let text = |status: StatusCode, body: String| {
        (
            status,
            [(
                axum::http::header::CONTENT_TYPE,
                "text/plain; charset=utf-8",
            )],
            body,
        )
    };
    axum::Router::new()
        .route(
            "/healthz",
            axum::routing::get(move || async move { text(StatusCode::OK, "ok\n".into()) }),
        )
        .route(
            "/readyz",
            axum::routing::get(move || {
                let ledger = ledger.clone();
                async move {
                    match ledger.readiness() {
                        Ok(()) => text(StatusCode::OK, "ready\n".into()),
                        Err(why) => text(
                            StatusCode::SERVICE_UNAVAILABLE,
                            format!("not ready: {why}\n"),
                        ),
                    }
                }
            }),
        )
}

/// Longest principal name a proxy header may carry.
const MAX_PRINCIPAL_LEN: usize = 256;

/// The principal a trusted proxy names in `header`, if the request carries a usable name: not
/// empty, at most [`MAX_PRINCIPAL_LEN`] bytes, no control characters, and not `local` (the
/// unauthenticated owner, who acts for every memory owner: no header may claim it).
pub(crate) fn proxied_principal(
    headers: &axum::http::HeaderMap,
    header: &HeaderName,
) -> Option<Principal> {
    let name = headers.get(header)?.to_str().ok()?.trim();
    let usable = !name.is_empty()
        && name.len() <= MAX_PRINCIPAL_LEN
        && !name.chars().any(char::is_control)
        && name != LOCAL_PRINCIPAL;
    usable.then(|| Principal::member(name))
}

/// Takes the request's principal from the trusted proxy header, or refuses the request (401).
async fn principal_from_header(
    header: HeaderName,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let name = proxied_principal(request.headers(), &header);
    match name {
        Some(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        None => {
            let body = serde_json::json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {
                    "code": -32001,
                    "message": format!("unauthenticated: this server takes the caller's principal from the {header} header, which the request lacks"),
                    "data": {"suggestion": "connect through the authenticating proxy in front of this server"},
                },
            });
            (
                axum::http::StatusCode::UNAUTHORIZED,
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                body.to_string(),
            )
                .into_response()
        }
    }
}

/// Serves MCP over Streamable HTTP on `listener` until `shutdown` is cancelled, then syncs
/// the ledger.
pub async fn serve_http(
    listener: TcpListener,
    ledger: LedgerHandle<App>,
    catalog: Arc<Catalog>,
    config: HttpConfig,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    spawn_checkpoints(ledger.clone(), shutdown.clone());
    let result = serve_http_only(listener, ledger.clone(), catalog, config, shutdown).await;
    ledger.shutdown().await;
    result
}

/// [`serve_http`] without the periodic checkpoints and without closing the ledger at the end
/// (a process that owns the ledger for others too does both itself).
pub async fn serve_http_only(
    listener: TcpListener,
    ledger: LedgerHandle<App>,
    catalog: Arc<Catalog>,
    config: HttpConfig,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let addr: SocketAddr = listener.local_addr()?;
    tracing::info!(%addr, stateless = config.stateless, "serving MCP over Streamable HTTP at http://{addr}/mcp");
    let app = router(ledger.clone(), catalog, &config, &shutdown);
    let stop = shutdown.clone();
    // Answers are small and sent at once: without TCP_NODELAY, Nagle's algorithm holds a
    // response's last segment until the client's delayed ACK (about 40 ms on Linux).
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await
}

/// This process's stdin and stdout, for a transport to read and write.
pub fn stdio_pipes() -> (
    impl tokio::io::AsyncRead + Unpin + Send + 'static,
    impl tokio::io::AsyncWrite + Unpin + Send + 'static,
) {
    rmcp::transport::stdio_pipes()
}

/// Serves MCP over stdin/stdout until the client closes stdin or `shutdown` is cancelled, then
/// syncs the ledger.
pub async fn serve_stdio(
    ledger: LedgerHandle<App>,
    catalog: Arc<Catalog>,
    shutdown: CancellationToken,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    tracing::info!("serving MCP over stdio");
    let server = ThinkServer::new(ledger.clone(), catalog, "stdio");
    spawn_checkpoints(ledger.clone(), shutdown.clone());
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    let outcome = framing::stdio::serve(server, stdin, stdout, shutdown).await;
    ledger.shutdown().await;
    outcome?;
    Ok(())
}
