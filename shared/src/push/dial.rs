//! The HTTP client that POSTs tasks to push endpoints, with the SSRF guard at connect time:
//! hostnames resolve through a resolver that checks every address it returns (the addresses it
//! checks are the ones dialed), address literals are checked before the request, redirects are
//! never followed and no proxy is used.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::endpoint::{Host, PushUrl};
use super::ssrf::{AddressPolicy, HostResolver, Refusal};

/// Largest response body read from an endpoint: a result whose artifacts and message are each
/// at the API's 1 MiB limit, with room for its JSON envelope.
pub const MAX_RESPONSE_BYTES: usize = 2 * 1024 * 1024 + 64 * 1024;

/// A resolver for reqwest that refuses a name if any of its addresses is not allowed.
struct GuardedResolver {
    policy: AddressPolicy,
    resolver: HostResolver,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let resolver = self.resolver.clone();
        Box::pin(async move {
            let addresses = resolver.resolve(name.as_str(), 0).await.map_err(
                |refusal| -> Box<dyn std::error::Error + Send + Sync> { Box::new(refusal) },
            )?;
            policy.check_all(&addresses).map_err(
                |refusal| -> Box<dyn std::error::Error + Send + Sync> { Box::new(refusal) },
            )?;
            let sockets: Vec<SocketAddr> = addresses
                .into_iter()
                .map(|address| SocketAddr::new(address, 0))
                .collect();
            let addrs: Addrs = Box::new(sockets.into_iter());
            Ok(addrs)
        })
    }
}

/// What came back from an endpoint.
#[derive(Debug, Clone)]
pub struct EndpointResponse {
    pub status: u16,
    pub content_type: Option<String>,
    pub retry_after: Option<Duration>,
    pub body: Vec<u8>,
}

/// Why a POST produced no response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DialError {
    #[error("delivery refused: {0}")]
    Refused(Refusal),
    #[error("timed out")]
    Timeout,
    #[error("connection failed")]
    Connect,
    #[error(
        "answer too large: the endpoint's response was larger than {MAX_RESPONSE_BYTES} bytes"
    )]
    TooLarge,
    #[error("request failed")]
    Other,
}

/// How long a connection to an endpoint may idle and still carry the next delivery. Deliveries
/// of one batch share connections; a retry, seconds later, opens its own, since by then the
/// receiver may be closing the idle one (Node's and uvicorn's servers close after 5 s,
/// gunicorn's after 2 s) and a POST sent as it closes is lost with an attempt.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(1);

/// The two HTTP clients, one per address policy (private networks allowed or not).
type Clients = Result<(reqwest::Client, reqwest::Client), String>;

/// Dials push endpoints. Its HTTP clients (and the TLS roots they load) are built on first use,
/// so the functions that never dial pay nothing for them at cold start.
#[derive(Clone)]
pub struct Dialer {
    clients: Arc<std::sync::OnceLock<Clients>>,
    timeout: Duration,
    operator: AddressPolicy,
    resolver: HostResolver,
}

impl Dialer {
    pub fn new(
        operator_allowed: Vec<super::ssrf::Cidr>,
        resolver: HostResolver,
        timeout: Duration,
    ) -> Dialer {
        Dialer {
            clients: Arc::default(),
            timeout,
            operator: AddressPolicy {
                allow_private: false,
                operator_allowed,
            },
            resolver,
        }
    }

    fn client(&self, allow_private: bool) -> Result<&reqwest::Client, DialError> {
        let clients = self.clients.get_or_init(|| {
            let build = |allow_private: bool| {
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .no_proxy()
                    .timeout(self.timeout)
                    .connect_timeout(self.timeout.min(Duration::from_secs(5)))
                    .user_agent("forgebench-push/1")
                    .pool_idle_timeout(POOL_IDLE_TIMEOUT)
                    .dns_resolver(Arc::new(GuardedResolver {
                        policy: self.policy(allow_private),
                        resolver: self.resolver.clone(),
                    }))
                    .build()
                    .map_err(|error| error.to_string())
            };
            Ok((build(false)?, build(true)?))
        });
        match clients {
            Ok((strict, private)) => Ok(if allow_private { private } else { strict }),
            Err(error) => {
                tracing::error!(error = %error, "cannot build the push HTTP client");
                Err(DialError::Other)
            }
        }
    }

    pub fn policy(&self, allow_private: bool) -> AddressPolicy {
        AddressPolicy {
            allow_private,
            ..self.operator.clone()
        }
    }

    pub fn resolver(&self) -> &HostResolver {
        &self.resolver
    }

    /// Vets a URL as it would be dialed: resolves its host and checks every address against
    /// the policy.
    pub async fn vet(&self, url: &str, allow_private: bool) -> Result<PushUrl, Refusal> {
        let parsed = PushUrl::parse(url)?;
        let addresses = match &parsed.host {
            Host::Address(address) => Ok(vec![*address]),
            Host::Name(name) => self.resolver.resolve(name, parsed.port).await,
        };
        if let Err(refusal) = addresses.and_then(|addresses| {
            self.policy(allow_private)
                .check_destination(&parsed, &addresses)
        }) {
            // The caller sees only the rules; the precise reason is for the operator.
            tracing::info!(refusal = ?refusal, "push destination refused");
            return Err(refusal);
        }
        Ok(parsed)
    }

    /// Vets a URL as it is saved: as [`Dialer::vet`], except that a name which resolves to no
    /// address now is taken as it is, since every dial resolves and checks it again (a name
    /// not yet in DNS, or a resolver that does not answer, says nothing against the URL).
    pub async fn vet_to_save(&self, url: &str, allow_private: bool) -> Result<PushUrl, Refusal> {
        match self.vet(url, allow_private).await {
            Err(Refusal::Unresolvable) => PushUrl::parse(url),
            vetted => vetted,
        }
    }

    /// The time one POST is given, unless a breaker gives less (`push/breaker.rs`).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// POSTs `body` to `url` with `headers` within `timeout` (at most the dialer's), the guard
    /// applied to this very dial.
    pub async fn post(
        &self,
        url: &str,
        allow_private: bool,
        headers: reqwest::header::HeaderMap,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<EndpointResponse, DialError> {
        let parsed = self
            .vet(url, allow_private)
            .await
            .map_err(DialError::Refused)?;
        let response = self
            .client(allow_private)?
            .post(parsed.url)
            .timeout(timeout.min(self.timeout))
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|error| classify(&error))?;
        read_response(response, MAX_RESPONSE_BYTES).await
    }

    /// GETs `url` (never a private address), the guard applied to this very dial, reading at
    /// most `max_bytes` of the body: how the gateway reads an OpenID Connect issuer's documents.
    pub async fn get(&self, url: &str, max_bytes: usize) -> Result<EndpointResponse, DialError> {
        let parsed = self.vet(url, false).await.map_err(DialError::Refused)?;
        let response = self
            .client(false)?
            .get(parsed.url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|error| classify(&error))?;
        read_response(response, max_bytes).await
    }
}

/// The status, the headers that matter and at most `max_bytes` of the body of `response`.
async fn read_response(
    mut response: reqwest::Response,
    max_bytes: usize,
) -> Result<EndpointResponse, DialError> {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|error| classify(&error))? {
        if body.len() + chunk.len() > max_bytes {
            return Err(DialError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(EndpointResponse {
        status,
        content_type,
        retry_after,
        body,
    })
}

fn classify(error: &reqwest::Error) -> DialError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if let Some(refusal) = cause.downcast_ref::<Refusal>() {
            return DialError::Refused(refusal.clone());
        }
        source = cause.source();
    }
    if error.is_timeout() {
        DialError::Timeout
    } else if error.is_connect() {
        DialError::Connect
    } else {
        DialError::Other
    }
}
