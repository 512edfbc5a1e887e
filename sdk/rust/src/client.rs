//! The client: where the gateway is, the key (or the token provider), and how one request is
//! sent (authentication, timeouts, retries, typed errors).

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::retry::{Backoff, MAX_RETRY_AFTER};
use crate::token::{says_invalid_token, TokenProvider, Tokens};

/// The hosted service's URL, to pass as the base URL when that is the gateway you mean. The SDK
/// never uses it on its own: there is no default gateway.
pub const HOSTED_URL: &str = "https://api.forgebench.ai";
/// One attempt's timeout, stretched by the request's `wait`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How many times a request is sent again after a passing trouble, when that is safe; the same
/// in every Forgebench SDK (docs/sdks.md).
pub const DEFAULT_MAX_RETRIES: u32 = 2;
/// The variable [`Client::from_env`] reads the key from.
pub const API_KEY_VARIABLE: &str = "FORGEBENCH_API_KEY";
/// The variable [`Client::from_env`] reads the base URL from.
pub const URL_VARIABLE: &str = "FORGEBENCH_URL";

const USER_AGENT: &str = concat!("forgebench-rust/", env!("CARGO_PKG_VERSION"));

/// A client of one gateway with one key, or with the access tokens of a [`TokenProvider`].
/// Cloning is cheap and shares the connection pool (and the current token).
///
/// Its `Debug` never shows the key or a token, and the SDK never logs them.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    base_url: String,
    credential: Credential,
    timeout: Duration,
    max_retries: u32,
}

/// How the client signs in: one key, or a provider's access tokens.
enum Credential {
    Key(String),
    Tokens(Tokens),
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let signs_in_with = match self.inner.credential {
            Credential::Key(_) => "key",
            Credential::Tokens(_) => "token provider",
        };
        f.debug_struct("Client")
            .field("base_url", &self.inner.base_url)
            .field("signs_in_with", &signs_in_with)
            .finish_non_exhaustive()
    }
}

/// Settings of a [`Client`]; see [`Client::builder`].
#[derive(Default)]
pub struct ClientBuilder {
    api_key: Option<String>,
    token_provider: Option<Arc<dyn TokenProvider>>,
    base_url: Option<String>,
    timeout: Option<Duration>,
    max_retries: Option<u32>,
    http: Option<reqwest::Client>,
    user_agent: Option<String>,
}

impl ClientBuilder {
    /// The key to act with (or [`ClientBuilder::token_provider`], not both).
    pub fn api_key(mut self, key: impl Into<String>) -> ClientBuilder {
        self.api_key = Some(key.into());
        self
    }

    /// Signs in with OpenID Connect access tokens instead of a key (not both): tokens of an
    /// issuer the tenant trusts, whose subject it lists (`Client::trust_issuer`). The client
    /// keeps the current token until 60 s before it expires (its lifetime as the provider gave
    /// it, else the JWT's `exp`; unknown, it asks before every request), and when the gateway
    /// refuses a token as `invalid_token` it asks once more and sends the request again, once.
    pub fn token_provider(mut self, provider: impl TokenProvider + 'static) -> ClientBuilder {
        self.token_provider = Some(Arc::new(provider));
        self
    }

    /// The gateway, e.g. [`HOSTED_URL`] or `http://127.0.0.1:8080` (a trailing `/` is dropped).
    /// Required: [`ClientBuilder::build`] fails without it.
    pub fn base_url(mut self, url: impl Into<String>) -> ClientBuilder {
        self.base_url = Some(url.into());
        self
    }

    /// One attempt's timeout (default 30 s), stretched by the request's `wait`.
    pub fn timeout(mut self, timeout: Duration) -> ClientBuilder {
        self.timeout = Some(timeout);
        self
    }

    /// Retries after a passing trouble, when safe (default 2).
    pub fn max_retries(mut self, retries: u32) -> ClientBuilder {
        self.max_retries = Some(retries);
        self
    }

    /// The User-Agent to send instead of `forgebench-rust/<version>`, for a program built on the
    /// SDK that its gateway's operators (and access logs) should tell apart, e.g.
    /// `forgebench-cli/<version>`. Not used with [`ClientBuilder::http_client`]: that client's
    /// own User-Agent is sent.
    pub fn user_agent(mut self, user_agent: impl Into<String>) -> ClientBuilder {
        self.user_agent = Some(user_agent.into());
        self
    }

    /// Your own `reqwest::Client` (its pool, proxies, TLS settings).
    pub fn http_client(mut self, http: reqwest::Client) -> ClientBuilder {
        self.http = Some(http);
        self
    }

    /// The client; an [`Error::InvalidArgument`] when the base URL is missing or empty, when
    /// neither a key nor a token provider is given (an empty key counts as none), or when both
    /// are (nothing is sent).
    pub fn build(self) -> Result<Client> {
        let base_url = self.base_url.filter(|url| !url.is_empty()).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "a base URL is required ({URL_VARIABLE} for Client::from_env): the gateway to \
                 send the key to, e.g. {HOSTED_URL} for the hosted service"
            ))
        })?;
        let api_key = self.api_key.filter(|key| !key.is_empty());
        let credential = match (api_key, self.token_provider) {
            (Some(key), None) => Credential::Key(key),
            (None, Some(provider)) => Credential::Tokens(Tokens::new(provider)),
            (Some(_), Some(_)) => {
                return Err(Error::InvalidArgument(
                    "an API key and a token provider are mutually exclusive: give one".into(),
                ))
            }
            (None, None) => {
                return Err(Error::InvalidArgument(format!(
                    "an API key is required (or set {API_KEY_VARIABLE}), or a token provider"
                )))
            }
        };
        let http = match self.http {
            Some(http) => http,
            None => reqwest::Client::builder()
                .user_agent(self.user_agent.as_deref().unwrap_or(USER_AGENT))
                .build()
                .map_err(Error::Connection)?,
        };
        Ok(Client {
            inner: Arc::new(Inner {
                http,
                base_url: base_url.trim_end_matches('/').to_owned(),
                credential,
                timeout: self.timeout.unwrap_or(DEFAULT_TIMEOUT),
                max_retries: self.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
            }),
        })
    }
}

impl Client {
    /// A client of `base_url` with `api_key` and the default settings.
    pub fn new(api_key: impl Into<String>, base_url: impl Into<String>) -> Result<Client> {
        Client::builder()
            .api_key(api_key)
            .base_url(base_url)
            .build()
    }

    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// A client from `FORGEBENCH_API_KEY` and `FORGEBENCH_URL` (an empty variable counts as
    /// unset). There is no default gateway: without `FORGEBENCH_URL` this is an
    /// [`Error::InvalidArgument`], and nothing is sent.
    pub fn from_env() -> Result<Client> {
        let mut builder = Client::builder();
        if let Ok(key) = std::env::var(API_KEY_VARIABLE) {
            builder = builder.api_key(key);
        }
        if let Ok(url) = std::env::var(URL_VARIABLE) {
            builder = builder.base_url(url);
        }
        builder.build()
    }

    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// Sends `request` and reads its JSON body as `T`.
    pub(crate) async fn send_json<T: DeserializeOwned>(&self, request: Request) -> Result<T> {
        match self.send(request).await? {
            Some(body) => {
                serde_json::from_value(body).map_err(|error| Error::Decode(error.to_string()))
            }
            None => Err(Error::Decode("no body".into())),
        }
    }

    /// The JSON body of `request`'s answer (`None` for an allowed `204`), retrying what is safe.
    pub(crate) async fn send(&self, request: Request) -> Result<Option<Value>> {
        self.retrying(&request, |request| self.send_once(request))
            .await
    }

    /// The response of a streaming `request` (`text/event-stream`) once its head arrived with a
    /// success; opening it is retried like any request. Its body is read by the caller, with no
    /// timeout: a stream lasts as long as the gateway keeps it open.
    pub(crate) async fn open_stream(&self, request: Request) -> Result<reqwest::Response> {
        self.retrying(&request, |request| self.open_stream_once(request))
            .await
    }

    /// Runs `once` for `request`, again after a passing trouble when that is safe.
    async fn retrying<'r, T, F, Fut>(&self, request: &'r Request, mut once: F) -> Result<T>
    where
        F: FnMut(&'r Request) -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let mut backoff = Backoff::for_requests();
        let mut attempt = 0;
        loop {
            let outcome = once(request).await;
            let retry = attempt < self.inner.max_retries;
            let delay = match &outcome {
                Err(error) if retry => delay_before_retry(error, request.repeatable, &mut backoff),
                _ => None,
            };
            match delay {
                Some(delay) => {
                    if let Err(error) = &outcome {
                        tracing::debug!(path = %request.path, %error, ?delay, "forgebench: retrying");
                    }
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
                None => return outcome,
            }
        }
    }

    /// The key, or the token to send now.
    async fn credential(&self) -> Result<String> {
        match &self.inner.credential {
            Credential::Key(key) => Ok(key.clone()),
            Credential::Tokens(tokens) => tokens.token().await,
        }
    }

    /// Sends `request` signed in; a token the gateway refuses as `invalid_token` is replaced
    /// by a new one from the provider and the request sent again, once (nothing was done: the
    /// refusal came before the route).
    async fn send_signed_in(
        &self,
        request: &Request,
        accept: &str,
        timeout: Option<Duration>,
    ) -> Result<reqwest::Response> {
        let credential = self.credential().await?;
        let response = self
            .send_with(request, accept, timeout, &credential)
            .await?;
        let Credential::Tokens(tokens) = &self.inner.credential else {
            return Ok(response);
        };
        if !refuses_token(&response) {
            return Ok(response);
        }
        tracing::debug!(path = %request.path, "forgebench: token refused; asking for a new one");
        tokens.refused(&credential).await;
        let credential = tokens.token().await?;
        self.send_with(request, accept, timeout, &credential).await
    }

    async fn send_with(
        &self,
        request: &Request,
        accept: &str,
        timeout: Option<Duration>,
        credential: &str,
    ) -> Result<reqwest::Response> {
        let mut builder = self.prepared(request, accept, credential);
        if let Some(timeout) = timeout {
            builder = builder.timeout(timeout);
        }
        builder.send().await.map_err(Error::Connection)
    }

    /// `request` ready to send: its URL, the credential, the `accept` header and the request's
    /// own.
    fn prepared(
        &self,
        request: &Request,
        accept: &str,
        credential: &str,
    ) -> reqwest::RequestBuilder {
        let inner = &self.inner;
        let url = format!(
            "{}{}{}",
            inner.base_url,
            request.path,
            query_string(&request.query)
        );
        let mut builder = inner
            .http
            .request(request.method.clone(), url)
            .bearer_auth(credential)
            .header("accept", accept);
        // The application's OpenTelemetry context, when it has one: its trace continues.
        for (name, value) in crate::trace_context::outgoing_headers() {
            builder = builder.header(name, value);
        }
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
        }
        if let Some(body) = &request.body {
            builder = builder.json(body);
        }
        builder
    }

    async fn send_once(&self, request: &Request) -> Result<Option<Value>> {
        let timeout = self.inner.timeout + Duration::from_secs(u64::from(request.wait));
        let response = self
            .send_signed_in(request, "application/json", Some(timeout))
            .await?;
        read_response(response, request.no_content_ok).await
    }

    async fn open_stream_once(&self, request: &Request) -> Result<reqwest::Response> {
        let response = self
            .send_signed_in(request, "text/event-stream", None)
            .await?;
        if response.status().is_success() {
            return Ok(response);
        }
        // A status that is no success is always the typed error of its body.
        let status = response.status();
        read_response(response, false).await?;
        Err(Error::Decode(format!("a stream answered {status}")))
    }
}

/// Whether `response` is a `401` refusing the token sent (`WWW-Authenticate: Bearer
/// error="invalid_token"`).
fn refuses_token(response: &reqwest::Response) -> bool {
    response.status() == StatusCode::UNAUTHORIZED
        && response
            .headers()
            .get_all("www-authenticate")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .any(says_invalid_token)
}

/// The body of a success; the typed error of anything else.
pub(crate) async fn read_response(
    response: reqwest::Response,
    no_content_ok: bool,
) -> Result<Option<Value>> {
    let status = response.status();
    if status == StatusCode::NO_CONTENT && no_content_ok {
        return Ok(None);
    }
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<f64>().ok())
        .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
        .map(Duration::from_secs_f64);
    let request_id = response
        .headers()
        .get("x-request-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.map_err(Error::Connection)?;
    let body = body_of(text);
    if status.is_success() {
        Ok(Some(body))
    } else {
        Err(Error::from_status(
            status.as_u16(),
            body,
            retry_after,
            request_id,
        ))
    }
}

/// A response body as JSON; a body that is not JSON as a string, an empty one as `null`.
fn body_of(text: String) -> Value {
    if text.is_empty() {
        return Value::Null;
    }
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

/// The pause before sending a request again after `error`, or `None` to return the error.
///
/// After `429` or `503` nothing was done, so any request goes again (`Retry-After` honoured up
/// to 30 s); after a connection that never opened, too. After a broken connection, a `502` or
/// a `504` only a `repeatable` request goes again: it may have reached the gateway.
fn delay_before_retry(error: &Error, repeatable: bool, backoff: &mut Backoff) -> Option<Duration> {
    match error {
        Error::RateLimited {
            retry_after: Some(after),
            ..
        } => (*after <= MAX_RETRY_AFTER).then_some(*after),
        Error::RateLimited { .. } => Some(backoff.next_delay()),
        Error::Server(body) if body.status == 503 => Some(backoff.next_delay()),
        Error::Server(body) if matches!(body.status, 502 | 504) && repeatable => {
            Some(backoff.next_delay())
        }
        Error::Connection(source) if source.is_connect() || repeatable => {
            Some(backoff.next_delay())
        }
        _ => None,
    }
}

/// One call to the gateway.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub method: Method,
    pub path: String,
    pub query: Vec<(&'static str, String)>,
    pub body: Option<Value>,
    pub headers: Vec<(&'static str, String)>,
    /// How long the gateway may hold the request; the timeout is stretched by it.
    pub wait: u32,
    /// Safe to send again after the connection broke once it was sent: a read, a cancel, an
    /// open or a reply whose message carries a `message_id`.
    pub repeatable: bool,
    /// A `204` is an answer (a claim that found nothing).
    pub no_content_ok: bool,
}

impl Request {
    pub fn new(method: Method, path: String) -> Request {
        let repeatable = method == Method::GET || method == Method::DELETE || method == Method::PUT;
        Request {
            method,
            path,
            query: Vec::new(),
            body: None,
            headers: Vec::new(),
            wait: 0,
            repeatable,
            no_content_ok: false,
        }
    }

    pub fn get(path: String) -> Request {
        Request::new(Method::GET, path)
    }

    pub fn post(path: String, body: Value) -> Request {
        Request::new(Method::POST, path).body(body)
    }

    pub fn body(mut self, body: Value) -> Request {
        self.body = Some(body);
        self
    }

    pub fn query(mut self, name: &'static str, value: impl ToString) -> Request {
        self.query.push((name, value.to_string()));
        self
    }

    pub fn wait(mut self, wait: u32) -> Request {
        self.wait = wait;
        if wait > 0 {
            self.query.push(("wait", wait.to_string()));
        }
        self
    }

    pub fn repeatable(mut self, repeatable: bool) -> Request {
        self.repeatable = repeatable;
        self
    }
}

/// A path segment (a name, an id), percent-encoded; an empty one is refused.
pub(crate) fn segment(value: &str) -> Result<String> {
    if value.is_empty() {
        return Err(Error::InvalidArgument(
            "an agent, task or key id must not be empty".into(),
        ));
    }
    Ok(percent_encoded(value))
}

/// `?name=value&…`, each value percent-encoded; empty without parameters.
fn query_string(query: &[(&'static str, String)]) -> String {
    let pairs: Vec<String> = query
        .iter()
        .map(|(name, value)| format!("{name}={}", percent_encoded(value)))
        .collect();
    match pairs.is_empty() {
        true => String::new(),
        false => format!("?{}", pairs.join("&")),
    }
}

/// Every byte but the unreserved ones (RFC 3986) as `%XX`.
fn percent_encoded(value: &str) -> String {
    let mut encoded = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                encoded.push(char::from(byte));
            }
            other => encoded.push_str(&format!("%{other:02X}")),
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_is_percent_encoded_and_never_empty() {
        assert_eq!(segment("a b/c").expect("encoded"), "a%20b%2Fc");
        assert!(matches!(segment(""), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn the_debug_form_never_shows_the_key() {
        let client = Client::new("fb_agt_secret", "http://127.0.0.1:1/").expect("client");
        let shown = format!("{client:?}");
        assert!(!shown.contains("fb_agt_secret"));
        assert!(shown.contains("http://127.0.0.1:1"));
    }

    #[test]
    fn a_query_string_encodes_its_values() {
        let query = [
            ("q", "refund INV-1".to_owned()),
            ("since", "2026-01-01T00:00:00+01:00".to_owned()),
        ];
        assert_eq!(
            query_string(&query),
            "?q=refund%20INV-1&since=2026-01-01T00%3A00%3A00%2B01%3A00"
        );
        assert_eq!(query_string(&[]), "");
    }

    #[test]
    fn a_client_needs_a_key() {
        assert!(matches!(
            Client::builder().build(),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn a_key_and_a_token_provider_are_mutually_exclusive() {
        let provider =
            || async { Ok::<_, crate::TokenError>(crate::AccessToken::new("eyJ.secret.sig")) };
        let both = Client::builder()
            .base_url("http://127.0.0.1:1")
            .api_key("fb_agt_secret")
            .token_provider(provider)
            .build()
            .unwrap_err();
        assert!(matches!(both, Error::InvalidArgument(_)), "{both:?}");
        assert!(both.to_string().contains("mutually exclusive"), "{both}");
        let none = Client::builder()
            .base_url("http://127.0.0.1:1")
            .build()
            .unwrap_err();
        assert!(none.to_string().contains("token provider"), "{none}");
        let tokens = Client::builder()
            .base_url("http://127.0.0.1:1")
            .api_key("")
            .token_provider(provider)
            .build()
            .expect("an empty key counts as none");
        assert!(format!("{tokens:?}").contains("token provider"));
    }

    #[test]
    fn a_rate_limit_waits_its_retry_after_unless_too_long() {
        let mut backoff = Backoff::for_requests();
        let limited = |seconds| Error::RateLimited {
            body: crate::ErrorBody {
                status: 429,
                body: Value::Null,
                header_request_id: None,
            },
            retry_after: Some(Duration::from_secs(seconds)),
        };
        assert_eq!(
            delay_before_retry(&limited(3), false, &mut backoff),
            Some(Duration::from_secs(3))
        );
        assert_eq!(delay_before_retry(&limited(60), true, &mut backoff), None);
    }

    #[test]
    fn a_refusal_is_never_retried() {
        let mut backoff = Backoff::for_requests();
        let refused = Error::from_status(403, Value::Null, None, None);
        assert_eq!(delay_before_retry(&refused, true, &mut backoff), None);
    }
}
