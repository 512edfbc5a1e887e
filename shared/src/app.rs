//! The application state every handler borrows: the store, the configuration, the clients and
//! caches, built once per process.

use std::sync::Arc;
use std::time::Duration;

use aws_config::timeout::TimeoutConfig;
use aws_config::BehaviorVersion;

use crate::bodies::Bodies;
use crate::config::{Config, ConfigError};
use crate::domain::signing::KeyPurpose;
use crate::on_first_use::OnFirstUse;
use crate::push::{Dialer, Queue, Worker};
use crate::sdk_http::TlsSetupError;
use crate::signing::SigningCache;
use crate::store::Store;
use crate::vault::Vault;

/// Remembers recent key lookups so a busy callee does not pay one read per request.
pub(crate) type KeyCache = crate::cache::ExpiringCache<crate::domain::Principal>;

/// Remembers tokens already checked (by the token's hash), each with its `exp`.
pub(crate) type TokenCache = crate::cache::ExpiringCache<(crate::domain::Principal, u64)>;

/// Remembers which tenant trusts an (issuer, audience) pair, and which pairs none does.
pub(crate) type TrustCache = crate::cache::ExpiringCache<Option<crate::store::TrustClaim>>;

/// Remembers recent console session lookups (by the session token's hash).
pub(crate) type SessionCache = crate::cache::ExpiringCache<crate::store::SessionRecord>;

pub struct App {
    pub store: Store,
    pub bodies: Bodies,
    pub queue: Queue,
    pub vault: Vault,
    pub dialer: Dialer,
    pub config: Config,
    /// The card-signing key.
    pub signing: Arc<SigningCache>,
    /// The key that signs push deliveries, apart from the card key (its own KMS purpose).
    pub webhook_signing: Arc<SigningCache>,
    pub(crate) key_cache: KeyCache,
    /// Hashes of keys found to be no key ([`crate::http::auth::UNKNOWN_KEY_TTL`]).
    pub(crate) unknown_keys: crate::cache::ExpiringCache<()>,
    pub(crate) token_cache: TokenCache,
    pub(crate) trust_cache: TrustCache,
    /// The OpenID Connect issuers' keys this process read.
    pub oidc: crate::oidc::Oidc,
    pub(crate) session_cache: SessionCache,
    /// The push worker's notification breakers, kept across its batches.
    pub(crate) push_breakers: Arc<crate::push::breaker::Breakers>,
    /// What the push worker knows of its endpoints' health, kept across its batches.
    pub(crate) push_health: Arc<crate::push::health::HealthBook>,
    /// The callees the push worker marked to have new push tasks parked at their open.
    pub(crate) push_held_at_open: Arc<crate::push::held_at_open::HeldAtOpen>,
}

/// Builds the SDK configuration from the standard AWS settings (region, credentials, and the
/// `AWS_ENDPOINT_URL*` endpoint overrides the local stack uses), with timeouts that turn an
/// unreachable service into a prompt 503 instead of a hung request, over the HTTPS client of
/// [`crate::sdk_http`] (compiled-in trust roots: no certificate store to read at cold start;
/// `FORGEBENCH_EXTRA_CA_FILE` names a PEM file of further authorities to trust).
pub async fn sdk_config() -> Result<aws_config::SdkConfig, ConfigError> {
    const EXTRA_AUTHORITIES: &str = "FORGEBENCH_EXTRA_CA_FILE";
    let extra_authorities = match std::env::var_os(EXTRA_AUTHORITIES) {
        Some(path) if !path.is_empty() => Some(
            std::fs::read(&path)
                .map_err(|error| ConfigError::Invalid(EXTRA_AUTHORITIES, error.to_string()))?,
        ),
        _ => None,
    };
    let tls =
        crate::sdk_http::aws_tls_config(extra_authorities.as_deref()).map_err(
            |error| match error {
                TlsSetupError::Pem(reason) => ConfigError::Invalid(EXTRA_AUTHORITIES, reason),
                TlsSetupError::Rustls(error) => ConfigError::Tls(error.to_string()),
            },
        )?;
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(crate::sdk_http::http_client(tls));
    // Inside Lambda the runtime hands the function its credentials and region in the
    // environment; naming those providers skips building the full default chains (profile
    // files, SSO, web identity, container and instance metadata), which is most of the SDK's
    // share of a cold start.
    if std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some() {
        loader = loader
            .credentials_provider(
                aws_config::environment::EnvironmentVariableCredentialsProvider::new(),
            )
            .region(aws_config::environment::EnvironmentVariableRegionProvider::new());
    }
    Ok(loader
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(2))
                .operation_attempt_timeout(Duration::from_secs(5))
                .operation_timeout(Duration::from_secs(12))
                .build(),
        )
        .load()
        .await)
}

impl App {
    /// The task layer over this process's store, body store and queue.
    pub fn tasks(&self) -> crate::tasks::Tasks<'_> {
        crate::tasks::Tasks::new(&self.store, &self.bodies, &self.queue)
    }

    /// Assembles the app from its clients; the queue, the KMS key and the body bucket come from
    /// `config`.
    pub fn new(
        dynamodb: aws_sdk_dynamodb::Client,
        sqs: impl Into<OnFirstUse<aws_sdk_sqs::Client>>,
        kms: impl Into<OnFirstUse<aws_sdk_kms::Client>>,
        s3: impl Into<OnFirstUse<aws_sdk_s3::Client>>,
        config: Config,
    ) -> Result<App, ConfigError> {
        let dialer = Dialer::new(
            config.push_allowed_cidrs.clone(),
            config.push_resolve.clone(),
            config.push_timeout,
        );
        Ok(App {
            store: Store::new(dynamodb, config.table.clone())
                .with_settings_ttl(config.key_cache_ttl)
                .with_index_units(config.index_units)
                .with_claim_poll_interval(config.claim_poll_interval),
            bodies: Bodies::new(s3, config.body_bucket.clone(), config.kms_key_id.clone()),
            queue: Queue::new(sqs, config.push_queue_url.clone()),
            vault: Vault::new(kms, config.kms_key_id.clone()),
            dialer,
            signing: Arc::new(SigningCache::new(
                KeyPurpose::Cards,
                config.signing_key_lifetime,
            )),
            webhook_signing: Arc::new(SigningCache::new(
                KeyPurpose::Webhooks,
                config.signing_key_lifetime,
            )),
            oidc: crate::oidc::Oidc::new(Dialer::new(
                config.push_allowed_cidrs.clone(),
                config.push_resolve.clone(),
                crate::oidc::FETCH_TIMEOUT,
            )),
            config,
            key_cache: KeyCache::default(),
            unknown_keys: Default::default(),
            token_cache: TokenCache::default(),
            trust_cache: TrustCache::default(),
            session_cache: SessionCache::default(),
            push_breakers: Arc::default(),
            push_health: Arc::default(),
            push_held_at_open: Arc::default(),
        })
    }

    /// The app as a function runs it: configuration from the environment, the DynamoDB client
    /// built now (every route reads the store), the SQS, KMS and S3 clients on first use (most
    /// routes never call them).
    pub async fn from_env() -> Result<App, ConfigError> {
        use crate::telemetry::TraceCalls;
        let config = Config::from_env()?;
        let sdk = sdk_config().await?;
        let (for_sqs, for_kms, for_s3) = (sdk.clone(), sdk.clone(), sdk.clone());
        // Every AWS call is a client span of the trace it is made in (`telemetry/aws_calls.rs`).
        App::new(
            aws_sdk_dynamodb::Client::from_conf(
                aws_sdk_dynamodb::config::Builder::from(&sdk)
                    .interceptor(TraceCalls)
                    .build(),
            ),
            OnFirstUse::new(move || {
                aws_sdk_sqs::Client::from_conf(
                    aws_sdk_sqs::config::Builder::from(&for_sqs)
                        .interceptor(TraceCalls)
                        .build(),
                )
            }),
            OnFirstUse::new(move || {
                aws_sdk_kms::Client::from_conf(
                    aws_sdk_kms::config::Builder::from(&for_kms)
                        .interceptor(TraceCalls)
                        .build(),
                )
            }),
            OnFirstUse::new(move || crate::bodies::s3_client(&for_s3)),
            config,
        )
    }

    /// The push worker over this app's clients.
    pub fn worker(&self) -> Worker {
        Worker {
            store: self.store.clone(),
            vault: self.vault.clone(),
            queue: self.queue.clone(),
            bodies: self.bodies.clone(),
            dialer: self.dialer.clone(),
            schedule: self.config.retry_schedule.clone(),
            signing: Arc::clone(&self.webhook_signing),
            agent_ttl: self.config.key_cache_ttl,
            breakers: Arc::clone(&self.push_breakers),
            tenant_max_pushes: self.config.tenant_max_pushes,
            health: Arc::clone(&self.push_health),
            disable_rule: self.config.endpoint_disable,
            held_at_open: Arc::clone(&self.push_held_at_open),
        }
    }

    /// The signing key cache of `purpose`.
    pub fn signing_cache(&self, purpose: KeyPurpose) -> &SigningCache {
        match purpose {
            KeyPurpose::Cards => &self.signing,
            KeyPurpose::Webhooks => &self.webhook_signing,
        }
    }
}
