//! A bearer token read as a JWT: what it claims before it is checked (its issuer and audience,
//! which find the tenant that trusts it), and the checks of RFC 7519 and OpenID Connect against
//! a key of its issuer.

use base64::Engine;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

/// The largest token read: far above any provider's tokens, far below the request limits.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// How far `exp`, `nbf` and `iat` may be off the gateway's clock.
pub const CLOCK_SKEW_SECONDS: u64 = 60;
/// The signature algorithms taken: asymmetric only, so no key an issuer publishes can sign.
pub const ALGORITHMS: [Algorithm; 3] = [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];

/// Why a token was not taken. The caller is told only "invalid token"; the reason is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenRefusal {
    TooLarge,
    Malformed,
    Algorithm,
    UntrustedIssuer,
    UnknownKey,
    Signature,
    Expired,
    NotYetValid,
    IssuedInFuture,
    Audience,
    Issuer,
    UnknownSubject,
    IssuerUnreachable,
    PrincipalGone,
}

impl TokenRefusal {
    /// The reason as the logs name it.
    pub fn reason(self) -> &'static str {
        match self {
            TokenRefusal::TooLarge => "too_large",
            TokenRefusal::Malformed => "malformed",
            TokenRefusal::Algorithm => "algorithm",
            TokenRefusal::UntrustedIssuer => "untrusted_issuer",
            TokenRefusal::UnknownKey => "unknown_key",
            TokenRefusal::Signature => "signature",
            TokenRefusal::Expired => "expired",
            TokenRefusal::NotYetValid => "not_yet_valid",
            TokenRefusal::IssuedInFuture => "issued_in_future",
            TokenRefusal::Audience => "audience",
            TokenRefusal::Issuer => "issuer",
            TokenRefusal::UnknownSubject => "unknown_subject",
            TokenRefusal::IssuerUnreachable => "issuer_unreachable",
            TokenRefusal::PrincipalGone => "principal_gone",
        }
    }
}

/// What a token says of itself, before anything is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unchecked {
    pub algorithm: Algorithm,
    pub key_id: Option<String>,
    pub issuer: String,
    pub audiences: Vec<String>,
}

/// A token that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub subject: String,
    /// `exp`, in seconds since the epoch.
    pub expires_at: u64,
}

/// Whether a credential has the shape of a JWT (three base64url parts, the first a JSON
/// object): a key of the gateway never does.
pub fn looks_like_jwt(credential: &str) -> bool {
    credential.starts_with("eyJ") && credential.split('.').count() == 3
}

/// `aud` as RFC 7519 allows it: one string or several.
#[derive(Deserialize)]
#[serde(untagged)]
enum Audiences {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
struct UncheckedClaims {
    iss: Option<String>,
    aud: Option<Audiences>,
}

#[derive(Deserialize)]
struct CheckedClaims {
    sub: String,
    exp: u64,
    iat: Option<u64>,
}

/// Reads what a token says of itself: its algorithm (one of [`ALGORITHMS`]), key id, issuer
/// and audiences. Nothing read here is trusted until [`check`] passes.
pub fn read_unchecked(token: &str) -> Result<Unchecked, TokenRefusal> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(TokenRefusal::TooLarge);
    }
    let header_part = token.split('.').next().ok_or(TokenRefusal::Malformed)?;
    let header: serde_json::Value = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header_part)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or(TokenRefusal::Malformed)?;
    let named = header.get("alg").and_then(serde_json::Value::as_str);
    let algorithm = ALGORITHMS
        .into_iter()
        .find(|algorithm| named == Some(algorithm_name(*algorithm)))
        .ok_or(TokenRefusal::Algorithm)?;
    let key_id = header
        .get("kid")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned);
    let claims: UncheckedClaims = jsonwebtoken::dangerous::insecure_decode_claims(token)
        .map_err(|_| TokenRefusal::Malformed)?;
    let issuer = claims.iss.ok_or(TokenRefusal::Malformed)?;
    let audiences = match claims.aud {
        Some(Audiences::One(audience)) => vec![audience],
        Some(Audiences::Many(audiences)) => audiences,
        None => return Err(TokenRefusal::Audience),
    };
    Ok(Unchecked {
        algorithm,
        key_id,
        issuer,
        audiences,
    })
}

fn algorithm_name(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::RS256 => "RS256",
        Algorithm::ES256 => "ES256",
        Algorithm::EdDSA => "EdDSA",
        _ => "",
    }
}

/// Checks `token` against `key`: the signature with the algorithm it names (which the key must
/// be made for), `iss` and `aud` exactly, `exp` and `nbf` within [`CLOCK_SKEW_SECONDS`], `iat`
/// not in the future, and a subject.
pub fn check(
    token: &str,
    unchecked: &Unchecked,
    key: &Jwk,
    issuer: &str,
    audience: &str,
    now: u64,
) -> Result<Checked, TokenRefusal> {
    let algorithm = unchecked.algorithm;
    let named_for = key
        .common
        .key_algorithm
        .map(|named| named == jsonwebtoken::jwk::KeyAlgorithm::from(algorithm));
    let decoding = DecodingKey::from_jwk(key).map_err(|_| TokenRefusal::UnknownKey)?;
    if named_for == Some(false) || decoding.family() != algorithm.family() {
        return Err(TokenRefusal::Algorithm);
    }
    let mut validation = Validation::new(algorithm);
    validation.leeway = CLOCK_SKEW_SECONDS;
    validation.validate_nbf = true;
    validation.set_issuer(&[issuer]);
    validation.set_audience(&[audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let claims = jsonwebtoken::decode::<CheckedClaims>(token, &decoding, &validation)
        .map_err(|error| refusal_of(error.kind()))?
        .claims;
    if claims.iat.is_some_and(|iat| iat > now + CLOCK_SKEW_SECONDS) {
        return Err(TokenRefusal::IssuedInFuture);
    }
    if claims.sub.is_empty() {
        return Err(TokenRefusal::UnknownSubject);
    }
    Ok(Checked {
        subject: claims.sub,
        expires_at: claims.exp,
    })
}

fn refusal_of(kind: &jsonwebtoken::errors::ErrorKind) -> TokenRefusal {
    use jsonwebtoken::errors::ErrorKind;
    match kind {
        ErrorKind::InvalidSignature => TokenRefusal::Signature,
        ErrorKind::ExpiredSignature => TokenRefusal::Expired,
        ErrorKind::ImmatureSignature => TokenRefusal::NotYetValid,
        ErrorKind::InvalidAudience => TokenRefusal::Audience,
        ErrorKind::InvalidIssuer => TokenRefusal::Issuer,
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => TokenRefusal::Algorithm,
        ErrorKind::InvalidEcdsaKey
        | ErrorKind::InvalidEddsaKey
        | ErrorKind::InvalidRsaKey(_)
        | ErrorKind::InvalidKeyFormat => TokenRefusal::UnknownKey,
        _ => TokenRefusal::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(value: serde_json::Value) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
    }

    fn token(header: serde_json::Value, claims: serde_json::Value) -> String {
        format!("{}.{}.c2ln", part(header), part(claims))
    }

    #[test]
    fn only_asymmetric_algorithms_are_read() {
        let claims = serde_json::json!({"iss": "https://i.example", "aud": "gate"});
        for named in ["none", "HS256", "RS512", "PS256"] {
            let read = read_unchecked(&token(serde_json::json!({"alg": named}), claims.clone()));
            assert_eq!(read, Err(TokenRefusal::Algorithm), "{named}");
        }
        let read = read_unchecked(&token(
            serde_json::json!({"alg": "ES256", "kid": "k"}),
            claims,
        ))
        .unwrap();
        assert_eq!(read.algorithm, Algorithm::ES256);
        assert_eq!(read.key_id.as_deref(), Some("k"));
        assert_eq!(read.audiences, vec!["gate".to_owned()]);
    }

    #[test]
    fn a_token_past_the_bound_or_without_an_audience_is_refused_unread() {
        let big = "a".repeat(MAX_TOKEN_BYTES + 1);
        assert_eq!(read_unchecked(&big), Err(TokenRefusal::TooLarge));
        let claims = serde_json::json!({"iss": "https://i.example"});
        let unaudienced = token(serde_json::json!({"alg": "RS256"}), claims);
        assert_eq!(read_unchecked(&unaudienced), Err(TokenRefusal::Audience));
        assert_eq!(read_unchecked("a.b"), Err(TokenRefusal::Malformed));
    }

    #[test]
    fn several_audiences_are_read() {
        let claims = serde_json::json!({"iss": "https://i.example", "aud": ["a", "b"]});
        let read = read_unchecked(&token(serde_json::json!({"alg": "EdDSA"}), claims)).unwrap();
        assert_eq!(read.audiences, vec!["a".to_owned(), "b".to_owned()]);
    }

    #[test]
    fn a_key_is_never_told_from_a_token() {
        assert!(looks_like_jwt("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"));
        assert!(!looks_like_jwt("fb_agt_0123456789abcdef"));
        assert!(!looks_like_jwt("eyJ.only-two"));
    }
}
