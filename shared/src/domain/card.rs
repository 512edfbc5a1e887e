//! A2A 1.0 agent cards, generated from an agent's live state, and their detached JWS signature.

use serde_json::{json, Map, Value};

use super::jcs::canonicalize;
use super::{Agent, Invalid};

/// A tool binding of an agent: becomes one skill on its card.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
}

/// The most tools an agent may have: 64 skills keep a card, and a page of the registry, well
/// inside a response.
pub const MAX_TOOLS_PER_AGENT: usize = 64;

/// Validates a tool name: `[a-z0-9][a-z0-9_.-]{0,63}`.
pub fn parse_tool_name(name: &str) -> Result<String, Invalid> {
    let bytes = name.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= 64
        && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        && bytes.iter().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'.' | b'-')
        });
    if ok {
        Ok(name.to_owned())
    } else {
        Err(Invalid::new("tool names match [a-z0-9][a-z0-9_.-]{0,63}"))
    }
}

/// Drops empty strings, arrays and objects (and nulls), recursively: A2A verifiers strip them
/// before canonicalizing, so a card that carried one would not verify there.
pub fn prune(value: Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::String(text) if text.is_empty() => None,
        Value::Array(items) => {
            let items: Vec<Value> = items.into_iter().filter_map(prune).collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        Value::Object(map) => {
            let map: Map<String, Value> = map
                .into_iter()
                .filter_map(|(key, value)| prune(value).map(|value| (key, value)))
                .collect();
            (!map.is_empty()).then_some(Value::Object(map))
        }
        other => Some(other),
    }
}

/// The deployed API's own base URL, `https://{api_id}.execute-api.{region}.{suffix}/{stage}`,
/// from the API id and stage API Gateway puts in a request's context (which no client can set).
/// `None` when a part is missing or not what API Gateway issues, so a card never names a host
/// pieced together from unexpected text.
pub fn execute_api_url(api_id: &str, region: &str, stage: &str) -> Option<String> {
    let word = |text: &str, extra: &[u8]| {
        !text.is_empty()
            && text.len() <= 64
            && text
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || extra.contains(&b))
    };
    let stage_ok = !stage.is_empty()
        && stage.len() <= 128
        && stage
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
    if !word(api_id, &[]) || !word(region, b"-") || !stage_ok {
        return None;
    }
    // China regions live under their own partition's domain.
    let suffix = if region.starts_with("cn-") {
        "amazonaws.com.cn"
    } else {
        "amazonaws.com"
    };
    Some(format!(
        "https://{api_id}.execute-api.{region}.{suffix}/{stage}"
    ))
}

/// The unsigned card of `agent`, reachable only through the gateway at `base_url`.
pub fn card(agent: &Agent, tools: &[Tool], base_url: &str) -> Value {
    let url = format!(
        "{}/v1/agents/{}/tasks",
        base_url.trim_end_matches('/'),
        agent.id
    );
    let skills: Vec<Value> = tools
        .iter()
        .map(|tool| {
            json!({
                "id": tool.name,
                "name": tool.name,
                "description": tool.description,
                "tags": tool.tags,
            })
        })
        .collect();
    let description = agent
        .description
        .clone()
        .filter(|description| !description.is_empty())
        .unwrap_or_else(|| format!("Forgebench agent {}", agent.name));
    let card = json!({
        "name": agent.name,
        "description": description,
        "version": agent.version.to_string(),
        "url": url,
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ],
        "provider": {"organization": "Forgebench", "url": base_url},
        "capabilities": {"streaming": false, "pushNotifications": false},
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "securitySchemes": {
            "forgebenchAgentKey": {
                "httpAuthSecurityScheme": {
                    "scheme": "Bearer",
                    "description": "A Forgebench agent key bound to this agent",
                }
            }
        },
        "skills": skills,
    });
    prune(card).unwrap_or_default()
}

fn base64url(bytes: &[u8]) -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The JWS signing input of a card: `protected + "." + base64url(JCS(card without signatures))`.
pub fn signing_input(protected: &str, card: &Value) -> String {
    let mut unsigned = card.clone();
    if let Some(object) = unsigned.as_object_mut() {
        object.remove("signatures");
    }
    format!(
        "{protected}.{}",
        base64url(canonicalize(&unsigned).as_bytes())
    )
}

/// Signs `card` with `key`, named `kid`, adding `signatures: [{protected, signature}]`.
pub fn sign(mut card: Value, kid: &str, key: &ed25519_dalek::SigningKey) -> Value {
    use ed25519_dalek::Signer;
    let header = json!({"alg": "EdDSA", "typ": "JOSE", "kid": kid});
    let protected = base64url(canonicalize(&header).as_bytes());
    let signature = key.sign(signing_input(&protected, &card).as_bytes());
    if let Some(object) = card.as_object_mut() {
        object.insert(
            "signatures".into(),
            json!([{"protected": protected, "signature": base64url(&signature.to_bytes())}]),
        );
    }
    card
}

/// The JWK of a public key, with the `purpose` it signs for (`card-signing`,
/// `webhook-signing`): a member verifiers that do not know it ignore (RFC 7517, section 4),
/// and by which a push receiver picks the keys that sign deliveries.
pub fn jwk(kid: &str, public: &ed25519_dalek::VerifyingKey, purpose: &str) -> Value {
    json!({"kty": "OKP", "crv": "Ed25519", "x": base64url(public.as_bytes()), "kid": kid, "alg": "EdDSA", "use": "sig", "purpose": purpose})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::AgentStatus;

    fn agent(description: Option<&str>) -> Agent {
        Agent {
            id: "706608c0-4160-452a-86ac-ded1186326ac".into(),
            tenant_id: "t".into(),
            name: "invoice-classifier".into(),
            description: description.map(Into::into),
            owner_member_id: None,
            status: AgentStatus::Active,
            endpoint: Some(json!({"url": "https://internal.example.com/a2a"})),
            sealed_secret: None,
            claim_timeout_seconds: 900,
            created_at: String::new(),
            updated_at: String::new(),
            version: 3,
        }
    }

    #[test]
    fn the_card_points_at_the_gate_and_never_at_the_agent() {
        let card = card(
            &agent(Some("Classifies invoices")),
            &[],
            "https://api.forgebench.ai",
        );
        let url = "https://api.forgebench.ai/v1/agents/706608c0-4160-452a-86ac-ded1186326ac/tasks";
        assert_eq!(card["url"], url);
        assert_eq!(card["supportedInterfaces"][0]["url"], url);
        assert!(!card.to_string().contains("internal.example.com"));
    }

    #[test]
    fn the_api_url_comes_only_from_well_formed_context_values() {
        assert_eq!(
            execute_api_url("a1b2c3d4e5", "eu-west-1", "prod").as_deref(),
            Some("https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/prod")
        );
        assert_eq!(
            execute_api_url("a1b2c3d4e5", "cn-north-1", "prod").as_deref(),
            Some("https://a1b2c3d4e5.execute-api.cn-north-1.amazonaws.com.cn/prod")
        );
        for (api, region, stage) in [
            ("", "eu-west-1", "prod"),
            ("evil.test/x", "eu-west-1", "prod"),
            ("a1b2", "eu-west-1", ""),
            ("a1b2", "eu-west-1", "prod/../x"),
            ("a1b2", "evil.test#", "prod"),
        ] {
            assert_eq!(
                execute_api_url(api, region, stage),
                None,
                "{api} {region} {stage}"
            );
        }
    }

    #[test]
    fn a_card_carries_no_empty_string_array_or_object() {
        let tools = [Tool {
            name: "lookup".into(),
            description: String::new(),
            tags: vec![],
        }];
        let card = card(&agent(Some("")), &tools, "http://localhost");
        fn check(value: &Value) {
            match value {
                Value::String(text) => assert!(!text.is_empty()),
                Value::Array(items) => {
                    assert!(!items.is_empty());
                    items.iter().for_each(check);
                }
                Value::Object(map) => {
                    assert!(!map.is_empty());
                    map.values().for_each(check);
                }
                Value::Null => panic!("null in a card"),
                _ => {}
            }
        }
        check(&card);
        assert_eq!(card["description"], "Forgebench agent invoice-classifier");
        assert_eq!(card["skills"][0], json!({"id": "lookup", "name": "lookup"}));
        let no_tools = super::card(&agent(None), &[], "http://localhost");
        assert!(no_tools.get("skills").is_none());
    }

    #[test]
    fn a_signature_verifies_and_a_tampered_card_does_not() {
        use ed25519_dalek::Verifier;
        let key = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
        let signed = sign(card(&agent(None), &[], "http://localhost"), "k1", &key);
        let protected = signed["signatures"][0]["protected"].as_str().unwrap();
        let signature_bytes = {
            use base64::Engine;
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(signed["signatures"][0]["signature"].as_str().unwrap())
                .unwrap()
        };
        let signature = ed25519_dalek::Signature::from_slice(&signature_bytes).unwrap();
        let public = key.verifying_key();
        assert!(public
            .verify(signing_input(protected, &signed).as_bytes(), &signature)
            .is_ok());
        let mut tampered = signed.clone();
        tampered["url"] = json!("https://evil.example.com/tasks");
        assert!(public
            .verify(signing_input(protected, &tampered).as_bytes(), &signature)
            .is_err());
    }
}
