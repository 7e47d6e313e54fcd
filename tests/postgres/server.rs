//! Real PostgreSQL servers for the integration tests and benchmarks: never a mock. Each
//! [`PgServer`] is a fresh cluster (`initdb`) in its own temporary directory, started with
//! `pg_ctl` on `127.0.0.1` on a free port of its own, so tests in one process (or several) can
//! run servers side by side. [`PgServer::start_sync_replica`] adds a streaming replica
//! (`pg_basebackup -R`) that the primary waits for on every commit, and
//! [`PgServer::promote`] turns a replica into a primary, for failover tests.
//!
//! The binaries are Debian's (`apt-get install postgresql`, which `.ci/run` does):
//! `/usr/lib/postgresql/<major>/bin`, the newest major installed; `THINKLEDGER_PG_BIN` names
//! another directory holding `initdb`, `pg_ctl`, `postgres`, `psql` and `pg_basebackup`.
//! Without them [`PgServer::start`] prints why and returns `None` (the test passes), unless
//! `CI=true`: CI must run these tests, so there it panics.
//!
//! `initdb`, `pg_ctl` and `postgres` refuse to run as root. As root (CI containers), they run
//! through `runuser -u postgres --` (the user Debian's package creates) or, when no such user
//! exists, as a system user `thinkledger-pg` created once with `useradd --system`. The
//! temporary directory is then chowned to that user and placed where it can reach it (under
//! `std::env::temp_dir()` when every parent directory is traversable by others and the path is
//! short enough for a Unix socket in it, else `/tmp` or `/var/tmp`).
//! Not root, everything runs as the current user.
//!
//! Layout of a server's directory: `pgdata/` (the cluster), `server.log` (`pg_ctl -l`; panics
//! quote its tail), and the Unix socket. Settings: `listen_addresses = '127.0.0.1'`,
//! `fsync = on`, `synchronous_commit = on`, `wal_level = replica`, `max_wal_senders = 5`,
//! `max_connections = 200`, `shared_buffers = 128MB`, `logging_collector = off`; `pg_hba.conf`
//! trusts every connection and replication on the socket and on 127.0.0.1 (`initdb
//! --auth=trust`). The superuser is `postgres`, with no password.
//!
//! `synchronous_commit = on` waits for the replica to flush the WAL, not to replay it: a read
//! on the replica just after a commit on the primary may not see it yet (poll, or use
//! `SET synchronous_commit = remote_apply`), but a promoted replica has every commit the
//! primary acknowledged. While a synchronous replica is down, the primary's commits wait for it.
//!
//! A dropped server is stopped (`pg_ctl stop -m immediate`) and its directory removed. A test
//! process killed outright (SIGKILL) leaves its servers running.

#![allow(dead_code)]

use std::collections::HashSet;
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// The cluster's superuser (`initdb -U`), whatever OS user runs the server.
const SUPERUSER: &str = "postgres";
/// The system user created to run the server as when root and no `postgres` user exists.
const FALLBACK_USER: &str = "thinkledger-pg";
/// How long a server may take to start, promote or get its replica in sync.
const DEADLINE: Duration = Duration::from_secs(30);
/// Attempts to start a server, each on a new port, when its port was taken meanwhile.
const START_ATTEMPTS: usize = 8;
/// Binaries a server needs.
const BINARIES: [&str; 5] = ["initdb", "pg_ctl", "postgres", "psql", "pg_basebackup"];
/// Appended to every cluster's postgresql.conf (port and socket directory go on the command
/// line: a replica copies this file).
const SETTINGS: &str = "
# tests/postgres/server.rs
listen_addresses = '127.0.0.1'
fsync = on
synchronous_commit = on
wal_level = replica
max_wal_senders = 5
max_connections = 200
shared_buffers = 128MB
logging_collector = off
";
const PG_HBA: &str = "\
# tests/postgres/server.rs: trust on the socket and on loopback, replication included
local all all trust
host all all 127.0.0.1/32 trust
local replication all trust
host replication all 127.0.0.1/32 trust
";

/// A running PostgreSQL server of its own, in a temporary directory removed on drop.
pub struct PgServer {
    install: &'static Install,
    /// Holds `pgdata/`, `server.log` and the Unix socket; owned by the server's OS user.
    root: TempDir,
    port: u16,
    /// Whether a postmaster may be running (stop and drop act only then).
    running: bool,
    /// Databases known to exist, so `url` creates each at most once.
    databases: Mutex<HashSet<String>>,
}

impl PgServer {
    /// Starts a fresh cluster on 127.0.0.1 on a free port. `None` when PostgreSQL is not
    /// installed and `CI` is not `true` (after one line on stderr saying why the test is
    /// skipped); panics when it is missing under `CI=true`.
    pub fn start() -> Option<PgServer> {
        let install = match install() {
            Ok(install) => install,
            Err(why) => {
                let ci = std::env::var("CI").is_ok_and(|v| v == "true");
                assert!(
                    !ci,
                    "CI=true but {why}: `apt-get install postgresql` (.ci/run does)"
                );
                eprintln!("skipped: {why}; `apt-get install postgresql` runs this test");
                return None;
            }
        };
        let mut server = PgServer::new(install);
        let initdb = server
            .server_command("initdb")
            .arg("-D")
            .arg(server.pgdata())
            .args([
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .output();
        server.expect_success("initdb", initdb);
        server.append_file(&server.pgdata().join("postgresql.conf"), SETTINGS);
        server.write_file(&server.pgdata().join("pg_hba.conf"), PG_HBA);
        server.launch();
        Some(server)
    }

    /// A URL for database `db`, e.g. `postgres://postgres@127.0.0.1:PORT/db`, creating the
    /// database (`CREATE DATABASE`) on the first request if it does not exist.
    #[track_caller]
    pub fn url(&self, db: &str) -> String {
        self.ensure_database(db);
        format!(
            "postgres://{SUPERUSER}@127.0.0.1:{}/{}",
            self.port,
            percent_encode(db)
        )
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Runs one SQL statement with `psql -XAtq -c` against database `db` and returns its
    /// stdout, trimmed (rows on lines, columns split by `|`). Panics when psql fails.
    #[track_caller]
    pub fn psql(&self, db: &str, sql: &str) -> String {
        match self.try_psql(db, sql) {
            Ok(out) => out,
            Err(e) => panic!("psql on port {} ({db}): {sql}\n{e}", self.port),
        }
    }

    /// Like [`PgServer::psql`], but a failure is returned (psql's stderr and exit status), for
    /// statements expected to fail (a write on a replica, a constraint violation).
    pub fn try_psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let conninfo = format!(
            "host=127.0.0.1 port={} user={SUPERUSER} dbname={} connect_timeout=10",
            self.port,
            conninfo_value(db)
        );
        let mut cmd = Command::new(self.install.bin.join("psql"));
        cmd.args(["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(conninfo)
            .arg("-c")
            .arg(sql);
        scrub_env(&mut cmd);
        match cmd.output() {
            Ok(out) if out.status.success() => {
                Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
            }
            Ok(out) => Err(format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => Err(format!(
                "could not run {}: {e}",
                self.install.bin.join("psql").display()
            )),
        }
    }

    /// Starts a streaming replica of this server (`pg_basebackup -R` into a new temporary
    /// directory, its own port) and makes this server's replication synchronous to it
    /// (`synchronous_standby_names` = the replica's `application_name`, `synchronous_commit =
    /// on`, reloaded), returning once `pg_stat_replication` shows it with `sync_state = 'sync'`.
    /// A later replica of the same server replaces this one as the synchronous one.
    pub fn start_sync_replica(&self) -> PgServer {
        static REPLICAS: AtomicUsize = AtomicUsize::new(1);
        let name = format!(
            "tl_replica_{}_{}",
            std::process::id(),
            REPLICAS.fetch_add(1, Ordering::Relaxed)
        );
        let conninfo = format!(
            "host=127.0.0.1 port={} user={SUPERUSER} application_name={name}",
            self.port
        );
        let mut replica = PgServer::new(self.install);
        let backup = replica
            .server_command("pg_basebackup")
            .arg("-D")
            .arg(replica.pgdata())
            .arg("-d")
            .arg(&conninfo)
            .args(["-X", "stream", "-R", "-c", "fast", "--no-sync"])
            .output();
        if !matches!(&backup, Ok(out) if out.status.success()) {
            panic!(
                "pg_basebackup from port {} failed: {}\n--- primary's log (tail) ---\n{}",
                self.port,
                describe(&backup),
                self.log_tail()
            );
        }
        // A primary that already had a synchronous replica passes its synchronous_standby_names
        // on (postgresql.auto.conf): once promoted, this one would wait for a standby of its own.
        let auto_conf = replica.pgdata().join("postgresql.auto.conf");
        let kept: String = fs::read_to_string(&auto_conf)
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.trim_start().starts_with("synchronous_standby_names"))
            .map(|line| format!("{line}\n"))
            .collect();
        replica.write_file(&auto_conf, &kept);
        // -R's own primary_conninfo names the replica too, with the OS user's passfile and
        // libpq's defaults spelled out; this later line, the whole of it, takes precedence.
        replica.append_file(
            &auto_conf,
            &format!("primary_conninfo = '{}'\n", conninfo.replace('\'', "''")),
        );
        replica.launch();

        self.psql(
            "postgres",
            &format!("ALTER SYSTEM SET synchronous_standby_names = '{name}'"),
        );
        self.psql("postgres", "ALTER SYSTEM SET synchronous_commit = on");
        self.psql("postgres", "SELECT pg_reload_conf()");
        let query =
            format!("SELECT sync_state FROM pg_stat_replication WHERE application_name = '{name}'");
        let mut state = String::new();
        if !poll(|| {
            state = self.try_psql("postgres", &query).unwrap_or_else(|e| e);
            state == "sync"
        }) {
            panic!(
                "replica {name} (port {}) not in sync with port {} after {DEADLINE:?} \
                 (sync_state: {state:?})\n--- primary's log (tail) ---\n{}\n\
                 --- replica's log (tail) ---\n{}",
                replica.port,
                self.port,
                self.log_tail(),
                replica.log_tail()
            );
        }
        replica
    }

    /// Promotes a replica (`pg_ctl promote -w`) and returns once it accepts writes
    /// (`pg_is_in_recovery()` is false).
    pub fn promote(&self) {
        let promote = self.pg_ctl(&["promote", "-w", "-t", "30"]);
        self.expect_success("pg_ctl promote", promote);
        let mut last = String::new();
        if !poll(|| {
            last = self
                .try_psql("postgres", "SELECT pg_is_in_recovery()")
                .unwrap_or_else(|e| e);
            last == "f"
        }) {
            panic!(
                "server on port {} still in recovery {DEADLINE:?} after promotion ({last})\n\
                 --- log (tail) ---\n{}",
                self.port,
                self.log_tail()
            );
        }
    }

    /// Stops this server (`pg_ctl stop -m fast -w`). Idempotent.
    pub fn stop(&mut self) {
        if !self.running {
            return;
        }
        let stop = self.pg_ctl(&["stop", "-m", "fast", "-w", "-t", "30"]);
        if !matches!(&stop, Ok(out) if out.status.success()) {
            // pg_ctl status exits with 3 when no server runs: it had stopped already.
            let status = self.pg_ctl(&["status"]);
            if !matches!(&status, Ok(out) if out.status.code() == Some(3)) {
                panic!(
                    "pg_ctl stop on port {} failed: {}\n--- log (tail) ---\n{}",
                    self.port,
                    describe(&stop),
                    self.log_tail()
                );
            }
        }
        self.running = false;
    }

    fn new(install: &'static Install) -> PgServer {
        let root = tempfile::Builder::new()
            .prefix("thinkledger-pg-")
            .tempdir_in(&install.base)
            .unwrap_or_else(|e| panic!("temporary directory in {}: {e}", install.base.display()));
        if let Some(user) = &install.run_as {
            std::os::unix::fs::chown(root.path(), Some(user.uid), Some(user.gid)).unwrap_or_else(
                |e| panic!("chown {} to {}: {e}", root.path().display(), user.name),
            );
        }
        PgServer {
            install,
            root,
            port: 0,
            running: false,
            databases: Mutex::new(HashSet::new()),
        }
    }

    pub fn pgdata(&self) -> PathBuf {
        self.root.path().join("pgdata")
    }

    fn log_path(&self) -> PathBuf {
        self.root.path().join("server.log")
    }

    /// Starts the postmaster of `pgdata/` on a free port, again on another port when that one
    /// was taken meanwhile, and waits until it answers `SELECT 1`.
    fn launch(&mut self) {
        for attempt in 1..=START_ATTEMPTS {
            self.port = free_port();
            let log_start = fs::metadata(self.log_path()).map(|m| m.len()).unwrap_or(0);
            let options = format!(
                "-p {} -k {}",
                self.port,
                shell_quote(&self.root.path().to_string_lossy())
            );
            // From here a postmaster may run (even when pg_ctl gives up waiting): drop stops it.
            self.running = true;
            let start = self
                .server_command("pg_ctl")
                .arg("-D")
                .arg(self.pgdata())
                .arg("-l")
                .arg(self.log_path())
                .args(["-w", "-t", "30", "-o"])
                .arg(&options)
                .arg("start")
                .output();
            if matches!(&start, Ok(out) if out.status.success()) {
                break;
            }
            let log = read_from(&self.log_path(), log_start);
            let port_taken = [
                "Address already in use",
                "could not bind",
                "could not create any TCP/IP sockets",
            ]
            .iter()
            .any(|needle| log.contains(needle));
            if port_taken && attempt < START_ATTEMPTS {
                self.running = false;
                continue;
            }
            panic!(
                "pg_ctl start on port {} failed: {}\n--- log (tail) ---\n{}",
                self.port,
                describe(&start),
                self.log_tail()
            );
        }
        let mut last = String::new();
        if !poll(|| {
            last = self.try_psql("postgres", "SELECT 1").unwrap_or_else(|e| e);
            last == "1"
        }) {
            panic!(
                "server on port {} not answering SELECT 1 after {DEADLINE:?} ({last})\n\
                 --- log (tail) ---\n{}",
                self.port,
                self.log_tail()
            );
        }
    }

    #[track_caller]
    fn ensure_database(&self, db: &str) {
        let mut known = lock(&self.databases);
        if known.contains(db) {
            return;
        }
        let exists = self.psql(
            "postgres",
            &format!(
                "SELECT count(*) FROM pg_database WHERE datname = '{}'",
                db.replace('\'', "''")
            ),
        );
        if exists != "1" {
            let create = format!("CREATE DATABASE \"{}\"", db.replace('"', "\"\""));
            if let Err(e) = self.try_psql("postgres", &create) {
                panic!("{create} on port {}: {e}", self.port);
            }
        }
        known.insert(db.to_owned());
    }

    /// `pg_ctl -D pgdata <args>`, as the server's OS user.
    fn pg_ctl(&self, args: &[&str]) -> std::io::Result<Output> {
        self.server_command("pg_ctl")
            .arg("-D")
            .arg(self.pgdata())
            .args(args)
            .output()
    }

    /// Turns TLS on (`ssl = on`, reloaded): a test CA and a server certificate for
    /// `127.0.0.1` signed by it are made with `openssl` as the server's user in the cluster
    /// directory. Returns the CA certificate's path, for a client to trust (`SSL_CERT_FILE`).
    pub fn enable_tls(&self) -> PathBuf {
        let script = "set -e
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=thinkledger-test-ca -keyout ca.key -out ca.crt 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
  -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' > server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
  -extfile server.ext -out server.crt 2>/dev/null
chmod 600 server.key
chmod 644 ca.crt";
        let mut cmd = match &self.install.run_as {
            Some(user) => {
                let mut cmd = Command::new(&user.runuser);
                cmd.arg("-u").arg(&user.name).arg("--").arg("sh");
                cmd
            }
            None => Command::new("sh"),
        };
        let made = cmd
            .arg("-c")
            .arg(script)
            .current_dir(self.pgdata())
            .output();
        self.expect_success("openssl (test certificates)", made);
        self.psql("postgres", "ALTER SYSTEM SET ssl = 'on'");
        self.psql("postgres", "SELECT pg_reload_conf()");
        let on = poll(|| {
            self.try_psql("postgres", "SHOW ssl")
                .is_ok_and(|v| v == "on")
        });
        assert!(on, "ssl did not turn on:\n{}", self.log_tail());
        self.pgdata().join("ca.crt")
    }

    /// A command running one of the server binaries as the server's OS user, in the server's
    /// directory, with no PG* variables of the caller's and the C locale.
    fn server_command(&self, program: &str) -> Command {
        let exe = self.install.bin.join(program);
        let mut cmd = match &self.install.run_as {
            Some(user) => {
                let mut cmd = Command::new(&user.runuser);
                cmd.arg("-u").arg(&user.name).arg("--").arg(exe);
                cmd
            }
            None => Command::new(exe),
        };
        cmd.current_dir(self.root.path()).env("LC_ALL", "C");
        scrub_env(&mut cmd);
        cmd
    }

    fn expect_success(&self, what: &str, result: std::io::Result<Output>) {
        if !matches!(&result, Ok(out) if out.status.success()) {
            panic!(
                "{what} ({}) failed: {}\n--- log (tail) ---\n{}",
                self.root.path().display(),
                describe(&result),
                self.log_tail()
            );
        }
    }

    /// Appends to a file of the cluster (root may write it; its owner stays the server's user).
    fn append_file(&self, path: &Path, text: &str) {
        fs::OpenOptions::new()
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .unwrap_or_else(|e| panic!("append to {}: {e}", path.display()));
    }

    /// Replaces an existing file's contents in place, keeping its owner.
    fn write_file(&self, path: &Path, text: &str) {
        fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// The last 60 lines of the server's log.
    fn log_tail(&self) -> String {
        let log = read_from(&self.log_path(), 0);
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if self.running {
            let _ = self.pg_ctl(&["stop", "-m", "immediate", "-w", "-t", "30"]);
            self.running = false;
        }
        // The TempDir removes the directory when dropped after this.
    }
}

/// Where and as whom servers run, found once per process.
struct Install {
    bin: PathBuf,
    /// `Some` when root: server binaries run through `runuser -u <user> --`.
    run_as: Option<RunAs>,
    /// The directory servers' temporary directories are made in.
    base: PathBuf,
}

struct RunAs {
    name: String,
    uid: u32,
    gid: u32,
    runuser: PathBuf,
}

/// The installation, or why there is none.
fn install() -> Result<&'static Install, String> {
    static INSTALL: OnceLock<Result<Install, String>> = OnceLock::new();
    INSTALL
        .get_or_init(|| {
            let bin = bin_dir()?;
            let run_as = (effective_uid() == Some(0)).then(unprivileged_user);
            let base = base_dir(run_as.is_some());
            Ok(Install { bin, run_as, base })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// `$THINKLEDGER_PG_BIN`, else the newest `/usr/lib/postgresql/<major>/bin` with every binary.
fn bin_dir() -> Result<PathBuf, String> {
    let complete = |dir: &Path| BINARIES.iter().all(|b| dir.join(b).is_file());
    if let Some(dir) = std::env::var_os("THINKLEDGER_PG_BIN") {
        let dir = PathBuf::from(dir);
        return if complete(&dir) {
            Ok(dir)
        } else {
            Err(format!(
                "THINKLEDGER_PG_BIN={} lacks one of {}",
                dir.display(),
                BINARIES.join(", ")
            ))
        };
    }
    let mut found: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let major = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            complete(&bin).then_some((major, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).ok_or_else(|| {
        format!(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin with {})",
            BINARIES.join(", ")
        )
    })
}

fn effective_uid() -> Option<u32> {
    let status = fs::read_to_string("/proc/self/status").ok();
    let from_proc = status.as_deref().and_then(|s| {
        let line = s.lines().find(|l| l.starts_with("Uid:"))?;
        line.split_whitespace().nth(2)?.parse().ok()
    });
    from_proc.or_else(|| {
        let out = Command::new("id").arg("-u").output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    })
}

/// As root: `postgres` if it exists, else `thinkledger-pg`, created (once) if need be.
fn unprivileged_user() -> RunAs {
    let runuser = sbin("runuser");
    let name = if ids("postgres").is_some() {
        "postgres"
    } else {
        if ids(FALLBACK_USER).is_none() {
            let out = Command::new(sbin("useradd"))
                .args([
                    "--system",
                    "--no-create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                    FALLBACK_USER,
                ])
                .output();
            // Another process may have created it meanwhile (useradd then fails): check again.
            if ids(FALLBACK_USER).is_none() {
                panic!(
                    "useradd --system {FALLBACK_USER} failed: {}",
                    describe(&out)
                );
            }
        }
        FALLBACK_USER
    };
    let (uid, gid) = ids(name).unwrap_or_else(|| panic!("no uid for {name}"));
    RunAs {
        name: name.to_owned(),
        uid,
        gid,
        runuser,
    }
}

/// A user's uid and primary gid (`id -u`, `id -g`).
fn ids(user: &str) -> Option<(u32, u32)> {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").arg(flag).arg(user).output().ok()?;
        if !out.status.success() {
            return None;
        }
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

/// `/usr/sbin/<name>` or `/sbin/<name>` (root's PATH may not be the test's), else `<name>`.
fn sbin(name: &str) -> PathBuf {
    ["/usr/sbin", "/sbin"]
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// `std::env::temp_dir()` if an unprivileged user can reach it (when `for_other_user`) and it
/// is short enough for a Unix socket path inside it, else `/tmp`, else `/var/tmp`.
fn base_dir(for_other_user: bool) -> PathBuf {
    let temp = std::env::temp_dir();
    let temp = fs::canonicalize(&temp).unwrap_or(temp);
    // sun_path holds 107 bytes: base + "/thinkledger-pg-XXXXXX" + "/.s.PGSQL.65535.lock".
    let fits = |dir: &Path| dir.as_os_str().len() <= 64 && dir.is_dir();
    let reachable = |dir: &Path| {
        !for_other_user
            || dir
                .ancestors()
                .all(|a| fs::metadata(a).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
    };
    [
        temp.clone(),
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
    ]
    .into_iter()
    .find(|dir| fits(dir) && reachable(dir))
    .unwrap_or_else(|| {
        assert!(
            !for_other_user,
            "no temporary directory the server's user can reach ({} nor /tmp nor /var/tmp)",
            temp.display()
        );
        temp
    })
}

/// A port nobody listened on a moment ago, never handed out before in this process.
fn free_port() -> u16 {
    static HANDED_OUT: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    let handed_out = HANDED_OUT.get_or_init(|| Mutex::new(HashSet::new()));
    loop {
        let port = TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| listener.local_addr())
            .unwrap_or_else(|e| panic!("bind 127.0.0.1:0: {e}"))
            .port();
        if lock(handed_out).insert(port) {
            return port;
        }
    }
}

/// Calls `ready` every 50 ms until it returns true (true) or `DEADLINE` passes (false).
fn poll(mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if ready() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Removes the caller's PG* variables (PGHOST, PGPORT, PGDATA, PGOPTIONS, ...).
fn scrub_env(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PG") {
            cmd.env_remove(key);
        }
    }
}

/// A file's contents from byte `offset` on (lossy), empty when unreadable.
fn read_from(path: &Path, offset: u64) -> String {
    let mut bytes = Vec::new();
    if let Ok(mut file) = fs::File::open(path) {
        let _ = file
            .seek(SeekFrom::Start(offset))
            .and_then(|_| file.read_to_end(&mut bytes));
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A command's exit status and output, for panic messages.
fn describe(result: &std::io::Result<Output>) -> String {
    match result {
        Ok(out) => format!(
            "{}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => format!("could not run: {e}"),
    }
}

/// A single-quoted word for sh (pg_ctl passes `-o` to the shell).
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// A libpq connection-string value: single-quoted, `\` and `'` escaped.
fn conninfo_value(value: &str) -> String {
    format!("'{}'", value.replace('\\', r"\\").replace('\'', r"\'"))
}

/// A URL path segment: unreserved characters kept, every other byte %-encoded.
fn percent_encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
