//! The `thinkledger` binary: command-line parsing and process wiring only.
//!
//! Logs go to stderr, always: in stdio mode stdout carries nothing but JSON-RPC. Command output
//! (verify reports, listings, exports) is written with `writeln!` to a locked stdout handle.
#![forbid(unsafe_code)]

mod cli;

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use cli::ledger::LedgerCommand;
use cli::migrate::migrate;
use cli::serve::serve;
use thinkledger::ledger::LedgerError;
use thinkledger::server::{self, LedgerPlace};

#[derive(Parser)]
#[command(
    name = "thinkledger",
    version,
    about = "Structured thinking tools for MCP clients, on an audit-grade ledger"
)]
struct Cli {
    /// Where the ledger lives (default: the platform data directory, e.g. ~/.local/share/thinkledger).
    #[arg(long, global = true, env = "THINKLEDGER_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Keep the ledger in a PostgreSQL database instead of the data directory, e.g.
    /// postgres://thinkledger@db.internal/thinkledger (`?sslmode=require` for TLS). The signing
    /// key, tokens and caches stay in the data directory.
    #[arg(long, global = true, env = "THINKLEDGER_STORE", value_name = "URL")]
    store: Option<String>,
    /// How logs are written to stderr: `text` (one line each, for people) or `json` (one JSON
    /// object each, for a log pipeline).
    #[arg(long, global = true, env = "THINKLEDGER_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve MCP (stdio by default; Streamable HTTP with --http). The default command.
    Serve(ServeArgs),
    /// Check the whole ledger: gap-free seqs, canonical bytes, hash chain, text commitments,
    /// erasures, and every signed checkpoint against the log.
    Verify {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Also check a signed checkpoint you kept earlier (a file holding the signed note): the
        /// log must still extend it. Catches a ledger rolled back to an older state. Repeatable.
        #[arg(long = "checkpoint", value_name = "FILE")]
        checkpoints: Vec<PathBuf>,
        /// The ledger's public key as `thinkledger key` printed it: the checkpoints are checked
        /// against it rather than the data directory's signing key (a reviewer's machine has
        /// none; a ledger in PostgreSQL may be verified from anywhere).
        #[arg(long, value_name = "KEY")]
        pubkey: Option<String>,
    },
    /// Sign a checkpoint of the log now (unless the latest covers it) and print its signed note.
    Checkpoint,
    /// Erase stored texts for good (a session's, named commitments, or every memory of a user
    /// id) and record who and why.
    /// The chain, checkpoints and exports still verify and show where text was erased.
    Erase {
        /// Erase every text of this session.
        #[arg(long, group = "what")]
        session: Option<String>,
        /// Erase the text with this commitment (repeatable).
        #[arg(long = "commitment", value_name = "HEX", group = "what")]
        commitments: Vec<String>,
        /// Erase every memory stored for this user id (`store_memory`'s userId): each version's
        /// content and metadata, and the memories themselves.
        #[arg(long, value_name = "USER", group = "what")]
        user_id: Option<String>,
        /// Why (recorded in the ledger).
        #[arg(long)]
        reason: String,
    },
    /// Copy a ledger between a data directory and a PostgreSQL database (either way): its
    /// events as stored, its texts and its signed checkpoints, into an empty destination.
    Migrate {
        /// The source: a data directory or a postgres:// URL.
        #[arg(long)]
        from: String,
        /// The destination: a data directory or a postgres:// URL; must hold no ledger yet.
        #[arg(long)]
        to: String,
    },
    /// Print the ledger's public key (a C2SP verifier key) for checking its signed checkpoints.
    Key,
    /// Copy the ledger into DEST, a new data directory, while servers run (through the one that
    /// serves the directory) or not: the log as of its latest durable batch, its texts, signed
    /// checkpoints, signing key and tokens; the copy is verified before it is put in place.
    /// `thinkledger --data-dir DEST serve` continues it (docs/operations.md).
    Backup {
        /// The new data directory: must not exist, or be empty.
        dest: PathBuf,
    },
    /// Run the reasoning engine on TASK: the configured model (THINKLEDGER_MODEL_PROVIDER_URL)
    /// calls thinkledger's tools (and external MCP servers) in a loop; every step is recorded in
    /// the run's session. Exit 0 when the run completed, 3 otherwise (the status says how).
    Agent {
        /// The task.
        #[arg(required_unless_present = "resume")]
        task: Option<String>,
        /// Go on with the run of this session, cut short before it ended.
        #[arg(long, conflicts_with = "task", value_name = "SESSION")]
        resume: Option<String>,
        /// The most model calls of the run.
        #[arg(long, default_value_t = 6)]
        max_iterations: u32,
        /// thinkledger's tools the model may call, comma-separated.
        #[arg(long, default_value = thinkledger::app::SEQUENTIALTHINKING_TOOL)]
        tools: String,
        /// A JSON file of external MCP servers (`{"mcpServers": {NAME: {command, args, env}}}`)
        /// whose tools the model may call too, as NAME__TOOL.
        #[arg(long, value_name = "FILE")]
        mcp_config: Option<PathBuf>,
        /// Identical failures of one tool in a row that stop the run.
        #[arg(long, default_value_t = 3)]
        breaker_threshold: u32,
        /// Sampling temperature.
        #[arg(long)]
        temperature: Option<f64>,
        /// The most tokens of one model answer.
        #[arg(long)]
        max_tokens: Option<u32>,
        /// The most tokens of the whole run (over the calls that report usage).
        #[arg(long)]
        max_total_tokens: Option<u64>,
        /// The most seconds the run may take.
        #[arg(long)]
        max_seconds: Option<u64>,
        /// Print {sessionId, status, iterations, answer} as JSON (the model's text goes to stderr).
        #[arg(long)]
        json: bool,
    },
    /// List the thinking sessions in the ledger.
    Sessions {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Export one session's thinking chain.
    Export {
        /// The session id (see `thinkledger sessions`).
        session: String,
        #[arg(long, value_enum, default_value_t = Format::Markdown)]
        format: Format,
    },
    /// Show a session's timeline from the log; with --reexecute, decide every recorded call
    /// again and compare. Exits 0 when no call diverged, 2 when any did.
    Replay {
        /// The session id (see `thinkledger sessions`).
        session: String,
        /// Decide every call again with this build's rules and compare with the record.
        #[arg(long)]
        reexecute: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// The --max-text-bytes the server ran with when the calls were recorded.
        #[arg(long, default_value_t = 64 * 1024)]
        max_text_bytes: usize,
    },
    /// Export events with everything needed to verify them offline (thinkledger-audit/1): each
    /// event as stored, its inclusion proof to a freshly signed checkpoint, its texts or proof
    /// of their erasure, and a signature over the whole file. See docs/audit.md.
    Audit {
        /// The session to export (see `thinkledger sessions`); or give a seq range instead.
        #[arg(required_unless_present = "from_seq", conflicts_with = "from_seq")]
        session: Option<String>,
        /// First seq of a range to export: every event from here to --to-seq, so an auditor can
        /// check that none is missing.
        #[arg(long, requires = "to_seq", value_name = "SEQ")]
        from_seq: Option<u64>,
        /// Last seq of the range.
        #[arg(long, requires = "from_seq", value_name = "SEQ")]
        to_seq: Option<u64>,
        /// A signed checkpoint kept earlier (a file holding the note, as `thinkledger checkpoint`
        /// printed it): the export proves the log still extends it.
        #[arg(long, value_name = "FILE")]
        since_checkpoint: Option<PathBuf>,
        /// Write the export to this file instead of stdout.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Verify an audit export offline, from the file alone: signatures, hashes, chain links,
    /// Merkle proofs, texts, erasures, completeness of a range. Exits 0 when it passes, 2 when
    /// it fails, naming every problem.
    VerifyExport {
        /// The export file.
        file: PathBuf,
        /// The ledger's public key as `thinkledger key` printed it, obtained out of band.
        /// Without it the key inside the file is used, which cannot show who made the export.
        #[arg(long, value_name = "KEY")]
        pubkey: Option<String>,
        /// A signed checkpoint you kept earlier: the export must prove its log extends it.
        #[arg(long, value_name = "FILE")]
        since_checkpoint: Option<PathBuf>,
        /// The certificate (PEM or DER) of the RFC 3161 time-stamping authority, or of the CA
        /// that issued it: the export's time-stamp tokens must verify against it.
        #[arg(long, value_name = "FILE")]
        tsa_cert: Option<PathBuf>,
        /// Print the full report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Bearer tokens for `serve --http --auth`: create (printed once), list, revoke.
    Token {
        #[command(subcommand)]
        action: cli::token::TokenAction,
    },
    /// Compare two sessions: thoughts added, removed or changed, branches in one only, tag
    /// changes, conclusions.
    Diff {
        /// Session A (its lines are `-`).
        session_a: String,
        /// Session B (its lines are `+`).
        session_b: String,
        /// Print the diff as JSON.
        #[arg(long)]
        json: bool,
    },
}

impl Command {
    /// The subcommand's name when it opens the ledger itself (so a running server keeps it
    /// out), `None` for `serve` and for commands that never open it.
    fn offline_name(&self) -> Option<&'static str> {
        Some(match self {
            Command::Serve(_) | Command::VerifyExport { .. } | Command::Token { .. } => {
                return None;
            }
            Command::Verify { .. } => "verify",
            Command::Checkpoint => "checkpoint",
            Command::Erase { .. } => "erase",
            Command::Key => "key",
            Command::Backup { .. } => "backup",
            Command::Agent { .. } => "agent",
            Command::Sessions { .. } => "sessions",
            Command::Export { .. } => "export",
            Command::Replay { .. } => "replay",
            Command::Audit { .. } => "audit",
            Command::Diff { .. } => "diff",
            Command::Migrate { .. } => "migrate",
        })
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Markdown,
    Json,
}

#[derive(clap::Args, Default, Clone)]
struct ServeArgs {
    /// Serve Streamable HTTP at this address (e.g. 127.0.0.1:8750) instead of stdio; the MCP
    /// endpoint is /mcp. Several clients can share one ledger this way.
    #[arg(long)]
    http: Option<SocketAddr>,
    /// With --http: no MCP sessions, every request stands alone (pass sessionId to continue).
    #[arg(long, requires = "http")]
    stateless: bool,
    /// With --http: every request must carry `Authorization: Bearer <token>` (see `thinkledger
    /// token create`); its principal owns what its calls record. On by default when the address
    /// is not a loopback one.
    #[arg(long, requires = "http", conflicts_with = "principal_header")]
    auth: bool,
    /// With --http --auth: serve /metrics without a bearer token (a Prometheus on a network
    /// you trust). Otherwise, under --auth, /metrics wants a token made with `--role metrics`
    /// (or an auditor's); without --auth it is open like the rest of the server.
    #[arg(long, requires = "http")]
    metrics_public: bool,
    /// With --http: the most calls one principal may make in any minute; more are refused
    /// (quota_exceeded, recorded). Unlimited by default.
    #[arg(long, requires = "http", value_name = "N")]
    quota_calls_per_minute: Option<u32>,
    /// With --http: the most bytes of text (every string of a call's arguments) one principal
    /// may send per UTC day. Unlimited by default.
    #[arg(long, requires = "http", value_name = "BYTES")]
    quota_text_bytes_per_day: Option<u64>,
    /// Tool families each client starts with, comma-separated: thinking (sequentialthinking),
    /// maxential (reset, search, tag, export, visualize), audit (replay_reasoning_session,
    /// diff_sessions, export_reasoning_audit), deliberation (the ReasonKit Think v2 workspace:
    /// modes, thought graph, scoring, assumptions, verification, checkpoints, consensus),
    /// memory (store, retrieve, update, delete and search memories), lux (model-backed:
    /// confer, traced_reasoning, planner, biased_reasoning), cognition (ThoughtMCP's
    /// reasoning, bias, emotion and confidence tools), default (thinking,maxential) or all.
    /// list_toolsets, enable_toolset and disable_toolset are always offered: a client enables
    /// the other families at run time.
    #[arg(long, default_value = "default", value_name = "LIST")]
    toolsets: String,
    /// With --http: an extra Host header value to accept besides loopback names (repeatable).
    #[arg(long = "allow-host", requires = "http")]
    allow_hosts: Vec<String>,
    /// With --http behind an authenticating reverse proxy: the header that names each
    /// request's principal (e.g. X-Forwarded-User); requests without it get 401. Sessions
    /// belong to the principal that started them.
    #[arg(long, requires = "http")]
    principal_header: Option<String>,
    /// Largest accepted free-text field (a thought, a query), in bytes.
    #[arg(long, default_value_t = 64 * 1024)]
    max_text_bytes: usize,
    /// Longest a deliberation tool may spend deciding one call, in milliseconds; a slower
    /// decision is refused (time_limit_exceeded) and changes nothing.
    #[arg(long, default_value_t = 5_000)]
    tool_time_limit_ms: u64,
    /// The memory tools' quality embedding tier: a directory holding all-MiniLM-L6-v2
    /// (model.safetensors, tokenizer.json, config.json; see README). Without it, the built-in
    /// potion-base-2M model. Memories embedded with one model are not compared with another's.
    #[arg(long, value_name = "DIR", env = "THINKLEDGER_EMBEDDING_MODEL")]
    embedding_model: Option<PathBuf>,
    /// Stream every committed event as an audit record to a SIEM: syslog+tcp://HOST:PORT
    /// (RFC 5424 messages, RFC 6587 octet counting) or file:PATH (JSON lines). In seq order, at
    /// least once, resumed from the last record the target acknowledged (docs/audit.md). Only
    /// the process that owns the data directory streams.
    #[arg(long, value_name = "TARGET", env = "THINKLEDGER_AUDIT_STREAM")]
    audit_stream: Option<String>,
    /// With --audit-stream: also send each call's recorded arguments with their texts (what
    /// callers wrote: thoughts, queries, memories). Off by default: records name the call, not
    /// its content, and an erasure cannot reach a copy in the SIEM.
    #[arg(long, requires = "audit_stream")]
    audit_stream_arguments: bool,
    /// Send each signed checkpoint to this RFC 3161 time-stamping authority (an http:// URL)
    /// and keep its token beside the checkpoint, for audit exports to carry (docs/audit.md,
    /// "Time anchoring"). Fetched after the checkpoint is signed and retried while the TSA is
    /// down: calls never wait for it. Only the process that owns the data directory stamps (on
    /// a database, each node its own checkpoints).
    #[arg(long, value_name = "URL", env = "THINKLEDGER_TIMESTAMP_AUTHORITY")]
    timestamp_authority: Option<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // stdout is the protocol in stdio mode: logs go to stderr only, uncoloured unless a
    // terminal is watching. A server logs what it does (info); a command only warnings and
    // errors, its output being what it prints. RUST_LOG chooses otherwise (README, "Logs").
    let serving = matches!(cli.command, None | Some(Command::Serve(_)));
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| if serving { "info,rmcp=warn" } else { "warn" }.into());
    let logs = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    match cli.log_format {
        LogFormat::Text => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => logs
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .init(),
    }
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "thinkledger: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn data_dir(cli: &Cli) -> anyhow::Result<PathBuf> {
    if let Some(dir) = &cli.data_dir {
        return Ok(dir.clone());
    }
    let base = dirs::data_dir()
        .context("no platform data directory; pass --data-dir or set THINKLEDGER_DATA_DIR")?;
    Ok(base.join("thinkledger"))
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let dir = LedgerPlace {
        data_dir: data_dir(&cli)?,
        store: cli.store.clone(),
    };
    if let Some(url) = &dir.store {
        if !thinkledger::ledger::is_postgres_url(url) {
            bail!(
                "--store takes a postgres:// URL (without it the ledger is in the data directory)"
            );
        }
        // A build without PostgreSQL says so before anything starts (a server would otherwise
        // answer `initialize` and refuse every call).
        thinkledger::ledger::pg::check_built()?;
    }
    let command = cli.command.unwrap_or(Command::Serve(ServeArgs {
        toolsets: "default".into(),
        max_text_bytes: 64 * 1024,
        tool_time_limit_ms: 5_000,
        ..Default::default()
    }));
    let offline = command.offline_name();
    dispatch(&dir, command).map_err(|e| match (offline, held_ledger(&e)) {
        (Some(name), Some(path)) => held_by_a_server(name, &path),
        _ => e,
    })
}

/// The ledger path of a [`LedgerError::Locked`] anywhere in `error`'s chain.
fn held_ledger(error: &anyhow::Error) -> Option<PathBuf> {
    error.chain().find_map(|cause| match cause.downcast_ref() {
        Some(LedgerError::Locked { path }) => Some(path.clone()),
        _ => None,
    })
}

/// What a command that opens the ledger itself (`agent`, `migrate`) says when a running server
/// holds it.
fn held_by_a_server(command: &str, ledger: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "`thinkledger {command}` cannot open the ledger at {ledger}: a running thinkledger \
         server holds it, and `{command}` writes the ledger itself rather than through that \
         server. Stop the server (quit the MCP clients that started it, or stop `thinkledger \
         serve --http`), then run `thinkledger {command}` again: every answered call is on \
         disk.",
        ledger = ledger.display(),
    )
}

/// How long a command waits for a directory another process holds for a moment (a command,
/// an owner not yet listening) before it says why it cannot go on.
const COMMAND_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs `command` on the ledger: through the process that serves the data directory when one
/// does, otherwise on the ledger opened here (holding the directory meanwhile, so no server
/// starts on it halfway).
fn ledger_command(dir: &LedgerPlace, command: LedgerCommand) -> anyhow::Result<ExitCode> {
    let command = command.absolute(&std::env::current_dir()?);
    runtime()?.block_on(async {
        #[cfg(unix)]
        {
            use thinkledger::server::owner::{self, Door, Hello};
            let hello = Hello::Command {
                build: owner::build(),
                command: serde_json::to_value(&command)?,
            };
            match owner::find_or_become(&dir.data_dir, &hello, COMMAND_PATIENCE).await? {
                Door::Relay(connection) => {
                    let reply = owner::accept::read_reply(connection).await?;
                    let code = reply.exit;
                    std::io::stdout().lock().write_all(&reply.stdout_bytes())?;
                    std::io::stderr().lock().write_all(&reply.stderr_bytes())?;
                    Ok(ExitCode::from(code))
                }
                Door::Owner(lock) => {
                    let code =
                        cli::ledger::run(command, None, dir, &cli::ledger::Io::standard()).await;
                    drop(lock);
                    code.map(ExitCode::from)
                }
            }
        }
        #[cfg(not(unix))]
        cli::ledger::run(command, None, dir, &cli::ledger::Io::standard())
            .await
            .map(ExitCode::from)
    })
}

/// Runs `f` holding the data directory (no server may start on it meanwhile), or says which
/// server holds it.
fn holding_directory<T>(
    dir: &LedgerPlace,
    name: &str,
    f: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    #[cfg(unix)]
    {
        let Some(lock) = thinkledger::server::owner::OwnerLock::try_take(&dir.data_dir)? else {
            return Err(held_by_a_server(name, &server::ledger_dir(&dir.data_dir)));
        };
        let result = f();
        drop(lock);
        result
    }
    #[cfg(not(unix))]
    {
        let _ = name;
        f()
    }
}

fn dispatch(dir: &LedgerPlace, command: Command) -> anyhow::Result<ExitCode> {
    let principal =
        || std::env::var("USER").map_or_else(|_| "local".to_owned(), |u| format!("os:{u}"));
    let on_ledger = match command {
        Command::Serve(args) => return serve(dir, args),
        Command::Verify {
            json,
            checkpoints,
            pubkey,
        } => LedgerCommand::Verify {
            json,
            checkpoints,
            pubkey,
        },
        Command::Checkpoint => LedgerCommand::Checkpoint,
        Command::Erase {
            session,
            commitments,
            user_id,
            reason,
        } => LedgerCommand::Erase {
            session,
            commitments,
            user_id,
            reason,
            principal: principal(),
        },
        Command::Key => LedgerCommand::Key,
        Command::Backup { dest } => LedgerCommand::Backup { dest },
        Command::Sessions { json } => LedgerCommand::Sessions { json },
        Command::Export { session, format } => LedgerCommand::Export {
            session,
            json: matches!(format, Format::Json),
        },
        Command::Replay {
            session,
            reexecute,
            json,
            max_text_bytes,
        } => LedgerCommand::Replay {
            session,
            reexecute,
            json,
            max_text_bytes,
        },
        Command::Diff {
            session_a,
            session_b,
            json,
        } => LedgerCommand::Diff {
            session_a,
            session_b,
            json,
        },
        Command::Audit {
            session,
            from_seq,
            to_seq,
            since_checkpoint,
            output,
        } => LedgerCommand::Audit {
            session,
            from_seq,
            to_seq,
            since_checkpoint,
            output,
        },
        Command::Agent {
            task,
            resume,
            max_iterations,
            tools,
            mcp_config,
            breaker_threshold,
            temperature,
            max_tokens,
            max_total_tokens,
            max_seconds,
            json,
        } => {
            return holding_directory(dir, "agent", || {
                cli::agent::run(
                    dir,
                    cli::agent::AgentArgs {
                        task,
                        resume,
                        max_iterations,
                        tools,
                        mcp_config,
                        json,
                        breaker_threshold,
                        temperature,
                        max_tokens,
                        max_total_tokens,
                        max_seconds,
                    },
                )
            });
        }
        Command::Token { action } => return cli::token::run(dir, action),
        Command::Migrate { from, to } => return migrate(&dir.data_dir, &from, &to),
        Command::VerifyExport {
            file,
            pubkey,
            since_checkpoint,
            tsa_cert,
            json,
        } => {
            return cli::audit::verify_export(cli::audit::VerifyRequest {
                file,
                pubkey,
                since_checkpoint,
                tsa_cert,
                json,
            });
        }
    };
    ledger_command(dir, on_ledger)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}
