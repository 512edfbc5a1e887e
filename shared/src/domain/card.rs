//! A2A 1.0 agent cards, generated from an agent's live state; their A2A canonical form (the card as
//! an A2A verifier reads it); and their two detached JWS signatures.

use serde_json::{json, Map, Value};

use super::issuer::TrustedIssuer;
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

/// Drops empty strings, arrays and objects (and nulls), recursively, as an A2A verifier does to
/// a card before canonicalizing it (`false` and `0` stay).
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

/// The name of the card's one security scheme: an HTTP bearer agent key. The card's
/// `securityRequirements` names it, which is what makes an A2A client send the key at all.
pub const SECURITY_SCHEME: &str = "forgebenchAgentKey";

/// The tag of a skill whose tool has none: A2A 1.0 requires every skill to carry at least one.
pub const DEFAULT_SKILL_TAG: &str = "tool";

/// The tag of the one skill of an agent without tools, which stands for the agent itself.
pub const AGENT_SKILL_TAG: &str = "agent";

/// The unsigned card of `agent`, reachable only through the gateway at `base_url`: an A2A 1.0
/// AgentCard (every field the schema requires) plus the seed's `url`. A2A 1.0 requires at least
/// one skill: an agent without tools has one skill that stands for the agent itself (its name,
/// its description). No value is empty but the scope list of the security requirement, which
/// the A2A canonical form drops.
pub fn card(agent: &Agent, tools: &[Tool], base_url: &str) -> Value {
    let agent_url = format!("{}/v1/agents/{}", base_url.trim_end_matches('/'), agent.id);
    let description = agent
        .description
        .clone()
        .filter(|description| !description.is_empty())
        .unwrap_or_else(|| format!("Forgebench agent {}", agent.name));
    let mut skills: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let description = if tool.description.is_empty() {
                format!("Tool {}", tool.name)
            } else {
                tool.description.clone()
            };
            let tags: Vec<&str> = if tool.tags.is_empty() {
                vec![DEFAULT_SKILL_TAG]
            } else {
                tool.tags.iter().map(String::as_str).collect()
            };
            json!({"id": tool.name, "name": tool.name, "description": description, "tags": tags})
        })
        .collect();
    if skills.is_empty() {
        skills.push(
            json!({"id": agent.name, "name": agent.name, "description": description,
                           "tags": [AGENT_SKILL_TAG]}),
        );
    }
    json!({
        "name": agent.name,
        "description": description,
        "version": agent.version.to_string(),
        "url": format!("{agent_url}/tasks"),
        // In preference order: a default-configured A2A client speaks JSON-RPC only.
        "supportedInterfaces": [
            {"url": format!("{agent_url}/a2a/jsonrpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{agent_url}/a2a"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        ],
        "provider": {"organization": "Forgebench", "url": base_url},
        "capabilities": {"streaming": true, "pushNotifications": true, "extendedAgentCard": false},
        "defaultInputModes": agent.input_modes,
        "defaultOutputModes": ["text/plain", "application/json"],
        "securitySchemes": {
            SECURITY_SCHEME: {
                "httpAuthSecurityScheme": {
                    "scheme": "Bearer",
                    "description": "A Forgebench agent key (fb_agt_...) of the calling agent; the call needs a binding to this agent",
                }
            }
        },
        "securityRequirements": [{"schemes": {SECURITY_SCHEME: {"list": []}}}],
        "skills": skills,
    })
}

/// The name of the card's scheme for tokens of a trusted issuer: `openIdConnect-` and the first
/// eight characters of the issuer's id (stable while the tenant trusts it).
pub fn issuer_scheme_name(issuer: &TrustedIssuer) -> String {
    let short: String = issuer.id.chars().take(8).collect();
    format!("openIdConnect-{short}")
}

/// Declares on `card` every other way a caller may sign in: one A2A `openIdConnect` scheme per
/// issuer the agent's tenant trusts (its discovery URL; the audience to ask for in its
/// description), each a security requirement of its own beside the key's, so any one of them
/// satisfies the card.
pub fn declare_sign_in(card: &mut Value, issuers: &[TrustedIssuer]) {
    for issuer in issuers {
        let name = issuer_scheme_name(issuer);
        card["securitySchemes"][&name] = json!({
            "openIdConnectSecurityScheme": {
                "openIdConnectUrl": issuer.discovery_url(),
                "description": format!(
                    "A token of {} for audience {:?}, whose subject the tenant lists for the calling agent; the call needs a binding to this agent",
                    issuer.issuer, issuer.audience
                ),
            }
        });
        if let Some(requirements) = card["securityRequirements"].as_array_mut() {
            requirements.push(json!({"schemes": {name: {"list": []}}}));
        }
    }
}

/// The shape of a field of the A2A 1.0 schema (`lf.a2a.v1`), by its JSON (camelCase) name.
#[derive(Clone, Copy)]
enum Shape {
    /// `string`.
    Text,
    /// `optional bool`: present when set, so `false` is kept.
    Flag,
    /// `repeated string`.
    Texts,
    /// A message with these fields.
    Message(&'static [(&'static str, Shape)]),
    /// `repeated` message.
    Messages(&'static [(&'static str, Shape)]),
    /// `map<string, message>`.
    MapOf(&'static [(&'static str, Shape)]),
}

const STRING_LIST: &[(&str, Shape)] = &[("list", Shape::Texts)];
const SECURITY_REQUIREMENT: &[(&str, Shape)] = &[("schemes", Shape::MapOf(STRING_LIST))];
const AGENT_INTERFACE: &[(&str, Shape)] = &[
    ("url", Shape::Text),
    ("protocolBinding", Shape::Text),
    ("tenant", Shape::Text),
    ("protocolVersion", Shape::Text),
];
const AGENT_PROVIDER: &[(&str, Shape)] = &[("url", Shape::Text), ("organization", Shape::Text)];
/// Without `extensions`, which a card of ours never has.
const AGENT_CAPABILITIES: &[(&str, Shape)] = &[
    ("streaming", Shape::Flag),
    ("pushNotifications", Shape::Flag),
    ("extendedAgentCard", Shape::Flag),
];
const DESCRIBED: &[(&str, Shape)] = &[("description", Shape::Text)];
const HTTP_AUTH_SECURITY_SCHEME: &[(&str, Shape)] = &[
    ("description", Shape::Text),
    ("scheme", Shape::Text),
    ("bearerFormat", Shape::Text),
];
const API_KEY_SECURITY_SCHEME: &[(&str, Shape)] = &[
    ("description", Shape::Text),
    ("location", Shape::Text),
    ("name", Shape::Text),
];
const OPEN_ID_CONNECT_SECURITY_SCHEME: &[(&str, Shape)] = &[
    ("description", Shape::Text),
    ("openIdConnectUrl", Shape::Text),
];
/// A oneof; without `oauth2SecurityScheme`, which a card of ours never has.
const SECURITY_SCHEME_FIELDS: &[(&str, Shape)] = &[
    (
        "apiKeySecurityScheme",
        Shape::Message(API_KEY_SECURITY_SCHEME),
    ),
    (
        "httpAuthSecurityScheme",
        Shape::Message(HTTP_AUTH_SECURITY_SCHEME),
    ),
    (
        "openIdConnectSecurityScheme",
        Shape::Message(OPEN_ID_CONNECT_SECURITY_SCHEME),
    ),
    ("mtlsSecurityScheme", Shape::Message(DESCRIBED)),
];
const AGENT_SKILL: &[(&str, Shape)] = &[
    ("id", Shape::Text),
    ("name", Shape::Text),
    ("description", Shape::Text),
    ("tags", Shape::Texts),
    ("examples", Shape::Texts),
    ("inputModes", Shape::Texts),
    ("outputModes", Shape::Texts),
    (
        "securityRequirements",
        Shape::Messages(SECURITY_REQUIREMENT),
    ),
];
/// The AgentCard less `signatures`, which is what gets signed and never part of it.
const AGENT_CARD: &[(&str, Shape)] = &[
    ("name", Shape::Text),
    ("description", Shape::Text),
    ("supportedInterfaces", Shape::Messages(AGENT_INTERFACE)),
    ("provider", Shape::Message(AGENT_PROVIDER)),
    ("version", Shape::Text),
    ("documentationUrl", Shape::Text),
    ("capabilities", Shape::Message(AGENT_CAPABILITIES)),
    ("securitySchemes", Shape::MapOf(SECURITY_SCHEME_FIELDS)),
    (
        "securityRequirements",
        Shape::Messages(SECURITY_REQUIREMENT),
    ),
    ("defaultInputModes", Shape::Texts),
    ("defaultOutputModes", Shape::Texts),
    ("skills", Shape::Messages(AGENT_SKILL)),
    ("iconUrl", Shape::Text),
];

/// The fields of `object` that `fields` names, each kept as far as its shape allows.
fn message(object: &Map<String, Value>, fields: &[(&str, Shape)]) -> Value {
    Value::Object(
        fields
            .iter()
            .filter_map(|(name, shape)| {
                let value = schema_value(object.get(*name)?, *shape)?;
                Some(((*name).to_owned(), value))
            })
            .collect(),
    )
}

/// `value` as a field of `shape` holds it: unknown members of messages dropped, and a value of
/// another type dropped (an A2A parser would refuse it; a card of ours never has one).
fn schema_value(value: &Value, shape: Shape) -> Option<Value> {
    match (shape, value) {
        (Shape::Text, Value::String(_)) | (Shape::Flag, Value::Bool(_)) => Some(value.clone()),
        (Shape::Texts, Value::Array(items)) => Some(Value::Array(
            items
                .iter()
                .filter(|item| item.is_string())
                .cloned()
                .collect(),
        )),
        (Shape::Message(fields), Value::Object(object)) => Some(message(object, fields)),
        (Shape::Messages(fields), Value::Array(items)) => Some(Value::Array(
            items
                .iter()
                .filter_map(Value::as_object)
                .map(|object| message(object, fields))
                .collect(),
        )),
        (Shape::MapOf(fields), Value::Object(entries)) => Some(Value::Object(
            entries
                .iter()
                .filter_map(|(key, entry)| Some((key.clone(), message(entry.as_object()?, fields))))
                .collect(),
        )),
        _ => None,
    }
}

/// The card as an A2A 1.0 verifier reads it before checking a signature: parsed into the A2A
/// schema (camelCase; members it does not have, such as the seed's top-level `url`, dropped,
/// and `signatures` removed), then every empty string, list and object dropped, recursively.
/// So `skills: []` is not in it, while `false` capabilities are (they are `optional bool`s,
/// kept when set).
pub fn a2a_form(card: &Value) -> Value {
    card.as_object()
        .and_then(|object| prune(message(object, AGENT_CARD)))
        .unwrap_or_else(|| json!({}))
}

fn base64url(bytes: &[u8]) -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The JWS signing input of a card's whole-card signature:
/// `protected + "." + base64url(JCS(card without signatures))`.
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

/// The JWS signing input of a card's A2A signature:
/// `protected + "." + base64url(JCS(a2a_form(card)))`, the bytes an A2A 1.0 SDK verifier checks.
pub fn a2a_signing_input(protected: &str, card: &Value) -> String {
    format!(
        "{protected}.{}",
        base64url(canonicalize(&a2a_form(card)).as_bytes())
    )
}

/// Signs `card` with `key`, named `kid`, adding `signatures`: first the signature over the whole
/// card (RFC 8785, every field, the seed's `url` included), then the one over its A2A canonical
/// form ([`a2a_form`]), which A2A SDK verifiers check. Both carry the same protected header.
pub fn sign(mut card: Value, kid: &str, key: &ed25519_dalek::SigningKey) -> Value {
    use ed25519_dalek::Signer;
    let header = json!({"alg": "EdDSA", "typ": "JOSE", "kid": kid});
    let protected = base64url(canonicalize(&header).as_bytes());
    let signatures: Vec<Value> = [
        signing_input(&protected, &card),
        a2a_signing_input(&protected, &card),
    ]
    .iter()
    .map(|input| {
        let signature = key.sign(input.as_bytes());
        json!({"protected": protected, "signature": base64url(&signature.to_bytes())})
    })
    .collect();
    if let Some(object) = card.as_object_mut() {
        object.insert("signatures".into(), Value::Array(signatures));
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

    fn agent(description: Option<&str>) -> Agent {
        Agent {
            description: description.map(Into::into),
            endpoint: Some(json!({"url": "https://internal.example.com/a2a"})),
            input_modes: vec!["text/plain".into(), "application/json".into()],
            version: 3,
            ..Agent::sample(
                "706608c0-4160-452a-86ac-ded1186326ac",
                "t",
                "invoice-classifier",
            )
        }
    }

    fn tools() -> Vec<Tool> {
        vec![
            Tool {
                name: "classify".into(),
                description: "Classifies an invoice: ünïcødé, \"quotes\", \u{1F600}".into(),
                tags: vec!["finance".into(), "ocr".into()],
            },
            Tool {
                name: "lookup".into(),
                description: "Looks up an invoice".into(),
                tags: vec![],
            },
        ]
    }

    const BASE: &str = "https://api.forgebench.ai";
    const AGENT_URL: &str =
        "https://api.forgebench.ai/v1/agents/706608c0-4160-452a-86ac-ded1186326ac";

    fn verifies(public: &ed25519_dalek::VerifyingKey, input: &str, entry: &Value) -> bool {
        use base64::Engine;
        use ed25519_dalek::Verifier;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(entry["signature"].as_str().unwrap())
            .unwrap();
        let signature = ed25519_dalek::Signature::from_slice(&bytes).unwrap();
        public.verify(input.as_bytes(), &signature).is_ok()
    }

    #[test]
    fn the_card_points_at_the_gate_and_never_at_the_agent() {
        let card = card(&agent(Some("Classifies invoices")), &[], BASE);
        assert_eq!(card["url"], format!("{AGENT_URL}/tasks"));
        assert_eq!(
            card["supportedInterfaces"],
            json!([
                {"url": format!("{AGENT_URL}/a2a/jsonrpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": format!("{AGENT_URL}/a2a"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            ])
        );
        assert_eq!(card["provider"]["url"], BASE);
        assert!(!card.to_string().contains("internal.example.com"));
        // A trailing slash on the base makes no double slash.
        let slashed = super::card(&agent(None), &[], "https://api.forgebench.ai/");
        assert_eq!(slashed["url"], card["url"]);
        assert_eq!(slashed["supportedInterfaces"], card["supportedInterfaces"]);
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
    fn a_card_has_every_required_a2a_field_and_the_bearer_requirement() {
        for tools in [vec![], tools()] {
            let card = card(&agent(None), &tools, BASE);
            for field in [
                "name",
                "description",
                "version",
                "supportedInterfaces",
                "capabilities",
                "defaultInputModes",
                "defaultOutputModes",
                "skills",
            ] {
                assert!(card.get(field).is_some(), "{field} missing");
            }
            assert_eq!(
                card["capabilities"],
                json!({"streaming": true, "pushNotifications": true, "extendedAgentCard": false})
            );
            let scheme = &card["securitySchemes"][SECURITY_SCHEME]["httpAuthSecurityScheme"];
            assert_eq!(scheme["scheme"], "Bearer");
            assert!(!scheme["description"].as_str().unwrap().is_empty());
            assert_eq!(
                card["securityRequirements"],
                json!([{"schemes": {SECURITY_SCHEME: {"list": []}}}])
            );
        }
    }

    #[test]
    fn skills_are_always_there_and_each_has_a_description_and_a_tag() {
        let no_tools = card(&agent(None), &[], BASE);
        assert_eq!(
            no_tools["skills"],
            json!([{"id": "invoice-classifier", "name": "invoice-classifier",
                    "description": "Forgebench agent invoice-classifier", "tags": [AGENT_SKILL_TAG]}]),
            "an agent without tools has one skill, itself: A2A 1.0 requires at least one"
        );
        let untagged = [Tool {
            name: "lookup".into(),
            description: String::new(),
            tags: vec![],
        }];
        let card = card(&agent(Some("")), &untagged, BASE);
        assert_eq!(card["description"], "Forgebench agent invoice-classifier");
        assert_eq!(
            card["skills"],
            json!([{"id": "lookup", "name": "lookup", "description": "Tool lookup", "tags": [DEFAULT_SKILL_TAG]}])
        );
        // Apart from the security requirement's scopes, a card carries no empty value.
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
        let scoped = json!([{"schemes": {SECURITY_SCHEME: {"list": ["x"]}}}]);
        let mut rest = no_tools.clone();
        rest["securityRequirements"] = scoped.clone();
        check(&rest);
        let mut card = card;
        card["securityRequirements"] = scoped;
        check(&card);
    }

    #[test]
    fn the_a2a_form_keeps_only_schema_fields_without_empties() {
        let card = card(&agent(Some("Classifies invoices")), &tools(), BASE);
        let form = a2a_form(&card);
        // The seed's `url` and the empty security requirement are gone; `false` stays.
        let mut expected = card.clone();
        let object = expected.as_object_mut().unwrap();
        object.remove("url");
        object.remove("securityRequirements");
        assert_eq!(form, expected);
        assert_eq!(form["capabilities"]["streaming"], true);

        // The skill of an agent without tools is in the form like any other.
        let bare = super::card(&agent(None), &[], BASE);
        assert_eq!(a2a_form(&bare)["skills"], bare["skills"]);

        // Unknown members are dropped at every level, as are `signatures` and values of a type
        // the schema does not have; known but optional fields stay.
        let mut noisy = card.clone();
        noisy["signatures"] = json!([{"protected": "p", "signature": "s"}]);
        noisy["preferredTransport"] = json!("JSONRPC");
        noisy["supportedInterfaces"][0]["extra"] = json!("x");
        noisy["capabilities"]["extra"] = json!(true);
        noisy["skills"][0]["extra"] = json!({"a": 1});
        noisy["skills"][1]["examples"] = json!(["look up INV-1", 7]);
        noisy["securitySchemes"][SECURITY_SCHEME]["extra"] = json!("x");
        noisy["securitySchemes"][SECURITY_SCHEME]["httpAuthSecurityScheme"]["bearerFormat"] =
            json!("");
        noisy["provider"]["organization"] = json!(7);
        noisy["iconUrl"] = json!("https://example.com/icon.png");
        let mut expected = form.clone();
        expected["skills"][1]["examples"] = json!(["look up INV-1"]);
        expected["provider"] = json!({"url": BASE});
        expected["iconUrl"] = json!("https://example.com/icon.png");
        assert_eq!(a2a_form(&noisy), expected);

        // A scope list that is not empty survives the pruning.
        let mut scoped = card.clone();
        scoped["securityRequirements"][0]["schemes"][SECURITY_SCHEME]["list"] = json!(["read"]);
        assert_eq!(
            a2a_form(&scoped)["securityRequirements"],
            json!([{"schemes": {SECURITY_SCHEME: {"list": ["read"]}}}])
        );
        assert_eq!(a2a_form(&json!("not a card")), json!({}));
    }

    /// The bytes `a2a-sdk` 1.3.0 checks for this card (`parse_agent_card`, then its
    /// `_canonicalize_agent_card`), taken from the SDK once: JCS of the form, key order by UTF-16
    /// code units, non-ASCII as UTF-8, only `"` and `\` escaped here.
    #[test]
    fn the_a2a_form_canonicalizes_to_the_bytes_the_sdk_checks() {
        let card = card(&agent(Some("Classifies invoices")), &tools(), BASE);
        assert_eq!(canonicalize(&a2a_form(&card)), SDK_CANONICAL);
    }

    const SDK_CANONICAL: &str = r##"{"capabilities":{"extendedAgentCard":false,"pushNotifications":true,"streaming":true},"defaultInputModes":["text/plain","application/json"],"defaultOutputModes":["text/plain","application/json"],"description":"Classifies invoices","name":"invoice-classifier","provider":{"organization":"Forgebench","url":"https://api.forgebench.ai"},"securitySchemes":{"forgebenchAgentKey":{"httpAuthSecurityScheme":{"description":"A Forgebench agent key (fb_agt_...) of the calling agent; the call needs a binding to this agent","scheme":"Bearer"}}},"skills":[{"description":"Classifies an invoice: ünïcødé, \"quotes\", 😀","id":"classify","name":"classify","tags":["finance","ocr"]},{"description":"Looks up an invoice","id":"lookup","name":"lookup","tags":["tool"]}],"supportedInterfaces":[{"protocolBinding":"JSONRPC","protocolVersion":"1.0","url":"https://api.forgebench.ai/v1/agents/706608c0-4160-452a-86ac-ded1186326ac/a2a/jsonrpc"},{"protocolBinding":"HTTP+JSON","protocolVersion":"1.0","url":"https://api.forgebench.ai/v1/agents/706608c0-4160-452a-86ac-ded1186326ac/a2a"}],"version":"3"}"##;

    #[test]
    fn both_signatures_verify_and_a_tampered_card_fails_them() {
        let key = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
        let public = key.verifying_key();
        let signed = sign(card(&agent(None), &tools(), BASE), "k1", &key);
        let signatures = signed["signatures"].as_array().unwrap();
        assert_eq!(signatures.len(), 2);
        let protected = signatures[0]["protected"].as_str().unwrap();
        assert_eq!(signatures[1]["protected"], protected);
        let header: Value = {
            use base64::Engine;
            serde_json::from_slice(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(protected)
                    .unwrap(),
            )
            .unwrap()
        };
        assert_eq!(header, json!({"alg": "EdDSA", "typ": "JOSE", "kid": "k1"}));
        // The first covers the whole card, the second its A2A form, and neither the other.
        let (whole, a2a) = (&signatures[0], &signatures[1]);
        assert!(verifies(&public, &signing_input(protected, &signed), whole));
        assert!(verifies(
            &public,
            &a2a_signing_input(protected, &signed),
            a2a
        ));
        assert!(!verifies(&public, &signing_input(protected, &signed), a2a));
        assert!(!verifies(
            &public,
            &a2a_signing_input(protected, &signed),
            whole
        ));

        let mut renamed = signed.clone();
        renamed["skills"][0]["description"] = json!("Something else");
        assert!(!verifies(
            &public,
            &signing_input(protected, &renamed),
            whole
        ));
        assert!(!verifies(
            &public,
            &a2a_signing_input(protected, &renamed),
            a2a
        ));
        // `url` is outside the A2A schema, so only the whole-card signature covers it: a
        // verifier that reads `url` checks that one.
        let mut moved = signed.clone();
        moved["url"] = json!("https://evil.example.com/tasks");
        assert!(!verifies(&public, &signing_input(protected, &moved), whole));
        assert!(verifies(
            &public,
            &a2a_signing_input(protected, &moved),
            a2a
        ));
    }
}
