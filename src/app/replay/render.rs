//! The re-execution report as text: counts, then each divergent call with its differences, then
//! each skipped call with its reason.

use serde_json::Value;

use super::{CallCheck, ReexecutionReport, Verdict};

/// The report as text: one line of counts, then each divergent call with its differences, then
/// each skipped call with its reason.
#[must_use]
pub fn render_text(report: &ReexecutionReport) -> String {
    let mut out = format!(
        "session {}: {} calls, {} re-executed, {} matched, {} diverged, {} skipped\n",
        report.session_id,
        report.calls,
        report.reexecuted,
        report.matched,
        report.diverged,
        report.skipped
    );
    for call in &report.divergences {
        let Verdict::Diverged(d) = &call.verdict else {
            continue;
        };
        out.push_str(&format!(
            "DIVERGED seq {} {}{}: response digest {} recorded, {} re-derived",
            call.seq,
            call.tool,
            thought_label(call),
            short(&d.recorded_digest),
            short(&d.rederived_digest),
        ));
        if d.recorded_status != d.rederived_status {
            out.push_str(&format!(
                "; status {} recorded, {} re-derived",
                d.recorded_status, d.rederived_status
            ));
        }
        out.push('\n');
        for diff in &d.differences {
            out.push_str(&format!(
                "    {}: {} → {}\n",
                diff.path,
                compact(&diff.recorded),
                compact(&diff.rederived)
            ));
        }
        if d.differences.is_empty() {
            out.push_str(&format!(
                "    response body today: {}\n",
                compact(&d.rederived_body)
            ));
        }
    }
    for call in &report.skipped_calls {
        if let Verdict::Skipped { reason, detail } = &call.verdict {
            let reason = serde_json::to_value(reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            out.push_str(&format!(
                "skipped seq {} {}{}: {reason} — {detail}\n",
                call.seq,
                call.tool,
                thought_label(call)
            ));
        }
    }
    out
}

pub(super) fn thought_label(call: &CallCheck) -> String {
    call.thought_number
        .map_or_else(String::new, |n| format!(" (thought {n})"))
}

pub(super) fn short(digest: &str) -> String {
    digest.chars().take(12).collect::<String>() + "…"
}

/// One-line JSON, cut at 200 characters.
pub(super) fn compact(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 200 {
        return text;
    }
    text.chars().take(200).collect::<String>() + "…"
}
