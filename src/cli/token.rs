//! `thinkledger token create | list | revoke`: bearer tokens for a shared HTTP server. The token
//! is printed once, at creation; the data dir keeps only its hash (`server::auth`).

use std::io::Write;
use std::process::ExitCode;
use thinkledger::server::LedgerPlace;

use anyhow::Context;
use clap::Subcommand;
use thinkledger::effects::{Effects, SystemEffects};
use thinkledger::server::auth::{NewToken, TokenRecord, TokenRole, TokenStore, parse_duration};

#[derive(Subcommand)]
pub enum TokenAction {
    /// Make a token for PRINCIPAL and print it (once: only its hash is kept).
    Create {
        /// The principal the token authenticates (recorded in each of its calls' events).
        #[arg(long)]
        principal: String,
        /// How long it lasts, e.g. 30d, 12h, 90m (default: until revoked).
        #[arg(long, value_name = "DURATION")]
        expires: Option<String>,
        /// `member` (its own sessions and memories), `auditor` (reads everything, writes
        /// nothing) or `metrics` (a Prometheus scraper's: reads /metrics and nothing else; its
        /// PRINCIPAL only names it in `token list`).
        #[arg(long, value_enum, default_value = "member")]
        role: RoleArg,
        /// A memory owner (`userId`) it may act for besides its own name (repeatable).
        #[arg(long = "user-id", value_name = "USER_ID")]
        user_ids: Vec<String>,
        /// Print the token and its record as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the tokens (never the tokens themselves): id, principal, role, expiry, revocation.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke the token ID (from `token list`); it stops working at the next request.
    Revoke { id: String },
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum RoleArg {
    Member,
    Auditor,
    Metrics,
}

pub fn run(place: &LedgerPlace, action: TokenAction) -> anyhow::Result<ExitCode> {
    let store = tokens_of(place)?;
    let now = SystemEffects.now();
    let mut out = std::io::stdout().lock();
    match action {
        TokenAction::Create {
            principal,
            expires,
            role,
            user_ids,
            json,
        } => {
            let expires_at = match expires {
                Some(text) => Some(now + parse_duration(&text).map_err(anyhow::Error::msg)?),
                None => None,
            };
            let role = match role {
                RoleArg::Member => TokenRole::Member,
                RoleArg::Auditor => TokenRole::Auditor,
                RoleArg::Metrics => TokenRole::Metrics,
            };
            let secret = SystemEffects.seed().map_err(anyhow::Error::msg)?;
            let new = NewToken {
                principal,
                role,
                user_ids,
                expires_at,
            };
            let (token, record) = store.create(new, secret.bytes(), now)?;
            if json {
                let mut value = serde_json::to_value(&record)?;
                value["token"] = token.into();
                writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
            } else {
                writeln!(out, "{token}")?;
                let to = match record.role {
                    TokenRole::Metrics => "the /metrics of ",
                    TokenRole::Member | TokenRole::Auditor => "",
                };
                let _ = writeln!(
                    std::io::stderr(),
                    "token {} for {} ({}) made; it is shown only now. Clients send it as \
                     `Authorization: Bearer <token>` to {to}`thinkledger serve --http ADDR \
                     --auth`.",
                    record.id,
                    record.principal,
                    record.role.name()
                );
            }
        }
        TokenAction::List { json } => {
            let tokens = store.list()?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&tokens)?)?;
            } else {
                for t in &tokens {
                    writeln!(out, "{}", line(t, now))?;
                }
                if tokens.is_empty() {
                    writeln!(
                        out,
                        "no tokens; make one with `thinkledger token create --principal NAME`"
                    )?;
                }
            }
        }
        TokenAction::Revoke { id } => {
            let record = store.revoke(&id, now)?;
            writeln!(out, "{}", line(&record, now))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Where the tokens of the ledger at `place` are kept: the database's table for a ledger in
/// PostgreSQL (with the data dir's earlier tokens copied in), else the data dir's file.
pub fn tokens_of(place: &LedgerPlace) -> anyhow::Result<TokenStore> {
    let dir = &place.data_dir;
    thinkledger::ledger::private::dir(dir)
        .with_context(|| format!("cannot create the data dir {}", dir.display()))?;
    let file = TokenStore::in_dir(dir);
    let Some(url) = &place.store else {
        return Ok(file);
    };
    let store = TokenStore::in_database(thinkledger::ledger::pg::PgTokens::open(url)?);
    let copied = store.import(&file)?;
    if copied > 0 {
        tracing::info!(
            copied,
            from = %file.shown(),
            "tokens made before the ledger moved to its database copied into it; they are \
             managed there from now on (`thinkledger --store URL token …`)"
        );
    }
    Ok(store)
}

fn line(t: &TokenRecord, now: chrono::DateTime<chrono::Utc>) -> String {
    let state = match (t.revoked_at, t.expires_at) {
        (Some(at), _) => format!("revoked {}", at.to_rfc3339()),
        (None, Some(at)) if at <= now => format!("expired {}", at.to_rfc3339()),
        (None, Some(at)) => format!("expires {}", at.to_rfc3339()),
        (None, None) => "no expiry".to_owned(),
    };
    let grants = if t.user_ids.is_empty() {
        String::new()
    } else {
        format!(" userIds {}", t.user_ids.join(","))
    };
    format!(
        "{}  {}  {}  created {}  {state}{grants}",
        t.id,
        t.principal,
        t.role.name(),
        t.created_at.to_rfc3339()
    )
}
