//! [`LogCapture`]: every line the gateway logs in a test process, kept to grep.

use std::sync::Arc;

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
