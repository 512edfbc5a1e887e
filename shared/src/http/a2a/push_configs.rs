//! A2A push notification configs: create, get, list and delete a task's webhooks, on both
//! bindings, and the config a `SendMessage` carries inline.
//!
//! Only the task's caller manages its configs; anyone else gets `TaskNotFound`, the answer for a
//! task they do not own. A config's URL passes the push SSRF guard when it is saved (and again
//! on every dial); its credentials are sealed with KMS and never shown again.

use lambda_http::Request;
use serde_json::{json, Map, Value};

use super::rest::{body_object, query_object, render};
use super::{object, optional_text, required_text, task_id_of, A2aCall, Failure};
use crate::a2a::A2aError;
use crate::app::App;
use crate::domain::notify::NotifyConfig;
use crate::domain::{Task, TaskId};
use crate::error::ApiError;
use crate::http::service::notify::{config_audit, save_config, vetted_request, Start};
use crate::http::{path_param, HandlerResult};

impl A2aCall<'_> {
    /// The task, if the calling agent is its caller (under this agent); else `TaskNotFound`.
    pub(super) async fn callers_task(&self, task_id: &TaskId) -> Result<Task, Failure> {
        let task = crate::http::service::tasks::readable_task(
            self.app,
            &self.principal,
            task_id,
            &self.callee_segment,
        )
        .await?;
        if self.principal.agent_id() != Some(&task.caller_agent_id) {
            return Err(A2aError::task_not_found().into());
        }
        Ok(task)
    }

    /// `CreateTaskPushNotificationConfig`: params are the config, with its `taskId`.
    pub async fn create_push_config(&self, params: &Value) -> Result<Value, Failure> {
        let fields = object(params, "params")?;
        let task_id = task_id_of(required_text(fields, "taskId")?)?;
        let task = self.callers_task(&task_id).await?;
        let asked = vetted_request(self.app, params, "params").await?;
        let config = save_config(self.app, &self.principal, &task, asked, Start::Now).await?;
        Ok(config.to_a2a())
    }

    /// `GetTaskPushNotificationConfig`: `{taskId, id}`.
    pub async fn get_push_config(&self, params: &Value) -> Result<Value, Failure> {
        let (task_id, config_id) = task_and_config(params)?;
        self.callers_task(&task_id).await?;
        match self.app.store.get_notify_config(&task_id, config_id).await {
            Ok(Some(config)) => Ok(shown(self.app, config).await?),
            Ok(None) => Err(A2aError::task_not_found().into()),
            Err(error) => Err(ApiError::from(error).into()),
        }
    }

    /// `ListTaskPushNotificationConfigs`: every config of the task, on one page (a task holds
    /// at most five).
    pub async fn list_push_configs(&self, params: &Value) -> Result<Value, Failure> {
        let fields = object(params, "params")?;
        let task_id = task_id_of(required_text(fields, "taskId")?)?;
        if optional_text(fields, "pageToken")?.is_some() {
            return Err(A2aError::invalid_params("pageToken names no page of this list").into());
        }
        self.callers_task(&task_id).await?;
        let configs = self
            .app
            .store
            .list_notify_configs(&task_id)
            .await
            .map_err(ApiError::from)?;
        let configs = configs.into_iter().map(|config| shown(self.app, config));
        let shown: Vec<Value> = futures::future::try_join_all(configs).await?;
        Ok(json!({ "configs": shown, "nextPageToken": "" }))
    }

    /// `DeleteTaskPushNotificationConfig`: `{taskId, id}`; deleting one already gone succeeds.
    pub async fn delete_push_config(&self, params: &Value) -> Result<Value, Failure> {
        let (task_id, config_id) = task_and_config(params)?;
        let task = self.callers_task(&task_id).await?;
        let audit = config_audit(&self.principal, "task.push_config.delete", &task, config_id);
        let deleted = self
            .app
            .store
            .delete_notify_config(&task.tenant_id, &task_id, config_id, &audit)
            .await
            .map_err(ApiError::from)?;
        if deleted {
            tracing::info!(task_id = %task_id, config_id, "push notification config deleted");
        }
        Ok(Value::Null)
    }
}

fn task_and_config(params: &Value) -> Result<(TaskId, &str), Failure> {
    let fields = object(params, "params")?;
    let task_id = task_id_of(required_text(fields, "taskId")?)?;
    Ok((task_id, required_text(fields, "id")?))
}

/// The path's task and config as request fields.
fn path_fields(request: &Request, with_config: bool) -> Result<Map<String, Value>, Failure> {
    let mut fields = Map::new();
    fields.insert("taskId".into(), path_param(request, "task")?.into());
    if with_config {
        fields.insert("id".into(), path_param(request, "config")?.into());
    }
    Ok(fields)
}

/// `POST /v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs` (the body is the config).
pub async fn create_push_config(app: &App, request: Request) -> HandlerResult {
    let outcome = async {
        let call = A2aCall::read(app, &request).await?;
        let mut params = body_object(&request)?;
        let path = path_fields(&request, false)?;
        // The path names the task; a taskId in the body is not read here (the document cannot
        // tie the two together, so it does not make them agree), beyond its type.
        if params
            .get("taskId")
            .is_some_and(|id| !matches!(id, Value::Null | Value::String(_)))
        {
            return Err(A2aError::invalid_params("taskId must be a string").into());
        }
        params["taskId"] = path["taskId"].clone();
        Box::pin(call.create_push_config(&params)).await
    };
    render(&request, outcome.await)
}

/// `GET /v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs`.
pub async fn list_push_configs(app: &App, request: Request) -> HandlerResult {
    let outcome = async {
        let call = A2aCall::read(app, &request).await?;
        let mut params = query_object(&request)?;
        params["taskId"] = path_fields(&request, false)?["taskId"].clone();
        Box::pin(call.list_push_configs(&params)).await
    };
    render(&request, outcome.await)
}

/// `GET /v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs/{config}`.
pub async fn get_push_config(app: &App, request: Request) -> HandlerResult {
    let outcome = async {
        let call = A2aCall::read(app, &request).await?;
        let params = Value::Object(path_fields(&request, true)?);
        Box::pin(call.get_push_config(&params)).await
    };
    render(&request, outcome.await)
}

/// `DELETE /v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs/{config}`: `{}`.
pub async fn delete_push_config(app: &App, request: Request) -> HandlerResult {
    let outcome = async {
        let call = A2aCall::read(app, &request).await?;
        let params = Value::Object(path_fields(&request, true)?);
        Box::pin(call.delete_push_config(&params))
            .await
            .map(|_| json!({}))
    };
    render(&request, outcome.await)
}

/// A stored config as A2A shows it to its caller: its token opened, never its credentials.
async fn shown(app: &App, mut config: NotifyConfig) -> Result<Value, ApiError> {
    app.vault.open_notify_token(&mut config).await?;
    Ok(config.to_a2a())
}
