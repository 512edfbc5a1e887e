//! `GET /v1/tasks`: every filter, word matching on text and structured data, who may search
//! whose tasks, cursors bound to their search, and paging that neither skips nor repeats while
//! tasks change between pages.

use aws_sdk_dynamodb::types::AttributeValue;
use forgebench_tests::{spawn_app, spawn_app_with, text_message, Options, Pair, Recorder};
use forgebench_tests::{TestAgent, TestApp};
use serde_json::{json, Value};

async fn search(app: &TestApp, key: &str, query: &str) -> forgebench_tests::Reply {
    app.get(&format!("/v1/tasks?{query}"), key).await
}

fn ids(reply: &forgebench_tests::Reply) -> Vec<String> {
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Every id of a search from `cursor` on, page after page, with the pages' sizes.
async fn all_pages(
    app: &TestApp,
    key: &str,
    query: &str,
    cursor: String,
) -> (Vec<String>, Vec<usize>) {
    let mut found = Vec::new();
    let mut sizes = Vec::new();
    let mut cursor = Some(cursor);
    for _ in 0..50 {
        let query = match &cursor {
            Some(cursor) => format!("{query}&cursor={cursor}"),
            None => query.to_owned(),
        };
        let reply = search(app, key, &query).await;
        let page = ids(&reply);
        sizes.push(page.len());
        found.extend(page);
        match reply.body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (found, sizes),
        }
    }
    panic!("more than 50 pages");
}

/// Every id of `query`, one page of one task at a time from the first page on.
async fn one_at_a_time(app: &TestApp, key: &str, query: &str) -> Vec<String> {
    let query = format!("{query}&limit=1");
    let first = search(app, key, &query).await;
    let mut found = ids(&first);
    if let Some(cursor) = first.body["next_cursor"].as_str() {
        found.extend(all_pages(app, key, &query, cursor.to_owned()).await.0);
    }
    found
}

async fn open(app: &TestApp, caller: &TestAgent, callee: &str, message: Value) -> String {
    let reply = app.open_task(&caller.key, callee, message, 0).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.field("id")
}

/// Claims the callee's next task, which must be `task_id`, and answers it with `result`.
async fn answer(app: &TestApp, callee: &TestAgent, task_id: &str, result: Value) {
    let claimed = app.claim(&callee.key, 0).await;
    assert_eq!(claimed.field("id"), task_id, "{}", claimed.text);
    let done = app.post_result(&callee.key, task_id, result).await;
    assert_eq!(done.status, 200, "{}", done.text);
}

fn completed(text: &str) -> Value {
    json!({"state": "completed", "artifacts": [{"name": "response", "parts": [{"text": text}]}]})
}

/// A pair and a third agent of the same tenant bound to the same callee.
async fn three_agents(app: &TestApp) -> (Pair, TestAgent) {
    let pair = app.pair().await;
    let other = app
        .create_agent(&pair.tenant.admin_key, "refund-approver")
        .await;
    let granted = app
        .grant(&pair.tenant.admin_key, &other.id, &[&pair.callee.name])
        .await;
    assert_eq!(granted.status, 200, "{}", granted.text);
    (pair, other)
}

#[tokio::test]
async fn an_agent_finds_its_own_tasks_by_direction_state_conversation_and_time() {
    let app = spawn_app().await;
    let (pair, other) = three_agents(&app).await;
    let (caller, callee) = (&pair.caller, &pair.callee);
    let first = open(&app, caller, &callee.name, text_message("first")).await;
    let second = open(&app, caller, &callee.name, text_message("second")).await;
    let others = open(&app, &other, &callee.name, text_message("third")).await;
    let canceled = app.cancel(&caller.key, &callee.name, &first).await;
    assert_eq!(canceled.status, 200, "{}", canceled.text);

    // Newest first by creation: canceling the first task does not move it.
    let inbound = search(&app, &callee.key, "direction=inbound").await;
    assert_eq!(
        ids(&inbound),
        [others.as_str(), second.as_str(), first.as_str()]
    );
    assert_eq!(inbound.body["next_cursor"], Value::Null);
    assert!(
        inbound.body["items"][0].get("history").is_none(),
        "items leave history out"
    );
    assert_eq!(
        inbound.body["items"][2]["input"]["message"]["parts"][0]["text"],
        "first"
    );
    assert_eq!(
        ids(&search(&app, &callee.key, "").await),
        [others.as_str(), second.as_str(), first.as_str()]
    );
    assert!(ids(&search(&app, &callee.key, "direction=outbound").await).is_empty());

    // The caller sees its own tasks only, never another pair's.
    assert_eq!(
        ids(&search(&app, &caller.key, "direction=both").await),
        [second.as_str(), first.as_str()]
    );
    assert_eq!(
        ids(&search(&app, &caller.key, "direction=outbound").await),
        [second.as_str(), first.as_str()]
    );
    assert!(ids(&search(&app, &caller.key, "direction=inbound").await).is_empty());
    assert_eq!(ids(&search(&app, &other.key, "").await), [others.as_str()]);

    assert_eq!(
        ids(&search(&app, &caller.key, "state=canceled").await),
        [first.as_str()]
    );
    assert_eq!(
        ids(&search(&app, &caller.key, "state=submitted").await),
        [second.as_str()]
    );
    assert!(ids(&search(&app, &caller.key, "state=failed").await).is_empty());
    assert_eq!(
        ids(&search(&app, &callee.key, "state=submitted&direction=inbound").await),
        [others.as_str(), second.as_str()]
    );

    let context = app
        .get_task(&caller.key, &callee.name, &second)
        .await
        .field("context_id");
    assert_eq!(
        ids(&search(&app, &callee.key, &format!("context_id={context}")).await),
        [second.as_str()]
    );
    assert_eq!(
        ids(&search(&app, &other.key, &format!("context_id={context}")).await),
        Vec::<&str>::new()
    );

    // `since`: changed after that moment, strictly.
    let moment = app
        .get_task(&callee.key, &callee.name, &others)
        .await
        .field("created_at");
    let since = format!("since={}", moment.replace('+', "%2B"));
    assert_eq!(
        ids(&search(&app, &callee.key, &since).await),
        [first.as_str()]
    );
    let future = search(&app, &callee.key, "since=2999-01-01T00:00:00Z").await;
    assert!(ids(&future).is_empty(), "nothing changed after then");
    assert_eq!(
        ids(&search(&app, &callee.key, "limit=1").await),
        [others.as_str()]
    );
}

/// One working task of `pair`, then 25 newer ones completed: the working task's id, and the
/// completed ones' ids in the order they were opened.
async fn working_below_completed(app: &TestApp, pair: &Pair) -> (String, Vec<String>) {
    let working = open(app, &pair.caller, &pair.callee.id, text_message("slow one")).await;
    let claimed = app.claim(&pair.callee.key, 0).await;
    assert_eq!(claimed.field("id"), working, "{}", claimed.text);
    let mut finished = Vec::new();
    for n in 0..25 {
        let id = open(
            app,
            &pair.caller,
            &pair.callee.id,
            text_message("quick one"),
        )
        .await;
        answer(app, &pair.callee, &id, completed(&format!("done {n}"))).await;
        finished.push(id);
    }
    (working, finished)
}

#[tokio::test]
async fn a_state_is_found_below_many_newer_tasks_in_other_states_and_pages_in_order() {
    // The one working task is found under 25 newer completed ones, and each state's pages hold
    // its tasks in order, once, whatever lies between them on the agent's side.
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (working, mut finished) = working_below_completed(&app, &pair).await;
    finished.reverse();
    for key in [&pair.caller.key, &pair.callee.key] {
        assert_eq!(
            one_at_a_time(&app, key, "state=working").await,
            vec![working.clone()]
        );
        assert_eq!(one_at_a_time(&app, key, "state=completed").await, finished);
        assert!(one_at_a_time(&app, key, "state=failed").await.is_empty());
    }
}

#[tokio::test]
async fn admins_and_viewers_search_any_agent_they_name_and_others_may_not() {
    let app = spawn_app().await;
    let (pair, other) = three_agents(&app).await;
    let (caller, callee) = (&pair.caller, &pair.callee);
    let mine = open(&app, caller, &callee.name, text_message("mine")).await;
    let theirs = open(&app, &other, &callee.name, text_message("theirs")).await;
    let admin = &pair.tenant.admin_key;
    let by_name = format!("agent={}", callee.name);
    assert_eq!(
        ids(&search(&app, admin, &by_name).await),
        [theirs.as_str(), mine.as_str()]
    );
    let by_id = format!("agent={}&direction=outbound", caller.id);
    assert_eq!(ids(&search(&app, admin, &by_id).await), [mine.as_str()]);
    let (_, viewer) = app.create_member(&pair.tenant, "viewer").await;
    assert_eq!(
        ids(&search(&app, &viewer, &by_name).await),
        [theirs.as_str(), mine.as_str()]
    );

    let (_, member) = app.create_member(&pair.tenant, "member").await;
    assert_eq!(search(&app, &member, &by_name).await.status, 403);
    // An agent key searches its own tasks only, whoever it names.
    assert_eq!(search(&app, &caller.key, &by_name).await.status, 403);
    assert_eq!(
        ids(&search(&app, &caller.key, &format!("agent={}", caller.name)).await),
        [mine.as_str()]
    );
    // Another tenant's agent is no agent at all.
    let stranger = app.pair().await;
    let foreign = search(&app, &stranger.tenant.admin_key, &by_id).await;
    assert_eq!(foreign.status, 404, "{}", foreign.text);
    assert_eq!(search(&app, "fb_agt_nonsense", "").await.status, 401);
}

/// An admin or viewer who names no agent searches every task of the tenant, newest first, with
/// every other filter and by cursor, each task once whichever agents it joins; never another
/// tenant's.
#[tokio::test]
async fn a_person_naming_no_agent_searches_every_task_of_the_tenant() {
    let app = spawn_app().await;
    let (pair, other) = three_agents(&app).await;
    let stranger = app.pair().await;
    open(
        &app,
        &stranger.caller,
        &stranger.callee.name,
        text_message("theirs"),
    )
    .await;
    let first = open(
        &app,
        &pair.caller,
        &pair.callee.name,
        text_message("first order"),
    )
    .await;
    let second = open(&app, &other, &pair.callee.name, text_message("second")).await;
    let third = open(
        &app,
        &pair.caller,
        &pair.callee.name,
        text_message("third order"),
    )
    .await;
    let claimed = app.claim(&pair.callee.key, 0).await;
    let working = claimed.field("id");

    let admin = &pair.tenant.admin_key;
    let (_, viewer) = app.create_member(&pair.tenant, "viewer").await;
    let everything = [third.clone(), second.clone(), first.clone()];
    for key in [admin, &viewer] {
        assert_eq!(ids(&search(&app, key, "").await), everything);
        // `direction` needs an agent: without one, each task is found once.
        let inbound = search(&app, key, "direction=inbound").await;
        assert_eq!(ids(&inbound), everything);
    }
    assert_eq!(one_at_a_time(&app, admin, "").await, everything);
    let in_state = |state: &str| format!("state={state}");
    let found = search(&app, admin, &in_state("working")).await;
    assert_eq!(ids(&found), std::slice::from_ref(&working));
    let submitted: Vec<String> = everything
        .iter()
        .filter(|id| **id != working)
        .cloned()
        .collect();
    assert_eq!(
        one_at_a_time(&app, admin, &in_state("submitted")).await,
        submitted
    );
    assert_eq!(ids(&search(&app, admin, "q=order").await), [third, first]);
    let context = format!("context_id={}", claimed.field("context_id"));
    assert_eq!(ids(&search(&app, admin, &context).await), [working]);
    let (_, member) = app.create_member(&pair.tenant, "member").await;
    assert_eq!(search(&app, &member, "").await.status, 403);
}

/// A tenant-wide search walks the tenant's audit log, where a task's open may sit below many
/// entries of other kinds: each read takes more of the log while the opens are sparse, so the
/// first page still finds the task rather than ending empty.
#[tokio::test]
async fn a_tenant_wide_search_finds_an_open_below_many_other_audit_entries() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task = open(&app, &pair.caller, &pair.callee.name, text_message("one")).await;
    for _ in 0..30 {
        app.create_member(&pair.tenant, "viewer").await;
    }
    let page = search(&app, &pair.tenant.admin_key, "limit=1").await;
    assert_eq!(ids(&page), [task], "{}", page.text);
}

#[tokio::test]
async fn words_match_whole_any_case_across_messages_and_inside_structured_data() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, callee) = (&pair.caller, &pair.callee);
    // Each answered before the next opens, so the callee's claim takes the one just opened.
    let refund = open(
        &app,
        caller,
        &callee.name,
        text_message("Refund order 4182, customer requested."),
    )
    .await;
    answer(
        &app,
        callee,
        &refund,
        completed("Refunded $42.00 to the card"),
    )
    .await;
    let data = open(
        &app,
        caller,
        &callee.name,
        json!({"role": "user", "parts": [
            {"text": "Check this order"},
            {"data": {"orderId": 4182, "lines": [{"sku": "AB-77", "note": "Fragile glass"}]}}
        ]}),
    )
    .await;
    answer(&app, callee, &data, completed("looked")).await;
    let shipment = open(
        &app,
        caller,
        &callee.name,
        text_message("Where is the shipment?"),
    )
    .await;
    answer(&app, callee, &shipment, completed("It is in Rotterdam")).await;

    let found = |q: &str| {
        let app = &app;
        let key = caller.key.clone();
        let q = q.to_owned();
        async move { ids(&search(app, &key, &format!("q={q}")).await) }
    };
    assert_eq!(
        found("4182").await,
        [data.as_str(), refund.as_str()],
        "text and data alike"
    );
    let page = search(&app, &caller.key, "q=rotterdam").await;
    assert_eq!(
        page.body["items"][0]["artifacts"][0]["parts"][0]["text"],
        "It is in Rotterdam"
    );
    assert_eq!(found("REFUND").await, [refund.as_str()], "any case");
    assert_eq!(
        found("refunded").await,
        [refund.as_str()],
        "the reply's words count"
    );
    assert!(found("refun").await.is_empty(), "whole words only");
    assert_eq!(found("fragile").await, [data.as_str()], "nested data");
    assert_eq!(found("ab").await, [data.as_str()]);
    assert_eq!(
        found("orderid").await,
        [data.as_str()],
        "data keys are words too"
    );
    assert_eq!(
        found("shipment%20rotterdam").await,
        [shipment.as_str()],
        "words from two messages"
    );
    assert_eq!(
        found("%22Rotterdam%22%20shipment").await,
        [shipment.as_str()],
        "quotes only separate"
    );
    assert!(
        found("shipment%20paris").await.is_empty(),
        "every word must match"
    );
    assert_eq!(
        ids(&search(
            &app,
            &callee.key,
            "q=4182&direction=inbound&state=completed"
        )
        .await),
        [data.as_str(), refund.as_str()]
    );
    assert!(ids(&search(&app, &callee.key, "q=4182&direction=outbound").await).is_empty());
    let context = app
        .get_task(&caller.key, &callee.name, &refund)
        .await
        .field("context_id");
    assert_eq!(
        ids(&search(&app, &caller.key, &format!("q=4182&context_id={context}")).await),
        [refund.as_str()]
    );
}

#[tokio::test]
async fn paging_while_tasks_change_shows_each_task_of_the_first_page_s_moment_once() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, callee) = (&pair.caller, &pair.callee);
    let mut opened = Vec::new();
    for n in 0..12 {
        opened.push(
            open(
                &app,
                caller,
                &callee.name,
                text_message(&format!("task {n}")),
            )
            .await,
        );
    }
    let first = search(&app, &caller.key, "limit=5").await;
    let first_page = ids(&first);
    let expected: Vec<String> = opened.iter().rev().cloned().collect();
    assert_eq!(first_page, expected[..5]);
    let cursor = first.body["next_cursor"].as_str().unwrap().to_owned();

    // Between pages: the oldest task (not shown yet) and a shown one change, and one arrives.
    for changed in [&opened[0], &opened[11]] {
        let cancel = app.cancel(&caller.key, &callee.name, changed).await;
        assert_eq!(cancel.status, 200, "{}", cancel.text);
    }
    let late = open(&app, caller, &callee.name, text_message("late")).await;

    let (rest, sizes) = all_pages(&app, &caller.key, "limit=5", cursor).await;
    let mut seen = first_page.clone();
    seen.extend(rest);
    assert_eq!(
        seen, expected,
        "each task once, in creation order, whatever changed: {sizes:?}"
    );
    assert!(!seen.contains(&late), "opened after the first page");
    // A new search sees the new task; changes move nothing.
    let fresh = ids(&search(&app, &caller.key, "limit=3").await);
    assert_eq!(
        fresh,
        [late.as_str(), opened[11].as_str(), opened[10].as_str()]
    );

    // With a state filter: each page judges its tasks as they are when it is read, so a task
    // canceled after the first page is no longer a submitted one.
    let submitted = search(&app, &caller.key, "state=submitted&limit=4").await;
    let cursor = submitted.body["next_cursor"].as_str().unwrap().to_owned();
    let mut seen = ids(&submitted);
    let cancel = app.cancel(&caller.key, &callee.name, &opened[1]).await;
    assert_eq!(cancel.status, 200, "{}", cancel.text);
    let (rest, _) = all_pages(&app, &caller.key, "state=submitted&limit=4", cursor).await;
    seen.extend(rest);
    let mut expected: Vec<String> = opened[2..11].iter().rev().cloned().collect();
    expected.insert(0, late);
    assert_eq!(seen, expected);
}

/// A cursor is only a place in the order: with the search that issued it, the next page; with
/// other filters or another key, what those filters and that key find from the same place on,
/// never a task of the search that issued it.
#[tokio::test]
async fn a_cursor_is_a_place_and_never_widens_what_a_key_reads() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let stranger = app.pair().await;
    let theirs = open(
        &app,
        &stranger.caller,
        &stranger.callee.name,
        text_message("theirs"),
    )
    .await;
    let mut ours = Vec::new();
    for n in 0..3 {
        let message = text_message(&format!("n{n}"));
        ours.push(open(&app, &pair.caller, &pair.callee.name, message).await);
    }
    let page = search(&app, &pair.caller.key, "limit=1").await;
    assert_eq!(ids(&page), [ours[2].clone()]);
    let cursor = page.body["next_cursor"].as_str().unwrap().to_owned();

    let next = search(&app, &pair.caller.key, &format!("limit=1&cursor={cursor}")).await;
    assert_eq!(
        ids(&next),
        [ours[1].clone()],
        "the same search: its next page"
    );
    let callee = search(&app, &pair.callee.key, &format!("cursor={cursor}")).await;
    assert_eq!(
        ids(&callee),
        [ours[1].clone(), ours[0].clone()],
        "the callee's, from there"
    );
    let elsewhere = search(&app, &stranger.caller.key, &format!("cursor={cursor}")).await;
    assert_eq!(
        ids(&elsewhere),
        [theirs],
        "another tenant's key reads its own tasks only"
    );

    for query in ["cursor=bm90LW91cnM", "cursor=", "cursor=0"] {
        let refused = search(&app, &pair.caller.key, query).await;
        assert_eq!(refused.status, 400, "{query}: {}", refused.text);
        assert_eq!(refused.body["detail"]["code"], "invalid_request");
    }
}

#[tokio::test]
async fn bad_parameters_are_refused_with_what_is_wrong() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    for (query, says) in [
        ("direction=sideways", "direction"),
        ("state=done", "state"),
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=ten", "limit"),
        ("since=yesterday", "since"),
        ("q=%21%21%21", "q"),
    ] {
        let refused = search(&app, &pair.caller.key, query).await;
        assert_eq!(refused.status, 400, "{query}: {}", refused.text);
        let message = refused.body["detail"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{query}: {message}");
    }
}

/// The task's word postings: (partition, sort key) of every posting item that names it.
async fn postings(app: &TestApp, task_id: &str) -> Vec<(String, String)> {
    let suffix = format!("#{task_id}");
    let mut found: Vec<(String, String)> = app
        .scan_all()
        .await
        .iter()
        .filter_map(|item| {
            let (pk, sk) = (item["pk"].as_s().ok()?, item["sk"].as_s().ok()?);
            (pk.starts_with("WORDS#") && sk.ends_with(&suffix)).then(|| (pk.clone(), sk.clone()))
        })
        .collect();
    found.sort();
    found
}

/// Deletes the task's word postings.
async fn delete_postings(app: &TestApp, task_id: &str) {
    let client = forgebench_tests::dynamodb_client(&forgebench_tests::dynamodb_endpoint()).await;
    for (pk, sk) in postings(app, task_id).await {
        client
            .delete_item()
            .table_name(&app.table)
            .key("pk", AttributeValue::S(pk))
            .key("sk", AttributeValue::S(sk))
            .send()
            .await
            .unwrap();
    }
}

/// Loses the task's word postings as a failed write after its open would, and flags it due as
/// the request that failed does.
async fn lose_postings(app: &TestApp, task_id: &str) {
    delete_postings(app, task_id).await;
    app.flag_words_due(task_id).await;
}

#[tokio::test]
async fn a_task_whose_indexing_was_lost_is_found_again_after_the_sweep() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task = open(
        &app,
        &pair.caller,
        &pair.callee.name,
        text_message("Rotterdam manifest"),
    )
    .await;
    assert_eq!(
        ids(&search(&app, &pair.caller.key, "q=manifest").await),
        [task.as_str()]
    );

    lose_postings(&app, &task).await;
    assert!(ids(&search(&app, &pair.caller.key, "q=manifest").await).is_empty());

    let swept = forgebench::sweeper::sweep_words_until(&app.app.store, &app.app.bodies, "~").await;
    assert_eq!(swept.done, 1, "{swept:?}");
    assert_eq!(
        ids(&search(&app, &pair.caller.key, "q=manifest").await),
        [task.as_str()]
    );
    assert_eq!(
        ids(&search(&app, &pair.callee.key, "q=rotterdam").await),
        [task.as_str()]
    );
    let again = forgebench::sweeper::sweep_words_until(&app.app.store, &app.app.bodies, "~").await;
    assert_eq!(again.done, 0, "nothing is due any more");
}

/// A hundred tasks of the same shard whose postings no sweep can write (items a sweep cannot
/// read as tasks), flagged due before the task the test cares about.
async fn failing_words_ahead_of(app: &TestApp, task_id: &str) {
    let shard = task_id.chars().next().unwrap().to_string();
    let puts = (0..100).map(|n| {
        let shard = shard.clone();
        async move {
            app.app
                .store
                .client()
                .put_item()
                .table_name(&app.table)
                .item(
                    "pk",
                    AttributeValue::S(format!("TASK#{shard}-unreadable-{n}")),
                )
                .item("sk", AttributeValue::S("TASK".into()))
                .item("words_due", AttributeValue::S("due".into()))
                .item("shard", AttributeValue::S(shard))
                .item(
                    "changed_at",
                    AttributeValue::S("2000-01-01T00:00:00.000000Z".into()),
                )
                .send()
                .await
                .expect("an unreadable task written")
        }
    });
    futures::future::join_all(puts).await;
}

#[tokio::test]
async fn tasks_whose_words_keep_failing_are_set_aside_and_never_hold_back_the_others() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let message = text_message("Rotterdam manifest");
    let task = open(&app, &pair.caller, &pair.callee.name, message).await;
    lose_postings(&app, &task).await;
    failing_words_ahead_of(&app, &task).await;

    let sweep = || forgebench::sweeper::sweep_words_until(&app.app.store, &app.app.bodies, "~");
    let first = sweep().await;
    assert_eq!((first.done, first.skipped), (0, 100), "{first:?}");
    // The failing hundred are out of the way: the next sweep reaches the task behind them, and
    // tries them again (one page a shard) without letting them stand in front.
    let second = sweep().await;
    assert_eq!((second.done, second.skipped), (1, 100), "{second:?}");
    assert_eq!(
        ids(&search(&app, &pair.caller.key, "q=manifest").await),
        [task.as_str()]
    );
}

#[tokio::test]
async fn the_backfill_posts_the_words_of_tasks_stored_without_postings() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, callee) = (&pair.caller, &pair.callee);
    let answered = open(&app, caller, &callee.name, text_message("Hamburg manifest")).await;
    answer(&app, callee, &answered, completed("customs cleared")).await;
    let waiting = open(&app, caller, &callee.name, text_message("Hamburg invoice")).await;
    // As a table indexed before the postings existed has them: none, and nothing flagged.
    for task in [&answered, &waiting] {
        delete_postings(&app, task).await;
    }
    assert!(ids(&search(&app, &caller.key, "q=hamburg").await).is_empty());

    // Two segments, as two shells would run them: every task once between them.
    let (store, bodies) = (&app.app.store, &app.app.bodies);
    let mut indexed = 0;
    for segment in 0..2 {
        indexed += forgebench::search::backfill_words(store, bodies, segment, 2)
            .await
            .unwrap();
    }
    assert_eq!(indexed, 2);
    assert_eq!(
        ids(&search(&app, &caller.key, "q=hamburg").await),
        [waiting.as_str(), answered.as_str()]
    );
    assert_eq!(
        ids(&search(&app, &callee.key, "q=customs%20manifest").await),
        [answered.as_str()]
    );
    // Again: the same postings, nothing more.
    let before = postings(&app, &answered).await;
    forgebench::search::backfill_words(store, bodies, 0, 1)
        .await
        .unwrap();
    assert_eq!(postings(&app, &answered).await, before);
}

#[tokio::test]
async fn each_word_is_posted_once_for_both_sides_and_no_change_rewrites_a_posting() {
    let recorder = Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let (caller, callee) = (&pair.caller, &pair.callee);
    let task = open(
        &app,
        caller,
        &callee.name,
        json!({"role": "user", "parts": [
            {"text": "invoice for Rotterdam, invoice again"},
            {"data": {"invoice": 4182}},
        ]}),
    )
    .await;
    // invoice, for, rotterdam, again, 4182: five words, each posted once in the tenant, which
    // serves the callee's inbound search and the caller's outbound one.
    let opened = postings(&app, &task).await;
    assert_eq!(opened.len(), 5, "{opened:?}");
    let tenant_words = format!("WORDS#{}#", pair.tenant.id);
    assert!(opened.iter().all(|(pk, _)| pk.starts_with(&tenant_words)));
    for key in [&caller.key, &callee.key] {
        assert_eq!(
            ids(&search(&app, key, "q=rotterdam").await),
            [task.as_str()]
        );
    }

    recorder.take();
    assert_eq!(app.claim(&callee.key, 0).await.field("id"), task);
    let claim_writes: Vec<String> = recorder
        .take_requests()
        .into_iter()
        .map(|(operation, _)| operation)
        .filter(|operation| operation.starts_with("Batch"))
        .collect();
    assert!(
        claim_writes.is_empty(),
        "the claim posted: {claim_writes:?}"
    );
    assert_eq!(postings(&app, &task).await, opened, "a claim adds no words");

    let done = app
        .post_result(&callee.key, &task, completed("Rotterdam invoice paid"))
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    let answered = postings(&app, &task).await;
    assert_eq!(answered.len(), 6, "only `paid` is new: {answered:?}");
    assert!(opened.iter().all(|posting| answered.contains(posting)));
    assert_eq!(
        ids(&search(&app, &caller.key, "q=paid%20again").await),
        [task.as_str()]
    );
}

#[tokio::test]
async fn a_messages_postings_spend_at_most_the_index_units_and_its_first_words_are_found() {
    let app = spawn_app_with(Options {
        index_units: 4,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let (caller, callee) = (&pair.caller, &pair.callee);
    // Six distinct words, the first four written first: four postings of one unit each.
    let task = open(
        &app,
        caller,
        &callee.name,
        text_message("zulu yankee xray whiskey victor uniform zulu"),
    )
    .await;
    let opened = postings(&app, &task).await;
    assert_eq!(opened.len(), 4, "{opened:?}");
    for word in ["zulu", "yankee", "xray", "whiskey"] {
        let query = format!("q={word}");
        assert_eq!(
            ids(&search(&app, &caller.key, &query).await),
            [task.as_str()]
        );
    }
    for word in ["victor", "uniform"] {
        let query = format!("q={word}");
        assert!(
            ids(&search(&app, &caller.key, &query).await).is_empty(),
            "{word}"
        );
    }
    // The answer's postings have a bound of their own; words it shares are not posted again.
    app.claim(&callee.key, 0).await;
    let done = app
        .post_result(
            &callee.key,
            &task,
            completed("zulu alpha bravo charlie delta echo"),
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    let answered = postings(&app, &task).await;
    assert_eq!(answered.len(), 8, "{answered:?}");
    assert_eq!(
        ids(&search(&app, &caller.key, "q=delta").await),
        [task.as_str()]
    );
    assert!(ids(&search(&app, &caller.key, "q=echo").await).is_empty());
}

#[tokio::test]
async fn a_word_search_finds_only_the_searching_agent_s_tasks_on_the_searched_side() {
    let app = spawn_app().await;
    let (pair, other) = three_agents(&app).await;
    let (caller, callee) = (&pair.caller, &pair.callee);
    // The tenant's postings of `ledger` name three tasks of two callers; each search keeps its
    // agent's own.
    let mine = open(&app, caller, &callee.name, text_message("ledger mine")).await;
    let theirs = open(&app, &other, &callee.name, text_message("ledger theirs")).await;
    let older = open(&app, caller, &callee.name, text_message("ledger older")).await;
    assert_eq!(
        ids(&search(&app, &caller.key, "q=ledger").await),
        [older.as_str(), mine.as_str()]
    );
    assert_eq!(
        ids(&search(&app, &other.key, "q=ledger").await),
        [theirs.as_str()]
    );
    assert_eq!(
        ids(&search(&app, &callee.key, "q=ledger&direction=inbound").await),
        [older.as_str(), theirs.as_str(), mine.as_str()]
    );
    assert!(ids(&search(&app, &callee.key, "q=ledger&direction=outbound").await).is_empty());
    assert!(ids(&search(&app, &caller.key, "q=ledger&direction=inbound").await).is_empty());
    // Another agent's word does not leak through the other words' check either.
    assert!(ids(&search(&app, &caller.key, "q=ledger%20theirs").await).is_empty());
    // A one-task page walks on past the postings the filter leaves out.
    let first = search(&app, &other.key, "q=ledger&limit=1").await;
    assert_eq!(ids(&first), [theirs.as_str()]);
}

#[tokio::test]
async fn word_searches_place_tasks_by_creation_whatever_changes_them_later() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, callee) = (&pair.caller, &pair.callee);
    let first = open(&app, caller, &callee.name, text_message("manifest one")).await;
    let second = open(&app, caller, &callee.name, text_message("manifest two")).await;
    let newest_first = [second.as_str(), first.as_str()];
    assert_eq!(
        ids(&search(&app, &caller.key, "q=manifest").await),
        newest_first
    );
    // Claims take any of the oldest queued tasks; answering one moves neither.
    let claimed = app.claim(&callee.key, 0).await.field("id");
    let number = if claimed == first { "one" } else { "two" };
    assert_eq!(
        ids(&search(&app, &caller.key, "q=manifest").await),
        newest_first
    );
    assert_eq!(
        ids(&search(
            &app,
            &callee.key,
            &format!("q={number}%20manifest&state=working")
        )
        .await),
        [claimed.as_str()]
    );
    let done = app
        .post_result(&callee.key, &claimed, completed("cleared at customs"))
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(
        ids(&search(&app, &caller.key, "q=manifest").await),
        newest_first
    );
    assert_eq!(
        one_at_a_time(&app, &caller.key, "q=manifest").await,
        newest_first
    );
    assert_eq!(
        ids(&search(&app, &caller.key, &format!("q=customs%20{number}")).await),
        [claimed.as_str()]
    );
    // The state and `since` are judged as the task is now.
    assert_eq!(
        ids(&search(&app, &caller.key, "q=manifest&state=completed").await),
        [claimed.as_str()]
    );
    let moment = done.body["status"]["timestamp"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = search(&app, &caller.key, "q=manifest&since=2000-01-01T00:00:00Z").await;
    assert_eq!(ids(&before), newest_first);
    let after = format!("q=manifest&since={}", moment.replace(':', "%3A"));
    assert!(ids(&search(&app, &caller.key, &after).await).is_empty());
}

#[tokio::test]
async fn a_large_task_is_found_by_the_words_of_every_message() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, callee) = (&pair.caller, &pair.callee);
    let many: Vec<String> = (0..80).map(|n| format!("word{n}")).collect();
    let big = open(
        &app,
        caller,
        &callee.name,
        text_message(&format!("cargo {}", many.join(" "))),
    )
    .await;
    assert_eq!(app.claim(&callee.key, 0).await.field("id"), big);
    for text in ["unloading in antwerp", "moving on to ghent"] {
        let body = json!({"message": {"role": "agent", "parts": [{"text": text}]}});
        let reply = app
            .post(
                &format!("/v1/agents/me/tasks/{big}/progress"),
                &callee.key,
                body,
            )
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    let small = open(&app, caller, &callee.name, text_message("cargo manifest")).await;
    assert_eq!(
        ids(&search(&app, &caller.key, "q=cargo").await),
        [small.as_str(), big.as_str()]
    );
    assert_eq!(
        ids(&search(&app, &caller.key, "q=word3%20antwerp%20ghent").await),
        [big.as_str()]
    );
    let done = app
        .post_result(&callee.key, &big, completed("delivered to bruges"))
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(
        ids(&search(&app, &caller.key, "q=word79%20bruges").await),
        [big.as_str()]
    );
    assert_eq!(
        one_at_a_time(&app, &caller.key, "q=cargo").await,
        [small.as_str(), big.as_str()]
    );
}

#[tokio::test]
async fn an_open_indexes_its_task_from_the_task_as_written_without_reading_it_back() {
    let recorder = Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    recorder.take();
    let task = open(
        &app,
        &pair.caller,
        &pair.callee.name,
        text_message("Ghent pallets"),
    )
    .await;
    let reads: Vec<String> = recorder
        .take_dynamodb()
        .into_iter()
        .filter(|operation| operation == "BatchGetItem")
        .collect();
    assert!(reads.is_empty(), "the open read its task back: {reads:?}");
    assert_eq!(
        ids(&search(&app, &pair.caller.key, "q=ghent%20pallets").await),
        [task.as_str()]
    );
    let swept = forgebench::sweeper::sweep_words_until(&app.app.store, &app.app.bodies, "~").await;
    assert_eq!(swept.done, 0, "nothing left due: {swept:?}");
}

/// Changes the tenant's word search setting through the API.
async fn set_word_search(app: &TestApp, key: &str, on: Value) -> forgebench_tests::Reply {
    app.send(
        "PATCH",
        "/v1/tenant/settings",
        Some(key),
        Some(json!({ "word_search": on })),
    )
    .await
}

#[tokio::test]
async fn a_tenant_that_turns_word_search_off_gets_no_postings_and_a_clear_400_for_q() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, callee) = (&pair.caller, &pair.callee);
    let admin = &pair.tenant.admin_key;
    let (_, viewer) = app.create_member(&pair.tenant, "viewer").await;
    let (_, member) = app.create_member(&pair.tenant, "member").await;

    // On by default; admins and viewers read it, only admins change it.
    let settings = app.get("/v1/tenant/settings", &viewer).await;
    assert_eq!(settings.status, 200, "{}", settings.text);
    assert_eq!(settings.body["word_search"], true);
    assert_eq!(settings.body["tenant_id"], pair.tenant.id.as_str());
    assert_eq!(app.get("/v1/tenant/settings", &member).await.status, 403);
    assert_eq!(
        app.get("/v1/tenant/settings", &caller.key).await.status,
        403
    );
    for key in [&viewer, &member, &caller.key] {
        assert_eq!(set_word_search(&app, key, json!(false)).await.status, 403);
    }
    let bad = set_word_search(&app, admin, json!("off")).await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    let unknown = app
        .send(
            "PATCH",
            "/v1/tenant/settings",
            Some(admin),
            Some(json!({"words": false})),
        )
        .await;
    assert_eq!(unknown.status, 400, "{}", unknown.text);
    let before = open(&app, caller, &callee.name, text_message("Antwerp before")).await;

    let off = set_word_search(&app, admin, json!(false)).await;
    assert_eq!(off.status, 200, "{}", off.text);
    assert_eq!(off.body["word_search"], false);
    let entries = app.audit(admin).await;
    assert!(
        entries
            .iter()
            .any(|entry| entry["action"] == "tenant.word_search.off"),
        "{entries:?}"
    );

    // A task opened and answered while off has no posting; q is refused; the rest works.
    let during = open(&app, caller, &callee.name, text_message("Antwerp during")).await;
    let mut claimed = [
        app.claim(&callee.key, 0).await.field("id"),
        app.claim(&callee.key, 0).await.field("id"),
    ];
    claimed.sort();
    let mut both = [before.clone(), during.clone()];
    both.sort();
    assert_eq!(claimed, both);
    let done = app
        .post_result(&callee.key, &during, completed("Antwerp cleared"))
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert!(postings(&app, &during).await.is_empty());
    let refused = search(&app, &caller.key, "q=antwerp").await;
    assert_eq!(refused.status, 409, "{}", refused.text);
    assert_eq!(refused.body["detail"]["code"], "conflict");
    assert!(
        refused.body["detail"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("word search is off")),
        "{}",
        refused.text
    );
    assert_eq!(
        ids(&search(&app, &caller.key, "state=completed").await),
        [during.as_str()]
    );
    assert_eq!(
        ids(&search(&app, &caller.key, "").await),
        [during.as_str(), before.as_str()]
    );
    // Another tenant keeps its own setting.
    let stranger = app.pair().await;
    let theirs = open(
        &app,
        &stranger.caller,
        &stranger.callee.name,
        text_message("Antwerp"),
    )
    .await;
    assert_eq!(
        ids(&search(&app, &stranger.caller.key, "q=antwerp").await),
        [theirs.as_str()]
    );

    // Back on: new tasks are found again; the one opened while off has no words to find.
    assert_eq!(set_word_search(&app, admin, json!(true)).await.status, 200);
    let after = open(&app, caller, &callee.name, text_message("Antwerp after")).await;
    assert_eq!(
        ids(&search(&app, &caller.key, "q=antwerp").await),
        [after.as_str(), before.as_str()]
    );
}

/// A search spends at most about `MAX_READ_UNITS` of the table's read capacity per request: past
/// it, the page ends short with the cursor to go on, and the pages after it still find every
/// task once. Shown with a budget of no units at all: each request reads one round.
#[tokio::test]
async fn a_search_past_its_read_budget_ends_short_and_the_cursor_goes_on() {
    use forgebench::domain::search::{Direction, SearchFilters};
    use forgebench::domain::{AgentId, TaskState, TenantId};
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (working, _) = working_below_completed(&app, &pair).await;
    let filters = SearchFilters {
        tenant: TenantId::from(pair.tenant.id.clone()),
        agent: Some(AgentId::from(pair.callee.id.clone())),
        direction: Direction::Inbound,
        state: Some(TaskState::Working),
        context_id: None,
        words: None,
        since: None,
    };
    let store = &app.app.store;
    let unbounded = forgebench::search::search(store, &filters, None, 1)
        .await
        .unwrap();
    assert_eq!(
        unbounded.tasks.len(),
        1,
        "found in one request without a budget"
    );
    let first = forgebench::search::search_within(store, &filters, None, 1, 0.0)
        .await
        .unwrap();
    assert!(first.tasks.is_empty(), "a request past its budget read on");
    let mut found: Vec<String> = Vec::new();
    let mut cursor = first.next;
    let mut requests = 1;
    while let Some(at) = cursor.take() {
        let page = forgebench::search::search_within(store, &filters, Some(&at), 1, 0.0)
            .await
            .unwrap();
        found.extend(page.tasks.iter().map(|task| task.id.to_string()));
        cursor = page.next;
        requests += 1;
        assert!(requests < 30, "the cursor never ended");
    }
    assert_eq!(found, [working]);
}

/// Every message of a task is found by its words, the caller's answer to a question too: the
/// answer's change posts the answer's words, not the question's again.
#[tokio::test]
async fn the_callers_answer_to_a_question_is_found_by_its_words() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task_id = app.asked(&pair).await;
    let answer = json!({"message": {"role": "user", "parts": [{"text": "quokkaledger"}]}});
    let answered = app
        .post(
            &format!("/v1/agents/{}/tasks/{task_id}/messages", pair.callee.name),
            &pair.caller.key,
            answer,
        )
        .await;
    assert_eq!(answered.state(), "working", "{}", answered.text);
    let found = search(
        &app,
        &pair.caller.key,
        &format!("agent={}&q=quokkaledger", pair.caller.name),
    )
    .await;
    assert_eq!(ids(&found), vec![task_id.clone()]);
    let question = search(
        &app,
        &pair.caller.key,
        &format!("agent={}&q=invoice", pair.caller.name),
    )
    .await;
    assert_eq!(ids(&question), [task_id]);
}
