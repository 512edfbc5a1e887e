//! Timestamps. Every stored time is RFC 3339 UTC with exactly six fractional digits, so that the
//! strings sort in time order (sort keys and index keys rely on that).

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::OffsetDateTime;

/// A moment as the gateway stores and shows it: fixed-width RFC 3339 UTC
/// (`2026-11-29T20:06:15.123456Z`), so timestamps compare (and sort) in time order as text. Made
/// by [`format`] and the functions below; read back from the store as the text it wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(String);

impl Timestamp {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<String> for Timestamp {
    fn from(stored: String) -> Timestamp {
        Timestamp(stored)
    }
}

impl From<&str> for Timestamp {
    fn from(stored: &str) -> Timestamp {
        Timestamp(stored.to_owned())
    }
}

impl From<Timestamp> for String {
    fn from(at: Timestamp) -> String {
        at.0
    }
}

impl Deref for Timestamp {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Timestamp {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl PartialEq<str> for Timestamp {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Timestamp {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// Formats a moment as fixed-width RFC 3339 (`2026-11-29T20:06:15.123456Z`).
pub fn format(at: OffsetDateTime) -> Timestamp {
    let fixed =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z");
    Timestamp(
        at.to_offset(time::UtcOffset::UTC)
            .format(&fixed)
            .unwrap_or_else(|_| at.unix_timestamp().to_string()),
    )
}

/// A stored moment as an HTTP date (RFC 9110's IMF-fixdate: `Fri, 04 Dec 2026 14:15:00 GMT`).
pub fn http_date(text: &str) -> Option<String> {
    let fixdate = format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    parse(text)?
        .to_offset(time::UtcOffset::UTC)
        .format(&fixdate)
        .ok()
}

/// The current moment, formatted.
pub fn now() -> Timestamp {
    format(OffsetDateTime::now_utc())
}

/// Parses any RFC 3339 moment (clients may send other widths or offsets).
pub fn parse(text: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(text, &Rfc3339).ok()
}

/// How long before `now` the stored moment `text` was (zero when it cannot be read, or when a
/// clock ahead of `now` wrote a later one).
pub fn elapsed_since(text: &str, now: OffsetDateTime) -> std::time::Duration {
    parse(text)
        .and_then(|then| std::time::Duration::try_from(now - then).ok())
        .unwrap_or_default()
}

/// Seconds since the Unix epoch now (the form DynamoDB's time to live reads).
pub fn unix_now() -> u64 {
    OffsetDateTime::now_utc().unix_timestamp().max(0) as u64
}

/// Milliseconds since the Unix epoch now.
pub fn unix_now_ms() -> u64 {
    u64::try_from(OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000).unwrap_or(0)
}

/// A stored moment in milliseconds since the Unix epoch; `None` for text that is not a moment.
pub fn unix_ms(text: &str) -> Option<u64> {
    parse(text).and_then(|at| u64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok())
}

/// A moment in seconds since the Unix epoch, formatted.
pub fn from_unix(seconds: u64) -> Timestamp {
    let seconds = i64::try_from(seconds).unwrap_or(i64::MAX);
    OffsetDateTime::from_unix_timestamp(seconds)
        .map_or_else(|_| Timestamp(seconds.to_string()), format)
}

/// The moment `seconds` ago, formatted.
pub fn ago(seconds: u64) -> Timestamp {
    format(OffsetDateTime::now_utc() - time::Duration::seconds(seconds as i64))
}

/// The moment `seconds` from now, formatted.
pub fn after(seconds: u64) -> Timestamp {
    format(OffsetDateTime::now_utc() + time::Duration::seconds(seconds as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moment_reads_as_an_http_date() {
        assert_eq!(
            http_date("2026-12-04T09:05:07.123456Z").as_deref(),
            Some("Fri, 04 Dec 2026 09:05:07 GMT")
        );
        assert_eq!(http_date("yesterday"), None);
    }

    #[test]
    fn formatted_moments_sort_in_time_order() {
        let early = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        let later = early + time::Duration::microseconds(1);
        let much_later = early + time::Duration::days(400);
        let (a, b, c) = (format(early), format(later), format(much_later));
        assert!(a < b && b < c, "{a} {b} {c}");
        assert_eq!(a.len(), b.len());
        assert_eq!(parse(&a), Some(early));
    }
}
