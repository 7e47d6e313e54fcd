//! `thinkledger serve`: the ledger this process owns started with its watchers, the audit
//! stream and periodic checkpoints; MCP served over Streamable HTTP or stdio (directly, or
//! relayed to the process that owns the data directory, taking over when that one goes);
//! commands of other processes run on the owned ledger; the exit status saying why calls were
//! refused. Arguments are parsed in `main.rs`.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use crate::cli::ledger::LedgerCommand;
use crate::{ServeArgs, cli};
use anyhow::{Context, bail};
use thinkledger::app::AppConfig;
use thinkledger::ledger::LedgerError;
use thinkledger::otel::{self, OtelConfig};
use thinkledger::server::auth::Authenticator;
use thinkledger::server::{self, HttpConfig, LedgerPlace};
use thinkledger::tools::quotas::QuotaLimits;
use thinkledger::tools::{Catalog, ThinkServer, Toolsets};
use tokio_util::sync::CancellationToken;

/// The command each relayed process may send the owner runs here, on its ledger.
#[cfg(unix)]
fn command_runner(dir: &LedgerPlace) -> thinkledger::server::owner::accept::CommandRunner {
    use thinkledger::server::owner::accept::CommandReply;
    let dir = dir.clone();
    Arc::new(move |command, ledger| {
        let dir = dir.clone();
        Box::pin(async move {
            let io = cli::ledger::Io::buffers();
            let name = command["command"].as_str().unwrap_or_default().to_owned();
            let exit = match serde_json::from_value::<LedgerCommand>(command) {
                Ok(command) => {
                    tracing::info!(command = %name, "running a command for another process");
                    match cli::ledger::run(command, Some(&ledger), &dir, &io).await {
                        Ok(code) => code,
                        Err(e) => {
                            let _ = writeln!(io.err.writer(), "thinkledger: {e:#}");
                            1
                        }
                    }
                }
                Err(e) => {
                    let _ = writeln!(
                        io.err.writer(),
                        "thinkledger: the serving process cannot read this command ({e})"
                    );
                    1
                }
            };
            CommandReply::new(&io.out.taken(), &io.err.taken(), exit)
        })
    })
}

/// What an owner's ledger told its watchers (a shared store's write failed), and the audit
/// stream that follows it, to be finished before the ledger closes.
struct Watch {
    write_failed: Arc<std::sync::atomic::AtomicBool>,
    stream: Option<server::audit_stream::AuditStream>,
}

/// Opens the ledger this process now owns (replayed behind, so `initialize` and the lists are
/// answered at once), with its watchers and periodic checkpoints; on unix, also listens for
/// relays and commands.
fn start_ledger(
    dir: &LedgerPlace,
    args: &ServeArgs,
    shutdown: &CancellationToken,
) -> anyhow::Result<(
    thinkledger::ledger::LedgerHandle<thinkledger::app::App>,
    Watch,
)> {
    static EMBEDDER: std::sync::Once = std::sync::Once::new();
    if let Some(model) = &args.embedding_model {
        // Loaded before anything is served: a missing or damaged model stops the start.
        let embedder = thinkledger::embed::load_embedder(Some(model))?;
        EMBEDDER.call_once(|| {
            tracing::info!(model = embedder.model(), dir = %model.display(), "embedding model loaded");
            thinkledger::effects::use_embedder(embedder);
        });
    }
    let config = AppConfig {
        max_text_bytes: args.max_text_bytes,
        tool_time_limit: std::time::Duration::from_millis(args.tool_time_limit_ms),
    };
    let ledger = server::start(dir, config)?;
    tracing::info!(ledger = %dir.shown(), "ledger opening");
    server::spawn_checkpoints(ledger.clone(), shutdown.clone());
    // A ledger another process holds is known within milliseconds: stop, and say so, rather
    // than serve calls that can never be recorded.
    tokio::spawn({
        let (ledger, shutdown) = (ledger.clone(), shutdown.clone());
        async move {
            if let Err(e) = ledger.opened().await
                && matches!(*e, LedgerError::Locked { .. })
            {
                shutdown.cancel();
            }
        }
    });
    // A node of a shared database whose write failed (the database went away, a failover)
    // stops, so that its supervisor starts it again on the database as it is now: it cannot go
    // on from a state the database may not hold. A server of its own ledger stays up and
    // refuses calls, saying why.
    let write_failed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    tokio::spawn({
        let (ledger, shutdown, write_failed) =
            (ledger.clone(), shutdown.clone(), write_failed.clone());
        async move {
            if ledger.opened().await.is_ok() && ledger.is_shared() {
                ledger.stopped().await;
                if !shutdown.is_cancelled() {
                    write_failed.store(true, std::sync::atomic::Ordering::SeqCst);
                    shutdown.cancel();
                }
            }
        }
    });
    if let Some(authority) = timestamp_authority(args)? {
        let kept = server::timestamp_log(dir)?;
        thinkledger::anchor::start(ledger.clone(), kept, authority, shutdown.clone());
    }
    let stream = audit_stream(args)?.map(|config| {
        server::audit_stream::AuditStream::start(ledger.clone(), dir.data_dir.clone(), config)
    });
    Ok((
        ledger,
        Watch {
            write_failed,
            stream,
        },
    ))
}

/// What `--audit-stream` asks for, its file made absolute against the working directory.
fn audit_stream(args: &ServeArgs) -> anyhow::Result<Option<server::audit_stream::StreamConfig>> {
    let Some(raw) = &args.audit_stream else {
        return Ok(None);
    };
    let target = server::audit_stream::Target::parse(raw)
        .map_err(|e| anyhow::anyhow!(e))?
        .absolute(&std::env::current_dir()?);
    Ok(Some(server::audit_stream::StreamConfig {
        target,
        arguments: args.audit_stream_arguments,
    }))
}

/// The time-stamping authority `--timestamp-authority` names, checked.
fn timestamp_authority(args: &ServeArgs) -> anyhow::Result<Option<thinkledger::anchor::Authority>> {
    args.timestamp_authority
        .as_deref()
        .map(thinkledger::anchor::Authority::parse)
        .transpose()
        .map_err(|e| anyhow::anyhow!(e))
}

/// How a server that owned its ledger ends: with the reason its calls were refused, if any.
fn ending(
    ledger: &thinkledger::ledger::LedgerHandle<thinkledger::app::App>,
    watch: &Watch,
) -> anyhow::Result<ExitCode> {
    if watch.write_failed.load(std::sync::atomic::Ordering::SeqCst) {
        bail!(
            "a write to the ledger's database failed, so this node stopped (every call it \
             answered is in the database): start it again once the database is reachable, \
             pointed at the current primary"
        );
    }
    // Calls were refused with the reason while serving; the exit status says it too.
    match ledger.open_failure() {
        Some(e) if matches!(*e, LedgerError::Locked { .. }) => Err(anyhow::anyhow!("{e}")),
        Some(e) => Err(anyhow::anyhow!("the ledger could not be opened: {e}")),
        None => Ok(ExitCode::SUCCESS),
    }
}

pub fn serve(dir: &LedgerPlace, args: ServeArgs) -> anyhow::Result<ExitCode> {
    let toolsets = Toolsets::parse(&args.toolsets)?;
    if audit_stream(&args)?.is_some() && dir.store.is_some() {
        bail!(
            "--audit-stream follows a ledger kept in the data directory; a ledger in PostgreSQL \
             (--store) is several nodes' log, which no one node streams: stream from the \
             database instead (logical replication or a trigger on thinkledger_events)"
        );
    }
    timestamp_authority(&args)?;
    // OpenTelemetry's standard variables: an OTLP endpoint turns span exporting on (the SDK
    // reads the rest of its configuration itself).
    let otel = OtelConfig::from_lookup(|name| std::env::var(name).ok());
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async move {
        let shutdown = CancellationToken::new();
        tokio::spawn(stop_on_signal(shutdown.clone()));
        // A collector that cannot be reached never stops the server: the spans are lost, the
        // calls are not.
        let exporting = otel.and_then(|config| {
            otel::start(&config)
                .inspect_err(|e| tracing::error!(error = %e, "spans will not be exported"))
                .ok()
        });
        let catalog = Arc::new(Catalog::new(toolsets));
        let served = match args.http {
            Some(addr) => serve_http(dir, &args, addr, catalog, shutdown).await,
            None => serve_stdio(dir, &args, catalog, shutdown).await,
        };
        if let Some(exporting) = exporting {
            exporting.shutdown(OTEL_PATIENCE).await;
        }
        served
    })
}

/// How long a server that exports spans waits at exit for the last ones to be sent.
const OTEL_PATIENCE: std::time::Duration = std::time::Duration::from_secs(3);

async fn serve_http(
    dir: &LedgerPlace,
    args: &ServeArgs,
    addr: SocketAddr,
    catalog: Arc<Catalog>,
    shutdown: CancellationToken,
) -> anyhow::Result<ExitCode> {
    #[cfg(unix)]
    let Some(lock) = thinkledger::server::owner::OwnerLock::try_take(&dir.data_dir)? else {
        bail!(
            "another thinkledger process serves the data directory {} (an MCP client's \
             `thinkledger serve`, or another `serve --http`): an HTTP server must own its \
             ledger. Quit the clients that started it (they can be pointed at this HTTP \
             server instead: README, \"Several clients, one ledger\"), or give this server a \
             data directory of its own with --data-dir",
            dir.data_dir.display()
        );
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let mut config = HttpConfig {
        stateless: args.stateless,
        metrics_public: args.metrics_public,
        quotas: QuotaLimits {
            calls_per_minute: args.quota_calls_per_minute,
            text_bytes_per_day: args.quota_text_bytes_per_day,
        },
        ..HttpConfig::default()
    };
    config
        .allowed_hosts
        .extend(args.allow_hosts.iter().cloned());
    // A server others can reach never trusts them by default.
    if args.principal_header.is_none() && (args.auth || !addr.ip().is_loopback()) {
        let tokens = cli::token::tokens_of(dir)?;
        tracing::info!(tokens = %tokens.shown(), "bearer tokens required");
        config.auth = Some(Arc::new(Authenticator::new(tokens)));
    }
    if let Some(name) = &args.principal_header {
        config.principal_header = Some(
            name.parse()
                .with_context(|| format!("--principal-header {name:?} is not a header name"))?,
        );
    }
    let (ledger, mut watch) = start_ledger(dir, args, &shutdown)?;
    // A node of a shared database is supervised: one whose ledger cannot open (no key of the
    // ledger, the database unreachable) stops, saying why, so that its supervisor sees it. A
    // server of its own ledger stays up and refuses every call with the reason.
    let shared = dir.store.is_some();
    tokio::spawn({
        let (ledger, shutdown) = (ledger.clone(), shutdown.clone());
        async move {
            if let Err(e) = ledger.opened().await
                && shared
            {
                tracing::error!(error = %e, "the ledger could not be opened: stopping");
                shutdown.cancel();
            }
        }
    });
    #[cfg(unix)]
    let owned = thinkledger::server::owner::accept::Owned::listen(
        &dir.data_dir,
        lock,
        ledger.clone(),
        Some(command_runner(dir)),
    )
    .with_stream(watch.stream.take());
    let served =
        server::serve_http_only(listener, ledger.clone(), catalog, config, shutdown.clone()).await;
    shutdown.cancel();
    #[cfg(unix)]
    owned.close().await;
    #[cfg(not(unix))]
    {
        if let Some(stream) = watch.stream.take() {
            stream.finish().await;
        }
        ledger.shutdown().await;
    }
    served?;
    ending(&ledger, &watch)
}

#[cfg(not(unix))]
async fn serve_stdio(
    dir: &LedgerPlace,
    args: &ServeArgs,
    catalog: Arc<Catalog>,
    shutdown: CancellationToken,
) -> anyhow::Result<ExitCode> {
    let (ledger, watch) = start_ledger(dir, args, &shutdown)?;
    server::serve_stdio(ledger.clone(), catalog, shutdown)
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    ending(&ledger, &watch)
}

/// Serves the client on stdin/stdout: directly, when this process owns the data directory
/// (handing the ledger on to its relays when its client leaves), or relayed to the process
/// that owns it, becoming the owner itself if that one goes first.
#[cfg(unix)]
async fn serve_stdio(
    dir: &LedgerPlace,
    args: &ServeArgs,
    catalog: Arc<Catalog>,
    shutdown: CancellationToken,
) -> anyhow::Result<ExitCode> {
    use thinkledger::server::owner::accept::Owned;
    use thinkledger::server::owner::{self, Door, DoorError, relay};
    let state = relay::first_state();
    let hello = relay::hello(&args.toolsets, &state);
    let (stdin, stdout) = server::stdio_pipes();
    match owner::find_or_become(&dir.data_dir, &hello, relay::PATIENCE).await {
        Err(DoorError::Refused(why)) => {
            tracing::error!("{why}");
            relay::refuse_all(stdin, stdout, why.clone()).await;
            bail!("{why}")
        }
        Err(e) => Err(e.into()),
        Ok(Door::Owner(lock)) => {
            let (ledger, mut watch) = start_ledger(dir, args, &shutdown)?;
            let owned = Owned::listen(
                &dir.data_dir,
                lock,
                ledger.clone(),
                Some(command_runner(dir)),
            )
            .with_stream(watch.stream.take());
            tracing::info!("serving MCP over stdio");
            let server = ThinkServer::new(ledger.clone(), catalog, "stdio");
            let served =
                server::framing::stdio::serve(server, stdin, stdout, shutdown.clone()).await;
            // The ledger closes because the client went: not a failed write (see `ending`).
            shutdown.cancel();
            owned.close().await;
            served?;
            ending(&ledger, &watch)
        }
        Ok(Door::Relay(connection)) => {
            let promoted: Arc<std::sync::Mutex<Option<Owned>>> = Arc::default();
            let promote: relay::Promote = Box::new({
                let (dir, promoted, shutdown) = (dir.clone(), promoted.clone(), shutdown.clone());
                let args = args.clone();
                move |lock| {
                    tracing::info!("no process owns the ledger any more: this one does now");
                    let (ledger, watch) =
                        start_ledger(&dir, &args, &shutdown).map_err(|e| format!("{e:#}"))?;
                    let owned =
                        Owned::listen(&dir.data_dir, lock, ledger, Some(command_runner(&dir)))
                            .with_stream(watch.stream);
                    *promoted
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(owned);
                    Ok(())
                }
            });
            let relayed = relay::run(
                dir.data_dir.clone(),
                args.toolsets.clone(),
                state,
                connection,
                stdin,
                stdout,
                promote,
                shutdown.clone(),
            )
            .await;
            let owned = promoted
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            if let Some(owned) = owned {
                owned.close().await;
            }
            relayed?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Cancels `token` on SIGINT or SIGTERM so the ledger is synced before exit.
async fn stop_on_signal(token: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
    tracing::info!("shutting down");
    token.cancel();
}
