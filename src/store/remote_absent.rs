//! The remote store in a build without the `remote` feature (the npm package's main wasm,
//! docs/design.md, "The remote store's module"): a type with no values. The driver's remote
//! paths (`Store::Remote`, the outbox, the change stream) still compile, as matches on it
//! that cannot be reached, and the optimizer drops them with this store's own code; a
//! `RemoteAt`, the only way to one, cannot be made either (`Storage::remote` is not there).
//! The signatures are remote.rs's.

use super::page::Rows;
use super::wire::ApprovalProgress;
use super::{MessageRow, Queued, Snapshot, StoreError, ThreadRecord, Writer};
use crate::engine::Commit;
use crate::net::fetch::{AbortLink, BodyReader};
use serde_json::Value;

/// No value: what stands in a `RemoteAt` of this build, so none can be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Absent {}

pub enum RemoteStore {}

impl RemoteStore {
    pub fn open(never: Absent) -> RemoteStore {
        match never {}
    }
    pub fn progress(&self, _: &str, _: &str) -> Option<ApprovalProgress> {
        match *self {}
    }
    pub fn sharing_secrets_of(self, _: &RemoteStore) -> RemoteStore {
        match self {}
    }
    pub async fn with_copy(self, _: &str) -> RemoteStore {
        match self {}
    }
    pub async fn outbox(&self, _: &str) -> Vec<Queued> {
        match *self {}
    }
    pub async fn edit_outbox(
        &self,
        _: &str,
        _: &dyn Fn(&mut Vec<Queued>),
    ) -> Result<usize, StoreError> {
        match *self {}
    }
    pub fn name(&self) -> &str {
        match *self {}
    }
    pub async fn load(&self, _: &str, _: f64) -> Result<Snapshot, StoreError> {
        match *self {}
    }
    pub async fn record(&self, _: &str, _: f64) -> Result<ThreadRecord, StoreError> {
        match *self {}
    }
    pub async fn commit(
        &self,
        _: &str,
        _: u64,
        _: &Commit,
        _: &Writer,
    ) -> Result<ThreadRecord, StoreError> {
        match *self {}
    }
    pub async fn renew(&self, _: &str, _: &str) -> Result<bool, StoreError> {
        match *self {}
    }
    pub async fn release(&self, _: &str, _: &str, _: Option<u64>) -> Result<(), StoreError> {
        match *self {}
    }
    pub async fn decide(
        &self,
        _: &str,
        _: &Value,
        _: Option<String>,
    ) -> Result<Snapshot, StoreError> {
        match *self {}
    }
    pub async fn rows(
        &self,
        _: Rows,
        _: &str,
        _: Option<u64>,
        _: u32,
    ) -> Result<Vec<MessageRow>, StoreError> {
        match *self {}
    }
    pub async fn list(&self) -> Result<Vec<ThreadRecord>, StoreError> {
        match *self {}
    }
    pub async fn receipt(&self, _: &str, _: &str) -> Result<Option<Value>, StoreError> {
        match *self {}
    }
    pub async fn delete(&self, _: &str) -> Result<(), StoreError> {
        match *self {}
    }
    pub async fn changes(&self, _: &AbortLink) -> Result<Option<BodyReader>, StoreError> {
        match *self {}
    }
    pub async fn grants(&self, _: &str) -> Result<Vec<String>, StoreError> {
        match *self {}
    }
    pub async fn put_grant(&self, _: &str, _: &str) -> Result<String, StoreError> {
        match *self {}
    }
    pub async fn revoke_grant(&self, _: &str) -> Result<bool, StoreError> {
        match *self {}
    }
}
