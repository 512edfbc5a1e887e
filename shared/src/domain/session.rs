//! Console sessions: a member key exchanged for a short-lived token the browser keeps in an
//! `HttpOnly` cookie, so the key itself never stays in the page or in web storage.
//!
//! The token is 256 random bits, stored only as its SHA-256 (as keys are). Each change made with
//! the cookie (any method but `GET` and `HEAD`) must also carry the session's CSRF token in
//! `X-CSRF-Token`: a keyed digest of the session token that the page learns from the sign-in
//! answer. Another site can make the browser send the cookie (`SameSite=Strict` already stops
//! that in current browsers) but can neither read the cookie nor the answer that carries the
//! CSRF token, so it cannot forge the header.

use cookie::{Cookie, SameSite};
use sha2::{Digest, Sha256};

use super::keys;

/// The cookie that carries the session token. The `__Host-` prefix makes the browser refuse it
/// unless it is `Secure`, has `Path=/` and no `Domain`: no other host or path can set or
/// shadow it.
pub const COOKIE_NAME: &str = "__Host-forgebench_session";

/// The header that carries the CSRF token on a change made with the session cookie.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The readable prefix of a session token.
const TOKEN_PREFIX: &str = "fb_ses_";

/// Makes a new session token. Fails only if the operating system has no randomness to give.
pub fn generate() -> Result<String, getrandom::Error> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret)?;
    Ok(format!("{TOKEN_PREFIX}{}", hex::encode(secret)))
}

/// The stored form of a session token (as a key's).
pub fn hash(token: &str) -> String {
    keys::hash(token)
}

/// The CSRF token of a session: a digest of its token under a label of its own, so it says
/// nothing about the token, nor about its stored hash.
pub fn csrf_token(token: &str) -> String {
    let mut digest = Sha256::new();
    digest.update(b"forgebench console csrf\0");
    digest.update(token.as_bytes());
    hex::encode(digest.finalize())
}

/// The session token among the values of a request's `Cookie` headers, if it carries one.
pub fn token_of<'a>(cookie_headers: impl IntoIterator<Item = &'a str>) -> Option<String> {
    cookie_headers
        .into_iter()
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|cookie| cookie.name() == COOKIE_NAME && cookie.value().starts_with(TOKEN_PREFIX))
        .map(|cookie| cookie.value().to_owned())
}

/// Whether a request of `method` changes something, and so needs the CSRF token with the
/// cookie.
pub fn is_change(method: &str) -> bool {
    !matches!(method, "GET" | "HEAD" | "OPTIONS")
}

/// Whether the `X-CSRF-Token` a change made with the session `token` sent is that session's.
pub fn csrf_holds(token: &str, sent: Option<&str>) -> bool {
    sent.is_some_and(|sent| keys::same_hash(sent.trim(), &csrf_token(token)))
}

/// The `Set-Cookie` value that gives the browser the session for `max_age_seconds`.
pub fn set_cookie(token: &str, max_age_seconds: u64) -> String {
    Cookie::build((COOKIE_NAME, token))
        .http_only(true)
        .secure(true)
        .same_site(SameSite::Strict)
        .path("/")
        .max_age(cookie::time::Duration::seconds(
            i64::try_from(max_age_seconds).unwrap_or(i64::MAX),
        ))
        .build()
        .to_string()
}

/// The `Set-Cookie` value that makes the browser drop the session.
pub fn clear_cookie() -> String {
    Cookie::build((COOKIE_NAME, ""))
        .http_only(true)
        .secure(true)
        .same_site(SameSite::Strict)
        .path("/")
        .max_age(cookie::time::Duration::ZERO)
        .build()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_random_prefixed_and_stored_as_a_hash() {
        let a = generate().unwrap();
        let b = generate().unwrap();
        assert!(a.starts_with("fb_ses_") && a.len() == "fb_ses_".len() + 64);
        assert_ne!(a, b);
        assert_ne!(hash(&a), a);
        assert_ne!(csrf_token(&a), hash(&a));
        assert_ne!(csrf_token(&a), csrf_token(&b));
    }

    #[test]
    fn the_token_is_read_from_any_cookie_header_among_others() {
        let token = generate().unwrap();
        let second = format!("a=b; {COOKIE_NAME}={token}");
        let found = token_of(["theme=dark; other=1", second.as_str()]);
        assert_eq!(found.as_deref(), Some(token.as_str()));
        assert_eq!(token_of(["forgebench_session=x"]), None);
        let not_a_token = format!("{COOKIE_NAME}=not-a-token");
        assert_eq!(token_of([not_a_token.as_str()]), None);
        assert_eq!(token_of([]), None);
    }

    #[test]
    fn a_change_needs_the_sessions_own_csrf_token() {
        let token = generate().unwrap();
        let other = generate().unwrap();
        assert!(csrf_holds(&token, Some(&csrf_token(&token))));
        assert!(!csrf_holds(&token, Some(&csrf_token(&other))));
        assert!(!csrf_holds(&token, Some(&token)));
        assert!(!csrf_holds(&token, None));
        assert!(is_change("POST") && is_change("DELETE") && is_change("PATCH"));
        assert!(!is_change("GET") && !is_change("HEAD"));
    }

    #[test]
    fn the_cookie_is_host_only_http_only_secure_and_strict() {
        let set = set_cookie("fb_ses_x", 3600);
        for attribute in [
            "HttpOnly",
            "Secure",
            "SameSite=Strict",
            "Path=/",
            "Max-Age=3600",
        ] {
            assert!(set.contains(attribute), "{set} lacks {attribute}");
        }
        assert!(set.starts_with("__Host-forgebench_session=fb_ses_x"));
        assert!(!set.contains("Domain"));
        let clear = clear_cookie();
        assert!(
            clear.contains("Max-Age=0") && clear.contains("Secure"),
            "{clear}"
        );
    }
}
