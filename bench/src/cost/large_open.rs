//! One open of a large message: the write units its postings spend, which `--gate` holds to
//! the bound of one write of postings.

use forgebench_bench::capacity::billed_total;
use forgebench_tests::Options;
use serde_json::json;

use crate::gateway::{gateway, set_word_search};

/// Distinct words of the large message: three times what one write of postings may spend.
const LARGE_MESSAGE_WORDS: usize = 3 * forgebench::config::DEFAULT_INDEX_UNITS as usize;

/// The write units one open of a message of [`LARGE_MESSAGE_WORDS`] distinct words spent on its
/// postings: its open's units less those of the same open in a tenant with word search off,
/// where the same writes are made but the postings. `--gate` holds it to
/// `FORGEBENCH_INDEX_UNITS`.
pub async fn large_open() -> f64 {
    let gateway = gateway(Options {
        push_worker: false,
        ..Options::default()
    })
    .await;
    let text = (0..LARGE_MESSAGE_WORDS)
        .map(|n| format!("w{n}"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut open_units = Vec::new();
    for word_search in [true, false] {
        let pair = gateway.app.pair().await;
        set_word_search(&gateway, &pair, word_search).await;
        gateway.reset();
        let message = json!({"role": "user", "parts": [{"text": text}]});
        let opened = gateway
            .app
            .open_task(&pair.caller.key, &pair.callee.id, message, 0)
            .await;
        assert_eq!(opened.status, 200, "{}", opened.text);
        open_units.push(billed_total(&gateway.dynamodb.take()).1);
    }
    let postings = open_units[0] - open_units[1];
    println!(
        "\nOne open of a message of {LARGE_MESSAGE_WORDS} distinct words: {:.0} write units, \
         {postings:.0} of them its postings (FORGEBENCH_INDEX_UNITS: {}); the same open with \
         word search off: {:.0}.",
        open_units[0],
        forgebench::config::DEFAULT_INDEX_UNITS,
        open_units[1]
    );
    postings
}
