//! Provider configuration: where the server is, which model is the default, the optional key,
//! and the limits of a call (timeouts, a token cap, retries). Read through a lookup function so
//! that the one door for effects (`effects.rs`) is what reads the environment.

use std::fmt;
use std::time::Duration;

use reqwest::Url;
use serde::Serialize;

use super::ModelError;
use super::retry::RetryPolicy;

/// The `/v1` base URL of an OpenAI-compatible server.
pub const PROVIDER_URL_VAR: &str = "THINKLEDGER_MODEL_PROVIDER_URL";
/// The bearer key, when the server needs one (local servers need none).
pub const API_KEY_VAR: &str = "THINKLEDGER_MODEL_API_KEY";
/// The model used when a call names none.
pub const DEFAULT_MODEL_VAR: &str = "THINKLEDGER_MODEL";
/// The cap on tokens a call may generate (default [`DEFAULT_MAX_TOKENS_CAP`]).
pub const MAX_TOKENS_VAR: &str = "THINKLEDGER_MODEL_MAX_TOKENS";

/// Which kind of provider answered; recorded in every [`super::Exchange`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// Any server speaking OpenAI's `/v1/chat/completions` and `/v1/embeddings`.
    OpenaiCompatible,
}

/// How long a call may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing a connection.
    pub connect: Duration,
    /// One attempt from sending to the last byte of the answer (a stream included).
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(5),
            total: Duration::from_secs(120),
        }
    }
}

/// The bearer key: kept only here, never shown.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Secret(String);

impl Secret {
    pub(super) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// Everything a [`super::ModelClient`] needs. Its `Debug` shows no key and no credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    base_url: Url,
    api_key: Option<Secret>,
    basic_auth: Option<(Secret, Option<Secret>)>,
    default_model: Option<String>,
    timeouts: Timeouts,
    max_tokens_cap: u32,
    retry: RetryPolicy,
}

/// The default cap on `max_tokens`: a call asking for more (or for nothing) is sent this.
pub const DEFAULT_MAX_TOKENS_CAP: u32 = 1024;

impl ProviderConfig {
    /// Reads the three variables through `lookup` (a blank value counts as unset). No URL is
    /// [`ModelError::NotConfigured`], which names all three.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ModelError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let url = get(PROVIDER_URL_VAR).ok_or(ModelError::NotConfigured)?;
        let mut config = Self::new(url.trim())?;
        config.api_key = get(API_KEY_VAR).map(|k| Secret(k.trim().to_owned()));
        config.default_model = get(DEFAULT_MODEL_VAR).map(|m| m.trim().to_owned());
        if let Some(cap) = get(MAX_TOKENS_VAR) {
            config.max_tokens_cap = cap
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|c| *c > 0)
                .ok_or_else(|| ModelError::InvalidSetting {
                    reason: format!("{MAX_TOKENS_VAR} must be a whole number above 0"),
                })?;
        }
        Ok(config)
    }

    /// A configuration for the `/v1` base `url`, with no key, no default model and the default
    /// limits. Userinfo in the URL is taken out of it and sent as HTTP basic authentication.
    pub fn new(url: &str) -> Result<Self, ModelError> {
        let mut base_url = Url::parse(url).map_err(|e| ModelError::InvalidUrl {
            reason: e.to_string(),
        })?;
        let basic_auth = if base_url.username().is_empty() && base_url.password().is_none() {
            None
        } else {
            let user = Secret(base_url.username().to_owned());
            let password = base_url.password().map(|p| Secret(p.to_owned()));
            let stripped = base_url.set_username("").is_ok() && base_url.set_password(None).is_ok();
            if !stripped {
                return Err(ModelError::InvalidUrl {
                    reason: "its credentials cannot be separated from it".to_owned(),
                });
            }
            Some((user, password))
        };
        match base_url.scheme() {
            "http" => {}
            "https" => {
                // Shown without its query or fragment, which may carry a key.
                let mut shown = base_url.clone();
                shown.set_query(None);
                shown.set_fragment(None);
                return Err(ModelError::TlsUnavailable {
                    base_url: shown.to_string(),
                });
            }
            other => {
                return Err(ModelError::InvalidUrl {
                    reason: format!("scheme {other:?} is not http"),
                });
            }
        }
        if base_url.query().is_some() || base_url.fragment().is_some() {
            return Err(ModelError::InvalidUrl {
                reason: "a base URL has no query or fragment".to_owned(),
            });
        }
        if !base_url.path().ends_with('/') {
            let path = format!("{}/", base_url.path());
            base_url.set_path(&path);
        }
        Ok(Self {
            base_url,
            api_key: None,
            basic_auth,
            default_model: None,
            timeouts: Timeouts::default(),
            max_tokens_cap: DEFAULT_MAX_TOKENS_CAP,
            retry: RetryPolicy::default(),
        })
    }

    /// The same with `model` as the default model.
    #[must_use]
    pub fn with_default_model(mut self, model: &str) -> Self {
        self.default_model = Some(model.to_owned());
        self
    }

    /// The same with these timeouts.
    #[must_use]
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// The same with this cap on `max_tokens` (at least 1).
    #[must_use]
    pub fn with_max_tokens_cap(mut self, cap: u32) -> Self {
        self.max_tokens_cap = cap.max(1);
        self
    }

    /// The same with this retry policy.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The base URL as recorded and shown: no userinfo, ends with `/`.
    pub fn base_url(&self) -> &str {
        self.base_url.as_str()
    }

    /// The base URL joined with an endpoint path.
    pub(super) fn endpoint_url(&self, path: &str) -> Result<Url, ModelError> {
        self.base_url
            .join(path)
            .map_err(|e| ModelError::InvalidUrl {
                reason: e.to_string(),
            })
    }

    /// The model used when a call names none.
    pub fn default_model(&self) -> Option<&str> {
        self.default_model.as_deref()
    }

    /// Whether a key is configured (never the key).
    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    pub(super) fn api_key(&self) -> Option<&Secret> {
        self.api_key.as_ref()
    }

    pub(super) fn basic_auth(&self) -> Option<(&str, Option<&str>)> {
        self.basic_auth
            .as_ref()
            .map(|(user, password)| (user.expose(), password.as_ref().map(Secret::expose)))
    }

    /// The timeouts of one attempt.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// The cap on `max_tokens`.
    pub fn max_tokens_cap(&self) -> u32 {
        self.max_tokens_cap
    }

    /// The retry policy.
    pub fn retry(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The provider kind (only OpenAI-compatible servers exist today).
    pub fn kind(&self) -> ProviderKind {
        ProviderKind::OpenaiCompatible
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn no_url_names_all_three_variables() {
        let err = ProviderConfig::from_lookup(lookup(&[(PROVIDER_URL_VAR, "  ")])).unwrap_err();
        let message = err.to_string();
        for var in [PROVIDER_URL_VAR, DEFAULT_MODEL_VAR, API_KEY_VAR] {
            assert!(message.contains(var), "{message}");
        }
    }

    #[test]
    fn credentials_leave_the_url_and_never_show() {
        let config = ProviderConfig::from_lookup(lookup(&[
            (PROVIDER_URL_VAR, "http://alice:hunter2@127.0.0.1:8080/v1"),
            (API_KEY_VAR, "sk-very-secret"),
            (DEFAULT_MODEL_VAR, "smol"),
        ]))
        .unwrap();
        assert_eq!(config.base_url(), "http://127.0.0.1:8080/v1/");
        assert_eq!(config.basic_auth(), Some(("alice", Some("hunter2"))));
        assert_eq!(config.default_model(), Some("smol"));
        let shown = format!("{config:?}");
        for secret in ["alice", "hunter2", "sk-very-secret"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert_eq!(
            config.endpoint_url("chat/completions").unwrap().as_str(),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
    }

    #[test]
    fn unusable_urls_are_refused_without_repeating_them() {
        let tls = ProviderConfig::new("https://bob:pw@api.example/v1").unwrap_err();
        assert!(matches!(tls, ModelError::TlsUnavailable { .. }), "{tls}");
        assert!(!tls.to_string().contains("pw@"), "{tls}");
        let keyed = ProviderConfig::new("https://api.example/v1?key=sk-very-secret").unwrap_err();
        assert!(!keyed.to_string().contains("sk-very-secret"), "{keyed}");
        assert!(matches!(
            ProviderConfig::new("not a url"),
            Err(ModelError::InvalidUrl { .. })
        ));
        assert!(matches!(
            ProviderConfig::new("ftp://127.0.0.1/v1"),
            Err(ModelError::InvalidUrl { .. })
        ));
    }
}
