//! The local emulators the harness talks to (DynamoDB Local; moto for SQS, KMS and S3): where
//! they listen, and SDK clients for them with test credentials.

use crate::Recorder;

/// Where DynamoDB Local listens: `AWS_ENDPOINT_URL_DYNAMODB`, as the test script exports it.
pub fn dynamodb_endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL_DYNAMODB").unwrap_or_else(|_| "http://127.0.0.1:8000".into())
}

/// A DynamoDB client for `endpoint`, with test credentials.
pub async fn dynamodb_client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::from_conf(dynamodb_config(endpoint).await.build())
}

/// The configuration [`dynamodb_client`] builds, open for more settings.
pub async fn dynamodb_config(endpoint: &str) -> aws_sdk_dynamodb::config::Builder {
    let sdk = forgebench::app::sdk_config()
        .await
        .expect("TLS configuration for the SDK");
    aws_sdk_dynamodb::config::Builder::from(&sdk)
        .endpoint_url(endpoint)
        .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
}

/// Where moto (SQS, KMS) listens: `AWS_ENDPOINT_URL`, as the test script exports it.
pub fn moto_endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| "http://127.0.0.1:5000".into())
}

/// An S3 client for `endpoint` (path-style, as the emulator serves buckets), with test
/// credentials, every request also noted by `recorder`.
pub async fn s3_client(endpoint: &str, recorder: Option<&Recorder>) -> aws_sdk_s3::Client {
    let sdk = forgebench::app::sdk_config()
        .await
        .expect("TLS configuration for the SDK");
    let mut s3 = aws_sdk_s3::config::Builder::from(&sdk)
        .endpoint_url(endpoint)
        .force_path_style(true)
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "test", "test", None, None, "tests",
        ));
    if let Some(recorder) = recorder {
        s3 = s3.interceptor(recorder.clone());
    }
    aws_sdk_s3::Client::from_conf(s3.build())
}

/// SQS and KMS clients for `endpoint`, with test credentials.
pub async fn sqs_and_kms(endpoint: &str) -> (aws_sdk_sqs::Client, aws_sdk_kms::Client) {
    sqs_and_kms_recorded(endpoint, None).await
}

/// [`sqs_and_kms`], every request also noted by `recorder`.
pub async fn sqs_and_kms_recorded(
    endpoint: &str,
    recorder: Option<&Recorder>,
) -> (aws_sdk_sqs::Client, aws_sdk_kms::Client) {
    let sdk = forgebench::app::sdk_config()
        .await
        .expect("TLS configuration for the SDK");
    let credentials = aws_sdk_sqs::config::Credentials::new("test", "test", None, None, "tests");
    let mut sqs = aws_sdk_sqs::config::Builder::from(&sdk)
        .endpoint_url(endpoint)
        .region(aws_sdk_sqs::config::Region::new("us-east-1"))
        .credentials_provider(credentials.clone());
    let mut kms = aws_sdk_kms::config::Builder::from(&sdk)
        .endpoint_url(endpoint)
        .region(aws_sdk_kms::config::Region::new("us-east-1"))
        .credentials_provider(credentials);
    if let Some(recorder) = recorder {
        sqs = sqs.interceptor(recorder.clone());
        kms = kms.interceptor(recorder.clone());
    }
    (
        aws_sdk_sqs::Client::from_conf(sqs.build()),
        aws_sdk_kms::Client::from_conf(kms.build()),
    )
}
