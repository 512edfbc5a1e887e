//! Sealed secrets: endpoint credentials encrypted with KMS under an encryption context naming the
//! tenant and the agent, so a sealed value copied onto another agent does not open, and the
//! purpose, on which IAM grants are conditioned (`kms:EncryptionContext:purpose`), so only the
//! functions that need endpoint secrets can open them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use aws_sdk_kms::primitives::Blob;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sha2::{Digest, Sha256};

use crate::domain::notify::NotifyConfig;
use crate::on_first_use::OnFirstUse;

#[derive(Clone, Debug)]
pub struct Vault {
    client: OnFirstUse<aws_sdk_kms::Client>,
    key_id: Option<String>,
    opened: Opened,
}

/// How long this process keeps a value it opened: a push delivery to an endpoint whose secret
/// was opened within it decrypts nothing. A changed secret is a new sealed value, opened afresh;
/// a KMS grant taken away stops new values opening at once, and values already open after this
/// long.
pub const OPENED_LIFETIME: Duration = Duration::from_secs(300);
/// Most opened values kept at once; past it the oldest go first.
const MOST_OPENED: usize = 1024;

/// Values this process opened, by the digest of their encryption context and sealed form, so a
/// sealed value under another context (copied onto another agent) is never answered from here:
/// it goes to KMS, which refuses it. Never printed.
#[derive(Clone, Default)]
struct Opened(Arc<Mutex<HashMap<[u8; 32], OpenedValue>>>);

/// When a value was opened, and what it opened to.
type OpenedValue = (Instant, Vec<u8>);

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Opened(..)")
    }
}

impl Opened {
    fn key(context: &[(&str, &str)], sealed: &str) -> [u8; 32] {
        let mut digest = Sha256::new();
        for (name, value) in context {
            for part in [name, value] {
                digest.update((part.len() as u64).to_be_bytes());
                digest.update(part.as_bytes());
            }
        }
        digest.update(sealed.as_bytes());
        digest.finalize().into()
    }

    fn get(&self, key: &[u8; 32]) -> Option<Vec<u8>> {
        let opened = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (at, plaintext) = opened.get(key)?;
        (at.elapsed() < OPENED_LIFETIME).then(|| plaintext.clone())
    }

    fn keep(&self, key: [u8; 32], plaintext: &[u8]) {
        let mut opened = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        opened.retain(|_, (at, _)| at.elapsed() < OPENED_LIFETIME);
        if opened.len() >= MOST_OPENED {
            let oldest = opened
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| *k);
            if let Some(oldest) = oldest {
                opened.remove(&oldest);
            }
        }
        opened.insert(key, (Instant::now(), plaintext.to_vec()));
    }
}

#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    #[error("KMS unavailable: {0}")]
    Unavailable(String),
    #[error("no KMS key configured (FORGEBENCH_KMS_KEY_ID)")]
    NoKey,
    #[error("the sealed value does not open under this context")]
    Refused,
}

/// Sorts a KMS error by its error code: a ciphertext that does not open (or may not be opened)
/// under this context is refused; anything else the service says, or no answer, is the service
/// being unavailable for now.
fn classify<E, R>(error: aws_sdk_kms::error::SdkError<E, R>) -> VaultError
where
    E: aws_sdk_kms::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    match &error {
        aws_sdk_kms::error::SdkError::ServiceError(context) => {
            let code = context.err().code().unwrap_or("Unknown");
            match code {
                "InvalidCiphertextException"
                | "AccessDeniedException"
                | "IncorrectKeyException" => VaultError::Refused,
                _ => VaultError::Unavailable(format!(
                    "{code}: {}",
                    context.err().message().unwrap_or_default()
                )),
            }
        }
        _ => VaultError::Unavailable(error.to_string()),
    }
}

impl Vault {
    pub fn new(
        client: impl Into<OnFirstUse<aws_sdk_kms::Client>>,
        key_id: Option<String>,
    ) -> Vault {
        Vault {
            client: client.into(),
            key_id,
            opened: Opened::default(),
        }
    }

    pub fn key_id(&self) -> Option<&str> {
        self.key_id.as_deref()
    }

    /// Encrypts `plaintext` under `context`; returns base64 ciphertext.
    pub async fn seal_bytes(
        &self,
        context: &[(&str, &str)],
        plaintext: &[u8],
    ) -> Result<String, VaultError> {
        let key_id = self.key_id.as_deref().ok_or(VaultError::NoKey)?;
        let mut request = self
            .client
            .get()
            .encrypt()
            .key_id(key_id)
            .plaintext(Blob::new(plaintext));
        for (name, value) in context {
            request = request.encryption_context(*name, *value);
        }
        let output = request.send().await.map_err(classify)?;
        let ciphertext = output.ciphertext_blob().ok_or(VaultError::Refused)?;
        Ok(STANDARD.encode(ciphertext.as_ref()))
    }

    /// Decrypts what [`Vault::seal_bytes`] made under the same `context`: from this process's
    /// opened values when it opened the same sealed value under the same context within
    /// [`OPENED_LIFETIME`], else with KMS.
    pub async fn unseal_bytes(
        &self,
        context: &[(&str, &str)],
        sealed: &str,
    ) -> Result<Vec<u8>, VaultError> {
        let key = Opened::key(context, sealed);
        if let Some(plaintext) = self.opened.get(&key) {
            return Ok(plaintext);
        }
        let plaintext = self.decrypt(context, sealed).await?;
        self.opened.keep(key, &plaintext);
        Ok(plaintext)
    }

    async fn decrypt(&self, context: &[(&str, &str)], sealed: &str) -> Result<Vec<u8>, VaultError> {
        let ciphertext = STANDARD.decode(sealed).map_err(|_| VaultError::Refused)?;
        let mut request = self
            .client
            .get()
            .decrypt()
            .ciphertext_blob(Blob::new(ciphertext));
        for (name, value) in context {
            request = request.encryption_context(*name, *value);
        }
        let output = request.send().await.map_err(classify)?;
        let plaintext = output.plaintext().ok_or(VaultError::Refused)?;
        Ok(plaintext.as_ref().to_vec())
    }

    /// Seals an endpoint secret for `(tenant, agent)`.
    pub async fn seal(
        &self,
        tenant_id: &str,
        agent_id: &str,
        secret: &str,
    ) -> Result<String, VaultError> {
        self.seal_bytes(&endpoint_context(tenant_id, agent_id), secret.as_bytes())
            .await
    }

    /// Opens an endpoint secret sealed for the same `(tenant, agent)`.
    pub async fn unseal(
        &self,
        tenant_id: &str,
        agent_id: &str,
        sealed: &str,
    ) -> Result<String, VaultError> {
        let plaintext = self
            .unseal_bytes(&endpoint_context(tenant_id, agent_id), sealed)
            .await?;
        String::from_utf8(plaintext).map_err(|_| VaultError::Refused)
    }
}

/// The encryption-context `purpose` of push notification configs' credentials.
pub const NOTIFY_CREDENTIALS_PURPOSE: &str = "notify-credentials";

/// The encryption-context `purpose` of push notification configs' tokens.
pub const NOTIFY_TOKEN_PURPOSE: &str = "notify-token";

/// A push notification config's secret: which one, sealed for one config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotifySecret {
    Credentials,
    Token,
}

impl NotifySecret {
    fn purpose(self) -> &'static str {
        match self {
            NotifySecret::Credentials => NOTIFY_CREDENTIALS_PURPOSE,
            NotifySecret::Token => NOTIFY_TOKEN_PURPOSE,
        }
    }
}

impl Vault {
    /// Seals a push notification config's secret for `(tenant, task, config, secret)`, so a
    /// sealed secret copied onto another config, or into the other field, does not open.
    pub async fn seal_notify(
        &self,
        (tenant_id, task_id, config_id): (&str, &str, &str),
        secret: NotifySecret,
        value: &str,
    ) -> Result<String, VaultError> {
        let context = notify_context(tenant_id, task_id, config_id, secret);
        self.seal_bytes(&context, value.as_bytes()).await
    }

    /// Opens what [`Vault::seal_notify`] sealed for the same config and secret.
    pub async fn unseal_notify(
        &self,
        (tenant_id, task_id, config_id): (&str, &str, &str),
        secret: NotifySecret,
        sealed: &str,
    ) -> Result<String, VaultError> {
        let context = notify_context(tenant_id, task_id, config_id, secret);
        let plaintext = self.unseal_bytes(&context, sealed).await?;
        String::from_utf8(plaintext).map_err(|_| VaultError::Refused)
    }
}

impl Vault {
    /// Opens `config`'s sealed token into its `token`, the form it is shown and sent in.
    pub async fn open_notify_token(&self, config: &mut NotifyConfig) -> Result<(), VaultError> {
        if let Some(sealed) = &config.sealed_token {
            let names = (
                config.tenant_id.as_str(),
                config.task_id.as_str(),
                config.id.as_str(),
            );
            config.token = Some(
                self.unseal_notify(names, NotifySecret::Token, sealed)
                    .await?,
            );
        }
        Ok(())
    }
}

fn notify_context<'a>(
    tenant_id: &'a str,
    task_id: &'a str,
    config_id: &'a str,
    secret: NotifySecret,
) -> [(&'a str, &'a str); 4] {
    [
        ("tenant_id", tenant_id),
        ("task_id", task_id),
        ("config_id", config_id),
        ("purpose", secret.purpose()),
    ]
}

/// The encryption-context `purpose` of endpoint secrets (signing keys use their own).
pub const ENDPOINT_SECRET_PURPOSE: &str = "endpoint-secret";

fn endpoint_context<'a>(tenant_id: &'a str, agent_id: &'a str) -> [(&'a str, &'a str); 3] {
    [
        ("tenant_id", tenant_id),
        ("agent_id", agent_id),
        ("purpose", ENDPOINT_SECRET_PURPOSE),
    ]
}
