//! Who is looking: the login form, the cookie that holds the viewer's token, and the check of
//! that cookie on every request (so a revoked or expired token is refused at once).
//!
//! The cookie holds the bearer token itself (`HttpOnly; SameSite=Strict; Path=/review`), so
//! the token file stays the one place that says who may read: nothing is remembered on the
//! server between requests. Must not know: what a page shows.

use std::sync::Arc;

use axum::extract::{Form, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;

use super::pages::layout;
use super::{Review, Viewers};
use crate::effects::{Effects, SystemEffects};
use crate::server::auth::Refusal;
use crate::tools::{LOCAL_PRINCIPAL, Principal};

/// The cookie that carries the viewer's token.
pub const COOKIE_NAME: &str = "thinkledger_review";

/// Where a viewer without a valid cookie is sent.
pub(super) const LOGIN_PATH: &str = "/review/login";

/// The viewer of a request, or why there is none.
pub(super) fn viewer(review: &Review, request: &RequestParts<'_>) -> Result<Principal, Refusal> {
    match &review.viewers {
        Viewers::Open => Ok(Principal::member(LOCAL_PRINCIPAL)),
        Viewers::Proxied(header) => {
            super::super::proxied_principal(request.headers, header).ok_or(Refusal::Missing)
        }
        Viewers::Tokens(authenticator) => {
            let token = cookie(request.headers, COOKIE_NAME).ok_or(Refusal::Missing)?;
            authenticator.authenticate(token, SystemEffects.now())
        }
    }
}

/// What [`viewer`] reads of a request.
pub(super) struct RequestParts<'a> {
    pub headers: &'a HeaderMap,
}

/// The value of the cookie `name` among the request's `Cookie` headers.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|line| line.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim_matches('"'))
        .filter(|value| !value.is_empty())
}

/// The answer to a page request without a valid viewer: off to the login form when there is
/// one; behind a proxy, 401 (the proxy should have named the viewer).
pub(super) fn unauthenticated(review: &Review, refusal: Refusal) -> Response {
    match review.viewers {
        Viewers::Tokens(_) => Redirect::to(LOGIN_PATH).into_response(),
        Viewers::Open | Viewers::Proxied(_) => {
            (StatusCode::UNAUTHORIZED, refusal.describe()).into_response()
        }
    }
}

/// `GET /review/login`: the token form (or, without tokens, straight to the list).
pub(super) async fn form(State(review): State<Arc<Review>>) -> Response {
    match review.viewers {
        Viewers::Tokens(_) => login_page(StatusCode::OK, None),
        Viewers::Open | Viewers::Proxied(_) => Redirect::to("/review").into_response(),
    }
}

fn login_page(status: StatusCode, refusal: Option<Refusal>) -> Response {
    let body = html! {
        h1 { "Log in to review" }
        @if let Some(refusal) = refusal {
            p.refused role="alert" { "Not logged in: " (refusal.describe()) "." }
        }
        form method="post" action="/review/login" {
            label for="token" { "Access token" }
            " "
            input #token type="password" name="token" autocomplete="off" required;
            " "
            button type="submit" { "Log in" }
        }
        p.note {
            "A token is made by the server's operator with "
            code { "thinkledger token create --principal NAME" }
            "; it is kept in an HttpOnly cookie for this page only and checked on every request."
        }
    };
    (status, layout("Log in", None, body)).into_response()
}

/// The login form's fields.
#[derive(Deserialize)]
pub(super) struct LoginForm {
    token: String,
}

/// `POST /review/login`: checks the token and, when it is live, keeps it in the cookie.
pub(super) async fn log_in(
    State(review): State<Arc<Review>>,
    Form(form): Form<LoginForm>,
) -> Response {
    let Viewers::Tokens(authenticator) = &review.viewers else {
        return Redirect::to("/review").into_response();
    };
    let token = form.token.trim();
    // A token is printable ASCII without `;` or blanks (TOKEN_PREFIX + base64url); anything
    // else cannot be one, and must not reach a header.
    let cookie_safe = !token.is_empty()
        && token
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b';' && b != b',' && b != b'"' && b != b'\\');
    if !cookie_safe {
        return login_page(StatusCode::UNAUTHORIZED, Some(Refusal::Unknown));
    }
    match authenticator.authenticate(token, SystemEffects.now()) {
        Ok(_) => {
            // No `Secure`: this server speaks plain HTTP (loopback, or behind a TLS-terminating
            // proxy), and a browser would not send a `Secure` cookie back over http://.
            let cookie = format!("{COOKIE_NAME}={token}; HttpOnly; SameSite=Strict; Path=/review");
            with_cookie(Redirect::to("/review").into_response(), &cookie)
        }
        Err(refusal) => login_page(StatusCode::UNAUTHORIZED, Some(refusal)),
    }
}

/// `POST /review/logout`: forgets the cookie.
pub(super) async fn log_out() -> Response {
    let cookie = format!("{COOKIE_NAME}=; HttpOnly; SameSite=Strict; Path=/review; Max-Age=0");
    with_cookie(Redirect::to(LOGIN_PATH).into_response(), &cookie)
}

fn with_cookie(mut response: Response, cookie: &str) -> Response {
    match HeaderValue::from_str(cookie) {
        Ok(value) => {
            response.headers_mut().insert(header::SET_COOKIE, value);
            response
        }
        Err(_) => login_page(StatusCode::UNAUTHORIZED, Some(Refusal::Unknown)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxy_header_names_one_member_and_never_the_owner() {
        use crate::server::proxied_principal;
        let header = axum::http::HeaderName::from_static("x-forwarded-user");
        let mut headers = HeaderMap::new();
        assert_eq!(proxied_principal(&headers, &header), None);
        headers.insert(&header, HeaderValue::from_static("  alice "));
        assert_eq!(
            proxied_principal(&headers, &header),
            Some(Principal::member("alice"))
        );
        for refused in [" ", "local"] {
            headers.insert(&header, HeaderValue::from_static(refused));
            assert_eq!(proxied_principal(&headers, &header), None, "{refused:?}");
        }
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; thinkledger_review=tlk_x"),
        );
        headers.append(header::COOKIE, HeaderValue::from_static("b=2"));
        assert_eq!(cookie(&headers, COOKIE_NAME), Some("tlk_x"));
        assert_eq!(cookie(&headers, "b"), Some("2"));
        assert_eq!(cookie(&headers, "c"), None);
        let mut empty = HeaderMap::new();
        empty.insert(
            header::COOKIE,
            HeaderValue::from_static("thinkledger_review="),
        );
        assert_eq!(cookie(&empty, COOKIE_NAME), None);
    }
}
