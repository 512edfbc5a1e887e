//! Spawning the gateway in-process: the [`Options`] a test may change, and the [`TestApp`] that
//! serves on a free port over a fresh table, queue, key and bucket.

use std::sync::Arc;
use std::time::Duration;

use forgebench::store::Store;
use forgebench::{App, Config};
use tokio::task::JoinHandle;

use crate::{
    dynamodb_client, dynamodb_config, dynamodb_endpoint, moto_endpoint, s3_client, sqs_and_kms,
    sqs_and_kms_recorded, Recorder,
};

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
    /// How many batches the push worker runs at once (the deployed event source's maximum
    /// concurrency by default).
    pub push_concurrency: usize,
    /// `FORGEBENCH_TENANT_MAX_PUSHES`.
    pub tenant_max_pushes: u32,
    /// `FORGEBENCH_ENDPOINT_DISABLE_FAILURES` and `FORGEBENCH_ENDPOINT_DISABLE_SECONDS`.
    pub endpoint_disable: forgebench::domain::endpoint_health::DisableRule,
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
            push_concurrency: forgebench_local::PUSH_WORKER_CONCURRENCY,
            tenant_max_pushes: forgebench::config::DEFAULT_TENANT_MAX_PUSHES,
            endpoint_disable: Default::default(),
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
    let mut config = gateway_config(&options, &table, &operator_key, &resources);
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
        .then(|| forgebench_local::run_push_worker(Arc::clone(&app), options.push_concurrency));
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

/// The gateway's configuration for `options`, over `table` and the `resources` made for it (the
/// public URL is set once the gateway's address is known).
fn gateway_config(
    options: &Options,
    table: &str,
    operator_key: &str,
    resources: &forgebench::bootstrap::Resources,
) -> Config {
    let mut config = Config::for_table(table, Some(operator_key));
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
    config.tenant_max_pushes = options.tenant_max_pushes;
    config.endpoint_disable = options.endpoint_disable;
    config.index_units = options.index_units;
    config
}
