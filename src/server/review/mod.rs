//! The reviewer's web page at `/review`: sessions, their timelines, thought trees and
//! deliberation graphs, diffs, audit exports and the chain's checkpoint status, for compliance
//! reviewers without an MCP client. Server-rendered HTML and inline SVG, no JavaScript, no
//! resource from anywhere else.
//!
//! Owns the routes (`router`), who the viewer is (`login`: the token cookie, checked again on
//! every request), what a viewer may see and the reads behind each page (`read`), the pages
//! (`pages`, `session`) and the drawings (`svg`). Every caller-written text reaches the page
//! through maud's `(…)` splices, which escape it for HTML and for the SVG's XML alike; nothing
//! here writes markup from a string by hand.
//!
//! Pages read the published state and, for the timeline, the erasure reasons and the checkpoint
//! status, the log through the app's own functions (`replay::timeline` over a page of events,
//! `export::diff`): what `replay_reasoning_session` and `diff_sessions` compute, without
//! recording each look. The export download is an `export_reasoning_audit` call as the viewer
//! (transport `review`), decided by the tools' isolation and recorded. Who may see a session is
//! the tools' rule (`app::call::access::may_read`). See docs/review.md. Must not know: the MCP wire (tools are called in process, as the
//! agent calls them), the token file's format (only `Authenticator::authenticate`).

mod calls;
mod login;
mod memories;
mod pages;
mod read;
mod search;
mod session;
mod svg;

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::HttpConfig;
use super::auth::Authenticator;
use crate::app::App;
use crate::ledger::LedgerHandle;
use crate::tools::Catalog;
use crate::tools::quotas::Quotas;

pub use login::COOKIE_NAME;

/// How the viewers of the page are identified.
#[derive(Clone)]
pub enum Viewers {
    /// No authentication configured: every viewer is the process owner,
    /// `Principal::member(LOCAL_PRINCIPAL)`. Only sensible on loopback; requests whose `Host`
    /// is not one of the server's allowed hosts are refused, so a page on another site cannot
    /// read these pages through DNS rebinding.
    Open,
    /// Each viewer logs in with a bearer token (`thinkledger token create`), kept in a cookie
    /// and checked again on every request, so a revoked or expired token counts at once.
    Tokens(Arc<Authenticator>),
    /// The principal an authenticating reverse proxy names in this header
    /// (`HttpConfig::principal_header`); a request without it is refused.
    Proxied(HeaderName),
}

impl Viewers {
    /// The viewers of a server configured as `config`, as `/mcp` identifies its callers: the
    /// proxy's header when there is one, else bearer tokens when configured, else the process
    /// owner.
    pub fn of(config: &HttpConfig) -> Self {
        match (&config.principal_header, &config.auth) {
            (Some(header), _) => Self::Proxied(header.clone()),
            (None, Some(tokens)) => Self::Tokens(tokens.clone()),
            (None, None) => Self::Open,
        }
    }
}

/// What every handler of the page shares.
struct Review {
    ledger: LedgerHandle<App>,
    catalog: Arc<Catalog>,
    viewers: Viewers,
    /// The `Host` values accepted (the server's allowed hosts; empty accepts any).
    allowed_hosts: Vec<String>,
    /// The server's per-principal quotas, which the page's calls count against.
    quotas: Arc<Quotas>,
}

/// The page's routes, every path under `/review`, with their security headers. `config`
/// gives the allowed hosts (the DNS-rebinding guard, as `/mcp` has it); the page's own calls
/// (the export) count against `quotas`, the server's per-principal quotas.
pub fn router(
    ledger: LedgerHandle<App>,
    catalog: Arc<Catalog>,
    viewers: Viewers,
    config: &HttpConfig,
    quotas: Arc<Quotas>,
) -> axum::Router {
    let review = Arc::new(Review {
        ledger,
        catalog,
        viewers,
        allowed_hosts: config.allowed_hosts.clone(),
        quotas,
    });
    let guard = review.clone();
    axum::Router::new()
        .route("/review", get(pages::sessions))
        .route("/review/", get(pages::sessions))
        .route("/review/login", get(login::form).post(login::log_in))
        .route("/review/logout", post(login::log_out))
        .route("/review/session/{id}", get(session::page))
        .route(
            "/review/session/{id}/export",
            get(pages::export).post(pages::export_since_checkpoint),
        )
        .route("/review/search", get(search::search))
        .route("/review/refusals", get(search::refusals))
        .route("/review/memories", get(memories::page))
        .route("/review/diff", get(pages::diff))
        .route("/review/verify", get(pages::verify))
        .fallback(pages::not_found)
        .with_state(review)
        .layer(axum::middleware::from_fn(move |request, next| {
            guarded(guard.clone(), request, next)
        }))
}

/// The headers of every review response: no script, style or image from anywhere but the page
/// itself, forms posted only here, never framed, no referrer, no type sniffing, not cached.
const SECURITY_HEADERS: &[(&str, &str)] = &[
    (
        "content-security-policy",
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; \
         frame-ancestors 'none'; base-uri 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
    ("cache-control", "no-store"),
];

/// Refuses a request for a host the server does not serve (403) or a form posted from another
/// origin (403), then adds [`SECURITY_HEADERS`] to whatever the route answers.
async fn guarded(review: Arc<Review>, request: Request, next: Next) -> Response {
    let refusal = if !host_allowed(request.headers(), &review.allowed_hosts) {
        Some("this server does not answer for that host name")
    } else if request.method() == axum::http::Method::POST && !same_origin(request.headers()) {
        Some("forms of this page are accepted only from this page")
    } else {
        None
    };
    let mut response = match refusal {
        Some(why) => (StatusCode::FORBIDDEN, why).into_response(),
        None => next.run(request).await,
    };
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers.insert(*name, HeaderValue::from_static(value));
    }
    response
}

/// The host name of a `Host` value, lowercased, without port or IPv6 brackets.
fn host_name(authority: &str) -> (String, Option<&str>) {
    let authority = authority.trim();
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        match rest.split_once(']') {
            Some((host, tail)) => (host, tail.strip_prefix(':')),
            None => (rest, None),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) if !host.contains(':') => (host, Some(port)),
            _ => (authority, None),
        }
    };
    (host.to_ascii_lowercase(), port)
}

/// Whether the request's `Host` is one the server serves: an allowed entry without a port
/// matches any port, one with a port only that port.
fn host_allowed(headers: &HeaderMap, allowed: &[String]) -> bool {
    if allowed.is_empty() {
        return true;
    }
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let (name, port) = host_name(host);
    allowed.iter().any(|entry| {
        let (allowed_name, allowed_port) = host_name(entry);
        allowed_name == name && allowed_port.is_none_or(|p| Some(p) == port)
    })
}

/// Whether a form post (or a download that records a call) comes from this page. Browsers say so in `Sec-Fetch-Site` (fetch
/// metadata), which this page's `Referrer-Policy: no-referrer` leaves intact while it turns a
/// same-origin POST's `Origin` into `null`; without that header, an `Origin` naming another
/// site is refused; a request with neither (a non-browser client) passes.
fn same_origin(headers: &HeaderMap) -> bool {
    let text = |name: &str| headers.get(name).and_then(|h| h.to_str().ok());
    if let Some(site) = text("sec-fetch-site") {
        return site == "same-origin" || site == "none";
    }
    let Some(origin) = text(header::ORIGIN.as_str()).filter(|o| *o != "null") else {
        return true;
    };
    let host = text(header::HOST.as_str()).unwrap_or_default();
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(|authority| authority.eq_ignore_ascii_case(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn hosts_are_matched_by_name_and_port_when_given() {
        let allowed = vec![
            "localhost".to_owned(),
            "::1".into(),
            "example.com:8080".into(),
        ];
        for ok in [
            "localhost:9000",
            "LOCALHOST",
            "[::1]:80",
            "example.com:8080",
        ] {
            assert!(host_allowed(&headers(&[("host", ok)]), &allowed), "{ok}");
        }
        for refused in ["evil.com", "example.com:9090", "localhost.evil.com:80"] {
            assert!(
                !host_allowed(&headers(&[("host", refused)]), &allowed),
                "{refused}"
            );
        }
        assert!(!host_allowed(&HeaderMap::new(), &allowed));
        assert!(host_allowed(&HeaderMap::new(), &[]));
    }

    #[test]
    fn a_post_from_another_origin_is_told_apart() {
        let host = ("host", "127.0.0.1:8080");
        assert!(same_origin(&headers(&[host])));
        assert!(same_origin(&headers(&[
            host,
            ("origin", "http://127.0.0.1:8080")
        ])));
        assert!(!same_origin(&headers(&[
            host,
            ("origin", "http://evil.com")
        ])));
        let from = |site| headers(&[host, ("origin", "null"), ("sec-fetch-site", site)]);
        assert!(same_origin(&from("same-origin")));
        assert!(!same_origin(&from("cross-site")));
        assert!(!same_origin(&from("same-site")));
    }
}
