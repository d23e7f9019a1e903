//! [`ToolPolicies`]: a thread's per-tool overrides, by tool name.

use super::tools::ToolPolicy;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The per-thread policies, keyed by tool name, in name order; serialized as a JSON object.
/// A sorted `Vec` with the `BTreeMap` methods the crate uses: a thread has a handful, and a
/// `BTreeMap` instantiation costs ~7 KB of wasm.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ToolPolicies(Vec<(String, ToolPolicy)>);

impl ToolPolicies {
    pub fn new() -> Self {
        ToolPolicies(Vec::new())
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(n, _)| n.as_str().cmp(name))
    }

    pub fn get(&self, name: &str) -> Option<&ToolPolicy> {
        self.find(name).ok().map(|i| &self.0[i].1)
    }

    /// Sets the policy of `name`; the previous one, if any.
    pub fn insert(&mut self, name: String, policy: ToolPolicy) -> Option<ToolPolicy> {
        match self.find(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, policy)),
            Err(i) => {
                self.0.insert(i, (name, policy));
                None
            }
        }
    }

    pub fn remove(&mut self, name: &str) -> Option<ToolPolicy> {
        self.find(name).ok().map(|i| self.0.remove(i).1)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `(name, policy)` in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &ToolPolicy)> {
        self.0.iter().map(|(n, p)| (n, p))
    }
}

impl std::ops::Index<&str> for ToolPolicies {
    type Output = ToolPolicy;

    /// Panics when `name` has no policy, like `BTreeMap`'s index.
    fn index(&self, name: &str) -> &ToolPolicy {
        self.get(name).expect("key not found")
    }
}

impl fmt::Debug for ToolPolicies {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for ToolPolicies {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (name, policy) in &self.0 {
            m.serialize_entry(name, policy)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for ToolPolicies {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct PoliciesVisitor;

        impl<'de> Visitor<'de> for PoliciesVisitor {
            type Value = ToolPolicies;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map")
            }

            // A repeated name keeps its last policy, as a `BTreeMap` did.
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ToolPolicies, A::Error> {
                let mut out = ToolPolicies::new();
                while let Some((name, policy)) = map.next_entry::<String, ToolPolicy>()? {
                    out.insert(name, policy);
                }
                Ok(out)
            }
        }

        d.deserialize_map(PoliciesVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn p(enabled: bool) -> ToolPolicy {
        ToolPolicy {
            enabled: Some(enabled),
            auto_approve: None,
        }
    }

    #[test]
    fn behaves_like_the_btreemap_it_replaces() {
        let mut ours = ToolPolicies::new();
        let mut theirs = BTreeMap::new();
        for (i, name) in ["b", "a", "c", "a", "d", "b"].into_iter().enumerate() {
            assert_eq!(
                ours.insert(name.into(), p(i % 2 == 0)),
                theirs.insert(name.to_owned(), p(i % 2 == 0))
            );
        }
        assert_eq!(ours.remove("c"), theirs.remove("c"));
        assert_eq!(ours.remove("zz"), theirs.remove("zz"));
        assert_eq!(ours.len(), theirs.len());
        assert_eq!(format!("{ours:?}"), format!("{theirs:?}"));
        let json = serde_json::to_string(&ours).unwrap();
        assert_eq!(json, serde_json::to_string(&theirs).unwrap());
        let text = r#"{"z":{"enabled":true},"a":{},"z":{"autoApprove":false}}"#;
        let back: ToolPolicies = serde_json::from_str(text).unwrap();
        let want: BTreeMap<String, ToolPolicy> = serde_json::from_str(text).unwrap();
        assert_eq!(format!("{back:?}"), format!("{want:?}"));
        assert_eq!(ours["a"], theirs["a"]);
        let e1 = serde_json::from_str::<ToolPolicies>("[]")
            .unwrap_err()
            .to_string();
        let e2 = serde_json::from_str::<BTreeMap<String, ToolPolicy>>("[]")
            .unwrap_err()
            .to_string();
        assert_eq!(e1, e2);
    }
}
