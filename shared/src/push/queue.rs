//! The push queue (SQS): one message per delivery of a task, body `{"task_id", "delivery_id",
//! "tenant_id", "callee_id"}` (the sweeper's re-sends name only the task), and one per change of
//! a task whose push notification configs should hear of it, `{"task_id", "kind": "notify",
//! "tenant_id"}` (the sweeper's name only the task). Each message's group id is its tenant
//! ([`tenant_of`]).
//! A message the worker held back goes back with how often it was (`"held": n`).

use std::time::Duration;

use crate::domain::{Task, TenantId};
use crate::on_first_use::OnFirstUse;

/// One message taken from the queue, in the shape both the Lambda event source and the local
/// poller hand to the worker.
#[derive(Debug, Clone)]
pub struct Job {
    pub message_id: String,
    pub receipt_handle: String,
    pub body: String,
}

/// The tenant a received message's body names (`tenant_id`), so that a message put back keeps
/// its group. Every message's group id is its tenant: on the standard push queue that makes it
/// a fair queue (Amazon SQS fair queues, 2025), which gives other tenants' messages first turn
/// when one tenant's backlog or slow messages take more than their share of the worker. A
/// message naming no tenant (the sweeper's) counts as a tenant of its own.
fn tenant_of(body: &str) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()?
        .get("tenant_id")?
        .as_str()
        .map(str::to_owned)
}

#[derive(Clone, Debug)]
pub struct Queue {
    client: OnFirstUse<aws_sdk_sqs::Client>,
    url: Option<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("SQS: {0}")]
pub struct QueueError(pub String);

impl Queue {
    pub fn new(client: impl Into<OnFirstUse<aws_sdk_sqs::Client>>, url: Option<String>) -> Queue {
        Queue {
            client: client.into(),
            url,
        }
    }

    fn url(&self) -> Result<&str, QueueError> {
        self.url.as_deref().ok_or_else(|| {
            QueueError("no push queue configured (FORGEBENCH_PUSH_QUEUE_URL)".into())
        })
    }

    /// Asks for the task to be delivered (the sweeper, which knows only the task's id and, for
    /// a task stored with it, its tenant, which names the message's group).
    pub async fn enqueue(
        &self,
        task_id: &str,
        tenant_id: Option<&TenantId>,
    ) -> Result<(), QueueError> {
        self.send(serde_json::json!({ "task_id": task_id }), tenant_id)
            .await
    }

    /// Asks for the task's current delivery, naming with it what lets the worker take the
    /// delivery's lease and prepare its POST without reading the task first.
    pub async fn enqueue_delivery(&self, task: &Task) -> Result<(), QueueError> {
        let body = serde_json::json!({
            "task_id": task.id,
            "delivery_id": task.delivery_id,
            "tenant_id": task.tenant_id,
            "callee_id": task.callee_agent_id,
        });
        self.send(body, Some(&task.tenant_id)).await
    }

    /// Asks for the task's push notification configs to be sent its new events; `tenant_id`,
    /// when known, names the message's tenant.
    pub async fn enqueue_notify(
        &self,
        task_id: &str,
        tenant_id: Option<&TenantId>,
    ) -> Result<(), QueueError> {
        let mut body = serde_json::json!({ "task_id": task_id, "kind": "notify" });
        if let Some(tenant_id) = tenant_id {
            body["tenant_id"] = serde_json::Value::from(tenant_id.as_str());
        }
        self.send(body, tenant_id).await
    }

    /// Sends `body` as a message of `tenant_id`'s group (see [`tenant_of`]).
    async fn send(
        &self,
        body: serde_json::Value,
        tenant_id: Option<&TenantId>,
    ) -> Result<(), QueueError> {
        self.client
            .get()
            .send_message()
            .queue_url(self.url()?)
            .set_message_group_id(tenant_id.map(|tenant| tenant.as_str().to_owned()))
            .message_body(body.to_string())
            .send()
            .await
            .map(|_| ())
            .map_err(|error| QueueError(format!("{error:?}")))
    }

    /// Puts received messages' bodies back as new messages, each due after its delay (at most
    /// 15 minutes, SQS's longest message delay), ten to a request: jobs that waited without
    /// trying anything. Whether each was put back.
    pub async fn send_again(&self, messages: &[(String, Duration)]) -> Vec<bool> {
        let mut sent = vec![false; messages.len()];
        for (chunk_at, chunk) in messages.chunks(10).enumerate() {
            match self.send_batch(chunk).await {
                Ok(failed) => {
                    for (n, done) in sent[chunk_at * 10..][..chunk.len()].iter_mut().enumerate() {
                        *done = !failed.contains(&n.to_string());
                    }
                }
                Err(error) => {
                    tracing::warn!(error = %error, "could not put held-back messages back")
                }
            }
        }
        sent
    }

    /// One `SendMessageBatch` of up to ten messages; the ids (their places) that failed.
    async fn send_batch(&self, chunk: &[(String, Duration)]) -> Result<Vec<String>, QueueError> {
        let entries = chunk
            .iter()
            .enumerate()
            .map(|(n, (body, delay))| {
                aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                    .id(n.to_string())
                    .set_message_group_id(tenant_of(body))
                    .message_body(body)
                    .delay_seconds(delay.as_secs_f64().ceil().min(900.0) as i32)
                    .build()
                    .map_err(|error| QueueError(error.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let output = self
            .client
            .get()
            .send_message_batch()
            .queue_url(self.url()?)
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(|error| QueueError(format!("{error:?}")))?;
        Ok(output
            .failed()
            .iter()
            .map(|failed| failed.id().to_owned())
            .collect())
    }

    /// Makes a received message visible again after `delay` (at most 12 hours).
    pub async fn delay(&self, receipt_handle: &str, delay: Duration) -> Result<(), QueueError> {
        self.client
            .get()
            .change_message_visibility()
            .queue_url(self.url()?)
            .receipt_handle(receipt_handle)
            .visibility_timeout(delay.as_secs().min(12 * 3600) as i32)
            .send()
            .await
            .map(|_| ())
            .map_err(|error| QueueError(format!("{error:?}")))
    }

    /// Removes a handled message.
    pub async fn delete(&self, receipt_handle: &str) -> Result<(), QueueError> {
        self.client
            .get()
            .delete_message()
            .queue_url(self.url()?)
            .receipt_handle(receipt_handle)
            .send()
            .await
            .map(|_| ())
            .map_err(|error| QueueError(format!("{error:?}")))
    }

    /// Deletes handled messages, ten to a request, as the Lambda event source does with a
    /// batch's successes (the local stand-in for it).
    pub async fn delete_all(&self, receipt_handles: &[&str]) -> Result<(), QueueError> {
        for chunk in receipt_handles.chunks(10) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(n, handle)| {
                    aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                        .id(n.to_string())
                        .receipt_handle(*handle)
                        .build()
                        .map_err(|error| QueueError(error.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let output = self
                .client
                .get()
                .delete_message_batch()
                .queue_url(self.url()?)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|error| QueueError(format!("{error:?}")))?;
            if !output.failed().is_empty() {
                return Err(QueueError(format!(
                    "{} deletes failed",
                    output.failed().len()
                )));
            }
        }
        Ok(())
    }

    /// Long-polls for up to ten messages (the local stand-in for the Lambda event source).
    pub async fn receive(&self, wait: Duration) -> Result<Vec<Job>, QueueError> {
        let output = self
            .client
            .get()
            .receive_message()
            .queue_url(self.url()?)
            .max_number_of_messages(10)
            .wait_time_seconds(wait.as_secs().min(20) as i32)
            .send()
            .await
            .map_err(|error| QueueError(format!("{error:?}")))?;
        Ok(output
            .messages()
            .iter()
            .filter_map(|message| {
                Some(Job {
                    message_id: message.message_id()?.to_owned(),
                    receipt_handle: message.receipt_handle()?.to_owned(),
                    body: message.body().unwrap_or_default().to_owned(),
                })
            })
            .collect())
    }
}
