//! The route table and the SAM template agree: every route has its own function, each running the
//! one gateway binary with its `FORGEBENCH_ROUTE`, deployed at that route's method and path.

use std::collections::BTreeSet;
use std::path::Path;

use forgebench::store::schema::TEMPLATE;
use forgebench::Route;

fn template() -> serde_norway::Value {
    serde_norway::from_str(TEMPLATE).expect("template parses")
}

/// The route a function of the template serves: its `FORGEBENCH_ROUTE`.
pub fn route_of(function: &serde_norway::Value) -> Option<String> {
    function["Properties"]["Environment"]["Variables"]["FORGEBENCH_ROUTE"]
        .as_str()
        .map(str::to_owned)
}

#[test]
fn every_function_runs_the_one_gateway_binary_for_its_own_route_of_the_table() {
    // functions/ holds one crate, whose one binary is the gateway.
    let functions = Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions");
    let crates: Vec<String> = std::fs::read_dir(&functions)
        .expect("functions/")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(crates, ["gateway"]);
    let manifest =
        std::fs::read_to_string(functions.join("gateway/Cargo.toml")).expect("Cargo.toml");
    assert!(manifest.contains("name = \"gateway\""), "{manifest}");

    let document = template();
    let mut served = Vec::new();
    for (id, resource) in document["Resources"].as_mapping().expect("Resources") {
        if resource["Type"] != "AWS::Serverless::Function" {
            continue;
        }
        let id = id.as_str().unwrap();
        assert_eq!(
            resource["Metadata"]["BuildMethod"], "rust-cargolambda",
            "{id}"
        );
        assert_eq!(
            resource["Metadata"]["BuildProperties"]["Binary"], "gateway",
            "{id}"
        );
        assert_eq!(resource["Properties"]["CodeUri"], "..", "{id}");
        let route = route_of(resource).unwrap_or_else(|| panic!("{id} names no FORGEBENCH_ROUTE"));
        let function = forgebench::Function::from_configured(Some(&route))
            .unwrap_or_else(|error| panic!("{id}: {error}"));
        served.push(function.name());
    }
    let mut expected: Vec<String> = forgebench::Function::all().map(|f| f.name()).collect();
    served.sort();
    expected.sort();
    // One function per route, the push worker and the sweeper; none twice, none missing.
    assert_eq!(served, expected);
}

fn openapi() -> serde_norway::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../infra/openapi.yaml");
    serde_norway::from_str(&std::fs::read_to_string(path).expect("infra/openapi.yaml"))
        .expect("openapi parses")
}

/// `(method, path) -> function resource` from the OpenAPI document's integrations.
fn openapi_routes() -> BTreeSet<(String, String, String)> {
    let document = openapi();
    let mut routes = BTreeSet::new();
    for (path, operations) in document["paths"].as_mapping().expect("paths") {
        for (method, operation) in operations.as_mapping().expect("operations") {
            let uri = operation["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
                .as_str()
                .expect("every operation is integrated with a function");
            let function = uri
                .split("${")
                .find_map(|part| {
                    part.strip_suffix(".Arn}/invocations")
                        .or_else(|| part.strip_suffix(".Arn}/response-streaming-invocations"))
                })
                .expect("the integration names a function")
                .to_owned();
            assert_eq!(
                operation["x-amazon-apigateway-integration"]["type"],
                "aws_proxy"
            );
            routes.insert((
                method.as_str().unwrap().to_uppercase(),
                path.as_str().unwrap().to_owned(),
                function,
            ));
        }
    }
    routes
}

#[test]
fn openapi_the_template_the_route_table_and_the_crates_agree() {
    let document = template();
    let resources = document["Resources"].as_mapping().expect("Resources");
    let binary_of = |resource: &str| {
        resources
            .get(serde_norway::Value::from(resource))
            .and_then(route_of)
    };
    // OpenAPI operation -> template function -> binary, against the route table.
    let from_openapi: BTreeSet<(String, String, String)> = openapi_routes()
        .into_iter()
        .map(|(method, path, function)| {
            let binary =
                binary_of(&function).unwrap_or_else(|| panic!("{function} is not in the template"));
            (binary, method, path)
        })
        .collect();
    let from_routes: BTreeSet<(String, String, String)> = Route::ALL
        .iter()
        .map(|route| {
            let (method, path) = route.spec();
            (route.name(), method.to_string(), path.to_owned())
        })
        .collect();
    assert_eq!(from_openapi, from_routes);

    // The template includes that very document, and every route function may be invoked by it.
    let definition = &document["Resources"]["Api"]["Properties"]["DefinitionBody"]["Fn::Transform"];
    assert_eq!(definition["Name"], "AWS::Include");
    assert_eq!(definition["Parameters"]["Location"], "openapi.yaml");
    let mut scheduled = BTreeSet::new();
    let mut queue_driven = BTreeSet::new();
    let mut permitted = BTreeSet::new();
    for (_, resource) in resources {
        match resource["Type"].as_str() {
            Some("AWS::Lambda::Permission") => {
                assert_eq!(
                    resource["Properties"]["Principal"],
                    "apigateway.amazonaws.com"
                );
                let function = match &resource["Properties"]["FunctionName"] {
                    serde_norway::Value::Tagged(tagged) => {
                        tagged.value.as_str().unwrap().to_owned()
                    }
                    other => panic!("FunctionName {other:?}"),
                };
                permitted.insert(binary_of(&function).expect("permission for a function"));
            }
            Some("AWS::Serverless::Function") => {
                let binary = route_of(resource).expect("every function names its route");
                let events = resource["Properties"]["Events"]
                    .as_mapping()
                    .cloned()
                    .unwrap_or_default();
                for (_, event) in events {
                    match event["Type"].as_str() {
                        Some("Schedule") => {
                            scheduled.insert(binary.clone());
                        }
                        Some("SQS") => {
                            assert_eq!(
                                event["Properties"]["FunctionResponseTypes"][0],
                                "ReportBatchItemFailures"
                            );
                            queue_driven.insert(binary.clone());
                        }
                        other => panic!("unexpected event type {other:?}"),
                    }
                }
            }
            _ => {}
        }
    }
    let route_binaries: BTreeSet<String> = Route::ALL.iter().map(|route| route.name()).collect();
    assert_eq!(permitted, route_binaries);
    assert_eq!(scheduled, BTreeSet::from(["sweep-deadlines".to_owned()]));
    assert_eq!(queue_driven, BTreeSet::from(["push-worker".to_owned()]));
}

/// The routes that stream or wait are integrated in `STREAM` mode through Lambda's streaming
/// invoke, with a timeout and a function timeout that cover the longest stream (or the longest
/// wait and the work around it); every other route is buffered within the 29 s limit.
#[test]
fn streaming_and_waiting_routes_are_streamed_end_to_end_and_the_rest_are_buffered() {
    let document = openapi();
    let template = template();
    let longest_stream = forgebench::config::ranges::STREAM_MAX_SECONDS
        .end()
        .to_owned();
    let longest_wait = template["Parameters"]["MaxWaitSeconds"]["MaxValue"]
        .as_u64()
        .unwrap();
    for route in Route::ALL {
        let (method, path) = route.spec();
        let operation = &document["paths"][path][method.as_str().to_lowercase().as_str()];
        let integration = &operation["x-amazon-apigateway-integration"];
        let uri = integration["uri"]["Fn::Sub"].as_str().unwrap();
        let function = uri.split("${").nth(3).unwrap().split('.').next().unwrap();
        let function_timeout = template["Resources"][function]["Properties"]["Timeout"]
            .as_u64()
            .unwrap_or(29);
        let integration_timeout = integration["timeoutInMillis"].as_u64();
        assert_eq!(route.streamed(), route.streams() || route.waits());
        if route.streamed() {
            assert_eq!(integration["responseTransferMode"], "STREAM", "{path}");
            assert!(uri.contains("/2021-11-15/functions/"), "{uri}");
            assert!(uri.ends_with("/response-streaming-invocations"), "{uri}");
        } else {
            assert!(integration.get("responseTransferMode").is_none(), "{path}");
            assert!(
                uri.ends_with("/invocations") && uri.contains("/2015-03-31/"),
                "{uri}"
            );
            assert!(function_timeout <= 29, "{function}: {function_timeout}");
            continue;
        }
        let needed = if route.streams() {
            assert_eq!(integration_timeout, Some(900_000), "{path}");
            longest_stream + 10
        } else {
            longest_wait + 5
        };
        assert!(function_timeout >= needed, "{function}: {function_timeout}");
        assert!(
            integration_timeout.unwrap_or(29_000) >= function_timeout * 1000,
            "{path}: the integration gives up before the function"
        );
    }
}

/// The API's whole `wait` (30 s) is deployable: only the waiting routes hold a request that long,
/// and each of them runs behind a streaming integration (the test above); every other function
/// finishes within the buffered integration's 29 s.
#[test]
fn the_wait_bound_of_the_deployment_is_the_apis_whole_wait() {
    let document = template();
    let wait = &document["Parameters"]["MaxWaitSeconds"];
    assert_eq!(wait["MaxValue"].as_u64(), Some(30));
    assert_eq!(wait["Default"].as_u64(), Some(30));
    let timeout = document["Globals"]["Function"]["Timeout"].as_u64().unwrap();
    assert!(timeout <= 29, "buffered functions: {timeout}");
}

#[test]
fn the_push_queue_outlasts_the_worker_and_has_a_dead_letter_queue() {
    let document = template();
    let resources = &document["Resources"];
    let worker_timeout = resources["PushWorkerFunction"]["Properties"]["Timeout"]
        .as_u64()
        .unwrap();
    let queue = &resources["PushQueue"]["Properties"];
    let visibility = queue["VisibilityTimeout"].as_u64().unwrap();
    assert!(
        visibility >= 6 * worker_timeout,
        "visibility {visibility} < 6 x {worker_timeout}"
    );
    let max_receive = queue["RedrivePolicy"]["maxReceiveCount"].as_u64().unwrap();
    let attempts = forgebench::push::verdict::RetrySchedule::default().max_attempts();
    assert!(
        max_receive > attempts,
        "the DLQ must not take messages still being retried"
    );
    assert_eq!(resources["PushDeadLetterQueue"]["Type"], "AWS::SQS::Queue");
    assert_eq!(
        resources["PushDeadLetterAlarm"]["Type"],
        "AWS::CloudWatch::Alarm"
    );
}

#[tokio::test]
async fn the_local_gateway_serves_the_api_document() {
    let app = forgebench_tests::spawn_app().await;
    let reply = app.send("GET", "/openapi.json", None, None).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["openapi"], "3.0.3");
    assert!(reply.body["paths"]["/v1/agents/{agent}/tasks"]["post"].is_object());
    assert!(!reply.text.contains("x-amazon-apigateway"));
}

#[test]
fn every_function_has_a_log_group_with_a_retention() {
    let document = template();
    let resources = document["Resources"].as_mapping().unwrap();
    let functions: BTreeSet<String> = resources
        .iter()
        .filter(|(_, resource)| resource["Type"] == "AWS::Serverless::Function")
        .map(|(name, _)| name.as_str().unwrap().to_owned())
        .collect();
    let mut logged = BTreeSet::new();
    for (_, resource) in resources {
        if resource["Type"] != "AWS::Logs::LogGroup" {
            continue;
        }
        assert!(
            matches!(
                resource["Properties"]["RetentionInDays"],
                serde_norway::Value::Tagged(_)
            ),
            "retention comes from the parameter"
        );
        if let serde_norway::Value::Tagged(name) = &resource["Properties"]["LogGroupName"] {
            let text = name.value.as_str().unwrap();
            logged.insert(
                text.trim_start_matches("/aws/lambda/${")
                    .trim_end_matches('}')
                    .to_owned(),
            );
        }
    }
    assert_eq!(logged, functions);
}

/// The response types API Gateway lets a REST API set (the `x-amazon-apigateway-gateway-responses`
/// keys it accepts).
const GATEWAY_RESPONSE_TYPES: [&str; 21] = [
    "ACCESS_DENIED",
    "API_CONFIGURATION_ERROR",
    "AUTHORIZER_CONFIGURATION_ERROR",
    "AUTHORIZER_FAILURE",
    "BAD_REQUEST_BODY",
    "BAD_REQUEST_PARAMETERS",
    "DEFAULT_4XX",
    "DEFAULT_5XX",
    "EXPIRED_TOKEN",
    "INTEGRATION_FAILURE",
    "INTEGRATION_TIMEOUT",
    "INVALID_API_KEY",
    "INVALID_SIGNATURE",
    "MISSING_AUTHENTICATION_TOKEN",
    "QUOTA_EXCEEDED",
    "REQUEST_TOO_LARGE",
    "RESOURCE_NOT_FOUND",
    "THROTTLED",
    "UNAUTHORIZED",
    "UNSUPPORTED_MEDIA_TYPE",
    "WAF_FILTERED",
];

/// Each gateway response of the document: its status (none for the defaults) and its body as
/// API Gateway renders it, with sample values for the variables it fills in.
fn gateway_responses() -> Vec<(String, Option<u16>, serde_json::Value)> {
    let document = openapi();
    let responses = document["x-amazon-apigateway-gateway-responses"]
        .as_mapping()
        .expect("the document sets API Gateway's own responses");
    responses
        .iter()
        .map(|(kind, response)| {
            let kind = kind.as_str().expect("a response type").to_owned();
            let template = response["responseTemplates"]["application/json"]
                .as_str()
                .unwrap_or_else(|| panic!("{kind}: no application/json body"));
            let rendered = template
                .replace("$context.error.messageString", r#""Invalid request body""#)
                .replace("$context.requestId", "4f3c0e1a-9b2d-4c55-8e0f-1d2a3b4c5d6e")
                .replace(
                    "$context.xrayTraceId",
                    "1-67890abc-0123456789abcdef01234567",
                );
            let body = serde_json::from_str(&rendered).unwrap_or_else(|error| {
                panic!("{kind}: the body is not JSON ({error}): {rendered}")
            });
            let status = response["statusCode"].as_u64().map(|code| code as u16);
            (kind, status, body)
        })
        .collect()
}

#[tokio::test]
async fn api_gateways_own_errors_have_the_local_gateways_shapes() {
    let responses = gateway_responses();
    for (kind, status, body) in &responses {
        assert!(
            GATEWAY_RESPONSE_TYPES.contains(&kind.as_str()),
            "{kind}: no such response type"
        );
        let detail = &body["detail"];
        assert!(
            detail["code"].is_string() && detail["message"].is_string(),
            "{kind}: {body}"
        );
        assert!(
            detail["request_id"].is_string(),
            "{kind}: no request id: {body}"
        );
        assert!(
            detail["trace_id"].is_string(),
            "{kind}: no trace id: {body}"
        );
        if let Some(status) = status {
            assert!((400..600).contains(status), "{kind}: {status}");
        }
    }
    let find = |kind: &str| {
        responses
            .iter()
            .find(|(name, _, _)| name == kind)
            .map(|(_, status, body)| (status.expect("a status"), body["detail"].clone()))
            .unwrap_or_else(|| panic!("no {kind} response"))
    };
    // What the local gateway answers itself, the deployed API answers alike.
    let app = forgebench_tests::spawn_app().await;
    let unknown = app.send("GET", "/v1/no/such/route", None, None).await;
    let (status, detail) = find("MISSING_AUTHENTICATION_TOKEN");
    assert_eq!(status, unknown.status);
    assert_eq!(detail["code"], unknown.body["detail"]["code"]);
    assert_eq!(detail["message"], unknown.body["detail"]["message"]);
    let large = app
        .http
        .post(format!("{}/v1/tenants", app.base))
        .body(vec![b' '; forgebench_local::MAX_BODY_BYTES + 1])
        .send()
        .await
        .expect("the local gateway answers");
    let large_status = large.status().as_u16();
    let large_body: serde_json::Value = large.json().await.expect("a JSON body");
    let (status, detail) = find("REQUEST_TOO_LARGE");
    assert_eq!(status, large_status);
    assert_eq!(detail["code"], large_body["detail"]["code"]);
    // The gateway's own refusals of the same kind, as its handlers render them.
    let many = forgebench::error::ApiError::TooManyRequests(String::new());
    for kind in ["THROTTLED", "QUOTA_EXCEEDED"] {
        let (status, detail) = find(kind);
        assert_eq!(status, many.status().as_u16(), "{kind}");
        assert_eq!(detail["code"], many.code(), "{kind}");
    }
    let invalid = forgebench::error::ApiError::InvalidRequest(String::new());
    for kind in ["BAD_REQUEST_BODY", "BAD_REQUEST_PARAMETERS"] {
        let (status, detail) = find(kind);
        assert_eq!(status, invalid.status().as_u16(), "{kind}");
        assert_eq!(detail["code"], invalid.code(), "{kind}");
    }
}

/// The template's resources of `kind`, by logical name.
fn resources_of(kind: &str) -> Vec<(String, serde_norway::Value)> {
    let document = template();
    document["Resources"]
        .as_mapping()
        .expect("resources")
        .iter()
        .filter(|(_, resource)| resource["Type"] == kind)
        .map(|(name, resource)| (name.as_str().expect("a name").to_owned(), resource.clone()))
        .collect()
}

/// The text of a `!Sub` value (its template string, with or without variables).
fn sub_text(value: &serde_norway::Value) -> String {
    let serde_norway::Value::Tagged(tagged) = value else {
        panic!("not a !Sub: {value:?}");
    };
    assert_eq!(tagged.tag, "Sub");
    match &tagged.value {
        serde_norway::Value::String(text) => text.clone(),
        serde_norway::Value::Sequence(parts) => parts[0].as_str().expect("a template").to_owned(),
        other => panic!("a !Sub of {other:?}"),
    }
}

/// Every metric name the gateway emits.
fn emitted_metric_names() -> BTreeSet<String> {
    use forgebench::domain::binding::RefusalReason;
    use forgebench::domain::task::Delivery;
    use forgebench::domain::TaskState;
    use forgebench::metrics::{Metric, PushOutcome};
    use std::time::Duration;
    let all = [
        Metric::TaskOpened {
            delivery: Delivery::Pull,
        },
        Metric::TaskClaimed,
        Metric::TaskAnswered {
            state: TaskState::Completed,
            delivery: Delivery::Push,
        },
        Metric::TasksExpired { count: 1 },
        Metric::SweepSkipped { count: 1 },
        Metric::Refused {
            reason: RefusalReason::NoBinding,
        },
        Metric::PushAttempt {
            outcome: PushOutcome::Delivered,
            latency: Duration::ZERO,
        },
        Metric::PushFailed,
        Metric::ItemSkipped,
        Metric::LongPollWait {
            route: "claim",
            waited: Duration::ZERO,
        },
    ];
    all.iter()
        .map(|metric| {
            let line: serde_json::Value =
                serde_json::from_str(&metric.emf_line("N", 0)).expect("EMF");
            line["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Name"]
                .as_str()
                .expect("a name")
                .to_owned()
        })
        .collect()
}

#[test]
fn every_alarm_notifies_the_alarm_topic_and_watches_what_operations_documents() {
    let alarms = resources_of("AWS::CloudWatch::Alarm");
    let names: BTreeSet<&str> = alarms.iter().map(|(name, _)| name.as_str()).collect();
    for expected in [
        "PushDeadLetterAlarm",
        "Api5xxAlarm",
        "EventFunctionErrorsAlarm",
        "LongPollThrottlesAlarm",
        "StreamThrottlesAlarm",
        "PushQueueAgeAlarm",
        "SweepSkippedAlarm",
        "ItemsSkippedAlarm",
    ] {
        assert!(names.contains(expected), "no {expected}");
    }
    let operations = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/operations.md"),
    )
    .expect("docs/operations.md");
    for (name, alarm) in &alarms {
        let actions = alarm["Properties"]["AlarmActions"]
            .as_sequence()
            .unwrap_or_else(|| panic!("{name} notifies no one"));
        assert!(
            actions.iter().any(|action| matches!(action,
                serde_norway::Value::Tagged(t) if t.tag == "Ref" && t.value == "AlarmTopic")),
            "{name} does not notify the alarm topic"
        );
        assert!(
            operations.contains(name.as_str()),
            "docs/operations.md says nothing of {name}"
        );
    }
    // An alarm on the gateway's own metrics names one it emits, in the namespace it emits to.
    let document = template();
    let namespace = sub_text(
        &document["Globals"]["Function"]["Environment"]["Variables"]
            ["FORGEBENCH_METRICS_NAMESPACE"],
    );
    let emitted = emitted_metric_names();
    let mut own = 0;
    for (name, alarm) in &alarms {
        let properties = &alarm["Properties"];
        if let serde_norway::Value::Tagged(_) = properties["Namespace"] {
            assert_eq!(sub_text(&properties["Namespace"]), namespace, "{name}");
            let metric = properties["MetricName"].as_str().expect("a metric");
            assert!(
                emitted.contains(metric),
                "{name} watches {metric}, never emitted"
            );
            own += 1;
        }
    }
    assert!(own > 0, "no alarm watches the gateway's own metrics");
}

#[test]
fn the_dashboard_charts_only_metrics_the_gateway_emits() {
    let document = template();
    let (_, dashboard) = resources_of("AWS::CloudWatch::Dashboard")
        .into_iter()
        .next()
        .expect("a dashboard");
    let body = sub_text(&dashboard["Properties"]["DashboardBody"]);
    let rendered = body
        .replace("${Namespace}", "Forgebench/stack")
        .replace("${AWS::Region}", "us-east-1")
        .replace("${AWS::StackName}", "stack")
        .replace("${PushQueue.QueueName}", "push")
        .replace("${PushDeadLetterQueue.QueueName}", "dead");
    assert!(!rendered.contains("${"), "a variable left: {rendered}");
    let parsed: serde_json::Value = serde_json::from_str(&rendered).expect("the body is JSON");
    let emitted = emitted_metric_names();
    let mut charted = BTreeSet::new();
    for widget in parsed["widgets"].as_array().expect("widgets") {
        for metric in widget["properties"]["metrics"].as_array().expect("metrics") {
            let row = metric.as_array().expect("a row");
            if row[0] == "Forgebench/stack" {
                charted.insert(row[1].as_str().expect("a name").to_owned());
            }
            if let Some(expression) = row[0]["expression"].as_str() {
                let name = expression
                    .split("MetricName=\"")
                    .nth(1)
                    .and_then(|rest| rest.split('"').next())
                    .expect("a searched metric name");
                charted.insert(name.to_owned());
            }
        }
    }
    for name in &charted {
        assert!(
            emitted.contains(name),
            "the dashboard charts {name}, never emitted"
        );
    }
    assert_eq!(
        charted, emitted,
        "every metric the gateway emits is on the dashboard"
    );
    assert!(document["Outputs"]["Dashboard"].is_mapping());
}

#[test]
fn the_api_and_every_function_are_traced_and_the_access_log_has_no_body_or_key() {
    let document = template();
    assert_eq!(document["Globals"]["Function"]["Tracing"], "Active");
    let api = &document["Resources"]["Api"]["Properties"];
    assert_eq!(api["TracingEnabled"], true);
    let format = api["AccessLogSetting"]["Format"]
        .as_str()
        .expect("an access log format");
    // Only request metadata: nothing that reads a body, a header or the authorizer's context.
    for forbidden in ["$input", "$context.authorizer", "header", "body", "$util"] {
        assert!(
            !format.contains(forbidden),
            "the access log reads {forbidden}"
        );
    }
    let mut rendered = format.to_owned();
    while let Some(start) = rendered.find("$context.") {
        let end = rendered[start..]
            .find('"')
            .map(|offset| start + offset)
            .expect("a quoted variable");
        rendered.replace_range(start..end, "x");
    }
    let line: serde_json::Value = serde_json::from_str(&rendered).expect("one JSON line");
    for field in [
        "request_id",
        "trace_id",
        "route",
        "method",
        "status",
        "latency_ms",
    ] {
        assert!(line[field].is_string(), "the access log has no {field}");
    }
}

#[test]
fn every_setting_the_code_reads_is_in_the_operations_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let operations =
        std::fs::read_to_string(root.join("docs/operations.md")).expect("docs/operations.md");
    let mut settings = BTreeSet::new();
    let mut folders = vec![root.join("shared/src"), root.join("local/src")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a source folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a source file");
            for (at, _) in text.match_indices("FORGEBENCH_") {
                let name: String = text[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                settings.insert(name);
            }
        }
    }
    assert!(settings.len() > 15, "{settings:?}");
    for setting in settings {
        assert!(
            operations.contains(&format!("| `{setting}` |")),
            "docs/operations.md has no row for {setting}"
        );
    }
}

/// The optional web ACL on the stage (`KeyRequestRateLimits`, deployed when `KeyRequestRateLimit`
/// is set): its rules in the order WAF evaluates them, and its custom response bodies.
struct WebAcl {
    rules: Vec<serde_norway::Value>,
    bodies: serde_norway::Value,
}

impl WebAcl {
    fn of_template() -> WebAcl {
        let document = template();
        let acl = &document["Resources"]["KeyRequestRateLimits"];
        assert_eq!(acl["Type"], "AWS::WAFv2::WebACL");
        let mut rules = acl["Properties"]["Rules"]
            .as_sequence()
            .expect("the web ACL's rules")
            .clone();
        rules.sort_by_key(|rule| rule["Priority"].as_u64().expect("a priority"));
        WebAcl {
            rules,
            bodies: acl["Properties"]["CustomResponseBodies"].clone(),
        }
    }

    fn rule(&self, name: &str) -> &serde_norway::Value {
        self.rules
            .iter()
            .find(|rule| rule["Name"] == name)
            .unwrap_or_else(|| panic!("the web ACL has no rule {name}"))
    }

    /// The status and the JSON body a blocking rule answers.
    fn answer(&self, rule: &str) -> (u16, serde_json::Value) {
        let response = &self.rule(rule)["Action"]["Block"]["CustomResponse"];
        let status = response["ResponseCode"].as_u64().expect("a status");
        let key = response["CustomResponseBodyKey"]
            .as_str()
            .expect("a custom body");
        let body = &self.bodies[key];
        assert_eq!(body["ContentType"], "APPLICATION_JSON", "{rule}");
        let content = body["Content"].as_str().expect("the body's content");
        let json = serde_json::from_str(content)
            .unwrap_or_else(|error| panic!("{rule}: the body is not JSON ({error}): {content}"));
        (u16::try_from(status).expect("a status"), json)
    }

    /// The regex of the rule that refuses a non-canonical `Authorization` header, after checking
    /// that the rule matches exactly the requests that carry the header and fail the regex.
    fn canonical_authorization(&self) -> String {
        let rule = self.rule("non-canonical-authorization");
        let statements = rule["Statement"]["AndStatement"]["Statements"]
            .as_sequence()
            .expect("an AND of two statements");
        assert_eq!(statements.len(), 2, "{statements:?}");
        let as_is = |statement: &serde_norway::Value| {
            assert_eq!(
                statement["FieldToMatch"]["SingleHeader"]["Name"], "authorization",
                "{statement:?}"
            );
            // A transformation (LOWERCASE, COMPRESS_WHITE_SPACE) would let "BEARER x" or
            // "Bearer  x" through.
            let transformations = statement["TextTransformations"]
                .as_sequence()
                .expect("transformations");
            assert_eq!(transformations.len(), 1, "{statement:?}");
            assert_eq!(transformations[0]["Type"], "NONE", "{statement:?}");
        };
        // The header is there...
        let present = &statements[0]["SizeConstraintStatement"];
        as_is(present);
        assert_eq!(present["ComparisonOperator"], "GT");
        assert_eq!(present["Size"].as_u64(), Some(0));
        // ...and its whole value does not match the canonical form.
        let canonical = &statements[1]["NotStatement"]["Statement"]["RegexMatchStatement"];
        as_is(canonical);
        canonical["RegexString"]
            .as_str()
            .expect("a regex string")
            .to_owned()
    }
}

/// `Authorization` values the gateway accepts: the scheme exactly `Bearer`, one space, a
/// credential in RFC 6750's b64token grammar.
const CANONICAL_AUTHORIZATIONS: [&str; 4] = [
    "Bearer fb_agt_abc123",
    "Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln",
    "Bearer abc+/=",
    "Bearer abc==",
];

/// `Authorization` values the gateway refuses with 401, and the web ACL before it.
const NON_CANONICAL_AUTHORIZATIONS: [&str; 15] = [
    "bearer fb_agt_x",
    "BEARER x",
    "Bearer  x",
    "Bearer\tx",
    " Bearer x",
    "Bearer x ",
    "Bearer x y",
    "Basic x",
    "Bearer",
    "Bearer ",
    "Bearer a=b",
    "Bearer =",
    "Bearer x,y",
    "Bearer\u{a0}x",
    "Bearer x\u{e9}",
];

#[test]
fn the_web_acl_refuses_every_authorization_header_but_the_canonical_bearer_form() {
    let acl = WebAcl::of_template();
    assert_eq!(
        acl.rules[0]["Name"], "non-canonical-authorization",
        "evaluated first, so the rate rules count each key under one spelling only"
    );
    // Answered as the gateway answers a request without a valid key.
    let (status, body) = acl.answer("non-canonical-authorization");
    let unauthenticated = forgebench::error::ApiError::Unauthenticated;
    assert_eq!(status, unauthenticated.status().as_u16());
    assert_eq!(body["detail"]["code"], unauthenticated.code());
    assert_eq!(
        body,
        serde_json::json!({"detail": {"code": "unauthenticated",
            "message": "the Authorization header must be exactly: Bearer <credential>"}})
    );

    let pattern = acl.canonical_authorization();
    // WAF's own bound on a RegexMatchStatement's RegexString.
    assert!(pattern.len() <= 512, "{} characters", pattern.len());
    // WAF supports no capturing group (nor backreference); anchored at both ends, so only a
    // whole value matches.
    assert!(!pattern.contains('('), "{pattern}");
    assert!(
        pattern.starts_with('^') && pattern.ends_with('$'),
        "{pattern}"
    );
    // WAF's regexes are PCRE's; this one reads the same in both engines, but for PCRE's `$`, which
    // also matches before a final newline: no header value can hold one (RFC 9110, 5.5).
    let canonical = regex_lite::Regex::new(&pattern).expect("the regex compiles");
    for value in CANONICAL_AUTHORIZATIONS {
        assert!(canonical.is_match(value), "{pattern} refuses {value:?}");
    }
    for value in NON_CANONICAL_AUTHORIZATIONS {
        assert!(!canonical.is_match(value), "{pattern} accepts {value:?}");
    }
    // Every key the gateway issues passes.
    use forgebench::domain::keys::{generate, KeyKind};
    for kind in [
        KeyKind::Operator,
        KeyKind::Admin,
        KeyKind::Member,
        KeyKind::Viewer,
        KeyKind::Agent,
    ] {
        let value = format!("Bearer {}", generate(kind).expect("a key"));
        assert!(canonical.is_match(&value), "{pattern} refuses {value:?}");
    }
}

/// Whether `value` is `!Ref name`.
fn is_ref(value: &serde_norway::Value, name: &str) -> bool {
    matches!(value, serde_norway::Value::Tagged(t) if t.tag == "Ref" && t.value == name)
}

#[test]
fn the_web_acl_limits_each_key_and_each_address_with_a_key_or_without() {
    let acl = WebAcl::of_template();
    let names: Vec<&str> = acl
        .rules
        .iter()
        .map(|rule| rule["Name"].as_str().expect("a name"))
        .collect();
    assert_eq!(
        names,
        ["non-canonical-authorization", "per-key", "per-address"]
    );
    let many = forgebench::error::ApiError::TooManyRequests(String::new());
    for (rule, parameter) in [
        ("per-key", "KeyRequestRateLimit"),
        ("per-address", "AddressRequestRateLimit"),
    ] {
        let (status, body) = acl.answer(rule);
        assert_eq!(status, many.status().as_u16(), "{rule}");
        assert_eq!(body["detail"]["code"], many.code(), "{rule}");
        let response = &acl.rule(rule)["Action"]["Block"]["CustomResponse"];
        assert_eq!(
            response["ResponseHeaders"][0]["Name"], "Retry-After",
            "{rule}"
        );
        assert_eq!(response["ResponseHeaders"][0]["Value"], "60", "{rule}");
        let rate = &acl.rule(rule)["Statement"]["RateBasedStatement"];
        assert!(is_ref(&rate["Limit"], parameter), "{rule}: {rate:?}");
        assert_eq!(rate["EvaluationWindowSec"].as_u64(), Some(60), "{rule}");
        // Each counts every request that reaches it: a scope-down statement on the address rule
        // once left out every request with a key, so a new random key per request was never
        // limited.
        assert!(rate.get("ScopeDownStatement").is_none(), "{rule}: {rate:?}");
    }
    let per_key = &acl.rule("per-key")["Statement"]["RateBasedStatement"];
    assert_eq!(per_key["AggregateKeyType"], "CUSTOM_KEYS");
    let keys = per_key["CustomKeys"].as_sequence().expect("custom keys");
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0]["Header"]["Name"], "authorization");
    assert_eq!(keys[0]["Header"]["TextTransformations"][0]["Type"], "NONE");
    let per_address = &acl.rule("per-address")["Statement"]["RateBasedStatement"];
    assert_eq!(per_address["AggregateKeyType"], "IP");

    let document = template();
    let address = &document["Parameters"]["AddressRequestRateLimit"];
    assert_eq!(address["Type"], "Number");
    // WAF's range of a rate-based rule's limit.
    assert_eq!(address["MinValue"].as_u64(), Some(10));
    assert_eq!(address["MaxValue"].as_u64(), Some(2_000_000_000));
    assert_eq!(address["Default"].as_u64(), Some(6000));
    let key = regex_lite::Regex::new(
        document["Parameters"]["KeyRequestRateLimit"]["AllowedPattern"]
            .as_str()
            .expect("a pattern"),
    )
    .expect("the pattern compiles");
    for (value, allowed) in [("0", true), ("9", false), ("10", true), ("999999999", true)] {
        assert_eq!(key.is_match(value), allowed, "KeyRequestRateLimit {value}");
    }
    // The web ACL and its association with the stage only when a key limit is set.
    for resource in ["KeyRequestRateLimits", "KeyRequestRateLimitsOnStage"] {
        assert_eq!(
            document["Resources"][resource]["Condition"], "LimitsKeyRequestRate",
            "{resource}"
        );
    }
}

#[test]
fn the_cdk_app_deploys_the_same_canonical_form_and_answers() {
    // The drift test (infra/cdk/test) compares the two web ACLs whole once the CDK app is
    // synthesized; this holds the regex and the answers checked above to the CDK app's source
    // without it.
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../infra/cdk/lib/gateway.ts"),
    )
    .expect("infra/cdk/lib/gateway.ts");
    let acl = WebAcl::of_template();
    let pattern = acl.canonical_authorization();
    assert!(
        source.contains(&format!("CANONICAL_AUTHORIZATION = '{pattern}';")),
        "the CDK app's regex is not {pattern}"
    );
    for (key, body) in acl.bodies.as_mapping().expect("bodies") {
        let content = body["Content"].as_str().expect("content");
        let literal = format!("'{}'", content.replace('\'', "\\'"));
        assert!(
            source.contains(&literal),
            "the CDK app's body {key:?} is not {content}"
        );
    }
}
