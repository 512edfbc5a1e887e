//! Order statistics of timed samples, for the benchmarks.

use std::time::Duration;

/// The sample at `fraction` of the way through `sorted` (0.5: the median, 0.95: the p95),
/// rounded to the nearest sample. `sorted` must not be empty.
pub fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// The median of `samples` (the upper one of an even count). `samples` must not be empty.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    percentile(&samples, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|v| Duration::from_millis(*v)).collect()
    }

    #[test]
    fn the_median_is_the_middle_sample_or_the_upper_of_two() {
        assert_eq!(median(ms(&[30, 10, 20])), Duration::from_millis(20));
        assert_eq!(median(ms(&[40, 10, 30, 20])), Duration::from_millis(30));
        assert_eq!(median(ms(&[7])), Duration::from_millis(7));
    }

    #[test]
    fn a_percentile_is_the_nearest_sample() {
        let sorted = ms(&(1..=20).collect::<Vec<u64>>());
        assert_eq!(percentile(&sorted, 0.95), Duration::from_millis(19));
        assert_eq!(percentile(&sorted, 1.0), Duration::from_millis(20));
        assert_eq!(percentile(&sorted, 0.0), Duration::from_millis(1));
    }
}
