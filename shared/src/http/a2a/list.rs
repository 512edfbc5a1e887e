//! `ListTasks`: a caller's tasks on one agent, newest first, a page at a time, from the index of
//! caller and callee; filters pass over at most [`LIST_ROUNDS`] index pages per request.

use serde_json::{json, Map, Value};

use super::{history_length, object, optional_bool, A2aCall, Failure};
use crate::a2a::wire::{parse_state, task_json, TaskView};
use crate::a2a::A2aError;
use crate::domain::clock::Timestamp;
use crate::domain::task::PAGE_BYTES;
use crate::domain::{clock, AgentRef, ContextId, Task, TaskState};
use crate::error::ApiError;
use crate::http::service::tasks::agent_principal;
use crate::store::PairCursor;

impl A2aCall<'_> {
    /// `ListTasks`: the caller's tasks on this agent, newest first, a page at a time.
    pub async fn list_tasks(&self, params: &Value) -> Result<Value, Failure> {
        let query = TaskQuery::read(object(params, "params")?)?;
        let caller = agent_principal(&self.principal, "listing tasks")?;
        let callee = self
            .app
            .store
            .find_agent(
                &self.principal.tenant_id,
                &AgentRef::parse(&self.callee_segment),
            )
            .await
            .map_err(ApiError::from)?
            .filter(|callee| callee.tenant_id == self.principal.tenant_id);
        let Some(callee) = callee else {
            // An agent the caller cannot reach has no tasks of the caller's.
            return Ok(list_page(Vec::new(), "", query.page_size));
        };
        let mut cursor = query.start()?;
        let mut page = Vec::new();
        let mut bytes = 0;
        for _ in 0..LIST_ROUNDS {
            let (tasks, next) = self
                .app
                .store
                .tasks_of_pair(&caller, &callee.id, cursor.as_ref(), query.page_size as i32)
                .await
                .map_err(ApiError::from)?;
            let batch = tasks.len();
            for (index, task) in tasks.into_iter().enumerate() {
                let key = PairCursor(format!("{}#{}", task.created_at, task.id));
                if query.matches(&task) {
                    bytes += query.view.bytes_of(&task);
                    if !page.is_empty() && bytes > PAGE_BYTES {
                        // Full: the next page starts at this task.
                        let token = cursor.map(|key| encode_token(&key));
                        return Ok(list_page(
                            page,
                            token.as_deref().unwrap_or(""),
                            query.page_size,
                        ));
                    }
                    page.push(self.shown_task(task, query.view).await?);
                }
                cursor = Some(key);
                if page.len() == query.page_size {
                    let more = index + 1 < batch || next.is_some();
                    let token = cursor.filter(|_| more).map(|key| encode_token(&key));
                    return Ok(list_page(
                        page,
                        token.as_deref().unwrap_or(""),
                        query.page_size,
                    ));
                }
            }
            match next {
                None => return Ok(list_page(page, "", query.page_size)),
                // Go on from the end of the index page read, which lies past the last task
                // listed when the page's last entries listed nothing (tasks past retention).
                Some(end) => cursor = Some(end),
            }
        }
        let token = cursor.map(|key| encode_token(&key));
        Ok(list_page(
            page,
            token.as_deref().unwrap_or(""),
            query.page_size,
        ))
    }
}

impl A2aCall<'_> {
    /// `task` as a `ListTasks` page shows it, only the bodies the view shows read.
    async fn shown_task(&self, mut task: Task, view: TaskView) -> Result<Value, ApiError> {
        crate::http::note_task(&task);
        self.app
            .bodies
            .resolve_shown(&mut task, view.shown())
            .await?;
        Ok(task_json(&task, view))
    }
}

/// Most index reads one `ListTasks` page makes while filters pass over tasks; a page cut short
/// by it still carries the token to go on.
const LIST_ROUNDS: usize = 10;
const DEFAULT_PAGE_SIZE: usize = 50;
const MAX_PAGE_SIZE: usize = 100;

/// A `ListTasks` request's filters and view.
struct TaskQuery {
    context_id: Option<ContextId>,
    state: Option<Option<TaskState>>,
    after: Option<Timestamp>,
    page_size: usize,
    page_token: Option<String>,
    view: TaskView,
}

impl TaskQuery {
    fn read(params: &Map<String, Value>) -> Result<TaskQuery, A2aError> {
        let text = |name: &str| match params.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) if text.is_empty() => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(A2aError::invalid_params(format!("{name} must be a string"))),
        };
        let page_size = match params.get("pageSize") {
            None | Some(Value::Null) => DEFAULT_PAGE_SIZE,
            Some(value) => value
                .as_u64()
                .map(|size| size as usize)
                .filter(|size| (1..=MAX_PAGE_SIZE).contains(size))
                .ok_or_else(|| {
                    A2aError::invalid_params(format!("pageSize must be 1 to {MAX_PAGE_SIZE}"))
                })?,
        };
        let after = match text("statusTimestampAfter")? {
            None => None,
            Some(at) => Some(clock::format(clock::parse(&at).ok_or_else(|| {
                A2aError::invalid_params("statusTimestampAfter must be an RFC 3339 time")
            })?)),
        };
        Ok(TaskQuery {
            context_id: text("contextId")?.map(ContextId::from),
            state: text("status")?.map(|name| parse_state(&name)).transpose()?,
            after,
            page_size,
            page_token: text("pageToken")?,
            view: TaskView {
                history_length: history_length(params.get("historyLength"))?,
                include_artifacts: optional_bool(params, "includeArtifacts")?,
            },
        })
    }

    fn matches(&self, task: &Task) -> bool {
        self.context_id
            .as_ref()
            .is_none_or(|id| *id == task.context_id)
            && self.state.is_none_or(|state| state == Some(task.state))
            && self
                .after
                .as_ref()
                .is_none_or(|after| task.status_timestamp > *after)
    }

    /// Where the page starts: the place its `pageToken` names (`{createdAt}_{taskId}`, the last
    /// task a page covered). Any token of that shape is a place in the caller's tasks on this
    /// agent, newest first; the filters decide what a page holds.
    fn start(&self) -> Result<Option<PairCursor>, A2aError> {
        let Some(token) = &self.page_token else {
            return Ok(None);
        };
        PairCursor::from_token(token).map(Some).ok_or_else(|| {
            A2aError::invalid_params(
                "pageToken must be a nextPageToken as issued: {createdAt}_{taskId}",
            )
        })
    }
}

/// The `nextPageToken` of a page that ends at `key`.
fn encode_token(key: &PairCursor) -> String {
    key.to_token().unwrap_or_else(|| {
        tracing::error!(cursor = %key.0, "a page ended on an entry no token names");
        String::new()
    })
}

fn list_page(tasks: Vec<Value>, next_page_token: &str, page_size: usize) -> Value {
    json!({"tasks": tasks, "nextPageToken": next_page_token, "pageSize": page_size})
}
