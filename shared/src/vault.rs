//! Sealed secrets: endpoint credentials encrypted with KMS under an encryption context naming the
//! tenant and the agent, so a sealed value copied onto another agent does not open, and the
//! purpose, on which IAM grants are conditioned (`kms:EncryptionContext:purpose`), so only the
//! functions that need endpoint secrets can open them.

use aws_sdk_kms::primitives::Blob;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use crate::on_first_use::OnFirstUse;

#[derive(Clone, Debug)]
pub struct Vault {
    client: OnFirstUse<aws_sdk_kms::Client>,
    key_id: Option<String>,
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

    /// Decrypts what [`Vault::seal_bytes`] made under the same `context`.
    pub async fn unseal_bytes(
        &self,
        context: &[(&str, &str)],
        sealed: &str,
    ) -> Result<Vec<u8>, VaultError> {
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

impl Vault {
    /// Seals a push notification config's credentials for `(tenant, task, config)`, so sealed
    /// credentials copied onto another config do not open.
    pub async fn seal_notify(
        &self,
        tenant_id: &str,
        task_id: &str,
        config_id: &str,
        credentials: &str,
    ) -> Result<String, VaultError> {
        let context = notify_context(tenant_id, task_id, config_id);
        self.seal_bytes(&context, credentials.as_bytes()).await
    }

    /// Opens what [`Vault::seal_notify`] sealed for the same config.
    pub async fn unseal_notify(
        &self,
        tenant_id: &str,
        task_id: &str,
        config_id: &str,
        sealed: &str,
    ) -> Result<String, VaultError> {
        let context = notify_context(tenant_id, task_id, config_id);
        let plaintext = self.unseal_bytes(&context, sealed).await?;
        String::from_utf8(plaintext).map_err(|_| VaultError::Refused)
    }
}

fn notify_context<'a>(
    tenant_id: &'a str,
    task_id: &'a str,
    config_id: &'a str,
) -> [(&'a str, &'a str); 4] {
    [
        ("tenant_id", tenant_id),
        ("task_id", task_id),
        ("config_id", config_id),
        ("purpose", NOTIFY_CREDENTIALS_PURPOSE),
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
