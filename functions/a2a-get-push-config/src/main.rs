//! Lambda function for `GET /v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs/{config}`: A2A 1.0 HTTP+JSON GetTaskPushNotificationConfig.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::A2aGetPushConfig).await
}
