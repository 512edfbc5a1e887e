//! The [`TestApp`] helpers for a task's routes: its caller opens, reads and cancels it, its
//! callee claims it and posts results; and a wait until a task settles.

use std::time::Duration;

use serde_json::{json, Value};

use crate::{text_message, Pair, Reply, TestApp};

impl TestApp {
    pub async fn open_task(
        &self,
        caller_key: &str,
        callee: &str,
        message: Value,
        wait: u32,
    ) -> Reply {
        self.post(
            &format!("/v1/agents/{callee}/tasks?wait={wait}"),
            caller_key,
            json!({ "message": message }),
        )
        .await
    }

    /// A task `pair`'s caller opens with the text `text`, its open answered `200`: its id.
    pub async fn opened(&self, pair: &Pair, text: &str) -> String {
        let reply = self
            .open_task(&pair.caller.key, &pair.callee.name, text_message(text), 0)
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        reply.field("id")
    }

    /// A pull task of `pair` its callee has claimed and asked a question on
    /// (`input_required`): its id.
    pub async fn asked(&self, pair: &Pair) -> String {
        let opened = self
            .open_task(
                &pair.caller.key,
                &pair.callee.name,
                text_message("Classify"),
                0,
            )
            .await;
        let task_id = opened.field("id");
        assert_eq!(self.claim(&pair.callee.key, 0).await.status, 200);
        let question = json!({"role": "agent", "parts": [{"text": "which invoice?"}]});
        let asked = self
            .post_result(
                &pair.callee.key,
                &task_id,
                json!({"state": "input_required", "message": question}),
            )
            .await;
        assert_eq!(asked.state(), "input_required", "{}", asked.text);
        task_id
    }

    pub async fn claim(&self, callee_key: &str, wait: u32) -> Reply {
        self.get(&format!("/v1/agents/me/tasks/next?wait={wait}"), callee_key)
            .await
    }

    pub async fn post_result(&self, callee_key: &str, task_id: &str, result: Value) -> Reply {
        self.post(
            &format!("/v1/agents/me/tasks/{task_id}/result"),
            callee_key,
            result,
        )
        .await
    }

    /// The delivery attempts of `pair`'s push task `task_id`, read by the tenant's admin.
    pub async fn delivery_attempts(&self, pair: &Pair, task_id: &str) -> Vec<Value> {
        let reply = self
            .get(
                &format!("/v1/agents/{}/tasks/{task_id}/attempts", pair.callee.name),
                &pair.tenant.admin_key,
            )
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        reply.body["items"].as_array().cloned().unwrap_or_default()
    }

    pub async fn get_task(&self, key: &str, callee: &str, task_id: &str) -> Reply {
        self.get(&format!("/v1/agents/{callee}/tasks/{task_id}"), key)
            .await
    }

    pub async fn cancel(&self, key: &str, callee: &str, task_id: &str) -> Reply {
        self.post(
            &format!("/v1/agents/{callee}/tasks/{task_id}/cancel"),
            key,
            json!({}),
        )
        .await
    }

    /// Reads a task until it leaves submitted/working (or 15 s passed).
    pub async fn settled(&self, key: &str, callee: &str, task_id: &str) -> Reply {
        let mut reply = self.get_task(key, callee, task_id).await;
        for _ in 0..150 {
            if !matches!(reply.state().as_str(), "submitted" | "working") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            reply = self.get_task(key, callee, task_id).await;
        }
        reply
    }
}
