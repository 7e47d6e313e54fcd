//! Bearer tokens: who may call a shared server, as whom, and in which role.
//!
//! `thinkledger token create` makes a token and prints it once; only its BLAKE3 hash is kept,
//! with the principal it names, its role (`member`, `auditor`, or `metrics`: a scraper's token,
//! good for `/metrics` and nothing else), the memory owners (`userId`s) it may act for besides
//! its own name, and when it expires or was revoked: in the data dir's `tokens.json` (mode
//! 0600), or, for a ledger in PostgreSQL (`--store`), in the database, where every node reads
//! it. A serving process reads the file again whenever it changes on disk, and the database
//! for every request, so a token made or revoked while it runs counts from the next request —
//! on every node.
//!
//! Owns the file and the check of a presented token. It decides nothing about what a principal
//! may see: that is the decision's (`app`), from the principal recorded in the event's actor.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ledger::hash::{hex, token_digest};
use crate::ledger::pg::PgTokens;
use crate::tools::{Principal, Role};

/// The file in the data dir that holds the tokens' hashes.
pub const TOKENS_FILE: &str = "tokens.json";

/// What every token starts with (so a leaked one is recognisable, e.g. by secret scanners).
pub const TOKEN_PREFIX: &str = "tlk_";

/// Longest principal name (and memory owner) a token may carry.
const MAX_NAME_LEN: usize = 256;

/// Why tokens could not be made, listed or checked.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a token file thinkledger wrote: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error("{path} is readable by others (mode {mode:o}); run `chmod 600 {path}`")]
    Exposed { path: PathBuf, mode: u32 },
    #[error("{0}")]
    Invalid(String),
    #[error("no token {0}; `thinkledger token list` shows the ids")]
    UnknownId(String),
    #[error("the tokens' database: {0}")]
    Database(String),
}

/// What a token is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenRole {
    /// A principal that reads and writes its own sessions, deliberations and memories.
    #[default]
    Member,
    /// A principal that reads everything and writes nothing; may also read `/metrics`.
    Auditor,
    /// A metrics scraper (Prometheus): reads `/metrics` only; no principal, refused by `/mcp`
    /// and the reviewer's page. (A server older than this role refuses every token of a file
    /// holding one, rather than taking it for a member's.)
    Metrics,
}

impl TokenRole {
    /// The role a principal of this token acts in, if it is one.
    fn principal_role(self) -> Option<Role> {
        match self {
            Self::Member => Some(Role::Member),
            Self::Auditor => Some(Role::Auditor),
            Self::Metrics => None,
        }
    }

    /// Whether the token may read `/metrics` on a server with `--auth`: a scraper's, or an
    /// auditor's (who may read every principal's call counts already, in
    /// `reasoning://telemetry/summary`). A member's may not.
    pub fn may_read_metrics(self) -> bool {
        matches!(self, Self::Metrics | Self::Auditor)
    }

    /// Its name, as `token create --role` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Member => "member",
            Self::Auditor => "auditor",
            Self::Metrics => "metrics",
        }
    }
}

/// One token as the data dir keeps it (never the token itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenRecord {
    /// Short public id, for `token list` and `token revoke`.
    pub id: String,
    pub principal: String,
    pub role: TokenRole,
    /// Memory owners this token may act for besides `principal`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_ids: Vec<String>,
    pub created_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<DateTime<Utc>>,
    /// Hex BLAKE3 of the token's UTF-8 bytes.
    pub hash: String,
}

impl TokenRecord {
    /// Whether this token is usable at `now`.
    pub fn live_at(&self, now: DateTime<Utc>) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|at| now < at)
    }

    /// The principal the token authenticates; `None` for a scraper's token, which has none.
    fn principal(&self) -> Option<Principal> {
        Some(Principal {
            name: self.principal.clone(),
            role: self.role.principal_role()?,
            user_ids: self.user_ids.clone(),
        })
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TokenFile {
    tokens: Vec<TokenRecord>,
}

/// What `token create` asks for.
#[derive(Debug, Clone)]
pub struct NewToken {
    pub principal: String,
    pub role: TokenRole,
    pub user_ids: Vec<String>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// Where a server's tokens are kept: the data dir's token file, or — for the nodes of a
/// ledger in PostgreSQL — the database's `thinkledger_tokens` table, so that a token made or
/// revoked through any node counts on every node from its next request.
#[derive(Debug, Clone)]
pub struct TokenStore {
    place: TokenPlace,
}

#[derive(Debug, Clone)]
enum TokenPlace {
    File(PathBuf),
    Database(PgTokens),
}

impl TokenStore {
    /// The token file of the data dir `dir`.
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            place: TokenPlace::File(dir.join(TOKENS_FILE)),
        }
    }

    /// The tokens' table of a database every node of a ledger shares.
    pub fn in_database(tokens: PgTokens) -> Self {
        Self {
            place: TokenPlace::Database(tokens),
        }
    }

    /// Where the tokens are, for messages.
    pub fn shown(&self) -> String {
        match &self.place {
            TokenPlace::File(path) => path.display().to_string(),
            TokenPlace::Database(tokens) => {
                format!("the thinkledger_tokens table of {}", tokens.shown())
            }
        }
    }

    /// Every token ever made here, revoked and expired ones included.
    pub fn list(&self) -> Result<Vec<TokenRecord>, AuthError> {
        match &self.place {
            TokenPlace::File(_) => Ok(self.read()?.tokens),
            TokenPlace::Database(tokens) => tokens
                .all()
                .map_err(database)?
                .iter()
                .map(|json| decode_record(json))
                .collect(),
        }
    }

    /// The record of the token whose hash is `hash`, read afresh.
    fn by_hash(&self, hash: &str) -> Result<Option<TokenRecord>, AuthError> {
        match &self.place {
            TokenPlace::File(_) => Ok(self.read()?.tokens.into_iter().find(|t| t.hash == hash)),
            TokenPlace::Database(tokens) => tokens
                .by_hash(hash)
                .map_err(database)?
                .map(|json| decode_record(&json))
                .transpose(),
        }
    }

    /// Copies into this (database) store the records of `file` it does not hold yet, a
    /// deployment's tokens made before its ledger moved to the database; how many.
    pub fn import(&self, file: &TokenStore) -> Result<usize, AuthError> {
        let TokenPlace::Database(tokens) = &self.place else {
            return Ok(0);
        };
        let mut copied = 0;
        for record in file.list()? {
            let json = serde_json::to_string(&record).expect("token records serialize");
            if tokens
                .insert(&record.id, &record.hash, &json)
                .map_err(database)?
            {
                copied += 1;
            }
        }
        Ok(copied)
    }

    /// Makes a token from 32 bytes of `secret` randomness at `now`; returns it (to be shown
    /// once) and its record (kept).
    pub fn create(
        &self,
        new: NewToken,
        secret: &[u8; 32],
        now: DateTime<Utc>,
    ) -> Result<(String, TokenRecord), AuthError> {
        check_name("--principal", &new.principal)?;
        for user in &new.user_ids {
            check_name("--user-id", user)?;
        }
        if new.expires_at.is_some_and(|at| at <= now) {
            return Err(AuthError::Invalid(
                "--expires is in the past; give a duration such as 30d or 12h".into(),
            ));
        }
        let token = format!(
            "{TOKEN_PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret)
        );
        let hash = hex(&token_digest(&token));
        let record = TokenRecord {
            // The id is derived from the hash, so it says nothing of the token either.
            id: hash[..12].to_owned(),
            principal: new.principal,
            role: new.role,
            user_ids: new.user_ids,
            created_at: now,
            expires_at: new.expires_at,
            revoked_at: None,
            hash,
        };
        match &self.place {
            TokenPlace::File(_) => {
                let mut file = self.read()?;
                file.tokens.push(record.clone());
                self.write(&file)?;
            }
            TokenPlace::Database(tokens) => {
                let json = serde_json::to_string(&record).expect("token records serialize");
                if !tokens
                    .insert(&record.id, &record.hash, &json)
                    .map_err(database)?
                {
                    return Err(AuthError::Invalid(
                        "a token with this id exists already; run the command again".into(),
                    ));
                }
            }
        }
        Ok((token, record))
    }

    /// Revokes the token `id` at `now` (it stays listed, as revoked).
    pub fn revoke(&self, id: &str, now: DateTime<Utc>) -> Result<TokenRecord, AuthError> {
        match &self.place {
            TokenPlace::File(_) => {
                let mut file = self.read()?;
                let record = file
                    .tokens
                    .iter_mut()
                    .find(|t| t.id == id)
                    .ok_or_else(|| AuthError::UnknownId(id.to_owned()))?;
                record.revoked_at.get_or_insert(now);
                let record = record.clone();
                self.write(&file)?;
                Ok(record)
            }
            TokenPlace::Database(tokens) => {
                let changed = tokens
                    .update(id, move |json| {
                        let mut record: TokenRecord =
                            serde_json::from_str(&json).map_err(|e| e.to_string())?;
                        record.revoked_at.get_or_insert(now);
                        serde_json::to_string(&record).map_err(|e| e.to_string())
                    })
                    .map_err(database)?
                    .ok_or_else(|| AuthError::UnknownId(id.to_owned()))?;
                decode_record(&changed)
            }
        }
    }

    /// The token file's path (the file backend only).
    fn file(&self) -> &Path {
        match &self.place {
            TokenPlace::File(path) => path,
            TokenPlace::Database(_) => Path::new(TOKENS_FILE),
        }
    }

    fn read(&self) -> Result<TokenFile, AuthError> {
        let path = self.file().to_path_buf();
        let io = |source| AuthError::Io {
            path: path.clone(),
            source,
        };
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TokenFile::default()),
            Err(e) => return Err(io(e)),
        };
        check_private(&file, &path)?;
        serde_json::from_reader(std::io::BufReader::new(file)).map_err(|e| AuthError::Corrupt {
            path: path.clone(),
            reason: e.to_string(),
        })
    }

    /// Writes the whole file anew beside the old one and renames it over it (mode 0600).
    fn write(&self, file: &TokenFile) -> Result<(), AuthError> {
        let path = self.file().to_path_buf();
        let io = |source| AuthError::Io {
            path: path.clone(),
            source,
        };
        let fresh = path.with_extension("json.new");
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut out = options.open(&fresh).map_err(io)?;
        let mut bytes = serde_json::to_vec_pretty(file).expect("token records serialize");
        bytes.push(b'\n');
        out.write_all(&bytes).map_err(io)?;
        out.sync_all().map_err(io)?;
        std::fs::rename(&fresh, &path).map_err(io)?;
        if let Some(dir) = path.parent() {
            File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
        }
        Ok(())
    }
}

fn database(e: crate::ledger::LedgerError) -> AuthError {
    AuthError::Database(e.to_string())
}

fn decode_record(json: &str) -> Result<TokenRecord, AuthError> {
    serde_json::from_str(json).map_err(|e| {
        AuthError::Database(format!(
            "a row of thinkledger_tokens is not a token record thinkledger wrote: {e}"
        ))
    })
}

fn check_name(flag: &str, name: &str) -> Result<(), AuthError> {
    if name.trim().is_empty()
        || name.len() > MAX_NAME_LEN
        || name.chars().any(char::is_control)
        || name != name.trim()
    {
        return Err(AuthError::Invalid(format!(
            "{flag} {name:?}: give a non-empty name of at most {MAX_NAME_LEN} bytes, without control characters or surrounding blanks"
        )));
    }
    if name == crate::tools::LOCAL_PRINCIPAL {
        return Err(AuthError::Invalid(format!(
            "{flag} {name:?} is the name of the unauthenticated process owner; choose another"
        )));
    }
    Ok(())
}

#[cfg(unix)]
fn check_private(file: &File, path: &Path) -> Result<(), AuthError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = file
        .metadata()
        .map_err(|source| AuthError::Io {
            path: path.to_owned(),
            source,
        })?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(AuthError::Exposed {
            path: path.to_owned(),
            mode: mode & 0o777,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_: &File, _: &Path) -> Result<(), AuthError> {
    Ok(())
}

/// Why a presented token was not accepted (the 401's `error_description`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No `Authorization: Bearer` header (or cookie) at all.
    Missing,
    /// A token this server does not know.
    Unknown,
    Expired,
    Revoked,
    /// The token file could not be read: nobody gets in until it can.
    Unavailable,
    /// A scraper's token (`--role metrics`) presented anywhere but `/metrics`.
    MetricsOnly,
    /// A member's token presented to `/metrics`.
    NotForMetrics,
}

impl Refusal {
    pub fn describe(self) -> &'static str {
        match self {
            Self::Missing => "this server requires a bearer token",
            Self::Unknown => "the bearer token is not known to this server",
            Self::Expired => "the bearer token has expired",
            Self::Revoked => "the bearer token was revoked",
            Self::Unavailable => "the server cannot read its tokens",
            Self::MetricsOnly => "the bearer token is a metrics scraper's: it reads /metrics only",
            Self::NotForMetrics => {
                "the bearer token may not read /metrics: use a token made with --role metrics \
                 (or an auditor's)"
            }
        }
    }

    /// Whether the token is good but not for this: 403 (RFC 6750 `insufficient_scope`) rather
    /// than 401.
    pub fn is_forbidden(self) -> bool {
        matches!(self, Self::MetricsOnly | Self::NotForMetrics)
    }
}

/// Checks presented tokens against the token file, read again whenever it changes on disk.
#[derive(Debug)]
pub struct Authenticator {
    store: TokenStore,
    cache: Mutex<Option<Cached>>,
}

#[derive(Debug)]
struct Cached {
    stamp: (Option<SystemTime>, u64),
    tokens: Vec<TokenRecord>,
}

impl Authenticator {
    pub fn new(store: TokenStore) -> Self {
        Self {
            store,
            cache: Mutex::new(None),
        }
    }

    /// The principal of `token` at `now`, or why it is refused (a scraper's token has none).
    pub fn authenticate(&self, token: &str, now: DateTime<Utc>) -> Result<Principal, Refusal> {
        self.live(token, now)?
            .principal()
            .ok_or(Refusal::MetricsOnly)
    }

    /// Whether `token` may read `/metrics` at `now` ([`TokenRole::may_read_metrics`]), or why
    /// not.
    pub fn may_read_metrics(&self, token: &str, now: DateTime<Utc>) -> Result<(), Refusal> {
        if self.live(token, now)?.role.may_read_metrics() {
            Ok(())
        } else {
            Err(Refusal::NotForMetrics)
        }
    }

    /// The record of `token` if it is usable at `now`, or why it is refused. A database's
    /// tokens are read afresh for every request (a revocation on any node counts at once); a
    /// token file again whenever it changed on disk.
    fn live(&self, token: &str, now: DateTime<Utc>) -> Result<TokenRecord, Refusal> {
        let hash = hex(&token_digest(token));
        let record = match &self.store.place {
            TokenPlace::Database(_) => match self.store.by_hash(&hash) {
                Ok(record) => record.ok_or(Refusal::Unknown)?,
                Err(e) => {
                    tracing::error!(error = %e, "tokens unreadable: refusing the request");
                    return Err(Refusal::Unavailable);
                }
            },
            TokenPlace::File(path) => self.in_file(path, &hash)?,
        };
        if record.revoked_at.is_some() {
            return Err(Refusal::Revoked);
        }
        if !record.live_at(now) {
            return Err(Refusal::Expired);
        }
        Ok(record)
    }

    fn in_file(&self, path: &Path, hash: &str) -> Result<TokenRecord, Refusal> {
        let stamp = std::fs::metadata(path)
            .map(|m| (m.modified().ok(), m.len()))
            .unwrap_or((None, 0));
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.as_ref().is_none_or(|c| c.stamp != stamp) {
            match self.store.list() {
                Ok(tokens) => *cache = Some(Cached { stamp, tokens }),
                Err(e) => {
                    tracing::error!(error = %e, "token file unreadable: refusing every request");
                    *cache = None;
                    return Err(Refusal::Unavailable);
                }
            }
        }
        let tokens = &cache.as_ref().expect("filled above").tokens;
        // Compared as digests: how long a comparison takes tells nothing of the token.
        tokens
            .iter()
            .find(|t| t.hash == hash)
            .cloned()
            .ok_or(Refusal::Unknown)
    }
}

/// Where the protected-resource metadata (RFC 9728) of a server with tokens is served.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The realm every `WWW-Authenticate` challenge names.
const REALM: &str = "thinkledger";

/// Takes the request's principal from its `Authorization: Bearer` token, or refuses the request:
/// 401 with a `WWW-Authenticate` challenge (RFC 6750) pointing at the metadata (RFC 9728).
pub async fn require_bearer(
    auth: std::sync::Arc<Authenticator>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let outcome = match presented(&request) {
        None => Err(Refusal::Missing),
        Some(token) => auth.authenticate(
            token,
            crate::effects::Effects::now(&crate::effects::SystemEffects),
        ),
    };
    match outcome {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(refusal) => {
            tracing::info!(refusal = refusal.describe(), path = %request.uri().path(), "request refused: not authenticated");
            unauthorized(&request, refusal)
        }
    }
}

/// Lets the request through to `/metrics` when its bearer token may read the metrics
/// ([`Authenticator::may_read_metrics`]): 401 without a usable token, 403 with a member's.
pub async fn require_metrics_reader(
    auth: std::sync::Arc<Authenticator>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let outcome = match presented(&request) {
        None => Err(Refusal::Missing),
        Some(token) => auth.may_read_metrics(
            token,
            crate::effects::Effects::now(&crate::effects::SystemEffects),
        ),
    };
    match outcome {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            tracing::info!(refusal = refusal.describe(), path = %request.uri().path(), "request refused: not authenticated");
            unauthorized(&request, refusal)
        }
    }
}

/// The bearer token a request presents, if any.
fn presented(request: &axum::extract::Request) -> Option<&str> {
    request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer)
}

/// The token of an `Authorization` value `Bearer <token>` (scheme case-insensitive).
pub fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn unauthorized(request: &axum::extract::Request, refusal: Refusal) -> axum::response::Response {
    use axum::response::IntoResponse;
    let metadata = format!("{}{METADATA_PATH}", origin(request));
    let challenge = match refusal {
        Refusal::Missing => format!("Bearer realm=\"{REALM}\", resource_metadata=\"{metadata}\""),
        other if other.is_forbidden() => format!(
            "Bearer realm=\"{REALM}\", error=\"insufficient_scope\", error_description=\"{}\", resource_metadata=\"{metadata}\"",
            other.describe()
        ),
        other => format!(
            "Bearer realm=\"{REALM}\", error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{metadata}\"",
            other.describe()
        ),
    };
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32001,
            "message": format!(
                "{}: {}",
                if refusal.is_forbidden() { "forbidden" } else { "unauthenticated" },
                refusal.describe()
            ),
            "data": {"suggestion": "send Authorization: Bearer <token>; the server's operator makes tokens with `thinkledger token create --principal NAME`"},
        },
    });
    let status = if refusal.is_forbidden() {
        axum::http::StatusCode::FORBIDDEN
    } else {
        axum::http::StatusCode::UNAUTHORIZED
    };
    (
        status,
        [
            (axum::http::header::WWW_AUTHENTICATE, challenge),
            (
                axum::http::header::CONTENT_TYPE,
                "application/json".to_owned(),
            ),
        ],
        body.to_string(),
    )
        .into_response()
}

/// `http://host` of a request, from its Host header (the DNS-rebinding guard checks it).
fn origin(request: &axum::extract::Request) -> String {
    let host = request
        .headers()
        .get(axum::http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    format!("http://{host}")
}

/// The protected-resource metadata (RFC 9728) of `/mcp`. It names no authorization server:
/// tokens are issued out of band by the operator (`thinkledger token create`).
pub async fn protected_resource_metadata(
    request: axum::extract::Request,
) -> axum::Json<serde_json::Value> {
    let origin = origin(&request);
    axum::Json(serde_json::json!({
        "resource": format!("{origin}/mcp"),
        "resource_name": "thinkledger",
        "bearer_methods_supported": ["header"],
    }))
}

/// A duration such as `30d`, `12h`, `90m` or `3600s`, for `--expires`.
pub fn parse_duration(text: &str) -> Result<chrono::Duration, String> {
    let text = text.trim();
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: i64 = number
        .parse()
        .map_err(|_| format!("{text:?}: give a number and a unit, e.g. 30d, 12h, 90m"))?;
    let duration = match unit {
        "d" => chrono::Duration::try_days(n),
        "h" => chrono::Duration::try_hours(n),
        "m" => chrono::Duration::try_minutes(n),
        "s" | "" => chrono::Duration::try_seconds(n),
        _ => None,
    };
    duration
        .filter(|d| *d > chrono::Duration::zero())
        .ok_or_else(|| format!("{text:?}: give a positive number with d, h, m or s, e.g. 30d"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_790_000_000 + seconds, 0).unwrap()
    }

    fn new(principal: &str) -> NewToken {
        NewToken {
            principal: principal.into(),
            role: TokenRole::Member,
            user_ids: vec![],
            expires_at: None,
        }
    }

    #[test]
    fn a_token_is_kept_only_as_its_hash_and_authenticates_its_principal() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_dir(dir.path());
        let (token, record) = store.create(new("alice"), &[7; 32], at(0)).unwrap();
        assert!(token.starts_with(TOKEN_PREFIX));
        let stored = std::fs::read_to_string(store.file()).unwrap();
        assert!(!stored.contains(&token[TOKEN_PREFIX.len()..]));
        assert!(stored.contains(&record.hash));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.file())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let auth = Authenticator::new(store.clone());
        let principal = auth.authenticate(&token, at(1)).unwrap();
        assert_eq!(principal.name, "alice");
        assert_eq!(principal.role, Role::Member);
        assert_eq!(auth.authenticate("tlk_nope", at(1)), Err(Refusal::Unknown));
    }

    #[test]
    fn expiry_and_revocation_count_from_the_next_request() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_dir(dir.path());
        let expiring = NewToken {
            expires_at: Some(at(100)),
            ..new("bob")
        };
        let (soon, _) = store.create(expiring, &[1; 32], at(0)).unwrap();
        let (kept, record) = store.create(new("carol"), &[2; 32], at(0)).unwrap();
        let auth = Authenticator::new(store.clone());
        assert!(auth.authenticate(&soon, at(99)).is_ok());
        assert_eq!(auth.authenticate(&soon, at(100)), Err(Refusal::Expired));
        assert!(auth.authenticate(&kept, at(1)).is_ok());
        store.revoke(&record.id, at(2)).unwrap();
        assert_eq!(auth.authenticate(&kept, at(3)), Err(Refusal::Revoked));
        assert!(matches!(
            store.revoke("nope", at(4)),
            Err(AuthError::UnknownId(_))
        ));
    }

    #[test]
    fn a_scrapers_token_reads_metrics_only_and_a_members_may_not_read_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_dir(dir.path());
        let role = |role, principal| NewToken {
            role,
            ..new(principal)
        };
        let (scraper, _) = store
            .create(role(TokenRole::Metrics, "prometheus"), &[5; 32], at(0))
            .unwrap();
        let (auditor, _) = store
            .create(role(TokenRole::Auditor, "carol"), &[6; 32], at(0))
            .unwrap();
        let (member, _) = store.create(new("alice"), &[7; 32], at(0)).unwrap();
        assert!(
            std::fs::read_to_string(store.file())
                .unwrap()
                .contains("\"role\": \"metrics\"")
        );
        let auth = Authenticator::new(store);
        assert_eq!(
            auth.authenticate(&scraper, at(1)),
            Err(Refusal::MetricsOnly)
        );
        assert_eq!(auth.may_read_metrics(&scraper, at(1)), Ok(()));
        assert_eq!(auth.may_read_metrics(&auditor, at(1)), Ok(()));
        assert_eq!(
            auth.may_read_metrics(&member, at(1)),
            Err(Refusal::NotForMetrics)
        );
        assert_eq!(
            auth.may_read_metrics("tlk_nope", at(1)),
            Err(Refusal::Unknown)
        );
        assert!(Refusal::NotForMetrics.is_forbidden() && !Refusal::Unknown.is_forbidden());
    }

    #[test]
    fn a_bearer_value_names_its_token() {
        assert_eq!(bearer("Bearer tlk_abc"), Some("tlk_abc"));
        assert_eq!(bearer("bearer  tlk_abc "), Some("tlk_abc"));
        assert_eq!(bearer("Basic dXNlcg=="), None);
        assert_eq!(bearer("Bearer "), None);
    }

    #[test]
    fn names_and_durations_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_dir(dir.path());
        for bad in ["", " alice", "local", "a\nb"] {
            assert!(store.create(new(bad), &[3; 32], at(0)).is_err(), "{bad:?}");
        }
        assert_eq!(parse_duration("30d").unwrap(), chrono::Duration::days(30));
        assert_eq!(
            parse_duration("90m").unwrap(),
            chrono::Duration::minutes(90)
        );
        assert!(parse_duration("0d").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_token_file_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_dir(dir.path());
        let (token, _) = store.create(new("dave"), &[4; 32], at(0)).unwrap();
        std::fs::set_permissions(store.file(), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(store.list(), Err(AuthError::Exposed { .. })));
        let auth = Authenticator::new(store);
        assert_eq!(auth.authenticate(&token, at(1)), Err(Refusal::Unavailable));
    }
}
