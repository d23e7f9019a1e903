//! `Agent.listThreads`: one summary per thread, from its record alone (no message is read).

use super::ownership::{LockProbe, Owner, judge};
use super::record::ThreadRecord;
use crate::engine::ThreadStatus;
use serde::{Deserialize, Serialize};

/// A thread in a thread list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSummary {
    pub thread_id: String,
    pub title: Option<String>,
    pub message_count: u64,
    pub created_at: f64,
    pub updated_at: f64,
    pub status: AgentStatus,
}

/// The values of `Agent.status()`: a thread list and an open agent say the same thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    Idle,
    AwaitingApproval,
    AwaitingToolResults,
    /// The last message is unanswered (a failed model call, a stop) or a run was cut off:
    /// `retry()` continues it.
    Interrupted,
    /// An approved call's tool, or the model, is only on another device: it goes on there
    /// (docs/design.md, "Across devices").
    AwaitingDevice,
    /// A message or decisions made on this device wait to be sent to the thread's store
    /// (a remote thread, offline): they are sent when it can be reached.
    Queued,
    /// An agent (in any tab) runs the thread now.
    Running,
}

impl AgentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Idle => "idle",
            AgentStatus::AwaitingApproval => "awaiting_approval",
            AgentStatus::AwaitingToolResults => "awaiting_tool_results",
            AgentStatus::Interrupted => "interrupted",
            AgentStatus::AwaitingDevice => "awaiting_device",
            AgentStatus::Queued => "queued",
            AgentStatus::Running => "running",
        }
    }
}

impl From<ThreadStatus> for AgentStatus {
    fn from(s: ThreadStatus) -> Self {
        match s {
            ThreadStatus::Idle => AgentStatus::Idle,
            ThreadStatus::AwaitingApproval => AgentStatus::AwaitingApproval,
            ThreadStatus::AwaitingToolResults => AgentStatus::AwaitingToolResults,
            ThreadStatus::Interrupted => AgentStatus::Interrupted,
            ThreadStatus::AwaitingDevice => AgentStatus::AwaitingDevice,
        }
    }
}

impl ThreadSummary {
    /// The summary of `record`. `probe` is what the thread's Web Lock said, asked after the
    /// record was read, when [`needs_probe`] says so (else `LockProbe::Unsupported`).
    pub fn new(record: &ThreadRecord, probe: LockProbe, now_ms: f64) -> Self {
        // No agent is "me" here: any live lease is somebody else's run.
        let running = matches!(
            judge(record.lease.as_ref(), "", now_ms, probe),
            Owner::Live(_)
        );
        let status = if running {
            AgentStatus::Running
        } else {
            record.status().into()
        };
        ThreadSummary {
            thread_id: record.id.clone(),
            title: record.title.clone(),
            message_count: record.message_count,
            created_at: record.created_at,
            updated_at: record.updated_at,
            status,
        }
    }
}

/// Whether judging `record` needs its Web Lock asked: only a lease taken with the lock held
/// is judged by the lock (the others by their expiry).
pub fn needs_probe(record: &ThreadRecord) -> bool {
    record.lease.as_ref().is_some_and(|l| l.locked)
}

/// Newest first; threads updated at the same time keep their stored order.
pub fn newest_first(records: &mut [ThreadRecord]) {
    records.sort_by(|a, b| b.updated_at.total_cmp(&a.updated_at));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::RunJournal;
    use crate::store::Lease;
    use crate::thread::MessageId;

    fn record(id: &str, updated_at: f64) -> ThreadRecord {
        let mut r = ThreadRecord::new(id, 1.0);
        r.updated_at = updated_at;
        r
    }

    fn lease(locked: bool, until: f64) -> Option<Lease> {
        Some(Lease {
            owner: "agent_a".into(),
            until,
            locked,
        })
    }

    #[test]
    fn the_status_is_the_one_the_last_writer_stored() {
        let status = |r: &ThreadRecord| ThreadSummary::new(r, LockProbe::Unsupported, 10.0).status;
        let mut r = record("t", 5.0);
        for (stored, listed) in [
            (ThreadStatus::Idle, AgentStatus::Idle),
            (
                ThreadStatus::AwaitingApproval,
                AgentStatus::AwaitingApproval,
            ),
            (
                ThreadStatus::AwaitingToolResults,
                AgentStatus::AwaitingToolResults,
            ),
            (ThreadStatus::Interrupted, AgentStatus::Interrupted),
        ] {
            r.status = Some(stored.as_str().into());
            assert_eq!(status(&r), listed);
            // Serialized as `Agent.status()` spells it.
            assert_eq!(
                serde_json::to_value(listed).unwrap(),
                serde_json::Value::from(stored.as_str())
            );
        }
        // An unanswered message has no run journal and no pending approval: only the stored
        // status tells it from an answered one.
        r.status = Some("interrupted".into());
        assert!(r.run.is_none() && r.pending_approvals == 0);
        assert_eq!(status(&r), AgentStatus::Interrupted);
    }

    #[test]
    fn a_record_without_a_stored_status_is_read_from_its_other_fields() {
        let status = |r: &ThreadRecord| ThreadSummary::new(r, LockProbe::Unsupported, 10.0).status;
        let idle = record("t", 5.0);
        assert_eq!(idle.status, None);
        assert_eq!(status(&idle), AgentStatus::Idle);

        let mut waiting = record("t", 5.0);
        waiting.run = Some(RunJournal::new(MessageId::from_number(1)));
        assert_eq!(status(&waiting), AgentStatus::AwaitingToolResults);

        let mut cut_off = waiting.clone();
        cut_off.run.as_mut().unwrap().started = Some("call_1".into());
        assert_eq!(status(&cut_off), AgentStatus::Interrupted);

        // Pending approvals win over a run journal: a decision is what the thread needs.
        let mut gated = cut_off.clone();
        gated.pending_approvals = 2;
        assert_eq!(status(&gated), AgentStatus::AwaitingApproval);
    }

    #[test]
    fn an_unknown_stored_status_reads_as_absent() {
        let mut json = serde_json::to_value(record("t", 5.0)).unwrap();
        json["status"] = "paused_by_a_newer_release".into();
        let r: ThreadRecord = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(r.status(), ThreadStatus::Idle, "as if absent");
        json["status"] = "interrupted".into();
        let r: ThreadRecord = serde_json::from_value(json).unwrap();
        assert_eq!(r.status(), ThreadStatus::Interrupted);
    }

    #[test]
    fn running_is_judged_by_the_lock_or_the_lease_expiry() {
        let mut r = record("t", 5.0);
        r.status = Some("awaiting_approval".into());
        r.lease = lease(true, 0.0);
        assert!(needs_probe(&r));
        let status = |r: &ThreadRecord, probe| ThreadSummary::new(r, probe, 10.0).status;
        // A locked lease: the lock decides, whatever the expiry says.
        assert_eq!(status(&r, LockProbe::Held), AgentStatus::Running);
        assert_eq!(status(&r, LockProbe::Free), AgentStatus::AwaitingApproval);
        // Without Web Locks: the expiry decides.
        r.lease = lease(false, 20.0);
        assert!(!needs_probe(&r));
        assert_eq!(status(&r, LockProbe::Unsupported), AgentStatus::Running);
        r.lease = lease(false, 9.0);
        assert_eq!(
            status(&r, LockProbe::Unsupported),
            AgentStatus::AwaitingApproval
        );
        r.lease = None;
        assert!(!needs_probe(&r));
    }

    #[test]
    fn newest_first_keeps_the_stored_order_of_equal_times() {
        let mut list = vec![record("a", 1.0), record("b", 3.0), record("c", 1.0)];
        list.push(record("d", 3.0));
        newest_first(&mut list);
        let ids: Vec<&str> = list.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["b", "d", "a", "c"]);
    }

    #[test]
    fn serialized_with_the_documented_keys() {
        let mut r = record("t", 5.0);
        r.title = Some("Hello".into());
        r.message_count = 3;
        let json = serde_json::to_string(&ThreadSummary::new(&r, LockProbe::Unsupported, 10.0));
        assert_eq!(
            json.unwrap(),
            r#"{"threadId":"t","title":"Hello","messageCount":3,"createdAt":1.0,"updatedAt":5.0,"status":"idle"}"#
        );
    }
}
