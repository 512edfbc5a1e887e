//! The router: matches a request to its route of the table (`routes.rs`) and serves it.
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
pub use super::routes::{Route, Serving};
use super::{console, protected_resource};
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

impl Route {
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
        let brought = trace_brought_by(&request);
        let span = tracing::info_span!(
            "request",
            route = %self.name(),
            request_id = ids.request_id.as_deref(),
            trace_id = ids.trace_id.as_deref(),
            w3c_trace_id = tracing::field::Empty,
            tenant_id = tracing::field::Empty,
            principal = tracing::field::Empty,
            principal_id = tracing::field::Empty,
            task_id = tracing::field::Empty,
            call_id = tracing::field::Empty,
            caller_agent_id = tracing::field::Empty,
            callee_agent_id = tracing::field::Empty,
        );
        if let Some(brought) = &brought {
            span.record("w3c_trace_id", tracing::field::display(brought.trace_id));
            crate::telemetry::continue_remote(&span, brought);
        }
        async move {
            let started = Instant::now();
            let signs_in = self == Route::CreateConsoleSession;
            let metadata = protected_resource::metadata_url(&app.config, &request);
            let outcome = match console::refuse_change_without_csrf(signs_in, &request) {
                Err(refusal) => Err(refusal),
                // Boxed: every route's handler is one state machine, too deep to lay out inline.
                Ok(()) => {
                    let trace = brought.map(|context| context.child());
                    let dispatched = self.dispatch(app, request);
                    Box::pin(crate::trace::within(trace, dispatched)).await
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
                let invalid_token = matches!(error, ApiError::InvalidToken);
                let mut response = error.into_response_for(crate::error::RequestRef {
                    request_id: ids.request_id.as_deref(),
                    trace_id: ids.trace_id.as_deref(),
                });
                protected_resource::add_challenge(
                    &mut response,
                    metadata.as_deref(),
                    invalid_token,
                );
                buffered(response)
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
/// The W3C trace context `request` brings: its caller's span.
fn trace_brought_by(request: &Request) -> Option<crate::domain::trace::TraceContext> {
    let values = |name: &str| {
        request
            .headers()
            .get_all(name)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .collect::<Vec<_>>()
    };
    let (parents, states) = (
        values(crate::trace::TRACEPARENT),
        values(crate::trace::TRACESTATE),
    );
    crate::trace::brought(parents.into_iter(), states.into_iter())
}

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
