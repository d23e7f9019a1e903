//! A chat whose `delete_file` tool waits for a human, in plain `web-sys`: the Rust API of
//! `gatehouse-agent` and nothing else (no JavaScript of its own, no framework). The thread is
//! in IndexedDB, so a reload in the middle of an approval shows the same card again, and an
//! approved call runs once. The model is the offline demo model: "delete C:/old_logs.txt"
//! makes it call the tool.
#![cfg(target_arch = "wasm32")]

use gatehouse_agent::thread::Role;
use gatehouse_agent::{Agent, Decision, Message, Model, OpenOptions, Page, Storage, Tool};
use serde_json::json;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use web_sys::{Document, Element, HtmlInputElement};

#[wasm_bindgen(start)]
pub fn start() {
    wasm_bindgen_futures::spawn_local(async {
        if let Err(e) = run().await {
            show_error(&e.to_string());
        }
    });
}

fn document() -> Document {
    web_sys::window()
        .and_then(|w| w.document())
        .expect("a page")
}

fn by_id(id: &str) -> Element {
    document()
        .get_element_by_id(id)
        .expect("the page's elements")
}

fn show_error(text: &str) {
    by_id("error").set_text_content(Some(text));
}

/// The gated tool: it "deletes" by adding the path to the page's list of deleted files.
fn delete_file() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": { "path": { "type": "string" } },
        "required": ["path"],
    });
    Tool::new(
        "delete_file",
        "Delete a file",
        schema,
        |inputs, _ctx| async move {
            let path = inputs["path"].as_str().unwrap_or_default().to_owned();
            let item = document().create_element("li").map_err(|_| "no document")?;
            item.set_text_content(Some(&path));
            by_id("deleted")
                .append_child(&item)
                .map_err(|_| "no list")?;
            Ok(json!({ "deleted": path }))
        },
    )
    .require_approval()
}

async fn run() -> Result<(), gatehouse_agent::AgentError> {
    let options = OpenOptions::new("example-thread")
        .model(Model::demo())
        .tool(delete_file())
        .storage(Storage::indexed_db("gatehouse-example"));
    let agent = Rc::new(Agent::open(options).await?);
    render(&agent).await;

    let input: HtmlInputElement = by_id("message").dyn_into().expect("an input");
    let send = {
        let agent = agent.clone();
        Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
            e.prevent_default();
            let text = input.value();
            input.set_value("");
            let agent = agent.clone();
            wasm_bindgen_futures::spawn_local(async move {
                busy(true);
                let result = agent.chat(&text).await;
                busy(false);
                if let Err(e) = result {
                    show_error(&e.to_string());
                }
                render(&agent).await;
            });
        })
    };
    by_id("composer")
        .add_event_listener_with_callback("submit", send.as_ref().unchecked_ref())
        .expect("a form");
    send.forget();
    document()
        .body()
        .expect("a body")
        .set_attribute("data-ready", "true")
        .expect("an attribute");
    Ok(())
}

fn busy(on: bool) {
    let body = document().body().expect("a body");
    let _ = if on {
        body.set_attribute("data-busy", "true")
    } else {
        body.remove_attribute("data-busy")
    };
}

/// The transcript, then a card for each call waiting for approval.
async fn render(agent: &Rc<Agent>) {
    let transcript = by_id("transcript");
    transcript.set_inner_html("");
    match agent.messages(Page::default()).await {
        Ok(messages) => {
            for m in &messages {
                if let Some(line) = line_of(m) {
                    let p = document().create_element("p").expect("an element");
                    p.set_class_name(match m.role {
                        Role::User => "user",
                        Role::Assistant => "assistant",
                    });
                    p.set_text_content(Some(&line));
                    let _ = transcript.append_child(&p);
                }
            }
        }
        Err(e) => show_error(&e.to_string()),
    }
    let cards = by_id("cards");
    cards.set_inner_html("");
    for call in agent.pending_tools() {
        let card = document().create_element("div").expect("an element");
        card.set_class_name("card");
        card.set_attribute("data-call-id", &call.call_id)
            .expect("an attribute");
        let title = document().create_element("p").expect("an element");
        title.set_text_content(Some(&format!(
            "Run {} with {}?",
            call.name,
            serde_json::Value::Object(call.inputs.clone())
        )));
        let _ = card.append_child(&title);
        for (label, decision) in [
            ("Approve", Decision::Approve),
            ("Reject", Decision::Reject(Some("Not this one".into()))),
        ] {
            let button = document().create_element("button").expect("an element");
            button.set_text_content(Some(label));
            let (agent, call_id) = (agent.clone(), call.call_id.clone());
            let on_click = Closure::<dyn FnMut()>::new(move || {
                let (agent, call_id, decision) = (agent.clone(), call_id.clone(), decision.clone());
                wasm_bindgen_futures::spawn_local(async move {
                    busy(true);
                    let result = agent.submit_decisions([(call_id, decision)]).await;
                    busy(false);
                    if let Err(e) = result {
                        show_error(&e.to_string());
                    }
                    render(&agent).await;
                });
            });
            let _ =
                button.add_event_listener_with_callback("click", on_click.as_ref().unchecked_ref());
            on_click.forget();
            let _ = card.append_child(&button);
        }
        let _ = cards.append_child(&card);
    }
}

/// One line of the transcript: a message's text, or what its tool calls did.
fn line_of(m: &Message) -> Option<String> {
    let text = m.text();
    if !text.is_empty() {
        return Some(text);
    }
    let calls = m.tool_calls().or(m.tool_results())?;
    Some(
        calls
            .iter()
            .map(|e| format!("{}: {}", e.name, e.result.as_deref().unwrap_or("waiting")))
            .collect::<Vec<_>>()
            .join("; "),
    )
}
