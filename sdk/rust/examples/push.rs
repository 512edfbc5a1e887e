//! One handler, pulled or pushed. `cargo run --example push -- pull` serves the agent's tasks by
//! claiming them (`Client::serve`); without `pull` it listens on `PORT` (default 8080) as the
//! agent's push endpoint (`PushEndpoint`), whose URL as saved on the agent
//! (`PUT /v1/agents/{agent}/endpoint`) is `PUSH_ENDPOINT_URL`. `FORGEBENCH_URL` and
//! `FORGEBENCH_API_KEY` (the agent's key) configure the client either way.

use std::sync::Arc;

use forgebench_sdk::{Client, Part, PushEndpoint, PushOptions, ServeOptions, Task, TaskReply};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use serde_json::json;

/// The largest delivery read: the gateway's messages are bounded well below it.
const MAX_BODY_BYTES: usize = 8 << 20;

async fn handle(task: Task) -> TaskReply {
    // The caller's newest message: its answer to a question (the last `user` message of the
    // history), else the opening one. The task is the same pulled or pushed.
    let newest = task
        .history
        .iter()
        .flatten()
        .rev()
        .find(|message| message.role == "user")
        .or(task.message());
    let invoice_id = newest.and_then(|message| {
        message.parts.iter().find_map(|part| match part {
            Part::Data(data) => data.get("invoice_id")?.as_str(),
            _ => None,
        })
    });
    match invoice_id {
        None => task.ask("which invoice_id should I classify?"),
        Some(invoice_id) => task
            .done()
            .data(json!({ "category": "software", "invoice_id": invoice_id })),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = Client::from_env()?;
    if std::env::args().nth(1).as_deref() == Some("pull") {
        let handled = client.serve(handle, ServeOptions::default()).await?;
        println!("handled {handled} tasks");
        return Ok(());
    }

    let url = std::env::var("PUSH_ENDPOINT_URL")?;
    let options = PushOptions::for_agent(url, client).await?;
    let endpoint = Arc::new(PushEndpoint::new(handle, options));
    let port = std::env::var("PORT").unwrap_or_else(|_| "8080".into());
    let listener = tokio::net::TcpListener::bind(format!("0.0.0.0:{port}")).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let endpoint = Arc::clone(&endpoint);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let endpoint = Arc::clone(&endpoint);
                async move {
                    let (parts, body) = request.into_parts();
                    let response = match Limited::new(body, MAX_BODY_BYTES).collect().await {
                        Ok(body) => {
                            let request = hyper::Request::from_parts(parts, body.to_bytes());
                            endpoint.handle(request).await
                        }
                        Err(_) => {
                            let mut response = hyper::Response::new(String::new());
                            *response.status_mut() = hyper::StatusCode::PAYLOAD_TOO_LARGE;
                            response
                        }
                    };
                    Ok::<_, std::convert::Infallible>(
                        response.map(|body| Full::new(Bytes::from(body))),
                    )
                }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            if let Err(error) = connection.await {
                eprintln!("push endpoint: {error}");
            }
        });
    }
}
