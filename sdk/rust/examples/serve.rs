//! The serving docs' pull sample, in Rust: serve tasks until stopped, then finish one by hand.

use forgebench_sdk::{Client, ServeOptions, Task, TaskReply};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
#[error("cannot classify {0}")]
struct ClassificationError(String);

async fn classify(
    invoice_id: &str,
    _parent_call_id: Option<&str>,
) -> Result<String, ClassificationError> {
    match invoice_id {
        "" => Err(ClassificationError(invoice_id.to_owned())),
        _ => Ok("software".to_owned()),
    }
}

async fn handle(task: Task) -> TaskReply {
    let Some(invoice_id) = task
        .data()
        .get("invoice_id")
        .and_then(|id| id.as_str())
        .map(str::to_owned)
    else {
        return task.ask("which invoice_id should I classify?");
    };
    match classify(&invoice_id, task.call_id()).await {
        Ok(category) => task.done().data(json!({ "category": category })),
        Err(error) => task.fail(error.to_string()),
    }
}

#[tokio::main]
async fn main() -> forgebench_sdk::Result<()> {
    let key = std::env::var("CALLEE_AGENT_KEY").unwrap_or_default();
    let client = Client::new(key, "https://api.forgebench.ai")?;

    // blocks; returns the number of tasks handled
    let handled = client.serve(handle, ServeOptions::default()).await?;
    println!("handled {handled} tasks");

    // Finishing a claimed task manually
    if let Some(task) = client.next_task(20).await? {
        let reply = task.done().text("done"); // or task.ask(...) / task.fail(...)
        client.reply(&task.id, reply).await?;
    }
    Ok(())
}
