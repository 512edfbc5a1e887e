//! Opening a task, for either edge (`POST /v1/agents/{callee}/tasks`, A2A `SendMessage`): the
//! callee resolved and the caller admitted through the gate, the opening message packed, the
//! task built by the domain ([`Task::open`]) and written (`store/open.rs`: the task, then its
//! ledger items and word postings in one batch); then answered at once or after waiting for the
//! callee's answer.

use std::time::Duration;

use super::admission::{admit, Refusal};
use super::call_span;
use super::notify::{save_config, Start};
use super::policy::{refuse_by_policies, GovernedCall};
use super::tasks::{accepted_by, agent_principal, expire_if_overdue, wait_for_answer};
use crate::app::App;
use crate::bodies::resolve_from_memory;
use crate::domain::binding::RefusalReason;
use crate::domain::call_tree::Parent;
use crate::domain::content::{PackedBody, Stored};
use crate::domain::notify::NotifyRequest;
use crate::domain::policy::PolicyAction;
use crate::domain::task::{keyed_task_id, CallLineage, Delivery, TaskOpening};
use crate::domain::trace::TraceContext;
use crate::domain::{
    clock, Agent, AgentId, AgentRef, Binding, CallId, ContextId, Message, Task, TaskId,
    TenantPrincipal,
};
use crate::error::ApiError;
use crate::http::gate::{admitting_binding, refuse, refuse_over_quota};
use crate::http::{full_task, pack_message, poll_slot, WaitSlots};
use crate::store::{ContextJoin, OpenRefusal, OpenTask, StoreError};
use crate::tasks::tree::TreeCall;

/// An open request as read from the wire (REST or A2A), before the gate looks at it.
pub(crate) struct OpenRequest {
    pub callee_segment: String,
    /// How long to wait for the callee's answer before answering with the task as it is.
    pub wait: Duration,
    pub message: Message,
    /// The conversation to continue; `None` starts a new one.
    pub context_id: Option<ContextId>,
    /// Whether the client may name a conversation (A2A): a `context_id` the gate did not issue
    /// to these two agents is then the name of their conversation in the tenant, joined or
    /// started. Else (REST) it must be one they have.
    pub context_named: bool,
    pub parent_call_id: Option<CallId>,
    /// The callee's skill the open names (REST body `skill`, A2A `message.metadata.skill`),
    /// which a binding's contract may bound.
    pub skill: Option<String>,
    /// A2A: a push notification config to store for the task once it is open (checked and its
    /// URL vetted already).
    pub notify: Option<NotifyRequest>,
}

/// What follows a committed open: how long to wait, and the config to store first.
struct AfterOpen {
    wait: Duration,
    notify: Option<NotifyRequest>,
}

/// Opens a task for the calling agent (or finds the one an open repeated with the same
/// `message_id` wrote) and answers with it in full, after waiting up to `asked.wait`.
pub(crate) async fn open_task(
    app: &App,
    principal: &TenantPrincipal,
    asked: OpenRequest,
) -> Result<Task, ApiError> {
    let started = std::time::SystemTime::now();
    let caller_id = agent_principal(principal, "opening a task")?;
    let call_id = CallId::generate();
    let (lineage, parent, parent_trace) =
        lineage(app, principal, call_id, asked.parent_call_id.clone()).await?;
    let callee = callee_in_tenant(app, principal, &asked.callee_segment, &lineage).await?;
    let task_id = match &asked.message.message_id {
        Some(message_id) => keyed_task_id(&caller_id, &callee.id, message_id),
        None => TaskId::generate(),
    };
    let input = pack_message(&principal.tenant_id, &task_id, &asked.message)?;
    let binding = admitted_binding(app, principal, &caller_id, &callee, &asked, &lineage).await?;
    accepted_by(&callee, &asked.message)?;
    let (context_id, context) = conversation(app, principal, &asked, &caller_id, &callee).await?;
    let expires_at = app.config.task_expiry();
    let call = TreeCall {
        tenant_id: &principal.tenant_id,
        caller_id: &caller_id,
        callee_id: &callee.id,
        lineage: &lineage,
        parent: &parent,
        expires_at,
    };
    let admission = match admit(app, principal, &binding, &call, asked.skill.as_deref()).await? {
        Ok(admission) => admission,
        Err(refusal) => {
            let refused = RefusedOpen {
                task_id: &task_id,
                callee: &callee,
                refusal,
                lineage: &lineage,
            };
            return refuse_or_replay(app, principal, &asked, refused, &input).await;
        }
    };
    if input.offload.is_some() {
        if let Err(error) = app.bodies.store(&[&input]).await {
            admission.give_back(app).await;
            return Err(error.into());
        }
    }
    let mut task = Task::open(TaskOpening {
        id: task_id,
        caller_agent_id: caller_id,
        callee: &callee,
        context_id,
        input: Stored::packed(&input, asked.message.clone()),
        input_bytes: input.bytes,
        lineage,
        now: clock::now(),
        expires_at,
    });
    task.context_named = context == ContextJoin::Name;
    task.counted_in_tree = admission.tree.counted_in_tree();
    task.counted_on_binding = admission.contract.counted_open();
    task.log_shard = admission.log_shards.shard_of(&task.id);
    task.tree_place = Some(admission.tree.place.clone());
    task.skill.clone_from(&asked.skill);
    task.trace = trace_of_open(parent_trace.clone());
    task.caller_signed_in_with
        .clone_from(&principal.signed_in_with);
    let open = OpenTask {
        parked_until: parked_until(&task, &callee),
        task,
        context,
    };
    let keyed = asked.message.message_id.is_some();
    let after = AfterOpen {
        wait: asked.wait,
        notify: asked.notify,
    };
    let committed = commit(app, principal, &callee, open, keyed, after, &input).await;
    settle(app, committed, &admission, (started, parent_trace.as_ref())).await
}

/// After the commit: a new task's call gets its span (opened at `since.0`, under `since.1`
/// when its parent's context is known), anything else gives `admission`'s counts back.
async fn settle(
    app: &App,
    committed: Result<Opened, ApiError>,
    admission: &super::admission::Admission,
    since: (std::time::SystemTime, Option<&TraceContext>),
) -> Result<Task, ApiError> {
    match &committed {
        Ok(Opened::New(task)) => call_span::record(task, since.0, since.1),
        _ => admission.give_back(app).await,
    }
    committed.map(Opened::into_task)
}

/// When a push task opened while its callee is held back falls due on the outbox
/// (`push/parking.rs`); `None` for a task whose delivery is enqueued at once.
fn parked_until(task: &Task, callee: &Agent) -> Option<clock::Timestamp> {
    (task.delivery == Delivery::Push)
        .then(|| callee.push_hold_at(clock::unix_now(), crate::push::outcome::jitter()))
        .flatten()
        .map(clock::from_unix)
}

/// The conversation the open continues, names or starts.
async fn conversation(
    app: &App,
    principal: &TenantPrincipal,
    asked: &OpenRequest,
    caller_id: &AgentId,
    callee: &Agent,
) -> Result<(ContextId, ContextJoin), ApiError> {
    Ok(match asked.context_id.clone() {
        None => (ContextId::generate(), ContextJoin::Start),
        Some(id) if !asked.context_named => (id, ContextJoin::Continue),
        Some(id) => {
            let issued = uuid::Uuid::parse_str(&id).is_ok()
                && app
                    .store
                    .is_conversation_of(&principal.tenant_id, &id, [caller_id, &callee.id])
                    .await?;
            (
                id,
                if issued {
                    ContextJoin::Continue
                } else {
                    ContextJoin::Name
                },
            )
        }
    })
}

/// An open refused after its binding admitted it.
struct RefusedOpen<'a> {
    task_id: &'a TaskId,
    callee: &'a Agent,
    refusal: Refusal,
    lineage: &'a CallLineage,
}

/// The gate's refusal for an open the limits or the contract refuse, unless it repeats an open
/// with the same `message_id`: that one answers with the task the first wrote, whatever the
/// limits say now.
async fn refuse_or_replay(
    app: &App,
    principal: &TenantPrincipal,
    asked: &OpenRequest,
    refused: RefusedOpen<'_>,
    input: &PackedBody,
) -> Result<Task, ApiError> {
    if asked.message.message_id.is_some() {
        if let Some(existing) = app.store.get_task(refused.task_id).await? {
            let (callee_id, wait) = (&refused.callee.id, asked.wait);
            return replay_open(app, principal, callee_id, existing, wait, input).await;
        }
    }
    let (callee_id, lineage) = (&refused.callee.id, refused.lineage);
    Err(match refused.refusal {
        Refusal::Gate(reason) => refuse(app, principal, callee_id, reason, lineage).await,
        Refusal::Quota(exceeded) => {
            refuse_over_quota(app, principal, callee_id, exceeded, lineage).await
        }
        Refusal::Policies(names) => {
            let caller_id = agent_principal(principal, "opening a task")?;
            let call = GovernedCall {
                action: PolicyAction::Open,
                caller_id: &caller_id,
                callee_id,
                skill: asked.skill.as_deref(),
                lineage: Some(lineage),
                task_id: None,
            };
            refuse_by_policies(app, principal, &call, &names).await
        }
    })
}

/// The live binding from the caller to the callee, if it admits this open (the skill it names
/// included); anything else is the gate's one refusal.
async fn admitted_binding(
    app: &App,
    principal: &TenantPrincipal,
    caller_id: &AgentId,
    callee: &Agent,
    asked: &OpenRequest,
    lineage: &CallLineage,
) -> Result<Binding, ApiError> {
    // The binding and the callee as they stand now (strongly consistent reads) admit the open;
    // nothing is stored for a caller the gate refuses.
    let reason = match admitting_binding(app, principal, caller_id, callee).await? {
        Ok(binding) if binding.contract.allows_skill(asked.skill.as_deref()) => return Ok(binding),
        Ok(_) => RefusalReason::SkillNotAllowed,
        Err(reason) => reason,
    };
    Err(refuse(app, principal, &callee.id, reason, lineage).await)
}

/// What a committed open answers with: a task this open wrote, or the one an open repeated with
/// the same `message_id` wrote before.
enum Opened {
    New(Task),
    Repeated(Task),
}

impl Opened {
    fn into_task(self) -> Task {
        match self {
            Opened::New(task) | Opened::Repeated(task) => task,
        }
    }
}

/// The callee the path names, if it is an agent of the caller's tenant; anything else is the
/// gate's one refusal.
async fn callee_in_tenant(
    app: &App,
    principal: &TenantPrincipal,
    segment: &str,
    lineage: &CallLineage,
) -> Result<Agent, ApiError> {
    let found = app
        .store
        .find_agent(&principal.tenant_id, &AgentRef::parse(segment))
        .await?;
    match found {
        None => Err(refuse(
            app,
            principal,
            segment,
            RefusalReason::UnknownCallee,
            lineage,
        )
        .await),
        Some(callee) if callee.tenant_id != principal.tenant_id => {
            let reason = RefusalReason::OtherTenant;
            Err(refuse(app, principal, &callee.id, reason, lineage).await)
        }
        Some(callee) => Ok(callee),
    }
}

/// The new call's place in the ledger: a call with no parent is its own root; a parent from
/// this tenant's ledger passes its root on; an unknown parent is taken as the root. With it, the
/// parent as the call-tree limits see it.
async fn lineage(
    app: &App,
    principal: &TenantPrincipal,
    call_id: CallId,
    parent_call_id: Option<CallId>,
) -> Result<(CallLineage, Parent, Option<TraceContext>), ApiError> {
    let (root_call_id, parent, trace) = match &parent_call_id {
        None => (call_id.clone(), Parent::None, None),
        Some(parent_id) => match app
            .store
            .parent_call(&principal.tenant_id, parent_id)
            .await?
        {
            Some(known) => (
                known.root_call_id,
                Parent::Known {
                    place: known.place,
                    opened_at: known.opened_at,
                    caller: known.caller_agent_id,
                },
                known.trace,
            ),
            None => (parent_id.clone(), Parent::Unknown, None),
        },
    };
    let lineage = CallLineage {
        call_id,
        parent_call_id,
        root_call_id,
    };
    Ok((lineage, parent, trace))
}

/// The trace context a new task keeps: the one the request brings (its span in it), else its
/// parent call's (a span under the parent's open); else none, and the task is in its root
/// call's trace (`Task::trace_context`), so that a call tree is one trace either way.
fn trace_of_open(parent_trace: Option<TraceContext>) -> Option<TraceContext> {
    crate::trace::current().or_else(|| parent_trace.map(|parent| parent.child()))
}

/// Writes the task and answers: the new task, the task a repeated open already wrote, or the
/// conversation's refusal.
async fn commit(
    app: &App,
    principal: &TenantPrincipal,
    callee: &Agent,
    open: OpenTask,
    keyed: bool,
    after: AfterOpen,
    input: &PackedBody,
) -> Result<Opened, ApiError> {
    let wait = after.wait;
    let task_id = &open.task.id;
    crate::http::note_task(&open.task);
    let opened = match app.tasks().open(&open).await {
        // A keyed open whose write failed may have met a concurrent repeat's write; once that
        // one commits, its task is this request's answer too.
        Err(StoreError::Unavailable(reason)) if keyed => {
            tokio::time::sleep(Duration::from_millis(50)).await;
            return match app.store.get_task(task_id).await? {
                Some(existing) => replay_open(app, principal, &callee.id, existing, wait, input)
                    .await
                    .map(Opened::Repeated),
                None => Err(StoreError::Unavailable(reason).into()),
            };
        }
        other => other?,
    };
    match opened {
        Ok(()) => {}
        Err(OpenRefusal::AlreadyOpen) => {
            let existing = app.store.get_task(task_id).await?.ok_or_else(|| {
                ApiError::internal(format!(
                    "task {task_id} vanished after its open was refused as a repeat"
                ))
            })?;
            return replay_open(app, principal, &callee.id, existing, wait, input)
                .await
                .map(Opened::Repeated);
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
    if let Some(asked) = after.notify {
        // The task is committed: a config that cannot be stored now is logged, never an error
        // that would invite the caller to send (and open) again.
        if let Err(error) = save_config(app, principal, &open.task, asked, Start::FromOpen).await {
            tracing::warn!(task_id = %task_id, error = %error, "the push notification config sent with the task could not be stored");
        }
    }
    opened_response(app, principal, open.task, wait, input)
        .await
        .map(Opened::New)
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
) -> Result<Task, ApiError> {
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
) -> Result<Task, ApiError> {
    let mut as_written = task.clone();
    // The task is opened already: without a free long-poll slot it is answered at once.
    let slot: Option<WaitSlots> = poll_slot(app, principal, wait).await.unwrap_or_default();
    let wait = if slot.is_some() { wait } else { Duration::ZERO };
    let settled = async {
        let task = wait_for_answer(app, task, wait).await?;
        full_task(app, task, &[written]).await
    };
    let settled = settled.await;
    if let Some(slot) = slot {
        slot.release(app).await;
    }
    let task = match settled {
        Ok(task) => task,
        Err(error) => {
            tracing::warn!(task_id = %as_written.id, error = %error, "reading the opened task failed; answering with it as written");
            if let Err(error) = resolve_from_memory(&mut as_written, &[written]) {
                tracing::error!(task_id = %as_written.id, error = %error, "a body this request wrote does not read back");
            }
            as_written
        }
    };
    Ok(task)
}
