//! The session: an agent's view of its thread (opened, observed, reloaded) and what it tells
//! about it (`status`, the thread list's summaries).

use super::*;

/// Opens a thread: reads its record and tail only, then re-gates a call whose execution was cut off
/// by a closed page (docs/design.md, "The run journal") — unless a live run elsewhere owns it
/// (docs/design.md, "Run ownership"). Never fails with `conflict`: a thread that moves on meanwhile
/// is read again.
pub async fn open(o: Setup) -> Result<Shared, AgentError> {
    let snap = o.store.load(&o.thread_id, now()).await?;
    let mut tools = o.tools;
    let mcp = match o.mcp.is_empty() {
        true => None,
        false => Some(Rc::new(
            mcp::McpTools::open(o.mcp, snap.record.mcp_tools.as_ref()).await,
        )),
    };
    if let Some(m) = &mcp {
        let taken: Vec<&str> = tools.iter().map(Tool::name).collect();
        let more = m.tools(&taken, None);
        tools.extend(more);
    }
    let specs = tools.iter().map(|t| t.spec.clone()).collect();
    let machine = (js_sys::Math::random() * 1024.0) as u64;
    let engine = Engine::new(ToolSet::new(specs), o.config, snap.state(), machine);
    let lock = locks::lock_name(o.store.name(), &o.thread_id);
    let me = format!(
        "agent_{:012x}",
        (js_sys::Math::random() * 281_474_976_710_656.0) as u64
    );
    let session = Shared::new(Session {
        lock,
        me,
        thread_id: o.thread_id,
        store: o.store,
        engine,
        version: snap.record.version,
        others: None,
        message_count: snap.record.message_count,
        model: o.model,
        instructions: o.instructions,
        tools,
        history_limit: o.history_limit,
        history: None,
        warming: None,
        request_size: snap.record.request_size.clone(),
        running: false,
        epochs: 0,
        view_epoch: 0,
        leased: false,
        refused: Vec::new(),
        queued: 0,
        retry_queued: false,
        live: live::Live::default(),
        expiry: expiry::Timer::default(),
        mcp,
        elicitation_hook: None,
        background: None,
    });
    session.borrow_mut().expiry = expiry::Timer::new(session.downgrade());
    // `snap` was read before any notice could start a reload: its ticket is the first.
    let mut read = session.begin_reload();
    let name = session.borrow().lock.clone();
    live::connect(&session, &name);
    changes::follow(&session);
    let mut snap = snap;
    for _ in 0..3 {
        let probe = observe(&session, &snap, &read).await;
        let me = session.borrow().me.clone();
        if !must_recover(&snap.record, &me, now(), probe) {
            break;
        }
        match run(&session, Input::Recover, &RunOptions::default()).await {
            // Read again and judge again: the thread moved on while we looked.
            Err(e) if e.is_conflict() => {
                let (store, thread) = session.at();
                read = session.begin_reload();
                snap = store.load(&thread, now()).await?;
            }
            // A live run elsewhere took it meanwhile: leave it to that run.
            Err(e) if e.is_busy() => break,
            Err(e) => return Err(e),
            Ok(_) => break,
        }
    }
    // Calls past their approval deadline expire now, before the app sees the thread; the
    // timer takes the later ones. A failure here (the model call after the last expiry)
    // leaves the thread as a failed run would: `retry` goes on.
    let _ = expiry::expire_due(&session, &RunOptions::default()).await;
    expiry::rearm(&mut session.borrow_mut());
    // Before anything below starts a run: a run waits for this read.
    history::warm(&session);
    changes::go_on(&session, snap.record.status());
    changes::send_queued(&session).await;
    Ok(session)
}

/// Takes `snap` as the view (when it is newer) and notes another agent's lease in it, asking
/// the Web Lock whether that owner is alive. Returns what the lock said. Changes nothing if
/// the read that got `snap` no longer stands (`Reload::stands`: a run began since, or a later
/// read was taken while the lock was asked).
pub(super) async fn observe(s: &Shared, snap: &Snapshot, read: &Reload) -> LockProbe {
    let (lock, me) = {
        let g = s.borrow();
        (g.lock.clone(), g.me.clone())
    };
    let probe = match &snap.record.lease {
        Some(l) if l.owner == me => LockProbe::Unsupported,
        None if snap.record.run.as_ref().is_none_or(|r| r.started.is_none()) => {
            LockProbe::Unsupported
        }
        _ => locks::probe(&lock).await,
    };
    let mut g = s.borrow_mut();
    if !read.stands(&g) {
        return probe;
    }
    if snap.record.version != g.version {
        take(&mut g, snap);
    }
    read.taken(&mut g);
    g.others = snap
        .record
        .lease
        .clone()
        .filter(|l| l.owner != me)
        .map(|l| {
            let alive = matches!(judge(Some(&l), &me, now(), probe), Owner::Live(_));
            (l, alive)
        });
    probe
}

/// The view becomes `snap`.
pub(super) fn take(g: &mut Session, snap: &Snapshot) {
    g.engine.reset(snap.state());
    g.version = snap.record.version;
    g.message_count = snap.record.message_count;
    g.history = None;
    g.request_size = snap.record.request_size.clone();
    expiry::rearm(g);
}

/// True while another agent (another tab, or another `Agent` in this page) runs the thread,
/// as far as this view knows.
pub fn running_elsewhere(s: &Session) -> bool {
    match &s.others {
        Some((l, alive)) if l.locked => *alive,
        Some((l, _)) => l.until > now(),
        None => false,
    }
}

/// The summaries of a database's threads, newest first (docs/design.md, "Run ownership": a
/// thread is "running" while a live agent holds it).
pub async fn summaries(store: &Store) -> Result<Vec<ThreadSummary>, AgentError> {
    let mut records = store.list().await?;
    summary::newest_first(&mut records);
    let mut out = Vec::with_capacity(records.len());
    for r in &records {
        let probe = if summary::needs_probe(r) {
            locks::probe(&locks::lock_name(store.name(), &r.id)).await
        } else {
            LockProbe::Unsupported
        };
        out.push(ThreadSummary::new(r, probe, now()));
    }
    Ok(out)
}

/// `agent.status()`: "running" while this agent or, as far as this view knows, another one
/// runs the thread; else the engine's status of the view.
pub fn status(s: &Session) -> AgentStatus {
    if running_here(s) || running_elsewhere(s) {
        return AgentStatus::Running;
    }
    if s.queued > 0 {
        return AgentStatus::Queued;
    }
    s.engine.status().into()
}

/// Whether this agent is running a call now.
pub fn running_here(s: &Session) -> bool {
    s.running
}

/// Re-reads the thread (record and tail), drops any cached history, and asks the Web Lock
/// whether another agent's run is alive.
pub async fn reload(s: &Shared) -> Result<(), AgentError> {
    let read = s.begin_reload();
    let (store, thread) = s.at();
    let snap = store.load(&thread, now()).await?;
    // A run that began meanwhile owns the view, and a later read already taken is newer
    // (`Reload::stands`): this one gives way.
    if !s.take_reload(&read, &snap) {
        return Ok(());
    }
    observe(s, &snap, &read).await;
    outbox::count(s).await;
    changes::go_on(s, snap.record.status());
    Ok(())
}

/// The definitions of the tools offered to the model now.
pub(super) fn tool_defs(g: &Session) -> Vec<ToolDef> {
    g.engine
        .offered_tools()
        .map(|t| {
            ToolDef::new(t.name.clone(), t.description.as_deref(), t.schema.clone())
                .with_extra(&t.extra)
        })
        .collect()
}
