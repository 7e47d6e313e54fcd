//! `thinkledger audit` (build an offline-verifiable export from the ledger) and
//! `thinkledger verify-export` (check one from its bytes alone), with progress bars on a
//! terminal. The export format and its checks live in the library's `audit` module; this file
//! only reads and writes files and prints.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use thinkledger::app::App;
use thinkledger::audit::{
    ExportOptions, ExportReport, Selection, VerifyOptions, verify_export_with, write_export,
};
use thinkledger::events::SessionId;
use thinkledger::ledger::LedgerHandle;
use thinkledger::ledger::format_timestamp;
use thinkledger::ledger::timestamps::KeptTimestamp;

use super::ledger::Io;

/// What `thinkledger audit` was asked for.
pub struct AuditRequest {
    pub selection: Selection,
    /// An earlier checkpoint's signed note, as a file, that the export must prove extended.
    pub since_checkpoint: Option<PathBuf>,
    /// Where to write the export; stdout when absent.
    pub output: Option<PathBuf>,
    /// The time-stamp tokens the ledger kept beside its checkpoints.
    pub timestamps: Vec<KeptTimestamp>,
}

/// The selection named on the command line: a session id, or a seq range.
pub fn selection(
    session: Option<&str>,
    from_seq: Option<u64>,
    to_seq: Option<u64>,
) -> anyhow::Result<Selection> {
    match (session, from_seq, to_seq) {
        (Some(raw), None, None) => {
            let session_id = SessionId::parse(raw).with_context(|| {
                format!("\"{raw}\" is not a session id; `thinkledger sessions` lists them")
            })?;
            Ok(Selection::Session { session_id })
        }
        (None, Some(from_seq), Some(to_seq)) => Ok(Selection::Range { from_seq, to_seq }),
        _ => bail!("name a session, or a range with both --from-seq and --to-seq"),
    }
}

/// A bar on stderr when a person is watching (and `shown`: a command run for another process
/// shows none), else nothing.
pub fn progress_bar(what: &'static str, shown: bool) -> ProgressBar {
    if !shown || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    if let Ok(style) =
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} events ({elapsed}, {eta} left)")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what);
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

fn read_text(path: &Path, what: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {what} {}", path.display()))
}

/// When the export says it was generated: now, or `SOURCE_DATE_EPOCH` (seconds since the
/// epoch, the reproducible-builds convention) when set, so that exports of one selection taken
/// from several servers of a shared ledger can be compared byte for byte.
fn generated_at() -> anyhow::Result<chrono::DateTime<chrono::Utc>> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Err(_) => Ok(chrono::Utc::now()),
        Ok(raw) => raw
            .trim()
            .parse::<i64>()
            .ok()
            .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
            .with_context(|| {
                format!("SOURCE_DATE_EPOCH={raw:?} is not a count of seconds since 1970")
            }),
    }
}

/// Signs a fresh checkpoint if the log grew, builds the export from `ledger` and writes it to
/// the output file (through `FILE.partial`, renamed once complete, so a refused or failed
/// export leaves nothing half-written) or to `io`'s standard output.
pub async fn audit(
    ledger: &LedgerHandle<App>,
    request: AuditRequest,
    io: &Io,
) -> anyhow::Result<u8> {
    let since = match &request.since_checkpoint {
        Some(path) => Some(read_text(path, "checkpoint file")?),
        None => None,
    };
    let partial = request.output.as_ref().map(|path| {
        let mut name = path.as_os_str().to_owned();
        name.push(".partial");
        PathBuf::from(name)
    });
    let sink: Box<dyn Write + Send> = match &partial {
        Some(path) => Box::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot write {}", path.display()))?,
        ),
        None => io.out.writer(),
    };
    let generated_at = format_timestamp(generated_at()?);
    let bar = progress_bar("proving", io.progress);
    let progress = bar.clone();
    let selection = request.selection.clone();
    let timestamps = request.timestamps;
    let built = match ledger.checkpoint().await {
        Ok(_) => {
            ledger
                .inspect(move |view| {
                    let mut sink = sink;
                    let report = |done: u64, total: u64| {
                        progress.set_length(total);
                        progress.set_position(done);
                    };
                    write_export(
                        view,
                        &selection,
                        &ExportOptions {
                            since_checkpoint: since.as_deref(),
                            generated_at,
                            progress: Some(&report),
                            cancelled: None,
                            timestamps: &timestamps,
                        },
                        &mut sink,
                    )
                })
                .await
        }
        Err(e) => Err(e),
    };
    bar.finish_and_clear();
    let failed = match built {
        Ok(Ok(written)) => Ok(written),
        Ok(Err(e)) => Err(anyhow::anyhow!(
            "cannot export: {e}\nsuggestion: {}",
            e.suggestion()
        )),
        Err(e) => Err(anyhow::Error::from(e)),
    };
    let written = failed.inspect_err(|_| {
        if let Some(partial) = &partial {
            let _ = std::fs::remove_file(partial);
        }
    })?;
    if let (Some(path), Some(partial)) = (&request.output, &partial) {
        std::fs::rename(partial, path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        writeln!(
            io.err.writer(),
            "wrote {} ({} events, {} bytes); check it with \
             `thinkledger verify-export {} --pubkey \"$(thinkledger key)\"`",
            path.display(),
            written.events,
            written.bytes,
            path.display()
        )?;
    }
    Ok(0)
}

/// What `thinkledger verify-export` was asked to check.
pub struct VerifyRequest {
    pub file: PathBuf,
    /// The ledger's verifier key, obtained out of band.
    pub pubkey: Option<String>,
    /// An earlier signed checkpoint the reviewer kept.
    pub since_checkpoint: Option<PathBuf>,
    /// The time-stamping authority's certificate the reviewer trusts.
    pub tsa_cert: Option<PathBuf>,
    pub json: bool,
}

/// Verifies an export offline; exit 0 when it passes, 2 when it fails.
pub fn verify_export(request: VerifyRequest) -> anyhow::Result<ExitCode> {
    let bytes = std::fs::read(&request.file)
        .with_context(|| format!("cannot read {}", request.file.display()))?;
    let since = match &request.since_checkpoint {
        Some(path) => Some(read_text(path, "checkpoint file")?),
        None => None,
    };
    let tsa_cert = match &request.tsa_cert {
        Some(path) => Some(std::fs::read(path).with_context(|| {
            format!(
                "cannot read the TSA certificate {}: give the PEM (or DER) certificate of the \
                 time-stamping authority, or of the CA that issued it",
                path.display()
            )
        })?),
        None => None,
    };
    let bar = progress_bar("verifying", true);
    let report_progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let report = verify_export_with(
        &bytes,
        &VerifyOptions {
            pubkey: request.pubkey.as_deref(),
            since_checkpoint: since.as_deref(),
            progress: Some(&report_progress),
            tsa_cert: tsa_cert.as_deref(),
        },
    );
    bar.finish_and_clear();
    let mut out = std::io::stdout().lock();
    if request.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        write!(out, "{}", render(&request.file, &report))?;
    }
    Ok(if report.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// The human report: a verdict line, what was checked, each problem on its own line, notes.
fn render(file: &Path, report: &ExportReport) -> String {
    let s = &report.summary;
    let selection = match &s.selection {
        Some(value) => value.to_string(),
        None => "(no selection)".to_owned(),
    };
    let mut out = if report.passed {
        format!("PASSED {}: ", file.display())
    } else {
        format!(
            "FAILED {}: {} problem(s) in ",
            file.display(),
            report.problems.len()
        )
    };
    out.push_str(&format!(
        "export of {selection} from ledger {}\n",
        s.ledger_id.as_deref().unwrap_or("?")
    ));
    out.push_str(&format!(
        "  {} events ({} selected, {} erasure events backing erased texts), {} texts re-hashed, {} erased\n",
        s.events, s.selected_events, s.erasure_events, s.texts_verified, s.texts_erased
    ));
    if let Some(size) = s.checkpoint_size {
        out.push_str(&format!("  checkpoint of the first {size} events\n"));
    }
    out.push_str(&format!(
        "  key {} ({})\n",
        s.public_key.as_deref().unwrap_or("(none usable)"),
        if s.key_pinned {
            "pinned with --pubkey"
        } else {
            "read from the file, NOT pinned"
        }
    ));
    if let Some(size) = s.extends_checkpoint {
        out.push_str(&format!(
            "  the log extends the given checkpoint of {size} events\n"
        ));
    }
    for stamp in &s.timestamps {
        out.push_str(&format!(
            "  the first {} events existed by {} (time-stamped by {})\n",
            stamp.checkpoint_size, stamp.gen_time, stamp.signer
        ));
    }
    for p in &report.problems {
        let seq = p.seq.map_or_else(String::new, |seq| format!("seq {seq} "));
        out.push_str(&format!("  {seq}{} at {}: {}\n", p.code, p.path, p.detail));
    }
    for note in &report.notes {
        out.push_str(&format!("  note: {note}\n"));
    }
    out
}
