//! The `grants` object store (database version 3, docs/design.md "Remembered grants"):
//! keyPath `id`, each row `{ id, json }`, the grant's JSON kept as text (read by the grants'
//! code, src/driver/grants.rs). A database's grants
//! are few (the agent refuses more than [`MAX_LOCAL_GRANTS`]), so they are read whole.

use super::values::{from_js_value, idb};
use super::{GRANTS, IndexedDbStore, begin, delete, finish, put};
use crate::store::record::StoreError;
use indexed_db_futures::KeyRange;
use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::{Transaction, TransactionMode};
use js_sys::{Object, Reflect};
use wasm_bindgen::JsValue;

/// Grants one local database keeps at once.
pub const MAX_LOCAL_GRANTS: usize = 500;

impl IndexedDbStore {
    /// Every grant of this database, oldest first, as JSON.
    pub async fn grants(&self) -> Result<Vec<String>, StoreError> {
        let db = self.db().await?;
        let tx = begin(&db, &[GRANTS], TransactionMode::Readonly)?;
        Ok(all(&tx).await?.into_iter().map(|(_, g)| g).collect())
    }

    /// Keeps a new grant, `grant` its JSON; `too_many` past [`MAX_LOCAL_GRANTS`].
    pub async fn put_grant(&self, id: &str, grant: &str) -> Result<(), StoreError> {
        let db = self.db().await?;
        let tx = begin(&db, &[GRANTS], TransactionMode::Readwrite)?;
        if all(&tx).await?.len() >= MAX_LOCAL_GRANTS {
            return Err(StoreError::Quota(format!(
                "a database keeps at most {MAX_LOCAL_GRANTS} grants: revoke some first"
            )));
        }
        let row = Object::new();
        let set = |k: &str, v: &str| Reflect::set(&row, &k.into(), &v.into());
        set("id", id).map_err(|e| from_js_value(&e))?;
        set("json", grant).map_err(|e| from_js_value(&e))?;
        put(&tx, GRANTS, row.into())?;
        finish(tx).await
    }

    /// Deletes the grant `id`; false when there is none.
    pub async fn revoke_grant(&self, id: &str) -> Result<bool, StoreError> {
        let db = self.db().await?;
        let tx = begin(&db, &[GRANTS], TransactionMode::Readwrite)?;
        let found = all(&tx).await?.iter().any(|(g, _)| g == id);
        if found {
            delete(&tx, GRANTS, KeyRange::Only(JsValue::from_str(id)))?;
            finish(tx).await?;
        }
        Ok(found)
    }
}

/// The grants `tx` sees: each row's id and JSON; a row that cannot be read is skipped (it
/// approves nothing).
pub(super) async fn all(tx: &Transaction<'_>) -> Result<Vec<(String, String)>, StoreError> {
    let values = tx
        .object_store(GRANTS)
        .map_err(idb)?
        .get_all::<JsValue>()
        .primitive()
        .map_err(idb)?
        .await
        .map_err(idb)?;
    let field = |v: &JsValue, k: &str| Reflect::get(v, &k.into()).ok()?.as_string();
    Ok(values
        .filter_map(|v| {
            let v = v.ok()?;
            Some((field(&v, "id")?, field(&v, "json")?))
        })
        .collect())
}

/// Queues the deletes of thread `thread`'s grants (the thread is deleted with them).
pub(super) async fn drop_thread_grants(
    tx: &Transaction<'_>,
    thread: &str,
) -> Result<(), StoreError> {
    for (id, g) in all(tx).await? {
        if crate::store::grant_of_thread(&g, thread) {
            delete(tx, GRANTS, KeyRange::Only(JsValue::from_str(&id)))?;
        }
    }
    Ok(())
}
