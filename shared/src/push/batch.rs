//! The push worker behind the Lambda SQS event source: the event's records become jobs, each
//! handled on its own, and the ids of the messages to leave on the queue go back as the partial
//! batch response (`ReportBatchItemFailures`), so one bad record never fails the batch.
//!
//! Two kinds of malformed record, neither reported as failed:
//! - A record without a message id cannot be named in the response. It is left out of the batch
//!   (with a log line), so the event source deletes it with the batch's successes. SQS always
//!   sets the id; only a malformed event lacks one.
//! - A record whose body names no task is a job like any other; the worker logs and drops it
//!   ([`Worker::handle`]), since no retry could ever deliver it.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};

use std::time::Duration;

use super::outcome::ANSWER_TIME;
use super::queue::Job;
use super::worker::Worker;

/// The jobs of an event's records, in order; a record without a message id is left out.
pub fn jobs(records: Vec<SqsMessage>) -> Vec<Job> {
    records
        .into_iter()
        .filter_map(|record| {
            let Some(message_id) = record.message_id else {
                tracing::warn!("SQS record without a message id; left out of the batch");
                return None;
            };
            Some(Job {
                message_id,
                receipt_handle: record.receipt_handle.unwrap_or_default(),
                body: record.body.unwrap_or_default(),
            })
        })
        .collect()
}

/// Handles one event within `time` (the invocation's, less [`ANSWER_TIME`]): the response names
/// exactly the messages to leave on the queue.
pub async fn handle_event(worker: &Worker, event: SqsEvent, time: Duration) -> SqsBatchResponse {
    let time = time.saturating_sub(ANSWER_TIME);
    let failed = worker.handle_batch(&jobs(event.records), time).await;
    let mut response = SqsBatchResponse::default();
    response.set_failures(failed);
    response
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    use aws_smithy_types::retry::RetryConfig;
    use serde_json::json;

    use super::*;
    use crate::bodies::Bodies;
    use crate::domain::signing::KeyPurpose;
    use crate::on_first_use::OnFirstUse;
    use crate::push::ssrf::HostResolver;
    use crate::push::verdict::RetrySchedule;
    use crate::push::{Dialer, Queue};
    use crate::signing::SigningCache;
    use crate::store::Store;
    use crate::vault::Vault;

    fn record(message_id: Option<&str>, body: Option<&str>) -> SqsMessage {
        let mut record = SqsMessage::default();
        record.message_id = message_id.map(str::to_owned);
        record.receipt_handle = message_id.map(|id| format!("receipt-{id}"));
        record.body = body.map(str::to_owned);
        record
    }

    fn never_built<C>(service: &'static str) -> OnFirstUse<C> {
        OnFirstUse::new(move || panic!("the worker asked for its {service} client"))
    }

    /// A store nothing answers (a closed local port, no retries), a queue with no URL, and KMS
    /// and S3 clients that must never be needed.
    fn worker_with_the_store_down() -> Worker {
        let tls = crate::sdk_http::aws_tls_config(None).expect("TLS roots");
        let dynamodb = aws_sdk_dynamodb::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "unit"))
            .endpoint_url("http://127.0.0.1:1")
            .http_client(crate::sdk_http::http_client(tls.clone()))
            .retry_config(RetryConfig::disabled())
            .build();
        // Asked for its client before it finds it has no queue URL; never sends.
        let sqs = aws_sdk_sqs::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .http_client(crate::sdk_http::http_client(tls))
            .build();
        Worker {
            store: Store::new(aws_sdk_dynamodb::Client::from_conf(dynamodb), "unit"),
            bodies: Bodies::new(never_built("S3"), None, None),
            vault: Vault::new(never_built("KMS"), None),
            queue: Queue::new(aws_sdk_sqs::Client::from_conf(sqs), None),
            dialer: Dialer::new(Vec::new(), HostResolver::default(), Duration::from_secs(1)),
            schedule: RetrySchedule::default(),
            signing: Arc::new(SigningCache::new(
                KeyPurpose::Webhooks,
                Duration::from_secs(60),
            )),
            agent_ttl: Duration::from_secs(10),
            breakers: Arc::default(),
            tenant_max_pushes: 10,
            health: Arc::default(),
            disable_rule: Default::default(),
            held_at_open: Arc::default(),
        }
    }

    #[test]
    fn each_record_is_its_own_job_and_one_without_an_id_is_left_out() {
        let jobs = jobs(vec![
            record(Some("m-1"), Some(r#"{"task_id": "t-1"}"#)),
            record(None, Some(r#"{"task_id": "t-2"}"#)),
            record(Some("m-3"), Some("not json")),
            record(Some("m-4"), None),
        ]);
        let seen: Vec<_> = jobs
            .iter()
            .map(|job| (&*job.message_id, &*job.receipt_handle, &*job.body))
            .collect();
        assert_eq!(
            seen,
            [
                ("m-1", "receipt-m-1", r#"{"task_id": "t-1"}"#),
                ("m-3", "receipt-m-3", "not json"),
                ("m-4", "receipt-m-4", ""),
            ]
        );
    }

    #[tokio::test]
    async fn a_batch_reports_exactly_the_message_that_must_come_back() {
        let task = json!({ "task_id": "00000000-0000-4000-8000-000000000000" }).to_string();
        let mut event = SqsEvent::default();
        event.records = vec![
            record(Some("m-bad-body"), Some("not json")),
            record(None, Some(&task)),
            record(Some("m-store-down"), Some(&task)),
            record(Some("m-no-task"), Some(r#"{"task": "x"}"#)),
        ];
        let response = handle_event(
            &worker_with_the_store_down(),
            event,
            crate::push::outcome::INVOCATION_TIME,
        )
        .await;
        let failed: Vec<_> = response
            .batch_item_failures
            .iter()
            .map(|failure| failure.item_identifier.as_str())
            .collect();
        assert_eq!(failed, ["m-store-down"]);
    }
}
