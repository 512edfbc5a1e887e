//! The push queue (SQS): one message per delivery of a task, body `{"task_id", "delivery_id",
//! "tenant_id", "callee_id"}` (the sweeper's re-sends name only the task), and one per change of
//! a task whose push notification configs should hear of it, `{"task_id", "kind": "notify"}`.

use std::time::Duration;

use crate::domain::Task;
use crate::on_first_use::OnFirstUse;

/// One message taken from the queue, in the shape both the Lambda event source and the local
/// poller hand to the worker.
#[derive(Debug, Clone)]
pub struct Job {
    pub message_id: String,
    pub receipt_handle: String,
    pub body: String,
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

    /// Asks for the task to be delivered (the sweeper, which knows only the task's id).
    pub async fn enqueue(&self, task_id: &str) -> Result<(), QueueError> {
        self.send(serde_json::json!({ "task_id": task_id })).await
    }

    /// Asks for the task's current delivery, naming with it what lets the worker take the
    /// delivery's lease and prepare its POST without reading the task first.
    pub async fn enqueue_delivery(&self, task: &Task) -> Result<(), QueueError> {
        self.send(serde_json::json!({
            "task_id": task.id,
            "delivery_id": task.delivery_id,
            "tenant_id": task.tenant_id,
            "callee_id": task.callee_agent_id,
        }))
        .await
    }

    /// Asks for the task's push notification configs to be sent its new events.
    pub async fn enqueue_notify(&self, task_id: &str) -> Result<(), QueueError> {
        self.send(serde_json::json!({ "task_id": task_id, "kind": "notify" }))
            .await
    }

    async fn send(&self, body: serde_json::Value) -> Result<(), QueueError> {
        self.client
            .get()
            .send_message()
            .queue_url(self.url()?)
            .message_body(body.to_string())
            .send()
            .await
            .map(|_| ())
            .map_err(|error| QueueError(format!("{error:?}")))
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
