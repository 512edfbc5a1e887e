//! Configuration, read once at cold start from the environment into a typed struct.

use std::time::Duration;

use crate::domain::endpoint_health::DisableRule;
use crate::domain::keys;
use crate::domain::pace::PollPace;
use crate::domain::retry::RetrySchedule;
use crate::push::ssrf::{Cidr, HostResolver};

/// The longest `wait` any route accepts, per the API.
pub const API_MAX_WAIT_SECONDS: u64 = 30;

#[derive(Clone, Debug)]
pub struct Config {
    /// `FORGEBENCH_TABLE`: the DynamoDB table (required).
    pub table: String,
    /// `FORGEBENCH_OPERATOR_KEY_HASH` (SHA-256, lower-case hex: what a deployment sets, so the
    /// key itself is never in a function's environment), or the hash of
    /// `FORGEBENCH_OPERATOR_KEY` (local development); without either no principal may create
    /// tenants.
    pub operator_key_hash: Option<String>,
    /// `FORGEBENCH_KEY_CACHE_SECONDS` (default 10, 0 to 300): how long a process trusts a key lookup. A key
    /// revoked elsewhere stops working within this time; the process that revokes it drops it at
    /// once. 0 disables the cache.
    pub key_cache_ttl: Duration,
    /// `FORGEBENCH_SIGNING_KEY_CACHE_SECONDS` (300, 0 to 900): how long a process signs with the
    /// active key it opened before asking the store again, so a rotation reaches every warm
    /// process within this time; a replaced key can be retired only after it. 0 asks every time.
    pub signing_key_lifetime: Duration,
    /// `FORGEBENCH_MAX_WAIT_SECONDS` (default 30, 0 to 30): the deployment's bound on `wait`,
    /// below the API Gateway integration timeout. A larger `wait` is served up to this bound.
    pub max_wait_seconds: u64,
    /// The first interval between reads while a caller waits on a task or follows its events
    /// (`FORGEBENCH_TASK_POLL_MS`, 100; 20 to 5,000); it grows to `idle_poll_ceiling` while the
    /// task stays quiet (see [`PollPace`]).
    pub task_poll_interval: Duration,
    /// `FORGEBENCH_STREAM_MAX_SECONDS` (840, 10 to 890): how long one event stream stays open
    /// before it ends and the client reconnects with `Last-Event-ID`; inside the 15 minutes
    /// Lambda and API Gateway allow a streamed response.
    pub stream_max_seconds: u64,
    /// `FORGEBENCH_STREAM_KEEPALIVE_SECONDS` (15, 1 to 60): the longest an event stream stays
    /// silent; a comment line is sent after this long without an event, inside API Gateway's
    /// idle timeout (30 s for edge-optimized endpoints, 5 minutes for regional ones).
    pub stream_keepalive: Duration,
    /// The first interval between queue reads while a callee long-polls for work
    /// (`FORGEBENCH_CLAIM_POLL_MS`, 100; 20 to 5,000); it grows to `idle_poll_ceiling` while the
    /// queue stays empty.
    pub claim_poll_interval: Duration,
    /// `FORGEBENCH_IDLE_POLL_MS` (750; 20 to 5,000): the longest interval any wait grows to; at
    /// most this long passes between a change and an idle waiter's next look.
    pub idle_poll_ceiling: Duration,
    /// `FORGEBENCH_PUBLIC_URL`: the gateway's public base URL, which cards name and sign (an
    /// absolute http(s) URL without query, fragment or credentials; a trailing `/` is dropped).
    /// When unset, a deployed function names the API's own execute-api URL, built from the API
    /// id and stage API Gateway puts in the request context; never from a request header.
    pub public_url: Option<String>,
    /// `AWS_REGION` (set by Lambda): the region of the execute-api URL when `public_url` is unset.
    pub region: Option<String>,
    /// `FORGEBENCH_PUSH_QUEUE_URL`: the SQS queue of push deliveries.
    pub push_queue_url: Option<String>,
    /// `FORGEBENCH_KMS_KEY_ID`: the KMS key that seals endpoint secrets.
    pub kms_key_id: Option<String>,
    /// `FORGEBENCH_PUSH_ALLOWED_CIDRS`: extra ranges push may reach, for local development only
    /// (for example `127.0.0.0/8`). Empty by default; the deployment template never sets it.
    pub push_allowed_cidrs: Vec<Cidr>,
    /// `FORGEBENCH_PUSH_RESOLVE`: fixed answers for push host names (`host=addr|addr;…`), like
    /// curl's `--resolve`. Every answer still passes the SSRF guard.
    pub push_resolve: HostResolver,
    /// `FORGEBENCH_PUSH_TIMEOUT_MS` (10,000; 100 to 25,000): time for one POST to an endpoint, answer included.
    pub push_timeout: Duration,
    /// `FORGEBENCH_TENANT_MAX_PUSHES` (10, 1 to 1,000): the most push POSTs (task deliveries and
    /// notifications) of one tenant in flight at once across every push worker; a job past it
    /// waits on the queue without dialing, so one tenant's slow receivers cannot hold every
    /// worker (50, deployed).
    pub tenant_max_pushes: u32,
    /// `FORGEBENCH_ENDPOINT_DISABLE_FAILURES` (20, 1 to 100,000) and
    /// `FORGEBENCH_ENDPOINT_DISABLE_SECONDS` (3,600, 0 to 2,592,000: 30 days): a push endpoint
    /// that failed that many attempts in a row, spanning at least that long, is disabled until
    /// an admin enables it (docs/api.md, "Operating deliveries").
    pub endpoint_disable: DisableRule,
    /// `FORGEBENCH_PUSH_RETRY_SECONDS` (`5,30,120,600,1800`): delays between delivery attempts,
    /// 1 to 8 of them, each 0 to 43,200 seconds (see [`RetrySchedule::parse`]).
    pub retry_schedule: RetrySchedule,
    /// `FORGEBENCH_BODY_BUCKET`: the S3 bucket of message and artifact bodies too large to stay
    /// inside a task item. Routes that never meet such a body run without it.
    pub body_bucket: Option<String>,
    /// `FORGEBENCH_TASK_RETENTION_DAYS` (365, 1 to 3,650): how long a task and its stored bodies
    /// are kept; the table's time to live and the bucket's lifecycle rule use the same number.
    pub task_retention_days: u64,
    /// `FORGEBENCH_TENANT_MAX_WAITS` (40, 1 to 1,000): the most waiting requests and open event
    /// streams all the key holders of one tenant may hold at once, so one tenant's agents cannot
    /// take every reserved execution of a long-poll or streaming function (100 each, deployed).
    pub tenant_max_waits: u32,
    /// `FORGEBENCH_TENANT_MAX_AGENTS` (1,000, 1 to 100,000): the most agents one tenant holds
    /// that are not retired (past it, creating one is `409 limit_reached`).
    pub tenant_max_agents: u64,
    /// `FORGEBENCH_TENANT_MAX_CONFIGS` (10,000, 1 to 1,000,000): the most A2A push notification
    /// configs one tenant holds that still have events to send (past it, adding one is `429`).
    pub tenant_max_configs: u64,
    /// `FORGEBENCH_INDEX_UNITS` (1,000, 1 to 1,000): the most DynamoDB write units one write of a
    /// message's word postings spends (each posting is one unit); a message's later words are
    /// not indexed for search.
    pub index_units: u64,
}

/// The default of `FORGEBENCH_TENANT_MAX_AGENTS`.
pub const DEFAULT_TENANT_MAX_AGENTS: u64 = 1_000;

/// The default of `FORGEBENCH_TENANT_MAX_CONFIGS`.
pub const DEFAULT_TENANT_MAX_CONFIGS: u64 = 10_000;

/// The default of `FORGEBENCH_TENANT_MAX_PUSHES`.
pub const DEFAULT_TENANT_MAX_PUSHES: u32 = 10;

/// The default of `FORGEBENCH_TENANT_MAX_WAITS`.
pub const DEFAULT_TENANT_MAX_WAITS: u32 = 40;

/// The store's defaults, which the settings below override.
pub use crate::store::{DEFAULT_CLAIM_POLL_INTERVAL, DEFAULT_INDEX_UNITS};

/// The default of `FORGEBENCH_STREAM_MAX_SECONDS`.
pub const DEFAULT_STREAM_MAX_SECONDS: u64 = 840;

/// The default of `FORGEBENCH_TASK_RETENTION_DAYS`.
pub const DEFAULT_TASK_RETENTION_DAYS: u64 = 365;
/// The longest retention a deployment may set.
pub const MAX_TASK_RETENTION_DAYS: u64 = 3650;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("environment variable {0} is required")]
    Missing(&'static str),
    #[error("environment variable {0} is invalid: {1}")]
    Invalid(&'static str, String),
    #[error("the TLS configuration for AWS endpoints cannot be built: {0}")]
    Tls(String),
}

/// The range of each numeric setting, checked at start: a value outside it (or not a whole
/// number: negative, fractional, `inf`, `1e30`) stops the process with the variable named.
pub mod ranges {
    use std::ops::RangeInclusive;

    /// `FORGEBENCH_KEY_CACHE_SECONDS`: up to 5 minutes of trusting a key lookup.
    pub const KEY_CACHE_SECONDS: RangeInclusive<u64> = 0..=300;
    /// `FORGEBENCH_SIGNING_KEY_CACHE_SECONDS`: up to 15 minutes before a rotation is seen.
    pub const SIGNING_KEY_CACHE_SECONDS: RangeInclusive<u64> = 0..=900;
    /// `FORGEBENCH_MAX_WAIT_SECONDS`: the API's own bound on `wait`.
    pub const MAX_WAIT_SECONDS: RangeInclusive<u64> = 0..=super::API_MAX_WAIT_SECONDS;
    /// `FORGEBENCH_TASK_POLL_MS`, `FORGEBENCH_CLAIM_POLL_MS` and `FORGEBENCH_IDLE_POLL_MS`: no
    /// faster than 20 ms (the store's load), no slower than 5 s (a waiting caller would miss most
    /// of its wait).
    pub const POLL_MS: RangeInclusive<u64> = 20..=5_000;
    /// `FORGEBENCH_PUSH_TIMEOUT_MS`: one attempt must end well inside the worker's 30 s.
    pub const PUSH_TIMEOUT_MS: RangeInclusive<u64> = 100..=25_000;
    /// `FORGEBENCH_STREAM_MAX_SECONDS`: a streamed response ends by 15 minutes; 10 s spare.
    pub const STREAM_MAX_SECONDS: RangeInclusive<u64> = 10..=890;
    /// `FORGEBENCH_STREAM_KEEPALIVE_SECONDS`: within the shortest idle timeout of API Gateway.
    pub const STREAM_KEEPALIVE_SECONDS: RangeInclusive<u64> = 1..=60;
    /// `FORGEBENCH_TASK_RETENTION_DAYS`.
    pub const TASK_RETENTION_DAYS: RangeInclusive<u64> = 1..=super::MAX_TASK_RETENTION_DAYS;
    /// `FORGEBENCH_TENANT_MAX_WAITS`.
    pub const TENANT_MAX_WAITS: RangeInclusive<u64> = 1..=1_000;
    /// `FORGEBENCH_TENANT_MAX_PUSHES`.
    pub const TENANT_MAX_PUSHES: RangeInclusive<u64> = 1..=1_000;
    /// `FORGEBENCH_ENDPOINT_DISABLE_FAILURES`.
    pub const ENDPOINT_DISABLE_FAILURES: RangeInclusive<u64> = 1..=100_000;
    /// `FORGEBENCH_ENDPOINT_DISABLE_SECONDS`: up to 30 days.
    pub const ENDPOINT_DISABLE_SECONDS: RangeInclusive<u64> = 0..=2_592_000;
    /// `FORGEBENCH_TENANT_MAX_AGENTS`.
    pub const TENANT_MAX_AGENTS: RangeInclusive<u64> = 1..=100_000;
    /// `FORGEBENCH_TENANT_MAX_CONFIGS`.
    pub const TENANT_MAX_CONFIGS: RangeInclusive<u64> = 1..=1_000_000;
    /// `FORGEBENCH_INDEX_UNITS`: more would index no more words than a task keeps.
    pub const INDEX_UNITS: RangeInclusive<u64> = 1..=super::DEFAULT_INDEX_UNITS;
}

/// Reads settings through a lookup: the process environment, or a map in tests.
struct Env<'a>(&'a dyn Fn(&str) -> Option<String>);

impl Env<'_> {
    /// Caches, waits, polls and streams.
    fn read_timings(&self, config: &mut Config) -> Result<(), ConfigError> {
        let env = self;
        config.key_cache_ttl = env.seconds(
            "FORGEBENCH_KEY_CACHE_SECONDS",
            10,
            ranges::KEY_CACHE_SECONDS,
        )?;
        config.signing_key_lifetime = env.seconds(
            "FORGEBENCH_SIGNING_KEY_CACHE_SECONDS",
            crate::signing::DEFAULT_KEY_LIFETIME.as_secs(),
            ranges::SIGNING_KEY_CACHE_SECONDS,
        )?;
        config.max_wait_seconds = env.bounded(
            "FORGEBENCH_MAX_WAIT_SECONDS",
            API_MAX_WAIT_SECONDS,
            ranges::MAX_WAIT_SECONDS,
        )?;
        config.task_poll_interval = env.millis("FORGEBENCH_TASK_POLL_MS", 100, ranges::POLL_MS)?;
        config.stream_max_seconds = env.bounded(
            "FORGEBENCH_STREAM_MAX_SECONDS",
            DEFAULT_STREAM_MAX_SECONDS,
            ranges::STREAM_MAX_SECONDS,
        )?;
        config.stream_keepalive = env.seconds(
            "FORGEBENCH_STREAM_KEEPALIVE_SECONDS",
            15,
            ranges::STREAM_KEEPALIVE_SECONDS,
        )?;
        config.claim_poll_interval = env.millis(
            "FORGEBENCH_CLAIM_POLL_MS",
            DEFAULT_CLAIM_POLL_INTERVAL.as_millis() as u64,
            ranges::POLL_MS,
        )?;
        config.idle_poll_ceiling = env.millis("FORGEBENCH_IDLE_POLL_MS", 750, ranges::POLL_MS)?;
        Ok(())
    }

    /// Push delivery: the queue, the key, the destinations allowed, the timeout and the retries.
    fn read_push(&self, config: &mut Config) -> Result<(), ConfigError> {
        let env = self;
        config.push_queue_url = env.optional("FORGEBENCH_PUSH_QUEUE_URL");
        config.kms_key_id = env.optional("FORGEBENCH_KMS_KEY_ID");
        config.push_allowed_cidrs = match env.optional("FORGEBENCH_PUSH_ALLOWED_CIDRS") {
            None => Vec::new(),
            Some(text) => Cidr::parse_list(&text)
                .map_err(|why| ConfigError::Invalid("FORGEBENCH_PUSH_ALLOWED_CIDRS", why))?,
        };
        config.push_resolve = match env.optional("FORGEBENCH_PUSH_RESOLVE") {
            None => HostResolver::default(),
            Some(text) => HostResolver::parse_overrides(&text)
                .map_err(|error| ConfigError::Invalid("FORGEBENCH_PUSH_RESOLVE", error))?,
        };
        config.push_timeout = env.millis(
            "FORGEBENCH_PUSH_TIMEOUT_MS",
            10_000,
            ranges::PUSH_TIMEOUT_MS,
        )?;
        config.tenant_max_pushes = u32::try_from(env.bounded(
            "FORGEBENCH_TENANT_MAX_PUSHES",
            u64::from(DEFAULT_TENANT_MAX_PUSHES),
            ranges::TENANT_MAX_PUSHES,
        )?)
        .unwrap_or(DEFAULT_TENANT_MAX_PUSHES);
        let usual = DisableRule::default();
        config.endpoint_disable = DisableRule {
            failures: env.bounded(
                "FORGEBENCH_ENDPOINT_DISABLE_FAILURES",
                usual.failures,
                ranges::ENDPOINT_DISABLE_FAILURES,
            )?,
            span: Duration::from_secs(env.bounded(
                "FORGEBENCH_ENDPOINT_DISABLE_SECONDS",
                usual.span.as_secs(),
                ranges::ENDPOINT_DISABLE_SECONDS,
            )?),
        };
        config.retry_schedule = match env.optional("FORGEBENCH_PUSH_RETRY_SECONDS") {
            None => RetrySchedule::default(),
            Some(text) => RetrySchedule::parse(&text)
                .map_err(|why| ConfigError::Invalid("FORGEBENCH_PUSH_RETRY_SECONDS", why))?,
        };
        Ok(())
    }

    /// Where the gateway is reached and stores bodies; how long tasks are kept; what one tenant may hold.
    fn read_tenancy(&self, config: &mut Config) -> Result<(), ConfigError> {
        let env = self;
        config.public_url = env
            .optional("FORGEBENCH_PUBLIC_URL")
            .map(|text| public_url(&text))
            .transpose()?;
        config.region = env.optional("AWS_REGION");
        config.body_bucket = env.optional("FORGEBENCH_BODY_BUCKET");
        config.task_retention_days = env.bounded(
            "FORGEBENCH_TASK_RETENTION_DAYS",
            DEFAULT_TASK_RETENTION_DAYS,
            ranges::TASK_RETENTION_DAYS,
        )?;
        config.tenant_max_waits = u32::try_from(env.bounded(
            "FORGEBENCH_TENANT_MAX_WAITS",
            u64::from(DEFAULT_TENANT_MAX_WAITS),
            ranges::TENANT_MAX_WAITS,
        )?)
        .unwrap_or(DEFAULT_TENANT_MAX_WAITS);
        config.tenant_max_agents = env.bounded(
            "FORGEBENCH_TENANT_MAX_AGENTS",
            DEFAULT_TENANT_MAX_AGENTS,
            ranges::TENANT_MAX_AGENTS,
        )?;
        config.tenant_max_configs = env.bounded(
            "FORGEBENCH_TENANT_MAX_CONFIGS",
            DEFAULT_TENANT_MAX_CONFIGS,
            ranges::TENANT_MAX_CONFIGS,
        )?;
        config.index_units = env.bounded(
            "FORGEBENCH_INDEX_UNITS",
            DEFAULT_INDEX_UNITS,
            ranges::INDEX_UNITS,
        )?;
        Ok(())
    }

    /// A set, non-blank value.
    fn optional(&self, name: &str) -> Option<String> {
        (self.0)(name).filter(|value| !value.trim().is_empty())
    }

    /// A whole number within `range`, or `default` when unset; anything else names the variable.
    fn bounded(
        &self,
        name: &'static str,
        default: u64,
        range: std::ops::RangeInclusive<u64>,
    ) -> Result<u64, ConfigError> {
        let Some(text) = self.optional(name) else {
            return Ok(default);
        };
        let value: u64 = text
            .trim()
            .parse()
            .map_err(|_| ConfigError::Invalid(name, format!("{text:?} is not a whole number")))?;
        if !range.contains(&value) {
            return Err(ConfigError::Invalid(
                name,
                format!("{value} is outside {} to {}", range.start(), range.end()),
            ));
        }
        Ok(value)
    }

    fn millis(
        &self,
        name: &'static str,
        default: u64,
        range: std::ops::RangeInclusive<u64>,
    ) -> Result<Duration, ConfigError> {
        self.bounded(name, default, range)
            .map(Duration::from_millis)
    }

    fn seconds(
        &self,
        name: &'static str,
        default: u64,
        range: std::ops::RangeInclusive<u64>,
    ) -> Result<Duration, ConfigError> {
        self.bounded(name, default, range).map(Duration::from_secs)
    }
}

/// Validates `FORGEBENCH_PUBLIC_URL`: what cards name as the gateway must be an absolute
/// http(s) URL with a host and nothing a client could be sent elsewhere by (credentials, query,
/// fragment). Returns it without a trailing `/`.
pub fn public_url(text: &str) -> Result<String, ConfigError> {
    let invalid = |why: &str| ConfigError::Invalid("FORGEBENCH_PUBLIC_URL", why.to_owned());
    let url = url::Url::parse(text.trim()).map_err(|error| invalid(&error.to_string()))?;
    if !matches!(url.scheme(), "https" | "http") || url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("an absolute http(s) URL with a host is required"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid("credentials are not allowed"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid("a query or fragment is not allowed"));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// The operator key's hash from the deployment's hash, or from the key itself (local use).
pub fn operator_key_hash(
    hash: Option<&str>,
    key: Option<&str>,
) -> Result<Option<String>, ConfigError> {
    match (hash, key) {
        (Some(hash), _) => {
            let valid = hash.len() == 64
                && hash
                    .bytes()
                    .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte));
            if !valid {
                return Err(ConfigError::Invalid(
                    "FORGEBENCH_OPERATOR_KEY_HASH",
                    "a SHA-256 in lower-case hex (64 characters)".into(),
                ));
            }
            Ok(Some(hash.to_owned()))
        }
        (None, Some(key)) => Ok(Some(keys::hash(key))),
        (None, None) => Ok(None),
    }
}

/// A waiting caller or an event stream looks again after a sixth of the time its task has been
/// quiet: the answer a callee sends within seconds of its claim (the common case) reaches the
/// caller within a sixth of that time, while the task's quiet clock does not restart with each
/// new `wait`, so a caller that keeps waiting on a quiet task pays the ramp once.
const TASK_QUIET_DIVISOR: u32 = 6;

/// A long-polling callee looks again after half the time its request has waited: its quiet
/// clock restarts with every request, so a steeper ramp would be paid on every long poll, and a
/// claim's pickup is not the answer a caller waits for.
const CLAIM_QUIET_DIVISOR: u32 = 2;

impl Config {
    /// How a waiting caller or an event stream paces its reads of a task.
    pub fn task_pace(&self) -> PollPace {
        PollPace::new(
            self.task_poll_interval,
            self.idle_poll_ceiling,
            TASK_QUIET_DIVISOR,
        )
    }

    /// How a long-polling callee paces its reads of its queue.
    pub fn claim_pace(&self) -> PollPace {
        PollPace::new(
            self.claim_poll_interval,
            self.idle_poll_ceiling,
            CLAIM_QUIET_DIVISOR,
        )
    }

    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(&|name| std::env::var(name).ok())
    }

    /// The configuration `lookup` describes (the environment's variables by name).
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let env = Env(lookup);
        let table = (env.0)("FORGEBENCH_TABLE")
            .filter(|table| !table.is_empty())
            .ok_or(ConfigError::Missing("FORGEBENCH_TABLE"))?;
        let operator_key_hash = operator_key_hash(
            env.optional("FORGEBENCH_OPERATOR_KEY_HASH").as_deref(),
            env.optional("FORGEBENCH_OPERATOR_KEY").as_deref(),
        )?;
        let mut config = Config::for_table(table, None);
        config.operator_key_hash = operator_key_hash;
        env.read_timings(&mut config)?;
        env.read_push(&mut config)?;
        env.read_tenancy(&mut config)?;
        Ok(config)
    }

    /// A configuration for `table` with every default, for tools and tests.
    pub fn for_table(table: impl Into<String>, operator_key: Option<&str>) -> Config {
        Config {
            table: table.into(),
            operator_key_hash: operator_key.map(keys::hash),
            key_cache_ttl: Duration::from_secs(10),
            signing_key_lifetime: crate::signing::DEFAULT_KEY_LIFETIME,
            max_wait_seconds: API_MAX_WAIT_SECONDS,
            task_poll_interval: Duration::from_millis(100),
            stream_max_seconds: DEFAULT_STREAM_MAX_SECONDS,
            stream_keepalive: Duration::from_secs(15),
            claim_poll_interval: Duration::from_millis(100),
            idle_poll_ceiling: Duration::from_millis(750),
            public_url: None,
            region: None,
            push_queue_url: None,
            kms_key_id: None,
            push_allowed_cidrs: Vec::new(),
            push_resolve: HostResolver::default(),
            push_timeout: Duration::from_secs(10),
            retry_schedule: RetrySchedule::default(),
            body_bucket: None,
            task_retention_days: DEFAULT_TASK_RETENTION_DAYS,
            tenant_max_waits: DEFAULT_TENANT_MAX_WAITS,
            tenant_max_agents: DEFAULT_TENANT_MAX_AGENTS,
            tenant_max_configs: DEFAULT_TENANT_MAX_CONFIGS,
            tenant_max_pushes: DEFAULT_TENANT_MAX_PUSHES,
            endpoint_disable: DisableRule::default(),
            index_units: DEFAULT_INDEX_UNITS,
        }
    }

    /// When a task opened now expires, in seconds since the epoch.
    pub fn task_expiry(&self) -> u64 {
        crate::domain::clock::unix_now() + self.task_retention_days * 86_400
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_key_is_configured_by_its_hash_or_locally_by_itself() {
        let hash = keys::hash("fb_op_local");
        assert_eq!(
            operator_key_hash(Some(&hash), None).unwrap(),
            Some(hash.clone())
        );
        assert_eq!(
            operator_key_hash(None, Some("fb_op_local")).unwrap(),
            Some(hash)
        );
        assert_eq!(operator_key_hash(None, None).unwrap(), None);
        for bad in ["fb_op_local", &"A".repeat(64), &"a".repeat(63)] {
            assert!(operator_key_hash(Some(bad), None).is_err(), "{bad}");
        }
    }

    /// The configuration of a table plus `settings`, as from the environment.
    fn with(settings: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let mut all: std::collections::HashMap<String, String> = settings
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        all.entry("FORGEBENCH_TABLE".into()).or_insert("t".into());
        Config::from_lookup(&move |name| all.get(name).cloned())
    }

    #[test]
    fn every_numeric_setting_out_of_range_is_an_error_naming_it() {
        let cases = [
            (
                "FORGEBENCH_KEY_CACHE_SECONDS",
                &["-1", "301", "1e3", "inf"][..],
            ),
            (
                "FORGEBENCH_SIGNING_KEY_CACHE_SECONDS",
                &["901", "-5", "NaN"],
            ),
            ("FORGEBENCH_MAX_WAIT_SECONDS", &["31", "2.5"]),
            ("FORGEBENCH_TASK_POLL_MS", &["0", "19", "5001", "1e30"]),
            ("FORGEBENCH_CLAIM_POLL_MS", &["19", "18446744073709551616"]),
            ("FORGEBENCH_IDLE_POLL_MS", &["19", "5001"]),
            ("FORGEBENCH_PUSH_TIMEOUT_MS", &["99", "25001"]),
            ("FORGEBENCH_TASK_RETENTION_DAYS", &["0", "3651"]),
            ("FORGEBENCH_TENANT_MAX_PUSHES", &["0", "1001"]),
            ("FORGEBENCH_ENDPOINT_DISABLE_FAILURES", &["0", "100001"]),
            ("FORGEBENCH_ENDPOINT_DISABLE_SECONDS", &["-1", "2592001"]),
            (
                "FORGEBENCH_PUSH_RETRY_SECONDS",
                &["inf", "1e30", "-1", "NaN", "5,,5", "99999"],
            ),
        ];
        for (name, values) in cases {
            for value in values {
                let error = with(&[(name, value)]).unwrap_err().to_string();
                assert!(error.contains(name), "{name}={value}: {error}");
            }
        }
    }

    #[test]
    fn the_defaults_and_the_edges_of_each_range_are_accepted() {
        let config = with(&[]).unwrap();
        assert_eq!(config.key_cache_ttl, Duration::from_secs(10));
        assert_eq!(config.signing_key_lifetime, Duration::from_secs(300));
        assert_eq!(config.task_poll_interval, Duration::from_millis(100));
        assert_eq!(config.task_pace().ceiling(), Duration::from_millis(750));
        assert_eq!(config.push_timeout, Duration::from_secs(10));
        assert_eq!(config.tenant_max_pushes, 10);
        assert_eq!(config.endpoint_disable, DisableRule::default());
        let edges = with(&[
            ("FORGEBENCH_KEY_CACHE_SECONDS", "0"),
            ("FORGEBENCH_SIGNING_KEY_CACHE_SECONDS", "900"),
            ("FORGEBENCH_MAX_WAIT_SECONDS", "30"),
            ("FORGEBENCH_TASK_POLL_MS", "20"),
            ("FORGEBENCH_CLAIM_POLL_MS", "5000"),
            ("FORGEBENCH_IDLE_POLL_MS", "20"),
            ("FORGEBENCH_PUSH_TIMEOUT_MS", "25000"),
            ("FORGEBENCH_TASK_RETENTION_DAYS", "3650"),
            ("FORGEBENCH_PUSH_RETRY_SECONDS", "0.2, 43200"),
            ("FORGEBENCH_TENANT_MAX_PUSHES", "1000"),
            ("FORGEBENCH_ENDPOINT_DISABLE_FAILURES", "1"),
            ("FORGEBENCH_ENDPOINT_DISABLE_SECONDS", "2592000"),
        ])
        .unwrap();
        assert_eq!(edges.tenant_max_pushes, 1000);
        assert_eq!(
            edges.endpoint_disable,
            DisableRule {
                failures: 1,
                span: Duration::from_secs(2_592_000)
            }
        );
        assert_eq!(edges.claim_poll_interval, Duration::from_secs(5));
        assert_eq!(edges.claim_pace().ceiling(), Duration::from_secs(5));
        assert_eq!(edges.retry_schedule.max_attempts(), 3);
        let wide = with(&[("FORGEBENCH_PUSH_ALLOWED_CIDRS", "0.0.0.0/0")]).unwrap_err();
        assert!(wide.to_string().contains("FORGEBENCH_PUSH_ALLOWED_CIDRS"));
    }

    #[test]
    fn the_public_url_is_an_absolute_http_url_and_nothing_more() {
        assert_eq!(
            public_url("https://api.forgebench.ai/").unwrap(),
            "https://api.forgebench.ai"
        );
        assert_eq!(
            public_url("https://abc.execute-api.eu-west-1.amazonaws.com/prod").unwrap(),
            "https://abc.execute-api.eu-west-1.amazonaws.com/prod"
        );
        for bad in [
            "api.forgebench.ai",
            "ftp://api.forgebench.ai",
            "https://user:pw@api.forgebench.ai",
            "https://api.forgebench.ai/?next=evil.test",
            "https://api.forgebench.ai/#x",
            "/v1",
        ] {
            let error = public_url(bad).unwrap_err().to_string();
            assert!(error.contains("FORGEBENCH_PUBLIC_URL"), "{bad}: {error}");
        }
    }
}
