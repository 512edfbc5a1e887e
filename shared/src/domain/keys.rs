//! API keys: opaque random strings with a readable prefix, shown once and stored only as a hash.
//!
//! A key carries 256 random bits, so a plain SHA-256 is a sound one-way store for it: there is
//! nothing to brute-force that a slow hash would protect.

use sha2::{Digest, Sha256};

/// The readable prefix of each kind of key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Operator,
    Admin,
    Member,
    Viewer,
    Agent,
}

impl KeyKind {
    pub fn prefix(self) -> &'static str {
        match self {
            KeyKind::Operator => "fb_op_",
            KeyKind::Admin => "fb_adm_",
            KeyKind::Member => "fb_mem_",
            KeyKind::Viewer => "fb_view_",
            KeyKind::Agent => "fb_agt_",
        }
    }
}

/// Makes a new key of `kind`. Fails only if the operating system has no randomness to give.
pub fn generate(kind: KeyKind) -> Result<String, getrandom::Error> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret)?;
    Ok(format!("{}{}", kind.prefix(), hex::encode(secret)))
}

/// The stored form of a key: hex SHA-256 of the whole key, prefix included.
pub fn hash(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// Compares two hashes without an early exit, so timing does not reveal a matching prefix.
pub fn same_hash(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_prefixed_random_and_hash_one_way() {
        let a = generate(KeyKind::Agent).unwrap();
        let b = generate(KeyKind::Agent).unwrap();
        assert!(a.starts_with("fb_agt_") && a.len() == "fb_agt_".len() + 64);
        assert_ne!(a, b);
        assert_eq!(hash(&a), hash(&a));
        assert_ne!(hash(&a), hash(&b));
        assert!(!hash(&a).contains(&a[7..]));
        assert!(same_hash(&hash(&a), &hash(&a)));
        assert!(!same_hash(&hash(&a), &hash(&b)));
    }
}
