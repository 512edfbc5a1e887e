//! What AWS charges: the us-east-1 on-demand prices the bill is made of, and the sweeper's
//! schedule.

/// The date the prices below were written down (and cross-checked, see `docs/benchmarks.md`).
pub const PRICES_DATE: &str = "2026-12-02";
/// us-east-1 on-demand prices, dollars per million units unless named otherwise.
/// AWS Lambda pricing page: requests, $0.20 per million (both architectures).
pub const LAMBDA_REQUESTS: f64 = 0.20;
/// AWS Lambda pricing page: duration, Arm (Graviton2), first 7.5 billion GB-s a month, per GB-s.
pub const LAMBDA_ARM_GB_SECOND: f64 = 0.000_013_333_4;
/// Amazon API Gateway pricing page: REST API requests, first 333 million a month.
pub const API_GATEWAY_REST: f64 = 3.50;
/// Amazon DynamoDB pricing page, on-demand (after the November 2024 price cut).
pub const DYNAMODB_WRITE_UNITS: f64 = 0.625;
pub const DYNAMODB_READ_UNITS: f64 = 0.125;
/// Amazon SQS pricing page: standard queue requests after the first million a month; each
/// 64 KB chunk of a payload is one request.
pub const SQS_REQUESTS: f64 = 0.40;
pub const SQS_CHUNK: usize = 64 * 1024;
/// AWS KMS pricing page: $0.03 per 10,000 requests.
pub const KMS_REQUESTS: f64 = 3.00;
/// Amazon S3 pricing page, S3 Standard: PUT, COPY, POST, LIST $0.005 per 1,000; GET $0.0004 per
/// 1,000.
pub const S3_PUTS: f64 = 5.00;
pub const S3_GETS: f64 = 0.40;

/// Sweeps a month: the sweeper runs every minute, a month taken as 30 days.
pub const SWEEPS_PER_MONTH: f64 = 30.0 * 24.0 * 60.0;
