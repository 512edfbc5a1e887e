//! `forgebench-local`: the whole gateway in one process, in front of the local AWS stack.

use std::sync::Arc;
use std::time::Duration;

use forgebench::runtime::init_tracing;
use forgebench::App;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    init_tracing();
    let address = std::env::var("FORGEBENCH_LISTEN").unwrap_or_else(|_| "127.0.0.1:8080".into());
    let app = Arc::new(App::from_env().await?);
    let created = forgebench_local::bootstrap(&app).await?;
    tracing::info!(table = app.config.table, created, "state table ready");
    let (listener, local) = forgebench_local::bind(&address).await?;
    let sweeper = forgebench_local::run_sweeper(Arc::clone(&app), Duration::from_secs(5));
    let server = forgebench_local::serve(app, listener);
    eprintln!("forgebench: gateway listening on http://{local}");
    tokio::signal::ctrl_c().await?;
    server.abort();
    sweeper.abort();
    Ok(())
}
