//! Connections to a Gatehouse database: open and upgrade (docs/design.md, "Stored data"),
//! the check that the database is Gatehouse's, a bounded wait behind another connection's
//! version change, and closing on `versionchange` so this connection never blocks one.

use super::values::open_error;
use super::{AUDIT, DB_VERSION, GRANTS, MESSAGES, THREADS};
use crate::store::record::StoreError;
use indexed_db_futures::KeyPath;
use indexed_db_futures::database::Database;
use indexed_db_futures::future::OpenDbRequest;
use indexed_db_futures::internals::SystemRepr;
use indexed_db_futures::prelude::*;
use std::cell::Cell;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &js_sys::Function, ms: i32) -> JsValue;
}

/// How long an open may wait behind another connection's version change (an upgrade or a
/// delete that a connection which does not close on `versionchange` is blocking).
const OPEN_TIMEOUT_MS: i32 = 10_000;

/// An open connection. It closes itself when another connection asks for a version change
/// (an upgrade or a delete elsewhere), and when dropped.
pub(super) struct Connection {
    db: Database,
    /// Set once the connection closed: for a version change, or by the browser (`close`).
    closed: Rc<Cell<bool>>,
    _on_close: Closure<dyn FnMut()>,
}

impl Connection {
    /// A handle on the connection (a cheap clone): transactions borrow it.
    pub(super) fn db(&self) -> Database {
        self.db.clone()
    }

    pub(super) fn is_closed(&self) -> bool {
        self.closed.get()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let sys = self.db.as_sys();
        sys.set_onversionchange(None);
        sys.set_onclose(None);
        self.db.clone().close();
    }
}

/// Opens (creating or upgrading) the Gatehouse database `name`. Fails with `Unavailable` when
/// there is no IndexedDB, the database is newer or not Gatehouse's, or the open is still
/// blocked after [`OPEN_TIMEOUT_MS`].
pub(super) async fn connect(name: &str) -> Result<Connection, StoreError> {
    let request = Database::open(name)
        .with_version(DB_VERSION)
        .with_on_upgrade_needed(|event, db| {
            // A later version adds its step under `old_version() < N`.
            if event.old_version() < 1.0 {
                db.create_object_store(THREADS)
                    .with_key_path(KeyPath::One("id"))
                    .build()?;
                db.create_object_store(MESSAGES)
                    .with_key_path(KeyPath::from(["thread", "seq"]))
                    .build()?;
            }
            if event.old_version() < 2.0 {
                db.create_object_store(AUDIT)
                    .with_key_path(KeyPath::from(["thread", "seq"]))
                    .build()?;
            }
            if event.old_version() < 3.0 {
                db.create_object_store(GRANTS)
                    .with_key_path(KeyPath::One("id"))
                    .build()?;
            }
            Ok(())
        })
        .build()
        .map_err(open_error)?;
    let db = within_open_timeout(name, request).await?;
    let names = db.as_sys().object_store_names();
    if let Some(missing) = [THREADS, MESSAGES, AUDIT, GRANTS]
        .into_iter()
        .find(|s| !names.contains(s))
    {
        db.close();
        return Err(StoreError::Unavailable(format!(
            "database {name:?} (version {DB_VERSION}) is not a Gatehouse database: \
             it has no {missing:?} object store"
        )));
    }
    let closed = Rc::new(Cell::new(false));
    let on_close = Closure::<dyn FnMut()>::new({
        let (db, closed) = (db.clone(), closed.clone());
        move || {
            closed.set(true);
            db.clone().close();
        }
    });
    let sys = db.as_sys();
    sys.set_onversionchange(Some(on_close.as_ref().unchecked_ref()));
    sys.set_onclose(Some(on_close.as_ref().unchecked_ref()));
    Ok(Connection {
        db,
        closed,
        _on_close: on_close,
    })
}

/// The open request's database, or `Unavailable` once the open waited [`OPEN_TIMEOUT_MS`].
/// A request given up on stays alive (its upgrade step may still have to run) and closes the
/// connection it opens, if it opens one.
async fn within_open_timeout(
    name: &str,
    mut request: OpenDbRequest,
) -> Result<Database, StoreError> {
    let mut timer = JsFuture::from(js_sys::Promise::new(&mut |resolve, _| {
        set_timeout(&resolve, OPEN_TIMEOUT_MS);
    }));
    let opened = poll_fn(|cx| {
        if let Poll::Ready(r) = Pin::new(&mut request).poll(cx) {
            return Poll::Ready(Some(r));
        }
        Pin::new(&mut timer).poll(cx).map(|_| None)
    })
    .await;
    match opened {
        Some(result) => result.map_err(open_error),
        None => {
            wasm_bindgen_futures::spawn_local(async move {
                if let Ok(late) = request.await {
                    late.close();
                }
            });
            Err(StoreError::Unavailable(format!(
                "opening the IndexedDB database {name:?} did not finish within \
                 {OPEN_TIMEOUT_MS} ms: another tab or connection is blocking a version change \
                 of it. Close or reload the other tabs of this site"
            )))
        }
    }
}

/// Deletes the database `name`, once every connection to it has closed.
pub(super) async fn delete_database(name: &str) -> Result<(), StoreError> {
    Database::delete_by_name(name)
        .map_err(open_error)?
        .await
        .map_err(|e| open_error(e.into()))
}
