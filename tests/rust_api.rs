//! The Rust API as a Rust web app uses it (docs/design.md, "The Rust API"), in a real browser:
//! the offline demo model, Rust tools, approvals, a reload mid-approval (a second agent on the
//! stored thread), and the same error codes as the JS API. Run by `make test-browser-store`
//! (scripts/wasm-browser-test.sh) in each engine.
#![cfg(target_arch = "wasm32")]

use gatehouse_agent::{
    Agent, AgentError, AgentStatus, Decision, Input, McpServer, Model, OpenOptions, Page,
    RunOptions, Status, Storage, Tool, ToolError,
};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// The example of the product's contract, as written there: it must compile as it is.
/// (Not run: its model is a server this test does not have.)
#[allow(dead_code)]
async fn contract_example(schema: Value) -> Result<(), AgentError> {
    // also Model::anthropic, Model::demo()
    let model = Model::openai("https://my-app.example/llm/v1", "gpt-4o-mini");
    let agent = Agent::open(
        OpenOptions::new("thread_42").model(model).tool(
            Tool::new(
                "delete_file",
                "Delete a file",
                schema,
                |inputs, ctx| async move {
                    let _ = ctx;
                    Ok(json!({"deleted": inputs["path"]}))
                },
            )
            .require_approval(),
        ),
    )
    .await?;
    let state = agent.chat("Clean up the old logs").await?;
    if state.status == Status::AwaitingApproval {
        let call = &agent.pending_tools()[0];
        agent
            .submit_decisions([(call.call_id.clone(), Decision::Approve)])
            .await?;
    }
    Ok(())
}

fn schema() -> Value {
    json!({ "type": "object", "properties": { "path": { "type": "string" } }, "required": ["path"] })
}

/// A gated `delete_file` that records the inputs of every run.
fn delete_file(runs: &Rc<RefCell<Vec<Value>>>) -> Tool {
    let runs = runs.clone();
    Tool::new(
        "delete_file",
        "Delete a file",
        schema(),
        move |inputs, ctx| {
            let runs = runs.clone();
            async move {
                assert!(ctx.call_id.len() > 0 && ctx.thread_id.starts_with("rust_api_"));
                runs.borrow_mut().push(inputs.clone());
                if inputs["path"] == "C:/locked.txt" {
                    return Err(ToolError::from("the file is locked"));
                }
                Ok(json!({ "deleted": inputs["path"] }))
            }
        },
    )
    .require_approval()
}

fn unique(name: &str) -> String {
    format!("rust_api_{name}_{}", js_sys::Math::random().to_bits())
}

#[wasm_bindgen_test]
async fn approve_runs_the_tool_once_and_a_second_agent_sees_the_pending_call() {
    let runs = Rc::new(RefCell::new(Vec::new()));
    let (thread, storage) = (unique("approve"), Storage::indexed_db(&unique("db")));
    let open = || {
        Agent::open(
            OpenOptions::new(thread.clone())
                .model(Model::demo())
                .tool(delete_file(&runs))
                .storage(storage.clone()),
        )
    };
    let agent = open().await.unwrap();
    let state = agent.chat("delete C:/old_logs.txt").await.unwrap();
    assert_eq!(state.status, Status::AwaitingApproval);
    assert_eq!(agent.status(), AgentStatus::AwaitingApproval);
    assert!(runs.borrow().is_empty(), "nothing runs before the decision");

    // A reload: another agent opens the stored thread and finds the call waiting.
    drop(agent);
    let again = open().await.unwrap();
    let pending = again.pending_tools();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].inputs["path"], "C:/old_logs.txt");
    let state = again
        .submit_decisions([(pending[0].call_id.clone(), Decision::Approve)])
        .await
        .unwrap();
    assert_eq!(state.status, Status::Completed);
    assert_eq!(*runs.borrow(), vec![json!({"path": "C:/old_logs.txt"})]);
    // Deciding again is refused: nothing waits, nothing runs twice.
    let e = again
        .submit_decisions([(pending[0].call_id.clone(), Decision::Approve)])
        .await
        .unwrap_err();
    assert_eq!(e.code(), "not_suspended");
    assert_eq!(runs.borrow().len(), 1);
    let audit = again.audit(Page::default()).await.unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].call_id, pending[0].call_id);
    let messages = again.messages(Page::default()).await.unwrap();
    assert_eq!(messages.len(), 4, "user, tool call, tool results, answer");
    let last = again
        .messages(Page {
            limit: Some(1),
            before_index: None,
        })
        .await
        .unwrap();
    assert_eq!(last, messages[3..]);
    Agent::delete_thread(&thread, &storage).await.unwrap();
    assert!(Agent::list_threads(&storage).await.unwrap().is_empty());
}

#[wasm_bindgen_test]
async fn reject_edit_and_tool_errors_reach_the_model() {
    let runs = Rc::new(RefCell::new(Vec::new()));
    let agent = Agent::open(
        OpenOptions::new(unique("decide"))
            .tool(delete_file(&runs))
            .storage(Storage::memory(&unique("db"))),
    )
    .await
    .unwrap();
    agent.chat("delete C:/a.txt").await.unwrap();
    let id = agent.pending_tools()[0].call_id.clone();
    let state = agent
        .submit_decisions([(id, Decision::Reject(Some("Keep it".into())))])
        .await
        .unwrap();
    assert_eq!(state.status, Status::Completed);
    assert!(runs.borrow().is_empty(), "a rejected call never runs");

    agent.chat("delete C:/b.txt").await.unwrap();
    let id = agent.pending_tools()[0].call_id.clone();
    let edited = json!({"path": "C:/locked.txt"});
    agent
        .submit_decisions([(id.clone(), Decision::Edit(edited.clone()))])
        .await
        .unwrap();
    assert_eq!(
        *runs.borrow(),
        vec![edited],
        "the edited inputs are what runs"
    );
    let results = agent.messages(Page::default()).await.unwrap();
    let result = results
        .iter()
        .filter_map(|m| m.tool_results())
        .flatten()
        .find(|e| e.call_id == id)
        .and_then(|e| e.result.clone())
        .unwrap();
    assert!(result.contains("the file is locked"), "{result}");
}

#[wasm_bindgen_test]
async fn bad_input_gets_the_js_api_codes_and_changes_nothing() {
    let runs = Rc::new(RefCell::new(Vec::new()));
    let storage = Storage::memory(&unique("db"));
    let open = |o: OpenOptions| async move { Agent::open(o).await.map(|_| ()).unwrap_err() };
    let two = OpenOptions::new(unique("x"))
        .tool(delete_file(&runs))
        .tool(delete_file(&runs))
        .storage(storage.clone());
    assert_eq!(open(two).await.code(), "invalid_config");
    assert_eq!(open(OpenOptions::new(" ")).await.code(), "invalid_config");
    assert_eq!(
        open(OpenOptions::new(unique("x")).max_steps(0))
            .await
            .code(),
        "invalid_config"
    );
    assert_eq!(
        open(OpenOptions::new(unique("x")).model(Model::openai("", "")))
            .await
            .code(),
        "invalid_config",
        "a model name is required"
    );

    let agent = Agent::open(
        OpenOptions::new(unique("bad"))
            .tool(delete_file(&runs))
            .storage(storage),
    )
    .await
    .unwrap();
    assert_eq!(agent.chat("  ").await.unwrap_err().code(), "invalid_config");
    let none: [(String, Decision); 0] = [];
    assert_eq!(
        agent.submit_decisions(none).await.unwrap_err().code(),
        "invalid_decision"
    );
    agent.chat("delete C:/c.txt").await.unwrap();
    let id = agent.pending_tools()[0].call_id.clone();
    let e = agent
        .submit_decisions([("nope".to_string(), Decision::Approve)])
        .await
        .unwrap_err();
    assert_eq!(e.code(), "unknown_call_id");
    let e = agent
        .submit_decisions([(id.clone(), Decision::Edit(json!(["not", "an", "object"])))])
        .await
        .unwrap_err();
    assert_eq!(e.code(), "invalid_decision");
    assert_eq!(agent.chat("and more").await.unwrap_err().code(), "conflict");
    assert_eq!(
        agent.pending_tools().len(),
        1,
        "the refusals staged nothing"
    );
    assert!(runs.borrow().is_empty());
    assert_eq!(agent.message_count(), 2);
}

#[wasm_bindgen_test]
async fn an_external_tool_waits_for_its_result_and_a_policy_decides_what_asks() {
    let agent = Agent::open(
        OpenOptions::new(unique("external"))
            .tool(Tool::external(
                "lookup_order",
                "Look up an order",
                json!({"type": "object"}),
            ))
            .tool(
                Tool::new(
                    "delete_file",
                    "Delete a file",
                    schema(),
                    |inputs, _| async move { Ok(json!({ "deleted": inputs["path"] })) },
                )
                .approval_policy(|inputs| {
                    !inputs["path"].as_str().unwrap_or("").starts_with("/tmp/")
                }),
            )
            .storage(Storage::memory(&unique("db"))),
    )
    .await
    .unwrap();
    let state = agent.chat("lookup order 42").await.unwrap();
    assert_eq!(state.status, Status::AwaitingToolResults);
    let call = agent.pending_tool_results()[0].call_id.clone();
    let state = agent
        .submit_tool_results([(call, json!({"status": "shipped"}))])
        .await
        .unwrap();
    assert_eq!(state.status, Status::Completed);

    // Under /tmp the policy lets it run; elsewhere it asks.
    let state = agent.chat("delete /tmp/scratch.txt").await.unwrap();
    assert_eq!(state.status, Status::Completed);
    let state = agent.chat("delete /home/me/notes.txt").await.unwrap();
    assert_eq!(state.status, Status::AwaitingApproval);
}

/// MCP servers in `OpenOptions` (docs/design.md, "MCP tools"): checked like every option; an
/// unreachable server does not fail `Agent::open`, offers no tools, and is reported to the
/// next run's listener as an `mcp_error` event.
#[wasm_bindgen_test]
async fn an_mcp_server_is_checked_and_an_unreachable_one_is_an_event_not_a_failure() {
    let storage = Storage::memory(&unique("db"));
    let url = "http://127.0.0.1:9/mcp"; // nothing listens on the discard port
    let with = |server: McpServer| OpenOptions::new(unique("m")).mcp_server(server);
    let open = |o: OpenOptions| async move { Agent::open(o).await.map(|_| ()).unwrap_err() };
    assert_eq!(
        open(with(McpServer::new("a__b", url))).await.code(),
        "invalid_config"
    );
    assert_eq!(
        open(with(McpServer::new("a", " "))).await.code(),
        "invalid_config"
    );
    let twice = with(McpServer::new("a", url)).mcp_server(McpServer::new("a", url));
    assert_eq!(open(twice).await.code(), "invalid_config");

    let agent = Agent::open(
        with(McpServer::new("files", url).header("authorization", "Bearer x")).storage(storage),
    )
    .await
    .unwrap();
    assert!(
        agent.tool_policies().is_empty(),
        "no tools from a server never listed"
    );
    let seen = Rc::new(RefCell::new(Vec::new()));
    let log = seen.clone();
    let opts = RunOptions::new().on_event(move |e| log.borrow_mut().push(json!(e)));
    let state = agent
        .run(Input::Message("hello".into()), &opts)
        .await
        .unwrap();
    assert_eq!(state.status, Status::Completed);
    let errors: Vec<Value> = seen
        .borrow()
        .iter()
        .filter(|e| e["type"] == "mcp_error")
        .cloned()
        .collect();
    assert!(!errors.is_empty(), "{:?}", seen.borrow());
    assert!(
        errors
            .iter()
            .all(|e| e["server"] == "files" && e["code"] == "unreachable")
    );
}
