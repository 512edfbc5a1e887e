//! The TCP [`Proxy`] a test puts in front of DynamoDB Local, to cut the gateway off its store
//! and restore it.

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

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
