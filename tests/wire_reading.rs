//! How stored records and app-given JSON are read (serde's derived rules): unknown keys are
//! ignored, fields an older writer lacked take their defaults, and a missing required field, a
//! repeated field or an unknown name is an error of its own kind.

use gatehouse_agent::engine::{RunJournal, ToolPolicy};
use gatehouse_agent::providers::{ModelConfig, ProviderKind};
use gatehouse_agent::store::{Lease, ThreadRecord};
use gatehouse_agent::thread::{Message, Usage};

fn err<T: serde::de::DeserializeOwned + std::fmt::Debug>(text: &str) -> String {
    serde_json::from_str::<T>(text).unwrap_err().to_string()
}

const RECORD: &str =
    r#"{"id":"t","schemaVersion":1,"version":2,"createdAt":1.0,"updatedAt":2.0,"messageCount":1"#;

#[test]
fn a_record_of_an_older_writer_reads_with_defaults_and_unknown_keys_are_ignored() {
    let r: ThreadRecord =
        serde_json::from_str(&format!(r#"{RECORD},"futureField":{{"x":[1]}}}}"#)).unwrap();
    assert_eq!(r.id, "t");
    assert_eq!((r.version, r.message_count), (2, 1));
    assert_eq!(r.title, None);
    assert!(r.policies.is_empty());
    assert_eq!(r.run, None);
    assert_eq!(r.pending_approvals, 0);
    assert_eq!(r.lease, None);

    let j: RunJournal =
        serde_json::from_str(r#"{"callMessageId":"msg_1","results":[],"other":1}"#).unwrap();
    assert!(j.gated.is_empty() && j.decisions.is_empty() && j.started.is_none());

    let l: Lease = serde_json::from_str(r#"{"owner":"a","until":5.0}"#).unwrap();
    assert!(!l.locked);

    let u: Usage = serde_json::from_str(r#"{"input_tokens":3,"output_tokens":4}"#).unwrap();
    assert_eq!((u.cached_input_tokens, u.reasoning_tokens), (0, 0));

    let p: ToolPolicy = serde_json::from_str(r#"{"autoApprove":true,"note":"x"}"#).unwrap();
    assert_eq!((p.enabled, p.auto_approve), (None, Some(true)));
}

#[test]
fn missing_repeated_and_unknown_names_are_errors() {
    let missing = err::<ThreadRecord>(r#"{"schemaVersion":1}"#);
    assert!(missing.starts_with("missing field `id`"), "{missing}");
    let repeated = err::<ThreadRecord>(&format!(r#"{RECORD},"version":3}}"#));
    assert!(
        repeated.starts_with("duplicate field `version`"),
        "{repeated}"
    );
    let lease = err::<Lease>(r#"{"owner":"a"}"#);
    assert!(lease.starts_with("missing field `until`"), "{lease}");

    let role = err::<Message>(r#"{"__id":"msg_1","role":"robot","content":[]}"#);
    assert!(
        role.starts_with("unknown variant `robot`, expected `user` or `assistant`"),
        "{role}"
    );
    let approval = err::<Message>(
        r#"{"__id":"msg_1","role":"assistant","content":[],"type":"tool_call",
            "tools":[{"callId":"a","name":"x","approval":"maybe"}]}"#,
    );
    assert!(
        approval.starts_with(
            "unknown variant `maybe`, expected one of `pending`, `approved`, `rejected`"
        ),
        "{approval}"
    );
}

#[test]
fn provider_kinds_are_read_by_their_wire_names() {
    for kind in [
        ProviderKind::OpenAi,
        ProviderKind::Anthropic,
        ProviderKind::Demo,
        ProviderKind::Custom,
    ] {
        let text = serde_json::to_string(&kind).unwrap();
        assert_eq!(text, format!("\"{}\"", kind.as_str()));
        assert_eq!(serde_json::from_str::<ProviderKind>(&text).unwrap(), kind);
    }
    let e = ModelConfig::from_json(r#"{"provider":"gemini","model":"x"}"#).unwrap_err();
    assert_eq!(e.code(), "invalid_config");
    assert!(
        e.to_string().contains(
            "unknown variant `gemini`, expected one of `openai`, `anthropic`, `demo`, `custom`"
        ),
        "{e}"
    );
    let cfg = ModelConfig::from_json(r#"{"provider":"demo","colour":"blue"}"#).unwrap();
    assert_eq!(cfg.provider, ProviderKind::Demo);
    assert!(cfg.stream);
}
