//! Signing keys: what each one signs, and when a rotated-out key may leave the published set.

use std::time::Duration;

use time::OffsetDateTime;

use super::clock;

/// What a signing key signs. Each purpose has its own keys, its own active key and its own KMS
/// encryption context, so IAM grants a function one purpose without the other, and a signature
/// made for one use is never a valid signature for the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyPurpose {
    /// Agent cards (a detached JWS naming its `kid`).
    Cards,
    /// Push deliveries (Standard Webhooks `v1a` signatures).
    Webhooks,
}

impl KeyPurpose {
    pub const ALL: [KeyPurpose; 2] = [KeyPurpose::Cards, KeyPurpose::Webhooks];

    /// The name of the purpose: the KMS encryption context's `purpose`, which IAM conditions
    /// match, and the `purpose` member of the key's JWK.
    pub fn name(self) -> &'static str {
        match self {
            KeyPurpose::Cards => "card-signing",
            KeyPurpose::Webhooks => "webhook-signing",
        }
    }

    pub fn parse(text: &str) -> Option<KeyPurpose> {
        KeyPurpose::ALL
            .into_iter()
            .find(|purpose| purpose.name() == text)
    }
}

/// Added to the cache lifetime before a rotated-out key may be retired, for the clocks of
/// different machines.
pub const CLOCK_MARGIN: Duration = Duration::from_secs(2);

/// Why a key may not be retired now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetireRefusal {
    /// It is the active key of its purpose (rotate first).
    Active,
    /// Warm processes may still sign with it until this moment.
    StillCached { until: String },
}

/// Whether a key that is not the active one may be retired at `now`. A process keeps the
/// active key it opened for up to `lifetime` before looking at the store again, so a key
/// replaced at `replaced_at` (its successor's creation) may still sign until `lifetime` (and
/// [`CLOCK_MARGIN`]) later; retiring it before then would publish signatures nobody can verify.
/// `replaced_at` is `None` for the newest key, which is the active one.
pub fn may_retire(
    replaced_at: Option<&str>,
    now: OffsetDateTime,
    lifetime: Duration,
) -> Result<(), RetireRefusal> {
    let replaced_at = replaced_at
        .and_then(clock::parse)
        .ok_or(RetireRefusal::Active)?;
    let until = replaced_at + lifetime + CLOCK_MARGIN;
    if now < until {
        return Err(RetireRefusal::StillCached {
            until: clock::format(until).into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_purpose_has_its_own_name_and_parses_back() {
        assert_eq!(KeyPurpose::Cards.name(), "card-signing");
        assert_eq!(KeyPurpose::Webhooks.name(), "webhook-signing");
        for purpose in KeyPurpose::ALL {
            assert_eq!(KeyPurpose::parse(purpose.name()), Some(purpose));
        }
        assert_eq!(KeyPurpose::parse("endpoint-secret"), None);
    }

    #[test]
    fn a_replaced_key_is_retired_only_after_every_cache_let_go_of_it() {
        let replaced = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        let lifetime = Duration::from_secs(300);
        let at = |seconds: i64| replaced + time::Duration::seconds(seconds);
        let text = clock::format(replaced);
        assert_eq!(
            may_retire(None, at(10_000), lifetime),
            Err(RetireRefusal::Active)
        );
        assert!(matches!(
            may_retire(Some(&text), at(301), lifetime),
            Err(RetireRefusal::StillCached { .. })
        ));
        assert_eq!(may_retire(Some(&text), at(302), lifetime), Ok(()));
    }
}
