//! The body store: message and artifact bodies too large to stay inside a task item, as private
//! S3 objects encrypted with the project's KMS key (SSE-KMS), written before the item that
//! points at them and read back whenever a task is shown or delivered in full.
//!
//! Keys are `tasks/{tenant}/{task}/{sha256}.json`: per task, so a lifecycle rule on `tasks/`
//! expires them with the task's retention, and by content, so a retried write is the same object.

use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::ServerSideEncryption;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use serde_json::Value;

use crate::domain::content::{BodyRef, PackedBody, Stored, INLINE_BODY_BYTES};
use crate::domain::task::{Shown, Task};
use crate::domain::Message;
use crate::on_first_use::OnFirstUse;

/// What can go wrong with the body store.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The store could not be reached, timed out or failed on its side.
    #[error("body store unavailable: {0}")]
    Unavailable(String),
    /// A referenced body is not there (expired with its task, or never written).
    #[error("body {0} is missing")]
    Missing(String),
    /// A body is there but is not the one referenced, or not JSON.
    #[error("body {0} is corrupt")]
    Corrupt(String),
    /// No bucket is configured (`FORGEBENCH_BODY_BUCKET`) though a body needs one.
    #[error("FORGEBENCH_BODY_BUCKET is not set; a body larger than {INLINE_BODY_BYTES} bytes cannot be stored")]
    NotConfigured,
    /// Anything else the service refused (permissions, configuration: a bug or a deployment fault).
    #[error("the body store refused the request: {0}")]
    Rejected(String),
}

fn classify<E>(error: SdkError<E, HttpResponse>, key: &str) -> BodyError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match &error {
        SdkError::ServiceError(context) if context.raw().status().is_server_error() => {
            // Whatever its body says (a bare 500 names no code): the service failing.
            BodyError::Unavailable(context.raw().status().to_string())
        }
        SdkError::ServiceError(context) => {
            let code = context.err().code().unwrap_or("Unknown");
            match code {
                "NoSuchKey" | "NotFound" => BodyError::Missing(key.to_owned()),
                "SlowDown" | "InternalError" | "ServiceUnavailable" | "RequestTimeout"
                | "Throttling" => BodyError::Unavailable(code.to_owned()),
                _ => BodyError::Rejected(format!(
                    "{code}: {}",
                    context.err().message().unwrap_or_default()
                )),
            }
        }
        SdkError::ConstructionFailure(_) => BodyError::Rejected(format!("{error:?}")),
        _ => BodyError::Unavailable(error.to_string()),
    }
}

/// Puts `found` bodies in place of their references throughout `task`; a body that is not the
/// message or artifact list its place holds is corrupt.
fn replace_references(task: &mut Task, found: &[(BodyRef, Value)]) -> Result<(), BodyError> {
    for (reference, body) in found {
        let corrupt = |_| BodyError::Corrupt(reference.key.clone());
        task.input.fill(reference, body).map_err(corrupt)?;
        task.artifacts.fill(reference, body).map_err(corrupt)?;
        if let Some(message) = task.status_message.as_mut() {
            message.fill(reference, body).map_err(corrupt)?;
        }
        for message in &mut task.history {
            message.fill(reference, body).map_err(corrupt)?;
        }
    }
    Ok(())
}

/// Puts the bodies this request wrote (`known`) in place of their references, with no call to
/// the store; references to other bodies stay.
pub fn resolve_from_memory(task: &mut Task, known: &[&PackedBody]) -> Result<(), BodyError> {
    let found: Vec<(BodyRef, Value)> = known
        .iter()
        .filter_map(|body| body.offload.as_ref())
        .filter_map(|(reference, bytes)| {
            Some((reference.clone(), serde_json::from_slice(bytes).ok()?))
        })
        .collect();
    replace_references(task, &found)
}

/// The bucket and the client that reaches it.
#[derive(Clone, Debug)]
pub struct Bodies {
    client: OnFirstUse<aws_sdk_s3::Client>,
    bucket: Option<String>,
    kms_key_id: Option<String>,
}

/// An S3 client from the shared SDK settings. Path-style addressing when an endpoint override is
/// configured (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_S3`): the emulators and S3-compatible stores
/// serve buckets under the path, not as host names.
pub fn s3_client(sdk: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    let overridden =
        sdk.endpoint_url().is_some() || std::env::var_os("AWS_ENDPOINT_URL_S3").is_some();
    aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(sdk)
            .force_path_style(overridden)
            .interceptor(crate::telemetry::TraceCalls)
            .build(),
    )
}

impl Bodies {
    pub fn new(
        client: impl Into<OnFirstUse<aws_sdk_s3::Client>>,
        bucket: Option<String>,
        kms_key_id: Option<String>,
    ) -> Bodies {
        Bodies {
            client: client.into(),
            bucket,
            kms_key_id,
        }
    }

    fn bucket(&self) -> Result<&str, BodyError> {
        self.bucket.as_deref().ok_or(BodyError::NotConfigured)
    }

    /// Writes every body of `packed` that does not stay inline, all at once.
    pub async fn store(&self, packed: &[&PackedBody]) -> Result<(), BodyError> {
        let writes = packed
            .iter()
            .filter_map(|body| body.offload.as_ref())
            .map(|(reference, bytes)| self.put(reference, bytes.clone()));
        futures::future::try_join_all(writes).await.map(|_| ())
    }

    async fn put(&self, reference: &BodyRef, bytes: Vec<u8>) -> Result<(), BodyError> {
        let mut request = self
            .client
            .get()
            .put_object()
            .bucket(self.bucket()?)
            .key(&reference.key)
            .content_type("application/json")
            .body(ByteStream::from(bytes));
        if let Some(key_id) = &self.kms_key_id {
            request = request
                .server_side_encryption(ServerSideEncryption::AwsKms)
                .ssekms_key_id(key_id)
                .bucket_key_enabled(true);
        }
        request
            .send()
            .await
            .map(|_| ())
            .map_err(|error| classify(error, &reference.key))
    }

    async fn get(&self, reference: &BodyRef) -> Result<Value, BodyError> {
        let output = self
            .client
            .get()
            .get_object()
            .bucket(self.bucket()?)
            .key(&reference.key)
            .send()
            .await
            .map_err(|error| classify(error, &reference.key))?;
        let bytes = output
            .body
            .collect()
            .await
            .map_err(|error| BodyError::Unavailable(error.to_string()))?
            .into_bytes();
        if !reference.matches(&bytes) {
            return Err(BodyError::Corrupt(reference.key.clone()));
        }
        serde_json::from_slice(&bytes).map_err(|_| BodyError::Corrupt(reference.key.clone()))
    }

    /// Puts every stored body of `task` back in place of its reference, reading each distinct
    /// body once and all of them at once; bodies this request just wrote (`known`) are taken
    /// from memory. A task with every body inline costs nothing.
    pub async fn resolve(&self, task: &mut Task, known: &[&PackedBody]) -> Result<(), BodyError> {
        resolve_from_memory(task, known)?;
        self.resolve_shown(task, Shown::ALL).await
    }

    /// [`Bodies::resolve`] for the parts a reader shows: the bodies of the others stay
    /// references, unread.
    pub async fn resolve_shown(&self, task: &mut Task, shown: Shown) -> Result<(), BodyError> {
        let wanted = task.body_references(shown);
        if wanted.is_empty() {
            return Ok(());
        }
        let bodies =
            futures::future::try_join_all(wanted.iter().map(|reference| self.get(reference)))
                .await?;
        let found: Vec<(BodyRef, Value)> = wanted.into_iter().zip(bodies).collect();
        replace_references(task, &found)
    }

    /// One stored message in full, as JSON (read from the store when it is a reference).
    pub async fn resolve_message(&self, message: &Stored<Message>) -> Result<Value, BodyError> {
        match message {
            Stored::Ref { reference, .. } => self.get(reference).await,
            Stored::Inline(_) => Ok(message.to_value()),
        }
    }

    /// Whether any S3 client was built yet (for the cold-start benchmark's accounting).
    pub fn is_built(&self) -> bool {
        self.client.is_built()
    }
}
