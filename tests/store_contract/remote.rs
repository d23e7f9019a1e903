//! The remote store under the contract (`tests/browser_store.rs`): the SDK's `RemoteStore`
//! against the package's store handler over Postgres, started by `scripts/wasm-browser-test.sh`
//! (`tests/remote/contract-server.mjs`), whose URL this test binary is built with
//! (`GATEHOUSE_REMOTE_URL`).
//!
//! The handler judges leases by its own clock: each call carries the check's time in the
//! `x-test-now` header, which the contract server's clock reads. A check's database is a
//! prefix of the thread ids (`<db>/<thread>`), stripped from what comes back. Data changed
//! behind the store's back is changed in Postgres, by the contract server's `/__outside`.

use super::{ContractStore, Inexpressible, Outside};
use gatehouse_agent::engine::Commit;
use gatehouse_agent::store::page::Rows;
use gatehouse_agent::store::{
    LEASE_MS, MessageRow, RemoteStore, Snapshot, StoreError, ThreadRecord, Writer,
};

/// Where the contract server's handler is mounted.
pub const URL: &str = match option_env!("GATEHOUSE_REMOTE_URL") {
    Some(url) => url,
    None => "",
};

pub struct Remote {
    db: String,
    /// Holds the lease secrets the handler gave this check's writers (the stores opened per
    /// request time share them).
    secrets: RemoteStore,
}

impl Remote {
    /// A store whose requests carry the time `now`.
    fn at(&self, now: f64) -> RemoteStore {
        assert!(
            !URL.is_empty(),
            "GATEHOUSE_REMOTE_URL is not set: run the browser store tests with \
             scripts/wasm-browser-test.sh, which starts the contract server"
        );
        let headers = vec![
            ("authorization".to_owned(), "Bearer contract".to_owned()),
            ("x-test-now".to_owned(), now.to_string()),
        ];
        RemoteStore::open(URL, headers, self.db.clone()).sharing_secrets_of(&self.secrets)
    }

    fn id(&self, thread: &str) -> String {
        format!("{}/{thread}", self.db)
    }

    /// `record` as the check knows it: under its own thread id.
    fn strip(&self, mut record: ThreadRecord) -> ThreadRecord {
        if let Some(id) = record.id.strip_prefix(&format!("{}/", self.db)) {
            record.id = id.to_owned();
        }
        record
    }
}

impl ContractStore for Remote {
    const WEB_LOCKS: bool = false;
    const CHECKED: bool = true;

    async fn open(name: &str) -> Self {
        Remote {
            db: name.to_owned(),
            secrets: RemoteStore::open(URL, Vec::new(), name.to_owned()),
        }
    }

    async fn load(&self, thread: &str, now: f64) -> Result<Snapshot, StoreError> {
        let mut snap = self.at(now).load(&self.id(thread), now).await?;
        snap.record = self.strip(snap.record);
        Ok(snap)
    }

    async fn record(&self, thread: &str, now: f64) -> Result<ThreadRecord, StoreError> {
        let r = self.at(now).record(&self.id(thread), now).await?;
        Ok(self.strip(r))
    }

    async fn commit(
        &self,
        thread: &str,
        expected_version: u64,
        commit: &Commit,
        writer: &Writer,
        now: f64,
    ) -> Result<ThreadRecord, StoreError> {
        self.at(now)
            .commit(&self.id(thread), expected_version, commit, writer)
            .await
            .map(|r| self.strip(r))
    }

    /// The handler extends a lease to its clock plus `LEASE_MS`: the request is made at the
    /// time that gives `until`.
    async fn renew(&self, thread: &str, owner: &str, until: f64) -> Result<bool, StoreError> {
        self.at(until - LEASE_MS)
            .renew(&self.id(thread), owner)
            .await
    }

    async fn release(&self, thread: &str, owner: &str) -> Result<(), StoreError> {
        self.at(0.0).release(&self.id(thread), owner, None).await
    }

    async fn rows(
        &self,
        kind: Rows,
        thread: &str,
        before_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<MessageRow>, StoreError> {
        self.at(0.0)
            .rows(kind, &self.id(thread), before_seq, limit)
            .await
    }

    async fn list(&self) -> Result<Vec<ThreadRecord>, StoreError> {
        let prefix = format!("{}/", self.db);
        let all = self.at(0.0).list().await?;
        Ok(all
            .into_iter()
            .filter(|r| r.id.starts_with(&prefix))
            .map(|r| self.strip(r))
            .collect())
    }

    async fn delete(&self, thread: &str) -> Result<(), StoreError> {
        self.at(0.0).delete(&self.id(thread)).await
    }

    /// Changes the thread's rows in Postgres (the contract server's `/__outside`).
    async fn change_outside(&self, thread: &str, change: Outside) -> Result<(), Inexpressible> {
        let body = match change {
            Outside::SchemaVersion(v) => serde_json::json!({ "schemaVersion": v }),
            Outside::MessageCount(n) => serde_json::json!({ "messageCount": n }),
            Outside::UnreadableRow(seq) => serde_json::json!({ "unreadableRow": seq }),
            Outside::UnreadableRecord => serde_json::json!({ "unreadableRecord": true }),
        }
        .to_string();
        let url = format!(
            "{}/__outside/{}",
            URL.trim_end_matches("/api/gatehouse"),
            String::from(js_sys::encode_uri_component(&self.id(thread)))
        );
        let resp = gloo_net::http::Request::post(&url)
            .body(body)
            .expect("a request")
            .send()
            .await
            .expect("the contract server answers");
        assert!(resp.ok(), "/__outside refused: {}", resp.status());
        Ok(())
    }
}
