//! Creates a local stack's resources from the deployment template's own definitions: the table
//! (`Table`), the push queue and its dead-letter queue (`PushQueue`, `PushDeadLetterQueue`), and
//! the key that seals secrets (`SecretsKey`), the bucket of large bodies (`BodyBucket`: its
//! encryption, public access block and lifecycle rule). Nothing here is a second list that could
//! drift.

use aws_sdk_sqs::types::QueueAttributeName;
use serde_norway::Value;

use crate::store::schema::{TableSchema, TEMPLATE};
use crate::store::Store;

/// What a bootstrap made (or found).
#[derive(Debug, Clone)]
pub struct Resources {
    pub push_queue_url: String,
    pub push_dead_letter_queue_url: String,
    pub kms_key_id: String,
    pub body_bucket: String,
}

fn resource_properties(name: &str) -> Result<Value, String> {
    let document: Value = serde_norway::from_str(TEMPLATE).map_err(|error| error.to_string())?;
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

/// A template number that may be a `!Ref` to a parameter: the parameter's default then.
fn number_or_parameter_default(value: &Value) -> Option<i64> {
    if let Some(number) = value.as_i64() {
        return Some(number);
    }
    let Value::Tagged(tagged) = value else {
        return None;
    };
    let parameter = tagged.value.as_str()?;
    let document: Value = serde_norway::from_str(TEMPLATE).ok()?;
    document["Parameters"][parameter]["Default"].as_i64()
}

/// The lifecycle rules of the template's `BodyBucket`.
fn lifecycle_rules() -> Result<Vec<aws_sdk_s3::types::LifecycleRule>, String> {
    use aws_sdk_s3::types::{
        AbortIncompleteMultipartUpload, ExpirationStatus, LifecycleExpiration, LifecycleRule,
        LifecycleRuleFilter,
    };
    let properties = resource_properties("BodyBucket")?;
    let rules = properties["LifecycleConfiguration"]["Rules"]
        .as_sequence()
        .ok_or("template: BodyBucket lifecycle rules missing")?;
    rules
        .iter()
        .map(|rule| {
            let days = number_or_parameter_default(&rule["ExpirationInDays"])
                .ok_or("template: BodyBucket rule without ExpirationInDays")?;
            let abort = rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"].as_i64();
            LifecycleRule::builder()
                .id(rule["Id"].as_str().unwrap_or("rule"))
                .status(ExpirationStatus::Enabled)
                .filter(
                    LifecycleRuleFilter::builder()
                        .prefix(rule["Prefix"].as_str().unwrap_or_default())
                        .build(),
                )
                .expiration(LifecycleExpiration::builder().days(days as i32).build())
                .set_abort_incomplete_multipart_upload(abort.map(|days| {
                    AbortIncompleteMultipartUpload::builder()
                        .days_after_initiation(days as i32)
                        .build()
                }))
                .build()
                .map_err(|error| format!("lifecycle rule: {error}"))
        })
        .collect()
}

/// Creates (or finds) the body bucket, private, encrypted by default with `kms_key_id`, with
/// the template's lifecycle rule.
async fn ensure_body_bucket(
    s3: &aws_sdk_s3::Client,
    name: &str,
    kms_key_id: &str,
) -> Result<(), String> {
    use aws_sdk_s3::types::{
        BucketLifecycleConfiguration, PublicAccessBlockConfiguration, ServerSideEncryption,
        ServerSideEncryptionByDefault, ServerSideEncryptionConfiguration, ServerSideEncryptionRule,
    };
    if s3.head_bucket().bucket(name).send().await.is_err() {
        s3.create_bucket()
            .bucket(name)
            .send()
            .await
            .map_err(|error| format!("create bucket {name}: {error:?}"))?;
    }
    let by_default = ServerSideEncryptionByDefault::builder()
        .sse_algorithm(ServerSideEncryption::AwsKms)
        .kms_master_key_id(kms_key_id)
        .build()
        .map_err(|error| error.to_string())?;
    let encryption = ServerSideEncryptionConfiguration::builder()
        .rules(
            ServerSideEncryptionRule::builder()
                .apply_server_side_encryption_by_default(by_default)
                .bucket_key_enabled(true)
                .build(),
        )
        .build()
        .map_err(|error| error.to_string())?;
    s3.put_bucket_encryption()
        .bucket(name)
        .server_side_encryption_configuration(encryption)
        .send()
        .await
        .map_err(|error| format!("bucket encryption: {error:?}"))?;
    s3.put_public_access_block()
        .bucket(name)
        .public_access_block_configuration(
            PublicAccessBlockConfiguration::builder()
                .block_public_acls(true)
                .block_public_policy(true)
                .ignore_public_acls(true)
                .restrict_public_buckets(true)
                .build(),
        )
        .send()
        .await
        .map_err(|error| format!("public access block: {error:?}"))?;
    let lifecycle = BucketLifecycleConfiguration::builder()
        .set_rules(Some(lifecycle_rules()?))
        .build()
        .map_err(|error| error.to_string())?;
    s3.put_bucket_lifecycle_configuration()
        .bucket(name)
        .lifecycle_configuration(lifecycle)
        .send()
        .await
        .map_err(|error| format!("bucket lifecycle: {error:?}"))?;
    Ok(())
}

/// Turns on the table's time to live as the template's `TimeToLiveSpecification` says.
async fn ensure_time_to_live(store: &Store) -> Result<(), String> {
    let properties = resource_properties("Table")?;
    let Some(attribute) = properties["TimeToLiveSpecification"]["AttributeName"].as_str() else {
        return Ok(());
    };
    let described = store
        .client()
        .describe_time_to_live()
        .table_name(store.table())
        .send()
        .await
        .map_err(|error| format!("describe time to live: {error:?}"))?;
    let enabled = described
        .time_to_live_description()
        .and_then(|description| description.attribute_name())
        == Some(attribute);
    if enabled {
        return Ok(());
    }
    let specification = aws_sdk_dynamodb::types::TimeToLiveSpecification::builder()
        .attribute_name(attribute)
        .enabled(true)
        .build()
        .map_err(|error| error.to_string())?;
    store
        .client()
        .update_time_to_live()
        .table_name(store.table())
        .time_to_live_specification(specification)
        .send()
        .await
        .map_err(|error| format!("update time to live: {error:?}"))?;
    Ok(())
}

/// The body bucket's name for a stack whose table is `table` (bucket names are lower case).
pub fn body_bucket_name(table: &str) -> String {
    format!("{}-bodies", table.to_ascii_lowercase())
}

/// Creates (or finds) every resource for a stack whose table is `store.table()`. Queue and
/// alias and bucket names derive from the table name, so several stacks (one per test) share one
/// emulator.
pub async fn bootstrap(
    store: &Store,
    sqs: &aws_sdk_sqs::Client,
    kms: &aws_sdk_kms::Client,
    s3: &aws_sdk_s3::Client,
) -> Result<Resources, String> {
    let schema = TableSchema::deployed()?;
    store
        .create_table(&schema)
        .await
        .map_err(|error| error.to_string())?;
    ensure_time_to_live(store).await?;
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
    let body_bucket = body_bucket_name(&base);
    ensure_body_bucket(s3, &body_bucket, &kms_key_id).await?;
    Ok(Resources {
        push_queue_url: push,
        push_dead_letter_queue_url: dead_letter,
        kms_key_id,
        body_bucket,
    })
}
