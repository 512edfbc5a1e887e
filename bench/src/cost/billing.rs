//! Billing arithmetic over what was recorded: AWS requests by service and operation, median
//! durations; DynamoDB's units (as reported, as billed, by table and index) are the shared
//! `capacity` module's.

use std::collections::BTreeMap;
use std::time::Duration;

use forgebench_tests::samples::median;
use forgebench_tests::Recorder;

/// Requests by `service:operation` from the recorder's log since the last take.
pub fn take_requests(recorder: &Recorder) -> BTreeMap<String, usize> {
    let mut calls = BTreeMap::new();
    for (operation, actions) in recorder.take_requests() {
        let service = actions
            .first()
            .and_then(|action| action.split_once(':'))
            .map_or("dynamodb", |(service, _)| service)
            .to_owned();
        *calls.entry(format!("{service}:{operation}")).or_default() += 1;
    }
    calls
}

/// The median of `samples` in milliseconds; 0 when there are none.
pub fn p50_ms(samples: &[Duration]) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    median(samples.to_vec()).as_secs_f64() * 1e3
}
