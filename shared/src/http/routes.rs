//! The route table: every route of the API on one line, declared once.
//!
//! A line gives the route's name (its function's name is the kebab-case of it: `open-task`), its
//! method and path template, how its function answers (buffered, holding a wait, or streaming
//! events), its handler, and what its function may touch: the IAM actions of its role, which
//! `tests/tests/api/deployment.rs` holds the SAM template's policies to and the IAM tour
//! (`tests/tests/api/permissions.rs`) checks every call against. The router dispatches from this
//! table; the SAM template's functions, the CDK app's function list and the OpenAPI document's
//! paths are tested against it. Adding a route is its line here, its handler and its OpenAPI
//! operation (docs/design.md, "Adding a route").

use std::sync::Arc;

use lambda_http::http::Method;
use lambda_http::Request;

use super::reply::{buffered, Reply};
use super::{
    a2a, agents, audit, binding_terms, bindings, calls, cards, console, deliveries, endpoint,
    events, issuers, members, open, policies, protected_resource, pull, search, signing_keys,
    tasks, tenants, tools,
};
use crate::app::App;
use crate::error::ApiError;

/// How a route's function answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serving {
    /// One buffered response within API Gateway's 29 s.
    Buffered,
    /// One buffered body after holding the request for up to the API's whole `wait` (30 s),
    /// through a `STREAM` integration, whose time limit is not the buffered 29 s.
    Waits,
    /// A stream of events (Lambda response streaming behind a `STREAM` integration); its other
    /// answers go through the same stream as one chunk.
    Streams,
}

/// Calls a handler as its route serves: a buffered handler's response is buffered; a streaming
/// one's is the reply. Boxed: every route's handler is one state machine, too deep to lay out
/// inline.
macro_rules! serve {
    (Streams, $handler:path, $app:ident, $request:ident) => {
        Box::pin($handler($app, $request)).await
    };
    ($serving:ident, $handler:path, $app:ident, $request:ident) => {
        Box::pin($handler($app, $request)).await.map(buffered)
    };
}

/// Declares [`Route`] and everything the table tells of each route.
macro_rules! route_table {
    ($(
        $(#[doc = $doc:literal])*
        $route:ident: $method:ident $path:literal, $serving:ident $handler:path, $touches:literal;
    )*) => {
        /// A route of the API.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Route {
            $($(#[doc = $doc])* $route,)*
        }

        const ROUTES: usize = [$(stringify!($route)),*].len();

        impl Route {
            /// Every route, in the table's order.
            pub const ALL: [Route; ROUTES] = [$(Route::$route),*];

            /// Method and path template, as in the API docs and the deployment template.
            pub fn spec(self) -> (Method, &'static str) {
                match self {
                    $(Route::$route => (Method::$method, $path),)*
                }
            }

            /// How the route's function answers.
            pub fn serving(self) -> Serving {
                match self {
                    $(Route::$route => Serving::$serving,)*
                }
            }

            /// The IAM actions the route's function may take (`dynamodb:GetItem`, `kms:Decrypt`, …).
            pub fn touches(self) -> Vec<String> {
                let declared = match self {
                    $(Route::$route => $touches,)*
                };
                iam_actions(declared)
            }

            /// Runs the route's handler.
            pub(super) async fn dispatch(
                self,
                app: &Arc<App>,
                request: Request,
            ) -> Result<Reply, ApiError> {
                match self {
                    $(Route::$route => serve!($serving, $handler, app, request),)*
                }
            }
        }
    };
}

route_table! {
    CreateTenant: POST "/v1/tenants", Buffered tenants::create, "dynamodb:GetItem,PutItem,UpdateItem";
    CreateMember: POST "/v1/members", Buffered members::create, "dynamodb:GetItem,PutItem,UpdateItem";
    CreateAgent: POST "/v1/agents", Buffered agents::create, "dynamodb:GetItem,PutItem,UpdateItem";
    ListAgents: GET "/v1/agents", Buffered agents::list, "dynamodb:GetItem,Query,UpdateItem";
    GetAgent: GET "/v1/agents/{agent}", Buffered agents::get, "dynamodb:GetItem,UpdateItem";
    UpdateAgent: PATCH "/v1/agents/{agent}", Buffered agents::update, "dynamodb:DeleteItem,GetItem,PutItem,Query,UpdateItem";
    GetMe: GET "/v1/agents/me", Buffered agents::me, "dynamodb:GetItem,UpdateItem";
    CreateAgentKey: POST "/v1/agents/{agent}/keys", Buffered agents::create_key, "dynamodb:GetItem,PutItem,Query,UpdateItem";
    RevokeAgentKey: DELETE "/v1/agents/{agent}/keys/{key_id}", Buffered agents::revoke_key, "dynamodb:DeleteItem,GetItem,PutItem,Query,UpdateItem";
    GrantBindings: POST "/v1/agents/{agent}/agents", Buffered bindings::grant, "dynamodb:GetItem,PutItem,UpdateItem";
    ListBindings: GET "/v1/agents/{agent}/agents", Buffered bindings::list, "dynamodb:GetItem,Query,UpdateItem";
    ApproveBinding: POST "/v1/agents/{agent}/agents/{binding_id}/approve", Buffered bindings::approve, "dynamodb:GetItem,PutItem,UpdateItem";
    RevokeBinding: DELETE "/v1/agents/{agent}/agents/{binding_id}", Buffered bindings::revoke, "dynamodb:GetItem,PutItem,UpdateItem";
    UpdateBinding: PATCH "/v1/agents/{agent}/agents/{binding_id}", Buffered binding_terms::update, "dynamodb:GetItem,PutItem,UpdateItem";
    OpenTask: POST "/v1/agents/{agent}/tasks", Waits open::open, "dynamodb:BatchGetItem,BatchWriteItem,ConditionCheckItem,DeleteItem,GetItem,PutItem,Query,UpdateItem kms:Decrypt,GenerateDataKey s3:GetObject,PutObject sqs:SendMessage";
    GetTask: GET "/v1/agents/{agent}/tasks/{task_id}", Waits tasks::get, "dynamodb:BatchGetItem,BatchWriteItem,DeleteItem,GetItem,PutItem,Query,UpdateItem kms:Decrypt s3:GetObject sqs:SendMessage";
    CancelTask: POST "/v1/agents/{agent}/tasks/{task_id}/cancel", Buffered tasks::cancel, "dynamodb:BatchGetItem,BatchWriteItem,GetItem,PutItem,UpdateItem kms:Decrypt s3:GetObject sqs:SendMessage";
    AddTaskMessage: POST "/v1/agents/{agent}/tasks/{task_id}/messages", Buffered tasks::add_message, "dynamodb:BatchGetItem,BatchWriteItem,ConditionCheckItem,GetItem,PutItem,UpdateItem kms:Decrypt,GenerateDataKey s3:GetObject,PutObject sqs:SendMessage";
    ClaimNextTask: GET "/v1/agents/me/tasks/next", Waits pull::claim_next, "dynamodb:BatchGetItem,BatchWriteItem,DeleteItem,GetItem,PutItem,Query,UpdateItem kms:Decrypt s3:GetObject sqs:SendMessage";
    PostTaskResult: POST "/v1/agents/me/tasks/{task_id}/result", Buffered pull::post_result, "dynamodb:BatchGetItem,BatchWriteItem,GetItem,PutItem,UpdateItem kms:Decrypt,GenerateDataKey s3:GetObject,PutObject sqs:SendMessage";
    ReportTaskProgress: POST "/v1/agents/me/tasks/{task_id}/progress", Buffered pull::report_progress, "dynamodb:BatchGetItem,BatchWriteItem,GetItem,PutItem,UpdateItem kms:Decrypt,GenerateDataKey s3:GetObject,PutObject sqs:SendMessage";
    ListAudit: GET "/v1/audit", Buffered audit::list, "dynamodb:GetItem,Query,UpdateItem";
    SetEndpoint: PUT "/v1/agents/{agent}/endpoint", Buffered endpoint::put, "dynamodb:DeleteItem,GetItem,PutItem,UpdateItem kms:Encrypt";
    ListDeliveryAttempts: GET "/v1/agents/{agent}/tasks/{task_id}/attempts", Buffered endpoint::attempts, "dynamodb:GetItem,Query,UpdateItem";
    /// `GET /v1/agents/{agent}/endpoint/health`: the push endpoint's health.
    GetEndpointHealth: GET "/v1/agents/{agent}/endpoint/health", Buffered deliveries::health, "dynamodb:GetItem,UpdateItem";
    /// `POST /v1/agents/{agent}/endpoint/enable`: an admin enables a disabled endpoint.
    EnableEndpoint: POST "/v1/agents/{agent}/endpoint/enable", Buffered deliveries::enable, "dynamodb:GetItem,PutItem,UpdateItem";
    /// `POST /v1/agents/{agent}/endpoint/redrive`: the waiting deliveries since a moment, now.
    RedriveDeliveries: POST "/v1/agents/{agent}/endpoint/redrive", Buffered deliveries::redrive, "dynamodb:BatchGetItem,GetItem,PutItem,Query,UpdateItem sqs:SendMessage";
    /// `POST /v1/agents/{agent}/tasks/{task_id}/replay`: a task's waiting delivery, now.
    ReplayDelivery: POST "/v1/agents/{agent}/tasks/{task_id}/replay", Buffered deliveries::replay, "dynamodb:GetItem,PutItem,UpdateItem sqs:SendMessage";
    /// `POST /v1/agents/{agent}/tasks/{task_id}/notifications/{config_id}/replay`: a push
    /// notification config's latest event, again.
    ReplayNotification: POST "/v1/agents/{agent}/tasks/{task_id}/notifications/{config_id}/replay", Buffered deliveries::replay_notification, "dynamodb:GetItem,PutItem,UpdateItem sqs:SendMessage";
    GetAgentCard: GET "/v1/agents/{agent}/.well-known/agent-card.json", Buffered cards::get_card, "dynamodb:GetItem,PutItem,Query,UpdateItem kms:Decrypt,Encrypt";
    ListAgentCards: GET "/v1/agents/cards", Buffered cards::list_cards, "dynamodb:GetItem,PutItem,Query,UpdateItem kms:Decrypt,Encrypt";
    GetSigningKeys: GET "/v1/billing/export/pubkey", Buffered signing_keys::pubkey, "dynamodb:GetItem,PutItem,Query,UpdateItem kms:Encrypt";
    RotateSigningKey: POST "/v1/signing-keys/rotate", Buffered signing_keys::rotate, "dynamodb:GetItem,PutItem,Query,UpdateItem kms:Encrypt";
    RetireSigningKey: POST "/v1/signing-keys/{kid}/retire", Buffered signing_keys::retire, "dynamodb:ConditionCheckItem,GetItem,Query,UpdateItem";
    PutTool: PUT "/v1/agents/{agent}/tools/{tool}", Buffered tools::put_tool, "dynamodb:GetItem,PutItem,Query,UpdateItem";
    DeleteTool: DELETE "/v1/agents/{agent}/tools/{tool}", Buffered tools::delete_tool, "dynamodb:DeleteItem,GetItem,PutItem,Query,UpdateItem";
    ListTools: GET "/v1/agents/{agent}/tools", Buffered tools::list_tools, "dynamodb:GetItem,Query,UpdateItem";
    ListCalls: GET "/v1/calls", Buffered calls::list_calls, "dynamodb:GetItem,Query,UpdateItem";
    GetTenantSettings: GET "/v1/tenant/settings", Buffered tenants::get_settings, "dynamodb:GetItem,UpdateItem";
    UpdateTenantSettings: PATCH "/v1/tenant/settings", Buffered tenants::update_settings, "dynamodb:GetItem,PutItem,UpdateItem";
    GetTenantPolicies: GET "/v1/tenant/policies", Buffered policies::list, "dynamodb:GetItem,UpdateItem";
    UpdateTenantPolicies: PATCH "/v1/tenant/policies", Buffered policies::update, "dynamodb:GetItem,PutItem,UpdateItem";
    CheckCall: POST "/v1/tenant/policies/check", Buffered policies::check, "dynamodb:GetItem,UpdateItem";
    ListAgentKeys: GET "/v1/agents/{agent}/keys", Buffered agents::list_keys, "dynamodb:GetItem,Query,UpdateItem";
    ListMembers: GET "/v1/members", Buffered members::list, "dynamodb:GetItem,Query,UpdateItem";
    CreateMemberKey: POST "/v1/members/{member_id}/keys", Buffered members::create_key, "dynamodb:GetItem,PutItem,Query,UpdateItem";
    RevokeMemberKey: DELETE "/v1/members/{member_id}/keys/{key_id}", Buffered members::revoke_key, "dynamodb:DeleteItem,GetItem,PutItem,Query,UpdateItem";
    /// A2A 1.0, JSON-RPC binding.
    A2aJsonRpc: POST "/v1/agents/{agent}/a2a/jsonrpc", Streams a2a::jsonrpc, "dynamodb:BatchGetItem,BatchWriteItem,ConditionCheckItem,DeleteItem,GetItem,PutItem,Query,UpdateItem kms:Decrypt,Encrypt,GenerateDataKey s3:GetObject,PutObject sqs:SendMessage";
    /// A2A 1.0, HTTP+JSON binding: `message:send`.
    A2aSendMessage: POST "/v1/agents/{agent}/a2a/message:send", Waits a2a::send_message, "dynamodb:BatchGetItem,BatchWriteItem,ConditionCheckItem,DeleteItem,GetItem,PutItem,Query,UpdateItem kms:Decrypt,Encrypt,GenerateDataKey s3:GetObject,PutObject sqs:SendMessage";
    /// A2A 1.0, HTTP+JSON binding: `GetTask`.
    A2aGetTask: GET "/v1/agents/{agent}/a2a/tasks/{task}", Streams a2a::get_task, "dynamodb:BatchGetItem,BatchWriteItem,DeleteItem,GetItem,PutItem,Query,UpdateItem kms:Decrypt s3:GetObject sqs:SendMessage";
    /// A2A 1.0, HTTP+JSON binding: `ListTasks`.
    A2aListTasks: GET "/v1/agents/{agent}/a2a/tasks", Buffered a2a::list_tasks, "dynamodb:BatchGetItem,GetItem,Query,UpdateItem kms:Decrypt s3:GetObject";
    /// A2A 1.0, HTTP+JSON binding: `tasks/{id}:cancel` and `tasks/{id}:subscribe`.
    A2aTaskAction: POST "/v1/agents/{agent}/a2a/tasks/{task}", Streams a2a::task_action, "dynamodb:BatchGetItem,BatchWriteItem,GetItem,PutItem,Query,UpdateItem kms:Decrypt s3:GetObject sqs:SendMessage";
    /// A2A 1.0, HTTP+JSON binding: `message:stream`.
    A2aStreamMessage: POST "/v1/agents/{agent}/a2a/message:stream", Streams a2a::stream_message, "dynamodb:BatchGetItem,BatchWriteItem,ConditionCheckItem,DeleteItem,GetItem,PutItem,Query,UpdateItem kms:Decrypt,Encrypt,GenerateDataKey s3:GetObject,PutObject sqs:SendMessage";
    /// A task's updates as server-sent events.
    TaskEvents: GET "/v1/agents/{agent}/tasks/{task_id}/events", Streams events::stream, "dynamodb:BatchGetItem,BatchWriteItem,DeleteItem,GetItem,PutItem,Query,UpdateItem kms:Decrypt s3:GetObject sqs:SendMessage";
    /// A2A 1.0, HTTP+JSON binding: `CreateTaskPushNotificationConfig`.
    A2aCreatePushConfig: POST "/v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs", Buffered a2a::create_push_config, "dynamodb:GetItem,PutItem,UpdateItem kms:Encrypt";
    /// A2A 1.0, HTTP+JSON binding: `ListTaskPushNotificationConfigs`.
    A2aListPushConfigs: GET "/v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs", Buffered a2a::list_push_configs, "dynamodb:GetItem,Query,UpdateItem kms:Decrypt";
    /// A2A 1.0, HTTP+JSON binding: `GetTaskPushNotificationConfig`.
    A2aGetPushConfig: GET "/v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs/{config}", Buffered a2a::get_push_config, "dynamodb:GetItem,UpdateItem kms:Decrypt";
    /// A2A 1.0, HTTP+JSON binding: `DeleteTaskPushNotificationConfig`.
    A2aDeletePushConfig: DELETE "/v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs/{config}", Buffered a2a::delete_push_config, "dynamodb:DeleteItem,GetItem,PutItem,UpdateItem";
    /// `GET /v1/tasks`: task search.
    SearchTasks: GET "/v1/tasks", Buffered search::search_tasks, "dynamodb:BatchGetItem,GetItem,Query,UpdateItem kms:Decrypt s3:GetObject";
    /// `GET /v1/issuers`: the OpenID Connect issuers the tenant trusts.
    ListIssuers: GET "/v1/issuers", Buffered issuers::list, "dynamodb:GetItem,UpdateItem";
    /// `POST /v1/issuers`: trust an issuer for an audience.
    TrustIssuer: POST "/v1/issuers", Buffered issuers::create, "dynamodb:GetItem,PutItem,UpdateItem";
    /// `PATCH /v1/issuers/{issuer_id}`: the subjects an issuer lists.
    UpdateIssuer: PATCH "/v1/issuers/{issuer_id}", Buffered issuers::update, "dynamodb:GetItem,PutItem,UpdateItem";
    /// `DELETE /v1/issuers/{issuer_id}`: trust an issuer no more.
    DistrustIssuer: DELETE "/v1/issuers/{issuer_id}", Buffered issuers::delete, "dynamodb:DeleteItem,GetItem,PutItem,UpdateItem";
    /// The gateway's OAuth 2.0 Protected Resource Metadata (RFC 9728).
    GetGatewayResourceMetadata: GET "/.well-known/oauth-protected-resource", Buffered protected_resource::gateway, "";
    /// The JWKS of `GetSigningKeys`, public: read without a key, where push receivers look for it.
    GetPublicSigningKeys: GET "/.well-known/jwks.json", Buffered signing_keys::public_jwks, "dynamodb:GetItem,PutItem,Query,UpdateItem kms:Encrypt";
    /// An agent's OAuth 2.0 Protected Resource Metadata (RFC 9728).
    GetAgentResourceMetadata: GET "/v1/agents/{agent}/.well-known/oauth-protected-resource", Buffered protected_resource::agent, "dynamodb:GetItem";
    /// `GET /console`: the console's page.
    ConsolePage: GET "/console", Buffered console::page_route, "";
    /// `GET /console/{asset}`: the console's scripts and styles.
    ConsoleAsset: GET "/console/{asset}", Buffered console::asset_route, "";
    /// `POST /console/session`: a member key exchanged for a console session.
    CreateConsoleSession: POST "/console/session", Buffered console::sign_in, "dynamodb:GetItem,PutItem,UpdateItem";
    /// `GET /console/session`: the session the cookie holds.
    GetConsoleSession: GET "/console/session", Buffered console::session, "dynamodb:GetItem,UpdateItem";
    /// `DELETE /console/session`: sign-out.
    DeleteConsoleSession: DELETE "/console/session", Buffered console::sign_out, "dynamodb:DeleteItem";
}

/// `dynamodb:GetItem,PutItem kms:Decrypt` as `[dynamodb:GetItem, dynamodb:PutItem, kms:Decrypt]`.
fn iam_actions(declared: &str) -> Vec<String> {
    declared
        .split_whitespace()
        .filter_map(|service| service.split_once(':'))
        .flat_map(|(service, actions)| {
            actions
                .split(',')
                .map(move |action| format!("{service}:{action}"))
        })
        .collect()
}

impl Route {
    /// Whether the route may answer with a stream of events.
    pub fn streams(self) -> bool {
        self.serving() == Serving::Streams
    }

    /// Whether the route holds a request open for up to the API's whole `wait`.
    pub fn waits(self) -> bool {
        self.serving() == Serving::Waits
    }

    /// Whether the function runs with Lambda response streaming (its integration in `STREAM`
    /// mode): the routes that stream and the routes that wait.
    pub fn streamed(self) -> bool {
        self.serving() != Serving::Buffered
    }

    /// The function's name: kebab-case of the route (`open-task`), used for functions and logs.
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
}
