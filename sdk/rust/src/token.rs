//! Signing in with an OpenID Connect access token instead of a key: a [`TokenProvider`] gives
//! fresh tokens, the client keeps the current one until 60 s before it expires, and asks again
//! when the gateway refuses it as `invalid_token`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::Value;

use crate::error::{Error, Result};

/// How long before a token expires the client asks its provider for the next one.
pub const TOKEN_REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// Why a [`TokenProvider`] could not give a token: any error, boxed.
pub type TokenError = Box<dyn std::error::Error + Send + Sync>;

/// What [`TokenProvider::token`] returns: a boxed future of a token.
pub type TokenFuture<'a> =
    Pin<Box<dyn Future<Output = std::result::Result<AccessToken, TokenError>> + Send + 'a>>;

/// An access token from a provider, and how long it lives when the provider said (the token
/// endpoint's `expires_in`). Its `Debug` never shows the token.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken {
    token: String,
    expires_in: Option<Duration>,
}

impl AccessToken {
    /// `token`, its lifetime unknown: the client reads the JWT's `exp` (without verifying
    /// it), and asks for a new token before every request when it has none.
    pub fn new(token: impl Into<String>) -> AccessToken {
        AccessToken {
            token: token.into(),
            expires_in: None,
        }
    }

    /// The token lives `lifetime` from now (the token endpoint's `expires_in`).
    pub fn expires_in(mut self, lifetime: Duration) -> AccessToken {
        self.expires_in = Some(lifetime);
        self
    }

    /// The token itself.
    pub fn expose(&self) -> &str {
        &self.token
    }

    /// The lifetime the provider gave, if any.
    pub fn lifetime(&self) -> Option<Duration> {
        self.expires_in
    }
}

impl From<String> for AccessToken {
    fn from(token: String) -> AccessToken {
        AccessToken::new(token)
    }
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessToken")
            .field("token", &"…")
            .field("expires_in", &self.expires_in)
            .finish()
    }
}

/// Where a [`crate::Client`] gets its access tokens (`ClientBuilder::token_provider`): a
/// client-credentials grant, a workload identity file, a cloud's metadata service…
///
/// Any `Fn() -> impl Future<Output = Result<AccessToken, TokenError>> + Send + Sync` is one:
///
/// ```no_run
/// use forgebench_sdk::{AccessToken, Client, TokenError};
///
/// # fn build() -> forgebench_sdk::Result<Client> {
/// let client = Client::builder()
///     .base_url("https://api.forgebench.ai")
///     .token_provider(|| async {
///         let token = std::fs::read_to_string("/var/run/secrets/tokens/forgebench")?;
///         Ok::<_, TokenError>(AccessToken::new(token.trim()))
///     })
///     .build()?;
/// # Ok(client)
/// # }
/// ```
pub trait TokenProvider: Send + Sync {
    /// A fresh access token. The client calls it once at a time, only when it has no token it
    /// may still use.
    fn token(&self) -> TokenFuture<'_>;
}

impl<F, Fut> TokenProvider for F
where
    F: Fn() -> Fut + Send + Sync,
    Fut: Future<Output = std::result::Result<AccessToken, TokenError>> + Send + 'static,
{
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(self())
    }
}

/// A provider's tokens, the current one kept until [`TOKEN_REFRESH_MARGIN`] before it expires.
pub(crate) struct Tokens {
    provider: Arc<dyn TokenProvider>,
    /// Held while the provider is asked, so concurrent requests wait for one answer.
    current: tokio::sync::Mutex<Option<Cached>>,
}

struct Cached {
    token: String,
    refresh_at: Instant,
}

impl Tokens {
    pub(crate) fn new(provider: Arc<dyn TokenProvider>) -> Tokens {
        Tokens {
            provider,
            current: tokio::sync::Mutex::new(None),
        }
    }

    /// The token to send now.
    pub(crate) async fn token(&self) -> Result<String> {
        self.token_at(Instant::now(), unix_now()).await
    }

    /// The token to send at `now` (`unix_now` seconds since the epoch): the kept one before
    /// its refresh time, else a new one from the provider.
    async fn token_at(&self, now: Instant, unix_now: u64) -> Result<String> {
        let mut current = self.current.lock().await;
        if let Some(cached) = current.as_ref().filter(|cached| now < cached.refresh_at) {
            return Ok(cached.token.clone());
        }
        let fresh = self.provider.token().await.map_err(Error::TokenProvider)?;
        let token = fresh.token.trim().to_owned();
        if token.is_empty() {
            *current = None;
            return Err(Error::TokenProvider("it gave an empty token".into()));
        }
        let lifetime = fresh
            .expires_in
            .or_else(|| lifetime_from_exp(&token, unix_now));
        *current = kept_for(lifetime).map(|kept| Cached {
            token: token.clone(),
            refresh_at: now + kept,
        });
        Ok(token)
    }

    /// The gateway refused `token` as `invalid_token`: it is not sent again (a newer one that
    /// another request already got stays).
    pub(crate) async fn refused(&self, token: &str) {
        let mut current = self.current.lock().await;
        if current.as_ref().is_some_and(|cached| cached.token == token) {
            *current = None;
        }
    }
}

/// How long a token of `lifetime` is kept: until [`TOKEN_REFRESH_MARGIN`] before it expires;
/// `None` (ask before every request) when its lifetime is unknown or shorter than the margin.
fn kept_for(lifetime: Option<Duration>) -> Option<Duration> {
    lifetime
        .and_then(|lifetime| lifetime.checked_sub(TOKEN_REFRESH_MARGIN))
        .filter(|kept| !kept.is_zero())
}

/// The lifetime left at `unix_now` by a JWT's `exp`, read without verifying the token (the
/// gateway verifies it); `None` when `token` is no JWT or has no numeric `exp`.
pub(crate) fn lifetime_from_exp(token: &str, unix_now: u64) -> Option<Duration> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    let exp = claims.get("exp")?.as_f64().filter(|exp| exp.is_finite())?;
    // Whole seconds, as an `exp` is; a negative one is long past.
    let exp = exp.max(0.0) as u64;
    Some(Duration::from_secs(exp.saturating_sub(unix_now)))
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0)
}

/// Whether a `WWW-Authenticate` value says the token was refused (`error="invalid_token"`,
/// RFC 6750 §3).
pub(crate) fn says_invalid_token(challenge: &str) -> bool {
    challenge.split([',', ' ']).map(str::trim).any(|param| {
        param.split_once('=').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("error")
                && value.trim().trim_matches('"') == "invalid_token"
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn jwt(claims: &Value) -> String {
        let encode = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        format!(
            "{}.{}.{}",
            encode(br#"{"alg":"RS256","typ":"JWT"}"#),
            encode(claims.to_string().as_bytes()),
            encode(b"signature")
        )
    }

    /// A provider that gives `token-1`, `token-2`, … (lifetime `lifetime`), counting its calls.
    fn counting(lifetime: Option<Duration>) -> (Tokens, Arc<AtomicUsize>) {
        let asked = Arc::new(AtomicUsize::new(0));
        let counter = asked.clone();
        let provider = move || {
            let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                let token = AccessToken::new(format!("token-{n}"));
                Ok::<_, TokenError>(match lifetime {
                    Some(lifetime) => token.expires_in(lifetime),
                    None => token,
                })
            }
        };
        (Tokens::new(Arc::new(provider)), asked)
    }

    #[tokio::test]
    async fn a_token_is_kept_until_a_minute_before_it_expires_then_asked_for_again() {
        let (tokens, asked) = counting(Some(Duration::from_secs(3600)));
        let start = Instant::now();
        let at = |seconds| start + Duration::from_secs(seconds);
        assert_eq!(tokens.token_at(at(0), 0).await.unwrap(), "token-1");
        assert_eq!(tokens.token_at(at(1800), 0).await.unwrap(), "token-1");
        assert_eq!(tokens.token_at(at(3539), 0).await.unwrap(), "token-1");
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        // 60 s before it expires: a new one, kept from then on.
        assert_eq!(tokens.token_at(at(3540), 0).await.unwrap(), "token-2");
        assert_eq!(tokens.token_at(at(3600), 0).await.unwrap(), "token-2");
        assert_eq!(asked.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn without_a_lifetime_the_jwt_exp_says_when_to_ask_again() {
        let now = 1_800_000_000;
        let token = jwt(&serde_json::json!({"sub": "svc", "exp": now + 300}));
        let issued = token.clone();
        let asked = Arc::new(AtomicUsize::new(0));
        let counter = asked.clone();
        let tokens = Tokens::new(Arc::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            let token = issued.clone();
            async move { Ok::<_, TokenError>(AccessToken::new(token)) }
        }));
        let start = Instant::now();
        tokens.token_at(start, now).await.unwrap();
        tokens
            .token_at(start + Duration::from_secs(239), now + 239)
            .await
            .unwrap();
        assert_eq!(asked.load(Ordering::SeqCst), 1, "kept for exp − 60 s");
        tokens
            .token_at(start + Duration::from_secs(240), now + 240)
            .await
            .unwrap();
        assert_eq!(asked.load(Ordering::SeqCst), 2, "asked again at exp − 60 s");
    }

    #[tokio::test]
    async fn a_token_of_unknown_or_short_lifetime_is_asked_for_before_every_request() {
        for lifetime in [None, Some(Duration::from_secs(60)), Some(Duration::ZERO)] {
            let (tokens, asked) = counting(lifetime);
            let now = Instant::now();
            assert_eq!(tokens.token_at(now, 0).await.unwrap(), "token-1");
            assert_eq!(tokens.token_at(now, 0).await.unwrap(), "token-2");
            assert_eq!(asked.load(Ordering::SeqCst), 2, "{lifetime:?}");
        }
    }

    #[tokio::test]
    async fn a_refused_token_is_dropped_but_a_newer_one_stays() {
        let (tokens, asked) = counting(Some(Duration::from_secs(3600)));
        let now = Instant::now();
        let first = tokens.token_at(now, 0).await.unwrap();
        tokens.refused(&first).await;
        let second = tokens.token_at(now, 0).await.unwrap();
        assert_eq!(second, "token-2");
        // A request that still held the first token is refused late: the second one stays.
        tokens.refused(&first).await;
        assert_eq!(tokens.token_at(now, 0).await.unwrap(), "token-2");
        assert_eq!(asked.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_provider_failure_or_an_empty_token_is_a_token_provider_error() {
        let failing = Tokens::new(Arc::new(|| async {
            Err::<AccessToken, TokenError>("no workload identity".into())
        }));
        let error = failing.token().await.unwrap_err();
        assert!(matches!(error, Error::TokenProvider(_)), "{error:?}");
        assert!(error.to_string().contains("no workload identity"));
        let empty = Tokens::new(Arc::new(|| async {
            Ok::<_, TokenError>(AccessToken::new(" \n"))
        }));
        assert!(matches!(empty.token().await, Err(Error::TokenProvider(_))));
    }

    #[test]
    fn exp_is_read_from_a_jwt_only() {
        let token = jwt(&serde_json::json!({"exp": 1_000_100}));
        assert_eq!(
            lifetime_from_exp(&token, 1_000_000),
            Some(Duration::from_secs(100))
        );
        assert_eq!(lifetime_from_exp(&token, 2_000_000), Some(Duration::ZERO));
        assert_eq!(lifetime_from_exp("fb_agt_abc", 0), None);
        assert_eq!(
            lifetime_from_exp(&jwt(&serde_json::json!({"sub": "x"})), 0),
            None
        );
        assert_eq!(lifetime_from_exp("a.b.c.d", 0), None);
    }

    #[test]
    fn only_an_invalid_token_challenge_asks_for_a_new_token() {
        assert!(says_invalid_token(
            r#"Bearer error="invalid_token", resource_metadata="https://gw/.well-known/oauth-protected-resource""#
        ));
        assert!(says_invalid_token("Bearer realm=\"x\",error=invalid_token"));
        assert!(!says_invalid_token(
            r#"Bearer resource_metadata="https://gw/.well-known/oauth-protected-resource""#
        ));
        assert!(!says_invalid_token(r#"Bearer error="insufficient_scope""#));
    }

    #[test]
    fn the_debug_form_never_shows_the_token() {
        let token = AccessToken::new("eyJ.secret.sig").expires_in(Duration::from_secs(5));
        assert!(!format!("{token:?}").contains("secret"));
        assert_eq!(token.expose(), "eyJ.secret.sig");
    }
}
