//! The connection to a database: a deadpool pool on a small tokio runtime of its own, waited
//! on from any thread, over TLS trusting the system's certificates; and the URL as messages show
//! it (without its password).
//!
//! Must not know: any table or what the ledger keeps in it.

use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

use super::{db, pg_error};
use crate::ledger::LedgerError;

/// A pool and the runtime its connections live on.
pub(super) struct Conn {
    pub(super) runtime: Option<tokio::runtime::Runtime>,
    pub(super) pool: Pool,
    /// Where the database is, without the password, for messages.
    pub(super) shown: String,
}

impl Conn {
    pub(super) fn open(url: &str) -> Result<Self, LedgerError> {
        let config = tokio_postgres::Config::from_str(url)
            .map_err(|e| LedgerError::Database(format!("not a PostgreSQL URL ({e})")))?;
        let shown = shown_url(&config);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("thinkledger-pg")
            .enable_all()
            .build()?;
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        // TLS when the URL asks for it (`sslmode=require`), checked against the system's trust
        // store (and `SSL_CERT_FILE`); otherwise none, as `sslmode=prefer` falls back to.
        let manager = if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
            Manager::from_config(config, tls()?, manager_config)
        } else {
            Manager::from_config(config, NoTls, manager_config)
        };
        let pool = Pool::builder(manager)
            .max_size(8)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(db)?;
        Ok(Self {
            runtime: Some(runtime),
            pool,
            shown,
        })
    }

    /// Runs `work` with a pooled connection on the store's runtime and waits for it.
    pub(super) fn run<T, F, Fut>(&self, work: F) -> Result<T, LedgerError>
    where
        T: Send + 'static,
        F: FnOnce(deadpool_postgres::Object) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, tokio_postgres::Error>> + Send,
    {
        let pool = self.pool.clone();
        let shown = self.shown.clone();
        self.block(async move {
            let client = pool
                .get()
                .await
                .map_err(|e| LedgerError::Database(format!("cannot reach {shown}: {e}")))?;
            work(client).await.map_err(pg_error)
        })
    }

    pub(super) fn block<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, LedgerError>> + Send + 'static,
    ) -> Result<T, LedgerError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let runtime = self.runtime.as_ref().expect("runtime present until drop");
        runtime.spawn(async move {
            let _ = tx.send(work.await);
        });
        rx.recv().map_err(|_| {
            LedgerError::Database("the database task ended without an answer".into())
        })?
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A TLS connector trusting the system's certificate store (`SSL_CERT_FILE` and
/// `SSL_CERT_DIR` name others).
fn tls() -> Result<tokio_postgres_rustls::MakeRustlsConnect, LedgerError> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(LedgerError::Database(format!(
            "sslmode=require, but no trusted certificate was found ({} errors reading the \
             system's store); set SSL_CERT_FILE to the server's CA certificate",
            found.errors.len()
        )));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| LedgerError::Database(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// `postgres://user@host:port/db`, without a password.
pub(super) fn shown_url(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_default();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "postgres://{}@{host}:{port}/{}",
        config.get_user().unwrap_or(""),
        config.get_dbname().unwrap_or("")
    )
}
