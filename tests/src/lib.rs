//! Test harness: spawns the local gateway in-process on a free port with a fresh DynamoDB table
//! on DynamoDB Local, and offers one helper per route. Nothing here fakes AWS: every request goes
//! through the real handlers to the real emulator.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test, with its message"
)]

use std::sync::Arc;
use std::time::Duration;

use forgebench::store::Store;
use forgebench::{App, Config};
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Where DynamoDB Local listens: `AWS_ENDPOINT_URL_DYNAMODB`, as the test script exports it.
pub fn dynamodb_endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL_DYNAMODB").unwrap_or_else(|_| "http://127.0.0.1:8000".into())
}

/// A DynamoDB client for `endpoint`, with test credentials.
pub async fn dynamodb_client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::from_conf(dynamodb_config(endpoint).await.build())
}

/// The configuration [`dynamodb_client`] builds, open for more settings.
pub async fn dynamodb_config(endpoint: &str) -> aws_sdk_dynamodb::config::Builder {
    let sdk = forgebench::app::sdk_config()
        .await
        .expect("TLS configuration for the SDK");
    aws_sdk_dynamodb::config::Builder::from(&sdk)
        .endpoint_url(endpoint)
        .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
}

/// One HTTP answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Reply {
    pub fn field(&self, name: &str) -> String {
        self.body[name].as_str().unwrap_or_default().to_owned()
    }

    pub fn state(&self) -> String {
        self.body["status"]["state"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

/// An agent with a key.
#[derive(Debug, Clone)]
pub struct TestAgent {
    pub id: String,
    pub name: String,
    pub key: String,
}

/// A tenant with its admin key.
#[derive(Debug, Clone)]
pub struct Tenant {
    pub id: String,
    pub admin_key: String,
}

/// Two agents of one tenant, the caller bound (approved) to the callee.
#[derive(Debug, Clone)]
pub struct Pair {
    pub tenant: Tenant,
    pub caller: TestAgent,
    pub callee: TestAgent,
    pub binding_id: String,
}

pub struct TestApp {
    pub base: String,
    pub http: reqwest::Client,
    pub operator_key: String,
    pub app: Arc<App>,
    pub table: String,
    pub push_queue_url: String,
    pub dead_letter_queue_url: String,
    pub body_bucket: String,
    server: JoinHandle<()>,
    worker: Option<JoinHandle<()>>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.abort();
        if let Some(worker) = &self.worker {
            worker.abort();
        }
    }
}

/// Where moto (SQS, KMS) listens: `AWS_ENDPOINT_URL`, as the test script exports it.
pub fn moto_endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| "http://127.0.0.1:5000".into())
}

/// An S3 client for `endpoint` (path-style, as the emulator serves buckets), with test
/// credentials, every request also noted by `recorder`.
pub async fn s3_client(endpoint: &str, recorder: Option<&Recorder>) -> aws_sdk_s3::Client {
    let sdk = forgebench::app::sdk_config()
        .await
        .expect("TLS configuration for the SDK");
    let mut s3 = aws_sdk_s3::config::Builder::from(&sdk)
        .endpoint_url(endpoint)
        .force_path_style(true)
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "test", "test", None, None, "tests",
        ));
    if let Some(recorder) = recorder {
        s3 = s3.interceptor(recorder.clone());
    }
    aws_sdk_s3::Client::from_conf(s3.build())
}

/// SQS and KMS clients for `endpoint`, with test credentials.
pub async fn sqs_and_kms(endpoint: &str) -> (aws_sdk_sqs::Client, aws_sdk_kms::Client) {
    sqs_and_kms_recorded(endpoint, None).await
}

/// [`sqs_and_kms`], every request also noted by `recorder`.
pub async fn sqs_and_kms_recorded(
    endpoint: &str,
    recorder: Option<&Recorder>,
) -> (aws_sdk_sqs::Client, aws_sdk_kms::Client) {
    let sdk = forgebench::app::sdk_config()
        .await
        .expect("TLS configuration for the SDK");
    let credentials = aws_sdk_sqs::config::Credentials::new("test", "test", None, None, "tests");
    let mut sqs = aws_sdk_sqs::config::Builder::from(&sdk)
        .endpoint_url(endpoint)
        .region(aws_sdk_sqs::config::Region::new("us-east-1"))
        .credentials_provider(credentials.clone());
    let mut kms = aws_sdk_kms::config::Builder::from(&sdk)
        .endpoint_url(endpoint)
        .region(aws_sdk_kms::config::Region::new("us-east-1"))
        .credentials_provider(credentials);
    if let Some(recorder) = recorder {
        sqs = sqs.interceptor(recorder.clone());
        kms = kms.interceptor(recorder.clone());
    }
    (
        aws_sdk_sqs::Client::from_conf(sqs.build()),
        aws_sdk_kms::Client::from_conf(kms.build()),
    )
}

/// Notes every request the SDK clients send, as the IAM action it needs (`dynamodb:GetItem`,
/// `sqs:SendMessage`, `kms:Encrypt`; a DynamoDB transaction as the action of each of its items;
/// a KMS call also as `kms:Encrypt@<purpose>`, the encryption context's purpose), and how long
/// DynamoDB took to answer them.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    log: Arc<std::sync::Mutex<RequestLog>>,
    /// The DynamoDB requests answered since the last take of them: each one's name (see
    /// [`Recorder::take_dynamodb_round_trips`]) and round trip.
    dynamodb_round_trips: Arc<std::sync::Mutex<Vec<(String, Duration)>>>,
    /// Operations whose next request fails before it is sent (a fault injected into the real
    /// client: the emulator never sees the request).
    faults: Arc<std::sync::Mutex<Vec<String>>>,
}

/// A DynamoDB request's name and when it went out, kept with the request until its answer
/// comes back.
#[derive(Debug, Clone)]
struct SentToDynamodb(String, std::time::Instant);

impl aws_smithy_types::config_bag::Storable for SentToDynamodb {
    type Storer = aws_smithy_types::config_bag::StoreReplace<Self>;
}

/// Requests in order: each one's operation and the IAM actions it needs.
type RequestLog = Vec<(String, Vec<String>)>;

impl Recorder {
    /// Fails the next request of `operation` (`BatchWriteItem`, `PutItem`, …) before it is sent,
    /// as a network fault would; later ones go through.
    pub fn fail_next(&self, operation: &str) {
        self.faults
            .lock()
            .expect("recorder")
            .push(operation.to_owned());
    }

    /// The IAM actions of every request since the last take.
    pub fn take(&self) -> Vec<String> {
        self.take_requests()
            .into_iter()
            .flat_map(|(_, actions)| actions)
            .collect()
    }

    /// Every request since the last take: its operation (`GetItem`, `TransactWriteItems`, …)
    /// and the IAM actions it needs.
    pub fn take_requests(&self) -> Vec<(String, Vec<String>)> {
        std::mem::take(&mut *self.log.lock().expect("recorder"))
    }

    /// The summed round trips of the DynamoDB requests answered since the last take: the time
    /// spent waiting on the store (requests sent at once count each).
    pub fn take_dynamodb_time(&self) -> Duration {
        self.take_dynamodb_round_trips()
            .into_iter()
            .map(|(_, round_trip)| round_trip)
            .sum()
    }

    /// Each DynamoDB request answered since the last take, in the order of the answers: its
    /// name (the operation, and the index a `Query` reads: `Query words_in`) and its round
    /// trip, from sent to the answer's headers.
    pub fn take_dynamodb_round_trips(&self) -> Vec<(String, Duration)> {
        std::mem::take(&mut *self.dynamodb_round_trips.lock().expect("recorder"))
    }

    /// The operation of every request since the last take but the queue's receives (which a
    /// local push poller sends all the time, and a deployed event source mapping for us).
    pub fn take_operations_but_receives(&self) -> Vec<String> {
        self.take_requests()
            .into_iter()
            .map(|(operation, _)| operation)
            .filter(|operation| operation != "ReceiveMessage")
            .collect()
    }

    /// The operation of every DynamoDB request since the last take (the others are dropped).
    pub fn take_dynamodb(&self) -> Vec<String> {
        self.take_requests()
            .into_iter()
            .filter(|(_, actions)| actions.iter().any(|a| a.starts_with("dynamodb:")))
            .map(|(operation, _)| operation)
            .collect()
    }
}

/// A JSON request's body (DynamoDB and KMS speak JSON), or `null`.
fn request_body(request: &aws_smithy_runtime_api::http::Request) -> Value {
    request
        .body()
        .bytes()
        .and_then(|bytes| serde_json::from_slice(bytes).ok())
        .unwrap_or_default()
}

impl aws_smithy_runtime_api::client::interceptors::Intercept for Recorder {
    fn name(&self) -> &'static str {
        "Recorder"
    }

    fn read_before_transmit(
        &self,
        context: &aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
        cfg: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        let request = context.request();
        let target = request.headers().get("x-amz-target").unwrap_or_default();
        let (service, operation) = target.split_once('.').unwrap_or(("", target));
        // S3 speaks REST without a target header: the operation's own metadata names it.
        let metadata = cfg.load::<aws_smithy_runtime_api::client::orchestrator::Metadata>();
        let (prefix, operation) = match service {
            s if s.starts_with("DynamoDB") => ("dynamodb", operation),
            s if s.starts_with("AmazonSQS") => ("sqs", operation),
            s if s.starts_with("TrentService") => ("kms", operation),
            _ => match metadata {
                Some(metadata) if metadata.service().eq_ignore_ascii_case("s3") => {
                    ("s3", metadata.name())
                }
                _ => ("unknown", operation),
            },
        };
        // Owned, so the metadata it may borrow from is let go before the state below is kept.
        let operation = operation.to_owned();
        // Only DynamoDB's and KMS's bodies are read, once: S3's may be large and not JSON.
        let body = match prefix {
            "dynamodb" | "kms" => request_body(request),
            _ => Value::Null,
        };
        if prefix == "dynamodb" {
            let name = match body["IndexName"].as_str() {
                Some(index) => format!("{operation} {index}"),
                None => operation.clone(),
            };
            cfg.interceptor_state()
                .store_put(SentToDynamodb(name, std::time::Instant::now()));
        }
        let mut actions = Vec::new();
        if prefix == "dynamodb" && operation == "TransactWriteItems" {
            for item in body["TransactItems"].as_array().into_iter().flatten() {
                for (kind, action) in [
                    ("Put", "PutItem"),
                    ("Update", "UpdateItem"),
                    ("Delete", "DeleteItem"),
                    ("ConditionCheck", "ConditionCheckItem"),
                ] {
                    if item.get(kind).is_some() {
                        actions.push(format!("dynamodb:{action}"));
                    }
                }
            }
        } else {
            actions.push(format!("{prefix}:{operation}"));
        }
        // A KMS call is also noted with its encryption context's purpose (`kms:Decrypt@
        // endpoint-secret`), which IAM conditions on (`kms:EncryptionContext:purpose`).
        if prefix == "kms" {
            let purpose = body["EncryptionContext"]["purpose"].as_str().unwrap_or("");
            actions.push(format!("{prefix}:{operation}@{purpose}"));
        }
        let mut faults = self.faults.lock().expect("recorder");
        let fault = faults.iter().position(|failing| *failing == operation);
        let fault = fault.map(|place| faults.remove(place));
        drop(faults);
        self.log
            .lock()
            .expect("recorder")
            .push((operation, actions));
        match fault {
            Some(operation) => Err(format!("injected fault: {operation}").into()),
            None => Ok(()),
        }
    }

    fn read_after_transmit(
        &self,
        _context: &aws_smithy_runtime_api::client::interceptors::context::BeforeDeserializationInterceptorContextRef<'_>,
        _runtime_components: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
        cfg: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        if let Some(SentToDynamodb(name, sent)) = cfg.load::<SentToDynamodb>() {
            let round_trip = sent.elapsed();
            self.dynamodb_round_trips
                .lock()
                .expect("recorder")
                .push((name.clone(), round_trip));
        }
        Ok(())
    }
}

/// Settings a test may change before the gateway starts.
pub struct Options {
    pub dynamodb_endpoint: String,
    /// Where the gateway reaches SQS and KMS (resources are always created on moto directly).
    pub moto_endpoint: String,
    pub key_cache_seconds: u64,
    /// Keep the deployed long-poll pace; otherwise tests poll every 100 ms to run quickly.
    pub deployed_poll_intervals: bool,
    /// Ranges push may reach besides public addresses (the operator allowlist); none by default.
    pub push_allowed_cidrs: &'static str,
    /// Push retry delays in seconds; short so retry tests finish quickly.
    pub retry_seconds: &'static str,
    pub push_timeout: Duration,
    /// Keep the deployed push timeout and retry schedule (`retry_seconds` and `push_timeout`
    /// are not used).
    pub deployed_push: bool,
    /// Run the push worker on the test's queue.
    pub push_worker: bool,
    /// Notes every AWS request the gateway makes.
    pub recorder: Option<Recorder>,
    /// Serve an existing stack (a second, cold process on the same table) instead of a new one.
    pub table: Option<String>,
    /// Set `FORGEBENCH_PUBLIC_URL` to the gateway's own base URL, as `scripts/up.sh` does.
    pub public_url: bool,
    /// How long the process signs with the active key it opened before asking the store again.
    pub signing_key_lifetime: Duration,
    /// How long an event stream stays silent before a keep-alive comment.
    pub stream_keepalive: Duration,
    /// How long one event stream stays open.
    pub stream_max_seconds: u64,
    /// The most waits and streams one tenant's key holders hold at once.
    pub tenant_max_waits: u32,
    /// `FORGEBENCH_TENANT_MAX_AGENTS`.
    pub tenant_max_agents: u64,
    /// `FORGEBENCH_TENANT_MAX_CONFIGS`.
    pub tenant_max_configs: u64,
    /// `FORGEBENCH_INDEX_UNITS`.
    pub index_units: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            dynamodb_endpoint: dynamodb_endpoint(),
            moto_endpoint: moto_endpoint(),
            key_cache_seconds: 10,
            deployed_poll_intervals: false,
            deployed_push: false,
            push_allowed_cidrs: "",
            retry_seconds: "0.2,0.2",
            push_timeout: Duration::from_secs(2),
            push_worker: true,
            recorder: None,
            table: None,
            public_url: true,
            signing_key_lifetime: forgebench::signing::DEFAULT_KEY_LIFETIME,
            stream_keepalive: Duration::from_secs(15),
            stream_max_seconds: forgebench::config::DEFAULT_STREAM_MAX_SECONDS,
            tenant_max_waits: forgebench::config::DEFAULT_TENANT_MAX_WAITS,
            tenant_max_agents: forgebench::config::DEFAULT_TENANT_MAX_AGENTS,
            tenant_max_configs: forgebench::config::DEFAULT_TENANT_MAX_CONFIGS,
            index_units: forgebench::config::DEFAULT_INDEX_UNITS,
        }
    }
}

impl Options {
    /// Push endpoints on this machine's loopback allowed, as for local development.
    pub fn local_push() -> Options {
        Options {
            push_allowed_cidrs: "127.0.0.0/8",
            ..Options::default()
        }
    }
}

/// Starts a gateway with a fresh table, queue and key.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(Options::default()).await
}

pub async fn spawn_app_with(options: Options) -> TestApp {
    // Standard output is the test's or the benchmark's report: no metric lines there.
    forgebench::metrics::discard();
    let table = options
        .table
        .clone()
        .unwrap_or_else(|| format!("test-{}", uuid::Uuid::new_v4()));
    let operator_key = format!("fb_op_test_{}", uuid::Uuid::new_v4().simple());
    // Resources are always created directly on the emulators, even when the gateway reaches
    // them through a proxy the test controls.
    let direct = Store::new(dynamodb_client(&dynamodb_endpoint()).await, table.clone());
    let (direct_sqs, direct_kms) = sqs_and_kms(&moto_endpoint()).await;
    let direct_s3 = s3_client(&moto_endpoint(), None).await;
    let resources = forgebench::bootstrap::bootstrap(&direct, &direct_sqs, &direct_kms, &direct_s3)
        .await
        .unwrap_or_else(|error| {
            panic!(
                "cannot create resources on the local stack (DynamoDB Local at {}, moto at {}): \
                 {error}. Run the tests with scripts/test.sh, which starts the local stack.",
                dynamodb_endpoint(),
                moto_endpoint()
            )
        });
    let mut config = Config::for_table(table.clone(), Some(&operator_key));
    config.key_cache_ttl = Duration::from_secs(options.key_cache_seconds);
    config.signing_key_lifetime = options.signing_key_lifetime;
    if !options.deployed_poll_intervals {
        config.task_poll_interval = Duration::from_millis(100);
        config.claim_poll_interval = Duration::from_millis(100);
        config.idle_poll_ceiling = Duration::from_millis(100);
    }
    config.push_queue_url = Some(resources.push_queue_url.clone());
    config.kms_key_id = Some(resources.kms_key_id.clone());
    config.body_bucket = Some(resources.body_bucket.clone());
    config.push_allowed_cidrs =
        forgebench::push::ssrf::Cidr::parse_list(options.push_allowed_cidrs).expect("cidrs");
    if !options.deployed_push {
        config.retry_schedule =
            forgebench::push::verdict::RetrySchedule::parse(options.retry_seconds)
                .expect("schedule");
        config.push_timeout = options.push_timeout;
    }
    config.stream_keepalive = options.stream_keepalive;
    config.stream_max_seconds = options.stream_max_seconds;
    config.tenant_max_waits = options.tenant_max_waits;
    config.tenant_max_agents = options.tenant_max_agents;
    config.tenant_max_configs = options.tenant_max_configs;
    config.index_units = options.index_units;
    let mut dynamodb = dynamodb_config(&options.dynamodb_endpoint).await;
    if let Some(recorder) = &options.recorder {
        dynamodb = dynamodb.interceptor(recorder.clone());
    }
    let client = aws_sdk_dynamodb::Client::from_conf(dynamodb.build());
    let (sqs, kms) = sqs_and_kms_recorded(&options.moto_endpoint, options.recorder.as_ref()).await;
    let s3 = s3_client(&options.moto_endpoint, options.recorder.as_ref()).await;
    let (listener, address) = forgebench_local::bind("127.0.0.1:0").await.expect("bind");
    if options.public_url {
        config.public_url = Some(format!("http://{address}"));
    }
    let app = Arc::new(App::new(client, sqs, kms, s3, config).expect("app"));
    let server = forgebench_local::serve(Arc::clone(&app), listener);
    let worker = options
        .push_worker
        .then(|| forgebench_local::run_push_worker(Arc::clone(&app)));
    TestApp {
        base: format!("http://{address}"),
        http: reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .timeout(Duration::from_secs(60))
            .build()
            .expect("client"),
        operator_key,
        app,
        table,
        push_queue_url: resources.push_queue_url,
        dead_letter_queue_url: resources.push_dead_letter_queue_url,
        body_bucket: resources.body_bucket,
        server,
        worker,
    }
}

pub mod faults;
pub mod samples;
pub mod sse;

/// A task `caller` opened on `callee` at `opened_ms` (Unix milliseconds) in `context_id` with
/// `message` (a message's JSON), then moved to each of `states` in turn, 3 ms apart: a task as
/// a seeding benchmark writes it, with its words.
pub fn seeded_task(
    caller: &forgebench::domain::Agent,
    callee: &forgebench::domain::Agent,
    context_id: String,
    message: &Value,
    opened_ms: i128,
    states: &[forgebench::domain::TaskState],
) -> (
    forgebench::domain::Task,
    forgebench::domain::words::TaskWords,
) {
    use forgebench::domain::{clock, events::Change, task, Task};
    let moment = |ms: i128| {
        let at = time::OffsetDateTime::from_unix_timestamp_nanos(ms * 1_000_000);
        clock::format(at.expect("a moment in range"))
    };
    let mut task = Task::open(task::TaskOpening {
        id: forgebench::domain::TaskId::generate(),
        caller_agent_id: caller.id.clone(),
        callee,
        context_id,
        input: forgebench::domain::content::Stored::Inline(
            serde_json::from_value(message.clone()).expect("a message"),
        ),
        input_bytes: message.to_string().len() as u64,
        lineage: task::CallLineage {
            call_id: uuid::Uuid::new_v4().to_string(),
            parent_call_id: None,
            root_call_id: uuid::Uuid::new_v4().to_string(),
        },
        now: moment(opened_ms),
        expires_at: clock::unix_now() + 86_400,
    });
    for (step, state) in (1..).zip(states) {
        let at = moment(opened_ms + 3 * step);
        task.changes.push(Change::state(*state, false, &at));
        task.state = *state;
    }
    task.updated_at = task.changed_at();
    let words = forgebench::domain::words::words_of_stored(message);
    (
        task,
        forgebench::domain::words::TaskWords::from_known(words),
    )
}

pub fn text_message(text: &str) -> Value {
    json!({"role": "user", "parts": [{"text": text}]})
}

/// A caller's message too large to stay in the task's item: its body lives in the body store.
pub fn offloaded_text_message() -> Value {
    let line = "invoice line ";
    text_message(&line.repeat(forgebench::domain::content::INLINE_BODY_BYTES / line.len() + 1))
}

impl TestApp {
    /// Sends a request with an optional key and JSON body.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self.http.request(method, format!("{}{}", self.base, path));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        self.finish(request).await
    }

    /// Calls A2A method `method` with `params` over the JSON-RPC binding of `agent`, as an A2A
    /// 1.0 client does (`A2A-Version: 1.0`).
    pub async fn a2a_rpc(&self, agent: &str, key: &str, method: &str, params: Value) -> Reply {
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.a2a_rpc_raw(agent, Some(key), Some("1.0"), &body.to_string())
            .await
    }

    /// Posts `raw` to the JSON-RPC binding of `agent` with the given key and `A2A-Version`.
    pub async fn a2a_rpc_raw(
        &self,
        agent: &str,
        key: Option<&str>,
        version: Option<&str>,
        raw: &str,
    ) -> Reply {
        let mut request = self
            .http
            .post(format!("{}/v1/agents/{agent}/a2a/jsonrpc", self.base))
            .header("content-type", "application/a2a+json")
            .body(raw.to_owned());
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(version) = version {
            request = request.header("a2a-version", version);
        }
        self.finish(request).await
    }

    /// A request to the HTTP+JSON binding of A2A (`path` under `/v1/agents/{agent}/a2a`), as an
    /// A2A 1.0 client sends it (`A2A-Version: 1.0`).
    pub async fn a2a_rest(
        &self,
        method: &str,
        agent: &str,
        path: &str,
        key: &str,
        body: Option<Value>,
    ) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self
            .http
            .request(method, format!("{}/v1/agents/{agent}/a2a{path}", self.base))
            .bearer_auth(key)
            .header("a2a-version", "1.0");
        if let Some(body) = body {
            request = request
                .header("content-type", "application/a2a+json")
                .body(body.to_string());
        }
        self.finish(request).await
    }

    /// Sends a request whose body is exactly `raw`.
    pub async fn send_raw(&self, method: &str, path: &str, key: &str, raw: &str) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let request = self
            .http
            .request(method, format!("{}{}", self.base, path))
            .bearer_auth(key)
            .header("content-type", "application/json")
            .body(raw.to_owned());
        self.finish(request).await
    }

    pub async fn finish(&self, request: reqwest::RequestBuilder) -> Reply {
        let response = request.send().await.expect("request reached the gateway");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
            text,
        }
    }

    pub async fn post(&self, path: &str, key: &str, body: Value) -> Reply {
        self.send("POST", path, Some(key), Some(body)).await
    }

    pub async fn get(&self, path: &str, key: &str) -> Reply {
        self.send("GET", path, Some(key), None).await
    }

    pub async fn create_tenant(&self) -> Tenant {
        let reply = self
            .post(
                "/v1/tenants",
                &self.operator_key.clone(),
                json!({"name": "acme"}),
            )
            .await;
        assert_eq!(reply.status, 201, "{}", reply.text);
        Tenant {
            id: reply.field("tenant_id"),
            admin_key: reply.field("admin_key"),
        }
    }

    /// Adds a member with `role`; returns (member_id, key).
    pub async fn create_member(&self, tenant: &Tenant, role: &str) -> (String, String) {
        let reply = self
            .post(
                "/v1/members",
                &tenant.admin_key,
                json!({"name": "pat", "role": role}),
            )
            .await;
        assert_eq!(reply.status, 201, "{}", reply.text);
        (reply.field("member_id"), reply.field("key"))
    }

    /// Creates an agent as `creator_key` and issues it a key.
    pub async fn create_agent(&self, creator_key: &str, name: &str) -> TestAgent {
        let reply = self
            .post("/v1/agents", creator_key, json!({ "name": name }))
            .await;
        assert_eq!(reply.status, 201, "{}", reply.text);
        let id = reply.field("id");
        let key = self.issue_key(creator_key, &id).await;
        TestAgent {
            id,
            name: name.to_owned(),
            key,
        }
    }

    pub async fn issue_key(&self, manager_key: &str, agent: &str) -> String {
        let reply = self
            .post(&format!("/v1/agents/{agent}/keys"), manager_key, json!({}))
            .await;
        assert_eq!(reply.status, 201, "{}", reply.text);
        reply.field("key")
    }

    pub async fn grant(&self, key: &str, caller: &str, callees: &[&str]) -> Reply {
        self.post(
            &format!("/v1/agents/{caller}/agents"),
            key,
            json!({ "callees": callees }),
        )
        .await
    }

    /// A tenant with a caller bound to a callee by the admin (so approved at once).
    /// Writes the tasks `make` builds for `numbers` as the gateway leaves them once indexed,
    /// 200 to a batch, 8 batches at a time: for benchmarks that need a table of many tasks.
    pub async fn seed_tasks(
        &self,
        numbers: std::ops::Range<usize>,
        make: impl Fn(
            usize,
        ) -> (
            forgebench::domain::Task,
            forgebench::domain::words::TaskWords,
        ),
    ) {
        use futures::StreamExt;
        let numbers: Vec<usize> = numbers.collect();
        futures::stream::iter(numbers.chunks(200))
            .for_each_concurrent(8, |chunk| {
                let tasks: Vec<_> = chunk.iter().map(|n| make(*n)).collect();
                async move {
                    self.app
                        .store
                        .seed_indexed_tasks(&tasks)
                        .await
                        .expect("tasks seeded")
                }
            })
            .await;
    }

    /// The pair's caller and callee as the store holds them.
    pub async fn agents_of(
        &self,
        pair: &Pair,
    ) -> (forgebench::domain::Agent, forgebench::domain::Agent) {
        let store = &self.app.store;
        let tenant = pair.tenant.id.clone().into();
        let read = |id: &str| {
            let (store, tenant, agent) = (store, &tenant, forgebench::domain::AgentRef::parse(id));
            async move {
                store
                    .find_agent(tenant, &agent)
                    .await
                    .expect("the agent read")
                    .expect("the agent exists")
            }
        };
        (read(&pair.caller.id).await, read(&pair.callee.id).await)
    }

    pub async fn pair(&self) -> Pair {
        let tenant = self.create_tenant().await;
        let caller = self
            .create_agent(&tenant.admin_key, "billing-orchestrator")
            .await;
        let callee = self
            .create_agent(&tenant.admin_key, "invoice-classifier")
            .await;
        let reply = self
            .grant(&tenant.admin_key, &caller.id, &[&callee.name])
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        let binding_id = reply.body[0]["id"].as_str().expect("binding id").to_owned();
        Pair {
            tenant,
            caller,
            callee,
            binding_id,
        }
    }

    pub async fn open_task(
        &self,
        caller_key: &str,
        callee: &str,
        message: Value,
        wait: u32,
    ) -> Reply {
        self.post(
            &format!("/v1/agents/{callee}/tasks?wait={wait}"),
            caller_key,
            json!({ "message": message }),
        )
        .await
    }

    /// A pull task of `pair` its callee has claimed and asked a question on
    /// (`input_required`): its id.
    pub async fn asked(&self, pair: &Pair) -> String {
        let opened = self
            .open_task(
                &pair.caller.key,
                &pair.callee.name,
                text_message("Classify"),
                0,
            )
            .await;
        let task_id = opened.field("id");
        assert_eq!(self.claim(&pair.callee.key, 0).await.status, 200);
        let question = json!({"role": "agent", "parts": [{"text": "which invoice?"}]});
        let asked = self
            .post_result(
                &pair.callee.key,
                &task_id,
                json!({"state": "input_required", "message": question}),
            )
            .await;
        assert_eq!(asked.state(), "input_required", "{}", asked.text);
        task_id
    }

    /// Revokes the binding of `pair` (an admin, from the caller's side); the reply.
    pub async fn revoke_binding(&self, pair: &Pair) -> Reply {
        self.send(
            "DELETE",
            &format!("/v1/agents/{}/agents/{}", pair.caller.id, pair.binding_id),
            Some(&pair.tenant.admin_key),
            None,
        )
        .await
    }

    pub async fn claim(&self, callee_key: &str, wait: u32) -> Reply {
        self.get(&format!("/v1/agents/me/tasks/next?wait={wait}"), callee_key)
            .await
    }

    pub async fn post_result(&self, callee_key: &str, task_id: &str, result: Value) -> Reply {
        self.post(
            &format!("/v1/agents/me/tasks/{task_id}/result"),
            callee_key,
            result,
        )
        .await
    }

    pub async fn get_task(&self, key: &str, callee: &str, task_id: &str) -> Reply {
        self.get(&format!("/v1/agents/{callee}/tasks/{task_id}"), key)
            .await
    }

    pub async fn cancel(&self, key: &str, callee: &str, task_id: &str) -> Reply {
        self.post(
            &format!("/v1/agents/{callee}/tasks/{task_id}/cancel"),
            key,
            json!({}),
        )
        .await
    }

    /// The audit entries of a tenant, newest first (first page of 100).
    pub async fn audit(&self, admin_key: &str) -> Vec<Value> {
        let reply = self.get("/v1/audit?limit=100", admin_key).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        reply.body["items"].as_array().cloned().unwrap_or_default()
    }

    /// Every item of the test's table, for asserting what was (not) written.
    pub async fn scan_all(
        &self,
    ) -> Vec<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>> {
        let client = dynamodb_client(&dynamodb_endpoint()).await;
        client
            .scan()
            .table_name(&self.table)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<Vec<_>, _>>()
            .await
            .expect("scan")
    }
}

/// A TCP proxy in front of DynamoDB Local that a test can cut and restore, to show what the
/// gateway does when its backing store stops answering.
pub struct Proxy {
    pub endpoint: String,
    up: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    pub async fn start(target: &str) -> Proxy {
        let target = target.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let endpoint = format!("http://{}", listener.local_addr().expect("address"));
        let (up, watch_up) = watch::channel(true);
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    continue;
                };
                let mut up = watch_up.clone();
                if !*up.borrow() {
                    drop(inbound);
                    continue;
                }
                let target = target.clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(&target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = up.wait_for(|up| !*up) => {}
                    }
                });
            }
        });
        Proxy { endpoint, up, task }
    }

    /// Drops every open connection and refuses new ones until [`Proxy::restore`].
    pub fn cut(&self) {
        let _ = self.up.send(false);
    }

    pub fn restore(&self) {
        let _ = self.up.send(true);
    }
}

/// One request a test callee received.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub raw_body: Vec<u8>,
    pub at: std::time::Instant,
}

/// What a test callee answers: status, content type, body, and how long to wait first.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    pub delay: Duration,
    pub retry_after: Option<u64>,
}

impl Answer {
    pub fn json(status: u16, body: Value) -> Answer {
        Answer {
            status,
            content_type: "application/json",
            body: body.to_string(),
            delay: Duration::ZERO,
            retry_after: None,
        }
    }

    pub fn text(status: u16, body: &str) -> Answer {
        Answer {
            status,
            content_type: "text/plain",
            body: body.to_owned(),
            delay: Duration::ZERO,
            retry_after: None,
        }
    }
}

type Script = Arc<dyn Fn(usize) -> Answer + Send + Sync>;

/// A real HTTP server on loopback standing in for a callee's push endpoint. `script(n)` decides
/// the answer to the n-th request (0-based); every request is recorded.
pub struct Callee {
    pub url: String,
    pub port: u16,
    received: Arc<std::sync::Mutex<Vec<Received>>>,
    task: JoinHandle<()>,
}

impl Drop for Callee {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Callee {
    pub async fn start(script: impl Fn(usize) -> Answer + Send + Sync + 'static) -> Callee {
        Callee::start_with_capacity(tokio::sync::Semaphore::MAX_PERMITS, script).await
    }

    /// A callee that works on at most `capacity` requests at once: a request beyond them waits
    /// for one to be answered (each taking its answer's `delay`), as a real agent's limited
    /// capacity would make it.
    pub async fn start_with_capacity(
        capacity: usize,
        script: impl Fn(usize) -> Answer + Send + Sync + 'static,
    ) -> Callee {
        use http_body_util::BodyExt;
        let capacity = Arc::new(tokio::sync::Semaphore::new(capacity));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind callee");
        let port = listener.local_addr().expect("address").port();
        let received: Arc<std::sync::Mutex<Vec<Received>>> = Arc::default();
        let script: Script = Arc::new(script);
        let log = Arc::clone(&received);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (log, script) = (Arc::clone(&log), Arc::clone(&script));
                let capacity = Arc::clone(&capacity);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |request: hyper::Request<hyper::body::Incoming>| {
                            let (log, script) = (Arc::clone(&log), Arc::clone(&script));
                            let capacity = Arc::clone(&capacity);
                            async move {
                                let (parts, body) = request.into_parts();
                                let bytes = body
                                    .collect()
                                    .await
                                    .map(|b| b.to_bytes())
                                    .unwrap_or_default();
                                let mut headers = reqwest::header::HeaderMap::new();
                                for (name, value) in parts.headers.iter() {
                                    if let (Ok(name), Ok(value)) = (
                                        reqwest::header::HeaderName::from_bytes(
                                            name.as_str().as_bytes(),
                                        ),
                                        reqwest::header::HeaderValue::from_bytes(value.as_bytes()),
                                    ) {
                                        headers.append(name, value);
                                    }
                                }
                                let index = {
                                    let mut log = log.lock().expect("log");
                                    log.push(Received {
                                        headers,
                                        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                                        raw_body: bytes.to_vec(),
                                        at: std::time::Instant::now(),
                                    });
                                    log.len() - 1
                                };
                                let answer = script(index);
                                let working = capacity.acquire().await.expect("never closed");
                                tokio::time::sleep(answer.delay).await;
                                drop(working);
                                let mut response = hyper::Response::builder()
                                    .status(answer.status)
                                    .header("content-type", answer.content_type);
                                if let Some(seconds) = answer.retry_after {
                                    response = response.header("retry-after", seconds.to_string());
                                }
                                Ok::<_, std::convert::Infallible>(
                                    response
                                        .body(http_body_util::Full::new(hyper::body::Bytes::from(
                                            answer.body,
                                        )))
                                        .expect("response"),
                                )
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Callee {
            url: format!("http://127.0.0.1:{port}/a2a"),
            port,
            received,
            task,
        }
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("log").clone()
    }

    /// Forgets the requests received so far (a long run's receiver keeps no history).
    pub fn forget(&self) {
        self.received.lock().expect("log").clear();
    }

    /// Waits until at least `count` requests arrived (or 15 s passed).
    pub async fn wait_for(&self, count: usize) -> Vec<Received> {
        for _ in 0..150 {
            let received = self.received();
            if received.len() >= count {
                return received;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.received()
    }
}

impl TestApp {
    /// Points a callee at a push endpoint; returns the reply.
    pub async fn set_endpoint(&self, key: &str, agent: &str, body: Value) -> Reply {
        self.send(
            "PUT",
            &format!("/v1/agents/{agent}/endpoint"),
            Some(key),
            Some(body),
        )
        .await
    }

    /// Reads a task until it leaves submitted/working (or 15 s passed).
    pub async fn settled(&self, key: &str, callee: &str, task_id: &str) -> Reply {
        let mut reply = self.get_task(key, callee, task_id).await;
        for _ in 0..150 {
            if !matches!(reply.state().as_str(), "submitted" | "working") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            reply = self.get_task(key, callee, task_id).await;
        }
        reply
    }
}

impl TestApp {
    /// A raw update of a stored task item, for a test that needs one as an older version or a
    /// fault could have left it (nothing the API itself would write).
    pub fn update_task_item(
        &self,
        task_id: &str,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        use aws_sdk_dynamodb::types::AttributeValue;
        self.app
            .store
            .client()
            .update_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(format!("TASK#{task_id}")))
            .key("sk", AttributeValue::S("TASK".into()))
    }
}

impl TestApp {
    /// Flags the task's word index due, as a write whose indexing failed leaves it.
    pub async fn flag_words_due(&self, task_id: &str) {
        let shard = task_id.chars().next().unwrap_or('0').to_string();
        self.update_task_item(task_id)
            .update_expression("SET words_due = :due, #shard = :shard")
            .expression_attribute_names("#shard", "shard")
            .expression_attribute_values(
                ":due",
                aws_sdk_dynamodb::types::AttributeValue::S("due".into()),
            )
            .expression_attribute_values(
                ":shard",
                aws_sdk_dynamodb::types::AttributeValue::S(shard),
            )
            .send()
            .await
            .expect("the due flag set");
    }
}

/// Every line the gateway logs in this test process (each test is its own process), to grep.
#[derive(Clone, Default)]
pub struct LogCapture(Arc<std::sync::Mutex<Vec<u8>>>);

impl LogCapture {
    /// Installs a JSON subscriber writing everything into a new capture; `None` when another
    /// subscriber was installed first in this process.
    pub fn install() -> Option<LogCapture> {
        let capture = LogCapture::default();
        let sink = capture.clone();
        tracing_subscriber::fmt()
            .json()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || sink.clone())
            .try_init()
            .ok()
            .map(|_| capture)
    }

    /// What was logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("log capture")).into_owned()
    }
}

impl std::io::Write for LogCapture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log capture").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
