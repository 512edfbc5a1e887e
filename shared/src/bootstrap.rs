//! Creates a local stack's resources from the deployment template's own definitions: the table
//! (`Table`), the push queue and its dead-letter queue (`PushQueue`, `PushDeadLetterQueue`), and
//! the key that seals secrets (`SecretsKey`). Nothing here is a second list that could drift.

use aws_sdk_sqs::types::QueueAttributeName;
use serde_yaml::Value;

use crate::store::schema::{TableSchema, TEMPLATE};
use crate::store::Store;

/// What a bootstrap made (or found).
#[derive(Debug, Clone)]
pub struct Resources {
    pub push_queue_url: String,
    pub push_dead_letter_queue_url: String,
    pub kms_key_id: String,
}

fn resource_properties(name: &str) -> Result<Value, String> {
    let document: Value = serde_yaml::from_str(TEMPLATE).map_err(|error| error.to_string())?;
    document
        .get("Resources")
        .and_then(|resources| resources.get(name))
        .and_then(|resource| resource.get("Properties"))
        .cloned()
        .ok_or_else(|| format!("template: Resources.{name}.Properties missing"))
}

fn number(properties: &Value, field: &str) -> Option<String> {
    properties
        .get(field)
        .and_then(Value::as_u64)
        .map(|value| value.to_string())
}

async fn create_queue(
    sqs: &aws_sdk_sqs::Client,
    name: &str,
    properties: &Value,
    dead_letter_arn: Option<&str>,
) -> Result<String, String> {
    let mut request = sqs.create_queue().queue_name(name);
    if let Some(value) = number(properties, "VisibilityTimeout") {
        request = request.attributes(QueueAttributeName::VisibilityTimeout, value);
    }
    if let Some(value) = number(properties, "MessageRetentionPeriod") {
        request = request.attributes(QueueAttributeName::MessageRetentionPeriod, value);
    }
    if let (Some(arn), Some(redrive)) = (dead_letter_arn, properties.get("RedrivePolicy")) {
        let max_receive = redrive
            .get("maxReceiveCount")
            .and_then(Value::as_u64)
            .ok_or("template: RedrivePolicy.maxReceiveCount missing")?;
        request = request.attributes(
            QueueAttributeName::RedrivePolicy,
            serde_json::json!({"deadLetterTargetArn": arn, "maxReceiveCount": max_receive})
                .to_string(),
        );
    }
    let output = request
        .send()
        .await
        .map_err(|error| format!("create queue {name}: {error:?}"))?;
    output
        .queue_url()
        .map(str::to_owned)
        .ok_or_else(|| format!("create queue {name}: no url"))
}

async fn queue_arn(sqs: &aws_sdk_sqs::Client, url: &str) -> Result<String, String> {
    let output = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|error| format!("queue attributes: {error:?}"))?;
    output
        .attributes()
        .and_then(|attributes| attributes.get(&QueueAttributeName::QueueArn))
        .cloned()
        .ok_or_else(|| "queue attributes: no arn".into())
}

async fn ensure_key(kms: &aws_sdk_kms::Client, alias: &str) -> Result<String, String> {
    if let Ok(found) = kms.describe_key().key_id(alias).send().await {
        if let Some(id) = found
            .key_metadata()
            .map(|metadata| metadata.key_id().to_owned())
        {
            return Ok(id);
        }
    }
    let properties = resource_properties("SecretsKey")?;
    let description = properties
        .get("Description")
        .and_then(Value::as_str)
        .unwrap_or("forgebench secrets");
    let created = kms
        .create_key()
        .description(description)
        .send()
        .await
        .map_err(|error| format!("create key: {error:?}"))?;
    let key_id = created
        .key_metadata()
        .map(|metadata| metadata.key_id().to_owned())
        .ok_or("create key: no id")?;
    kms.create_alias()
        .alias_name(alias)
        .target_key_id(&key_id)
        .send()
        .await
        .map_err(|error| format!("create alias: {error:?}"))?;
    Ok(key_id)
}

/// Creates (or finds) every resource for a stack whose table is `store.table()`. Queue and
/// alias names derive from the table name, so several stacks (one per test) share one emulator.
pub async fn bootstrap(
    store: &Store,
    sqs: &aws_sdk_sqs::Client,
    kms: &aws_sdk_kms::Client,
) -> Result<Resources, String> {
    let schema = TableSchema::deployed()?;
    store
        .create_table(&schema)
        .await
        .map_err(|error| error.to_string())?;
    let base = store.table().to_owned();
    let dead_letter = create_queue(
        sqs,
        &format!("{base}-push-dlq"),
        &resource_properties("PushDeadLetterQueue")?,
        None,
    )
    .await?;
    let dead_letter_arn = queue_arn(sqs, &dead_letter).await?;
    let push = create_queue(
        sqs,
        &format!("{base}-push"),
        &resource_properties("PushQueue")?,
        Some(&dead_letter_arn),
    )
    .await?;
    let kms_key_id = ensure_key(kms, &format!("alias/{base}-secrets")).await?;
    Ok(Resources {
        push_queue_url: push,
        push_dead_letter_queue_url: dead_letter,
        kms_key_id,
    })
}
