//! The HTTPS client the AWS SDK clients (DynamoDB, SQS, KMS) share: hyper over rustls, trusting
//! the Mozilla root program compiled into the binary (`webpki-roots`).
//!
//! Why not the SDK's default client: it trusts the platform's certificate store, which it reads
//! and decodes from PEM when the first SDK client is built. That is about 2.5 ms of every cold
//! start, more than the rest of a function's initialisation together (docs/benchmarks.md). The
//! AWS endpoints a function calls chain to Amazon Trust Services roots, which are in the Mozilla
//! program, so the compiled-in store verifies them with no file read at all.
//!
//! Timeouts follow the SDK's connector settings (connect and read timeouts; the operation and
//! attempt timeouts are the SDK's own), and failures are classified the way the SDK's retry
//! strategy expects: connection failures and closed connections are retryable I/O errors,
//! elapsed timeouts are timeouts.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::retries::ErrorKind;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::Response as HttpResponse;
use aws_smithy_types::body::SdkBody;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector as TcpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

/// Idle keep-alive connections are closed after this long (the SDK's default is 90 s; DynamoDB
/// itself drops idle connections sooner, and a frozen Lambda should not wake to a stale pool).
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(50);

/// The TLS configuration for AWS endpoints: TLS 1.2 and 1.3 with aws-lc-rs, the compiled-in
/// Mozilla roots, plus the PEM certificates of `extra_authorities` when given (for an endpoint
/// behind a private authority, such as an emulator with its own certificate or an inspecting
/// proxy). The connector offers HTTP/1.1 by ALPN.
pub fn aws_tls_config(
    extra_authorities: Option<&[u8]>,
) -> Result<rustls::ClientConfig, TlsSetupError> {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if let Some(pem) = extra_authorities {
        let mut added = 0;
        for certificate in CertificateDer::pem_slice_iter(pem) {
            let certificate = certificate.map_err(|error| TlsSetupError::Pem(error.to_string()))?;
            roots
                .add(certificate)
                .map_err(|error| TlsSetupError::Pem(error.to_string()))?;
            added += 1;
        }
        if added == 0 {
            return Err(TlsSetupError::Pem("no certificate in the file".into()));
        }
    }
    Ok(tls_config(roots)?)
}

/// Why the SDK's TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("extra certificate authorities: {0}")]
    Pem(String),
    #[error(transparent)]
    Rustls(#[from] rustls::Error),
}

/// A TLS configuration trusting exactly `roots`.
pub fn tls_config(roots: rustls::RootCertStore) -> Result<rustls::ClientConfig, rustls::Error> {
    Ok(rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth())
}

/// The SDK's HTTP client over `tls` (plain `http://` endpoints, as the local stack uses, are
/// served too).
pub fn http_client(tls: rustls::ClientConfig) -> SharedHttpClient {
    SharedHttpClient::new(TlsHttpClient {
        tls: Arc::new(tls),
        connectors: Mutex::default(),
    })
}

/// The connector settings a pool is built for: connect and read timeouts.
type Timeouts = (Option<Duration>, Option<Duration>);

/// Hands the SDK one connector (one connection pool) per distinct timeout setting.
#[derive(Debug)]
struct TlsHttpClient {
    tls: Arc<rustls::ClientConfig>,
    connectors: Mutex<HashMap<Timeouts, SharedHttpConnector>>,
}

impl HttpClient for TlsHttpClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        let key = (settings.connect_timeout(), settings.read_timeout());
        let build = || SharedHttpConnector::new(PooledConnector::new(&self.tls, key.0, key.1));
        match self.connectors.lock() {
            Ok(mut connectors) => connectors.entry(key).or_insert_with(build).clone(),
            // A poisoned lock only means another thread panicked mid-insert; a fresh pool is
            // still correct, just not shared.
            Err(_) => build(),
        }
    }
}

#[derive(Debug)]
struct PooledConnector {
    client: Client<HttpsConnector<TcpConnector>, SdkBody>,
    read_timeout: Option<Duration>,
}

impl PooledConnector {
    fn new(
        tls: &Arc<rustls::ClientConfig>,
        connect_timeout: Option<Duration>,
        read_timeout: Option<Duration>,
    ) -> PooledConnector {
        let mut tcp = TcpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(connect_timeout);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls.as_ref().clone())
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp);
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .build(https);
        PooledConnector {
            client,
            read_timeout,
        }
    }
}

impl HttpConnector for PooledConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let request = match request.try_into_http1x() {
            Ok(request) => request,
            Err(error) => {
                return HttpConnectorFuture::ready(Err(ConnectorError::user(error.into())))
            }
        };
        let response = self.client.request(request);
        let read_timeout = self.read_timeout;
        HttpConnectorFuture::new(async move {
            let response = match read_timeout {
                Some(limit) => tokio::time::timeout(limit, response)
                    .await
                    .map_err(|elapsed| ConnectorError::timeout(elapsed.into()))?,
                None => response.await,
            }
            .map_err(classify)?;
            HttpResponse::try_from(response.map(SdkBody::from_body_1_x))
                .map_err(|error| ConnectorError::other(error.into(), None))
        })
    }
}

/// Sorts a hyper failure into what the SDK's retry strategy acts on.
fn classify(error: hyper_util::client::legacy::Error) -> ConnectorError {
    let timed_out = source_chain(&error).any(|source| {
        source
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
            || source
                .downcast_ref::<hyper::Error>()
                .is_some_and(hyper::Error::is_timeout)
    });
    if timed_out {
        return ConnectorError::timeout(error.into());
    }
    if error.is_connect() {
        return ConnectorError::io(error.into());
    }
    let hyper_error = source_chain(&error).find_map(|source| source.downcast_ref::<hyper::Error>());
    match hyper_error {
        Some(failure) if failure.is_user() => ConnectorError::user(error.into()),
        Some(failure) if failure.is_incomplete_message() => {
            ConnectorError::other(error.into(), Some(ErrorKind::TransientError))
        }
        Some(failure) if failure.is_closed() || failure.is_canceled() => {
            ConnectorError::io(error.into())
        }
        _ if source_chain(&error).any(|source| source.is::<std::io::Error>()) => {
            ConnectorError::io(error.into())
        }
        _ => ConnectorError::other(error.into(), None),
    }
}

fn source_chain<'a>(
    error: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(error), |&error| error.source())
}
