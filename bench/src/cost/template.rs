//! What `infra/template.yaml` configures that the bill depends on: the functions' memory (for
//! Lambda's GB-seconds) and the push worker's SQS batch size.

/// What the template configures: every function's memory (the Globals, with no per-function
/// override found) and the push worker's SQS batch size.
pub struct Template {
    pub memory_mb: f64,
    pub batch_size: usize,
}

pub fn template() -> Template {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../infra/template.yaml");
    let text = std::fs::read_to_string(path).expect("infra/template.yaml");
    let values = |key: &str| -> Vec<String> {
        text.lines()
            .filter_map(|line| line.trim().strip_prefix(key).map(|v| v.trim().to_owned()))
            .collect()
    };
    let memory = values("MemorySize:");
    assert_eq!(
        memory.len(),
        1,
        "one MemorySize (the Globals) expected in the template, found {memory:?}: the model \
         assumes every function runs at the same memory"
    );
    let batch = values("BatchSize:");
    Template {
        memory_mb: memory[0].parse().expect("MemorySize"),
        batch_size: batch
            .first()
            .map_or(10, |size| size.parse().expect("BatchSize")),
    }
}
