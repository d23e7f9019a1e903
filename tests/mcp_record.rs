//! The MCP tool lists stored with the thread (docs/design.md, "MCP tools"): written by the
//! commit that carries them, kept by the commits that do not, absent in threads without MCP.

use gatehouse_agent::engine::{Commit, ThreadStatus};
use gatehouse_agent::store::{MemoryStore, Writer};
use gatehouse_agent::thread::{Message, MessageId};
use serde_json::json;

fn commit(n: u64, mcp_tools: Option<serde_json::Value>) -> Commit {
    Commit {
        replace_tail: None,
        append: vec![Message::user_text(MessageId::from_number(n), "hi")],
        run: None,
        policies: Default::default(),
        status: ThreadStatus::Idle,
        audit: Vec::new(),
        request_size: None,
        mcp_tools,
    }
}

#[test]
fn the_tool_lists_are_written_once_and_kept() {
    let store = MemoryStore::open("mcp-record");
    let w = Writer::new("test-agent", false, false, 0.0);
    let lists = json!({ "files": [{ "name": "read_file", "inputSchema": { "type": "object" },
        "annotations": { "readOnlyHint": true } }] });
    let r = store.commit("t", 0, &commit(1, None), &w, 1.0).unwrap();
    assert_eq!(r.mcp_tools, None);
    let text = serde_json::to_string(&r).unwrap();
    assert!(
        !text.contains("mcpTools"),
        "a thread without MCP servers keeps its shape"
    );
    let r = store
        .commit("t", 1, &commit(2, Some(lists.clone())), &w, 2.0)
        .unwrap();
    assert_eq!(r.mcp_tools.as_ref(), Some(&lists));
    let r = store.commit("t", 2, &commit(3, None), &w, 3.0).unwrap();
    assert_eq!(
        r.mcp_tools.as_ref(),
        Some(&lists),
        "kept by a commit without lists"
    );
    let loaded = store.load("t", 4.0).unwrap();
    assert_eq!(loaded.record.mcp_tools, Some(lists));
    MemoryStore::drop_database("mcp-record");
}
