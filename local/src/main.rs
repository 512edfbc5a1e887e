//! `forgebench-local`: the whole gateway in one process, in front of the local AWS stack: every
//! route, the push worker on the local queue, and the sweeper on a timer.

use std::sync::Arc;
use std::time::Duration;

use forgebench::runtime::init_tracing;
use forgebench::store::Store;
use forgebench::{App, Config};

/// Worker threads get 8 MiB of stack, as a Lambda function's main thread has: a debug build's
/// async state machines are large, and A2A calls nest a task's open inside the protocol's handling.
const THREAD_STACK_BYTES: usize = 8 * 1024 * 1024;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(THREAD_STACK_BYTES)
        .build()?
        .block_on(run())
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    init_tracing();
    if std::env::args().nth(1).as_deref() == Some("backfill-words") {
        return backfill_words().await;
    }
    let address = std::env::var("FORGEBENCH_LISTEN").unwrap_or_else(|_| "127.0.0.1:8080".into());
    let mut config = Config::from_env()?;
    let sdk = forgebench::app::sdk_config().await?;
    let dynamodb = aws_sdk_dynamodb::Client::new(&sdk);
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let kms = aws_sdk_kms::Client::new(&sdk);
    let s3 = forgebench::bodies::s3_client(&sdk);
    let store = Store::new(dynamodb.clone(), config.table.clone());
    let resources = forgebench::bootstrap::bootstrap(&store, &sqs, &kms, &s3).await?;
    config
        .push_queue_url
        .get_or_insert(resources.push_queue_url);
    config.kms_key_id.get_or_insert(resources.kms_key_id);
    config.body_bucket.get_or_insert(resources.body_bucket);
    tracing::info!(table = config.table, "local resources ready");
    let (listener, local) = forgebench_local::bind(&address).await?;
    // Cards name the gateway by configuration only; without the setting, this process's own
    // address (never a request's Host header).
    let own = match local.ip().is_unspecified() {
        true => std::net::SocketAddr::from(([127, 0, 0, 1], local.port())),
        false => local,
    };
    config
        .public_url
        .get_or_insert_with(|| format!("http://{own}"));
    let app = Arc::new(App::new(dynamodb, sqs, kms, s3, config)?);
    let sweeper = forgebench_local::run_sweeper(Arc::clone(&app), Duration::from_secs(5));
    let worker = forgebench_local::run_push_worker(
        Arc::clone(&app),
        forgebench_local::PUSH_WORKER_CONCURRENCY,
    );
    let server = forgebench_local::serve(app, listener);
    eprintln!("forgebench: gateway listening on http://{local}");
    tokio::signal::ctrl_c().await?;
    server.abort();
    worker.abort();
    sweeper.abort();
    Ok(())
}

/// `forgebench-local backfill-words [SEGMENT SEGMENTS]`: writes the word postings of every task
/// of the table that the settings name (`FORGEBENCH_TABLE`, `FORGEBENCH_BODY_BUCKET`, and the
/// SDK's own settings for the account), deployed or local, without creating anything
/// (docs/deploy.md, "Upgrading a stack whose word postings had indexes of their own"). With
/// `SEGMENT SEGMENTS` (e.g. `0 4` … `3 4` in four shells) it scans one segment of the table.
async fn backfill_words() -> Result<(), Box<dyn std::error::Error>> {
    let number = |at: usize, default: i32| -> Result<i32, Box<dyn std::error::Error>> {
        Ok(match std::env::args().nth(at) {
            Some(text) => text.parse()?,
            None => default,
        })
    };
    let (segment, segments) = (number(2, 0)?, number(3, 1)?);
    let config = Config::from_env()?;
    let sdk = forgebench::app::sdk_config().await?;
    let store = Store::new(aws_sdk_dynamodb::Client::new(&sdk), config.table.clone());
    let bodies = forgebench::bodies::Bodies::new(
        forgebench::bodies::s3_client(&sdk),
        config.body_bucket.clone(),
        config.kms_key_id.clone(),
    );
    let indexed = forgebench::search::backfill_words(&store, &bodies, segment, segments).await?;
    eprintln!(
        "forgebench: word postings written for {indexed} tasks of {} (segment {segment} of {segments})",
        config.table
    );
    Ok(())
}
