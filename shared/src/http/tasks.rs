//! The caller's side: open a task (`SendMessage`), read it (`GetTask`), cancel it (`CancelTask`).

use std::time::Duration;

use lambda_http::http::{HeaderValue, StatusCode};
use lambda_http::Request;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::{
    audited_task_ok, content_too_large, full_task, json_object, only_fields, path_param, poll_slot,
    store_message, task_ok, wait_param, with_poll_slot, HandlerResult,
};
use crate::app::App;
use crate::bodies::resolve_from_memory;
use crate::domain::binding::{admit, binding_id, RefusalReason};
use crate::domain::content::{PackedBody, INLINE_BODY_BYTES};
use crate::domain::task::{keyed_task_id, Delivery, MAX_HISTORY_BEFORE_ANSWER, MAX_TASK_MESSAGES};
use crate::domain::{
    clock, Agent, AgentId, AgentRef, Message, PrincipalKind, Task, TaskId, TaskState,
    TenantPrincipal,
};
use crate::error::{json_response, ApiError};
use crate::store::PollSlot;
use crate::store::{
    AuditEntry, ContextJoin, InputRefusal, OpenRefusal, OpenTask, StoreError, TaskTransition,
};

/// The header that names the governed call which caused this one.
pub const PARENT_CALL_HEADER: &str = "x-parent-call";

pub(super) fn agent_principal(
    principal: &TenantPrincipal,
    what: &str,
) -> Result<AgentId, ApiError> {
    principal
        .agent_id()
        .cloned()
        .ok_or_else(|| ApiError::Forbidden(format!("{what} needs an agent key")))
}

/// The body's `message`, which must be the caller's (`role` `user`, the default); `when` names
/// the call in the error text.
fn caller_message(body: &serde_json::Map<String, Value>, when: &str) -> Result<Message, ApiError> {
    let message = Message::parse(
        body.get("message")
            .ok_or_else(|| ApiError::InvalidRequest("message is required".into()))?,
        "message",
    )?;
    if message.role != crate::domain::message::Role::User {
        return Err(ApiError::InvalidRequest(format!(
            "message.role must be \"user\" when {when}"
        )));
    }
    Ok(message)
}

/// Refuses a task open: the precise reason to the audit log, one 403 to the caller.
async fn refuse(
    app: &App,
    principal: &TenantPrincipal,
    target: &str,
    reason: RefusalReason,
    call_id: &str,
) -> ApiError {
    refuse_action(app, principal, "task.open", target, reason, call_id, None).await
}

/// Refuses a governed call (`action`): the precise reason to the audit log, one 403 to the
/// caller.
async fn refuse_action(
    app: &App,
    principal: &TenantPrincipal,
    action: &str,
    target: &str,
    reason: RefusalReason,
    call_id: &str,
    task_id: Option<&TaskId>,
) -> ApiError {
    let mut entry = AuditEntry::new(principal, action, target).refused(reason.as_str());
    entry.call_id = Some(call_id.to_owned());
    entry.task_id = task_id.cloned();
    tracing::info!(action, reason = reason.as_str(), "call refused");
    match app.store.record_refusal(&entry).await {
        Ok(()) => ApiError::NotPermitted,
        // The refusal must be on the record; if it cannot be written, say so instead.
        Err(error) => error.into(),
    }
}

/// The refusal reason for a caller whose open failed the binding or callee check.
async fn refusal_reason(
    app: &App,
    principal: &TenantPrincipal,
    caller_id: &AgentId,
    callee_id: &AgentId,
) -> Result<RefusalReason, ApiError> {
    let callee = app
        .store
        .find_agent(&principal.tenant_id, &AgentRef::Id(parse_uuid(callee_id)?))
        .await?;
    let binding = app
        .store
        .get_binding(&binding_id(caller_id, callee_id))
        .await?;
    Ok(
        admit(&principal.tenant_id, callee.as_ref(), binding.as_ref())
            .err()
            .unwrap_or(RefusalReason::NoBinding),
    )
}

/// Why the gate would refuse this caller now, read before anything is stored for it; the open
/// transaction checks the same again at the instant it writes.
async fn precheck_refusal(
    app: &App,
    principal: &TenantPrincipal,
    caller_id: &AgentId,
    callee: &Agent,
) -> Result<Option<RefusalReason>, ApiError> {
    let binding = app
        .store
        .get_binding(&binding_id(caller_id, &callee.id))
        .await?;
    Ok(admit(&principal.tenant_id, Some(callee), binding.as_ref()).err())
}

fn parse_uuid(text: &str) -> Result<uuid::Uuid, ApiError> {
    uuid::Uuid::parse_str(text).map_err(ApiError::internal)
}

/// `X-Parent-Call`, when sent: a call id (UUID). Lineage is bookkeeping, never a gate, but a
/// value that cannot be a call id is malformed input.
fn parent_call(request: &Request) -> Result<Option<String>, ApiError> {
    match request.headers().get(PARENT_CALL_HEADER) {
        None => Ok(None),
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|text| uuid::Uuid::parse_str(text.trim()).ok())
            .map(|id| Some(id.to_string()))
            .ok_or_else(|| {
                ApiError::InvalidRequest("X-Parent-Call must be a call_id (a UUID)".into())
            }),
    }
}

/// `POST /v1/agents/{callee}/tasks?wait=N` with `{"message": Message, "context_id"?}`.
pub async fn open(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let caller_id = agent_principal(&principal, "opening a task")?;
    let callee_segment = path_param(&request, "agent")?;
    let wait = wait_param(&request, app)?;
    let body = json_object(&request)?;
    only_fields(&body, &["message", "context_id"])?;
    let message = caller_message(&body, "opening a task")?;
    let context = match body.get("context_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(
            uuid::Uuid::parse_str(id)
                .map_err(|_| ApiError::InvalidRequest("context_id must be a UUID".into()))?
                .to_string(),
        ),
        Some(_) => {
            return Err(ApiError::InvalidRequest(
                "context_id must be a string".into(),
            ))
        }
    };
    let parent_call_id = parent_call(&request)?;
    let call_id = uuid::Uuid::new_v4().to_string();

    let callee = app
        .store
        .find_agent(&principal.tenant_id, &AgentRef::parse(&callee_segment))
        .await?;
    let callee: Agent = match callee {
        None => {
            return Err(refuse(
                app,
                &principal,
                &callee_segment,
                RefusalReason::UnknownCallee,
                &call_id,
            )
            .await)
        }
        Some(callee) if callee.tenant_id != principal.tenant_id => {
            return Err(refuse(
                app,
                &principal,
                &callee.id,
                RefusalReason::OtherTenant,
                &call_id,
            )
            .await)
        }
        Some(callee) => callee,
    };
    let root_call_id = match &parent_call_id {
        None => call_id.clone(),
        Some(parent) => app
            .store
            .call_root(&principal.tenant_id, parent)
            .await?
            .unwrap_or_else(|| parent.clone()),
    };

    let now = clock::now();
    let task_id = match &message.message_id {
        Some(message_id) => keyed_task_id(&caller_id, &callee.id, message_id),
        None => TaskId::generate(),
    };
    let keyed = message.message_id.is_some();
    let input = serde_json::to_value(&message).map_err(ApiError::internal)?;
    let input = PackedBody::pack(&principal.tenant_id, &task_id, &input, INLINE_BODY_BYTES);
    if input.offload.is_some() {
        // Nothing is stored for a caller the gate would refuse anyway.
        if let Some(reason) = precheck_refusal(app, &principal, &caller_id, &callee).await? {
            return Err(refuse(app, &principal, &callee.id, reason, &call_id).await);
        }
        app.bodies.store(&[&input]).await?;
    }
    let task = Task {
        id: task_id.clone(),
        tenant_id: principal.tenant_id.clone(),
        context_id: context
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
        caller_agent_id: caller_id.clone(),
        callee_agent_id: callee.id.clone(),
        callee_name: callee.name.clone(),
        state: TaskState::Submitted,
        status_message: None,
        status_timestamp: now.clone(),
        input: input.stored.clone(),
        artifacts: json!([]),
        error: None,
        history: vec![input.stored.clone()],
        call_id: call_id.clone(),
        parent_call_id,
        root_call_id,
        delivery: if callee.endpoint.is_some() {
            Delivery::Push
        } else {
            Delivery::Pull
        },
        claim_timeout_seconds: callee.claim_timeout_seconds,
        deadline_at: None,
        delivery_attempts: 0,
        attempt_number: 0,
        delivery_id: callee
            .endpoint
            .is_some()
            .then(|| uuid::Uuid::new_v4().to_string()),
        delivered_at: None,
        content_bytes: input.bytes,
        expires_at: Some(app.config.task_expiry()),
        created_at: now.clone(),
        updated_at: now,
    };
    let mut audit = AuditEntry::new(&principal, "task.open", &callee.id);
    audit.call_id = Some(call_id.clone());
    audit.task_id = Some(task_id.clone());
    let open = OpenTask {
        task,
        binding_id: binding_id(&caller_id, &callee.id),
        context: if context.is_some() {
            ContextJoin::Continue
        } else {
            ContextJoin::Start
        },
        audit,
    };
    let opened = match app.store.open_task(&open).await {
        // A concurrent open with the same message_id can hold the task item mid-transaction
        // (DynamoDB cancels this one as a conflict); once that one commits, its task is this
        // request's answer too.
        Err(StoreError::Unavailable(reason)) if keyed => {
            tokio::time::sleep(Duration::from_millis(50)).await;
            return match app.store.get_task(&task_id).await? {
                Some(existing) => {
                    replay_open(app, &principal, &callee.id, existing, wait, &input).await
                }
                None => Err(StoreError::Unavailable(reason).into()),
            };
        }
        other => other?,
    };
    match opened {
        Ok(()) => {}
        Err(OpenRefusal::AlreadyOpen) => {
            let existing = app.store.get_task(&task_id).await?.ok_or_else(|| {
                ApiError::internal(format!(
                    "task {task_id} vanished after its open was refused as a repeat"
                ))
            })?;
            return replay_open(app, &principal, &callee.id, existing, wait, &input).await;
        }
        Err(OpenRefusal::BindingNotLive | OpenRefusal::CalleeNotActive) => {
            let reason = refusal_reason(app, &principal, &caller_id, &callee.id).await?;
            return Err(refuse(app, &principal, &callee.id, reason, &call_id).await);
        }
        Err(OpenRefusal::UnknownContext) => {
            return Err(ApiError::NotFound(
                "context_id names no conversation between these two agents".into(),
            ))
        }
        Err(OpenRefusal::ContextFull) => {
            return Err(ApiError::LimitReached(
                "the conversation holds 100 tasks; start a new one".into(),
            ))
        }
    }
    tracing::info!(task_id = %task_id, call_id = %call_id, callee_id = %callee.id, "task opened");
    if open.task.delivery == Delivery::Push {
        // The task is on the record already; if this enqueue is lost, the outbox sweep redoes it.
        if let Err(error) = app.queue.enqueue(&task_id).await {
            tracing::warn!(task_id = %task_id, error = %error, "enqueue failed; the outbox sweep will deliver the task");
        }
    }
    opened_response(app, &principal, open.task, wait, &input).await
}

/// The answer to an open repeated with the same `message_id`: the task the first one wrote, as
/// it stands now (waited on like a new one), and nothing written again.
async fn replay_open(
    app: &App,
    principal: &TenantPrincipal,
    callee_id: &AgentId,
    task: Task,
    wait: Duration,
    written: &PackedBody,
) -> HandlerResult {
    // The id is derived from this caller and callee; anything else under it is not theirs.
    if Some(&task.caller_agent_id) != principal.agent_id() || task.callee_agent_id != callee_id {
        return Err(ApiError::internal(format!(
            "task {} under a derived id belongs to another caller or callee",
            task.id
        )));
    }
    tracing::info!(task_id = %task.id, call_id = %task.call_id, "task open repeated; existing task returned");
    let task = expire_if_overdue(app, task).await?;
    opened_response(app, principal, task, wait, written).await
}

/// `200` with the task (after waiting up to `wait` for its answer) and its call id. The task is
/// on the record already: if reading it again fails, the answer is the task as this request
/// wrote it, never an error that would invite the caller to open it again.
async fn opened_response(
    app: &App,
    principal: &TenantPrincipal,
    task: Task,
    wait: Duration,
    written: &PackedBody,
) -> HandlerResult {
    let mut as_written = task.clone();
    // The task is opened already: without a free long-poll slot it is answered at once.
    let slot: Option<PollSlot> = poll_slot(app, principal, wait).await.unwrap_or_default();
    let wait = if slot.is_some() { wait } else { Duration::ZERO };
    let settled = async {
        let task = wait_for_answer(app, task, wait).await?;
        full_task(app, task, &[written]).await
    };
    let settled = settled.await;
    if let Some(slot) = slot {
        app.store.release_poll_slot(&slot).await;
    }
    let task = match settled {
        Ok(task) => task,
        Err(error) => {
            tracing::warn!(task_id = %as_written.id, error = %error, "reading the opened task failed; answering with it as written");
            resolve_from_memory(&mut as_written, &[written]);
            as_written
        }
    };
    let mut response = json_response(StatusCode::OK, &task.to_json());
    if let Ok(value) = HeaderValue::from_str(&task.call_id) {
        response.headers_mut().insert("x-call-id", value);
    }
    Ok(response)
}

/// Re-reads a task until it leaves submitted/working or `wait` runs out, at most one read per
/// poll interval. A claim deadline that passes meanwhile is applied.
async fn wait_for_answer(app: &App, mut task: Task, wait: Duration) -> Result<Task, ApiError> {
    let until = Instant::now() + wait;
    while task.state.is_pending() && Instant::now() < until {
        tokio::time::sleep_until((Instant::now() + app.config.task_poll_interval).min(until)).await;
        task = match app.store.get_task(&task.id).await? {
            Some(task) => expire_if_overdue(app, task).await?,
            None => return Err(ApiError::TaskNotFound),
        };
    }
    Ok(task)
}

/// Applies a passed claim deadline to a task read from the store.
pub(crate) async fn expire_if_overdue(app: &App, task: Task) -> Result<Task, ApiError> {
    if !task.is_overdue(&clock::now()) {
        return Ok(task);
    }
    let deadline = task.deadline_at.clone().unwrap_or_default();
    match app
        .store
        .expire_task(&task.id, &deadline, task.claim_timeout_seconds)
        .await?
    {
        TaskTransition::Applied(task) => {
            tracing::info!(task_id = %task.id, "claim deadline passed; task failed");
            Ok(task)
        }
        TaskTransition::Refused(Some(current)) => Ok(current),
        TaskTransition::Refused(None) => Err(ApiError::TaskNotFound),
    }
}

/// Whether `principal` may read `task` through a route naming the callee `segment`: the caller,
/// the callee, an admin or viewer of the tenant, or a member who owns either agent.
/// The task, if `principal` may read it under the route's `{agent}` (`segment`); otherwise the
/// one `404`, whether it exists or not.
async fn readable_task(
    app: &App,
    principal: &TenantPrincipal,
    task_id: &TaskId,
    segment: &str,
) -> Result<Task, ApiError> {
    let task = app
        .store
        .get_task(task_id)
        .await?
        .ok_or(ApiError::TaskNotFound)?;
    if may_read(app, principal, &task, segment).await? {
        Ok(task)
    } else {
        Err(ApiError::TaskNotFound)
    }
}

async fn may_read(
    app: &App,
    principal: &TenantPrincipal,
    task: &Task,
    segment: &str,
) -> Result<bool, ApiError> {
    if task.tenant_id != principal.tenant_id
        || !AgentRef::parse(segment).names(&task.callee_agent_id, &task.callee_name)
    {
        return Ok(false);
    }
    match &principal.kind {
        PrincipalKind::Agent { agent_id } => {
            Ok(*agent_id == task.caller_agent_id || *agent_id == task.callee_agent_id)
        }
        PrincipalKind::Admin { .. } | PrincipalKind::Viewer { .. } => Ok(true),
        PrincipalKind::Member { .. } => {
            for agent_id in [&task.caller_agent_id, &task.callee_agent_id] {
                let agent = app
                    .store
                    .find_agent(&principal.tenant_id, &AgentRef::Id(parse_uuid(agent_id)?))
                    .await?;
                if agent.is_some_and(|agent| principal.speaks_for(&agent)) {
                    return Ok(true);
                }
            }
            Ok(false)
        }
    }
}

pub(super) fn task_id_param(request: &Request) -> Result<TaskId, ApiError> {
    let text = path_param(request, "task_id")?;
    // A malformed id names no task: the same 404 as any task the reader may not see.
    uuid::Uuid::parse_str(&text)
        .map(|id| TaskId::from(id.to_string()))
        .map_err(|_| ApiError::TaskNotFound)
}

/// `GET /v1/agents/{callee}/tasks/{id}?wait=N`.
pub async fn get(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let segment = path_param(&request, "agent")?;
    let wait = wait_param(&request, app)?;
    let task_id = task_id_param(&request)?;
    let task = readable_task(app, &principal, &task_id, &segment).await?;
    let task = expire_if_overdue(app, task).await?;
    let wait = if task.state.is_pending() {
        wait
    } else {
        Duration::ZERO
    };
    let task = with_poll_slot(app, &principal, wait, wait_for_answer(app, task, wait)).await?;
    task_ok(app, task, &[]).await
}

/// `POST /v1/agents/{callee}/tasks/{id}/cancel`: only the caller; canceling a finished task
/// returns it unchanged.
pub async fn cancel(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let segment = path_param(&request, "agent")?;
    let task_id = task_id_param(&request)?;
    let Some(caller_id) = principal.agent_id().cloned() else {
        let task = app
            .store
            .get_task(&task_id)
            .await?
            .ok_or(ApiError::TaskNotFound)?;
        if may_read(app, &principal, &task, &segment).await? {
            return Err(ApiError::Forbidden(
                "only the caller may cancel a task".into(),
            ));
        }
        return Err(ApiError::TaskNotFound);
    };
    let callee = match AgentRef::parse(&segment) {
        AgentRef::Id(id) => id.to_string(),
        AgentRef::Name(name) => name.as_str().to_owned(),
        AgentRef::Unknown => return Err(ApiError::TaskNotFound),
    };
    match app
        .store
        .cancel_task(&task_id, &principal.tenant_id, &caller_id, &callee)
        .await?
    {
        TaskTransition::Applied(task) => {
            tracing::info!(task_id = %task.id, "task canceled");
            audited_task_ok(app, &principal, "task.cancel", task, &[]).await
        }
        TaskTransition::Refused(None) => Err(ApiError::TaskNotFound),
        TaskTransition::Refused(Some(task)) => {
            if !may_read(app, &principal, &task, &segment).await? {
                Err(ApiError::TaskNotFound)
            } else if task.caller_agent_id != caller_id {
                Err(ApiError::Forbidden(
                    "only the caller may cancel a task".into(),
                ))
            } else {
                // Already finished: canceling is a no-op, not an error.
                task_ok(app, task, &[]).await
            }
        }
    }
}

/// `POST /v1/agents/{agent}/tasks/{task_id}/messages` with `{"message": Message}`: the caller
/// answers the callee's question in place. The `input_required` task goes back to `working` with
/// the message in its history, claimable again (pull) or delivered again (push). Like an open, it
/// holds only over a live binding to an active callee; a refusal is the one 403 with the reason
/// on the audit log.
pub async fn add_message(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let segment = path_param(&request, "agent")?;
    let task_id = task_id_param(&request)?;
    let body = json_object(&request)?;
    only_fields(&body, &["message"])?;
    let message = caller_message(&body, "answering a task")?;
    let task = readable_task(app, &principal, &task_id, &segment).await?;
    if principal.agent_id() != Some(&task.caller_agent_id) {
        return Err(ApiError::Forbidden(
            "only the caller may answer a task's question".into(),
        ));
    }
    let task = expire_if_overdue(app, task).await?;
    not_waiting_for_input(&task)?;
    let message = store_message(app, &task, &message).await?;
    if task.would_overflow(message.bytes) {
        return Err(content_too_large());
    }
    // Read in full before the write, so the answer after it needs no read that could fail.
    let shown = full_task(app, task.clone(), &[]).await?;
    let mut audit = AuditEntry::new(&principal, "task.message", &task.callee_agent_id);
    audit.call_id = Some(task.call_id.clone());
    audit.task_id = Some(task.id.clone());
    match app.store.answer_input(&task, &message, &audit).await? {
        Ok(()) => {}
        Err(InputRefusal::NotWaiting) => {
            // Changed meanwhile (answered, canceled, another message): say what it is now.
            let current = app
                .store
                .get_task(&task.id)
                .await?
                .ok_or(ApiError::TaskNotFound)?;
            not_waiting_for_input(&current)?;
            if current.would_overflow(message.bytes) {
                return Err(content_too_large());
            }
            return Err(ApiError::Unavailable);
        }
        Err(InputRefusal::BindingNotLive | InputRefusal::CalleeNotActive) => {
            let reason = refusal_reason(
                app,
                &principal,
                &task.caller_agent_id,
                &task.callee_agent_id,
            )
            .await?;
            return Err(refuse_action(
                app,
                &principal,
                "task.message",
                &task.callee_agent_id,
                reason,
                &task.call_id,
                Some(&task.id),
            )
            .await);
        }
    }
    tracing::info!(task_id = %task.id, call_id = %task.call_id, "task question answered");
    if task.delivery == Delivery::Push {
        // On the outbox already; if this enqueue is lost, the outbox sweep redoes it.
        if let Err(error) = app.queue.enqueue(&task.id).await {
            tracing::warn!(task_id = %task.id, error = %error, "enqueue failed; the outbox sweep will deliver the task");
        }
    }
    super::ok(&answered_in_place(shown, &message).to_json())
}

/// A task as the caller's answer to its question left it: `working` again, the answer last in
/// its history and no status message.
fn answered_in_place(mut task: Task, message: &PackedBody) -> Task {
    let mut answer = task.clone();
    answer.history = vec![message.stored.clone()];
    resolve_from_memory(&mut answer, &[message]);
    let now = clock::now();
    task.history.append(&mut answer.history);
    task.state = TaskState::Working;
    task.status_message = None;
    task.status_timestamp = now.clone();
    task.updated_at = now;
    task.content_bytes += message.bytes;
    task
}

/// `Ok` for a task that waits for its caller's input with room in its history; otherwise the
/// `409` that says why not.
fn not_waiting_for_input(task: &Task) -> Result<(), ApiError> {
    if task.state != TaskState::InputRequired {
        return Err(ApiError::Conflict(format!(
            "the task is {}, not waiting for input",
            task.state.as_str()
        )));
    }
    if task.history.len() >= MAX_HISTORY_BEFORE_ANSWER {
        return Err(ApiError::LimitReached(format!(
            "a task holds {MAX_TASK_MESSAGES} messages and the last is kept for the answer; \
             open a new task in this conversation"
        )));
    }
    Ok(())
}
