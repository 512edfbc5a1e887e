//! The HTTPS client the SDK clients use (`forgebench::sdk_http`): DynamoDB Local behind a
//! TLS-terminating proxy, reached over `https://` through the real SDK. The server certificate
//! is verified against the roots the client is built with, name included.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::error::SdkError;
use forgebench::sdk_http::{aws_tls_config, http_client, tls_config, TlsSetupError};
use forgebench_tests::dynamodb_endpoint;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

/// A test certificate authority and a server certificate it issued for `server_name`.
struct Certificates {
    authority: rustls::pki_types::CertificateDer<'static>,
    authority_pem: String,
    server: rustls::pki_types::CertificateDer<'static>,
    server_key: rustls::pki_types::PrivateKeyDer<'static>,
}

fn certificates(server_name: &str) -> Certificates {
    let mut authority_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    authority_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let authority = CertifiedIssuer::self_signed(
        authority_params,
        KeyPair::generate().expect("authority key"),
    )
    .expect("authority certificate");
    let server_key = KeyPair::generate().expect("server key");
    let server = CertificateParams::new(vec![server_name.to_owned()])
        .expect("params")
        .signed_by(&server_key, &authority)
        .expect("server certificate");
    Certificates {
        authority: authority.der().clone(),
        authority_pem: authority.pem(),
        server: server.der().clone(),
        server_key: rustls::pki_types::PrivateKeyDer::Pkcs8(server_key.serialize_der().into()),
    }
}

/// Terminates TLS with `certificates` on a local port and forwards the plain bytes to DynamoDB
/// Local. Returns the `https://localhost:<port>` endpoint and the count of completed handshakes.
async fn tls_proxy(certificates: &Certificates) -> (String, Arc<AtomicUsize>) {
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("protocol versions")
    .with_no_client_auth()
    .with_single_cert(
        vec![certificates.server.clone()],
        certificates.server_key.clone_key(),
    )
    .expect("server config");
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    let target = dynamodb_endpoint().trim_start_matches("http://").to_owned();
    let handshakes = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&handshakes);
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            let (acceptor, target, counted) = (acceptor.clone(), target.clone(), counted.clone());
            tokio::spawn(async move {
                let Ok(mut inbound) = acceptor.accept(inbound).await else {
                    return;
                };
                counted.fetch_add(1, Ordering::SeqCst);
                if let Ok(mut outbound) = TcpStream::connect(&target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (format!("https://localhost:{port}"), handshakes)
}

fn dynamodb_over(endpoint: &str, tls: rustls::ClientConfig) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .http_client(http_client(tls))
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

fn roots(authority: &rustls::pki_types::CertificateDer<'static>) -> rustls::RootCertStore {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(authority.clone()).expect("authority parses");
    roots
}

#[tokio::test]
async fn sdk_calls_go_over_https_to_a_server_the_roots_vouch_for() {
    let certificates = certificates("localhost");
    let (endpoint, handshakes) = tls_proxy(&certificates).await;
    let trusting = dynamodb_over(
        &endpoint,
        tls_config(roots(&certificates.authority)).expect("tls config"),
    );
    let listed = trusting.list_tables().send().await;
    assert!(listed.is_ok(), "{listed:?}");
    assert!(handshakes.load(Ordering::SeqCst) >= 1);
}

#[tokio::test]
async fn a_server_outside_the_compiled_in_roots_is_refused_before_any_request() {
    let certificates = certificates("localhost");
    let (endpoint, handshakes) = tls_proxy(&certificates).await;
    // The deployed configuration: Mozilla's roots, which do not include the test authority.
    let deployed = dynamodb_over(&endpoint, aws_tls_config(None).expect("tls config"));
    let refused = deployed.list_tables().send().await;
    match refused {
        Err(SdkError::DispatchFailure(failure)) => assert!(failure.is_io(), "{failure:?}"),
        other => panic!("expected a dispatch failure, got {other:?}"),
    }
    assert_eq!(
        handshakes.load(Ordering::SeqCst),
        0,
        "no handshake completed"
    );
}

#[tokio::test]
async fn a_trusted_certificate_for_another_name_is_refused() {
    let certificates = certificates("dynamodb.example.com");
    let (endpoint, handshakes) = tls_proxy(&certificates).await;
    let client = dynamodb_over(
        &endpoint,
        tls_config(roots(&certificates.authority)).expect("tls config"),
    );
    assert!(client.list_tables().send().await.is_err());
    assert_eq!(
        handshakes.load(Ordering::SeqCst),
        0,
        "no handshake completed"
    );
}

#[tokio::test]
async fn an_extra_authority_file_is_trusted_beside_the_compiled_in_roots() {
    let certificates = certificates("localhost");
    let (endpoint, handshakes) = tls_proxy(&certificates).await;
    let with_extra = aws_tls_config(Some(certificates.authority_pem.as_bytes())).expect("config");
    let listed = dynamodb_over(&endpoint, with_extra)
        .list_tables()
        .send()
        .await;
    assert!(listed.is_ok(), "{listed:?}");
    assert_eq!(handshakes.load(Ordering::SeqCst), 1);
}

#[test]
fn an_extra_authority_file_without_certificates_is_a_configuration_error() {
    for unusable in [
        &b""[..],
        b"not a certificate",
        b"-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n",
    ] {
        assert!(
            matches!(aws_tls_config(Some(unusable)), Err(TlsSetupError::Pem(_))),
            "{:?}",
            String::from_utf8_lossy(unusable)
        );
    }
}
