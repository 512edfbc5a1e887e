//! The docs' caller samples, in Rust: open a task, continue a conversation, read and cancel.

use forgebench_sdk::{CallOptions, Client, Error, TaskState};
use serde_json::json;

#[tokio::main]
async fn main() -> forgebench_sdk::Result<()> {
    let key = std::env::var("CALLER_AGENT_KEY").unwrap_or_default();
    let client = Client::new(key, "https://api.forgebench.ai")?;

    let options = CallOptions::new()
        .text("Classify this invoice")
        .data(json!({"invoice_id": "INV-2026-0912"}))
        .wait(30); // block up to 30s for an answer
    let mut task = match client.call("invoice-classifier", options).await {
        Ok(task) => task,
        Err(error @ Error::PermissionDenied(_)) => {
            // no binding yet, still pending the callee's approval, or revoked
            eprintln!("not permitted to call invoice-classifier");
            return Err(error);
        }
        Err(error) => return Err(error),
    };

    match task.state() {
        TaskState::Completed => println!("{}", task.artifact_text()), // every artifact's text, joined
        TaskState::InputRequired => println!("{}", task.question().unwrap_or_default()),
        TaskState::Failed => println!("{}", task.error().unwrap_or_default()),
        // still "working" after 30s — poll it
        _ => task = client.task("invoice-classifier", &task.id, 20).await?,
    }

    // Continue a conversation
    if task.state() == TaskState::InputRequired {
        let answer = CallOptions::new()
            .text("It's a recurring SaaS charge, category: software")
            .context_id(task.context_id())
            .wait(30);
        task = client.call("invoice-classifier", answer).await?;
    }

    // Read or cancel a task (the callee by name or by id)
    let task = client.task("invoice-classifier", &task.id, 10).await?;
    client.cancel("invoice-classifier", &task.id).await?; // a finished task comes back unchanged
    Ok(())
}
