//! `setToolPolicy(name, { enabled, autoApprove })`: a change to a thread's override of one
//! tool. Each field has three states: left out (keep the override), `null` (drop it: the
//! tool's own value applies again), or a value.

use super::tools::{ToolPolicies, ToolPolicy};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Setting {
    /// Left out: the override stays as it is.
    #[default]
    Keep,
    /// `null`: the tool's own default applies again.
    Reset,
    Set(bool),
}

impl Setting {
    fn apply(self, slot: &mut Option<bool>) {
        match self {
            Setting::Keep => {}
            Setting::Reset => *slot = None,
            Setting::Set(b) => *slot = Some(b),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PolicyChange {
    pub enabled: Setting,
    pub auto_approve: Setting,
}

impl PolicyChange {
    /// The override of `tool` after this change.
    pub fn applied(self, policies: &ToolPolicies, tool: &str) -> ToolPolicy {
        let mut p = policies.get(tool).copied().unwrap_or_default();
        self.enabled.apply(&mut p.enabled);
        self.auto_approve.apply(&mut p.auto_approve);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policies() -> ToolPolicies {
        let mut p = ToolPolicies::new();
        p.insert(
            "delete_file".into(),
            ToolPolicy {
                enabled: Some(false),
                auto_approve: Some(true),
            },
        );
        p
    }

    #[test]
    fn keep_reset_and_set_per_field() {
        let change = PolicyChange {
            enabled: Setting::Keep,
            auto_approve: Setting::Reset,
        };
        assert_eq!(
            change.applied(&policies(), "delete_file"),
            ToolPolicy {
                enabled: Some(false),
                auto_approve: None,
            }
        );
        let change = PolicyChange {
            enabled: Setting::Set(true),
            auto_approve: Setting::Keep,
        };
        assert_eq!(
            change.applied(&policies(), "delete_file"),
            ToolPolicy {
                enabled: Some(true),
                auto_approve: Some(true),
            }
        );
    }

    #[test]
    fn a_tool_without_an_override_starts_from_none() {
        let change = PolicyChange {
            enabled: Setting::Reset,
            auto_approve: Setting::Set(false),
        };
        let p = change.applied(&policies(), "send_email");
        assert_eq!(
            p,
            ToolPolicy {
                enabled: None,
                auto_approve: Some(false),
            }
        );
        assert_eq!(
            PolicyChange::default().applied(&policies(), "send_email"),
            ToolPolicy::default()
        );
        assert!(ToolPolicy::default().is_empty());
    }
}
