//! The route table: every route of the API, its method and path template, and its handler.
//!
//! A deployed function serves exactly one route (API Gateway has already matched it and passes
//! the path parameters); the local gateway matches paths itself with [`Route::find`]. Literal
//! segments win over parameters (`/v1/agents/me` before `/v1/agents/{agent}`), as in API Gateway.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use lambda_http::http::Method;
use lambda_http::Request;
use tracing::Instrument;

use super::reply::{buffered, Reply};
use super::{
    a2a, agents, audit, bindings, calls, cards, console, endpoint, events, members, open, pull,
    search, signing_keys, tasks, tenants, tools,
};
use crate::app::App;
use crate::error::{cause_chain, ApiError};

/// Why no route matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteMiss {
    /// No route has this path (404).
    NoSuchPath,
    /// The path exists under other methods (405); they are listed, in the table's order, for
    /// the `Allow` header RFC 9110 §15.5.6 requires on a 405.
    WrongMethod(Vec<Method>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    CreateTenant,
    CreateMember,
    CreateAgent,
    ListAgents,
    GetAgent,
    UpdateAgent,
    GetMe,
    CreateAgentKey,
    RevokeAgentKey,
    GrantBindings,
    ListBindings,
    ApproveBinding,
    RevokeBinding,
    OpenTask,
    GetTask,
    CancelTask,
    AddTaskMessage,
    ClaimNextTask,
    PostTaskResult,
    ReportTaskProgress,
    ListAudit,
    SetEndpoint,
    ListDeliveryAttempts,
    GetAgentCard,
    ListAgentCards,
    GetSigningKeys,
    RotateSigningKey,
    RetireSigningKey,
    PutTool,
    DeleteTool,
    ListTools,
    ListCalls,
    GetTenantSettings,
    UpdateTenantSettings,
    ListAgentKeys,
    ListMembers,
    CreateMemberKey,
    RevokeMemberKey,
    /// A2A 1.0, JSON-RPC binding.
    A2aJsonRpc,
    /// A2A 1.0, HTTP+JSON binding: `message:send`.
    A2aSendMessage,
    /// A2A 1.0, HTTP+JSON binding: `GetTask`.
    A2aGetTask,
    /// A2A 1.0, HTTP+JSON binding: `ListTasks`.
    A2aListTasks,
    /// A2A 1.0, HTTP+JSON binding: `tasks/{id}:cancel` and `tasks/{id}:subscribe`.
    A2aTaskAction,
    /// A2A 1.0, HTTP+JSON binding: `message:stream`.
    A2aStreamMessage,
    /// A task's updates as server-sent events.
    TaskEvents,
    /// A2A 1.0, HTTP+JSON binding: `CreateTaskPushNotificationConfig`.
    A2aCreatePushConfig,
    /// A2A 1.0, HTTP+JSON binding: `ListTaskPushNotificationConfigs`.
    A2aListPushConfigs,
    /// A2A 1.0, HTTP+JSON binding: `GetTaskPushNotificationConfig`.
    A2aGetPushConfig,
    /// A2A 1.0, HTTP+JSON binding: `DeleteTaskPushNotificationConfig`.
    A2aDeletePushConfig,
    /// `GET /v1/tasks`: task search.
    SearchTasks,
    /// `GET /console`: the console's page.
    ConsolePage,
    /// `GET /console/{asset}`: the console's scripts and styles.
    ConsoleAsset,
    /// `POST /console/session`: a member key exchanged for a console session.
    CreateConsoleSession,
    /// `GET /console/session`: the session the cookie holds.
    GetConsoleSession,
    /// `DELETE /console/session`: sign-out.
    DeleteConsoleSession,
}

impl Route {
    pub const ALL: [Route; 55] = [
        Route::CreateTenant,
        Route::CreateMember,
        Route::CreateAgent,
        Route::ListAgents,
        Route::GetAgent,
        Route::UpdateAgent,
        Route::GetMe,
        Route::CreateAgentKey,
        Route::RevokeAgentKey,
        Route::GrantBindings,
        Route::ListBindings,
        Route::ApproveBinding,
        Route::RevokeBinding,
        Route::OpenTask,
        Route::GetTask,
        Route::CancelTask,
        Route::AddTaskMessage,
        Route::ClaimNextTask,
        Route::PostTaskResult,
        Route::ReportTaskProgress,
        Route::ListAudit,
        Route::SetEndpoint,
        Route::ListDeliveryAttempts,
        Route::GetAgentCard,
        Route::ListAgentCards,
        Route::GetSigningKeys,
        Route::RotateSigningKey,
        Route::RetireSigningKey,
        Route::PutTool,
        Route::DeleteTool,
        Route::ListTools,
        Route::ListCalls,
        Route::GetTenantSettings,
        Route::UpdateTenantSettings,
        Route::ListAgentKeys,
        Route::ListMembers,
        Route::CreateMemberKey,
        Route::RevokeMemberKey,
        Route::A2aJsonRpc,
        Route::A2aSendMessage,
        Route::A2aGetTask,
        Route::A2aListTasks,
        Route::A2aTaskAction,
        Route::A2aStreamMessage,
        Route::TaskEvents,
        Route::A2aCreatePushConfig,
        Route::A2aListPushConfigs,
        Route::A2aGetPushConfig,
        Route::A2aDeletePushConfig,
        Route::SearchTasks,
        Route::ConsolePage,
        Route::ConsoleAsset,
        Route::CreateConsoleSession,
        Route::GetConsoleSession,
        Route::DeleteConsoleSession,
    ];

    /// Method and path template, as in the API docs and the deployment template.
    pub fn spec(self) -> (Method, &'static str) {
        match self {
            Route::CreateTenant => (Method::POST, "/v1/tenants"),
            Route::CreateMember => (Method::POST, "/v1/members"),
            Route::CreateAgent => (Method::POST, "/v1/agents"),
            Route::ListAgents => (Method::GET, "/v1/agents"),
            Route::GetAgent => (Method::GET, "/v1/agents/{agent}"),
            Route::UpdateAgent => (Method::PATCH, "/v1/agents/{agent}"),
            Route::GetMe => (Method::GET, "/v1/agents/me"),
            Route::CreateAgentKey => (Method::POST, "/v1/agents/{agent}/keys"),
            Route::RevokeAgentKey => (Method::DELETE, "/v1/agents/{agent}/keys/{key_id}"),
            Route::GrantBindings => (Method::POST, "/v1/agents/{agent}/agents"),
            Route::ListBindings => (Method::GET, "/v1/agents/{agent}/agents"),
            Route::ApproveBinding => (
                Method::POST,
                "/v1/agents/{agent}/agents/{binding_id}/approve",
            ),
            Route::RevokeBinding => (Method::DELETE, "/v1/agents/{agent}/agents/{binding_id}"),
            Route::OpenTask => (Method::POST, "/v1/agents/{agent}/tasks"),
            Route::GetTask => (Method::GET, "/v1/agents/{agent}/tasks/{task_id}"),
            Route::CancelTask => (Method::POST, "/v1/agents/{agent}/tasks/{task_id}/cancel"),
            Route::AddTaskMessage => (Method::POST, "/v1/agents/{agent}/tasks/{task_id}/messages"),
            Route::ClaimNextTask => (Method::GET, "/v1/agents/me/tasks/next"),
            Route::PostTaskResult => (Method::POST, "/v1/agents/me/tasks/{task_id}/result"),
            Route::ReportTaskProgress => (Method::POST, "/v1/agents/me/tasks/{task_id}/progress"),
            Route::ListAudit => (Method::GET, "/v1/audit"),
            Route::SetEndpoint => (Method::PUT, "/v1/agents/{agent}/endpoint"),
            Route::GetAgentCard => (
                Method::GET,
                "/v1/agents/{agent}/.well-known/agent-card.json",
            ),
            Route::ListAgentCards => (Method::GET, "/v1/agents/cards"),
            Route::GetSigningKeys => (Method::GET, "/v1/billing/export/pubkey"),
            Route::RotateSigningKey => (Method::POST, "/v1/signing-keys/rotate"),
            Route::RetireSigningKey => (Method::POST, "/v1/signing-keys/{kid}/retire"),
            Route::PutTool => (Method::PUT, "/v1/agents/{agent}/tools/{tool}"),
            Route::DeleteTool => (Method::DELETE, "/v1/agents/{agent}/tools/{tool}"),
            Route::ListTools => (Method::GET, "/v1/agents/{agent}/tools"),
            Route::ListCalls => (Method::GET, "/v1/calls"),
            Route::GetTenantSettings => (Method::GET, "/v1/tenant/settings"),
            Route::UpdateTenantSettings => (Method::PATCH, "/v1/tenant/settings"),
            Route::SearchTasks => (Method::GET, "/v1/tasks"),
            Route::ConsolePage => (Method::GET, "/console"),
            Route::ConsoleAsset => (Method::GET, "/console/{asset}"),
            Route::CreateConsoleSession => (Method::POST, "/console/session"),
            Route::GetConsoleSession => (Method::GET, "/console/session"),
            Route::DeleteConsoleSession => (Method::DELETE, "/console/session"),
            Route::ListDeliveryAttempts => {
                (Method::GET, "/v1/agents/{agent}/tasks/{task_id}/attempts")
            }
            Route::ListAgentKeys => (Method::GET, "/v1/agents/{agent}/keys"),
            Route::ListMembers => (Method::GET, "/v1/members"),
            Route::CreateMemberKey => (Method::POST, "/v1/members/{member_id}/keys"),
            Route::RevokeMemberKey => (Method::DELETE, "/v1/members/{member_id}/keys/{key_id}"),
            Route::A2aJsonRpc => (Method::POST, "/v1/agents/{agent}/a2a/jsonrpc"),
            Route::A2aSendMessage => (Method::POST, "/v1/agents/{agent}/a2a/message:send"),
            Route::A2aGetTask => (Method::GET, "/v1/agents/{agent}/a2a/tasks/{task}"),
            Route::A2aListTasks => (Method::GET, "/v1/agents/{agent}/a2a/tasks"),
            Route::A2aTaskAction => (Method::POST, "/v1/agents/{agent}/a2a/tasks/{task}"),
            Route::A2aStreamMessage => (Method::POST, "/v1/agents/{agent}/a2a/message:stream"),
            Route::TaskEvents => (Method::GET, "/v1/agents/{agent}/tasks/{task_id}/events"),
            Route::A2aCreatePushConfig => (
                Method::POST,
                "/v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs",
            ),
            Route::A2aListPushConfigs => (
                Method::GET,
                "/v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs",
            ),
            Route::A2aGetPushConfig => (
                Method::GET,
                "/v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs/{config}",
            ),
            Route::A2aDeletePushConfig => (
                Method::DELETE,
                "/v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs/{config}",
            ),
        }
    }

    /// Whether the route may answer with a stream of events: its function runs with Lambda
    /// response streaming behind an API Gateway integration in `STREAM` mode, and its other
    /// answers go through the same stream as one chunk.
    pub fn streams(self) -> bool {
        matches!(
            self,
            Route::TaskEvents
                | Route::A2aJsonRpc
                | Route::A2aStreamMessage
                | Route::A2aGetTask
                | Route::A2aTaskAction
        )
    }

    /// Whether the route holds a request open for up to the API's whole `wait` (30 s): it is
    /// served through a `STREAM` integration too, whose time limit is not the buffered 29 s,
    /// and answers with one buffered body.
    pub fn waits(self) -> bool {
        matches!(
            self,
            Route::GetTask | Route::OpenTask | Route::ClaimNextTask | Route::A2aSendMessage
        )
    }

    /// Whether the function runs with Lambda response streaming (its integration in `STREAM`
    /// mode): the routes that stream and the routes that wait.
    pub fn streamed(self) -> bool {
        self.streams() || self.waits()
    }

    /// The function's name: kebab-case of the route (`open-task`), used for crates and logs.
    pub fn name(self) -> String {
        let debug = format!("{self:?}");
        let mut name = String::new();
        for (index, character) in debug.chars().enumerate() {
            if character.is_ascii_uppercase() && index > 0 {
                name.push('-');
            }
            name.push(character.to_ascii_lowercase());
        }
        name
    }

    /// Matches a method and path against the table; returns the route and its path parameters.
    /// As in API Gateway's resource tree, the path's most literal template decides: a method
    /// only it lacks is a 405 (`PATCH /v1/agents/me` is not `PATCH /v1/agents/{agent}`).
    pub fn find(
        method: &Method,
        path: &str,
    ) -> Result<(Route, HashMap<String, String>), RouteMiss> {
        let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
        let mut most_literal: Option<usize> = None;
        let mut candidates: Vec<(usize, Route, HashMap<String, String>)> = Vec::new();
        for route in Route::ALL {
            let Some((literals, parameters)) = match_template(route.spec().1, &segments) else {
                continue;
            };
            most_literal = most_literal.max(Some(literals));
            candidates.push((literals, route, parameters));
        }
        let Some(most_literal) = most_literal else {
            return Err(RouteMiss::NoSuchPath);
        };
        let mut allowed: Vec<Method> = Vec::new();
        for (literals, route, parameters) in candidates {
            if literals != most_literal {
                continue;
            }
            let route_method = route.spec().0;
            if route_method == *method {
                return Ok((route, parameters));
            }
            if !allowed.contains(&route_method) {
                allowed.push(route_method);
            }
        }
        Err(RouteMiss::WrongMethod(allowed))
    }

    /// Serves one request: every outcome becomes a response; the handler's span carries the
    /// route, and the status and latency are logged (never headers or bodies).
    pub async fn handle(self, app: &Arc<App>, request: Request) -> Reply {
        let ids = RequestIds::of(&request);
        let span = tracing::info_span!(
            "request",
            route = %self.name(),
            request_id = ids.request_id.as_deref(),
            trace_id = ids.trace_id.as_deref(),
            tenant_id = tracing::field::Empty,
            principal = tracing::field::Empty,
            principal_id = tracing::field::Empty,
            task_id = tracing::field::Empty,
            call_id = tracing::field::Empty,
            caller_agent_id = tracing::field::Empty,
            callee_agent_id = tracing::field::Empty,
        );
        async move {
            let started = Instant::now();
            let outcome = match console::refuse_change_without_csrf(self, &request) {
                Err(refusal) => Err(refusal),
                // Boxed: every route's handler is one state machine, too deep to lay out inline.
                Ok(()) => {
                    let dispatched = crate::xray::with_annotations(self.dispatch(app, request));
                    Box::pin(dispatched).await
                }
            };
            let response = outcome.unwrap_or_else(|error| {
                match &error {
                    ApiError::Internal(_) => {
                        tracing::error!(cause = %cause_chain(&error), "request failed")
                    }
                    _ if error.status().is_server_error() => {
                        tracing::warn!(error = %error, "request failed")
                    }
                    _ => {}
                }
                buffered(error.into_response_for(crate::error::RequestRef {
                    request_id: ids.request_id.as_deref(),
                    trace_id: ids.trace_id.as_deref(),
                }))
            });
            tracing::info!(
                status = response.status().as_u16(),
                latency_ms = started.elapsed().as_millis() as u64,
                "request served"
            );
            ids.stamp(response)
        }
        .instrument(span)
        .await
    }

    async fn dispatch(self, app: &Arc<App>, request: Request) -> Result<Reply, ApiError> {
        match self {
            Route::TaskEvents => return Box::pin(events::stream(app, request)).await,
            Route::A2aJsonRpc => return Box::pin(a2a::jsonrpc(app, request)).await,
            Route::A2aStreamMessage => return Box::pin(a2a::stream_message(app, request)).await,
            Route::A2aGetTask => return Box::pin(a2a::get_task(app, request)).await,
            Route::A2aTaskAction => return Box::pin(a2a::task_action(app, request)).await,
            _ => {}
        }
        Box::pin(self.dispatch_buffered(app, request))
            .await
            .map(buffered)
    }

    async fn dispatch_buffered(self, app: &App, request: Request) -> super::HandlerResult {
        match self {
            Route::CreateTenant => tenants::create(app, request).await,
            Route::CreateMember => members::create(app, request).await,
            Route::CreateAgent => agents::create(app, request).await,
            Route::ListAgents => agents::list(app, request).await,
            Route::GetAgent => agents::get(app, request).await,
            Route::UpdateAgent => agents::update(app, request).await,
            Route::GetMe => agents::me(app, request).await,
            Route::CreateAgentKey => agents::create_key(app, request).await,
            Route::RevokeAgentKey => agents::revoke_key(app, request).await,
            Route::GrantBindings => bindings::grant(app, request).await,
            Route::ListBindings => bindings::list(app, request).await,
            Route::ApproveBinding => bindings::approve(app, request).await,
            Route::RevokeBinding => bindings::revoke(app, request).await,
            Route::OpenTask => open::open(app, request).await,
            Route::GetTask => tasks::get(app, request).await,
            Route::CancelTask => tasks::cancel(app, request).await,
            Route::AddTaskMessage => tasks::add_message(app, request).await,
            Route::ClaimNextTask => pull::claim_next(app, request).await,
            Route::PostTaskResult => pull::post_result(app, request).await,
            Route::ReportTaskProgress => pull::report_progress(app, request).await,
            Route::ListAudit => audit::list(app, request).await,
            Route::SetEndpoint => endpoint::put(app, request).await,
            Route::ListDeliveryAttempts => endpoint::attempts(app, request).await,
            Route::GetAgentCard => cards::get_card(app, request).await,
            Route::ListAgentCards => cards::list_cards(app, request).await,
            Route::GetSigningKeys => signing_keys::pubkey(app, request).await,
            Route::RotateSigningKey => signing_keys::rotate(app, request).await,
            Route::RetireSigningKey => signing_keys::retire(app, request).await,
            Route::PutTool => tools::put_tool(app, request).await,
            Route::DeleteTool => tools::delete_tool(app, request).await,
            Route::ListTools => tools::list_tools(app, request).await,
            Route::ListCalls => calls::list_calls(app, request).await,
            Route::GetTenantSettings => tenants::get_settings(app, request).await,
            Route::UpdateTenantSettings => tenants::update_settings(app, request).await,
            Route::SearchTasks => search::search_tasks(app, request).await,
            Route::ConsolePage => Ok(console::page(&request)),
            Route::ConsoleAsset => console::asset(&request),
            Route::CreateConsoleSession => console::sign_in(app, request).await,
            Route::GetConsoleSession => console::session(app, request).await,
            Route::DeleteConsoleSession => console::sign_out(app, request).await,
            Route::ListAgentKeys => agents::list_keys(app, request).await,
            Route::ListMembers => members::list(app, request).await,
            Route::CreateMemberKey => members::create_key(app, request).await,
            Route::RevokeMemberKey => members::revoke_key(app, request).await,
            Route::A2aSendMessage => a2a::send_message(app, request).await,
            Route::A2aListTasks => a2a::list_tasks(app, request).await,
            Route::A2aCreatePushConfig => a2a::create_push_config(app, request).await,
            Route::A2aListPushConfigs => a2a::list_push_configs(app, request).await,
            Route::A2aGetPushConfig => a2a::get_push_config(app, request).await,
            Route::A2aDeletePushConfig => a2a::delete_push_config(app, request).await,
            Route::TaskEvents
            | Route::A2aJsonRpc
            | Route::A2aStreamMessage
            | Route::A2aGetTask
            | Route::A2aTaskAction => unreachable_streaming(self),
        }
    }
}

/// A streaming route reached the buffered dispatch: a bug of the route table.
fn unreachable_streaming(route: Route) -> super::HandlerResult {
    Err(ApiError::internal(format!(
        "route {} is served by the streaming dispatch",
        route.name()
    )))
}

/// Matches path segments to a template; returns how many literal segments matched and the
/// parameters.
fn match_template(template: &str, segments: &[&str]) -> Option<(usize, HashMap<String, String>)> {
    let parts: Vec<&str> = template.split('/').collect();
    if parts.len() != segments.len() {
        return None;
    }
    let mut literals = 0;
    let mut parameters = HashMap::new();
    for (part, segment) in parts.iter().zip(segments) {
        if let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            if segment.is_empty() {
                return None;
            }
            parameters.insert(name.to_owned(), (*segment).to_owned());
        } else if part == segment {
            literals += 1;
        } else {
            return None;
        }
    }
    Some((literals, parameters))
}

/// What ties a request to its logs and trace: API Gateway's request id (the access log's, the
/// one a user reports; the Lambda invocation's when there is none) and the X-Ray trace id.
struct RequestIds {
    request_id: Option<String>,
    trace_id: Option<String>,
}

impl RequestIds {
    fn of(request: &Request) -> RequestIds {
        use lambda_http::request::RequestContext;
        use lambda_http::RequestExt;
        let gateway = match request.request_context_ref() {
            Some(RequestContext::ApiGatewayV1(context)) => context.request_id.clone(),
            _ => None,
        };
        let lambda = request.lambda_context_ref();
        RequestIds {
            request_id: gateway.or_else(|| lambda.map(|context| context.request_id.clone())),
            trace_id: lambda.and_then(|context| context.xray_trace_id.clone()),
        }
    }

    /// `response` with the request id in `X-Request-Id`.
    fn stamp(&self, mut response: Reply) -> Reply {
        let value = self
            .request_id
            .as_deref()
            .and_then(|id| lambda_http::http::HeaderValue::from_str(id).ok());
        if let Some(value) = value {
            response.headers_mut().insert("x-request-id", value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_segments_win_over_parameters() {
        let (route, _) = Route::find(&Method::GET, "/v1/agents/me").unwrap();
        assert_eq!(route, Route::GetMe);
        let (route, _) = Route::find(&Method::GET, "/v1/agents/me/tasks/next").unwrap();
        assert_eq!(route, Route::ClaimNextTask);
        let (route, params) = Route::find(&Method::GET, "/v1/agents/billing/tasks/42").unwrap();
        assert_eq!(route, Route::GetTask);
        assert_eq!(params["agent"], "billing");
        assert_eq!(params["task_id"], "42");
    }

    #[test]
    fn unknown_paths_and_wrong_methods_are_told_apart() {
        let wrong_method = Route::find(&Method::PUT, "/v1/agents").unwrap_err();
        assert_eq!(
            wrong_method,
            RouteMiss::WrongMethod(vec![Method::POST, Method::GET])
        );
        let reserved = Route::find(&Method::PATCH, "/v1/agents/me").unwrap_err();
        assert_eq!(reserved, RouteMiss::WrongMethod(vec![Method::GET]));
        let no_path = Route::find(&Method::GET, "/v2/nothing").unwrap_err();
        assert_eq!(no_path, RouteMiss::NoSuchPath);
    }

    #[test]
    fn every_route_has_a_distinct_name_and_template() {
        let mut names: Vec<String> = Route::ALL.iter().map(|r| r.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Route::ALL.len());
        assert_eq!(Route::OpenTask.name(), "open-task");
        let mut specs: Vec<String> = Route::ALL
            .iter()
            .map(|r| format!("{} {}", r.spec().0, r.spec().1))
            .collect();
        specs.sort();
        specs.dedup();
        assert_eq!(specs.len(), Route::ALL.len());
    }
}
