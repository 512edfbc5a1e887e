//! The service's task reads and changes: who may read a task, waiting for its answer, a passed
//! claim deadline applied, the caller's cancel and answer.

use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::policy::{judged_on_task, tenant_book};
use crate::app::App;
use crate::domain::binding::RefusalReason;
use crate::domain::policy::PolicyAction;
use crate::domain::task::{MAX_HISTORY_BEFORE_ANSWER, MAX_TASK_MESSAGES};
use crate::domain::transitions::Transition;
use crate::domain::{
    clock, media, Agent, AgentId, AgentRef, Message, PrincipalKind, Task, TaskId, TenantPrincipal,
};
use crate::error::ApiError;
use crate::http::gate::{parse_uuid, refusal_now, refusal_reason, refuse_action};
use crate::http::{audited_task, content_too_large, full_task, pack_message, with_poll_slot};
use crate::metrics::{self, Metric};
use crate::store::{AuditEntry, InputRefusal, TaskTransition};

pub(crate) fn agent_principal(
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
pub(crate) fn caller_message(
    body: &serde_json::Map<String, Value>,
    when: &str,
) -> Result<Message, ApiError> {
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

/// Re-reads a task until it leaves submitted/working or `wait` runs out, paced by how long the
/// task has been quiet (`PollPace`): soon after a change, then at most one read per ceiling. A
/// claim deadline that passes meanwhile is applied.
pub(crate) async fn wait_for_answer(
    app: &App,
    mut task: Task,
    wait: Duration,
) -> Result<Task, ApiError> {
    let began = Instant::now();
    let until = began + wait;
    let pace = app.config.task_pace();
    while task.state.is_pending() && Instant::now() < until {
        let interval = pace.after_quiet(task.quiet_for(time::OffsetDateTime::now_utc()));
        tokio::time::sleep_until((Instant::now() + interval).min(until)).await;
        task = match app.store.get_task(&task.id).await? {
            Some(task) => expire_if_overdue(app, task).await?,
            None => return Err(ApiError::TaskNotFound),
        };
    }
    if !wait.is_zero() {
        metrics::emit(Metric::LongPollWait {
            route: "answer",
            waited: began.elapsed(),
        });
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
        .tasks()
        .expire(&task.id, &deadline, task.claim_timeout_seconds)
        .await?
    {
        TaskTransition::Applied(task) => {
            metrics::emit(Metric::TasksExpired { count: 1 });
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
/// The caller's reads are judged by the tenant's policies (`read`).
pub(crate) async fn readable_task(
    app: &App,
    principal: &TenantPrincipal,
    task_id: &TaskId,
    segment: &str,
) -> Result<Task, ApiError> {
    let task = visible_task(app, principal, task_id, segment).await?;
    if principal.agent_id() == Some(&task.caller_agent_id) {
        judged_on_task(app, principal, PolicyAction::Read, &task).await?;
    }
    Ok(task)
}

/// [`readable_task`] before the policies judge the read.
async fn visible_task(
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

/// A task its reader may see, in full, after waiting up to `wait` for it to leave
/// submitted/working.
pub(crate) async fn read_task(
    app: &App,
    principal: &TenantPrincipal,
    segment: &str,
    task_id: &TaskId,
    wait: Duration,
) -> Result<Task, ApiError> {
    let task = readable_task(app, principal, task_id, segment).await?;
    settle(app, principal, task, wait).await
}

/// `task` in full once it leaves submitted/working or `wait` runs out (holding a long-poll
/// slot while it waits), a passed claim deadline applied.
pub(crate) async fn settle(
    app: &App,
    principal: &TenantPrincipal,
    task: Task,
    wait: Duration,
) -> Result<Task, ApiError> {
    let task = expire_if_overdue(app, task).await?;
    let wait = if task.state.is_pending() {
        wait
    } else {
        Duration::ZERO
    };
    let task = with_poll_slot(app, principal, wait, wait_for_answer(app, task, wait)).await?;
    full_task(app, task, &[]).await
}

/// What a caller's cancel found.
pub(crate) enum Canceled {
    /// Canceled by this request (and on the audit log), in full.
    Now(Task),
    /// Finished before: unchanged, in full.
    AlreadyFinished(Task),
}

/// Cancels a task for its caller.
pub(crate) async fn cancel_task(
    app: &App,
    principal: &TenantPrincipal,
    segment: &str,
    task_id: &TaskId,
) -> Result<Canceled, ApiError> {
    let Some(caller_id) = principal.agent_id().cloned() else {
        let task = app
            .store
            .get_task(task_id)
            .await?
            .ok_or(ApiError::TaskNotFound)?;
        if may_read(app, principal, &task, segment).await? {
            return Err(ApiError::Forbidden(
                "only the caller may cancel a task".into(),
            ));
        }
        return Err(ApiError::TaskNotFound);
    };
    let callee = match AgentRef::parse(segment) {
        AgentRef::Id(id) => id.to_string(),
        AgentRef::Name(name) => name.as_str().to_owned(),
        AgentRef::Unknown => return Err(ApiError::TaskNotFound),
    };
    cancel_judged(app, principal, segment, task_id, &caller_id).await?;
    match app
        .tasks()
        .cancel(task_id, &principal.tenant_id, &caller_id, &callee)
        .await?
    {
        TaskTransition::Applied(task) => {
            let task = audited_task(app, principal, "task.cancel", task, &[]).await?;
            Ok(Canceled::Now(task))
        }
        TaskTransition::Refused(None) => Err(ApiError::TaskNotFound),
        TaskTransition::Refused(Some(task)) => {
            if !may_read(app, principal, &task, segment).await? {
                Err(ApiError::TaskNotFound)
            } else if task.caller_agent_id != caller_id {
                Err(ApiError::Forbidden(
                    "only the caller may cancel a task".into(),
                ))
            } else {
                // Already finished: canceling is a no-op, not an error.
                Ok(Canceled::AlreadyFinished(full_task(app, task, &[]).await?))
            }
        }
    }
}

/// Judges a cancel by the tenant's policies, when it has any, on the task as read: only a task
/// its caller may cancel (anything else is answered by the cancel's own checks).
async fn cancel_judged(
    app: &App,
    principal: &TenantPrincipal,
    segment: &str,
    task_id: &TaskId,
    caller_id: &AgentId,
) -> Result<(), ApiError> {
    if tenant_book(app, &principal.tenant_id).await?.is_none() {
        return Ok(());
    }
    let Some(task) = app.store.get_task(task_id).await? else {
        return Ok(());
    };
    if task.caller_agent_id == *caller_id && may_read(app, principal, &task, segment).await? {
        judged_on_task(app, principal, PolicyAction::Cancel, &task).await?;
    }
    Ok(())
}

/// The caller's answer to its task's question, taken in place: the task as the answer left it,
/// in full.
pub(crate) async fn answer_task(
    app: &App,
    principal: &TenantPrincipal,
    segment: &str,
    task_id: &TaskId,
    message: Message,
) -> Result<Task, ApiError> {
    let task = visible_task(app, principal, task_id, segment).await?;
    if principal.agent_id() != Some(&task.caller_agent_id) {
        return Err(ApiError::Forbidden(
            "only the caller may answer a task's question".into(),
        ));
    }
    judged_on_task(app, principal, PolicyAction::Answer, &task).await?;
    let task = expire_if_overdue(app, task).await?;
    let key = message.idempotency_key();
    if task.has_message(key.as_deref()) {
        // A repeat of an answer taken already: the task as it is now, nothing written again.
        return full_task(app, task, &[]).await;
    }
    not_waiting_for_input(&task)?;
    // The callee as this process saw it within the key cache's time: a change of its modes
    // reaches answers as a revoked key does.
    if let Some(callee) = app
        .store
        .recent_agent(&task.callee_agent_id, app.config.key_cache_ttl)
        .await?
    {
        accepted_by(&callee, &message)?;
    }
    let answer = message;
    // Judged before anything is stored: an answer too large, or (for one whose body goes to
    // the body store) a caller the gate would refuse now, leaves nothing behind. The write
    // below checks the binding again at the instant it commits.
    let message = pack_message(&task.tenant_id, &task.id, &answer)?;
    if task.would_overflow(message.bytes) {
        return Err(content_too_large());
    }
    if message.offload.is_some() {
        let refusal =
            refusal_now(app, principal, &task.caller_agent_id, &task.callee_agent_id).await?;
        if let Some(reason) = refusal {
            return Err(refused_answer(app, principal, &task, reason).await);
        }
        app.bodies.store(&[&message]).await?;
    }
    // Read in full before the write, so the answer after it needs no read that could fail.
    let shown = full_task(app, task.clone(), &[]).await?;
    let mut audit = AuditEntry::new(principal, "task.message", &task.callee_agent_id);
    audit.call_id = Some(task.call_id.clone());
    audit.task_id = Some(task.id.clone());
    match app
        .tasks()
        .reply(shown, answer, &message, key.as_deref(), &audit)
        .await?
    {
        Ok(answered) => Ok(answered),
        Err(InputRefusal::NotWaiting) => {
            changed_before_the_answer(app, &task.id, key.as_deref(), message.bytes).await
        }
        Err(InputRefusal::BindingNotLive | InputRefusal::CalleeNotActive) => {
            let reason =
                refusal_reason(app, principal, &task.caller_agent_id, &task.callee_agent_id)
                    .await?;
            Err(refused_answer(app, principal, &task, reason).await)
        }
    }
}

/// The task changed before the answer could be taken (answered, canceled, another message):
/// the task when it holds this very answer already, else why it takes none now.
async fn changed_before_the_answer(
    app: &App,
    task_id: &TaskId,
    key: Option<&str>,
    bytes: u64,
) -> Result<Task, ApiError> {
    let current = app
        .store
        .get_task(task_id)
        .await?
        .ok_or(ApiError::TaskNotFound)?;
    if current.has_message(key) {
        return full_task(app, current, &[]).await;
    }
    not_waiting_for_input(&current)?;
    if current.would_overflow(bytes) {
        return Err(content_too_large());
    }
    Err(ApiError::Unavailable)
}

/// The one 403 for an answer the gate refuses, with `reason` on the audit log.
async fn refused_answer(
    app: &App,
    principal: &TenantPrincipal,
    task: &Task,
    reason: RefusalReason,
) -> ApiError {
    refuse_action(
        app,
        principal,
        "task.message",
        &task.callee_agent_id,
        reason,
        &task.lineage(),
        Some(&task.id),
    )
    .await
}

/// `Ok` for a task that waits for its caller's input with room in its history; otherwise the
/// `409` that says why not.
fn not_waiting_for_input(task: &Task) -> Result<(), ApiError> {
    if !Transition::Reply.starts_from(task.state) {
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

/// Refuses a message with a part of a media type `callee` does not accept (its card's
/// `defaultInputModes`), naming the first such part.
pub(crate) fn accepted_by(callee: &Agent, message: &Message) -> Result<(), ApiError> {
    match media::refused_part(&callee.input_modes, message, "message.parts") {
        None => Ok(()),
        Some((at, media_type)) => Err(ApiError::UnsupportedMediaType(format!(
            "{at} is {media_type}, which agent {} does not accept (its card's defaultInputModes)",
            callee.name
        ))),
    }
}
