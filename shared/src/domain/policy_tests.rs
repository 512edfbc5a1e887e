use super::*;

fn policy(name: &str, mode: PolicyMode, text: &str) -> TenantPolicy {
    TenantPolicy {
        name: name.into(),
        policy: text.into(),
        mode,
        description: None,
        updated_at: "2026-12-06T20:00:00Z".into(),
    }
}

fn call(action: PolicyAction, skill: Option<&str>, depth: u32) -> PolicyCall {
    PolicyCall {
        action,
        caller: "planner".into(),
        callee: "billing".into(),
        skill: skill.map(str::to_owned),
        depth,
        root_caller: Some("front-desk".into()),
        tenant: "t1".into(),
        // 2026-12-06T22:00:00Z
        now_unix: 1_796_594_400,
    }
}

const NO_REFUNDS: &str = r#"forbid(principal, action == Action::"open", resource)
  when { resource.name == "billing" && context has skill && context.skill == "refund" };"#;

#[test]
fn a_forbid_that_matches_refuses_and_names_itself() {
    let book = PolicyBook::new(&[policy("no-refunds", PolicyMode::Enforce, NO_REFUNDS)]).unwrap();
    let refused = book
        .judge(&call(PolicyAction::Open, Some("refund"), 1))
        .unwrap();
    assert_eq!(refused.refused_by, vec!["no-refunds".to_owned()]);
    assert!(refused.would_refuse.is_empty());
    let allowed = book
        .judge(&call(PolicyAction::Open, Some("lookup"), 1))
        .unwrap();
    assert_eq!(allowed, Judgement::default());
    let other_action = book
        .judge(&call(PolicyAction::Read, Some("refund"), 1))
        .unwrap();
    assert_eq!(other_action, Judgement::default());
}

#[test]
fn a_dry_run_policy_only_says_it_would_refuse() {
    let book = PolicyBook::new(&[policy("no-refunds", PolicyMode::DryRun, NO_REFUNDS)]).unwrap();
    let judged = book
        .judge(&call(PolicyAction::Open, Some("refund"), 1))
        .unwrap();
    assert!(judged.refused_by.is_empty());
    assert_eq!(judged.would_refuse, vec!["no-refunds".to_owned()]);
}

#[test]
fn the_context_holds_depth_root_caller_and_time() {
    let deep = r#"forbid(principal, action, resource) when { context.depth > 2 };"#;
    let root = r#"forbid(principal, action, resource)
      when { context has root_caller && context.root_caller.name == "front-desk" };"#;
    let night = r#"forbid(principal, action, resource)
      when { context.now.toTime() >= duration("21h") };"#;
    let book = PolicyBook::new(&[
        policy("deep", PolicyMode::Enforce, deep),
        policy("from-front-desk", PolicyMode::DryRun, root),
        policy("night", PolicyMode::Enforce, night),
    ])
    .unwrap();
    let judged = book.judge(&call(PolicyAction::Open, None, 3)).unwrap();
    assert_eq!(
        judged.refused_by,
        vec!["deep".to_owned(), "night".to_owned()]
    );
    assert_eq!(judged.would_refuse, vec!["from-front-desk".to_owned()]);
    let mut shallow_by_day = call(PolicyAction::Open, None, 2);
    shallow_by_day.now_unix -= 12 * 3600;
    shallow_by_day.root_caller = None;
    assert_eq!(book.judge(&shallow_by_day).unwrap(), Judgement::default());
}

#[test]
fn a_permit_is_refused_when_saved() {
    let error = PolicyBook::new(&[policy(
        "open-all",
        PolicyMode::Enforce,
        "permit(principal, action, resource);",
    )])
    .unwrap_err();
    assert!(error.0.contains("permit"), "{error}");
}

#[test]
fn a_policy_off_the_schema_is_refused_when_saved() {
    for text in [
        // An optional attribute read without `has`.
        r#"forbid(principal, action, resource) when { context.skill == "refund" };"#,
        // An attribute agents do not have.
        r#"forbid(principal, action, resource) when { principal.team == "x" };"#,
        // An action that is not one.
        r#"forbid(principal, action == Action::"delete", resource);"#,
        // Not Cedar.
        "forbid everything",
        // Two policies in one.
        "forbid(principal, action, resource); forbid(principal, action, resource);",
    ] {
        let error = PolicyBook::new(&[policy("p", PolicyMode::Enforce, text)]).unwrap_err();
        assert!(error.0.contains("policy p"), "{text}: {error}");
    }
}

#[test]
fn policy_names_are_slugs() {
    assert!(is_policy_name("no-refunds_2"));
    assert!(!is_policy_name(""));
    assert!(!is_policy_name("-x"));
    assert!(!is_policy_name("gate:binding"));
    assert!(!is_policy_name("Upper"));
    assert!(!is_policy_name(&"a".repeat(65)));
}

#[test]
fn a_book_knows_whether_its_policies_read_the_calls_place() {
    let book = |text: &str| PolicyBook::new(&[policy("p", PolicyMode::Enforce, text)]).unwrap();
    assert!(!book(NO_REFUNDS).reads_the_place());
    assert!(
        book("forbid(principal, action, resource) when { context.depth > 3 };").reads_the_place()
    );
    assert!(
        book(r#"forbid(principal, action, resource) unless { context has root_caller };"#)
            .reads_the_place()
    );
    assert!(!PolicyBook::new(&[]).unwrap().reads_the_place());
}
