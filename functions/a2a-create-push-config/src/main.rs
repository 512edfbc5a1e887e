//! Lambda function for `POST /v1/agents/{agent}/a2a/tasks/{task}/pushNotificationConfigs`: A2A 1.0 HTTP+JSON CreateTaskPushNotificationConfig.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::A2aCreatePushConfig).await
}
