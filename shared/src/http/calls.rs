//! Lineage reads: every call of one call tree.

use lambda_http::Request;
use serde_json::json;

use super::{ok, query_param, HandlerResult};
use crate::app::App;
use crate::error::ApiError;

/// `GET /v1/calls?root_call_id=` (admin, viewer): every call of one lineage tree.
pub async fn list_calls(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    if !principal.reads_all_tasks() {
        return Err(ApiError::Forbidden(
            "the ledger is for admins and viewers".into(),
        ));
    }
    let root = query_param(&request, "root_call_id")
        .and_then(|root| uuid::Uuid::parse_str(&root).ok())
        .ok_or_else(|| ApiError::InvalidRequest("root_call_id is required: a call_id".into()))?;
    let items = app
        .store
        .calls_of_root(&principal.tenant_id, &root.to_string())
        .await?;
    ok(&json!({ "items": items }))
}
